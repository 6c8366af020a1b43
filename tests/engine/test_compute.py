"""Compute time from the work (simulation.compute): GEMMs, attention, memory-bound kernels.

Each formula against a hand calculation or a published figure: wave quantization (NVIDIA,
Matrix Multiplication Background), the achievable matmul rate (mli/transformers-benchmarks
for the A100, Hugging Face gpu-fryer for the H100: sustained square 8192 burns), the rates of
GEMMs against their shape (XLA's measured sm_90 table), FlashAttention-2's fractions of peak (Dao 2023), and Korthikanti et al. 2022
Table 4's sequence-parallel saving on a 22B layer.
"""

import json
from pathlib import Path

import pytest

from simulation import ScenarioError, evaluate_dict
from simulation.compute import (GPU_FIGURES, PASSES, GpuFigures, gemm_s, layer_times, software_stack,
                                uses_work_model, wave_efficiency)
from simulation.params import model_params
from simulation.scenario import Scenario
from tests.refdata import cases

A100 = GPU_FIGURES["a100-sxm4-80gb"]
# the bandwidth memory-bound kernels reach: mli/transformers-benchmarks' A100 80GB
# element-wise multiply, 0.202 TFLOP/s x 8 B = 1616 GB/s (of the datasheet's 2039)
A100_HBM = 1616e9


def kort22(**training):
    """Korthikanti et al. 2022 Table 3/4's 22B layer: TP 8, micro-batch 4, seq 2048, A100."""
    t = dict(micro_batch_size=4, global_batch_size=4, seq_len=2048, tensor_parallel=8,
             compute_model="work")
    t.update(training)
    return Scenario.from_dict({"model": {"preset": "megatron-22b"},
                               "cluster": {"node": "dgx-a100-80gb", "num_nodes": 1},
                               "training": t, "strategy": {"kind": "ddp"}})


def test_wave_efficiency_by_hand():
    # 1024 x 1024 output on 108 SMs: 256x128 -> 4 x 8 = 32 tiles in one wave (32/108);
    # 128x128 -> 8 x 8 = 64 tiles (64/108), the better of the two.
    assert wave_efficiency(1024, 1024, 108) == pytest.approx(64 / 108)
    # 27648 = 108 x 256 rows, 128 columns: 108 tiles of 256x128, exactly one full wave
    assert wave_efficiency(108 * 256, 128, 108) == 1.0
    # 109 tiles of 128x128 need two waves: 109 / 216 (256x128: 55 tiles, 55/108, better)
    assert wave_efficiency(109 * 128, 128, 108) == pytest.approx(55 / 108)


def test_full_wave_gemm_runs_at_the_sustained_matmul_rate_plus_its_fixed_costs():
    # mli/transformers-benchmarks, A100 80GB: a square 8192 fp16 matmul at 230 TFLOP/s, a
    # whole cuBLAS kernel: its launch (3.8 us, compute.KERNEL_LAUNCH_S), pipeline fills and epilogue come off its time
    # to leave the K-loop's rate. 8192^3 on 256x128 tiles: 32 x 64 = 2048 tiles, 19 waves of
    # up to 108; each wave's first K stage (64 deep, 2 B) reads 2 A panels of 256 rows and
    # 64 B panels of 128 columns: (2 x 256 + 64 x 128) x 128 B = 1,114,112 B from HBM
    # (1616 GB/s); the last C tile, 256 x 128 x 2 B, at a 108th of it.
    c = 2 * 8192 ** 3
    fixed_8192 = 3.8e-6 + 19 * 1114112 / A100_HBM + 256 * 128 * 2 / (A100_HBM / 108)
    rate = c / (c / 230e12 - fixed_8192)
    assert rate == pytest.approx(231.03e12, rel=1e-4)
    # 9 x 12 = 108 tiles of 256x128 is one full wave, but 128x128 tiles (18 x 12 = 216, two
    # full waves, the same math) cost less: fills of (9 + 12) x 128 x 128 B per wave and a
    # 128 x 128 epilogue; compute-bound (70 MB over 1616 GB/s = 0.04 ms)
    m, n, k = 9 * 256, 12 * 128, 8192
    want = (3.8e-6 + 2 * m * n * k / rate + 2 * (9 + 12) * 128 * 128 / A100_HBM
            + 128 * 128 * 2 / (A100_HBM / 108))
    assert gemm_s(m, n, k, A100, A100_HBM) == pytest.approx(want)
    assert want == pytest.approx(257.39e-6, rel=1e-4)     # 2 m n k / 230e12 = 252.10 us


