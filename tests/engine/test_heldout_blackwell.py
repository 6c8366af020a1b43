"""The engine held against Megatron-Bridge's Blackwell FP8 measurements, which it was not
tuned on (tests/data/reference/megatron_bridge_blackwell_2025.json): Llama 3 8B on 8 B200
(one DGX-B200) and 8 GB200 (two trays of an NVL72), FP8 current scaling and MXFP8, the 25.11
NeMo container. No engine figure was set from these rows; the misses are strict xfails that
name the current figures, so a fix that reaches them shows up as a failure to promote."""

import pytest

from simulation import evaluate_dict
from tests.engine.test_heldout import mean_abs_error
from tests.refdata import cases

NAME = "megatron_bridge_blackwell_2025"


def predicted() -> dict:
    return {c["id"]: evaluate_dict(c["scenario"], detail=False)["step"]["time_s"] for c in cases(NAME)}


def test_conversion_by_hand():
    # DGX-B200, FP8-CS: 30,624 tokens/s/GPU x 8 GPUs; a step is GBS 128 x 8,192 tokens:
    # 1,048,576 / 244,992 = 4.2800 s
    (c,) = cases(NAME, "mbridge_b200_8b_fp8cs")
    assert c["expected_step_time_s"] == pytest.approx(128 * 8192 / (30624 * 8))
    assert c["expected_step_time_s"] == pytest.approx(4.2800, abs=1e-4)
    sc = c["scenario"]["training"]
    assert sc["global_batch_size"] * sc["seq_len"] == 128 * 8192 and sc["micro_batch_size"] == 2


def test_the_two_columns_agree_on_the_model():
    # Model TFLOP/s / tokens/s is the FLOPs Megatron counts per token of this model and
    # sequence: the same for every row (1576e12 / 30624 = 51.46 GFLOP), a check of the
    # transcription of both columns
    per_token = [c["measured"]["model_tflops_per_gpu"] * 1e12 / c["measured"]["value"] for c in cases(NAME)]
    assert len(per_token) == 4
    for f in per_token:
        assert f == pytest.approx(51.46e9, rel=0.003)


@pytest.mark.xfail(strict=True, reason=(
    "every row 19-25 % too fast (B200 FP8-CS -19 %, MXFP8 -22 %; GB200 -19 %, -25 %) with the "
    "sustained B200 figure (1485 TFLOP/s, GB200's share of MAMF; it was MAMF's 1745: -19 to -32 %) "
    "and the FlashAttention rate the A100's fraction scaled (1470 TFLOP/s forward, within "
    "FlashAttention-4's published 1613 and cuDNN 9.13 at 1.3x below it); the same direction as "
    "the held-out H100 rows (test_heldout.py). Cause not identified"))
def test_within_8_percent_on_average():
    assert mean_abs_error(NAME) < 0.08


@pytest.mark.xfail(strict=True, reason=(
    "measured MXFP8 is 3.7 % (B200) and 5.8 % (GB200) slower than FP8 current scaling; the engine "
    "has it 1.0 % faster (its block casts find their scales in the kernel, one read fewer than "
    "current scaling's amax pass, though two layouts where current scaling on Blackwell casts one, "
    "simulation/fp8.py), and the MXFP8 GEMM at the FP8 rate: what makes "
    "MXFP8 slower on Blackwell (scale-factor layout, the block-scaled GEMM's rate) is not modelled"))
def test_mxfp8_slower_than_current_scaling_as_measured():
    p = predicted()
    m = {c["id"]: c["expected_step_time_s"] for c in cases(NAME)}
    for sys_ in ("b200", "gb200"):
        cs, mx = f"mbridge_{sys_}_8b_fp8cs", f"mbridge_{sys_}_8b_mxfp8"
        assert m[mx] > m[cs]
        assert p[mx] > p[cs]
