"""ZeRO-3 at a fixed global batch against tensor + pipeline parallelism (Narayanan et al.
2021, Table 2: tests/data/reference/narayanan_2021_table2.json), and FSDP's near-linear
weak scaling (Zhao et al. 2023, Fig. 7b: zhao_2023_fsdp.json)."""

import copy

import pytest

from simulation import evaluate_dict
from tests.refdata import cases

T2 = {c["id"]: c for c in cases("narayanan_2021_table2")}


def per_gpu_tflops(case_id):
    """The model's TFLOP/s per GPU in the paper's convention (Eq. 3 FLOPs over the step)."""
    c = T2[case_id]
    r = evaluate_dict(c["scenario"], detail=False)
    return c["measured"]["tflops_per_gpu"] * c["expected_step_time_s"] / r["step"]["time_s"], r


def measured(case_id):
    return T2[case_id]["measured"]["tflops_per_gpu"]


@pytest.mark.parametrize("model, gpus", [("530B", (640, 1120, 2240)), ("175B", (384, 768, 1536))])
def test_zero3_per_gpu_throughput_falls_as_gpus_double(model, gpus):
    # fixed global batch: each doubling halves the tokens per GPU, not the bytes each GPU
    # gathers and reduces (the whole model, 3 x 2 B/param a step) nor the ring latency
    ids = [f"nar21_t2_zero3_{model}_{n}" for n in gpus]
    got = [per_gpu_tflops(i)[0] for i in ids]
    meas = [measured(i) for i in ids]
    assert meas[0] > meas[1] > meas[2]
    assert got[0] > got[1] > got[2], got
    # 530B: 152 -> 134 -> 102 TFLOP/s in the model (measured 138 -> 98 -> 48): each tensor
    # is over stage3_max_live_parameters, so nothing is prefetched. 175B falls only a
    # little in the model (171.4 -> 171.2 -> 164; measured 144 -> 88 -> 44): an open miss.
    if model == "530B":
        assert got[1] < 0.95 * got[0] and got[2] < 0.95 * got[1]


@pytest.mark.parametrize("gpus", [1120, 2240])
def test_530b_tensor_pipeline_ranks_ahead_of_zero3(gpus):
    zero3, r = per_gpu_tflops(f"nar21_t2_zero3_530B_{gpus}")
    ptdp, _ = per_gpu_tflops(f"nar21_t2_ptdp_530B_{gpus}")
    assert measured(f"nar21_t2_ptdp_530B_{gpus}") > measured(f"nar21_t2_zero3_530B_{gpus}")
    assert ptdp > zero3
    # and ZeRO-3's communication is reported, not hidden (issue 13: "well under 1 %")
    step = r["step"]
    assert step["breakdown_s"]["exposed_comm"] > 0.15 * step["time_s"]      # 22 % and 40 %


@pytest.mark.xfail(strict=True, reason="open: the model overlaps DeepSpeed's per-tensor all-gathers "
                   "behind 175B's large GEMMs up to 768 GPUs and still puts ZeRO-3 (164 TFLOP/s) ahead of "
                   "PTD-P (137) at 1536 GPUs, where the measurement has 44 vs 141")
def test_175b_on_1536_gpus_tensor_pipeline_ranks_ahead_of_zero3():
    assert per_gpu_tflops("nar21_t2_ptdp_175B_1536")[0] > per_gpu_tflops("nar21_t2_zero3_175B_1536")[0]


@pytest.mark.parametrize("case_id", [i for i in T2 if "_ptdp_" in i])
def test_ptdp_rows_within_12_percent(case_id):
    # tensor 8 + pipeline 12 / 35: 175B within 3 %, 530B 9-11 % slow (compute efficiency,
    # issue 13 item 4, not the collectives)
    got, _ = per_gpu_tflops(case_id)
    assert got == pytest.approx(measured(case_id), rel=0.12)


def test_fsdp_175b_scales_near_linearly_at_a_fixed_per_gpu_batch():
    # Zhao et al. 2023 Fig. 7b: GPT-175B, batch 1 per GPU, 128 -> 512 A100s, per-GPU TFLOPS
    # about flat. FSDP: one flat unit a block, next unit prefetched; 2 Tb/s a node.
    (fsdp,) = cases("zhao_2023_fsdp")
    sc = copy.deepcopy(T2["nar21_t2_zero3_175B_384"]["scenario"])
    sc["strategy"] = {"kind": "fsdp_full_shard"}
    sc["cluster"]["nic_bytes_per_s"] = 250e9
    rate = {}
    for n in fsdp["inputs"]["gpus"]:
        sc["cluster"]["num_nodes"] = n // 8
        sc["training"].update(micro_batch_size=1, global_batch_size=n, precision="bf16")
        r = evaluate_dict(sc, detail=False)
        rate[n] = r["throughput"]["tokens_per_s"] / n
    assert rate[512] == pytest.approx(rate[128], rel=0.05)
    assert rate[256] == pytest.approx(rate[128], rel=0.05)
