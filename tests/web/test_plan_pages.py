"""The planner's pages: the form queues a plan, the plan page shows progress, then the ranked
table with each candidate's bottleneck, the Pareto front and the rejected counts; save and
compare; a bad value is shown on its field."""

from unittest import mock

import pytest
from django.utils.html import escape

from tests.web.test_plans_api import run_chunks
from simulation import presets
from simulation.planner import REASON_LABELS
from tierlab.dashboard import plans
from tierlab.dashboard.models import Comparison, Plan
from tierlab.scenarios.models import Scenario

pytestmark = pytest.mark.django_db

FORM = {"model": "llama2-13b", "node": "dgx-h100", "min_nodes": 1, "max_nodes": 2, "seq_len": 4096,
        "global_batch_size": 64, "memory_margin": 0.05, "objective": "step_time"}


@pytest.fixture
def client_owner(client, owner):
    client.force_login(owner)
    return client


def submit(client, **patch):
    with mock.patch("tierlab.dashboard.tasks.run_plan_chunk.apply_async"):
        return client.post("/plans/new/", {**FORM, **patch})


def test_the_form_queues_a_plan_and_its_page_shows_progress(client_owner):
    assert "Planner" in client_owner.get("/plans/new/").content.decode()
    r = submit(client_owner)
    plan = Plan.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/plans/{plan.pk}/"
    assert plan.spec["cluster"]["num_nodes"] == {"min": 1, "max": 2}
    html = client_owner.get(r["Location"]).content.decode()
    assert 'http-equiv="refresh"' in html and 'id="plan-progress"' in html and "plan-cancel" in html


def test_the_finished_plan_shows_the_ranked_table_front_and_reasons(client_owner):
    submit(client_owner)
    plan = Plan.objects.get()
    run_chunks(plan)
    html = client_owner.get(f"/plans/{plan.pk}/").content.decode()
    assert 'http-equiv="refresh"' not in html
    plan.refresh_from_db()
    assert 'data-rank="1"' in html and 'data-rank="10"' in html
    assert escape(plan.result["top"][0]["bottleneck_message"]) in html
    assert 'id="plan-pareto"' in html and 'data-reason="indivisible"' in html
    # each reason in words, not its code
    assert '<tr data-reason="indivisible"><td>parallel degrees or batch do not divide</td>' in html
    assert "<td>does_not_fit_hbm</td>" not in html and "<td>indivisible</td>" not in html
    r = client_owner.post(f"/plans/{plan.pk}/save/", {"rank": 1})
    sc = Scenario.objects.get()
    assert r.status_code == 302 and r["Location"] == sc.get_absolute_url()
    with mock.patch("tierlab.scenarios.services.enqueue"):
        r = client_owner.post(f"/plans/{plan.pk}/compare/")
    assert r.status_code == 302 and Comparison.objects.get().items.count() == 3


def test_a_bad_value_is_shown_on_its_field(client_owner):
    r = submit(client_owner, min_nodes=4, max_nodes=2)
    assert r.status_code == 200 and not Plan.objects.exists()
    assert 'id="error-max_nodes"' in r.content.decode()


def test_strangers_get_404_and_teammates_read_only(client, owner, stranger, teammate, client_owner):
    submit(client_owner)
    plan = Plan.objects.get()
    client.force_login(stranger)
    assert client.get(f"/plans/{plan.pk}/").status_code == 404
    client.force_login(teammate)
    html = client.get(f"/plans/{plan.pk}/").content.decode()
    assert "read-only" in html and "plan-cancel" not in html
    assert client.post(f"/plans/{plan.pk}/cancel/").status_code in (403, 404)


def test_the_form_picks_a_cluster_profile_of_the_team_only(client_owner, owner, stranger):
    from tierlab.scenarios.models import ClusterProfile

    figures = {"accelerator": "h100-sxm5-80gb", "compute_efficiency": 0.4}
    mine = ClusterProfile.objects.create(owner=owner, name="our h100s", measurements={}, figures=figures)
    theirs = ClusterProfile.objects.create(owner=stranger, name="their h100s", measurements={}, figures=figures)
    html = client_owner.get("/plans/new/").content.decode()
    assert f'<option value="{mine.pk}">our h100s (h100-sxm5-80gb) — owner</option>' in html
    assert "their h100s" not in html
    submit(client_owner, profile=mine.pk)
    assert Plan.objects.get().spec["cluster"]["profile"] == {**figures, "id": mine.pk, "name": "our h100s"}
    r = submit(client_owner, profile=theirs.pk)          # not a choice of this form
    assert r.status_code == 200 and 'id="error-profile"' in r.content.decode()
    assert Plan.objects.count() == 1


