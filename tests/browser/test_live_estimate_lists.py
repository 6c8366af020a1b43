"""The live estimate follows a list input as it is typed (newcomer check: clearing "Layers per
pipeline stage" after "1, 2, x" sent no new estimate, so the old error stayed until the input
lost focus)."""

import pytest

from tests.browser.conftest import log_in, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_clearing_a_bad_list_clears_its_error_without_leaving_the_input(page, live_url, user_admin, catalog):
    log_in(page, live_url, user_admin)
    page.wait_for_selector("#scenario-form-root[data-ready='true']")
    page.select_option("select[name='model.preset']", "llama2-7b")
    page.select_option("select[name='cluster.node']", "dgx-h100")
    page.select_option("select[name='strategy.kind']", "zero1")     # ZeRO-3 takes no pipeline
    page.fill("input[name='training.pipeline_parallel']", "2")
    wait_until(page, r"() => /HBM per GPU/.test(document.querySelector('#estimate-summary')?.textContent ?? '')",
               timeout_s=30)
    box = page.locator("input[name='training.pipeline_layers']")
    box.focus()
    page.keyboard.type("1, 2, x")          # typed: input events only, the focus stays
    wait_until(page, "() => document.querySelector('#live-estimate')?.dataset.fits === 'error'", timeout_s=30)
    assert "pipeline stage" in page.locator("#live-estimate").inner_text().lower()
    for _ in range(len("1, 2, x")):
        page.keyboard.press("Backspace")
    assert page.evaluate("document.activeElement.name") == "training.pipeline_layers"
    wait_until(page, r"() => /HBM per GPU/.test(document.querySelector('#estimate-summary')?.textContent ?? '')",
               timeout_s=30)
    assert page.locator("#live-estimate").get_attribute("data-fits") in ("true", "false")
