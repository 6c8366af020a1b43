"""The engine held against Megatron-Bridge's DGX-H100 FP8 measurements, which it was not
tuned on (tests/data/reference/megatron_bridge_h100_fp8_2025.json): Llama 3 8B on 8 GPUs
(Megatron-FSDP), Llama 3 70B on 64 (TP 4, PP 8, VP 5) and Llama 3.1 405B on 1024 (TP 8, PP 8,
CP 2, VP 8), the 25.09, 25.11 and 26.02 NeMo containers. No engine figure was set from these
rows; a miss is a strict xfail that names the current figures, so a fix that reaches it shows
up as a failure to promote."""

import pytest

from tests.engine.test_heldout import errors, mean_abs_error
from tests.refdata import cases

NAME = "megatron_bridge_h100_fp8_2025"


def test_conversion_by_hand():
    # 25.11, Llama 3 70B, FP8-CS: 1,602 tokens/s/GPU x 64 GPUs; a step is GBS 128 x 8,192
    # tokens: 1,048,576 / 102,528 = 10.2272 s
    (c,) = cases(NAME, "mbridge_h100_70b_fp8cs_2511")
    assert c["expected_step_time_s"] == pytest.approx(128 * 8192 / (1602 * 64))
    assert c["expected_step_time_s"] == pytest.approx(10.2272, abs=1e-4)
    sc = c["scenario"]
    t = sc["training"]
    assert t["global_batch_size"] * t["seq_len"] == 128 * 8192 and t["micro_batch_size"] == 1
    # 64 GPUs = TP 4 x PP 8 x DP 2 on 8 DGX-H100 nodes; GA 64 = 128 / (1 x 2) as the table says
    assert sc["cluster"] == {"node": "dgx-h100", "num_nodes": 8}
    assert (t["tensor_parallel"], t["pipeline_parallel"], t["interleave_stages"]) == (4, 8, 5)
    assert t["global_batch_size"] // (t["micro_batch_size"] * 64 // (4 * 8)) == c["inputs"]["parallelism"]["ga"]


def test_every_row_converted_the_same_way():
    for c in cases(NAME):
        p = c["inputs"]["parallelism"]
        t = c["scenario"]["training"]
        assert c["expected_step_time_s"] == pytest.approx(p["gbs"] * p["seq_len"] / (c["measured"]["value"] * p["gpus"]))
        assert (t["global_batch_size"], t["micro_batch_size"], t["seq_len"]) == (p["gbs"], p["mbs"], p["seq_len"])
        assert c["scenario"]["cluster"]["num_nodes"] * 8 == p["gpus"]
    assert len(cases(NAME)) == 8


@pytest.mark.parametrize("model,gflop", [("8b", 51.49), ("70b", 449.0), ("405b", 2524.0)])
def test_the_two_columns_agree_on_the_model(model, gflop):
    # Model TFLOP/s / tokens/s is the FLOPs Megatron counts per token of the model at seq 8192:
    # one figure for every row of a model (725e12 / 14079 = 51.49 GFLOP for the 8B), whichever
    # release, GPU count or batch, a check of the transcription of both columns
    rows = cases(NAME, f"mbridge_h100_{model}_")
    assert len(rows) == {"8b": 2, "70b": 3, "405b": 3}[model]
    for c in rows:
        assert c["measured"]["model_tflops_per_gpu"] * 1e12 / c["measured"]["value"] == pytest.approx(gflop * 1e9, rel=0.003)


def test_within_8_percent_on_average():
    # mean |error| 7.9 % over the 8 rows (8B +3.3 / +8.3 %, 70B +2.1..+2.2 %, 405B -13.5..-16.5 %)
    assert mean_abs_error(NAME) < 0.08


@pytest.mark.xfail(strict=True, reason=(
    "the three 405B rows (1024 GPUs, TP 8, PP 8, CP 2, VP 8) are 13.5-16.5 % too fast (25.09 -13.5 %, "
    "25.11 -16.5 %, 26.02 -14.7 %) while the 70B rows on 64 GPUs are within +2.2 % and the 8B rows "
    "+3.3 / +8.3 %. What the cases leave out there is too small or unknown to account for it (the "
    "vocabulary padded to 129024 at TP 8, 0.6 % more logits; the 128-node network's topology, the "
    "preset's rail-optimised fabric assumed). Cause not identified"))
def test_every_row_within_10_percent():
    assert all(abs(e) < 0.10 for e in errors(NAME).values())

