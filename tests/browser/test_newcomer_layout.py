"""What a newcomer trial found at 1280 px: the new-scenario form's default answer overflowed HBM
(eager attention), the plan page scrolled sideways (the Bottleneck column), and the nav wrapped
"admin / Log out" to a second line on some pages only. Screenshots land in test-results/browser/
for a person to look at."""

import re
import uuid

import pytest

from tests.browser.conftest import log_in, screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH = 1280


def test_the_default_scenario_uses_flash_attention_and_fits(page, live_url, user_admin, catalog):
    # Llama-2-7B with ZeRO-3 on one DGX H100 at 4k tokens: eager attention's fp32 s x s scores
    # need ~161 GiB per GPU (81 GiB over the 80 GB HBM); with SDPA / FlashAttention ~45 GiB
    log_in(page, live_url, user_admin)
    page.wait_for_selector("#scenario-form-root[data-ready='true']")
    assert page.locator("input[name='training.flash_attention']").is_checked()
    page.wait_for_selector("#live-estimate[data-fits='true'], #live-estimate[data-fits='false']", timeout=30_000)
    screenshot(page, "newcomer-default-estimate")
    assert page.locator("#live-estimate").get_attribute("data-fits") == "true", \
        page.locator("#live-estimate").inner_text()


def _finished_plan(page, live_url, user, settings):
    """A plan of Llama-2-70B on 1..4 DGX H100, its chunks run here (no worker)."""
    from tierlab.dashboard import plans
    from tierlab.dashboard.models import Plan, PlanChunk

    settings.TIERLAB_RUN_QUEUE = f"tierlab-test-{uuid.uuid4().hex[:8]}"   # no worker reads it
    log_in(page, live_url, user)
    page.goto(f"{live_url}/plans/new/")
    page.select_option("#id_model", "llama2-70b")
    page.select_option("#id_node", "dgx-h100")
    page.fill("#id_min_nodes", "1")
    page.fill("#id_max_nodes", "4")
    page.click("#submit-plan")
    page.wait_for_url(re.compile(r".*/plans/\d+/$"))
    plan = Plan.objects.get()
    for chunk in PlanChunk.objects.filter(plan=plan).order_by("index"):
        plans.execute_chunk(chunk.pk)
    return plan


def test_the_plan_page_fits_1280_px(page, live_url, user_admin, catalog, settings):
    page.set_viewport_size({"width": WIDTH, "height": 900})
    plan = _finished_plan(page, live_url, user_admin, settings)
    page.goto(f"{live_url}/plans/{plan.pk}/")
    wait_until(page, "document.getElementById('plan-root')?.dataset.ready === 'true'", timeout_s=30)
    assert page.locator("#plan-table tbody tr").count() == 10
    fit = page.evaluate("""() => {
      const cell = document.querySelector('#plan-table td.bottleneck');
      const line = parseFloat(getComputedStyle(cell).lineHeight);
      return {page: document.documentElement.scrollWidth, window: window.innerWidth,
              lines: Math.round(cell.clientHeight / line)};
    }""")
    screenshot(page, "newcomer-plan-1280")
    assert fit["page"] <= fit["window"], fit
    assert fit["lines"] <= 4, fit          # the bottleneck note reads as a sentence, not a column of words


def test_the_nav_is_one_line_on_every_page(page, live_url, user_admin, catalog):
    page.set_viewport_size({"width": WIDTH, "height": 900})
    log_in(page, live_url, user_admin)
    heights = {}
    for path in ("/", "/scenarios/", "/compare/", "/plans/new/", "/profiles/", "/catalog/"):
        page.goto(f"{live_url}{path}")
        page.wait_for_load_state("load")
        heights[path] = page.evaluate("""() => {
          const nav = document.querySelector('nav.site-nav');
          const first = nav.children[0].getBoundingClientRect();
          const wrapped = [...nav.children].some((el) => el.getBoundingClientRect().top >= first.bottom);
          return {height: Math.round(nav.getBoundingClientRect().height), wrapped, tops: [...nav.children].map((el) => Math.round(el.getBoundingClientRect().top))};
        }""")
    screenshot(page, "newcomer-nav-catalog")
    assert len({h["height"] for h in heights.values()}) == 1, heights
    assert not any(h["wrapped"] for h in heights.values()), heights
