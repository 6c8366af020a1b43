"""Renaming (PATCH {name}) and deleting (DELETE) a scenario, comparison, sweep or plan: its
owner only (a teammate 403, anyone else 404, a share link never); a queued or running job is
cancelled first and its worker stops quietly when the row is gone; a scenario that saved
comparisons use is a 409 naming them; a bad name is a 400 naming the field."""

from unittest import mock

import pytest

from tests.web.dashboard_helpers import run_chunks, run_queued_runs, spec, strategies
from tierlab.dashboard import comparisons, plans, sweeps
from tierlab.dashboard.models import Comparison, ComparisonItem, Plan, PlanChunk, ShareLink, Sweep, SweepChunk
from tierlab.scenarios import services
from tierlab.scenarios.models import Run, Scenario

pytestmark = pytest.mark.django_db

PLAN_SPEC = {"model": "llama2-7b", "cluster": {"node": "dgx-h100", "num_nodes": 1},
             "training": {"seq_len": 2048, "global_batch_size": 8, "flash_attention": True},
             "space": {"tensor_parallel": [1, 2], "micro_batch_size": [1], "strategies": ["zero3"]}}

KINDS = ["scenarios", "comparisons", "sweeps", "plans"]
MODELS = {"scenarios": Scenario, "comparisons": Comparison, "sweeps": Sweep, "plans": Plan}


def make(kind: str, owner):
    """One finished object of ``kind`` owned by ``owner``."""
    if kind == "scenarios":
        return Scenario.objects.create(owner=owner, name="7B", spec=spec())
    if kind == "comparisons":
        c = comparisons.create_comparison(owner, [s.pk for s in strategies(owner, ("zero2", "zero3"))], "mine")
        run_queued_runs()
        return c
    if kind == "sweeps":
        base = Scenario.objects.create(owner=owner, name="base", spec=spec())
        s = sweeps.create_sweep(owner, base.pk, [{"path": "cluster.num_nodes", "values": [1, 2]}])
        run_chunks(s)
        return s
    p = plans.create_plan(owner, PLAN_SPEC, "mine")
    for chunk in p.chunks.all():
        plans.execute_chunk(chunk.pk)
    return p


@pytest.mark.parametrize("kind", KINDS)
def test_the_owner_renames_it_and_only_the_name_changes(owner_api, owner, kind):
    obj = make(kind, owner)
    before = owner_api.get(f"/api/v1/{kind}/{obj.pk}/").json()
    r = owner_api.patch(f"/api/v1/{kind}/{obj.pk}/", {"name": "  Renamed ✓ "}, format="json")
    assert r.status_code == 200, r.json()
    assert r.json()["name"] == "Renamed ✓" and r.json()["id"] == obj.pk
    after = owner_api.get(f"/api/v1/{kind}/{obj.pk}/").json()
    assert after["name"] == "Renamed ✓"
    assert {k: v for k, v in after.items() if k != "name"} == {k: v for k, v in before.items() if k != "name"}


@pytest.mark.parametrize("kind", KINDS)
def test_the_owner_deletes_it(owner_api, owner, kind):
    obj = make(kind, owner)
    r = owner_api.delete(f"/api/v1/{kind}/{obj.pk}/")
    assert r.status_code == 204
    assert not MODELS[kind].objects.filter(pk=obj.pk).exists()
    assert owner_api.get(f"/api/v1/{kind}/{obj.pk}/").status_code == 404
    assert owner_api.delete(f"/api/v1/{kind}/{obj.pk}/").status_code == 404


@pytest.mark.parametrize("kind", KINDS)
def test_a_teammate_gets_403_a_stranger_404_and_anonymous_401(owner_api, teammate_api, stranger_api, anon_api,
                                                              owner, kind):
    obj = make(kind, owner)
    url = f"/api/v1/{kind}/{obj.pk}/"
    for client, code in ((teammate_api, 403), (stranger_api, 404), (anon_api, 401)):
        assert client.patch(url, {"name": "theirs"}, format="json").status_code == code
        assert client.delete(url).status_code == code
    assert MODELS[kind].objects.get(pk=obj.pk).name == obj.name
    # the owner can (the old API answered 405 to everyone)
    assert owner_api.patch(url, {"name": "still mine"}, format="json").status_code == 200
    assert owner_api.put(url, {"name": "x"}, format="json").status_code == 405     # PUT is not rename


@pytest.mark.parametrize("kind", ["scenarios", "comparisons", "sweeps"])
def test_a_share_link_neither_renames_nor_deletes_and_goes_with_what_it_shows(owner_api, anon_api, owner, kind):
    obj = make(kind, owner)
    token = owner_api.post("/api/v1/shares/", {kind[:-1]: obj.pk}, format="json").json()["token"]
    for method in ("patch", "delete", "put"):
        assert getattr(anon_api, method)(f"/api/v1/shared/{token}/", {"name": "x"}, format="json").status_code == 405
        assert getattr(anon_api, method)(f"/api/v1/{kind}/{obj.pk}/", {"name": "x"},
                                         format="json").status_code == 401
    assert anon_api.get(f"/api/v1/shared/{token}/").json()["name"] == obj.name
    assert owner_api.delete(f"/api/v1/{kind}/{obj.pk}/").status_code == 204
    assert not ShareLink.objects.filter(token=token).exists()
    assert anon_api.get(f"/api/v1/shared/{token}/").status_code == 404


