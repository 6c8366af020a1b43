"""FP8 training (``training.fp8``, issue #15): scenario, memory, step time and exports by hand.

Sources (simulation/fp8.py): Transformer Engine 2.20.0.dev0 (NVIDIA/TransformerEngine
d0067d0) ``pytorch/module/linear.py`` (the FP8 input saved column-wise only, the FP8 weight
workspace cached with ``is_first_microbatch``), ``module/base.py`` (``quantize_weight``,
``set_meta_tensor``: 3 forward and 2 backward quantizers per GEMM), ``quantization.py``
(``DelayedScalingRecipeState``: an fp32 scale and ``amax_history_len`` fp32 amaxes per
quantizer), ``common/recipe/__init__.py`` (DelayedScaling: amax_history_len 1024, HYBRID);
torchao ``float8/float8_linear.py`` (saves the 16-bit input and weight); S. Bekman,
ml-engineering, MAMF table: H100 SXM BF16 794.5, FP8 1402.6 TFLOP/s (their ratio on the
sustained BF16 730 TFLOP/s of Hugging Face gpu-fryer's README, simulation/compute.py); Megatron-LM
``arguments.py`` (``--fp8-format``, ``--fp8-recipe``, ``--fp8-amax-history-len``).
"""

import pytest

from simulation import evaluate_dict
from simulation.compute import H100_HBM_FRACTION, wave_efficiency
from simulation.errors import ScenarioError
from simulation.export import deepspeed_config, fsdp_snippet, megatron_args
from simulation.params import count_params
from simulation.scenario import Scenario
from simulation.step import compute_times

# Llama-2-7B: h 4096, 32 heads (no GQA), f 11008, 32 layers, RMSNorm (2 weights of h a block)
H, F, L = 4096, 11008, 32
LIN = 4 * H * H + 3 * H * F          # 202,375,168 weights a block in FP8 GEMMs (QKV, O, gate/up/down)
HBM_H100 = 3350e9 * H100_HBM_FRACTION


# a custom accelerator without an FP8 peak (its FP8 flags need one)
NO_FP8_PEAK = {"name": "x", "hbm_capacity_bytes": 8e10, "hbm_bytes_per_s": 3e12, "peak_flops_bf16": 1e15,
               "peak_flops_fp32": 6e13, "host_link_bytes_per_s": 5e10, "scaleup_bytes_per_s": 4e11}


def scenario(fp8=None, kind="ddp", gpus=8, **training):
    tr = {"micro_batch_size": 1, "seq_len": 2048, "framework": "megatron", **training}
    if fp8 is not None:
        tr["fp8"] = fp8
    return {"model": {"preset": "llama2-7b"},
            "cluster": {"node": "dgx-h100", "num_nodes": 1, "gpus_per_node": gpus},
            "training": tr, "strategy": {"kind": kind}}


def parts(report):
    return report["memory"]["per_gpu"]["hbm"]["parts"]


def part(report, prefix):
    hits = [p for p in parts(report) if p["name"].startswith(prefix)]
    assert len(hits) == 1, [p["name"] for p in parts(report)]
    return hits[0]["bytes"]


# ------------------------------------------------------------------ scenario
def test_defaults_follow_the_framework_s_library():
    te = Scenario.from_dict(scenario({})).training.fp8
    assert (te.recipe, te.format, te.history_len, te.param) == ("delayed", "hybrid", 1024, False)
    ao = Scenario.from_dict(scenario({}, framework="huggingface")).training.fp8
    assert (ao.recipe, ao.format, ao.history_len) == ("tensorwise", "e4m3", 0)
    assert Scenario.from_dict(scenario({"recipe": "mxfp8"}) | {
        "cluster": {"node": "dgx-b200", "num_nodes": 1}}).training.fp8.format == "e4m3"


