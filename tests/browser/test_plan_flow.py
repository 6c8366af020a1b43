"""The planner in a real browser against a live server and a real Celery worker: a newcomer
picks Llama-2-70B on up to 4 DGX H100 nodes and gets a ranked answer, with the reasons,
within a minute; saves the best one as a scenario."""

import re
import time
import uuid

import pytest

from tests.browser.conftest import log_in, screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_llama2_70b_on_up_to_four_dgx_h100_ranked_within_a_minute(page, live_url, user_admin, catalog,
                                                                  celery_worker):
    log_in(page, live_url, user_admin)
    page.click("nav >> text=Planner")
    page.wait_for_url(re.compile(r".*/plans/new/$"))
    page.select_option("#id_model", "llama2-70b")
    page.select_option("#id_node", "dgx-h100")
    page.fill("#id_min_nodes", "1")
    page.fill("#id_max_nodes", "4")
    started = time.monotonic()
    page.click("#submit-plan")
    page.wait_for_url(re.compile(r".*/plans/\d+/$"))
    page.wait_for_selector("#plan-root[data-status='succeeded']", timeout=60_000)
    assert time.monotonic() - started < 60
    assert page.locator("#plan-progress").evaluate("el => el.value") == 100
    from tierlab.dashboard import plans
    from tierlab.dashboard.models import Plan
    total = plans.plan_payload(Plan.objects.get())["total_candidates"]   # the space's size
    assert total > 1000
    assert f"{total} of {total} candidates (100%)" in page.locator("#plan-progress-text").inner_text()
    rows = page.locator("#plan-table tbody tr")
    assert rows.count() == 10
    first = rows.first
    assert first.get_attribute("data-rank") == "1"
    assert first.locator("td").nth(1).inner_text() == "4"            # the most nodes is the fastest
    assert "step" in first.locator(".bottleneck").inner_text()
    assert page.locator("#plan-rejected tr[data-reason='indivisible']").count() == 1
    assert page.locator("#plan-rejected tr[data-reason='does_not_fit_hbm']").count() == 1
    assert page.locator("#plan-pareto li").count() >= 1
    screenshot(page, "plan-done")
    first.locator(".plan-save").click()
    page.wait_for_url(re.compile(r".*/scenarios/\d+/$"))
    assert page.js_errors == []


def submit_without_worker(page, live_url, user, settings, model):
    """Log in and submit ``model`` on 1-4 DGX H100 nodes from the planner form, on a queue no
    worker reads (the test runs the chunks itself), with CSP violations recorded."""
    from tests.browser.test_content_security_policy import RECORD_VIOLATIONS

    settings.TIERLAB_RUN_QUEUE = f"tierlab-test-{uuid.uuid4().hex[:8]}"   # no worker reads it
    page.add_init_script(RECORD_VIOLATIONS)             # the polling works under the policy
    log_in(page, live_url, user)
    page.goto(f"{live_url}/plans/new/")
    page.select_option("#id_model", model)
    page.select_option("#id_node", "dgx-h100")
    page.fill("#id_min_nodes", "1")
    page.fill("#id_max_nodes", "4")
    page.click("#submit-plan")
    page.wait_for_url(re.compile(r".*/plans/\d+/$"))


