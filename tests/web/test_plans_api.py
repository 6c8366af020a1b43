"""/api/v1/plans/: the planner as a job in chunks: queued tasks, progress, the ranked answer
(equal to the engine's own search), cancel, resume of a chunk whose worker died, save as
scenario, compare the top three, owner/team visibility, bad specs named by field."""

from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from simulation import planner
from tierlab.dashboard import plans
from tierlab.dashboard.models import Comparison, Plan, PlanChunk
from tierlab.scenarios.models import Scenario

URL = "/api/v1/plans/"
pytestmark = pytest.mark.django_db

SPEC = {
    "model": "llama2-13b",
    "cluster": {"node": "dgx-h100", "num_nodes": [1, 2]},
    "training": {"seq_len": 4096, "global_batch_size": 64, "flash_attention": True},
    "space": {"tensor_parallel": [1, 2, 8], "pipeline_parallel": [1, 4], "micro_batch_size": [1, 2],
              "recompute": ["none", "full"], "strategies": ["zero1", "zero3"]},
    "top_k": 5,
}


def create(client, spec=SPEC, **extra):
    return client.post(URL, {"spec": spec, **extra}, format="json")


def run_chunks(plan=None):
    chunks = PlanChunk.objects.filter(status=PlanChunk.Status.QUEUED)
    if plan is not None:
        chunks = chunks.filter(plan=plan)
    for chunk in chunks.order_by("index"):
        plans.execute_chunk(chunk.pk)


@pytest.fixture
def queued(owner_api, settings, django_capture_on_commit_callbacks):
    settings.TIERLAB_PLAN_CHUNKS = 3
    with mock.patch("tierlab.dashboard.tasks.run_plan_chunk.apply_async") as send:
        with django_capture_on_commit_callbacks(execute=True):
            r = create(owner_api)
    assert r.status_code == 202, r.json()
    assert send.call_count == 3
    return r.json()


def test_it_requires_login(anon_api):
    assert anon_api.get(URL).status_code == 401
    assert create(anon_api).status_code == 401


def test_it_queues_one_task_per_chunk(queued):
    assert queued["status"] == "queued" and queued["progress"] == 0.0
    assert queued["total_candidates"] == 2 * 3 * 2 * 2 * 2 * 2 and queued["chunks"] == 3
    assert queued["result"] is None and queued["best_so_far"] is None
    assert queued["name"] == "Plan: llama2-13b on dgx-h100, step time"
    assert [c.size for c in PlanChunk.objects.order_by("index")] == [32, 32, 32]


def test_the_answer_equals_the_engines_search(owner_api, queued):
    run_chunks()
    body = owner_api.get(f"{URL}{queued['id']}/").json()
    assert body["status"] == "succeeded", body["error"]
    assert body["progress"] == 1.0 and body["done"] == 96
    ref = planner.plan(SPEC)
    assert body["result"] == ref
    assert body["feasible"] == ref["feasible"] > 0
    assert body["best_so_far"]["index"] == ref["best"]["index"]
    top = body["result"]["top"][0]
    assert top["rank"] == 1 and top["bottleneck_message"]
    assert sum(body["result"]["rejected"].values()) + ref["feasible"] == 96


def test_progress_is_written_while_a_chunk_runs(owner_api, queued):
    chunk = PlanChunk.objects.order_by("index").first()
    with mock.patch.object(planner, "plan_chunk", wraps=planner.plan_chunk) as pc:
        plans.execute_chunk(chunk.pk)
        kwargs = pc.call_args.kwargs
    assert kwargs["every"] == plans.PROGRESS_EVERY and callable(kwargs["progress"])
    chunk.refresh_from_db()
    assert chunk.status == "done" and chunk.done == 32 and chunk.best is not None
    body = owner_api.get(f"{URL}{queued['id']}/").json()
    assert body["status"] == "running" and body["done"] == 32 and 0 < body["progress"] < 1
    assert body["best_so_far"] == chunk.best


def test_cancel_stops_queued_chunks_and_a_running_one(owner_api, queued):
    first = PlanChunk.objects.order_by("index").first()
    r = owner_api.post(f"{URL}{queued['id']}/cancel/")
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert set(PlanChunk.objects.values_list("status", flat=True)) == {"cancelled"}
    plans.execute_chunk(first.pk)                  # its message arrives late: nothing to do
    assert PlanChunk.objects.get(pk=first.pk).status == "cancelled"
    r = owner_api.post(f"{URL}{queued['id']}/cancel/")
    assert r.status_code == 400 and "status" in r.json()


