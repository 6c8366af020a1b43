"""What only a browser shows about the dashboard's readability: the comparison table fits
a 1400 px window for up to 4 scenarios (a scroll inside its region for more), a heatmap of
40 columns draws no cell labels over each other or over its row labels (and the sweep's
points table fits the page), and "Compare
checked" with one box ticked keeps the tick. Screenshots land in test-results/browser/
(``TIERLAB_SCREENSHOT_DIR``) for a person to look at."""

import re

import pytest

from tests.browser.conftest import SCREENSHOTS, log_in, screenshot
from tests.web.dashboard_helpers import run_queued_runs, strategies

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _table_fit(page) -> dict:
    return page.evaluate("""() => {
      const table = document.getElementById('compare-table');
      const region = table.parentElement;
      const right = region.getBoundingClientRect().right;
      return {table: table.scrollWidth, region: region.clientWidth, scrolls: region.scrollWidth > region.clientWidth,
              page: document.documentElement.scrollWidth, window: window.innerWidth,
              cut: [...table.querySelectorAll('thead th')].filter(th => th.getBoundingClientRect().right > right + 1)
                .map(th => th.textContent)};
    }""")


def test_the_comparison_table_fits_a_1400_px_window_for_up_to_4_scenarios(page, live_url, user_admin, catalog):
    from tierlab.dashboard import comparisons
    from tierlab.scenarios.examples import examples
    from tierlab.scenarios.models import Scenario

    # the builder's examples: long names ("Llama-2-70B · 1×DGX H100 · ZeRO-Infinity (NVMe)"), wide values
    made = [Scenario.objects.create(owner=user_admin, name=e["name"], spec=e["scenario"]) for e in examples()[:4]]
    # the same four again under long names: 8 columns (the runs' results are reused)
    again = [Scenario.objects.create(owner=user_admin, name=f"{e['name']} · a second look with a longer name",
                                     spec=e["scenario"]) for e in examples()[:4]]
    four = comparisons.create_comparison(user_admin, [s.pk for s in made])
    eight = comparisons.create_comparison(user_admin, [s.pk for s in made + again])
    run_queued_runs()
    page.set_viewport_size({"width": 1400, "height": 900})
    log_in(page, live_url, user_admin)

    for comparison, n in ((four, 4), (eight, 8)):
        page.goto(f"{live_url}/compare/{comparison.pk}/")
        page.wait_for_selector("#compare-root[data-ready='true']", timeout=60_000)
        fit = _table_fit(page)
        assert page.locator("#compare-table thead th").count() == n + 1
        assert fit["page"] <= fit["window"], fit                 # the page never scrolls sideways
        if n <= 4:
            assert not fit["scrolls"] and fit["cut"] == [], fit   # every column in view
        else:
            assert fit["scrolls"], fit                           # the table scrolls inside its region
            assert page.locator("#compare-table").locator("..").get_attribute("tabindex") == "0"
        page.locator("#compare-table-section").screenshot(path=str(SCREENSHOTS / f"compare-table-{n}.png"))
    # a value wraps between its pieces, never between a number and its unit
    cell = page.locator("#compare-table tr[data-key='memory.per_gpu.hbm.total_bytes'] td").first
    assert [p.strip() for p in cell.locator(".piece").all_inner_texts()][-1].endswith("GiB)")
    assert page.js_errors == []


def finished_sweep(owner, name, axes, **per_point):
    """A succeeded sweep over ``axes``, every point done and fitting, with the headline
    numbers of a 70B step; ``per_point`` maps a result key to a function of the index."""
    from tierlab.dashboard.models import Sweep, SweepChunk
    from tierlab.dashboard.sweeps import grid_values

    values = grid_values(axes)
    sweep = Sweep.objects.create(owner=owner, name=name, base_spec={}, axes=axes,
                                 total_points=len(values), status="succeeded", engine_version="test")
    results = [{"index": i, "values": v, "status": "done", "valid": True, "fits": True,
                "step_time_s": 8.9, "usd_per_million_tokens": 1.5, "usd_per_hour": 78.66,
                "hbm_total_bytes": 80.5e9, "tokens_per_s": 14602, "mfu": 0.412, "goodput": 0.99,
                **{k: f(i) for k, f in per_point.items()}} for i, v in enumerate(values)]
    SweepChunk.objects.create(sweep=sweep, start=0, stop=len(values), status="done", done=len(values),
                              results=results)
    return sweep