def test_the_progress_bar_follows_the_api_without_reloading_the_page(page, live_url, user_admin, catalog,
                                                                     settings):
    """The plan page polls GET /api/v1/plans/<id>/ (src/pages/plan.ts): the bar, the
    candidates done / feasible and the best so far follow the chunks as they finish, the page
    never reloads, polling stops at the end and the ranked answer takes the progress's place.
    No worker reads the plan's queue: the test runs the chunks itself, one at a time, and
    reads the page from the test side (wait_until) after each."""
    from tierlab.dashboard import plans
    from tierlab.dashboard.models import Plan, PlanChunk

    console = []
    page.on("console", lambda msg: console.append(msg.text) if msg.type == "error" else None)
    submit_without_worker(page, live_url, user_admin, settings, "llama2-70b")
    plan = Plan.objects.get()
    page.evaluate("window.__sameDocument = true")       # gone if the page reloads
    wait_until(page, "document.getElementById('plan-root').dataset.live === 'true'")
    assert page.locator("#plan-progress").evaluate("el => el.value") == 0
    text = "() => document.getElementById('plan-progress-text').textContent"
    seen_best = False
    chunks = list(PlanChunk.objects.filter(plan=plan).order_by("index"))
    total = plans.plan_payload(plan)["total_candidates"]     # the space's size
    assert total > 1000
    for chunk in chunks[:-1]:
        plans.execute_chunk(chunk.pk)
        p = plans.plan_payload(plan)
        assert 0 < p["done"] < p["total_candidates"] == total
        percent = 100 * p["done"] // total                 # rounded down (12.5 % is 12 %)
        want = f"{p['done']} of {total} candidates ({percent}%), {p['feasible']} feasible"
        wait_until(page, f"() => document.getElementById('plan-progress-text').textContent === {want!r}")
        assert page.locator("#plan-progress").evaluate("el => el.value") == percent
        assert page.locator("#plan-status").inner_text() == "running"
        best = page.locator("#plan-best").inner_text()
        if p["best_so_far"]:
            seen_best = True
            b = p["best_so_far"]
            assert best.startswith(f"; best so far: candidate {b['index']} — {b['choices']['num_nodes']} node"), best
            assert f"TP {b['choices']['tensor_parallel']}, PP {b['choices']['pipeline_parallel']}" in best
            assert re.search(r"— step [\d.]+ (ms|s|min|h), \$[\d.,]+ per M tokens$", best), best
        else:
            assert best == ""
    assert seen_best, "no chunk before the last found a feasible candidate"
    plans.execute_chunk(chunks[-1].pk)
    wait_until(page, "document.getElementById('plan-root').dataset.ready === 'true'")
    # finished: the server's ranked answer is in place of the progress, in the same document
    assert page.evaluate("window.__sameDocument") is True, "the page reloaded"
    assert page.locator("#plan-root").get_attribute("data-status") == "succeeded"
    assert page.locator("#plan-table tbody tr").count() == 10
    assert page.evaluate(text) == f"{total} of {total} candidates (100%), {plans.plan_payload(plan)['feasible']} feasible"
    assert page.locator("#plan-cancel").count() == 0
    assert page.evaluate("window.__csp") == [] and console == []
    # and polling has stopped
    polls = page.evaluate("Number(document.getElementById('plan-root').dataset.polls)")
    page.wait_for_timeout(3000)
    assert page.evaluate("Number(document.getElementById('plan-root').dataset.polls)") == polls >= len(chunks)
    assert page.js_errors == []


