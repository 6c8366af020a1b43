"""The DLRM step as kernels: embeddings as memory-bound gathers, the dense part as GEMMs and
element-wise passes, all-to-alls and the dense all-reduce on the links they cross; held
against MLPerf Training's DLRM-DCNv2 results (samples per second per GPU)."""

import math

import numpy as np
import pytest

from simulation import evaluate_dict
from simulation.recsys import RecModelSpec, embedding_designs
from simulation.recsys import ps as psmod
from simulation.recsys import step as st
from simulation.recsys import zipf
from tests.refdata import assert_close, cases, ids

MLPERF = cases("mlperf_dlrm_dcnv2_throughput")
VALIDATED = [c for c in MLPERF if c["validated"]]
# HugeCTR's MLPerf runs train in mixed precision (config_*.sh: USE_MIXED_PRECISION=true), so
# the pooled embeddings and their gradients cross the all-to-all in fp16.
MLPERF_RECSYS = {"preset": "dlrm-mlperf-v2", "comm_dtype": "fp16", "sample_lookups": 0}


def mlperf_scenario(case):
    i = case["inputs"]
    return {"recsys": {**MLPERF_RECSYS, "batch_size": i["global_batch"]},
            "cluster": {"node": i["node"], "num_nodes": i["num_nodes"]}}


# With the work compute model (the default since engine 0.6) the dense GEMMs of an H100 or
# H200 run at the sustained 730 TFLOP/s of Hugging Face gpu-fryer's 8192^3 cuBLAS burn
# (simulation/compute.py; 794.5 best-of-sweep before). The DCNv2 layers' GEMMs are small
# (6,912 x 1,024 outputs): with each kernel's fixed costs (launch floor, pipeline fills,
# epilogue; test_compute.py) v3.0's DGX H100 comes out 12 % too fast and v4.0's HGX H200
# 15.4 %, just outside the 15 % band (16 % and 20 % without the fixed costs, when they were
# added); the A100 row (+8 %) and v4.0's DGX H100 (+4 %) stay within it (README's figures,
# recomputed by tests/engine/test_readme_figures.py). Open; the GEMMs with a short K loop over several
# waves are still too fast against XLA's measured sm_90 table (test_compute.py, a strict xfail).
FAST_H100_GEMM = {"mlperf_v4.0_nvidia_1x_hgx_h200"}


@pytest.mark.parametrize("case", [
    pytest.param(c, marks=pytest.mark.xfail(strict=True, reason="open: +15 % (v4.0 HGX H200) at the sustained "
                                            "H100 GEMM rate with fixed GEMM costs; see FAST_H100_GEMM"))
    if c["id"] in FAST_H100_GEMM else c for c in VALIDATED], ids=ids(VALIDATED))
def test_dcnv2_on_one_node_matches_mlperf_samples_per_gpu(case):
    # MLPerf's training-only throughput (samples between evaluations over their time,
    # median of 10 runs) per GPU, against the engine's global batch / step time / GPUs,
    # with default settings. The old engine (one dense step at 0.55 of peak, the embedding
    # kernels not counted) gave 3.6 M samples/s per GPU on a DGX H100: twice MLPerf's.
    r = evaluate_dict(mlperf_scenario(case))
    assert r["step"]["design"] == "all_to_all"
    per_gpu = r["throughput"]["samples_per_s"] / case["inputs"]["gpus"]
    assert_close(per_gpu, case["expected"]["train_samples_per_s_per_gpu"], case["tolerance"], case["id"])


def test_multi_node_rows_are_recorded_and_fall_per_gpu_as_measured():
    # Not asserted within a band (HugeCTR's hierarchical sharding is not modelled): per-GPU
    # throughput falls from one to eight DGX H100s, in the measurements and the engine.
    one, eight = (next(c for c in MLPERF if c["id"] == k) for k in
                  ("mlperf_v3.0_nvidia_1x_dgx_h100", "mlperf_v3.0_nvidia_8x_dgx_h100"))
    assert not eight["validated"]
    got = [evaluate_dict(mlperf_scenario(c))["throughput"]["samples_per_s"] / c["inputs"]["gpus"]
           for c in (one, eight)]
    assert got[1] < got[0]
    assert eight["expected"]["train_samples_per_s_per_gpu"] < one["expected"]["train_samples_per_s_per_gpu"]


# ------------------------------------------------------------------ by hand
def v2(**kw):
    return RecModelSpec.from_dict({**MLPERF_RECSYS, "batch_size": 55296, **kw})