def test_h100_gemms_run_at_the_sustained_rate_of_a_long_square_8192_burn():
    # The A100's rule applied to the H100 SXM5: Hugging Face gpu-fryer's README reference table
    # (commit c12f710, CUDA 12.9), cuBLASLt 8192^3 BF16 GEMMs held for the test's duration:
    # "NVIDIA H100 80GB HBM3" ~730 TFLOP/s, not Bekman's best-of-sweep 794.5. H200 (the same
    # die and 700 W limit) and H800 (the same SMs and clocks) take it too. 11 x 12 = 132
    # tiles of 256x128: one full wave on 132 SMs, compute-bound.
    h100 = GPU_FIGURES["h100-sxm5-80gb"]
    m, n, k = 11 * 256, 12 * 128, 8192
    # within its fixed costs (launch, fills, epilogue: 4 % of this one-wave GEMM)
    assert gemm_s(m, n, k, h100, 2903e9) == pytest.approx(2 * m * n * k / 730e12, rel=0.05)
    assert gemm_s(m, n, k, h100, 2903e9) > 2 * m * n * k / 730e12
    for preset in ("h200-sxm-141gb", "h800-sxm5-80gb"):
        assert GPU_FIGURES[preset].gemm_flops == 730e12
    # FP8: the MAMF table's FP8 / BF16 ratio on the sustained figure (H100 1402.6 / 794.5,
    # H200 1453.4 / 794.5), as gpu-fryer's FP8 burn feeds near-constant operands
    assert h100.fp8_gemm_flops == pytest.approx(730e12 * 1402.6 / 794.5)
    assert GPU_FIGURES["h200-sxm-141gb"].fp8_gemm_flops == pytest.approx(730e12 * 1453.4 / 794.5)


XLA_B200 = json.loads((Path(__file__).parents[1] / "data" / "xla_b200_gemm_bf16.json").read_text())
B200_HBM = 8000e9   # the preset's datasheet rate (no measured share for the B200)


def _b200_rates(gemm_flops=None):
    """(measured short-run B200 rate, modelled B200 rate, measured sm_90 rate, modelled H100
    rate) for each shape of XLA's table (tests/data/xla_b200_gemm_bf16.json)."""
    b200 = GPU_FIGURES["b200-sxm-180gb"]
    if gemm_flops:
        b200 = GpuFigures(gemm_flops, b200.sms, "test", 1.0)
    h100 = GPU_FIGURES["h100-sxm5-80gb"]
    out = []
    for r in XLA_B200["rows"]:
        b, m, n, k = r["b"], r["m"], r["n"], r["k"]
        f = 2 * b * m * n * k
        out.append((r["b200_bf16_flops_per_s"], f / gemm_s(m, n, k, b200, B200_HBM, b),
                    r["sm90_bf16_flops_per_s"], f / gemm_s(m, n, k, h100, 2903e9, b)))
    return out


def test_b200_sustained_figure_stays_under_its_measured_short_runs():
    # HGX B200 has no published sustained burn; its figure is its best-of-sweep MAMF (Bekman:
    # 1745.0 TFLOP/s) times the share of MAMF the same die sustains in GB200 (gpu-fryer: 1550
    # of 1822.0), 1485 TFLOP/s. A sustained rate cannot exceed what short runs of the same
    # shape measure: OpenXLA's sm_100_B200 table (24 shapes of 2048-4096 a side) is the bound.
    # With MAMF's 1745 the wave model ran 1.13x the measured rates on average and up to 1.22x
    # (4096^3: 1641 modelled, 1417 measured); now at most 1.05x each and 0.98x on average.
    assert GPU_FIGURES["b200-sxm-180gb"].gemm_flops == pytest.approx(1745.0e12 * 1550 / 1822.0)
    ratios = [model / meas for meas, model, _, _ in _b200_rates()]
    assert max(ratios) <= 1.06
    assert sum(ratios) / len(ratios) <= 1.0
    old = [model / meas for meas, model, _, _ in _b200_rates(1745.0e12)]
    assert sum(old) / len(old) > 1.1 and max(old) > 1.2
    # FP8 keeps the MAMF table's FP8 / BF16 ratio on the sustained figure, as the H100's does;
    # GB200 (the same die) takes that ratio too, not the datasheet peaks' 2.0
    assert GPU_FIGURES["b200-sxm-180gb"].fp8_gemm_flops == pytest.approx(
        1745.0e12 * 1550 / 1822.0 * 3432.5 / 1745.0)
    assert GPU_FIGURES["b200-gb200-186gb"].fp8_gemm_flops == pytest.approx(1550e12 * 3432.5 / 1745.0)


