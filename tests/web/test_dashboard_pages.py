"""Pages of the dashboard: compare from the scenario list, the comparison and sweep pages,
the sweep form, share links made and revoked from a page, the shared view, forking."""

import re

import pytest

from tests.web.dashboard_helpers import run_chunks, run_queued_runs, spec, strategies
from tierlab.dashboard import comparisons, sharing, sweeps
from tierlab.dashboard.models import Comparison, ShareLink, Sweep
from tierlab.scenarios.models import Scenario

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("vite_manifest")]


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def comparison(owner):
    c = comparisons.create_comparison(owner, [s.pk for s in strategies(owner)], "three")
    run_queued_runs()
    return c


@pytest.mark.parametrize("url", ["/compare/", "/compare/1/", "/sweeps/new/", "/sweeps/1/",
                                 "/scenarios/1/duplicate/"])
def test_pages_require_login(client, url):
    r = client.get(url)
    assert r.status_code == 302 and r["Location"].startswith("/accounts/login/?next=")


def test_the_scenario_list_has_compare_checkboxes_and_row_actions(owner_client, owner):
    a, b, c = strategies(owner)
    html = owner_client.get("/scenarios/").content.decode()
    assert '<form id="compare-form" method="post" action="/compare/"' in html
    for s in (a, b, c):
        assert f'name="scenario" value="{s.pk}" form="compare-form"' in html
        assert f'href="/scenarios/{s.pk}/duplicate/"' in html
        assert f'href="/sweeps/new/?scenario={s.pk}"' in html


def test_compare_checked_scenarios(owner_client, owner):
    a, b, c = strategies(owner)
    r = owner_client.post("/compare/", {"scenario": [c.pk, a.pk, b.pk]})
    comparison = Comparison.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/compare/{comparison.pk}/"
    assert [i.scenario_id for i in comparison.ordered_items()] == [c.pk, a.pk, b.pk]


def test_compare_one_scenario_explains_why_not(owner_client, owner):
    a = strategies(owner, ("zero2",))[0]
    r = owner_client.post("/compare/", {"scenario": [a.pk]}, follow=True)
    assert "choose 2 to 8 scenarios, got 1" in r.content.decode()
    assert Comparison.objects.count() == 0


def test_a_refused_compare_hands_the_ticks_back_to_the_list(owner_client, owner):
    a = strategies(owner, ("zero2",))[0]
    r = owner_client.post("/compare/", {"scenario": [a.pk]})
    # the list's script ticks the boxes named in ?compare= again
    assert r.status_code == 302 and r["Location"] == f"/scenarios/?compare={a.pk}"
    r = owner_client.post("/compare/", {"scenario": [str(a.pk), "x", str(a.pk), "<b>"]})
    assert r["Location"] == f"/scenarios/?compare={a.pk}"
    assert owner_client.post("/compare/", {})["Location"] == "/scenarios/"


def test_the_comparison_page(owner_client, comparison):
    html = owner_client.get(f"/compare/{comparison.pk}/").content.decode()
    assert f'<div id="compare-root" data-url="/api/v1/comparisons/{comparison.pk}/"></div>' in html
    assert f'href="/api/v1/comparisons/{comparison.pk}/export.csv"' in html
    for item in comparison.ordered_items():
        assert f"/api/v1/scenarios/{item.scenario_id}/deepspeed.json" in html
        assert f"/api/v1/runs/{item.run_id}/report.json" in html
    assert "assets/compare-stub.js" in html and 'id="share-create"' in html


def test_others_comparisons_and_sweeps_are_404(client, stranger, comparison, owner):
    sweep = sweeps.create_sweep(owner, comparison.ordered_items()[0].scenario_id,
                                [{"path": "cluster.num_nodes", "values": [1, 2]}])
    client.force_login(stranger)
    assert client.get(f"/compare/{comparison.pk}/").status_code == 404
    assert client.get(f"/sweeps/{sweep.pk}/").status_code == 404
    assert client.post(f"/sweeps/{sweep.pk}/cancel/").status_code == 404


def test_the_index_lists_comparisons_and_sweeps(owner_client, comparison):
    html = owner_client.get("/compare/").content.decode()
    assert f'href="/compare/{comparison.pk}/"' in html and "three" in html


