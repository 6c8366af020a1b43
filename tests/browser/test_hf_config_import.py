"""Importing a Hugging Face config.json in the scenario form, in a real browser: the pasted
Gemma 2 9B config.json gives the live estimate the preset's parameter count; a bad value is
shown naming the config key; the imported model is what the saved scenario holds."""

import json
import re
from pathlib import Path

import pytest

from tests.browser.conftest import log_in, screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
CONFIGS = Path(__file__).parents[1] / "data" / "hf_configs"


def config_text(slug: str, **change) -> str:
    return json.dumps({**json.loads((CONFIGS / f"{slug}.json").read_text())["config"], **change}, indent=2)


def test_a_pasted_config_json_is_the_presets_model(page, live_url, user_admin, catalog):
    from tierlab.scenarios.models import Scenario

    log_in(page, live_url, user_admin)
    page.wait_for_selector("#scenario-form-root[data-ready='true']")
    page.select_option("select[name='model.preset']", "gemma2-9b")
    page.select_option("select[name='cluster.node']", "dgx-h100")
    page.wait_for_selector("#live-estimate:has-text('Gemma-2-9B')")
    preset_text = page.locator("#live-estimate").inner_text()
    params = preset_text.split("Gemma-2-9B: ")[1].split(".")[0]      # "9.24 B params"

    page.click("#hf-config summary")
    page.fill("#f-hf-config", config_text("gemma2-9b", hidden_size="3584"))
    page.click("#hf-config-import")
    page.wait_for_selector("#hf-config-errors")
    assert page.locator("#hf-config-errors").inner_text().startswith("hidden_size: must be a whole number")

    page.fill("#f-hf-config", config_text("gemma2-9b"))
    page.click("#hf-config-import")
    page.wait_for_selector("#hf-config-summary")
    summary = page.locator("#hf-config-summary").inner_text()
    assert "Ignored (no model field):" in summary and "query_pre_attn_scalar" in summary
    assert "attn_logit_softcapping" in summary                  # the engine's note
    assert "sliding window 4096 (alternate layers)" in summary   # Gemma 2's layer pattern, mapped
    assert page.locator("select[name='model.preset']").input_value() == ""
    assert "imported config.json" in page.locator("select[name='model.preset'] option:checked").inner_text()
    page.wait_for_selector("#live-estimate:has-text('Gemma2ForCausalLM')")
    assert f"Gemma2ForCausalLM: {params}" in page.locator("#live-estimate").inner_text()
    screenshot(page, "hf-config-import")
    assert page.locator("input[name='name']").input_value().startswith("Gemma2ForCausalLM · ")

    page.fill("input[name='name']", "Gemma 2 9B from its config.json (browser test)")
    page.click("#submit-scenario")
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))      # saved, its run queued
    saved = Scenario.objects.get(name="Gemma 2 9B from its config.json (browser test)")
    assert saved.spec["model"]["norms_per_block"] == 4 and saved.spec["model"]["head_dim"] == 256
    assert saved.spec["model"]["sliding_window_layers"] == "alternate"
    assert page.js_errors == []


def test_a_pasted_deepseek_v3_config_is_the_presets_model(page, live_url, user_admin, catalog):
    """DeepSeek-V3's config.json: routed + shared experts, dense first blocks and latent
    attention come through, named in the summary, and the live estimate has the preset's
    parameter count (671 B, transformers' meta-device count)."""
    log_in(page, live_url, user_admin)
    page.wait_for_selector("#scenario-form-root[data-ready='true']")
    page.select_option("select[name='model.preset']", "deepseek-v3")
    page.select_option("select[name='cluster.node']", "dgx-h100")
    page.wait_for_selector("#live-estimate:has-text('DeepSeek-V3')")
    params = page.locator("#live-estimate").inner_text().split("DeepSeek-V3: ")[1].split(".")[0]
    page.click("#hf-config summary")
    page.fill("#f-hf-config", config_text("deepseek-v3"))
    page.click("#hf-config-import")
    page.wait_for_selector("#hf-config-summary")
    summary = page.locator("#hf-config-summary").inner_text()
    assert "256 experts + 1 shared, first 3 dense, latent attention (kv rank 512)" in summary
    assert "num_nextn_predict_layers" in summary                 # the MTP module's note
    page.wait_for_selector("#live-estimate:has-text('DeepseekV3ForCausalLM')")
    assert f"DeepseekV3ForCausalLM: {params}" in page.locator("#live-estimate").inner_text()
    assert page.js_errors == []
