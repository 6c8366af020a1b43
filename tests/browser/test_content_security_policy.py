"""The pages work under the Content-Security-Policy the server sends: the scenario builder
(both model kinds), run pages with their charts (and a chart tooltip), a comparison, a sweep,
a plan, the cluster profiles, a share link's page, the API docs, the browsable API and the
admin, in headless Chromium, with no policy violation and no console error. A script
injected into the page is refused, so the policy is enforced, not merely sent."""

import uuid

import pytest

from tests.browser.conftest import log_in
from tests.browser.test_recsys_flow import RECSYS_CHARTS
from tests.browser.test_run_charts import CHARTS, finished_run
from tests.web.dashboard_helpers import run_chunks, run_queued_runs, spec, strategies

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every violation the page sees, from before its first script runs.
RECORD_VIOLATIONS = """
  window.__csp = [];
  document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(
    `${e.effectiveDirective} blocked ${e.blockedURI || 'inline'} (${e.sourceFile}:${e.lineNumber})`));
"""


@pytest.fixture
def watched(page):
    """The page, recording CSP violations and console errors (page.problems())."""
    console: list[str] = []

    def seen(msg):
        url = msg.location.get("url", "")
        # the admin's pages name no icon, so Chromium asks for /favicon.ico: a 404, not the policy
        if msg.type == "error" and not url.endswith("/favicon.ico"):
            console.append(f"{msg.text} {url}")

    page.on("console", seen)
    page.add_init_script(RECORD_VIOLATIONS)
    page.problems = lambda: {"violations": page.evaluate("window.__csp"), "console": list(console),
                             "errors": list(page.js_errors)}
    return page


def open_page(page, url: str):
    response = page.goto(url)
    assert response.status == 200, url
    policy = response.headers.get("content-security-policy", "")
    for directive in ("script-src 'self'", "object-src 'none'", "base-uri 'none'",
                      "frame-ancestors 'none'", "form-action 'self'"):
        assert directive in policy, (url, policy)
    assert "'unsafe-eval'" not in policy and "script-src 'self' 'unsafe-inline'" not in policy
    return policy


def assert_clean(page, where: str):
    page.wait_for_timeout(200)            # a late violation report is still delivered
    assert page.problems() == {"violations": [], "console": [], "errors": []}, where


def test_the_pages_work_under_the_policy(watched, live_url, user_admin, catalog, settings):
    from tierlab.dashboard import comparisons, sweeps

    page = watched
    settings.TIERLAB_RUN_QUEUE = f"tierlab-test-{uuid.uuid4().hex[:8]}"    # no worker: run here
    run = finished_run(user_admin, "Llama-2-70B ZeRO-3 (CSP)", {
        "model": {"preset": "llama2-70b"}, "cluster": {"node": "dgx-h100", "num_nodes": 2},
        "training": {"micro_batch_size": 1, "global_batch_size": 32, "seq_len": 4096, "recompute": "full"},
        "strategy": {"kind": "zero3"}, "checkpoint": {"method": "async"}})
    dlrm = finished_run(user_admin, "DLRM v2 (CSP)", {
        "recsys": {"preset": "dlrm-mlperf-v2"}, "cluster": {"node": "dgx-h100", "num_nodes": 2, "gpus_per_node": 8}})
    comparison = comparisons.create_comparison(user_admin, [s.pk for s in strategies(user_admin)], "CSP")
    run_queued_runs()
    base = strategies(user_admin, kinds=("zero3",))[0]
    sweep = sweeps.create_sweep(user_admin, base.pk, [{"path": "cluster.num_nodes", "values": [1, 2]},
                                                      {"path": "training.micro_batch_size", "values": [1, 2]}])
    run_chunks(sweep)

    log_in(page, live_url, user_admin)                  # the login page, then the builder
    page.wait_for_selector("#scenario-form-root[data-ready='true']")
    page.select_option("#f-example", label="Llama-2-7B · 1×H100 · ZeRO-Offload (CPU)")
    page.wait_for_selector("#live-estimate[data-fits='true']")
    page.select_option("select[name='model_kind']", "recsys")        # the recommendation model's form
    page.wait_for_selector("#recsys-fieldset:not([hidden])")
    page.select_option("select[name='recsys.preset']", "dlrm-mlperf-v2")
    page.wait_for_selector("#live-estimate[data-fits]")
    assert_clean(page, "scenario builder")

    open_page(page, f"{live_url}/runs/{run.pk}/")
    for chart in CHARTS:
        page.wait_for_selector(f"#{chart}[data-rendered='true']", timeout=20_000)
    page.locator("#memory-chart").scroll_into_view_if_needed()
    box = page.locator("#memory-chart").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.5)
    page.wait_for_selector("#memory-chart >> text=Total:")       # the tooltip: HTML with style attributes
    assert_clean(page, "run page")

    open_page(page, f"{live_url}/runs/{dlrm.pk}/")                  # a recommendation model's run
    for chart in RECSYS_CHARTS:
        page.wait_for_selector(f"#{chart}[data-rendered='true']", timeout=20_000)
    assert_clean(page, "recommendation model's run page")

    open_page(page, f"{live_url}/compare/{comparison.pk}/")
    page.wait_for_selector("#compare-root[data-ready='true']", timeout=60_000)
    page.wait_for_selector("#cmp-memory-chart[data-rendered='true']", timeout=20_000)
    page.wait_for_selector("#cmp-cost-chart[data-rendered='true']", timeout=20_000)
    assert_clean(page, "comparison")

    open_page(page, f"{live_url}/sweeps/{sweep.pk}/")
    page.wait_for_selector("#sweep-root[data-status='succeeded']", timeout=30_000)
    page.wait_for_selector("#sweep-heatmap[data-rendered='true']")
    page.wait_for_selector("#sweep-pareto[data-rendered='true']")
    assert_clean(page, "sweep")

    from tests.web.test_plans_api import SPEC, run_chunks as run_plan_chunks
    from tierlab.dashboard import plans, sharing

    plan = plans.create_plan(user_admin, SPEC, "CSP")          # pages added after this test first ran
    run_plan_chunks(plan)
    shared = sharing.create_share(user_admin, "sweep", sweep.pk)
    for path in ("/catalog/", "/scenarios/", f"/scenarios/{base.pk}/", f"/sweeps/new/?scenario={base.pk}",
                 "/compare/", f"/scenarios/{base.pk}/duplicate/", "/plans/new/", f"/plans/{plan.pk}/",
                 "/profiles/", f"/s/{shared.token}/"):
        open_page(page, live_url + path)
        page.wait_for_load_state("networkidle")
        assert_clean(page, path)

    policy = open_page(page, f"{live_url}/api/docs/")
    assert "'unsafe-inline'" in policy.split("style-src ")[1].split(";")[0]    # its inline <style>
    page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)            # the operations drawn
    assert_clean(page, "API docs")

    open_page(page, f"{live_url}/admin/catalog/accelerator/")
    page.wait_for_selector("#result_list")
    assert_clean(page, "admin")

    open_page(page, f"{live_url}/api/v1/catalog/models/")            # DRF's browsable API
    page.wait_for_selector(".response-info")
    assert_clean(page, "browsable API")

    # enforced: a script added to the page does not run, and is reported
    page.evaluate("""() => { const s = document.createElement('script');
                             s.textContent = 'window.__ran = true'; document.body.append(s); }""")
    page.wait_for_timeout(200)
    assert page.evaluate("window.__ran") is None
    assert page.evaluate("window.__csp")[0].startswith("script-src-elem blocked inline")