def test_the_sweep_form_offers_presets_and_starts_a_sweep(owner_client, owner):
    base = Scenario.objects.create(owner=owner, name="base", spec=spec())
    html = owner_client.get(f"/sweeps/new/?scenario={base.pk}&preset=offload-x-prefetch").content.decode()
    assert 'value="none, cpu, nvme"' in html and 'value="0, 1, 2"' in html
    assert f'<option value="{base.pk}" selected>base</option>' in html
    assert f'href="?preset=checkpoint-target&amp;scenario={base.pk}"' in html
    # 8 sequences on 8 GPUs: one per GPU; nodes × micro batch keeps that, so 1, 2, 4 nodes
    # at a micro batch of 1 (with the global batch fixed no second point was left)
    assert 'data-preset="nodes-x-micro-batch"' in html
    html = owner_client.get(f"/sweeps/new/?scenario={base.pk}&preset=nodes-x-micro-batch").content.decode()
    assert 'name="axis1_values" value="1, 2, 4"' in html and 'name="axis2_values" value="1"' in html
    assert "left out micro batch size 2, 4" in " ".join(html.split())
    r = owner_client.post("/sweeps/new/", {"scenario": base.pk, "axis1_path": "cluster.num_nodes",
                                           "axis1_values": "1, 2", "axis2_path": "training.micro_batch_size",
                                           "axis2_values": "1, 2"})
    sweep = Sweep.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/sweeps/{sweep.pk}/"
    assert sweep.axes == [{"path": "cluster.num_nodes", "values": [1, 2]},
                          {"path": "training.micro_batch_size", "values": [1, 2]}]
    # ticked, the node axis scales the global batch; without a node axis the box is an error
    form = {"scenario": base.pk, "axis1_path": "cluster.num_nodes", "axis1_values": "1, 2",
            "scale_global_batch": "on"}
    assert owner_client.post("/sweeps/new/", form).status_code == 302
    assert Sweep.objects.first().axes == [{"path": "cluster.num_nodes", "values": [1, 2],
                                           "scales_global_batch": True}]
    html = owner_client.post("/sweeps/new/", dict(form, axis1_path="training.seq_len")).content.decode()
    assert re.search(r'data-error-for="scale_global_batch">Applies to a Number of nodes axis', html)
    assert Sweep.objects.count() == 2


def test_the_sweep_form_shows_errors_next_to_the_field(owner_client, owner):
    base = Scenario.objects.create(owner=owner, name="base", spec=spec())
    form = {"scenario": base.pk, "axis1_path": "cluster.num_nodes", "axis1_values": "1, 2",
            "axis2_path": "training.seq_len", "axis2_values": ""}
    html = owner_client.post("/sweeps/new/", form).content.decode()
    assert 'role="alert"' in html and 'aria-invalid="true"' in html
    assert re.search(r'id="id_axis2_values_error" data-error-for="axis2_values">Give the values', html)
    # an error the engine finds lands on its field too
    html = owner_client.post("/sweeps/new/", dict(form, axis1_values="1, 1", axis2_path="")).content.decode()
    assert re.search(r'id="id_axis1_values_error" data-error-for="axis1_values">each value may appear once', html)
    # a value that is never valid (a word for a number of nodes) lands there as well
    html = owner_client.post("/sweeps/new/", dict(form, axis1_values="1, two, -3", axis2_path="")).content.decode()
    assert re.search(r'id="id_axis1_values_error" data-error-for="axis1_values">must be a whole number, '
                     r'got &quot;two&quot;', html)
    assert Sweep.objects.count() == 0


def test_the_sweep_page_and_cancel_without_javascript(owner_client, owner):
    base = Scenario.objects.create(owner=owner, name="base", spec=spec())
    sweep = sweeps.create_sweep(owner, base.pk, [{"path": "cluster.num_nodes", "values": [1, 2]}])
    html = owner_client.get(f"/sweeps/{sweep.pk}/").content.decode()
    assert (f'<div id="sweep-root" data-url="/api/v1/sweeps/{sweep.pk}/" '
            f'data-cancel-url="/api/v1/sweeps/{sweep.pk}/cancel/"></div>') in html
    assert "assets/sweep-stub.js" in html
    r = owner_client.post(f"/sweeps/{sweep.pk}/cancel/")
    assert r.status_code == 302
    sweep.refresh_from_db()
    assert sweep.status == "cancelled"