def test_round_trip_and_old_json_unchanged():
    sc = Scenario.from_dict(scenario({"recipe": "delayed", "amax_history_len": 16, "param": True}))
    d = sc.to_dict()
    assert d["training"]["fp8"] == {"recipe": "delayed", "format": "hybrid",
                                    "amax_history_len": 16, "param": True}
    assert Scenario.from_dict(d) == sc
    old = Scenario.from_dict(scenario()).to_dict()
    assert "fp8" not in old["training"] and "mxfp8" not in old["cluster"]["accelerator"]


@pytest.mark.parametrize("fp8, extra, field", [
    ({"recipe": "fp4"}, {}, "training.fp8.recipe"),
    ({"recipe": "rowwise"}, {}, "training.fp8.recipe"),                 # torchao's, not TE's
    ({"recipe": "delayed"}, {"framework": "huggingface"}, "training.fp8.recipe"),
    ({"format": "e5m2"}, {}, "training.fp8.format"),
    ({"recipe": "tensorwise", "amax_history_len": 16}, {}, "training.fp8.amax_history_len"),
    ({"amax_compute_algo": "mean"}, {}, "training.fp8.amax_compute_algo"),
    ({"recipe": "rowwise", "param": True}, {"framework": "huggingface"}, "training.fp8.param"),
    ({"scaling": 1}, {}, "training.fp8.scaling"),
    ({"recipe": "mxfp8"}, {}, "training.fp8.recipe"),                   # H100: no MX formats
])
def test_bad_fp8_fields_are_named(fp8, extra, field):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(scenario(fp8, **extra))
    assert e.value.field == field
    assert "unknown" not in e.value.message or field.endswith(".scaling")   # a known section


def test_fp8_needs_16_bit_mixed_precision():
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(scenario({}, precision="fp32"))
    assert e.value.field == "training.fp8" and "bf16 or fp16" in e.value.message


def test_parts_without_fp8_tensor_cores_refuse_it():
    for acc in ("a100-sxm4-80gb", "v100-sxm2-32gb", "a800-sxm4-80gb"):
        # V100 has no bf16 either (refused on training.precision): fp16 mixed precision there
        d = scenario({}, **({"precision": "fp16"} if acc.startswith("v100") else {}))
        d |= {"cluster": {"accelerator": acc, "gpus_per_node": 8, "num_nodes": 1}}
        with pytest.raises(ScenarioError) as e:
            Scenario.from_dict(d)
        assert e.value.field == "training.fp8" and "no FP8" in e.value.message
    bad = NO_FP8_PEAK | {"mxfp8": True}
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(scenario() | {"cluster": {"accelerator": bad, "gpus_per_node": 1}})
    assert e.value.field == "cluster.accelerator.mxfp8"


def test_dense_fp8_peaks_are_twice_the_dense_16_bit_ones():
    """Datasheets give FP8 with sparsity; the dense figure is half (H100 3958 -> 1979); L40S's
    datasheet rounds its 16-bit figure (362.05) and FP8 (733) differently: within 2 %."""
    from simulation.presets import ACCELERATORS as A
    for name in ("h100-sxm5-80gb", "h200-sxm-141gb", "h800-sxm5-80gb", "b200-sxm-180gb",
                 "mi300x-192gb", "mi325x-256gb", "l40s-48gb", "rtx4090-24gb", "rtx6000-ada-48gb"):
        assert A[name]["peak_flops_fp8"] == pytest.approx(2 * A[name]["peak_flops_bf16"], rel=0.02), name
    assert A["h100-sxm5-80gb"]["peak_flops_fp8"] == 1979e12 and A["b200-sxm-180gb"]["mxfp8"]
    for name in ("a100-sxm4-80gb", "v100-sxm2-32gb", "rtx3090-24gb"):
        assert "peak_flops_fp8" not in A[name]