def test_a_finished_plans_pareto_front_is_a_chart_in_place_and_on_the_share_link(page, live_url, user_admin,
                                                                                 catalog, settings):
    """Issue #16: the front of step time against cost is drawn (src/charts/plan_series.ts)
    once the plan finishes, both when the poller replaces the section in place and when a
    finished plan's page (its own, and its share link's) is opened; one point per candidate
    on the front, under the Content Security Policy, the list still below the chart."""
    from tierlab.dashboard import plans, sharing
    from tierlab.dashboard.models import Plan, PlanChunk

    submit_without_worker(page, live_url, user_admin, settings, "llama2-7b")
    plan = Plan.objects.get()
    wait_until(page, "document.getElementById('plan-root').dataset.live === 'true'")
    assert page.locator("#plan-pareto-chart").count() == 0          # no result yet, no chart
    for chunk in PlanChunk.objects.filter(plan=plan).order_by("index"):
        plans.execute_chunk(chunk.pk)
    front = plans.plan_payload(Plan.objects.get())["result"]["pareto"]
    assert len(front) > 1 and all(r["usd_per_million_tokens"] is not None for r in front)   # DGX H100 has a price

    def check(where):
        wait_until(page, "document.getElementById('plan-root').dataset.ready === 'true'", timeout_s=30)
        wait_until(page, "document.getElementById('plan-pareto-chart').dataset.rendered === 'true'")
        chart = page.locator("#plan-pareto-chart")
        assert chart.get_attribute("data-points") == str(len(front)), where
        assert chart.locator("svg").count() == 1, where
        svg_text = chart.locator("svg").evaluate("el => el.textContent")
        assert "Step time (" in svg_text and "$ per M tokens" in svg_text, (where, svg_text)
        assert page.locator("#plan-pareto li").count() == len(front), where    # the list stays
        assert page.evaluate("window.__csp") == [], where

    check("replaced in place")
    screenshot(page, "plan-pareto-chart")
    page.reload()
    check("opened finished")
    link = sharing.create_share(user_admin, "plan", plan.pk)
    page.goto(f"{live_url}/s/{link.token}/")
    check("share link")
    assert page.js_errors == []


def test_the_plan_list_names_each_objective_with_its_unit(page, live_url, user_admin, catalog, settings):
    """The comparisons index's plan list showed the planner's key ("step_time",
    "cost_per_million_tokens"): each objective reads as what it measures, with its unit
    (tierlab.catalog.labels.OBJECTIVE_LABELS), one plan per objective of
    simulation.planner.OBJECTIVES. No worker reads the plans' queue: they stay queued."""
    from simulation.planner import OBJECTIVES
    from tierlab.catalog.labels import OBJECTIVE_LABELS
    from tierlab.dashboard import plans

    settings.TIERLAB_RUN_QUEUE = f"tierlab-test-{uuid.uuid4().hex[:8]}"   # no worker reads it
    for objective in OBJECTIVES:
        plans.create_plan(user_admin, {
            "model": "llama2-7b", "cluster": {"node": "dgx-h100", "num_nodes": 1},
            "training": {"seq_len": 2048, "global_batch_size": 8, "total_tokens": 10**9},
            "space": {"tensor_parallel": [1], "pipeline_parallel": [1], "micro_batch_size": [1],
                      "recompute": ["full"], "strategies": ["zero1"]},
            "objective": objective}, f"by {objective}")
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/compare/")
    table = page.locator("#plan-list")
    shown = {row.locator("th").inner_text(): row.locator("td").nth(1).inner_text()
             for row in table.locator("tbody tr").all()}
    assert shown == {f"by {o}": OBJECTIVE_LABELS[o] for o in OBJECTIVES}
    assert shown["by step_time"] == "Step time (s)"
    assert shown["by cost_per_million_tokens"] == "Cost (USD per million tokens)"
    cells = " ".join(shown.values())
    assert not any(o in cells for o in OBJECTIVES), cells
    screenshot(page, "plan-list-objectives")
    assert page.js_errors == []


def test_a_pasted_500_character_name_is_the_fields_error_not_cut_to_200(page, live_url, user_admin, catalog):
    """The name input had maxlength 200: a pasted 500-character name was cut to 200 and the
    plan saved under it, where the API refuses the name with a 400. Now the form says so."""
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/plans/new/")
    page.locator("#id_name").focus()
    page.keyboard.insert_text("n" * 500)                 # as a paste: maxlength would cut it
    assert len(page.locator("#id_name").input_value()) == 500
    page.select_option("#id_model", "llama2-7b")
    page.click("#submit-plan")
    page.wait_for_selector("#error-name")
    assert page.locator("#error-name").inner_text() == (
        "Ensure this field has no more than 200 characters. This one has 500.")
    assert re.search(r"/plans/new/$", page.url)
    from tierlab.dashboard.models import Plan
    assert not Plan.objects.exists()