def test_b200_over_h100_at_the_same_shapes_as_measured_in_one_table():
    # The same table's sm_90 rows (the same tool, the same shapes): B200 / H100 is 1.77 on
    # average over the 24 shapes; the engine's two sustained figures give 1.94 (it was 2.25
    # with the B200's MAMF figure against the H100's sustained one)
    rows = _b200_rates()
    meas = sum(b / h for b, _, h, _ in rows) / len(rows)
    model = sum(b / h for _, b, _, h in rows) / len(rows)
    assert meas == pytest.approx(1.77, abs=0.01)
    assert model == pytest.approx(meas, rel=0.12)
    old_model = sum(b / h for _, b, _, h in _b200_rates(1745.0e12)) / len(rows)
    assert old_model > meas * 1.2


XLA_SM90 = json.loads((Path(__file__).parents[1] / "data" / "xla_sm90_gemm_bf16.json").read_text())


def _shape_factors(rows):
    """(measured, modelled) rate of each row over the first row's (tests/data/
    xla_sm90_gemm_bf16.json: XLA's short-run sm_90 table, so only ratios between shapes)."""
    h100 = GPU_FIGURES["h100-sxm5-80gb"]

    def rate(r):
        b, m, n, k = r["b"], r["m"], r["n"], r["k"]
        return 2 * b * m * n * k / gemm_s(m, n, k, h100, 2903e9, b)
    ref = XLA_SM90["rows"][0]
    return [(r["bf16_flops_per_s"] / ref["bf16_flops_per_s"], rate(r) / rate(ref)) for r in rows]


def test_wave_model_follows_measured_h100_shapes_for_gemms_of_training_size():
    # GEMMs whose every dimension is at least 2048, as each GEMM of the Megatron-Core H100
    # 1.7B and 7.1B rows is per GPU (4096 tokens; hidden 2048, and 4096 with TP 2: o 2048
    # wide, the rest wider): XLA's measured sm_90 rates lie at 0.94-1.0 of the fastest row, the wave model's
    # at 1.0. So those rows' shapes are not what makes them come out fast (test_heldout.py).
    big = [r for r in XLA_SM90["rows"] if min(r["m"], r["n"], r["k"]) >= 2048]
    assert len(big) >= 3
    for meas, model in _shape_factors(big):
        assert model / meas == pytest.approx(1.0, abs=0.10)


def test_fixed_gemm_costs_bring_small_h100_gemms_near_xla_measured_shapes():
    # With a kernel's fixed costs (simulation/compute.py: a 3.8 us launch floor, each wave's
    # first-K-stage fill of its distinct A / B panels from HBM, the last C tile's epilogue
    # at an SM's share of HBM, split-K for outputs of few tiles) every GEMM of XLA's
    # measured sm_90 table with a dimension under 2048 comes within 35 % of its measured
    # rate relative to the fastest row; the bare wave model ran them up to 3.2x too fast
    # (4096 x 512 x 512: 0.31 measured, 0.99 modelled; now 0.41).
    small = [r for r in XLA_SM90["rows"] if min(r["m"], r["n"], r["k"]) < 2048]
    for meas, model in _shape_factors(small):
        assert model / meas == pytest.approx(1.0, abs=0.35)