# ------------------------------------------------------------------ memory
def test_te_memory_parts_by_hand():
    """Llama-2-7B on 8 H100, TP 2 (Megatron + TE), DDP, b 1, s 2048, delayed scaling."""
    bf = evaluate_dict(scenario(tensor_parallel=2), include_step=False)
    r = evaluate_dict(scenario({}, tensor_parallel=2), include_step=False)
    # FP8 weight workspace, row-wise + column-wise (transposed): 2 B per FP8 GEMM weight
    # of the rank: 2 x 202,375,168 x 32 layers / TP 2 = 6,476,005,376 B
    assert part(r, "FP8 weight row-wise and transposed copies") == 2 * LIN * L / 2 == 6_476_005_376
    # scaling state: (1024 + 1) fp32 x 5 quantizers = 20,500 B per GEMM, 4 GEMMs x 32 layers
    assert part(r, "FP8 scaling state") == 20_500 * 4 * 32 == 2_624_000
    # saved activations: QKV input and MLP input (both whole on each TP rank without
    # sequence parallelism) 2 -> 1 B each; out-projection input (b*s*h/t) 2 -> 1;
    # fc2 input (b*s*f/t, fused SwiGLU keeps gate, up and product) 2 -> 1
    sbh, sbf = 2048 * H, 2048 * F
    per_layer = 2 * sbh + sbh / 2 + sbf / 2          # 32,243,712 B
    assert part(bf, "activations (") - part(r, "activations (") == L * per_layer == 1_031_798_784
    assert not [p for p in parts(bf) if "FP8" in p["name"]]


def test_flash_attention_keeps_its_16_bit_output_beside_the_fp8_copy():
    bf = evaluate_dict(scenario(tensor_parallel=2, flash_attention=True), include_step=False)
    r = evaluate_dict(scenario({}, tensor_parallel=2, flash_attention=True), include_step=False)
    sbh, sbf = 2048 * H, 2048 * F
    per_layer = 2 * sbh - sbh / 2 + sbf / 2           # out-projection input 2 -> 2 + 1
    assert part(bf, "activations (") - part(r, "activations (") == L * per_layer


def test_fp8_primary_weights_by_hand():
    """``param: true``: the FP8 GEMM weights are 1-byte tensors plus a 1-byte transpose."""
    r = evaluate_dict(scenario({"param": True}, tensor_parallel=2), include_step=False)
    assert part(r, "fp8 Linear weights (primary") == LIN * L / 2 == 3_238_002_688
    other = 6_738_415_616 - LIN * L       # Llama-2-7B less the FP8 weights: embedding, head, norms
    assert part(r, "bf16 other parameters") == pytest.approx(2 * other / 2)
    assert part(r, "FP8 weight transposed copy") == LIN * L / 2


def test_zero3_keeps_fp8_copies_of_the_gathered_units_only():
    r = evaluate_dict(scenario({}, kind="zero3"), include_step=False)
    hit = [p for p in parts(r) if p["name"].startswith("FP8 weight row-wise")]
    assert len(hit) == 1 and hit[0]["phase"] == "fwd_bwd"
    assert hit[0]["bytes"] == 2 * LIN * 2          # 2 B x the layer computing and the prefetched one


def test_torchao_saves_16_bit_inputs_and_keeps_no_fp8_copies():
    bf = evaluate_dict(scenario(framework="huggingface", gpus=1), include_step=False)
    r = evaluate_dict(scenario({}, framework="huggingface", gpus=1), include_step=False)
    assert part(bf, "activations (") == part(r, "activations (")
    assert not [p for p in parts(r) if "FP8" in p["name"] or "fp8" in p["name"]]


# ------------------------------------------------------------------ step time
def _work(fp8, **kw):
    """One H100, Llama-2-7B, b 1, s 4096, 8 micro-batches a step: (scenario, layer times)."""
    sc = Scenario.from_dict(scenario(fp8, gpus=1, seq_len=4096, global_batch_size=8, **kw))
    return sc, compute_times(sc, count_params(sc.model))


