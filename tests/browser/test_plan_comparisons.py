"""The comparisons issues #14 and #15 ask for, in a real browser against a live server and
a real Celery worker: Llama-3.1-405B pretraining in BF16 and FP8 with context parallelism
1 and 2 on 2,048 H100s, DeepSeek-V3 with expert parallelism 8 and 16, and Llama-3.1-8B
fine-tuned in full, with LoRA and with QLoRA on one 24 GB card. The scenarios are the API
tests' (tests/web/test_pretraining_comparisons.py, test_finetune_comparisons.py)."""

import re

import pytest

from tests.browser.conftest import log_in, screenshot
from tests.web.test_finetune_comparisons import llama8b
from tests.web.test_pretraining_comparisons import deepseek_v3, llama405b

pytestmark = pytest.mark.django_db(transaction=True)

SIDE_BY_SIDE = ["memory.per_gpu.hbm.total_bytes", "memory.per_stage.0.hbm_total_bytes",
                "memory.per_stage.-1.hbm_total_bytes", "memory.per_gpu.hbm.activations_bytes",
                "step.time_s"]


def open_comparison(page, live_url, user, named: dict):
    from tierlab.dashboard import comparisons
    from tierlab.scenarios.models import Scenario

    ids = [Scenario.objects.create(owner=user, name=n, spec=s).pk for n, s in named.items()]
    comparison = comparisons.create_comparison(user, ids, " vs ".join(named))
    log_in(page, live_url, user)
    page.goto(f"{live_url}/compare/{comparison.pk}/")
    page.wait_for_selector("#compare-root[data-ready='true']", timeout=120_000)
    assert page.locator("#compare-status").get_attribute("data-status") == "succeeded"
    table = page.locator("#compare-table")
    assert table.locator("thead th").count() == 1 + len(named)
    return table


def cells(table, key):
    return [c.inner_text() for c in table.locator(f"tr[data-key='{key}'] td").all()]


def test_pretraining_comparisons_show_memory_per_stage_and_step_time(page, live_url, user_admin, catalog,
                                                                      celery_worker):
    table = open_comparison(page, live_url, user_admin, {
        "405B BF16 CP1": llama405b(False, 1), "405B BF16 CP2": llama405b(False, 2),
        "405B FP8 CP1": llama405b(True, 1), "405B FP8 CP2": llama405b(True, 2)})
    for key in SIDE_BY_SIDE:
        values = cells(table, key)
        assert len(values) == 4, key
        assert all(re.search(r"\d", v) for v in values), (key, values)
    assert all(" GB (" in v for v in cells(table, "memory.per_stage.0.hbm_total_bytes"))
    assert all(re.search(r"\d (ms|s)\b", v) for v in cells(table, "step.time_s"))
    assert table.locator("tr[data-key='training.fp8.recipe']").count() == 1
    assert table.locator("tr[data-key='training.context_parallel']").count() == 1
    screenshot(page, "compare-405b-bf16-fp8-cp")
    assert page.js_errors == []

    table = open_comparison(page, live_url, user_admin, {"DeepSeek-V3 EP8": deepseek_v3(8),
                                                         "DeepSeek-V3 EP16": deepseek_v3(16)})
    hbm = table.locator("tr[data-key='memory.per_gpu.hbm.total_bytes']")
    assert "★" in hbm.locator("td").nth(1).inner_text()            # EP 16: fewer experts a GPU
    assert all(re.search(r"\d", v) for v in cells(table, "step.expert_parallel.alltoall_exposed_s"))
    screenshot(page, "compare-deepseek-ep8-ep16")
    assert page.js_errors == []


def test_full_vs_lora_vs_qlora_on_a_24_gb_card_and_an_h100(page, live_url, user_admin, catalog, celery_worker):
    table = open_comparison(page, live_url, user_admin, {
        f"8B {m} {card}": llama8b(card, m) for card in ("RTX 4090", "H100") for m in ("full", "lora", "qlora")})
    for key in ("memory.per_gpu.hbm.params_bytes", "memory.per_gpu.hbm.optimizer_bytes",
                "memory.per_gpu.hbm.activations_bytes", "step.time_s"):
        assert len(cells(table, key)) == 6, key
    verdicts = [f.replace("★", "").strip() for f in cells(table, "fit_state")]
    # full fine-tuning fits neither card; LoRA and QLoRA fit both (a tight one reads "Tight")
    fits = [not v.startswith("Does not fit") for v in verdicts]
    assert fits == [False, True, True, False, True, True], verdicts
    assert all(v.startswith(("Fits:", "Tight:", "Does not fit")) for v in verdicts), verdicts
    assert table.locator("tr[data-key='training.lora.base_dtype']").count() == 1
    screenshot(page, "compare-8b-full-lora-qlora")
    assert page.js_errors == []