def test_share_and_revoke_from_a_page(owner_client, comparison, client):
    r = owner_client.post("/share/", {"kind": "comparison", "id": comparison.pk, "next": f"/compare/{comparison.pk}/"})
    assert r.status_code == 302 and r["Location"] == f"/compare/{comparison.pk}/#share"
    link = ShareLink.objects.get()
    html = owner_client.get(f"/compare/{comparison.pk}/").content.decode()
    assert f'value="http://testserver/s/{link.token}/"' in html
    assert f'action="/share/{link.pk}/revoke/"' in html
    r = owner_client.post(f"/share/{link.pk}/revoke/", {"next": f"/compare/{comparison.pk}/"})
    assert r.status_code == 302
    link.refresh_from_db()
    assert link.revoked_at is not None
    html = owner_client.get(f"/compare/{comparison.pk}/").content.decode()
    assert f"http://testserver/s/{link.token}/" not in html and "revoked" in html


def test_share_refuses_an_offsite_next_and_others_objects(client, stranger, comparison):
    client.force_login(stranger)
    r = client.post("/share/", {"kind": "comparison", "id": comparison.pk, "next": "https://evil.example/"})
    assert r.status_code == 302 and r["Location"] == "/scenarios/"
    assert ShareLink.objects.count() == 0


def test_the_shared_view_works_logged_out(client, owner, comparison):
    link = sharing.create_share(owner, "comparison", comparison.pk)
    r = client.get(f"/s/{link.token}/")
    html = r.content.decode()
    assert r.status_code == 200
    assert f'<div id="compare-root" data-url="/api/v1/shared/{link.token}/" data-shared="true"></div>' in html
    assert "read-only" in html and 'id="fork-login"' in html
    assert f'href="/api/v1/shared/{link.token}/export.csv"' in html
    assert "/api/v1/comparisons/" not in html and 'id="share-create"' not in html


def test_the_shared_sweep_and_scenario_views(client, owner):
    base = Scenario.objects.create(owner=owner, name="base", spec=spec())
    sweep = sweeps.create_sweep(owner, base.pk, [{"path": "cluster.num_nodes", "values": [1, 2]}])
    run_chunks(sweep)
    html = client.get(sharing.create_share(owner, "sweep", sweep.pk).get_absolute_url()).content.decode()
    assert 'id="sweep-root"' in html and "assets/sweep-stub.js" in html and "data-cancel-url" not in html
    html = client.get(sharing.create_share(owner, "scenario", base.pk).get_absolute_url()).content.decode()
    assert 'id="compare-root"' in html and "deepspeed.json" in html


def test_a_revoked_link_page_is_410(client, owner, comparison):
    link = sharing.create_share(owner, "comparison", comparison.pk)
    link.revoke()
    r = client.get(f"/s/{link.token}/")
    assert r.status_code == 410 and "revoked" in r.content.decode()
    assert client.get("/s/no-such-token/").status_code == 404


def test_fork_from_the_shared_page(client, stranger, owner, comparison):
    link = sharing.create_share(owner, "comparison", comparison.pk)
    assert client.post(f"/s/{link.token}/fork/").status_code == 302          # to the login page
    assert Comparison.objects.count() == 1
    client.force_login(stranger)
    assert 'id="fork-button"' in client.get(f"/s/{link.token}/").content.decode()
    r = client.post(f"/s/{link.token}/fork/")
    fork = Comparison.objects.get(owner=stranger)
    assert r.status_code == 302 and r["Location"] == f"/compare/{fork.pk}/"


def test_duplicate_opens_the_builder_with_a_copy(owner_client, owner):
    source = Scenario.objects.create(owner=owner, name="mine", spec=spec())
    html = owner_client.get(f"/scenarios/{source.pk}/duplicate/").content.decode()
    assert '<div id="scenario-form-root" data-prefill-example="0"></div>' in html
    assert "assets/scenario_prefill-stub.js" in html
    data = re.search(r'<script id="examples-data" type="application/json">(.*?)</script>', html, re.S).group(1)
    assert '"name": "Copy of mine"' in data