def test_a_running_chunk_stops_at_its_next_progress_write(owner_api, queued):
    chunk = PlanChunk.objects.order_by("index").first()
    calls = {"n": 0}
    real = planner.plan_chunk

    def cancel_midway(*a, **kw):
        inner = kw["progress"]

        def progress(p):
            calls["n"] += 1
            Plan.objects.filter(pk=queued["id"]).update(cancelled=True)
            inner(p)
        kw["progress"] = progress
        return real(*a, **kw)
    with mock.patch.object(planner, "plan_chunk", side_effect=cancel_midway):
        plans.execute_chunk(chunk.pk)
    chunk.refresh_from_db()
    assert calls["n"] == 1 and chunk.status == "cancelled" and chunk.done == plans.PROGRESS_EVERY


def test_a_chunk_whose_worker_died_is_sent_again_and_the_plan_resumes(owner_api, queued, settings,
                                                                     django_capture_on_commit_callbacks):
    """A chunk left running past the time limit (its worker died) is queued again by the
    read-time check, up to RUN_MAX_ATTEMPTS starts; the other chunks' results are kept."""
    settings.TIERLAB_RUN_MAX_ATTEMPTS = 3
    a, b, _c = PlanChunk.objects.order_by("index")
    old_task = b.celery_task_id
    plans.execute_chunk(a.pk)
    PlanChunk.objects.filter(pk=b.pk).update(status="running", attempts=1,
                                             started_at=timezone.now() - timedelta(days=1))
    with mock.patch("tierlab.dashboard.tasks.run_plan_chunk.apply_async") as send:
        with django_capture_on_commit_callbacks(execute=True):
            body = owner_api.get(f"{URL}{queued['id']}/").json()
    b.refresh_from_db()
    assert b.status == "queued" and b.celery_task_id != old_task and body["status"] != "failed"
    assert send.call_args.kwargs["task_id"] == b.celery_task_id
    run_chunks()
    body = owner_api.get(f"{URL}{queued['id']}/").json()
    assert body["status"] == "succeeded" and body["result"] == planner.plan(SPEC)
    assert PlanChunk.objects.get(pk=b.pk).attempts == 2


def test_a_chunk_whose_workers_keep_dying_fails_with_the_reason(owner_api, queued, settings):
    settings.TIERLAB_RUN_MAX_ATTEMPTS = 2
    chunk = PlanChunk.objects.order_by("index").first()
    PlanChunk.objects.filter(pk=chunk.pk).update(status="running", attempts=2)
    plans.execute_chunk(chunk.pk, task_id=chunk.celery_task_id)
    chunk.refresh_from_db()
    assert chunk.status == "failed" and "started 2 times" in chunk.error
    run_chunks()
    body = owner_api.get(f"{URL}{queued['id']}/").json()
    assert body["status"] == "failed" and "1 of 3 chunks failed" in body["error"]
    assert body["result"]["done"] == 64           # what the other chunks found is kept


def test_save_a_candidate_as_a_scenario_and_compare_the_top_three(owner_api, owner, queued):
    run_chunks()
    r = owner_api.post(f"{URL}{queued['id']}/save/", {"rank": 2}, format="json")
    assert r.status_code == 201, r.json()
    sc = Scenario.objects.get(pk=r.json()["id"])
    ref = planner.plan(SPEC)["top"][1]
    assert sc.owner == owner and sc.spec == ref["scenario"] and "#2" in sc.name
    assert owner_api.post(f"{URL}{queued['id']}/save/", {"rank": 99}, format="json").status_code == 400
    with mock.patch("tierlab.scenarios.services.enqueue"):
        r = owner_api.post(f"{URL}{queued['id']}/compare/")
    assert r.status_code == 201, r.json()
    comparison = Comparison.objects.get(pk=r.json()["id"])
    assert comparison.items.count() == 3


def test_owner_and_team_see_it_strangers_do_not(queued, teammate_api, stranger_api):
    url = f"{URL}{queued['id']}/"
    assert teammate_api.get(url).status_code == 200
    assert [p["id"] for p in teammate_api.get(URL).json()["results"]] == [queued["id"]]
    assert stranger_api.get(url).status_code == 404
    assert stranger_api.get(URL).json()["results"] == []
    assert teammate_api.post(url + "cancel/").status_code == 403
    assert stranger_api.post(url + "cancel/").status_code == 404


