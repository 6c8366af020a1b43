"""The planner in a real browser against a live server and a real Celery worker: a newcomer
picks Llama-2-70B on up to 4 DGX H100 nodes and gets a ranked answer, with the reasons,
within a minute; saves the best one as a scenario."""

import re
import time

import pytest

from tests.browser.conftest import log_in, screenshot

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
    assert "2160 of 2160 candidates (100%)" in page.locator("#plan-progress-text").inner_text()
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
