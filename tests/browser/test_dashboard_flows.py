"""The comparison dashboard in a real browser, against a live server and a real Celery
worker: build a scenario and duplicate it, compare three, run a sweep and watch its progress
reach 100%, open a share link logged out, and revoke it."""

import re
import uuid

import pytest

from tests.browser.conftest import SCREENSHOTS, log_in, screenshot, wait_until
from tests.web.dashboard_helpers import spec, strategies

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

def shot(locator, name: str) -> None:
    """A screenshot of one part of the page, to look at (test-results/browser/)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    locator.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


CHARTS = ["cmp-memory-chart", "cmp-step-chart", "cmp-timeline-chart", "cmp-goodput-chart", "cmp-cost-chart"]


def test_build_a_scenario_from_a_preset_and_duplicate_it(page, live_url, user_admin, catalog, celery_worker):
    from tierlab.scenarios.models import Scenario

    log_in(page, live_url, user_admin)
    page.wait_for_selector("#scenario-form-root[data-ready='true']")
    page.select_option("#f-example", label="Llama-2-7B · 1×H100 · ZeRO-Offload (CPU)")
    page.wait_for_selector("#live-estimate[data-fits='true']")
    assert "Fits" in page.locator("#estimate-summary").inner_text()
    page.click("#submit-scenario")
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))
    original = Scenario.objects.get()

    page.goto(f"{live_url}/scenarios/{original.pk}/")
    page.click("#duplicate-scenario")
    page.wait_for_selector("#scenario-form-root[data-prefilled='true']")
    assert page.input_value("input[name='name']") == f"Copy of {original.name}"
    assert page.input_value("select[name='model.preset']") == "llama2-7b"
    assert page.input_value("select[name='strategy.kind']") == "zero_offload"
    # NVMe swapping is ZeRO-3's (ZeRO-Infinity): DeepSpeed's stage 2 offloads to host only
    page.select_option("select[name='strategy.kind']", "zero_infinity")
    page.select_option("select[name='strategy.offload_optimizer']", "nvme")
    page.fill("input[name='name']", "7B offload to NVMe")
    page.wait_for_selector("#live-estimate[data-fits]")
    screenshot(page, "scenario-duplicate")
    page.click("#submit-scenario")
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))
    copy = Scenario.objects.get(name="7B offload to NVMe")
    assert copy.spec["strategy"]["offload_optimizer"] == "nvme" and copy.spec["strategy"]["kind"] == "zero_infinity"
    assert Scenario.objects.get(pk=original.pk).spec == original.spec        # the original is unchanged
    assert page.js_errors == []


def test_compare_three_scenarios(page, browser, live_url, user_admin, catalog, celery_worker):
    a, b, c = strategies(user_admin)
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/scenarios/")
    for s in (a, b, c):
        page.check(f"#compare-{s.pk}")
    screenshot(page, "scenarios-list")
    page.click("#compare-button")
    page.wait_for_url(re.compile(r".*/compare/\d+/$"))
    page.wait_for_selector("#compare-root[data-ready='true']", timeout=60_000)
    assert page.locator("#compare-status").get_attribute("data-status") == "succeeded"

    table = page.locator("#compare-table")
    assert table.locator("thead th").count() == 4                     # quantity + three scenarios
    differs = table.locator("tr.differs")
    assert differs.count() >= 1
    assert differs.first.get_attribute("data-key") == "strategy.kind"
    assert table.locator("td[data-best='true']").count() >= 3
    hbm = table.locator("tr[data-key='memory.per_gpu.hbm.total_bytes']").inner_text()
    assert " GB (" in hbm and " GiB)" in hbm and "★" in hbm
    step = table.locator("tr[data-key='step.time_s']").inner_text()
    assert re.search(r"\d (ms|s)\b", step)
    assert "per 1M tokens" in table.locator("tr[data-key='cost.usd_per_million_tokens']").inner_text()
    page.click("#toggle-same")
    assert page.locator("#inputs-same").is_visible()
    page.click("#toggle-same")

    for chart in CHARTS:
        page.wait_for_selector(f"#{chart}[data-rendered='true']", timeout=20_000)
        assert page.locator(f"#{chart} svg").count() >= 1, chart
    svg = page.locator("#cmp-memory-chart svg").inner_html()
    assert "GiB (2³⁰ bytes)" in svg             # GPU memory as nvidia-smi reads it
    assert "Seconds per step (s)" in page.locator("#cmp-step-chart svg").inner_html()
    assert "Checkpoint interval (log scale)" in page.locator("#cmp-goodput-chart svg").inner_html()
    screenshot(page, "compare-three")
    for chart in ("cmp-memory-chart", "cmp-timeline-chart", "cmp-goodput-chart"):
        shot(page.locator(f"figure:has(#{chart})"), chart)
    # the CSV export answers
    csv = page.request.get(live_url + page.locator("#download-csv").get_attribute("href"))
    assert csv.ok and csv.text().startswith("section,key,label,unit,best_or_differs,1. 7B ")
    assert page.js_errors == []

    # the same page in dark mode
    dark = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="dark")
    try:
        dpage = dark.new_page()
        log_in(dpage, live_url, user_admin)
        dpage.goto(page.url)
        dpage.wait_for_selector("#cmp-cost-chart[data-rendered='true']", timeout=20_000)
        screenshot(dpage, "compare-three-dark")
    finally:
        dark.close()


def test_run_a_sweep_and_watch_progress_reach_100(page, live_url, user_admin, catalog, celery_worker, settings):
    from tierlab.scenarios.models import Scenario

    settings.TIERLAB_SWEEP_CHUNK_POINTS = 2
    # 32 sequences per step: micro batch x data-parallel GPUs must divide it
    base = Scenario.objects.create(owner=user_admin, name="7B ZeRO-3", spec=spec(**{"training.global_batch_size": 32}))
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/scenarios/{base.pk}/")
    page.click("#sweep-scenario")
    page.click("a[data-preset='nodes-x-micro-batch']")
    # the ready-made grid keeps the per-GPU batch (4 sequences): every point is one the engine accepts
    assert page.input_value("#id_axis1_path") == "cluster.num_nodes"
    assert page.input_value("#id_axis1_values") == "1, 2, 4"
    assert page.input_value("#id_axis2_values") == "1, 2, 4"
    assert page.input_value("#id_scenario") == str(base.pk)
    assert page.is_checked("#id_scale_global_batch")
    assert "keeping the base's per-GPU batch (32 sequences on 1 node): 32 on 1, 64 on 2, 128 on 4 nodes" \
        in page.locator("#preset-batch").inner_text()
    assert page.locator("#preset-fitted").count() == 0
    screenshot(page, "sweep-form")
    # keep the global batch fixed instead: the points it does not divide are shown as invalid
    page.uncheck("#id_scale_global_batch")
    # Record every value the progress bar shows, from the moment the page loads.
    page.add_init_script("""
        window.__progress = [];
        new MutationObserver(() => {
          const bar = document.getElementById('sweep-progress');
          if (bar && window.__progress[window.__progress.length - 1] !== bar.value) window.__progress.push(bar.value);
        }).observe(document, {subtree: true, attributes: true, childList: true});
    """)
    sweep_gets = []
    page.on("request", lambda r: sweep_gets.append(r.url) if re.search(r"/api/v1/sweeps/\d+/", r.url) else None)
    page.click("#submit-sweep")
    page.wait_for_url(re.compile(r".*/sweeps/\d+/$"))
    page.wait_for_selector("#sweep-root[data-status='succeeded']", timeout=60_000)
    assert page.locator("#sweep-progress").evaluate("el => el.value") == 100
    # every poll reads the light form (no points); the points only when needed, once at the end
    assert all(u.endswith("/?points=none") or re.search(r"/sweeps/\d+/$", u) for u in sweep_gets), sweep_gets
    light = [u for u in sweep_gets if u.endswith("?points=none")]
    assert light and len(sweep_gets) - len(light) <= len(light) + 1, sweep_gets
    # the 3 invalid points failed: counted apart, with the first one's error naming the field
    text = page.locator("#sweep-progress-text").inner_text()
    assert text.startswith("6 of 9 points evaluated (67%) in 5 jobs; 3 failed: training.global_batch_size: "), text
    seen = page.evaluate("window.__progress")
    assert seen[-1] == 100 and seen == sorted(seen), seen
    assert page.locator("#sweep-cancel").is_hidden()

    page.wait_for_selector("#sweep-heatmap[data-rendered='true']")
    page.wait_for_selector("#sweep-pareto[data-rendered='true']")
    heat = page.locator("#sweep-heatmap svg").inner_html()
    assert "Number of nodes (cluster.num_nodes)" in heat and "✗ invalid" in heat
    assert "Step time (s)" in page.locator("#sweep-pareto svg").inner_html()
    rows = page.locator("#sweep-table tbody tr")
    assert rows.count() == 9
    assert page.locator("#sweep-table tr[data-pareto='true']").count() >= 1
    assert page.locator("#sweep-table tr[data-class='invalid']").count() == 3    # 2 x 4, 4 x 2, 4 x 4
    # the metric is kept in the URL, so the view can be bookmarked
    page.select_option("#sweep-metric", "usd_per_million_tokens")
    assert page.url.endswith("?metric=usd_per_million_tokens")
    page.wait_for_selector("#sweep-heatmap[data-rendered='true']")
    screenshot(page, "sweep-done")
    shot(page.locator("#sweep-charts"), "sweep-charts")
    page.reload()
    page.wait_for_selector("#sweep-root[data-status='succeeded']")
    assert page.input_value("#sweep-metric") == "usd_per_million_tokens"
    # dark mode: the charts redraw in the dark theme
    page.emulate_media(color_scheme="dark")
    page.wait_for_selector("#sweep-heatmap[data-rendered='true']")
    shot(page.locator("#sweep-charts"), "sweep-charts-dark")
    assert page.js_errors == []


def test_open_a_share_link_logged_out_then_revoke_it(page, browser, live_url, user_admin, catalog, celery_worker):
    from tierlab.dashboard import comparisons

    ids = [s.pk for s in strategies(user_admin)]
    comparison = comparisons.create_comparison(user_admin, ids, "ZeRO-2 vs ZeRO-3 vs FSDP")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/compare/{comparison.pk}/")
    page.click("#share-create")
    page.wait_for_selector(".share-link[data-active='true'] input.share-url")
    url = page.input_value(".share-link[data-active='true'] input.share-url")
    assert re.fullmatch(rf"{re.escape(live_url)}/s/[A-Za-z0-9_-]{{43}}/", url), url
    page.click(".share-link[data-active='true'] button.copy-link")
    wait_until(page, "() => document.querySelector('.copy-status').textContent.length > 0")
    assert page.evaluate("navigator.clipboard.readText()") == url
    shot(page.locator("#share"), "share-panel")

    anonymous = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        viewer = anonymous.new_page()
        errors = []
        viewer.on("pageerror", lambda exc: errors.append(str(exc)))
        viewer.goto(url)
        assert "read-only" in viewer.locator("#shared-banner").inner_text()
        assert viewer.locator("#fork-login").is_visible()                  # not logged in
        viewer.wait_for_selector("#compare-root[data-ready='true']", timeout=60_000)
        assert viewer.locator("#compare-table thead th").count() == 4
        viewer.wait_for_selector("#cmp-memory-chart[data-rendered='true']")
        assert viewer.locator("#share").count() == 0                       # no owner controls
        screenshot(viewer, "shared-comparison-logged-out")
        assert errors == []

        page.click(".share-link[data-active='true'] button.revoke-link")
        page.wait_for_selector(".share-link[data-active='false']")
        viewer.reload()
        assert viewer.locator("#share-revoked").inner_text() == "This link was revoked"
        screenshot(viewer, "share-revoked")
    finally:
        anonymous.close()
    assert page.js_errors == []


def test_a_shared_sweep_page_polls_the_light_form(page, browser, live_url, user_admin, catalog, settings):
    """The share link's page polled its link's full answer (every point, ~7 MB at 10,000)
    on every poll; now it polls ?points=none as the owner's page does and reads the points
    once they changed, and at the end. No worker reads the sweep's queue: the page polls
    the queued sweep, then the test runs the chunks itself."""
    from tests.web.dashboard_helpers import run_chunks
    from tierlab.dashboard import sharing, sweeps
    from tierlab.scenarios.models import Scenario

    settings.TIERLAB_RUN_QUEUE = f"tierlab-test-{uuid.uuid4().hex[:8]}"   # no worker reads it
    base = Scenario.objects.create(owner=user_admin, name="7B", spec=spec(**{"training.global_batch_size": 32}))
    sweep = sweeps.create_sweep(user_admin, base.pk, [{"path": "cluster.num_nodes", "values": [1, 2]},
                                                      {"path": "training.micro_batch_size", "values": [1, 2, 4]}])
    link = sharing.create_share(user_admin, "sweep", sweep.pk)
    anonymous = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        viewer = anonymous.new_page()
        gets = []
        viewer.on("request", lambda r: gets.append(r.url) if "/api/v1/shared/" in r.url else None)
        viewer.goto(f"{live_url}/s/{link.token}/")
        wait_until(viewer, "() => Number(document.getElementById('sweep-root').dataset.polls) >= 3", timeout_s=30)
        run_chunks(sweep)
        viewer.wait_for_selector("#sweep-root[data-ready='true']", timeout=30_000)
        assert viewer.locator("#sweep-root").get_attribute("data-status") == "succeeded"
        light = [u for u in gets if u.endswith(f"/api/v1/shared/{link.token}/?points=none")]
        full = [u for u in gets if u.endswith(f"/api/v1/shared/{link.token}/")]
        assert len(light) >= 4 and len(light) + len(full) == len(gets), gets
        assert len(full) <= 3, gets           # the first draw, at most one while it ran, the end
        assert viewer.locator("#sweep-table tbody tr").count() == 6
        assert viewer.locator("#sweep-cancel").is_hidden()
    finally:
        anonymous.close()
