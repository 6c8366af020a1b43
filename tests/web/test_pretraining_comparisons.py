"""Issue #15's comparisons through the API: Llama-3.1-405B pretraining on 2,048 H100s in
BF16 and FP8 with context parallelism 1 and 2, and DeepSeek-V3 with expert parallelism 8
and 16: memory per pipeline stage and step time side by side (the browser shows the same
table: tests/browser/test_pretraining_comparison.py)."""

import pytest

from tests.web.dashboard_helpers import run_queued_runs

pytestmark = pytest.mark.django_db
SCENARIOS = "/api/v1/scenarios/"
COMPARISONS = "/api/v1/comparisons/"


def llama405b(fp8: bool, cp: int) -> dict:
    # 256 DGX H100 = 2,048 GPUs; TP 8 x CP x PP 16 x DP; Llama 3's 7 / 8 x 14 / 7 split of
    # the 126 layers (Dubey et al. 2024 Sec. 3.3.2); 256 sequences of 8,192 tokens a step
    training = {"micro_batch_size": 1, "global_batch_size": 256, "seq_len": 8192,
                "tensor_parallel": 8, "pipeline_parallel": 16, "context_parallel": cp,
                "first_pipeline_layers": 7, "last_pipeline_layers": 7,
                "sequence_parallel": True, "flash_attention": True, "framework": "megatron",
                "recompute": "selective"}
    if fp8:
        training["fp8"] = {"recipe": "delayed"}
    return {"model": {"preset": "llama3.1-405b"}, "cluster": {"node": "dgx-h100", "num_nodes": 256},
            "training": training, "strategy": {"kind": "megatron_dist_opt"}}


def deepseek_v3(ep: int) -> dict:
    # 2,048 H800 (DeepSeek-V3 report Sec. 3.1): PP 16 DualPipe, ZeRO-1, FP8 blockwise;
    # full recomputation (see tests/engine/test_published_layouts.py for the layout as run)
    return {"model": {"preset": "deepseek-v3"}, "cluster": {"node": "hgx-h800", "num_nodes": 256},
            "training": {"micro_batch_size": 1, "global_batch_size": 15360, "seq_len": 4096,
                         "pipeline_parallel": 16, "expert_parallel": ep, "flash_attention": True,
                         "framework": "megatron", "recompute": "full",
                         "pipeline_layers": [4] * 13 + [3] * 3, "pipeline_schedule": "dualpipe",
                         "fp8": {"recipe": "blockwise"}},
            "strategy": {"kind": "zero1"}}


def compare(client, named: dict) -> dict:
    ids = []
    for name, scenario in named.items():
        r = client.post(SCENARIOS, {"name": name, "scenario": scenario}, format="json")
        assert r.status_code == 201, r.json()
        ids.append(r.json()["id"])
    r = client.post(COMPARISONS, {"scenarios": ids}, format="json")
    assert r.status_code == 201, r.json()
    run_queued_runs()
    body = client.get(f"{COMPARISONS}{r.json()['id']}/").json()
    assert body["status"] == "succeeded", body
    return body


def rows(body, section):
    return {row["key"]: row for row in body["table"][section]}


def test_llama_405b_bf16_vs_fp8_and_cp1_vs_cp2_side_by_side(owner_api):
    body = compare(owner_api, {"BF16 CP1": llama405b(False, 1), "BF16 CP2": llama405b(False, 2),
                               "FP8 CP1": llama405b(True, 1), "FP8 CP2": llama405b(True, 2)})
    inputs, outputs = rows(body, "inputs"), rows(body, "outputs")
    # a resolved scenario leaves CP 1 (the default) out: the table shows the default;
    # the BF16 columns have no fp8 section, so their FP8 recipe stays blank
    assert inputs["training.context_parallel"]["values"] == [1, 2, 1, 2]
    assert inputs["training.fp8.recipe"]["differs"] is True
    assert inputs["training.fp8.recipe"]["values"][0] is None
    first = outputs["memory.per_stage.0.hbm_total_bytes"]["values"]
    last = outputs["memory.per_stage.-1.hbm_total_bytes"]["values"]
    act = outputs["memory.per_gpu.hbm.activations_bytes"]["values"]
    step = outputs["step.time_s"]["values"]
    assert outputs["memory.per_stage.0.hbm_total_bytes"]["unit"] == "bytes"
    assert all(v > 0 for v in first + last + step)
    # CP 2 holds half of each sequence: fewer activation bytes per GPU, in BF16 and in FP8
    assert act[1] < act[0] and act[3] < act[2]
    # FP8 GEMMs run at the FP8 matmul rate: a shorter step at either CP degree; its weight
    # copies and 1-byte saved inputs change the memory
    assert step[2] < step[0] and step[3] < step[1]
    assert first[2] != first[0]
    # the CP 2 rows expose part of the K/V exchange, the CP 1 rows none
    kv = outputs["step.context_parallel.exposed_per_step_s"]["values"]
    assert kv[0] is None and kv[1] is not None
    # each report lists every stage: 7 / 8 x 14 / 7 layers, grouped
    report = body["items"][0]["report"]
    assert [r["layers"] for r in report["memory"]["per_stage"]][0] == 7
    assert report["memory"]["per_stage"][-1]["layers"] == 7


def test_deepseek_v3_ep8_vs_ep16_side_by_side(owner_api):
    body = compare(owner_api, {"DeepSeek-V3 EP8": deepseek_v3(8), "DeepSeek-V3 EP16": deepseek_v3(16)})
    inputs, outputs = rows(body, "inputs"), rows(body, "outputs")
    assert inputs["training.expert_parallel"]["values"] == [8, 16]
    hbm = outputs["memory.per_gpu.hbm.total_bytes"]["values"]
    assert hbm[1] < hbm[0]                     # EP 16 holds half the routed experts a GPU
    assert outputs["memory.per_gpu.hbm.total_bytes"]["best"] == [False, True] or hbm[1] == min(hbm)
    a2a = outputs["step.expert_parallel.alltoall_exposed_s"]["values"]
    # DualPipe hides the all-to-alls behind the paired chunk's compute: exposed >= 0
    assert all(v is not None and v >= 0 for v in a2a)
    assert all(v > 0 for v in outputs["step.time_s"]["values"])
    assert all(v is not None for v in outputs["memory.per_stage.0.hbm_total_bytes"]["values"])