def test_fp8_gemms_run_at_the_fp8_matmul_rate():
    """The four FP8 GEMMs of a Llama-2-7B block at 4096 tokens (QKV 4096x12288x4096, O
    4096x4096x4096, gate+up 4096x22016x4096, down 4096x4096x11008): 2 M N K FLOPs at
    730 x 1402.6 / 794.5 = 1288.7 TFLOP/s (the H100's sustained BF16 figure, gpu-fryer, times
    the MAMF table's FP8 / BF16 ratio) over the wave efficiency on 132 SMs; math-bound; BF16
    at 730 TFLOP/s. Each kernel's fixed costs (launch floor, pipeline fills, epilogue:
    simulation.compute.gemm_s, test_compute.py) add about 1 % to these four."""
    _, ct = _work({})
    shapes = [(4096, 12288, 4096), (4096, 4096, 4096), (4096, 22016, 4096), (4096, 4096, 11008)]
    fp8_rate = 730e12 * 1402.6 / 794.5
    want = sum(2 * m * n * k / (fp8_rate * wave_efficiency(m, n, 132)) for m, n, k in shapes)
    assert ct["parts"]["gemm"] == pytest.approx(want, rel=0.02) and ct["parts"]["gemm"] > want
    _, bf = _work(None)
    bf16 = sum(2 * m * n * k / (730e12 * wave_efficiency(m, n, 132)) for m, n, k in shapes)
    assert bf["parts"]["gemm"] == pytest.approx(bf16, rel=0.02) and bf["parts"]["gemm"] > bf16
    assert bf["parts"]["attention"] == ct["parts"]["attention"]      # the core stays 16-bit
    assert bf["head_s"] == ct["head_s"]                              # so does the output head


def test_te_cast_kernels_by_hand():
    """Delayed scaling, one H100, 4096 tokens, 8 micro-batches a step.

    Forward: each GEMM input cast in both layouts, read 2 B + write 1 + 1 = 4 B an element:
    QKV, O and gate/up inputs 4096 x 4096 each, down's 4096 x 11008 = 95,420,416 elements,
    381,681,664 B; the fused amax update reads and writes the 3 forward quantizers' 1025
    fp32 of 4 GEMMs: 3/5 x 4 x 1025 x 4 x 2 = 19,680 B; the cached weight copy, cast
    once a step (4 B x 202,375,168) over 8 micro-batches: 101,187,584 B.
    Backward: the output gradients (QKV 3 x 4096, O 4096, gate/up 2 x 11008, down 4096
    wide: 174,063,616 elements) x 4 B + 2/5 of the amax state (13,120 B)."""
    _, ct = _work({})
    fwd = 381_681_664 + 19_680 + 101_187_584
    bwd = 174_063_616 * 4 + 13_120
    assert ct["parts"]["fp8_cast"] == pytest.approx(fwd / HBM_H100, rel=1e-9)
    assert ct["parts"]["fp8_cast_bwd"] == pytest.approx(bwd / HBM_H100, rel=1e-9)
    # current scaling reads each tensor once more for its amax (+2 B an element), no history
    _, cs = _work({"recipe": "tensorwise"})
    assert cs["parts"]["fp8_cast"] == pytest.approx(
        (95_420_416 * 6 + 202_375_168 * 6 / 8) / HBM_H100, rel=1e-9)


def _b200(fp8, **kw):
    """The same Llama-2-7B step on one B200 (whose FP8 GEMMs take any operand layout)."""
    d = scenario(fp8, gpus=1, seq_len=4096, global_batch_size=8, **kw)
    d["cluster"]["node"] = "dgx-b200"
    return d


