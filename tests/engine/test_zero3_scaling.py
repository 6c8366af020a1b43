"""ZeRO-3 at a fixed global batch against tensor + pipeline parallelism (Narayanan et al.
2021, Table 2: tests/data/reference/narayanan_2021_table2.json), and FSDP's near-linear
weak scaling (Zhao et al. 2023, Fig. 7b: zhao_2023_fsdp.json)."""

import copy

import pytest

from simulation import ScenarioError, evaluate_dict
from simulation import collectives as nccl
from simulation.params import count_params
from simulation.scenario import Scenario
from simulation.step import (deepspeed_regather_fraction, list_collective_copy_s,
                             param_tensors_per_layer, zero3_granularity)
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
    # DeepSpeed v0.3-v0.5 (the file's caveat): every all-gather and reduce-scatter in
    # series with compute, and the list collectives' world-size copy_ launches
    # and DeepSpeed's Python loop of a view a rank before each gather
    # (list_collective_copy_s). 175B: 150 -> 102 -> 49 TFLOP/s (measured 144 -> 88 -> 44);
    # 530B: 167 -> 125 -> 69 (measured 138 -> 98 -> 48). Still short of the measured fall
    # at 1120-2240 GPUs.
    assert got[1] < 0.9 * got[0] and got[2] < 0.9 * got[1]


@pytest.mark.parametrize("gpus", [1120, 2240])
def test_530b_tensor_pipeline_ranks_ahead_of_zero3(gpus):
    zero3, r = per_gpu_tflops(f"nar21_t2_zero3_530B_{gpus}")
    ptdp, _ = per_gpu_tflops(f"nar21_t2_ptdp_530B_{gpus}")
    assert measured(f"nar21_t2_ptdp_530B_{gpus}") > measured(f"nar21_t2_zero3_530B_{gpus}")
    assert ptdp > zero3
    # and ZeRO-3's communication is reported, not hidden (issue 13: "well under 1 %")
    step = r["step"]
    assert step["breakdown_s"]["exposed_comm"] > 0.15 * step["time_s"]      # 22 % and 40 %


@pytest.mark.parametrize("gpus", [768, 1536])
def test_175b_tensor_pipeline_ranks_ahead_of_zero3(gpus):
    # measured 149 vs 88 and 141 vs 44; the model 145 vs 111 and 137 vs 66
    zero3 = per_gpu_tflops(f"nar21_t2_zero3_175B_{gpus}")[0]
    ptdp = per_gpu_tflops(f"nar21_t2_ptdp_175B_{gpus}")[0]
    assert measured(f"nar21_t2_ptdp_175B_{gpus}") > measured(f"nar21_t2_zero3_175B_{gpus}")
    assert ptdp > 1.2 * zero3


def test_the_same_runs_with_current_deepspeed_overlap_their_gathers():
    # what changed since: with prefetch and no synchronize, 175B's GEMMs hide the
    # gathers up to 768 GPUs (no measurement of current DeepSpeed at this scale to hold
    # it against)
    sc = copy.deepcopy(T2["nar21_t2_zero3_175B_768"]["scenario"])
    sc["strategy"]["deepspeed_release"] = "current"
    step = evaluate_dict(sc, detail=False)["step"]
    assert step["breakdown_s"]["exposed_comm"] < 0.01 * step["time_s"]


def _gpt3(release="v0.3-v0.5", recompute="full"):
    sc = copy.deepcopy(T2["nar21_t2_zero3_175B_1536"]["scenario"])
    sc["strategy"]["deepspeed_release"] = release
    sc["training"]["recompute"] = recompute
    return sc


def test_deepspeed_v03_fetches_each_weight_unprefetched_and_reduces_each_tensor():
    # GPT-3 block (fused QKV, biases, LayerNorm): 4 weights; 4 + 4 biases + 2 x 2 norm
    # tensors = 12 parameter tensors, each reduce-scattered on its own
    # (partition_parameters.py _reduce_scatter_gradients at v0.3.14); nothing prefetched
    # (stage3.py get_params_to_prefetch: "Tracing failed" for every sub-module)
    sc = Scenario.from_dict(_gpt3())
    pc = count_params(sc.model)
    assert param_tensors_per_layer(sc) == 12
    assert zero3_granularity(sc, pc, 1) == (4, 0, 12)
    # current DeepSpeed: a tensor ahead (5e7 bucket), ceil(1.81e9 / 5e8) = 4 bucket flushes
    cur = Scenario.from_dict(_gpt3("current"))
    assert zero3_granularity(cur, pc, 1) == (4, 1, 4)
    # Llama-style block: q, k, v, o, gate, up, down, two RMSNorm weights = 9
    llama = _gpt3()
    llama["model"].update(gated_mlp=True, linear_bias=False, norm="rmsnorm")
    assert param_tensors_per_layer(Scenario.from_dict(llama)) == 9


def test_deepspeed_v03_gathers_every_tensor_again_for_backward():
    # _keep_for_later fails the same trace check: with full recomputation the backward
    # gathers twice (recomputed forward, then backward); without, once
    sc = Scenario.from_dict(_gpt3())
    pc = count_params(sc.model)
    assert deepspeed_regather_fraction(sc, pc, 1) == 1.0
    assert deepspeed_regather_fraction(Scenario.from_dict(_gpt3(recompute="none")), pc, 1) == 0.0
    assert deepspeed_regather_fraction(Scenario.from_dict(_gpt3("current")), pc, 1) == 0.5


