"""A sweep at the planner's scale (10,000 points, 100 x 100) in a real browser, made through
the API and run by a real Celery worker: its page stays readable. Before, the points table
listed every point (1.48 M characters of text) and the heatmap grew 60 px a row (~6,000 px),
so a full-page screenshot timed out."""

import base64

import pytest

from tests.browser.conftest import SCREENSHOTS, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_10000_point_sweep_page_has_a_bounded_table_and_a_heatmap_that_fits(
        page, live_url, user_admin, catalog, celery_worker, wait_for):
    from rest_framework.test import APIClient

    from tierlab.dashboard.models import Sweep
    from tierlab.scenarios.examples import examples
    from tierlab.scenarios.models import Scenario

    # Llama-2-7B on one H100 with ZeRO-Offload: ~2-4 ms a point, so ~30 s of engine time
    spec = {**examples()[2]["scenario"], "checkpoint": {"interval_s": 600}}
    base = Scenario.objects.create(owner=user_admin, name="7B offload", spec=spec)
    api = APIClient()
    api.force_authenticate(user_admin)
    axes = [{"path": "checkpoint.interval_s", "values": [600 * (i + 1) for i in range(100)]},
            {"path": "training.global_batch_size", "values": [8 * (i + 1) for i in range(100)]}]
    r = api.post("/api/v1/sweeps/", {"scenario": base.pk, "axes": axes}, format="json")
    assert r.status_code in (201, 202), r.content
    sweep = Sweep.objects.get(pk=r.json()["id"])
    assert sweep.total_points == 10_000
    wait_for(lambda: Sweep.objects.get(pk=sweep.pk).status in ("succeeded", "failed"), timeout=400, interval=1)
    assert Sweep.objects.get(pk=sweep.pk).status == "succeeded"

    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/sweeps/{sweep.pk}/")
    page.wait_for_selector("#sweep-root[data-status='succeeded']", timeout=60_000)
    page.wait_for_selector("#sweep-heatmap[data-rendered='true']", timeout=60_000)
    page.wait_for_selector("#sweep-table")
    size = page.evaluate("""() => ({text: document.body.innerText.length,
      nodes: document.getElementsByTagName('*').length,
      rows: document.querySelectorAll('#sweep-table tbody tr').length,
      pareto: document.querySelectorAll('#sweep-table tbody tr[data-pareto="true"]').length,
      shown: Number(document.getElementById('sweep-table').dataset.shown),
      total: Number(document.getElementById('sweep-table').dataset.total),
      heat: document.getElementById('sweep-heatmap').getBoundingClientRect().height,
      canvases: document.querySelectorAll('#sweep-heatmap canvas, #sweep-pareto canvas').length})""")
    # the first 100 points and at most 100 more of the Pareto front (here, points of equal
    # cost and step time all on it: the checkpoint interval changes neither), not 10,000 rows
    assert size["total"] == 10_000 and size["rows"] == size["shown"], size
    assert 100 <= size["rows"] <= 200, size
    assert size["text"] < 60_000, size            # was 1.48 M characters
    assert size["nodes"] < 5_000, size            # a node a cell in SVG would be 10,000 more
    assert size["canvases"] >= 2, size            # both charts on ECharts' canvas renderer
    assert size["heat"] < 900, size               # was ~6,000 px: 170 + 100 rows x 60 px
    # every point is a link away: the CSV has a row for each
    link = page.locator("#sweep-all-points a")
    assert link.get_attribute("href") == f"/api/v1/sweeps/{sweep.pk}/points.csv"
    csv_text = page.evaluate("(u) => fetch(u).then((r) => r.text())", link.get_attribute("href"))
    assert len(csv_text.strip().split("\n")) == 1 + 10_000
    assert f"{10_000 - size['rows']:,} more points are not listed" in page.locator("#sweep-all-points").inner_text()
    assert "The first 100 of 10,000 points" in page.locator("#sweep-table caption").inner_text()
    # the whole page fits a screenshot in good time (it timed out before)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "sweep-10000-points.png"), full_page=True, timeout=30_000)
    # and the canvas heatmap is drawn whole: its cells' colour along a line across the grid
    # (zrender paints a heatmap's layer in 15 ms slices: a few frames for 10,000 cells)
    blank = page.context.new_page()             # about:blank: no page CSP on a data: image
    coloured = 0.0
    for _ in range(20):
        png = page.locator("#sweep-heatmap").screenshot()
        coloured = blank.evaluate("""async (b64) => {
          const img = new Image();
          img.src = 'data:image/png;base64,' + b64;
          await img.decode();
          const c = document.createElement('canvas');
          c.width = img.naturalWidth; c.height = img.naturalHeight;
          const ctx = c.getContext('2d');
          ctx.drawImage(img, 0, 0);
          // at 40 % of the chart's height, from 10 % to 95 % of its width: inside the grid
          const x0 = Math.round(c.width * 0.10), x1 = Math.round(c.width * 0.95);
          const d = ctx.getImageData(x0, Math.round(c.height * 0.4), x1 - x0, 1).data;
          let n = 0;
          for (let i = 0; i < d.length; i += 4) if (d[i] < 235 || d[i + 1] < 235 || d[i + 2] < 235) n++;
          return n / (d.length / 4);
        }""", base64.b64encode(png).decode())
        if coloured > 0.7:
            break
        page.wait_for_timeout(250)
    blank.close()
    assert coloured > 0.7, coloured        # the cells' colour (white 1 px borders between), not the page's
    assert page.js_errors == []