@pytest.mark.parametrize("spec,field", [
    ({**SPEC, "objective": "fastest"}, "spec.objective"),
    ({**SPEC, "space": {"tensor_parallel": [1, "2"]}}, "spec.space.tensor_parallel.1"),
    ({**SPEC, "model": "llama9"}, "spec.model.preset"),
    ({**SPEC, "cluster": {"node": "dgx-h100", "num_gpus": 12}}, "spec.cluster.num_gpus"),
    ({**SPEC, "space": {"micro_batch_size": list(range(1, 100)), "pipeline_parallel": list(range(1, 50)),
                        "tensor_parallel": list(range(1, 50))}}, "spec.space.micro_batch_size"),
    ("llama", "spec"),
])
def test_bad_specs_are_400_naming_the_field(owner_api, spec, field):
    r = create(owner_api, spec)
    assert r.status_code == 400, r.content
    assert field in r.json(), r.json()
    assert not Plan.objects.exists()


def test_every_independent_bad_field_is_named_at_once(owner_api):
    """Three bad fields no check of which needs another's: one 400 names all three, each
    under its single-error name; a spec that is no object is ``spec`` itself."""
    r = create(owner_api, {**SPEC, "model": "nope", "objective": "fastest", "top_k": -1})
    assert r.status_code == 400, r.content
    assert set(r.json()) == {"spec.model.preset", "spec.objective", "spec.top_k"}, r.json()
    r = create(owner_api, "x")
    assert r.status_code == 400 and r.json() == {"spec": ["must be a JSON object"]}, r.json()
    assert not Plan.objects.exists()


def test_a_share_link_shows_the_plan_to_anyone_and_forks_it(owner_api, anon_api, stranger_api, queued,
                                                             client, stranger):
    run_chunks()
    r = owner_api.post("/api/v1/shares/", {"plan": queued["id"]}, format="json")
    assert r.status_code == 201, r.json()
    token = r.json()["token"]
    assert r.json()["kind"] == "plan"
    shared = anon_api.get(f"/api/v1/shared/{token}/").json()
    assert shared["kind"] == "plan" and shared["data"]["id"] is None
    assert shared["data"]["result"] == planner.plan(SPEC)
    html = client.get(f"/s/{token}/").content.decode()
    assert 'data-rank="1"' in html and "plan-cancel" not in html and "plan-save" not in html
    assert f'data-url="/api/v1/shared/{token}/"' in html      # what src/pages/plan.ts polls there
    with mock.patch("tierlab.dashboard.tasks.run_plan_chunk.apply_async"):
        r = stranger_api.post(f"/api/v1/shared/{token}/fork/")
    assert r.status_code == 201, r.json()
    fork = Plan.objects.get(pk=r.json()["id"])
    assert fork.owner == stranger and fork.spec == SPEC and fork.name.endswith("(fork)")
    assert stranger_api.post("/api/v1/shares/", {"plan": queued["id"]}, format="json").status_code == 400


def test_a_large_space_gets_more_chunks(settings):
    settings.TIERLAB_PLAN_CHUNKS, settings.TIERLAB_PLAN_CHUNK_CANDIDATES = 8, 5000
    assert plans.n_chunks(96) == 8 and plans.n_chunks(40_000) == 8 and plans.n_chunks(40_001) == 9
    assert plans.n_chunks(200_000) == 40


def test_the_list_filters_by_status_and_name(owner_api, queued):
    assert [p["id"] for p in owner_api.get(URL + "?status=queued").json()["results"]] == [queued["id"]]
    assert owner_api.get(URL + "?status=succeeded").json()["results"] == []
    assert [p["id"] for p in owner_api.get(URL + "?q=llama2-13b").json()["results"]] == [queued["id"]]
    assert owner_api.get(URL + "?status=done").status_code == 400


# ---------------------------------------------------------------- cluster profiles
# Figures as a fit of a slow H100 cluster would give them (constant compute model at 40 % of
# peak, collectives at half their bus bandwidth); stored as the profile's fitted figures.
SLOW_H100 = {"accelerator": "h100-sxm5-80gb", "compute_efficiency": 0.4, "network_efficiency": 0.5}


@pytest.fixture
def profile(owner):
    from tierlab.scenarios.models import ClusterProfile

    return ClusterProfile.objects.create(owner=owner, name="slow h100", measurements={}, figures=dict(SLOW_H100))


def with_profile(ref, spec=SPEC):
    return {**spec, "cluster": {**spec["cluster"], "profile": ref}}


def queue(client, spec):
    with mock.patch("tierlab.dashboard.tasks.run_plan_chunk.apply_async"):
        r = create(client, spec)
    assert r.status_code == 202, r.json()
    return r.json()


def ranked(result):
    return [(r["index"], r["step_time_s"]) for r in result["top"]]