@pytest.mark.xfail(strict=True, reason=(
    "open: with the fixed per-kernel costs GEMMs with a dimension under 2048 come out at "
    "0.30-0.96 of XLA's fastest sm_90 row against 0.31-0.97 measured, but those with a short "
    "K loop over several waves are still too fast: 4 x 4096 x 4096 x 256 +33 %, 4096 x 512 x "
    "512 +31 %, 1024 x 4096 x 512 +30 %, 4 x 4096 x 4096 x 512 +18 %; a per-wave fill at an "
    "SM's share of HBM would bring them within 17 % but puts Korthikanti's 22B A100 layer "
    "+6 % off (test_22b_layer_meets_korthikanti_table4)"))
def test_wave_model_follows_measured_h100_shapes_for_small_gemms():
    small = [r for r in XLA_SM90["rows"] if min(r["m"], r["n"], r["k"]) < 2048]
    for meas, model in _shape_factors(small):
        assert model / meas == pytest.approx(1.0, abs=0.15)


def test_thin_gemm_is_bound_by_hbm_bandwidth():
    # one token through a 12288 x 49152 weight: 2 bytes x (K + K N + N) over 1616 GB/s,
    # after the kernel's 3.8 us launch floor
    k, n = 12288, 49152
    assert gemm_s(1, n, k, A100, A100_HBM) == pytest.approx(3.8e-6 + 2 * (k + k * n + n) / A100_HBM)


def test_layer_gemms_and_memory_passes_by_hand():
    sc = kort22()
    lt = layer_times(sc, model_params(sc.model))
    tok, h, f, t = 4 * 2048, 6144, 24576, 8
    gem = sum(gemm_s(*x, A100, A100_HBM) for x in
              [(tok, 3 * h / t, h), (tok, h, h / t), (tok, f / t, h), (tok, h, f / t)])
    assert lt["parts"]["gemm"] == pytest.approx(gem)
    # Megatron, no sequence parallelism: two fused norms (2 passes), two bias-dropout-add
    # (3 passes + a 1-byte mask), the fused bias-GeLU (2 passes of b*s*f/t); 2 bytes each
    passes = 2 * (2 + 3 + 0.5) * tok * h + 2 * tok * f / t
    assert lt["parts"]["memory_bound"] == pytest.approx(passes * 2 / A100_HBM)


def test_sequence_parallel_saves_what_korthikanti_table4_measured():
    # Table 4 (22B layer, A100): forward 7.7 ms without, 7.2 ms with sequence parallelism;
    # the norms and dropouts run on b*s*h/t instead of b*s*h (the communication volume is
    # the same: all-gather + reduce-scatter instead of all-reduce).
    t4 = {c["id"]: c["expected"] for c in cases("korthikanti_2022", "kort_t4_22b_layer")}
    saved_ms = (t4["kort_t4_22b_layer_baseline_no_recompute"]["forward_ms"]
                - t4["kort_t4_22b_layer_sequence_parallel"]["forward_ms"])
    pc = model_params(kort22().model)
    base, sp = layer_times(kort22(), pc), layer_times(kort22(sequence_parallel=True), pc)
    assert (base["fwd_s"] - sp["fwd_s"]) * 1e3 == pytest.approx(saved_ms, abs=0.1)


@pytest.mark.parametrize("config,training,allreduces", [
    ("baseline_no_recompute", {}, 4),
    ("baseline_full_recompute", {"recompute": "full"}, 6),
    ("selective_recompute", {"recompute": "selective"}, 4),
    ("selective_plus_sequence", {"recompute": "selective", "sequence_parallel": True}, 4),
])
def test_22b_layer_meets_korthikanti_table4(config, training, allreduces):
    # Korthikanti et al. 2022 Table 4: one 22B layer (TP 8, micro-batch 4) on A100,
    # forward + backward as measured, with its tensor-parallel all-reduces of 2 b s h
    # bytes (two in forward, two in backward, two more in the recomputed forward; with
    # sequence parallelism all-gathers and reduce-scatters of the same volume) on
    # 8-GPU NVLink (300 GB/s x 0.8). The layer's figures are the sustained A100 GEMM and
    # bandwidth figures, not fitted to this table: within 5 %.
    from simulation import collectives as nccl
    measured_ms = cases("korthikanti_2022", f"kort_t4_22b_layer_{config}")[0]["expected"]["combined_ms"]
    sc = kort22(**training)
    lt = layer_times(sc, model_params(sc.model))
    ar_s = nccl.collective_time_s("allreduce", 2 * 4 * 2048 * 6144, 8, 1, 300e9 * 0.8)
    got_ms = (lt["fwd_s"] + lt["bwd_s"] + allreduces * ar_s) * 1e3
    assert got_ms == pytest.approx(measured_ms, rel=0.05)


