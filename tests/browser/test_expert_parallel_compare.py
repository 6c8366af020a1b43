"""Issue #15: a comparison of expert-parallel degrees in the browser. Mixtral 8x7B on 4 DGX
H100 with Megatron's distributed optimizer, EP 4 against EP 8: the table marks the degree
as the input that differs and shows HBM per GPU and the step time side by side (EP 4 holds
2 of 8 experts a layer, EP 8 one), and the run page says how the experts are laid out.
A third column left at EP 1 (the default, which a resolved scenario leaves out) shows 1,
not a blank; the MoE run page has no recommendation-model "PS vs all-to-all" section."""

import re

from tests.browser.conftest import log_in
from tests.web.dashboard_helpers import run_queued_runs
from tierlab.dashboard import comparisons
from tierlab.scenarios.models import Run, Scenario


def mixtral(ep: int) -> dict:
    return {"model": {"preset": "mixtral-8x7b"}, "cluster": {"node": "dgx-h100", "num_nodes": 4},
            "training": {"micro_batch_size": 1, "global_batch_size": 64, "seq_len": 4096,
                         "recompute": "full", "flash_attention": True, "expert_parallel": ep},
            "strategy": {"kind": "megatron_dist_opt"}}


def test_ep4_against_ep8_side_by_side(page, live_url, user_admin, catalog):
    four = Scenario.objects.create(owner=user_admin, name="Mixtral EP 4", spec=mixtral(4))
    eight = Scenario.objects.create(owner=user_admin, name="Mixtral EP 8", spec=mixtral(8))
    one = Scenario.objects.create(owner=user_admin, name="Mixtral EP 1", spec=mixtral(1))
    comparison = comparisons.create_comparison(user_admin, [four.pk, eight.pk, one.pk], "EP 4 vs 8 vs 1")
    run_queued_runs()
    log_in(page, live_url, user_admin)
    page.goto(f"{live_url}/compare/{comparison.pk}/")
    page.wait_for_selector("#compare-root[data-ready='true']", timeout=60_000)
    table = page.locator("#compare-table")
    row = table.locator("tr[data-key='training.expert_parallel']")
    assert row.get_attribute("data-differs") == "true"
    assert row.locator("td").all_inner_texts() == ["4", "8", "1"]
    hbm = table.locator("tr[data-key='memory.per_gpu.hbm.total_bytes'] td").all_inner_texts()
    assert len(hbm) == 3 and all(" GiB)" in v for v in hbm)
    steps = table.locator("tr[data-key='step.time_s'] td").all_inner_texts()
    assert len(steps) == 3 and all(re.search(r"\d (ms|s)\b", v) for v in steps[:2])

    run = Run.objects.filter(scenario=eight).latest("pk")
    page.goto(f"{live_url}/runs/{run.pk}/")
    page.wait_for_selector("text=EP 8: 1 of 8 experts per GPU", timeout=60_000)
    assert run.result.get("ps")                  # the engine's expert-PS comparison is there,
    assert page.locator("#ps").count() == 0      # but not the recsys section
    assert "PS vs all-to-all" not in page.locator("body").inner_text()
    assert page.js_errors == []
