"""The live estimate of a scenario that is more work than a request may do (a 413): the
form says to save and run it, and marks no input, since none is wrong; when only the
simulated step is too much, it shows memory and says the step time needs a run."""

import re

import pytest

from tests.browser.conftest import log_in, screenshot
from tests.browser.test_scenario_flow import fill_llama70b_on_two_dgx

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_too_much_work_for_a_live_estimate_says_to_save_and_run(page, live_url, user_admin, catalog, settings):
    settings.ESTIMATE_MAX_WORK_UNITS = 1            # every estimate is over it
    log_in(page, live_url, user_admin)
    page.wait_for_selector("#scenario-form-root[data-ready='true']")
    fill_llama70b_on_two_dgx(page, "32")
    page.wait_for_selector("#live-estimate[data-fits='too-much']")
    text = page.locator("#live-estimate").inner_text()
    assert "Save the scenario and run it" in text and "ESTIMATE_MAX_WORK_UNITS" in text
    assert page.locator("[aria-invalid='true']").count() == 0
    assert page.js_errors == []


def test_the_live_estimate_shows_step_time_and_checkpoints_within_the_bound(page, live_url, user_admin, catalog,
                                                                            settings):
    log_in(page, live_url, user_admin)
    page.wait_for_selector("#scenario-form-root[data-ready='true']")
    fill_llama70b_on_two_dgx(page, "32")
    page.wait_for_selector("#live-estimate[data-fits='true'] #estimate-step")
    step = page.locator("#estimate-step").inner_text()
    assert re.fullmatch(r"Step [\d.]+ s \(.*measured runs of this kind.*: [\d.]+ s–[\d.]+ s.*, .+ on .+\) · [\d,]+ tokens/s · MFU [\d.]+% · "
                        r"checkpoint every .+ \([\d.]+ .?s stall\), goodput [\d.]+%( · outside what was validated: .+)?",
                        step), step
    screenshot(page, "live-estimate-step")
    # memory-only costs 300 work units here, with the step about 2,100: only memory fits under 1,000
    settings.ESTIMATE_MAX_WORK_UNITS = 1000
    page.fill("input[name='training.global_batch_size']", "64")
    page.wait_for_selector("#estimate-step:has-text('too much to simulate')")
    assert "HBM per GPU" in page.locator("#estimate-summary").inner_text()     # memory, as before
    assert page.locator("[aria-invalid='true']").count() == 0
    assert page.js_errors == []