def test_flash_attention_at_the_papers_fraction_of_peak():
    # Dao 2023 Sec. 4.1, A100: forward up to 73 % of peak, backward 63 %; causal: half of
    # 4 b s^2 h / t; backward 2.5x the forward's FLOPs.
    sc, sc_flash = kort22(), kort22(flash_attention=True)
    pc = model_params(sc.model)
    fl = layer_times(sc_flash, pc)
    causal = 0.5 * 4 * 4 * 2048 ** 2 * 6144 / 8
    assert fl["parts"]["attention"] == pytest.approx(causal / (0.73 * 312e12))
    eager = layer_times(sc, pc)
    assert fl["parts"]["attention"] < eager["parts"]["attention"]
    assert fl["bwd_s"] - fl["fwd_s"] < eager["bwd_s"] - eager["fwd_s"]


def test_b200_flash_attention_within_the_published_kernels():
    # No FlashAttention run on the B200 is in the paper the fractions come from; the B200 takes
    # the A100's fractions scaled by its matmul share. The fastest published B200 attention
    # kernel bounds it: FlashAttention-4 (Zadouri, Hoehnerbach, Shah, Liu, Thakkar, Dao,
    # arXiv:2603.05451, 2026, abstract) reaches "up to 1613 TFLOPs/s (71% utilization)" in
    # BF16 forward, "up to 1.3x" faster than cuDNN 9.13 (Transformer Engine's fused attention).
    # The engine's forward rate on Llama 3 8B at 8,192 tokens (causal: 0.5 x 2 b s^2 a x
    # (128 + 128)) lies between cuDNN's 1613 / 1.3 and 1613 TFLOP/s: 1470 (it was 1729 with
    # MAMF's GEMM figure, above the fastest kernel published).
    (c,) = cases("megatron_bridge_blackwell_2025", "mbridge_b200_8b_fp8cs")
    comp = evaluate_dict(c["scenario"], detail=False)["step"]["compute"]
    b, s, a = 2, 8192, 32
    causal = 0.5 * 2 * b * s * s * a * (128 + 128)
    rate = causal / comp["attention_s"]
    assert 1613e12 / 1.3 <= rate <= 1613e12
    assert rate == pytest.approx(1470e12, rel=0.01)


def llama(stack):
    return Scenario.from_dict({
        "model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100", "num_nodes": 1},
        "training": {"micro_batch_size": 1, "seq_len": 4096, "compute_model": "work",
                     "software_stack": stack, "flash_attention": True},
        "strategy": {"kind": "fsdp_full_shard"}})


def test_software_stacks_order_memory_bound_time():
    pc = model_params(llama("megatron").model)
    mb = {s: layer_times(llama(s), pc)["parts"]["memory_bound"] for s in PASSES}
    assert mb["pytorch_eager"] > mb["torch_compile"] > 0
    assert mb["pytorch_eager"] > mb["megatron"] > 0
    # Llama, Megatron: 2 x (RMSNorm 2 + residual 3) of b*s*h (no dropout), SwiGLU 3 of
    # b*s*f, rotary 2 of q and k; 2 bytes each over the 2,903 of H100's 3,350 GB/s that
    # device-to-device copies reach (aigatech/vpbenchmarking)
    tok, h, f = 4096, 4096, 11008
    passes = 2 * (2 + 3) * tok * h + 3 * tok * f + 2 * tok * 2 * h
    assert mb["megatron"] == pytest.approx(passes * 2 / 2903e9)


def test_default_stack_follows_the_framework():
    assert software_stack(kort22()) == "megatron"          # TP 8: Megatron by default
    assert software_stack(llama(None)) == "pytorch_eager"  # transformers