def test_the_form_sets_the_allowed_strategies_offload_tiers_and_minimum_batch(client_owner):
    """The constraints of issue #16 on the page, not only in the API: the allowed
    strategies and offload tiers become the space's lists, the minimum global batch a
    constraint; left empty, the engine's defaults (the same space as before)."""
    html = client_owner.get("/plans/new/").content.decode()
    assert 'name="strategies"' in html and 'name="offload_optimizer"' in html
    assert 'name="min_global_batch_size"' in html
    assert '<option value="zero1" selected>' in html and '<option value="ddp">' in html
    r = submit(client_owner, strategies=["zero3", "fsdp_full_shard"], offload_optimizer=["none", "cpu"],
               offload_params=["none"], min_global_batch_size=128)
    assert r.status_code == 302, r.content.decode()[:2000]
    plan = Plan.objects.get()
    assert plan.spec["space"] == {"strategies": ["zero3", "fsdp_full_shard"], "offload_optimizer": ["none", "cpu"],
                                  "offload_params": ["none"]}
    assert plan.spec["constraints"]["min_global_batch_size"] == 128
    from simulation import planner
    parsed = planner.parse_spec(plan.spec)
    default = planner.parse_spec({**plan.spec, "space": {}})
    assert parsed["num_candidates"] == default["num_candidates"] // 3 * 2 * 2     # 2 of 3 strategies, 2 tiers
    run_chunks(plan)
    plan.refresh_from_db()
    assert plan.result["rejected"]["below_min_global_batch"] > 0    # the batch is 64 < 128: all refused
    page = client_owner.get(f"/plans/{plan.pk}/").content.decode()
    assert plan.result["feasible"] == 0 and "No candidate fits" in page
    # and what to widen: the most common rejection's lever (planner.infeasible_advice)
    assert 'id="plan-advice"' in page and "constraints.min_global_batch_size" in page
    r = submit(client_owner)                           # nothing picked: the engine's defaults
    assert "space" not in Plan.objects.latest("pk").spec


def test_candidates_equivalent_at_dp_1_show_as_one_row_naming_the_others(client_owner):
    """Llama-2-70B on 1 to 4 DGX H100 (the newcomer's question): a layout at data-parallel
    degree 1 is one row whose strategy cell names the strategies that give the same step."""
    submit(client_owner, model="llama2-70b", max_nodes=4, global_batch_size=512)
    plan = Plan.objects.get()
    run_chunks(plan)
    plan.refresh_from_db()
    html = client_owner.get(f"/plans/{plan.pk}/").content.decode()
    also = [r for r in plan.result["top"] if r["alternatives"]]
    assert also and 'data-rank="10"' in html
    for r in also:
        assert f'<small class="plan-also">{escape(r["alternatives_message"])}</small>' in html


def test_the_pareto_front_names_each_layout(client_owner):
    """A point of the front says which configuration it is, not only its number."""
    submit(client_owner)
    plan = Plan.objects.get()
    run_chunks(plan)
    plan.refresh_from_db()
    html = client_owner.get(f"/plans/{plan.pk}/").content.decode()
    for r in plan.result["pareto"]:
        c = r["choices"]
        assert (f'<li data-index="{r["index"]}">candidate {r["index"]} ({c["num_nodes"]} node'
                f'{"s" if c["num_nodes"] != 1 else ""}, TP {c["tensor_parallel"]}, PP {c["pipeline_parallel"]}, '
                f'DP {r["data_parallel"]}, micro batch {c["micro_batch_size"]}, {c["strategy"]}, '
                f'recompute {c["recompute"]}): ') in html


def test_the_form_takes_a_gpu_count_or_tokens_per_step(client_owner):
    """Issue #16's inputs: a GPU count instead of the node range, tokens per step instead
    of the global batch (the engine turns them into one node of 4 GPUs and 32 sequences of
    2,048 tokens); a GPU count that is no multiple of a node, or neither batch, is shown on
    its field."""
    r = submit(client_owner, num_gpus=4, seq_len=2048, global_batch_size="", tokens_per_step=2048 * 32)
    assert r.status_code == 302, r.content.decode()[:3000]
    spec = Plan.objects.get().spec
    assert spec["cluster"] == {"node": "dgx-h100", "num_gpus": 4}
    assert spec["training"]["tokens_per_step"] == 65536 and "global_batch_size" not in spec["training"]
    from simulation import planner
    parsed = planner.parse_spec(spec)
    assert parsed["node_counts"] == [1] and parsed["cluster"]["gpus_per_node"] == 4
    assert parsed["training"]["global_batch_size"] == 32
    r = submit(client_owner, num_gpus=12)
    assert r.status_code == 200 and 'id="error-num_gpus"' in r.content.decode()
    r = submit(client_owner, global_batch_size="")
    assert r.status_code == 200 and 'id="error-global_batch_size"' in r.content.decode()
    assert Plan.objects.count() == 1