def test_embedding_forward_is_the_gathered_bytes_over_hbm():
    # DCNv2 preset, B = 55,296 on 8 GPUs: 214 lookups per sample (sum of the multi-hot
    # sizes), 55,296 x 214 / 8 = 1,479,168 row reads per GPU of 128 x 4 B = 512 B:
    # 757,334,016 B at 3,350 GB/s x 2,646.431/3,350 (FBGEMM's measured gather) =
    # 0.286170 ms; pooled output 55,296 x 26 x 128 x 2 B / 8 = 46,006,272 B at 3,350 GB/s
    # = 0.013733 ms. Total 0.299903 ms.
    s = v2()
    assert sum(t.lookups_per_sample for t in s.tables) == 214
    fwd, _, counts = st.embedding_kernels(s, num_gpus=8, hbm_bytes_per_s=3350e9)
    assert counts["lookups_per_gpu"] == 1_479_168
    assert fwd[0].bytes == 757_334_016 + 46_006_272
    assert fwd[0].seconds == pytest.approx(757_334_016 / 2646.431e9 + 46_006_272 / 3350e9, rel=1e-12)
    assert fwd[0].seconds == pytest.approx(0.299903e-3, rel=1e-5)


def test_embedding_update_moves_each_distinct_row_and_its_adagrad_state():
    # Per distinct row: its fp32 gradient written and read back (2 x 512 B), the weight
    # read and written (2 x 512 B), Adagrad's fp32 accumulator per element read and
    # written (2 x 512 B): 3,072 B, at 2,535.945 GB/s (FBGEMM's measured scatter-add).
    # Row-wise Adagrad keeps one fp32 per row: 2 x 512 + 2 x 512 + 2 x 4 = 2,056 B.
    s = v2()
    _, bwd, counts = st.embedding_kernels(s, num_gpus=8, hbm_bytes_per_s=3350e9)
    d = counts["distinct_rows_per_gpu"]
    assert bwd[1].bytes == pytest.approx(d * 3072, rel=1e-12)
    assert bwd[1].seconds == pytest.approx(d * 3072 / 2535.945e9, rel=1e-12)
    # the pooled gradients are read once per lookup: 1,479,168 x 128 x 2 B
    assert bwd[0].bytes == 1_479_168 * 256
    rw = st.embedding_kernels(v2(embedding_optimizer="rowwise_adagrad"), num_gpus=8,
                              hbm_bytes_per_s=3350e9)[1][1]
    assert rw.bytes == pytest.approx(d * 2056, rel=1e-12)


def test_uniform_multi_hot_distinct_rows_by_hand_and_by_the_generator():
    # 10 rows, 3 lookups per sample, uniform one-hot ids (alpha 0), 5 samples:
    # u = 10 (1 - 0.9^5) = 4.0951 distinct ids; each brings 2 uniform rows fixed per id:
    # E = 10 - (10 - 4.0951) x 0.9^(2 x 4.0951) = 7.481...
    s = RecModelSpec.from_dict({"tables": [{"name": "t", "rows": 10, "dim": 4, "lookups_per_sample": 3,
                                            "zipf_alpha": 0}], "bottom_mlp": [4], "batch_size": 5,
                                "multi_hot_distribution": "uniform"})
    u = 10 * (1 - 0.9 ** 5)
    assert u == pytest.approx(4.0951)
    assert st.distinct_rows(s, 5)[0] == pytest.approx(10 - (10 - u) * 0.9 ** (2 * u), rel=1e-12)
    # The generator (TorchRec's Multihot): row i's extra lookups are a fixed uniform draw
    # per i. Seeded sample of a 1e5-row table, Zipf ids, 2,000 samples, L = 20.
    rng = np.random.default_rng(0)
    n, L, b, a = 100_000, 20, 2_000, 1.05
    big = RecModelSpec.from_dict({"tables": [{"name": "t", "rows": n, "dim": 4, "lookups_per_sample": L,
                                              "zipf_alpha": a}], "bottom_mlp": [4], "batch_size": b,
                                  "multi_hot_distribution": "uniform"})
    extra = rng.integers(0, n, size=(n, L - 1))
    got = []
    for seed in range(5):
        ids_ = zipf.sample(n, a, b, np.random.default_rng(seed)) - 1
        got.append(len(np.unique(np.concatenate([ids_, extra[ids_].ravel()]))))
    assert np.mean(got) == pytest.approx(st.distinct_rows(big, b)[0], rel=0.02)
    # each lookup an independent Zipf draw (the default) dedups more: ~10.7k against ~17.9k
    indep = RecModelSpec.from_dict({**big.to_dict(), "multi_hot_distribution": "zipf"})
    assert st.distinct_rows(indep, b)[0] < 0.7 * st.distinct_rows(big, b)[0]