def test_explicit_efficiency_keeps_the_constant_model():
    base = {"model": {"preset": "megatron-22b"}, "cluster": {"node": "dgx-a100-80gb"},
            "training": {"micro_batch_size": 4, "global_batch_size": 4, "seq_len": 2048,
                         "tensor_parallel": 8}, "strategy": {"kind": "ddp"}}
    assert uses_work_model(Scenario.from_dict(base))            # the default
    work = evaluate_dict(base)["step"]["time_s"]
    base["training"]["compute_model"] = "constant"
    assert not uses_work_model(Scenario.from_dict(base))
    const = evaluate_dict(base)["step"]["time_s"]
    assert const != pytest.approx(work)
    del base["training"]["compute_model"]
    base["training"]["compute_efficiency"] = 0.55             # an explicit figure: constant
    assert not uses_work_model(Scenario.from_dict(base))
    assert evaluate_dict(base)["step"]["time_s"] == pytest.approx(const)
    base["training"]["compute_model"] = "work"                # even when work is asked for
    assert not uses_work_model(Scenario.from_dict(base))


def test_accelerator_without_figures_keeps_the_constant_model():
    sc = {"model": {"preset": "llama2-7b"},
          "cluster": {"gpus_per_node": 8, "accelerator": {
              "name": "x", "hbm_capacity_bytes": 80e9, "hbm_bytes_per_s": 3e12,
              "peak_flops_bf16": 1e15, "peak_flops_fp32": 6e13, "host_link_bytes_per_s": 5e10,
              "scaleup_bytes_per_s": 4.5e11}},
          "training": {"seq_len": 2048, "compute_model": "work"}, "strategy": {"kind": "fsdp_full_shard"}}
    assert not uses_work_model(Scenario.from_dict(sc))


@pytest.mark.parametrize("key,value", [("software_stack", "jax"), ("compute_model", "fast")])
def test_bad_choice_names_the_field(key, value):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict({"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100"},
                            "training": {key: value}})
    assert f"training.{key}" in str(e.value)


T1 = cases("narayanan_2021_table1")


def table1_errors(**training):
    out = []
    for c in T1:
        scn = {**c["scenario"], "training": {**c["scenario"]["training"], **training}}
        out.append(evaluate_dict(scn)["step"]["time_s"] / c["expected_step_time_s"] - 1)
    return out


def test_work_model_error_does_not_drift_with_width():
    # Narayanan et al. 2021 Table 1 (1.7B-1T, TP 1-8, PP 1-64): the constant 0.55 runs
    # small widths too fast and large ones too slow (-19 % .. +14 %); the work model with
    # Megatron's kernels misses every row in the same direction by a similar amount.
    const = table1_errors(compute_model="constant")
    work = table1_errors(compute_model="work")
    assert max(work) - min(work) < 0.5 * (max(const) - min(const))


def test_work_model_meets_narayanan_table1():
    # issue 13: with the default settings (the work model), mean error under 5 %, every
    # row within 10 %
    work = table1_errors()
    assert sum(map(abs, work)) / len(work) < 0.05 and max(map(abs, work)) <= 0.10


def test_resolved_scenario_names_the_model_it_ran():
    base = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100"},
            "training": {}, "strategy": {"kind": "fsdp_full_shard"}}
    work = Scenario.from_dict(base).to_dict()["training"]
    assert work["compute_model"] == "work" and "compute_efficiency" not in work
    assert uses_work_model(Scenario.from_dict({**base, "training": work}))
    base["training"] = {"compute_model": "constant"}
    const = Scenario.from_dict(base).to_dict()["training"]
    assert const["compute_efficiency"] == 0.55 and const["compute_model"] == "constant"
    assert not uses_work_model(Scenario.from_dict({**base, "training": const}))


