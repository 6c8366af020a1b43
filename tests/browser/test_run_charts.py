"""The run page's step, timeline, offload-bandwidth and checkpoint sections for a ZeRO-3
run on two nodes and a ZeRO-Infinity run on one, computed by a real Celery worker, in the
light and the dark colour scheme; and a zoomed timeline that keeps its window when the
colour scheme changes. Screenshots land in test-results/browser/
(``TIERLAB_SCREENSHOT_DIR``) for a person to look at."""

import re

import pytest

from tests.browser.conftest import log_in, screenshot, wait_until

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
    # (ZeRO-Infinity's 70B step, its reads and writes sharing the drives, runs past a minute)
    assert re.search(r"\d (s|min)$", page.locator("#step-time strong").inner_text())
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


def finished_run(owner, name: str, spec: dict):
    """A succeeded run of a new scenario, evaluated here (no worker needed)."""
    import simulation
    from django.utils import timezone

    from tierlab.scenarios import services
    from tierlab.scenarios.models import Run

    scenario = services.create_scenario(owner, name, spec)
    resolved = services.resolve(spec)
    now = timezone.now()
    return Run.objects.create(scenario=scenario, status=Run.Status.SUCCEEDED, progress=1.0, input=resolved,
                              input_hash=services.input_hash(resolved, simulation.ENGINE_VERSION),
                              result=services.evaluate_resolved(resolved), engine_version=simulation.ENGINE_VERSION,
                              started_at=now, finished_at=now)


# The timeline's time-axis labels ("0.25 s"), left to right (SVG text has no innerText).
TIME_TICKS_JS = """() => [...document.querySelectorAll('#timeline-chart svg text')]
    .map(t => t.textContent.trim()).filter(t => /^[\\d.,]+ s$/.test(t))"""


def time_ticks(page) -> list[str]:
    return page.evaluate(TIME_TICKS_JS)


def test_the_timeline_keeps_its_zoom_when_the_colour_scheme_changes(page, live_url, user_admin, catalog):
    run = finished_run(user_admin, "Llama-2-70B ZeRO-3 (timeline zoom)", {
        "model": {"preset": "llama2-70b"}, "cluster": {"node": "dgx-h100", "num_nodes": 2},
        "training": {"micro_batch_size": 1, "global_batch_size": 32, "seq_len": 4096, "recompute": "full"},
        "strategy": {"kind": "zero3"}})
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/runs/{run.pk}/")
    page.wait_for_selector("#timeline-chart[data-rendered='true']", timeout=20_000)
    whole = time_ticks(page)
    assert len(whole) >= 3, whole

    # zoom in with the mouse wheel over the middle of the plot
    page.locator("#timeline-chart").scroll_into_view_if_needed()
    box = page.locator("#timeline-chart").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    for _ in range(6):
        page.mouse.wheel(0, -400)
        page.wait_for_timeout(60)
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] - 40)  # off the chart: no slider labels
    wait_until(page, f"whole => {{ const ticks = ({TIME_TICKS_JS})(); "
               "return ticks.length >= 2 && ticks.join('|') !== whole.join('|'); }", arg=whole)
    page.wait_for_timeout(300)
    zoomed = time_ticks(page)
    assert zoomed != whole and float(zoomed[-1][:-2].replace(",", "")) < float(whole[-1][:-2].replace(",", "")), \
        (whole, zoomed)

    # the dark scheme redraws the chart from scratch: the same window, not the whole micro-batch
    page.emulate_media(color_scheme="dark")
    page.wait_for_timeout(300)
    page.wait_for_selector("#timeline-chart[data-rendered='true']")
    assert time_ticks(page) == zoomed
    page.emulate_media(color_scheme="light")
    page.wait_for_timeout(300)
    page.wait_for_selector("#timeline-chart[data-rendered='true']")
    assert time_ticks(page) == zoomed
    screenshot(page, "run-timeline-zoom-kept")
    assert page.js_errors == []


def test_a_huge_step_reads_in_years_on_the_page_and_its_charts(page, live_url, user_admin, catalog):
    """A newcomer's step of 640,663,255 s read "640,663,255.316 s", its axis "2,000,000,000 s"
    and its timeline caption "1,423.7 h" over an axis in seconds. A real run's report with every
    time scaled to that step: 640,663,255.316 s / (365.25 x 86,400 s) = 20.3 years."""
    run = finished_run(user_admin, "Llama-2-70B ZeRO-3 (huge step)", {
        "model": {"preset": "llama2-70b"}, "cluster": {"node": "dgx-h100", "num_nodes": 2},
        "training": {"micro_batch_size": 1, "global_batch_size": 32, "seq_len": 4096, "recompute": "full"},
        "strategy": {"kind": "zero3"}})
    report = run.result
    step = report["step"]
    k = 640663255.316 / step["time_s"]
    step["time_s"] *= k
    step["breakdown_s"] = {key: v * k for key, v in step["breakdown_s"].items()}
    step["time_band_s"] = [v * k for v in step.get("time_band_s") or []] or None
    for key in ("micro_batch_s", "last_micro_batch_s"):
        if isinstance(step.get(key), (int, float)):
            step[key] *= k
    for task in report["timeline"]["tasks"]:
        task["start_s"] *= k
        task["end_s"] *= k
    report["timeline"]["makespan_s"] *= k
    run.save(update_fields=["stored_result"])       # Run.result reads stored_result

    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/runs/{run.pk}/")
    page.wait_for_selector("#step-chart[data-rendered='true']", timeout=20_000)
    page.wait_for_selector("#timeline-chart[data-rendered='true']", timeout=20_000)
    assert "20.3 years" in page.locator("#step-time").inner_text()
    assert "640,663,255" not in page.locator("#step").inner_text()
    step_svg = page.locator("#step-chart svg").inner_html()
    assert "Time per step (years)" in step_svg and "years" in step_svg
    assert not re.search(r"\d{1,3}(,\d{3}){2,} s", step_svg), "an axis tick in nine digits of seconds"
    caption = page.locator("#timeline figcaption").inner_text()
    unit = re.search(r"[\d.,]+ (years|days|h) in all", caption).group(1)
    assert f"Time since the micro-batch started ({unit})" in page.locator("#timeline-chart svg").inner_html()
    screenshot(page, "run-huge-step")
    assert page.js_errors == []