def test_dense_gemm_at_peak_times_efficiency_or_from_its_shape():
    # Constant model: 2 m n k FLOPs at peak x efficiency. Top MLP's first layer for 6,912
    # samples per GPU: 2 x 6912 x 1024 x 3456 = 48.92 GFLOP at 989e12 x 0.55 = 89.93 us.
    s = v2()
    k = st.dense_kernels(s, 6912, gpu=None, hbm_bytes_per_s=3350e9, flops_per_s=989e12 * 0.55)
    first = next(x for x in k["top_forward"] if x.name == "top MLP 3456x1024 forward")
    assert first.flops == 2 * 6912 * 1024 * 3456
    assert first.seconds == pytest.approx(2 * 6912 * 1024 * 3456 / (989e12 * 0.55), rel=1e-12)
    # the bottom MLP's first layer has no data gradient (its input is data)
    names = [x.name for x in k["bottom_backward"]]
    assert "bottom MLP 13x512 data gradient" not in names and "bottom MLP 13x512 weight gradient" in names
    # DCN element-wise: (4 + 9) passes of 6,912 x 3,456 x 2 B per cross layer, at 3,350 GB/s
    ew = [x for x in k["top_forward"] + k["top_backward"] if "element-wise" in x.name]
    assert sum(x.bytes for x in ew) == 3 * 13 * 6912 * 3456 * 2
    # with GEMM figures the same layer follows its shape: H100 730 TFLOP/s sustained (gpu-fryer),
    # its K loop at 735.8e12 (the 8192^3 burn's 11.85 us of launch, fills and epilogue off its
    # 1506.2 us: simulation.compute.kloop_flops); 6,912 x 1,024 output = 54 x 8 = 432 tiles of
    # 128 x 128 on 132 SMs: 4 waves (528 slots, 0.818; 27 x 8 = 216 tiles of 256 x 128 in 2
    # waves is as full but has a larger epilogue); plus a 3.8 us launch, the waves' first K
    # stages (3 waves of 17 A and 8 B panels, one of 5 and 8: 88 panels x 128 x 64 x 2 B =
    # 1,441,792 B over 3350 GB/s) and one 128 x 128 x 2 B epilogue at a 132nd of it
    from simulation.compute import GPU_FIGURES
    kw = st.dense_kernels(s, 6912, gpu=GPU_FIGURES["h100-sxm5-80gb"], hbm_bytes_per_s=3350e9,
                          flops_per_s=None)
    w = next(x for x in kw["top_forward"] if x.name == "top MLP 3456x1024 forward")
    assert w.seconds == pytest.approx(3.8e-6 + 48.92e9 / (735.8e12 * 432 / 528) + 1441792 / 3350e9
                                      + 128 * 128 * 2 / (3350e9 / 132), rel=1e-3)


