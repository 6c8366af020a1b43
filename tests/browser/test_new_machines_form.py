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


def test_the_form_picks_a_gb200_nvl72_rack_and_its_nvlink_domain(page, live_url, user_admin, catalog, settings):
    """GB200 NVL72 (issue #15): the tray template says it sits in a 72-GPU NVLink domain, the
    domain input shows the template's 72 when blank, and a rack of 18 trays estimates live;
    a domain that splits a tray is named in the error."""
    import re
    import uuid

    from tierlab.scenarios.models import Run, Scenario

    settings.TIERLAB_RUN_QUEUE = f"tierlab-test-{uuid.uuid4().hex[:8]}"   # no worker: the input is enough
    log_in(page, live_url, user_admin)
    page.wait_for_selector("#scenario-form-root[data-ready='true']")
    label = page.locator("select[name='cluster.node'] option[value='gb200-nvl72']").inner_text()
    assert "4 GPUs, 72-GPU NVLink domain, tiers: DDR" in label
    page.select_option("select[name='model.preset']", "llama2-70b")
    page.select_option("select[name='cluster.node']", "gb200-nvl72")
    page.fill("input[name='cluster.num_nodes']", "18")
    page.fill("input[name='cluster.gpus_per_node']", "4")
    page.fill("input[name='training.micro_batch_size']", "1")
    page.fill("input[name='training.global_batch_size']", "9")
    page.fill("input[name='training.seq_len']", "4096")
    page.fill("input[name='training.tensor_parallel']", "8")
    page.select_option("select[name='training.recompute']", "full")
    page.click("#advanced-settings summary")
    assert page.get_attribute("input[name='cluster.nvlink_domain_gpus']", "placeholder") == "72 (the node template's)"
    page.wait_for_selector("#live-estimate[data-fits='true']")
    page.fill("input[name='cluster.nvlink_domain_gpus']", "70")
    page.wait_for_selector("#live-estimate[data-fits='error']")
    assert "NVLink domain (GPUs): must be a multiple" in page.locator("#live-estimate").inner_text()
    page.fill("input[name='cluster.nvlink_domain_gpus']", "72")
    page.fill("input[name='name']", "70B on one GB200 NVL72 rack")
    page.wait_for_selector("#live-estimate[data-fits='true']")
    page.click("#submit-scenario")
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))
    spec = Scenario.objects.get(name="70B on one GB200 NVL72 rack").spec
    assert spec["cluster"]["node"] == "gb200-nvl72" and spec["cluster"]["nvlink_domain_gpus"] == 72
    assert Run.objects.get(scenario__name="70B on one GB200 NVL72 rack").input["cluster"]["num_nodes"] == 18
    assert page.js_errors == []