def test_deepspeed_v03_step_is_compute_plus_every_collective_by_hand():
    # 175B on 1536 A100s (192 DGX nodes), one micro-batch. Each collective is NCCL's ring
    # over all 1536 ranks: alpha = 8.4 us + 191 x 14 us (network hops) + 1344 x 3.4 us
    # (NVLink hops) = 7252.4 us (tuning.cc, Simple); its bytes, (n-1)/n of a layer's
    # 1,812,099,072 parameters x 2 B, leave each node 1/8 through each GPU's NIC at
    # 25 GB/s x 0.8 (network_efficiency), so B = 160 GB/s a rank. A layer: forward gather
    # (4 alphas + V/B), backward gather of the recomputed forward and the backward (8
    # alphas + 2 V/B), 12 reduce-scatters (12 alphas + V/B), each waited for by the next
    # fetch's torch.cuda.synchronize(): 24 alpha + 4 V/B = 264.6 ms; and PyTorch's list
    # collectives zero-fill each gathered layer S (one HBM write at 2039 GB/s, 3 gathers)
    # and launch one copy_ per rank on the NCCL stream, each at least 3.8 us (NVIDIA CUDA
    # Graphs blog, 2019): a gather of 4 tensors 4 x 1536 copies = 23.3 ms (above the 2 S /
    # HBM = 1.78 ms their bytes take), the 12 reduce-scatters 12 x 1536 = 70.0 ms; before
    # each gather DeepSpeed's Python loop narrows a view a rank after its
    # torch.cuda.synchronize(), 2.261 us each (PyTorch PR #32194's torch.split benchmark):
    # 4 x 1536 = 13.9 ms a gather. 3 x (13.89 + 1.78 + 23.35) + 70.04 = 187.1 ms.
    # 451.7 ms x 96 layers = 43.4 s.
    alpha_s = 8.4e-6 + 191 * 14e-6 + 1344 * 3.4e-6
    assert nccl.ring_latency_s("allgather", 1536, 192) == pytest.approx(alpha_s)
    s_bytes = (12 * 12288**2 + 13 * 12288) * 2
    v_bytes = 1535 / 1536 * s_bytes
    copies_s = 3 * (4 * 1536 * 2.261e-6 + s_bytes / 2039e9 + 4 * 1536 * 3.8e-6) + 12 * 1536 * 3.8e-6
    assert copies_s == pytest.approx(0.1871, rel=1e-3)
    layer_s = 24 * alpha_s + 4 * v_bytes / 160e9 + copies_s
    assert layer_s == pytest.approx(0.4517, rel=1e-3)
    step = evaluate_dict(_gpt3(), detail=False)["step"]
    # the optimizer step and the embedding are compute; all else is the collectives
    assert step["time_s"] - step["breakdown_s"]["compute"] == pytest.approx(96 * layer_s, rel=0.01)


def test_list_collective_copies_only_in_deepspeed_v03():
    sc, cur = Scenario.from_dict(_gpt3()), Scenario.from_dict(_gpt3("current"))
    assert list_collective_copy_s(sc, 2039e9, "allgather") == pytest.approx(3.0)
    assert list_collective_copy_s(sc, 2039e9, "reduce_scatter") == pytest.approx(2.0)
    assert list_collective_copy_s(cur, 2039e9, "allgather") == 0.0


def test_list_collective_copies_are_one_launch_a_rank():
    # ProcessGroupNCCL's list all-gather copies each of the world-size outputs out of its
    # flat buffer with its own copy_ kernel: 4 gathers over 1536 ranks of a 3.6 GB layer
    # are 6144 launches of >= 3.8 us (NVIDIA CUDA Graphs blog: 3.8 us a kernel launched
    # back to back) = 23.35 ms, more than the 2 x 3.6 GB / 2039 GB/s = 3.56 ms the bytes
    # take; plus the zero fill, 1.78 ms, and DeepSpeed's Python loop of one narrow a rank
    # before each gather, 6144 x 2.261 us (PyTorch PR #32194) = 13.89 ms. The 12
    # reduce-scatters: 18432 copy_ launches, their loop hidden behind the queued backward.
    # Over 8 ranks the bytes bind: 3 x 3.6 GB / 2039 GB/s, and 32 narrows.
    sc = Scenario.from_dict(_gpt3())
    layer_bytes = 3.6e9
    assert list_collective_copy_s(sc, layer_bytes, "allgather", 1536, 4) == pytest.approx(
        4 * 1536 * 2.261e-6 + layer_bytes / 2039e9 + 4 * 1536 * 3.8e-6)
    assert list_collective_copy_s(sc, layer_bytes, "allgather", 1536, 4) == pytest.approx(0.03902, rel=1e-3)
    assert list_collective_copy_s(sc, layer_bytes, "reduce_scatter", 1536, 12) == pytest.approx(
        12 * 1536 * 3.8e-6)
    assert list_collective_copy_s(sc, layer_bytes, "allgather", 8, 4) == pytest.approx(
        32 * 2.261e-6 + 3 * layer_bytes / 2039e9)


def test_deepspeed_release_is_checked():
    sc = _gpt3("v0.4")
    with pytest.raises(ScenarioError, match="strategy.deepspeed_release"):
        evaluate_dict(sc)
    sc = _gpt3()
    sc["strategy"]["kind"] = "fsdp_full_shard"
    with pytest.raises(ScenarioError, match="strategy.deepspeed_release"):
        evaluate_dict(sc)
    # the default leaves a scenario's JSON (and its stored result's key) as it was
    assert "deepspeed_release" not in Scenario.from_dict(_gpt3("current")).to_dict()["strategy"]


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