def test_the_scenario_page_has_duplicate_sweep_downloads_and_share(owner_client, owner):
    s = Scenario.objects.create(owner=owner, name="mine", spec=spec())
    html = owner_client.get(f"/scenarios/{s.pk}/").content.decode()
    for needle in (f"/scenarios/{s.pk}/duplicate/", f"/sweeps/new/?scenario={s.pk}",
                   f"/api/v1/scenarios/{s.pk}/deepspeed.json", f"/api/v1/scenarios/{s.pk}/fsdp.py",
                   'id="share-create"', 'name="kind" value="scenario"'):
        assert needle in html, needle


def test_a_question_button_on_the_scenario_page(owner_client, owner):
    s = Scenario.objects.create(owner=owner, name="mine", spec=spec())
    html = owner_client.get(f"/scenarios/{s.pk}/").content.decode()
    assert f'action="/scenarios/{s.pk}/variants/"' in html and 'data-question="offload"' in html
    r = owner_client.post(f"/scenarios/{s.pk}/variants/", {"question": "sharding"})
    comparison = Comparison.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/compare/{comparison.pk}/"
    assert comparison.name == "mine: ZeRO-2 vs ZeRO-3 vs FSDP hybrid"
    r = owner_client.post(f"/scenarios/{s.pk}/variants/", {"question": "nope"}, follow=True)
    assert "Could not compare" in r.content.decode()


def test_a_recsys_scenario_page_offers_no_framework_configs_nor_variants(owner_client, owner, client):
    """A recommendation model has no DeepSpeed / FSDP / Megatron config (the export answers
    400, simulation/export.py _need_transformer), and its sharding, offload and checkpoint
    choices change nothing the engine reports: "ZeRO-2 vs ZeRO-3 vs FSDP" made three
    identical columns. Its page offered both; a transformer's still does (above)."""
    s = Scenario.objects.create(owner=owner, name="dlrm", spec={
        "recsys": {"preset": "dlrm-mlperf-v2"}, "cluster": {"node": "dgx-h100", "num_nodes": 2}})
    assert owner_client.get(f"/api/v1/scenarios/{s.pk}/deepspeed.json").status_code == 400
    html = owner_client.get(f"/scenarios/{s.pk}/").content.decode()
    for needle in ("deepspeed.json", "fsdp.py", 'id="variants"', "data-question="):
        assert needle not in html, needle
    assert f"/sweeps/new/?scenario={s.pk}" in html               # the rest of the page stays
    r = owner_client.post(f"/scenarios/{s.pk}/variants/", {"question": "sharding"}, follow=True)
    assert "Could not compare" in r.content.decode() and not Comparison.objects.exists()
    html = client.get(sharing.create_share(owner, "scenario", s.pk).get_absolute_url()).content.decode()
    assert "report.json" in html and "deepspeed.json" not in html and "megatron.txt" not in html


def test_the_index_lists_your_plans(owner_client, owner):
    # no page listed one's plans (newcomer check): the comparisons index lists them beside sweeps
    from tierlab.dashboard import plans
    html = owner_client.get("/compare/").content.decode()
    assert "No plans yet." in html and 'href="/plans/new/"' in html
    plan = plans.create_plan(owner, {"model": "llama2-7b", "cluster": {"node": "dgx-h100", "num_nodes": 1},
                                     "training": {"seq_len": 2048, "global_batch_size": 8},
                                     "space": {"tensor_parallel": [1], "pipeline_parallel": [1],
                                               "micro_batch_size": [1], "recompute": ["full"],
                                               "strategies": ["zero1"]}}, "my plan")
    html = owner_client.get("/compare/").content.decode()
    assert 'id="plan-list"' in html and f'href="/plans/{plan.pk}/">my plan</a>' in html
    # the objective as a reader sees it, with its unit, not the planner's key (newcomer check)
    assert "<td>Step time (s)</td>" in html and "step_time" not in html
