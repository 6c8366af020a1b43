"""The scenario form offers the machines of issues #14 and #15 (its node select fills from
the catalog API) and estimates a fine-tune on one RTX 4090 workstation live."""

import pytest

from tests.browser.conftest import log_in
from tests.engine.test_presets_machines import NEW_NODES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_form_offers_the_new_machines_and_estimates_on_a_4090(page, live_url, user_admin, catalog):
    log_in(page, live_url, user_admin)
    page.wait_for_selector("#scenario-form-root[data-ready='true']")
    for slug in NEW_NODES:
        assert page.locator(f"select[name='cluster.node'] option[value='{slug}']").count() == 1, slug
    label = page.locator("select[name='cluster.node'] option[value='rtx4090-workstation']").inner_text()
    assert label == "Workstation, 1x RTX 4090 — 1 GPU, tiers: DDR, NVMe"
    page.select_option("select[name='model.preset']", "llama3.2-1b")
    page.select_option("select[name='cluster.node']", "rtx4090-workstation")
    page.fill("input[name='cluster.num_nodes']", "1")
    page.fill("input[name='cluster.gpus_per_node']", "1")
    page.fill("input[name='training.micro_batch_size']", "1")
    page.fill("input[name='training.global_batch_size']", "8")
    page.fill("input[name='training.seq_len']", "1024")
    page.select_option("select[name='training.recompute']", "full")
    page.wait_for_selector("#live-estimate[data-fits='true']")
    assert page.js_errors == []