def test_step_is_the_kernels_plus_what_the_all_to_alls_leave_exposed():
    # One DGX H100, B = 55,296: the GPU runs its kernels one after another; the forward
    # all-to-all waits for the gather and overlaps only the bottom MLP's forward; the
    # backward one overlaps the bottom MLP's backward and then shares NVLink with the
    # dense all-reduce, which hides behind the embedding backward. By hand:
    # per-rank all-to-all 55,296 x 3,328 x 2 B / 8 x 7/8 = 40,255,488 B at 450 GB/s x 0.8
    # = 360 GB/s, after alpha 8.4 + 3.4 us (NCCL base + one NVLink hop).
    s = v2()
    ks, _ = st.step_kernels(s, num_gpus=8, hbm_bytes_per_s=3350e9, gpu=None, flops_per_s=989e12 * 0.55)
    r = embedding_designs(s, num_gpus=8, gpus_per_node=8, nic_bytes_per_s=400e9, scaleup_bytes_per_s=450e9,
                          dense_step_s=0.0, kernels=ks, prefetch_s=0.0)
    a2a = r["designs"][1]
    T = lambda g: sum(k.seconds for k in ks[g])                  # noqa: E731
    bw, per_rank = 360e9, 55296 * 3328 * 2 / 8 * 7 / 8
    assert per_rank == 40_255_488
    alpha = 8.4e-6 + 3.4e-6
    assert psmod.all_to_all_latency_s(8, 8) == pytest.approx(alpha)
    fwd_exposed = alpha + per_rank / bw - T("bottom_forward")
    # backward: the all-to-all alone from alpha until the all-reduce starts, then the two
    # share 360 GB/s. The all-reduce's alpha (ring, 8.4 + 2 x 7 x 3.4 us = 56 us) follows
    # the bottom MLP's backward and the all-to-all's alpha (NCCL calls queue on one stream).
    ar_start = max(T("bottom_backward"), alpha) + (8.4e-6 + 14 * 3.4e-6)
    alone = (ar_start - alpha) * bw
    bwd_end = ar_start + (per_rank - alone) / (bw / 2)
    ar_bytes = 2 * 7 / 8 * s.dense_params["total"] * 4
    # the all-reduce (112 MB) ends before the embedding backward does: hidden
    ar_end = bwd_end + (ar_bytes - (bwd_end - ar_start) * bw / 2) / bw
    assert ar_end < bwd_end + T("embedding_backward")
    want = (T("embedding_forward") + T("bottom_forward") + fwd_exposed + T("top_forward") + T("top_backward")
            + bwd_end + T("embedding_backward") + T("dense_optimizer"))
    assert a2a["step_time_s"] == pytest.approx(want, rel=1e-9)
    assert a2a["gpu_busy_s"] == pytest.approx(sum(T(g) for g in ks), rel=1e-12)


def test_multi_node_all_reduce_puts_one_kth_on_the_nic():
    # Two DGX H100s (16 GPUs): a rank's ring bytes 2 x 15/16 x S, 7/8 of them to a node
    # peer over NVLink and 1/8 over its NIC (NCCL: one ring per NIC).
    s = v2()
    ks, _ = st.step_kernels(s, num_gpus=16, hbm_bytes_per_s=3350e9, gpu=None, flops_per_s=989e12 * 0.55)
    r = embedding_designs(s, num_gpus=16, gpus_per_node=8, nic_bytes_per_s=400e9, scaleup_bytes_per_s=450e9,
                          dense_step_s=0.0, kernels=ks, prefetch_s=0.0)
    links = {x["name"]: x["bytes"] for x in r["designs"][1]["links"]}
    ring = 2 * 15 / 16 * s.dense_params["total"] * 4
    a2a = 55296 * 3328 * 2 / 16 * 15 / 16
    assert links["nic_out"] == pytest.approx(ring / 8 + 2 * a2a * 8 / 15, rel=1e-9)
    assert links["nvlink"] == pytest.approx(ring * 7 / 8 + 2 * a2a * 7 / 15, rel=1e-9)


def test_report_breakdown_counts_the_gpu_kernels_as_compute():
    r = evaluate_dict({"recsys": {**MLPERF_RECSYS, "batch_size": 55296}, "cluster": {"node": "dgx-h100"}})
    b = r["step"]["breakdown_s"]
    a2a = next(d for d in r["ps"]["designs"] if d["design"] == "all_to_all")
    assert set(a2a["gpu_kernels_s"]) == {"embedding_forward", "bottom_forward", "top_forward", "top_backward",
                                         "bottom_backward", "embedding_backward", "dense_optimizer"}
    assert sum(b.values()) == pytest.approx(r["step"]["time_s"])
    assert b["compute"] == pytest.approx(sum(a2a["gpu_kernels_s"].values()))
    assert b["compute"] > 0.8 * r["step"]["time_s"] and b["exposed_comm"] > 0
    assert math.isclose(r["throughput"]["samples_per_s"], 55296 / r["step"]["time_s"])


def test_multi_hot_distribution_is_checked_and_kept():
    from simulation import ScenarioError
    with pytest.raises(ScenarioError) as e:
        RecModelSpec.from_dict({"tables": [{"name": "t", "rows": 10, "dim": 4}], "bottom_mlp": [4],
                                "batch_size": 8, "multi_hot_distribution": "pareto"})
    assert e.value.field == "recsys.multi_hot_distribution"
    s = RecModelSpec.from_dict({"preset": "dlrm-mlperf-v2"})
    assert s.multi_hot_distribution == "uniform" and RecModelSpec.from_dict(s.to_dict()) == s
    # the default (every lookup a Zipf draw) stays out of saved specs
    assert "multi_hot_distribution" not in RecModelSpec.from_dict({"preset": "dlrm-mlperf-v1"}).to_dict()