def test_a_heatmap_of_40_columns_keeps_its_numbers_in_the_tooltip(page, live_url, user_admin, catalog):
    from tierlab.catalog.labels import CHOICE_NAMES

    targets = ["local_nvme", "remote_dram", "cxl_pool", "parallel_fs", "object_store", "gds_nvme"]
    axes = [{"path": "checkpoint.interval_s", "values": [600 * (i + 1) for i in range(40)]},
            {"path": "checkpoint.target", "values": targets}]
    # goodput 99.820–99.859%, 0.001 points apart: what two decimals cannot tell apart
    sweep = finished_sweep(user_admin, "40 intervals × 6 targets", axes,
                           goodput=lambda i: 0.9982 + 0.00001 * (i % 40))
    page.set_viewport_size({"width": 1400, "height": 900})
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/sweeps/{sweep.pk}/?metric=goodput")
    page.wait_for_selector("#sweep-heatmap[data-rendered='true']")
    texts = page.locator("#sweep-heatmap svg text").all_text_contents()
    names = [CHOICE_NAMES["checkpoint.target"][t] for t in targets]     # rows read in words
    assert all(t in texts for t in names), texts                        # every row label, whole
    # no cell label: the only percentages are the colour scale's ends, told apart
    assert sorted(t for t in texts if "%" in t) == ["(worse) 99.820%", "99.859% (better)"], texts
    page.locator("#sweep-heatmap").screenshot(path=str(SCREENSHOTS / "sweep-heatmap-40-columns.png"))
    # the points table fits the page: every column in view without scrolling sideways
    page.wait_for_selector("#sweep-table")
    fit = page.evaluate("""() => {
      const table = document.getElementById('sweep-table'), region = table.parentElement;
      return {table: table.scrollWidth, region: region.clientWidth, page: document.documentElement.scrollWidth,
              window: window.innerWidth};
    }""")
    assert fit["table"] <= fit["region"] and fit["page"] <= fit["window"], fit
    # and no heading breaks inside a word ("Numbe / r of nodes"): every word fits its column
    broken = page.evaluate("""() => [...document.querySelectorAll('#sweep-table thead th')].flatMap((th) => {
      const cs = getComputedStyle(th), ctx = document.createElement('canvas').getContext('2d');
      ctx.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
      const room = th.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
      return th.innerText.split(/\\s+/).filter((w) => ctx.measureText(w).width > room + 0.5);
    })""")
    assert broken == [], broken
    # the cell's value, at the precision that tells it from its neighbours, is in its tooltip
    box = page.locator("#sweep-heatmap").bounding_box()
    page.mouse.move(box["x"] + box["width"] - 40, box["y"] + 60)
    page.wait_for_selector("text=Checkpoint goodput: 99.8")
    # narrower: the chart is built again for its width, still without cell labels
    page.set_viewport_size({"width": 800, "height": 900})
    page.wait_for_timeout(300)
    page.wait_for_selector("#sweep-heatmap[data-rendered='true']")
    page.locator("#sweep-heatmap").screenshot(path=str(SCREENSHOTS / "sweep-heatmap-40-columns-narrow.png"))
    assert page.js_errors == []


def test_compare_checked_with_one_box_keeps_the_tick(page, live_url, user_admin, catalog):
    a, b = strategies(user_admin, ("zero2", "zero3"))
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/scenarios/")
    page.check(f"#compare-{a.pk}")
    page.click("#compare-button")
    problem = page.locator("#compare-problem")
    problem.wait_for(state="visible")
    assert "Tick at least one more scenario" in problem.inner_text()
    assert page.is_checked(f"#compare-{a.pk}") and not page.is_checked(f"#compare-{b.pk}")
    assert page.url == f"{live_url}/scenarios/"
    screenshot(page, "scenarios-list-compare-one")
    # a second tick: the message goes, and the comparison is made
    page.check(f"#compare-{b.pk}")
    assert problem.is_hidden()

    # the server refused a form sent before the script ran: it hands the ticks back
    page.goto(f"{live_url}/scenarios/?compare={b.pk}")
    assert page.is_checked(f"#compare-{b.pk}") and not page.is_checked(f"#compare-{a.pk}")
    assert page.url == f"{live_url}/scenarios/"
    page.check(f"#compare-{a.pk}")
    page.click("#compare-button")
    page.wait_for_url(re.compile(r".*/compare/\d+/$"))
    assert page.js_errors == []


def test_a_heatmap_on_a_phone_names_every_column_and_both_ends_of_its_scale(page, live_url, user_admin, catalog):
    axes = [{"path": "strategy.offload_optimizer", "values": ["none", "cpu", "nvme"]},
            {"path": "strategy.prefetch_depth", "values": [1, 2]}]
    sweep = finished_sweep(user_admin, "3 x 2 on a phone", axes,
                           fits=lambda i: i != 2, step_time_s=lambda i: 4.27 + i)
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/sweeps/{sweep.pk}/")
    page.wait_for_selector("#sweep-heatmap[data-rendered='true']")
    texts = page.locator("#sweep-heatmap svg text").all_text_contents()
    assert "CPU DDR" in texts and "NVMe" in texts, texts                  # no column left out
    assert any(t.startswith("none (GPU H") for t in texts), texts         # cut short, not dropped
    assert "(better) 4.27 s" in texts and "9.27 s (worse)" in texts, texts
    # the scale's ends lie inside the chart
    box = page.locator("#sweep-heatmap").bounding_box()
    ends = page.locator("#sweep-heatmap svg text", has_text="s (worse)").bounding_box()
    assert ends["x"] + ends["width"] <= box["x"] + box["width"] + 1
    page.locator("#sweep-heatmap").screenshot(path=str(SCREENSHOTS / "sweep-heatmap-phone.png"))
    assert page.js_errors == []