# ---------------------------------------------------------------- bad names
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("body, field, says", [
    ({"name": ""}, "name", "blank"),
    ({"name": "   "}, "name", "blank"),
    ({"name": "x" * 201}, "name", "200 characters"),
    ({"name": "evil\u202Etxt.exe"}, "name", "U+202E"),
    ({"name": 5}, "name", "Must be a string"),
    ({"name": None}, "name", "null"),
    ({}, "name", "required"),
    ({"name": "ok", "owner": "stranger"}, "owner", "unknown field; known fields: name"),
])
def test_a_bad_rename_is_a_400_naming_the_field_and_changes_nothing(owner_api, owner, kind, body, field, says):
    obj = make(kind, owner)
    r = owner_api.patch(f"/api/v1/{kind}/{obj.pk}/", body, format="json")
    assert r.status_code == 400, r.json()
    assert list(r.json()) == [field] and says in r.json()[field][0]
    assert MODELS[kind].objects.get(pk=obj.pk).name == obj.name


def test_a_scenario_body_cannot_be_changed_by_a_patch(owner_api, owner):
    sc = make("scenarios", owner)
    r = owner_api.patch(f"/api/v1/scenarios/{sc.pk}/", {"name": "n", "scenario": spec(**{"cluster.num_nodes": 2})},
                        format="json")
    assert r.status_code == 400 and list(r.json()) == ["scenario"]
    sc.refresh_from_db()
    assert sc.name == "7B" and sc.spec == spec()


# ---------------------------------------------------------------- what a delete touches
def test_a_scenario_that_comparisons_use_is_a_409_naming_them(owner_api, owner):
    c = make("comparisons", owner)
    used = c.ordered_items()[0].scenario
    r = owner_api.delete(f"/api/v1/scenarios/{used.pk}/")
    assert r.status_code == 409
    body = r.json()
    assert body["comparisons"] == [{"id": c.pk, "name": "mine"}]
    assert f"scenario {used.pk} is used by 1 saved comparison: 'mine' (id {c.pk})" in body["detail"]
    assert Scenario.objects.filter(pk=used.pk).exists() and ComparisonItem.objects.filter(comparison=c).count() == 2
    assert Run.objects.filter(scenario=used).exists()
    # deleting the comparison keeps its scenarios and their runs; then the scenario can go
    assert owner_api.delete(f"/api/v1/comparisons/{c.pk}/").status_code == 204
    assert Run.objects.filter(scenario=used).count() == 1
    assert owner_api.delete(f"/api/v1/scenarios/{used.pk}/").status_code == 204
    assert not Run.objects.filter(scenario_id=used.pk).exists()


def test_a_sweep_keeps_its_copy_of_a_deleted_base_scenario(owner_api, owner):
    s = make("sweeps", owner)
    base = s.base
    assert owner_api.delete(f"/api/v1/scenarios/{base.pk}/").status_code == 204
    body = owner_api.get(f"/api/v1/sweeps/{s.pk}/").json()
    assert body["status"] == "succeeded" and len(body["points"]) == 2
    assert Sweep.objects.get(pk=s.pk).base_id is None


def test_deleting_a_running_sweep_cancels_it_and_its_worker_stops_quietly(owner_api, owner, monkeypatch, caplog):
    monkeypatch.setattr(sweeps, "PROGRESS_EVERY_S", 0.0)      # it checks before every point
    base = Scenario.objects.create(owner=owner, name="base", spec=spec())
    sweep = sweeps.create_sweep(owner, base.pk, [{"path": "training.seq_len", "values": [1024, 2048, 4096]},
                                                 {"path": "cluster.num_nodes", "values": [1, 2]}])
    assert sweep.chunks.count() >= 1
    first = sweep.chunks.order_by("start").first()
    later = list(sweep.chunks.exclude(pk=first.pk).values_list("pk", flat=True))
    real = sweeps.engine_sweep.summarize
    calls, deletes = [], []

    def summarize_then_delete(point, **lookups):
        calls.append(point["index"])
        if len(calls) == 1:                                   # the user deletes it mid-chunk
            deletes.append(owner_api.delete(f"/api/v1/sweeps/{sweep.pk}/").status_code)
        return real(point, **lookups)

    with mock.patch.object(sweeps.engine_sweep, "summarize", side_effect=summarize_then_delete):
        sweeps.execute_chunk(first.pk)                        # no exception: the row is gone
    assert deletes == [204] and calls == [0]                  # it stopped before its next point
    assert not Sweep.objects.filter(pk=sweep.pk).exists()
    assert not SweepChunk.objects.filter(sweep_id=sweep.pk).exists()
    for pk in [first.pk, *later]:                             # a message the broker still delivers
        sweeps.execute_chunk(pk)
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