def test_a_cluster_profile_gives_every_candidate_its_figures(owner_api, profile):
    body = queue(owner_api, with_profile(profile.pk))
    plan = Plan.objects.get(pk=body["id"])
    # the figures as they are now are the plan's: its spec says which it used
    assert plan.spec["cluster"]["profile"] == {**SLOW_H100, "id": profile.pk, "name": "slow h100"}
    # a refit while the plan runs changes none of its candidates
    profile.figures = {**SLOW_H100, "compute_efficiency": 0.9}
    profile.save()
    run_chunks(plan)
    result = owner_api.get(f"{URL}{plan.pk}/").json()["result"]
    # the profile's figures apply as a scenario's training section would set them
    # (simulation.calibrate.apply_to_sections): the same ranking and step times as a plan
    # that writes compute_efficiency 0.4 and network_efficiency 0.5 itself
    written = {**SPEC, "training": {**SPEC["training"], "compute_efficiency": 0.4, "network_efficiency": 0.5}}
    assert ranked(result) == ranked(planner.plan(written))
    assert ranked(result) != ranked(planner.plan(SPEC))
    assert result["feasible"] > 0
    # and every ranked candidate computes what its scenario with the profile computes
    from tierlab.scenarios import services

    top = result["top"][0]
    assert top["scenario"]["cluster"]["profile"]["compute_efficiency"] == 0.4
    assert services.estimate(top["scenario"], include_step=True)["step"]["time_s"] == top["step_time_s"]


def test_a_saved_candidate_names_the_profile_while_its_figures_are_the_plans(owner_api, owner, profile):
    plan = Plan.objects.get(pk=queue(owner_api, with_profile(profile.pk))["id"])
    run_chunks(plan)
    first = owner_api.post(f"{URL}{plan.pk}/save/", {"rank": 1}, format="json").json()
    assert Scenario.objects.get(pk=first["id"]).spec["cluster"]["profile"] == profile.pk
    # refitted since (as profiles.refit_profile stores it): the saved scenario keeps the
    # figures the plan ranked it with
    from tierlab.scenarios import services

    profile.figures = {**SLOW_H100, "compute_efficiency": 0.9}
    profile.save()
    services.forget_catalog()
    second = owner_api.post(f"{URL}{plan.pk}/save/", {"rank": 1}, format="json").json()
    sc = Scenario.objects.get(pk=second["id"])
    assert sc.spec["cluster"]["profile"]["compute_efficiency"] == 0.4
    # a run of either hashes the figures it resolves: the two inputs differ
    with mock.patch("tierlab.scenarios.services.enqueue"):
        runs = [services.start_run(Scenario.objects.get(pk=s["id"])) for s in (first, second)]
    assert [r.input["cluster"]["profile"]["compute_efficiency"] for r in runs] == [0.9, 0.4]
    assert runs[0].input_hash != runs[1].input_hash


def test_a_profile_of_someone_else_or_of_another_accelerator_is_400(owner_api, stranger, profile):
    from tierlab.scenarios.models import ClusterProfile

    theirs = ClusterProfile.objects.create(owner=stranger, name="theirs", measurements={}, figures=dict(SLOW_H100))
    a100 = ClusterProfile.objects.create(owner=profile.owner, name="a100", measurements={},
                                         figures={"accelerator": "a100-sxm4-80gb", "compute_efficiency": 0.5})
    for ref in (theirs.pk, 10**6, "x"):
        r = create(owner_api, with_profile(ref))
        assert r.status_code == 400 and "unknown cluster profile" in r.json()["spec.cluster.profile"][0], r.json()
    r = create(owner_api, with_profile(a100.pk))
    assert r.status_code == 400 and "fitted on a100-sxm4-80gb" in r.json()["spec.cluster.profile"][0], r.json()
    assert not Plan.objects.exists()


def test_a_chunk_result_json_cannot_hold_fails_the_chunk_at_once(owner_api, queued, monkeypatch):
    """Strict JSON has no inf or NaN (RFC 8259 section 6), nor has PostgreSQL's jsonb: a
    chunk whose result held one raised DataError when stored and stayed running until the
    read-time check; it fails at once with the field, the other chunks' results kept."""
    first = PlanChunk.objects.order_by("index").first()
    real = planner.plan_chunk

    def plan_chunk(spec, index, n_chunks, **kw):
        out = real(spec, index, n_chunks, **kw)
        if index == first.index:
            out["kept"][0]["step_time_s"] = float("inf")
        return out

    monkeypatch.setattr(planner, "plan_chunk", plan_chunk)
    plans.execute_chunk(first.pk)
    first.refresh_from_db()
    assert first.status == "failed" and "kept[0].step_time_s = inf" in first.error
    run_chunks()
    body = owner_api.get(f"{URL}{queued['id']}/").json()
    assert body["status"] == "failed" and "1 of 3 chunks failed" in body["error"]