def test_per_tensor_recipes_make_no_transposes_where_fp8_gemms_take_any_layout():
    """Transformer Engine on compute capability 10.x (pytorch/utils.py
    is_non_tn_fp8_gemm_supported; Float8TensorStorage.update_usage drops the transpose and
    serves column-wise usage from the row-wise data): current scaling casts each tensor to one
    layout, read 2 B for the amax + read 2 + write 1 = 5 B an element (6 on the H100); the
    inputs of test_te_cast_kernels_by_hand (95,420,416 elements) and the cached weight copy
    (202,375,168 weights over 8 micro-batches) over the B200's 8,000 GB/s (no measured share).
    MXFP8 keeps both layouts (its 32-element scale blocks lie along the contracted
    dimension): 2 + 2 x (1 + 1/32) = 4.0625 B. The H100 keeps its two layouts."""
    sc = Scenario.from_dict(_b200({"recipe": "tensorwise"}))
    assert sc.cluster.accelerator.fp8_non_tn_gemm
    ct = compute_times(sc, count_params(sc.model))
    assert ct["parts"]["fp8_cast"] == pytest.approx((95_420_416 * 5 + 202_375_168 * 5 / 8) / 8000e9, rel=1e-9)
    assert ct["parts"]["fp8_cast_bwd"] == pytest.approx(174_063_616 * 5 / 8000e9, rel=1e-9)
    mx = Scenario.from_dict(_b200({"recipe": "mxfp8"}))
    ct = compute_times(mx, count_params(mx.model))
    assert ct["parts"]["fp8_cast"] == pytest.approx(
        (95_420_416 * 4.0625 + 202_375_168 * (2 + 2 * (1 + 1 / 32)) / 8) / 8000e9, rel=1e-9)
    # the same part without the property: the Hopper layout, two casts
    d = _b200({"recipe": "tensorwise"})
    d["cluster"]["accelerator"] = {"preset": "b200-sxm-180gb", "fp8_non_tn_gemm": False}
    tn = Scenario.from_dict(d)
    assert not tn.cluster.accelerator.fp8_non_tn_gemm
    ct = compute_times(tn, count_params(tn.model))
    assert ct["parts"]["fp8_cast"] == pytest.approx((95_420_416 * 6 + 202_375_168 * 6 / 8) / 8000e9, rel=1e-9)


def test_per_tensor_weight_copy_is_one_layout_on_blackwell():
    # TP 2 on 8 B200: the row-wise FP8 copy only, 1 B per FP8 GEMM weight of the rank
    # (202,375,168 x 32 / 2 = 3,238,002,688 B; 2 B on the H100, test_te_memory_parts_by_hand);
    # MXFP8 keeps both layouts and their E8M0 scales (1/32 B each): 2.0625 B
    d = _b200({"recipe": "tensorwise"}, tensor_parallel=2)
    d["cluster"]["gpus_per_node"] = 8
    r = evaluate_dict(d, include_step=False)
    assert part(r, "FP8 weight row-wise copy") == LIN * L / 2 == 3_238_002_688
    d["training"]["fp8"] = {"recipe": "mxfp8"}
    r = evaluate_dict(d, include_step=False)
    assert part(r, "FP8 weight row-wise and transposed copies") == pytest.approx(2.0625 * LIN * L / 2)
    # FP8 primary weights: the primary is the row-wise layout, nothing more is made
    d["training"]["fp8"] = {"recipe": "tensorwise", "param": True}
    r = evaluate_dict(d, include_step=False)
    assert not [p for p in parts(r) if p["name"].startswith("FP8 weight")]
    assert part(r, "fp8 Linear weights (primary") == LIN * L / 2


def test_non_tn_fp8_gemm_needs_an_fp8_peak_and_is_left_out_of_json_when_false():
    bad = NO_FP8_PEAK | {"fp8_non_tn_gemm": True}
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(scenario() | {"cluster": {"accelerator": bad, "gpus_per_node": 1}})
    assert e.value.field == "cluster.accelerator.fp8_non_tn_gemm"
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(scenario() | {"cluster": {"accelerator": bad | {"peak_flops_fp8": 2e15,
                                                                          "fp8_non_tn_gemm": "yes"},
                                                      "gpus_per_node": 1}})
    assert e.value.field == "cluster.accelerator.fp8_non_tn_gemm"
    h100 = Scenario.from_dict(scenario()).cluster.accelerator
    assert not h100.fp8_non_tn_gemm and "fp8_non_tn_gemm" not in h100.to_dict()
    assert Scenario.from_dict(_b200(None)).cluster.accelerator.to_dict()["fp8_non_tn_gemm"] is True