def test_a_plan_with_nothing_feasible_says_why_not_that_the_node_has_no_price(client_owner, owner_api):
    # TP 3 divides neither the 8 GPUs of a DGX H100 nor Llama-2-70B's 64 heads; the node has a price
    with mock.patch("tierlab.dashboard.tasks.run_plan_chunk.apply_async"):
        r = owner_api.post("/api/v1/plans/", {"spec": {
            "model": "llama2-70b", "cluster": {"node": "dgx-h100", "num_nodes": 1},
            "training": {"seq_len": 4096, "global_batch_size": 64}, "space": {"tensor_parallel": [3]}}},
            format="json")
    assert r.status_code == 202, r.json()
    plan = Plan.objects.get()
    run_chunks(plan)
    plan.refresh_from_db()
    assert plan.result["feasible"] == 0
    html = client_owner.get(f"/plans/{plan.pk}/").content.decode()
    assert "no price" not in html and "No chart: no candidate was feasible (" in html
    for reason, count in plan.result["rejected"].items():
        if count:
            assert f"{count} {escape(REASON_LABELS.get(reason, reason))}" in html


def test_an_unnamed_custom_model_is_described_in_the_plan_name(client_owner, owner_api):
    arch = {k: v for k, v in presets.MODELS["llama2-13b"].items() if k not in ("name", "source")}
    with mock.patch("tierlab.dashboard.tasks.run_plan_chunk.apply_async"):
        r = owner_api.post("/api/v1/plans/", {"spec": {
            "model": arch, "cluster": {"node": "dgx-h100", "num_nodes": 1},
            "training": {"seq_len": 4096, "global_batch_size": 64},
            "space": {"tensor_parallel": [8], "pipeline_parallel": [1], "micro_batch_size": [1],
                      "recompute": ["full"], "strategies": ["zero1"]}}}, format="json")
    assert r.status_code == 202, r.json()
    assert r.json()["name"] == "Plan: a 13.0B-parameter model on dgx-h100, step time"
    assert plans.model_title({"num_layers": 40, "hidden_size": 5120}) == "custom model (40 layers, hidden 5120)"
    assert plans.model_title({**arch, "name": "My 13B"}) == "My 13B"


def test_the_form_takes_a_deadline_in_days(client_owner):
    """The deadline constraint (planner constraints.max_time_to_train_s) on the page, in days;
    without the total tokens it is refused on the total-tokens field."""
    r = submit(client_owner, max_days_to_train=30, total_tokens=1e11)
    assert r.status_code == 302, r.content.decode()[:2000]
    assert Plan.objects.get().spec["constraints"]["max_time_to_train_s"] == 30 * 86400
    r = submit(client_owner, max_days_to_train=30)
    page = r.content.decode()
    assert r.status_code == 200 and "is required for constraints.max_time_to_train_s" in page


def test_a_name_too_long_is_shown_on_its_field_not_cut_short(client_owner, owner_api):
    # the input had maxlength="200", so a browser cut a pasted 500-character name to 200
    # and the plan was saved under it; the API refuses it: the form says what the API says
    html = client_owner.get("/plans/new/").content.decode()
    tag = html[html.index('name="name"') - 200:]
    tag = tag[tag.rindex("<input", 0, 200):]
    assert "maxlength" not in tag[:tag.index(">")]
    r = submit(client_owner, name="n" * 500)
    assert r.status_code == 200 and not Plan.objects.exists()
    page = r.content.decode()
    assert 'id="error-name"' in page
    assert "Ensure this field has no more than 200 characters. This one has 500." in page
    api = owner_api.post("/api/v1/plans/", {"name": "n" * 500}, format="json").json()
    assert api["name"] == ["Ensure this field has no more than 200 characters."]
    r = submit(client_owner, name="n" * 200)
    assert r.status_code == 302 and Plan.objects.get().name == "n" * 200
