"""Uneven pipeline stages through the form (issue #15): Megatron's first/last stage counts,
the live estimate, and the run page's table of every stage with the verdict's marked."""

import re

import pytest

from tests.browser.conftest import SCREENSHOTS, log_in, screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_uneven_stages_from_the_form_to_the_run_page(page, live_url, user_admin, catalog, celery_worker):
    log_in(page, live_url, user_admin)
    page.wait_for_selector("#scenario-form-root[data-ready='true']")
    page.select_option("select[name='model.preset']", "llama2-70b")
    page.select_option("select[name='cluster.node']", "dgx-h100")
    page.fill("input[name='cluster.num_nodes']", "4")
    page.select_option("select[name='strategy.kind']", "zero1")
    page.fill("input[name='training.global_batch_size']", "64")
    page.fill("input[name='training.tensor_parallel']", "8")
    page.fill("input[name='training.pipeline_parallel']", "4")
    page.select_option("select[name='training.recompute']", "selective")
    page.fill("input[name='training.first_pipeline_layers']", "18")
    page.fill("input[name='training.last_pipeline_layers']", "18")
    page.wait_for_selector("#live-estimate[data-fits]")
    wait_until(page, r"() => /HBM per GPU/.test(document.querySelector('#estimate-summary')?.textContent ?? '')",
               timeout_s=30)

    page.fill("input[name='name']", "Llama-2-70B PP4 18/22/22/18")
    page.click("#submit-scenario")
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))
    page.wait_for_selector("#run-progress-panel[data-status='succeeded'], #run-progress-panel[data-status='failed']",
                           timeout=60_000)
    assert page.locator("#run-progress-panel").get_attribute("data-status") == "succeeded"
    page.wait_for_selector("#stages-table")
    rows = page.locator("#stages-table tbody tr")
    texts = [rows.nth(i).inner_text() for i in range(rows.count())]
    # every rank: 18 layers x 4 micro-batches in flight, 22 x 3 (the worst), 22 x 2, 18 x 1
    assert [t.split("\t")[:4] for t in texts] == [
        ["0", "first", "18", "4"], ["1 (worst)", "middle", "22", "3"], ["2", "middle", "22", "2"],
        ["3", "last", "18", "1"]], texts
    caption = page.locator("#stages-table caption").inner_text()
    assert "stage 1 (middle)" in caption, caption
    line = page.locator("#step-pipeline").inner_text()
    assert line.startswith("4 pipeline stages of 18, 22 ×2, 18 layers, 1F1B"), line
    screenshot(page, "run-pipeline-stages")
    page.locator("#stages-table").screenshot(path=str(SCREENSHOTS / "run-pipeline-stages-table.png"))