def test_torchao_casts_by_hand():
    """torchao (eager): an amax pass and a cast per layout, 5 B an element; the input and
    the weight cast forward and again backward, the output gradient in two layouts."""
    _, ct = _work({}, framework="huggingface")
    assert ct["parts"]["fp8_cast"] == pytest.approx((95_420_416 + LIN) * 5 / HBM_H100, rel=1e-9)
    assert ct["parts"]["fp8_cast_bwd"] == pytest.approx(
        ((95_420_416 + LIN) * 5 + 174_063_616 * 10) / HBM_H100, rel=1e-9)


def test_torch_compile_fuses_torchao_s_casts_and_float8_all_gather_casts_the_shard():
    """Under torch.compile the cast joins the kernel making its input: 3 B an element and
    layout (amax read 2, FP8 write 1). With FSDP2's float8 all-gather (``param``) each of
    the 8 ranks casts its 1/8 shard of the weights, forward and backward, at 5 B."""
    sc = Scenario.from_dict(scenario({"recipe": "tensorwise", "param": True}, kind="fsdp_full_shard",
                                     framework="huggingface", software_stack="torch_compile",
                                     seq_len=4096, global_batch_size=8))
    ct = compute_times(sc, count_params(sc.model))
    assert ct["parts"]["fp8_cast"] == pytest.approx((95_420_416 * 3 + LIN / 8 * 5) / HBM_H100, rel=1e-9)
    assert ct["parts"]["fp8_cast_bwd"] == pytest.approx(
        (95_420_416 * 3 + 174_063_616 * 6 + LIN / 8 * 5) / HBM_H100, rel=1e-9)
    with pytest.raises(ScenarioError) as e:           # float8 all-gather is FSDP2's
        Scenario.from_dict(scenario({"recipe": "tensorwise", "param": True}, framework="huggingface"))
    assert e.value.field == "training.fp8.param"


def test_torchao_llama3_8b_speedup_as_published():
    """torchao docs/source/workflows/training.md, "e2e training benchmarks", NVIDIA H100:
    torchtitan Llama3-8B on 8 H100, batch 1, sequence 8192, torch.compile, FSDP2, per-op
    SAC: bf16 6150 median tokens/s, float8 tensorwise with float8 all-gather 7689.5, a
    1.2503x speedup. The engine's ratio of step times holds it within 10 %. (The rowwise
    row, 1.1005x, runs a slower CUTLASS GEMM that the engine does not tell apart.)"""
    base = {"model": {"preset": "llama3.1-8b"}, "cluster": {"node": "dgx-h100", "num_nodes": 1},
            "training": {"micro_batch_size": 1, "global_batch_size": 8, "seq_len": 8192,
                         "flash_attention": True, "recompute": "selective_ops",
                         "software_stack": "torch_compile", "framework": "huggingface"},
            "strategy": {"kind": "fsdp_full_shard"}}
    fp8 = {**base, "training": {**base["training"], "fp8": {"recipe": "tensorwise", "param": True}}}
    ratio = evaluate_dict(base)["step"]["time_s"] / evaluate_dict(fp8)["step"]["time_s"]
    assert ratio == pytest.approx(7689.5 / 6150, rel=0.10)


