"""The run page's step, timeline, offload-bandwidth and checkpoint sections for a ZeRO-3
run on two nodes and a ZeRO-Infinity run on one, computed by a real Celery worker, in the
light and the dark colour scheme. Screenshots land in test-results/browser/
(``TIERLAB_SCREENSHOT_DIR``) for a person to look at."""

import re

import pytest

from tests.browser.conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHARTS = ("memory-chart", "step-chart", "timeline-chart", "bandwidth-chart", "goodput-chart")

RUNS = {
    "zero3-2node": {"nodes": "2", "strategy": "zero3", "prefetch_depth": None,
                    "lanes": ["GPU stream", "NIC (node↔node)"]},
    "zero-infinity": {"nodes": "1", "strategy": "zero_infinity", "prefetch_depth": "2",
                      "lanes": ["GPU stream", "NVMe read"]},
}


def run_from_form(page, live_url, user, name: str, nodes: str, strategy: str, prefetch_depth=None) -> None:
    log_in(page, live_url, user)
    page.wait_for_selector("#scenario-form-root[data-ready='true']")
    page.select_option("select[name='model.preset']", "llama2-70b")
    page.select_option("select[name='cluster.node']", "dgx-h100")
    page.fill("input[name='cluster.num_nodes']", nodes)
    page.select_option("select[name='strategy.kind']", strategy)
    page.fill("input[name='training.global_batch_size']", "32")
    page.select_option("select[name='training.recompute']", "full")
    page.select_option("select[name='checkpoint.method']", "async")
    if prefetch_depth is not None:
        page.click("#advanced-settings > summary")
        page.fill("input[name='strategy.prefetch_depth']", prefetch_depth)
        page.wait_for_selector("#live-estimate[data-fits]")
        screenshot(page, "scenario-form-advanced")
    page.fill("input[name='name']", name)
    page.click("#submit-scenario")
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))
    page.wait_for_selector("#run-progress-panel[data-status='succeeded'], #run-progress-panel[data-status='failed']",
                           timeout=60_000)
    assert page.locator("#run-progress-panel").get_attribute("data-status") == "succeeded", \
        page.locator("#run-problem").inner_text()


def wait_for_charts(page) -> None:
    for chart in CHARTS:
        page.wait_for_selector(f"#{chart}[data-rendered='true']", timeout=20_000)


@pytest.mark.parametrize("key", list(RUNS))
def test_run_page_charts_the_step_timeline_bandwidth_and_checkpoint(page, live_url, user_admin, catalog,
                                                                     celery_worker, key):
    spec = RUNS[key]
    run_from_form(page, live_url, user_admin, f"Llama-2-70B {key} (charts)", spec["nodes"], spec["strategy"],
                  spec["prefetch_depth"])
    wait_for_charts(page)

    # what the form set reached the engine (the report carries the resolved scenario)
    run = page.evaluate("fetch(document.querySelector('#run-result-root').dataset.runUrl).then(r => r.json())")
    resolved = run["result"]["scenario"]
    assert resolved["checkpoint"]["method"] == "async"
    assert resolved["strategy"]["prefetch_depth"] == int(spec["prefetch_depth"] or 1)

    # step: headline with units, the verdict in words, the breakdown and the links per GPU
    assert re.search(r"\d s$", page.locator("#step-time strong").inner_text())
    assert page.locator("#step-mfu strong").inner_text().endswith("%")
    assert page.locator("#step-verdict").inner_text().startswith("Bottleneck:")
    breakdown = page.locator("#step-breakdown-table").inner_text()
    assert "Compute" in breakdown and " s" in breakdown and "100.0%" in breakdown
    links = page.locator("#links-table").inner_text()
    assert "GB/s" in links and "%" in links

    # the timeline's lanes, the tiers on the bandwidth chart, the goodput chart's markers
    timeline = page.locator("#timeline-chart").inner_text()
    for lane in spec["lanes"]:
        assert lane in timeline, timeline
    assert "Time since the micro-batch started (s)" in timeline
    bandwidth = page.locator("#bandwidth-chart").inner_text()
    assert "GB/s per GPU" in bandwidth and "target 90%" in bandwidth
    goodput = page.locator("#goodput-chart").inner_text()
    assert "Daly's optimum" in goodput and "Chosen interval" in goodput and " h" in goodput

    checkpoint = page.locator("#checkpoint-table").inner_text()
    for text in ("GB", "GiB", "Best interval (Daly 2006)", "Best interval (Young 1974)", "MTBF", "Goodput", "%"):
        assert text in checkpoint, text
    assert page.locator("#checkpoint-waste li").count() == 3
    screenshot(page, f"run-{key}-light")

    # the same page in the dark scheme: the charts redraw and stay rendered
    page.emulate_media(color_scheme="dark")
    page.wait_for_timeout(300)
    wait_for_charts(page)
    screenshot(page, f"run-{key}-dark")
    assert page.js_errors == []