def test_deleting_a_queued_sweep_leaves_nothing_to_run(owner_api, owner):
    base = Scenario.objects.create(owner=owner, name="base", spec=spec())
    sweep = sweeps.create_sweep(owner, base.pk, [{"path": "cluster.num_nodes", "values": [1, 2]}])
    chunk_ids = list(sweep.chunks.values_list("pk", flat=True))
    assert owner_api.delete(f"/api/v1/sweeps/{sweep.pk}/").status_code == 204
    for pk in chunk_ids:
        sweeps.execute_chunk(pk)
    assert sweeps.fail_stale_chunks() == 0 and not SweepChunk.objects.exists()


def test_deleting_a_running_plan_cancels_it_and_its_worker_stops_quietly(owner_api, owner, caplog):
    plan = plans.create_plan(owner, PLAN_SPEC, "mine")
    chunk = plan.chunks.order_by("index").first()
    real = plans.planner.plan_chunk
    deletes = []

    def delete_then_search(*args, progress=None, **kwargs):
        deletes.append(owner_api.delete(f"/api/v1/plans/{plan.pk}/").status_code)
        return real(*args, progress=progress, **kwargs)

    with mock.patch.object(plans.planner, "plan_chunk", side_effect=delete_then_search):
        plans.execute_chunk(chunk.pk)                         # no exception: the row is gone
    assert deletes == [204]
    assert not Plan.objects.filter(pk=plan.pk).exists() and not PlanChunk.objects.exists()
    assert plans.check_chunks() == 0
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


def test_deleting_a_scenario_cancels_its_running_run_and_the_worker_stops_quietly(owner_api, owner, caplog):
    sc = Scenario.objects.create(owner=owner, name="mine", spec=spec())
    run = services.start_run(sc)
    twin = Scenario.objects.create(owner=owner, name="twin", spec=spec())
    waiting = services.start_run(twin)                        # identical input: waits for `run`
    assert waiting.reused_from_id == run.pk
    deletes = []

    def delete_then_evaluate(resolved, progress=None):
        deletes.append(owner_api.delete(f"/api/v1/scenarios/{sc.pk}/").status_code)
        progress(0.5)                                         # the engine's next progress callback
        raise AssertionError("the run went on after its scenario was deleted")

    with mock.patch.object(services, "evaluate_resolved", side_effect=delete_then_evaluate):
        services.execute_run(run.pk, task_id=run.celery_task_id)
    assert deletes == [204] and not Run.objects.filter(pk=run.pk).exists()
    waiting.refresh_from_db()                                 # computed itself now, not stuck waiting
    assert waiting.status == "queued" and waiting.reused_from_id is None and waiting.celery_task_id
    services.execute_run(waiting.pk, task_id=waiting.celery_task_id)
    waiting.refresh_from_db()
    assert waiting.status == "succeeded"
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


# ---------------------------------------------------------------- the pages
PAGES = {"scenarios": "/scenarios/{}/", "comparisons": "/compare/{}/", "sweeps": "/sweeps/{}/", "plans": "/plans/{}/"}


@pytest.mark.parametrize("kind", KINDS)
def test_only_the_owners_page_has_rename_and_delete(client, owner, teammate, kind, vite_manifest):
    obj = make(kind, owner)
    for user, mine in ((owner, True), (teammate, False)):
        client.force_login(user)
        page = client.get(PAGES[kind].format(obj.pk)).content.decode()
        assert ('id="manage"' in page) is mine and ('id="delete"' in page) is mine
        if mine:
            assert f'data-api-url="/api/v1/{kind}/{obj.pk}/"' in page
    token = ShareLink.objects.create(owner=owner, **{kind[:-1]: obj}).token
    client.logout()
    shared = client.get(f"/s/{token}/").content.decode()
    assert obj.name in shared and 'id="manage"' not in shared


def test_list_pages_have_delete_on_the_owners_rows_only(client, owner, teammate, vite_manifest):
    mine = {kind: make(kind, owner) for kind in KINDS}
    theirs = Scenario.objects.create(owner=teammate, name="theirs", spec=spec())
    client.force_login(owner)
    scenarios = client.get("/scenarios/").content.decode()
    assert f'data-api-url="/api/v1/scenarios/{mine["scenarios"].pk}/"' in scenarios
    assert f'data-api-url="/api/v1/scenarios/{theirs.pk}/"' not in scenarios
    index = client.get("/compare/").content.decode()
    for kind in ("comparisons", "sweeps", "plans"):
        assert f'data-api-url="/api/v1/{kind}/{mine[kind].pk}/"' in index
    client.force_login(teammate)
    assert "delete-row" not in client.get("/compare/").content.decode()