def test_unmeasured_fp8_rate_scales_the_16_bit_figure_by_the_peaks():
    """MI300X has no FP8 MAMF row: 668.4 TFLOP/s (BF16 MAMF) x 2614.9 / 1307.4."""
    from simulation.compute import GPU_FIGURES, fp8_gemm_flops
    acc = Scenario.from_dict({"model": {"preset": "llama2-7b"}, "cluster": {
        "accelerator": "mi300x-192gb", "gpus_per_node": 1}}).cluster.accelerator
    assert fp8_gemm_flops(acc, GPU_FIGURES["mi300x-192gb"]) == pytest.approx(668.4e12 * 2614.9 / 1307.4)
    h100 = Scenario.from_dict(scenario()).cluster.accelerator
    assert fp8_gemm_flops(h100, GPU_FIGURES["h100-sxm5-80gb"]) == pytest.approx(730e12 * 1402.6 / 794.5)


def test_constant_model_runs_the_fp8_gemms_at_the_fp8_peak():
    """compute_efficiency 0.5 on H100: a block's forward is 2 x 202,375,168 x 4096 FP8 GEMM
    FLOPs at 1979e12 x 0.5 plus the attention's 4 b s^2 h at 989e12 x 0.5."""
    _, ct = _work({}, compute_efficiency=0.5)
    lin, attn = 2 * LIN * 4096, 4 * 4096 * 4096 * H
    assert ct["fwd_s"] == pytest.approx(lin / (1979e12 * 0.5) + attn / (989e12 * 0.5), rel=1e-9)
    assert ct["bwd_s"] == pytest.approx(2 * lin / (1979e12 * 0.5) + 2 * attn / (989e12 * 0.5), rel=1e-9)


def test_delayed_scaling_adds_two_amax_all_reduces_a_micro_batch():
    from simulation.collectives import ring_latency_s
    from simulation.step import fp8_amax_reduction_s
    sc = Scenario.from_dict(scenario({}, tensor_parallel=2))         # 8 GPUs: DP 4 x TP 2
    assert fp8_amax_reduction_s(sc) == 2 * ring_latency_s("allreduce", 8, 1)
    assert fp8_amax_reduction_s(Scenario.from_dict(scenario({"recipe": "tensorwise"}))) == 0.0


def test_fp8_step_is_faster_and_the_report_says_how():
    bf = evaluate_dict(scenario(tensor_parallel=2, global_batch_size=32))
    r = evaluate_dict(scenario({}, tensor_parallel=2, global_batch_size=32))
    assert r["step"]["time_s"] < bf["step"]["time_s"]
    c = r["step"]["compute"]
    assert c["fp8"]["recipe"] == "delayed"
    assert c["fp8"]["gemm_flops"] == pytest.approx(730e12 * 1402.6 / 794.5)
    assert c["fp8"]["implementation"] == "transformer_engine" and c["fp8_cast_fwd_s"] > 0
    assert "fp8" not in bf["step"]["compute"]


# ------------------------------------------------------------------ exports
def test_megatron_args_carry_fp8():
    args = megatron_args(Scenario.from_dict(scenario({"param": True}, tensor_parallel=2)))
    line = " ".join(args)
    assert "--tensor-model-parallel-size 2" in line and "--bf16" in line
    assert ("--fp8-format hybrid --fp8-recipe delayed --fp8-amax-history-len 1024 "
            "--fp8-amax-compute-algo max --fp8-param-gather") in line
    cs = " ".join(megatron_args(Scenario.from_dict(scenario({"recipe": "tensorwise"}))))
    assert "--fp8-recipe tensorwise" in cs and "amax" not in cs
    assert "--fp8" not in " ".join(megatron_args(Scenario.from_dict(scenario())))


def test_deepspeed_and_fsdp_exports_say_what_they_leave_out():
    cfg = deepspeed_config(Scenario.from_dict(scenario({})))
    assert any("FP8 is not part of this DeepSpeed config" in n and "--fp8-recipe delayed" in n
               for n in cfg["_tierlab_notes"])
    snip = fsdp_snippet(Scenario.from_dict(scenario({}, framework="huggingface", gpus=1,
                                                    ) | {"strategy": {"kind": "fsdp_full_shard"}}))
    assert "convert_to_float8_training" in snip and "tensorwise" in snip
    assert "FP8" not in fsdp_snippet(Scenario.from_dict(scenario(gpus=1) | {
        "strategy": {"kind": "fsdp_full_shard"}}))