def test_a_measured_gemm_figure_replaces_the_table():
    # A user's own measurement (e.g. 200 TFLOP/s on their cluster's A100s, a square 8192
    # GEMM): that GEMM comes out at 200 TFLOP/s less its wave quantization (2048 tiles in
    # 19 waves of 108: 0.998), and the K-loop of every compute-bound GEMM at 230 / 200
    # of the table's time (fixed costs aside).
    sc = kort22()
    pc = model_params(sc.model)
    own = Scenario.from_dict({
        "model": {"preset": "megatron-22b"},
        "cluster": {"node": "dgx-a100-80gb", "accelerator": {
            "preset": "a100-sxm4-80gb", "gemm_flops": 200e12, "sm_count": 108}},
        "training": dict(micro_batch_size=4, global_batch_size=4, seq_len=2048, tensor_parallel=8,
                         compute_model="work"), "strategy": {"kind": "ddp"}})
    m, n, k = 9 * 256, 12 * 128, 8192
    from simulation.compute import figures
    mine = figures(own.cluster.accelerator)
    c = 2 * 8192 ** 3
    assert c / gemm_s(8192, 8192, 8192, mine, A100_HBM) == pytest.approx(200e12 * 2048 / 2052, rel=1e-4)
    assert gemm_s(m, n, k, mine, A100_HBM) == pytest.approx(gemm_s(m, n, k, A100, A100_HBM) * 230 / 200,
                                                            rel=0.01)
    assert layer_times(own, pc)["parts"]["gemm"] > layer_times(sc, pc)["parts"]["gemm"]


@pytest.mark.parametrize("acc,field", [({"gemm_flops": 230e12}, "sm_count"),
                                       ({"sm_count": 108}, "gemm_flops"),
                                       ({"gemm_flops": 400e12, "sm_count": 108}, "gemm_flops")])
def test_gemm_figures_come_in_pairs_below_peak(acc, field):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict({"model": {"preset": "llama2-7b"},
                            "cluster": {"node": "dgx-a100-80gb",
                                        "accelerator": {"preset": "a100-sxm4-80gb", **acc}}})
    assert f"cluster.accelerator.{field}" in str(e.value)


def test_the_report_says_which_compute_model_ran():
    base = {"model": {"preset": "megatron-22b"}, "cluster": {"node": "dgx-a100-80gb"},
            "training": {"micro_batch_size": 4, "global_batch_size": 4, "seq_len": 2048,
                         "tensor_parallel": 8, "compute_model": "constant"}, "strategy": {"kind": "ddp"}}
    const = evaluate_dict(base)["step"]["compute"]
    assert const["model"] == "constant" and const["compute_efficiency"] == 0.55
    del base["training"]["compute_model"]
    work = evaluate_dict(base)["step"]["compute"]
    lt = layer_times(kort22(), model_params(kort22().model))
    assert work["model"] == "work" and work["software_stack"] == "megatron"
    assert work["layer_fwd_s"] == pytest.approx(lt["fwd_s"])
    assert work["gemm_s"] + work["attention_s"] + work["memory_bound_s"] == pytest.approx(lt["fwd_s"])


def test_eager_attention_recompute_and_head_by_hand():
    # 22B, TP 8: 8 heads of d = 96 per GPU, b = 4: QK^T and PV as 32 batched GEMMs; the
    # fused softmax (2 passes) and torch dropout (2.5) over the 4 x 8 x 2048^2 scores
    pc = model_params(kort22().model)
    s, d, bt, hbm = 2048, 96, 32, A100_HBM
    scores = bt * s * s
    fwd = (gemm_s(s, s, d, A100, hbm, bt) + gemm_s(s, d, s, A100, hbm, bt)
           + 4.5 * scores * 2 / hbm)
    none = layer_times(kort22(), pc)
    assert none["parts"]["attention"] == pytest.approx(fwd)
    # selective recomputation adds the attention core's forward, full the whole forward
    sel, full = layer_times(kort22(recompute="selective"), pc), layer_times(kort22(recompute="full"), pc)
    assert sel["bwd_s"] - none["bwd_s"] == pytest.approx(fwd)
    assert full["bwd_s"] - none["bwd_s"] == pytest.approx(none["fwd_s"])
    # output layer: logits GEMM, its data and weight gradients; Megatron's cross-entropy on
    # an fp32 copy of the logits: cast 6 B, max 4, sub_ 8, exp 8, sum 4, div_ 8 forward;
    # mul_ 8 and the cast back 6 backward = 52 B a logit (26 passes of 2 B)
    tok, h, v = 4 * 2048, 6144, 51200 / 8     # the preset's vocabulary, split over TP 8
    head = (gemm_s(tok, v, h, A100, hbm) + gemm_s(tok, h, v, A100, hbm) + gemm_s(h, v, tok, A100, hbm)
            + 52 * tok * v / hbm)
    assert none["head_s"] == pytest.approx(head)