def test_float8_all_gather_halves_the_unsharded_units():
    """FSDP FULL_SHARD, 8 H100: the unsharded units (current + 1 prefetched) hold the FP8
    GEMM weights in 1 B and the block's norms in 2 B: 2 x (202,375,168 + 2 x 8,192)."""
    kw = dict(kind="fsdp_full_shard", framework="huggingface")
    bf = evaluate_dict(scenario(**kw), include_step=False)
    r = evaluate_dict(scenario({"recipe": "tensorwise", "param": True}, **kw), include_step=False)
    assert part(bf, "unsharded parameters") == 2 * (LIN + 2 * H) * 2
    assert part(r, "unsharded parameters") == pytest.approx(2 * (LIN * 1 + 2 * H * 2))


def test_gb200_runs_fp8_at_its_die_s_measured_fp8_over_bf16_ratio():
    # NVIDIA's GB200 NVL72 page: 720 PFLOPS FP8 and 360 PFLOPS BF16 with sparsity a rack;
    # / 2 (dense) / 72 GPUs = 5.0 and 2.5 PFLOP/s a GPU. No FP8 GEMM was measured on it; its
    # die is the B200's, whose MAMF table rows give FP8 / BF16 = 3432.5 / 1745.0 = 1.967
    # (not the peaks' 2.0), so gpu-fryer's sustained 1550 TFLOP/s BF16 x 1.967 = 3049 TFLOP/s.
    from simulation.evaluate import evaluate_dict
    r = evaluate_dict({"model": {"preset": "llama3.1-8b"}, "cluster": {"node": "gb200-nvl72", "num_nodes": 2},
                       "training": {"tensor_parallel": 2, "seq_len": 4096, "flash_attention": True,
                                    "fp8": {"recipe": "mxfp8"}},
                       "strategy": {"kind": "megatron_dist_opt"}})
    assert r["step"]["compute"]["fp8"]["gemm_flops"] == pytest.approx(1550e12 * 3432.5 / 1745.0)
    assert r["step"]["compute"]["fp8"]["gemm_flops"] == pytest.approx(3048.9e12, rel=1e-4)
    assert r["step"]["compute"]["fp8"]["peak_flops_fp8"] == 5000e12


def test_mfu_of_an_fp8_run_is_over_the_fp8_peak_with_the_16_bit_figure_beside_it():
    """MFU divides the model FLOPs by the peak of the precision the GEMMs run at: H100 SXM's
    dense FP8 1979 TFLOP/s (NVIDIA H100 datasheet, 3958 with sparsity), not its BF16 989; the
    16-bit-peak figure is labelled beside it (x 1979 / 989). A BF16 run keeps the BF16 peak."""
    r = evaluate_dict(scenario({}, tensor_parallel=2, global_batch_size=32))
    n = 8
    flops_per_s = r["step"]["model_flops"] / (r["step"]["time_s"] * n)
    assert r["mfu"] == pytest.approx(flops_per_s / 1979e12, rel=1e-9)
    assert r["step"]["mfu_peak"]["precision"] == "fp8"
    assert r["step"]["mfu_peak"]["flops_per_s"] == 1979e12
    assert r["step"]["mfu_peak"]["mfu_16bit_peak"] == pytest.approx(flops_per_s / 989e12, rel=1e-9)
    bf = evaluate_dict(scenario(tensor_parallel=2, global_batch_size=32))
    assert bf["mfu"] == pytest.approx(bf["step"]["model_flops"] / (bf["step"]["time_s"] * n) / 989e12,
                                      rel=1e-9)
    assert bf["step"]["mfu_peak"] == {"precision": "16-bit", "flops_per_s": 989e12}
