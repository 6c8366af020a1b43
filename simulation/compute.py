"""Compute time of a transformer layer from its work: GEMMs, attention, memory-bound kernels.

Each layer's kernels on one GPU, for one micro-batch of ``b x s`` tokens after the
tensor-parallel split (Megatron's column/row-parallel layout, Shoeybi et al. 2019, Sec. 3):

* **GEMMs** (QKV, attention output, MLP up/gate/down, output layer; backward: a data-gradient
  and a weight-gradient GEMM of the same size each) take ``max(math, memory)``: the math time
  is ``2 M N K`` FLOPs at the accelerator's achievable dense matmul rate (``GPU_FIGURES``:
  a square 8192 matmul sustained for seconds for the A100 and H100 / H200, the best-of-sweep
  MAMF elsewhere) divided by the wave efficiency of the output
  tiles over the SMs; the memory time is the operands' and the result's bytes over HBM
  bandwidth (NVIDIA, *Matrix Multiplication Background User's Guide*, DU-09799-001, 2023:
  Sec. 2 math and memory bounds, Sec. 3.2 wave quantization; cuBLAS picks among tiles,
  of which 256x128, 128x256 and 128x128 are the most efficient, Sec. 2.3).
* **Attention**: eager (Megatron's and transformers' kernels before FlashAttention): the score
  and value products as batched GEMMs per head and the softmax and dropout over the
  ``s x s`` scores as memory-bound passes; FlashAttention-2 (``training.flash_attention``) at
  the fraction of peak its paper measures (``FLASH_FRACTION``), causal (half the score
  blocks), backward 2.5x the forward's FLOPs (Dao 2023, arXiv 2307.08691, Sec. 4.1).
* **Memory-bound kernels** (norms, residual adds, dropout, activation, rotary embedding):
  bytes read and written over HBM bandwidth; the passes each software stack makes are
  counted in ``PASSES`` from its kernels.

The default (``training.compute_model: "work"``). The hardware figures (``GPU_FIGURES``)
are keyed on the accelerator preset; an accelerator without figures, fp32 training,
``compute_model: "constant"`` or an explicit ``training.compute_efficiency`` keeps the
constant model (every FLOP at peak x efficiency, 0.55 by default). Held against Narayanan
et al. 2021 Table 1 (inputs from the authors' run script) and Korthikanti et al. 2022
Table 5 the work model misses by 4.5 % and 3.5 % on average, every row within 9 %
(README, "Compute model"; tests/engine/test_compute.py, test_step.py).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from . import experts as _experts
from . import fp8 as fp8_model
from .lora import adapter_elementwise_elements, adapter_gemms, base_weight_bytes, quantised_elements
from .memo import ByIdentity
from .params import ParamCount
from .scenario import Scenario, checkpointed_layers

DEFAULT_COMPUTE_EFFICIENCY = 0.55   # the constant model's figure (scenario.TrainingSpec)
SOFTWARE_STACKS = ("megatron", "pytorch_eager", "torch_compile")

# Maximum achievable dense BF16 matmul FLOP/s (MAMF: torch.matmul, best of a shape sweep,
# mean of 100 iterations): S. Bekman, *Machine Learning Engineering*, compute/accelerator,
# "Maximum Achievable Matmul FLOPS comparison table" (github.com/stas00/ml-engineering).
# SMs (CUs): NVIDIA A100 / H100 / H200 / Blackwell architecture whitepapers and datasheets,
# AMD CDNA 3 whitepaper (MI300X: 304 CUs).
_MAMF = "Bekman, ml-engineering MAMF table (BF16 torch.matmul)"
# A100: sustained figures of one benchmark instead of the best of a sweep. MAMF is the
# maximum over shapes of short runs (271.2 TFLOP/s); a layer's GEMMs are not all the
# luckiest shape and a training run holds the GPU at its sustained clocks. mli/
# transformers-benchmarks (README, "Micro-Benchmarking Summary", A100 80GB; micro_bench.
# ipynb times each statement for at least 3 s, torch.utils.benchmark blocked_autorange,
# NGC PyTorch 22.x) measures a square 8192 fp16 matmul at 230 TFLOP/s and an fp32
# element-wise multiply (``a * 1.2``, 8 bytes moved a FLOP) at 0.202 TFLOP/s, i.e.
# 1616 GB/s of the datasheet's 2039 GB/s: the share memory-bound kernels reach. Held
# against Korthikanti et al. 2022 Table 4 (one 22B layer, TP 8, measured 19.6 ms forward
# + backward) the layer comes out within 4 % (tests/engine/test_compute.py). The 40 GB
# part has the same SMs and clocks: the same GEMM figure and bandwidth share (assumed).
_MLI = ("mli/transformers-benchmarks README, A100 80GB: MatMul FP16 230 TFLOP/s, VectorMul "
        "0.202 TFLOP/s fp32 = 1616 of 2039 GB/s (runs of >= 3 s); 108 SMs")
A100_HBM_FRACTION = 1616 / 2039
# H100 SXM5 80GB: device-to-device copies (NVBench) at 2,903 of the datasheet's 3,350 GB/s,
# 86.7 % (AI @ Georgia Tech and Voltage Park, github.com/aigatech/vpbenchmarking README,
# "Memory Bandwidth - Single Node (8x H100)", CUDA 12.6, 2026), the share memory-bound
# kernels reach as the A100's 1616 of 2039 is (the same run's 8-GPU all-reduce, 479.7 GB/s
# bus bandwidth, is the NVLS figure of collectives.NVLS_ALLREDUCE_GAIN). H200 (HBM3e) is
# not measured: its datasheet rate stays.
H100_HBM_FRACTION = 2903 / 3350
_VP = "; HBM: aigatech/vpbenchmarking D2D 2903 of 3350 GB/s"
# H100 SXM5 80GB GEMMs: a sustained figure by the A100's rule, not the best of a sweep. The
# rule (what the A100's 230 is): a square 8192 x 8192 16-bit matmul through cuBLAS, run back
# to back for seconds (so the clocks are those a long run sustains under the power limit),
# from a published benchmark's results table. Hugging Face gpu-fryer (github.com/huggingface/
# gpu-fryer, README reference table added in commit c12f710, release 1.1.0, 2025-07-31, CUDA
# 12.9; src/main.rs): cuBLASLt BF16 GEMMs of 8192 x 8192 x 8192 (operands from random 32-bit
# integers) back to back for the test's duration (60 s by default, at least 10 s), averaged
# per second; "NVIDIA H100 80GB HBM3" ~730 TFLOP/s, 92 % of the 794.5 best-of-sweep MAMF. Its
# A100-SXM4-80GB row (added in 59ad16a, 2025-08-06) is ~270 (MAMF 271.2): with current software the A100 sustains its best-of-sweep rate and the
# H100 does not, the power-limited clocks Horace He describes ("Strangely, Matrix
# Multiplications on GPUs Run Faster When Given 'Predictable' Data", thonking.ai, 2024). The
# A100 keeps mli's 230 (2022 software, the era of its validation data). Caveat: this figure
# was chosen knowing that every held-out H100 row came out too fast at 794.5; the rule above
# was written down before the new errors were computed, and no held-out row set it.
# FP8: gpu-fryer's ~1530 is above the FP8 MAMF (1402.6), its E4M3 operands are random
# 32-bit integers, nearly all beyond E4M3's +-448 range, i.e. near-constant data that draws
# less power (its README: FP8 gives "likely less GPU power draw"); so FP8 keeps the MAMF
# table's FP8 / BF16 ratio for the part (H100 1402.6 / 794.5) on the sustained BF16 figure.
# H200 SXM: not in gpu-fryer's table; the H100's die, SMs, clocks and 700 W limit (Bekman:
# "H200 is the same"), so the H100's sustained BF16 figure and its own MAMF FP8 / BF16 ratio
# (1453.4 / 794.5).
H100_SUSTAINED_GEMM_FLOPS = 730e12
_FRYER = ("HF gpu-fryer README (c12f710, CUDA 12.9): H100 80GB HBM3 BF16 ~730 TFLOP/s, cuBLASLt "
          "8192^3 sustained >= 10 s (MAMF 794.5)")


@dataclass(frozen=True)
class GpuFigures:
    gemm_flops: float       # achievable dense 16-bit matmul FLOP/s, large shapes
    sms: int                # streaming multiprocessors (compute units): one tile each per wave
    source: str
    hbm_fraction: float = 1.0   # share of the datasheet HBM bandwidth memory-bound kernels reach
    # achievable dense FP8 (E4M3) matmul FLOP/s, large shapes; None: not measured
    # (fp8_gemm_flops scales the 16-bit figure by the FP8 / 16-bit peak ratio)
    fp8_gemm_flops: float | None = None


# FP8 MAMF (the same table and method as the 16-bit figures: torch float8_e4m3fn matmul
# through torch._scaled_mm, best shape, mean of 100 iterations): H100 SXM 1402.6 TFLOP/s
# (torch 2.7.0+cu126), H200 SXM 1453.4 (2.7.1+cu128), B200 SXM 3432.5 (2.7.1+cu128); of
# 1979 / 1979 / 4500 dense. MI300X has no FP8 row there.
_MAMF8 = "; FP8: " + _MAMF.replace("BF16 torch.matmul", "FP8 float8_e4m3fn matmul")


# B200 SXM (HGX / DGX B200, 1,000 W): no published sustained burn. Its die is GB200's, whose
# gpu-fryer row (below) sustains 1550 of its 1822.0 best-of-sweep MAMF, 85.1 %; the 1,000 W
# part is assumed to sustain no larger share of its own MAMF (1745.0): 1484.5 TFLOP/s. Held
# against OpenXLA's measured sm_100_B200 GEMM table (short runs, so an upper bound on a
# sustained rate; tests/data/xla_b200_gemm_bf16.json) the wave model now lies at or below the
# measured rate on training-size shapes where MAMF's 1745 ran 10-25 % above it, and B200 over
# H100 at the same shapes (1.77 measured on average) comes out 1.94 where it was 2.27
# (tests/engine/test_compute.py).
GB200_SUSTAINED_SHARE = 1550 / 1822.0
B200_SUSTAINED_GEMM_FLOPS = 1745.0e12 * GB200_SUSTAINED_SHARE
_B200 = (_MAMF + ": B200 SXM 1745.0 TFLOP/s x 1550 / 1822.0, GB200's sustained share of its "
         "MAMF (HF gpu-fryer README c12f710)")

GPU_FIGURES: dict[str, GpuFigures] = {
    "a100-sxm4-40gb": GpuFigures(230e12, 108, _MLI + " (80 GB part)", A100_HBM_FRACTION),
    "a100-sxm4-80gb": GpuFigures(230e12, 108, _MLI, A100_HBM_FRACTION),
    "h100-sxm5-80gb": GpuFigures(H100_SUSTAINED_GEMM_FLOPS, 132, _FRYER + "; 132 SMs" + _VP
                                 + _MAMF8 + ": H100 SXM 1402.6 x 730 / 794.5 (MAMF FP8/BF16 ratio)",
                                 H100_HBM_FRACTION, H100_SUSTAINED_GEMM_FLOPS * 1402.6 / 794.5),
    "h200-sxm-141gb": GpuFigures(H100_SUSTAINED_GEMM_FLOPS, 132, _FRYER + " (the H100's: 'H200 is the "
                                 "same', Bekman); 132 SMs" + _MAMF8 + ": H200 SXM 1453.4 x 730 / 794.5",
                                 1.0, H100_SUSTAINED_GEMM_FLOPS * 1453.4 / 794.5),
    "b200-sxm-180gb": GpuFigures(B200_SUSTAINED_GEMM_FLOPS, 148, _B200 + "; 148 SMs" + _MAMF8
                                 + ": B200 SXM 3432.5 x the same share (MAMF FP8/BF16 ratio)", 1.0,
                                 B200_SUSTAINED_GEMM_FLOPS * 3432.5 / 1745.0),
    "mi300x-192gb": GpuFigures(668.4e12, 304, _MAMF + ": MI300X 668.4 TFLOP/s (ROCm 6.3, TunableOp); 304 CUs"),
    "mi325x-256gb": GpuFigures(784.9e12, 304, _MAMF + ": MI325X 784.9 TFLOP/s; 304 CUs (CDNA 3 whitepaper)"),
}
# H800 and A800 are H100 SXM5 and A100 SXM4 with fewer NVLinks: the same SMs, clocks and
# HBM, hence the same GEMM figures, HBM share and FlashAttention generation.
GPU_FIGURES["h800-sxm5-80gb"] = GpuFigures(
    **{**GPU_FIGURES["h100-sxm5-80gb"].__dict__,
       "source": GPU_FIGURES["h100-sxm5-80gb"].source + " (H800: the H100's SMs and clocks)"})
# The Blackwell GPU of GB200 NVL72: the B200 die (148 SMs) at 1.2 kW. By the H100's rule
# (a sustained 8192^3 cuBLAS matmul from a published table), gpu-fryer's "GB200-NVL72
# 186GB HBM3e" row, ~1550 TFLOP/s BF16 (85 % of its 1822.0 best-of-sweep MAMF, the figure
# the shipped hardware catalog's row records); FP8 by the die's MAMF FP8 / BF16 ratio (B200
# SXM 3432.5 / 1745.0; gpu-fryer's FP8 figure is not used, as for the H100).
GPU_FIGURES["b200-gb200-186gb"] = GpuFigures(
    1550e12, 148, "HF gpu-fryer README (c12f710): GB200-NVL72 186GB HBM3e BF16 ~1550 TFLOP/s "
    "sustained (MAMF 1822.0); 148 SMs (the B200 die)" + _MAMF8 + ": x B200 SXM 3432.5 / 1745.0",
    1.0, 1550e12 * 3432.5 / 1745.0)
GPU_FIGURES["a800-sxm4-80gb"] = GpuFigures(
    **{**GPU_FIGURES["a100-sxm4-80gb"].__dict__,
       "source": GPU_FIGURES["a100-sxm4-80gb"].source + " (A800: the A100's SMs and clocks)"})

# Output tiles cuBLAS chooses from for large GEMMs (Matrix Multiplication Background, Sec. 2.3).
TILES = ((256, 128), (128, 256), (128, 128))

# FlashAttention-2 forward and backward throughput as a fraction of the dense 16-bit peak
# (Dao 2023, Sec. 4.1: on A100 "up to 73% of the theoretical max throughput in the forward
# pass, and up to 63% in the backward pass"; on H100, without Hopper-specific instructions,
# "up to 335 TFLOPs/s" of 989). Accelerators the paper did not run take the A100 figures
# scaled by their matmul efficiency over the A100's (an assumption, not a measurement; on
# the B200 it gives 1470 TFLOP/s forward, between FlashAttention-4's published best of 1613
# and cuDNN 9.13's at up to 1.3x below it: Zadouri et al. 2026, arXiv:2603.05451, abstract).
FLASH_FRACTION = {"a100": (0.73, 0.63), "h100": (335 / 989, 335 / 989)}
_FLASH_GEN = {"a100-sxm4-40gb": "a100", "a100-sxm4-80gb": "a100",
              "h100-sxm5-80gb": "h100", "h200-sxm-141gb": "h100",
              "a800-sxm4-80gb": "a100", "h800-sxm5-80gb": "h100"}

# Memory passes per layer and micro-batch, in reads plus writes of one tensor of the named
# size (a 1-byte dropout mask is half a pass of a 16-bit tensor). "hidden": b*s*h (divided
# by t with sequence parallelism); "ffn": b*s*f/t (each of gate and up for a gated MLP is
# one such tensor); "qk": the rotated q and k, b*s*(a + kv)*d/t; "scores": b*(a/t)*s*s
# (eager attention only). (forward, backward) each.
# megatron: Apex/TE fused LayerNorm/RMSNorm (one kernel: read x, write y; backward read x,
#   dy, write dx), bias_dropout_add_fused_train (read branch and residual, write the sum),
#   bias_gelu / bias_swiglu fused, fused rotary embedding, FusedScaleMaskSoftmax (read,
#   write), attention dropout a separate torch dropout (Megatron-LM megatron/core/fusions,
#   transformer/dot_product_attention.py).
# pytorch_eager: one kernel per op: torch layer_norm (one kernel); transformers'
#   LlamaRMSNorm (to fp32, pow, mean, multiply by rsqrt, to bf16, multiply by the weight:
#   18 passes forward, counted in fp32 bytes where it computes in fp32; backward 48, 44
#   with a frozen weight); the residual add (read two, write one; its backward the sum of
#   the two gradients at the fork); with hidden dropout CUDA's native_dropout before it
#   (read, write, a 1-byte mask: 2.5); SiLU then the product for SwiGLU (backward 9);
#   rotate_half rotary (two products, a negation, a cat, a sum: 10; backward the two
#   products, the negation, two slice_backward writes and two sums: 14); eager attention
#   scales, masks, upcasts, softmaxes in fp32 and casts back (14 each way), dropout 2.5.
#   The rmsnorm, swiglu, residual, rope and softmax figures are measured on transformers'
#   LlamaDecoderLayer (tests/data/eager_passes_llama.json, scripts/measure_eager_passes.py).
# torch_compile: TorchInductor fuses each chain of pointwise and reduction ops between two
#   GEMMs into one kernel that reads its inputs and writes its outputs once (Ansel et al.
#   2024, PyTorch 2, ASPLOS, Sec. 5): the residual add, dropout and following norm are one
#   region (read branch and residual, write residual and normed), the activation and the
#   rotary embedding one each, the softmax (with scale, mask, dropout) one.
# The backward of every gradient at a residual fork is accumulated by autograd (read two,
# write one: 3), except where the fused region writes it (torch_compile).
PASSES = {
    "megatron": dict(norm=(2, 3), rmsnorm=(2, 3), residual=(3, 5), gelu=(2, 3), swiglu=(3, 5),
                     rope=(2, 2), softmax=(2, 3), attn_dropout=(2.5, 2.5), hidden_mask=(0.5, 0.5)),
    "pytorch_eager": dict(norm=(2, 3), rmsnorm=(18, 48), rmsnorm_frozen=(18, 44), residual=(3, 3),
                          gelu=(2, 3), swiglu=(5, 9), rope=(10, 14), softmax=(14, 14),
                          attn_dropout=(2.5, 2.5), hidden_mask=(2.5, 2.5)),
    "torch_compile": dict(norm=(1, 1), rmsnorm=(1, 3), residual=(3, 3), gelu=(2, 3),
                          swiglu=(3, 5), rope=(2, 2), softmax=(2, 3), attn_dropout=(0.5, 0.5),
                          hidden_mask=(0.5, 0.5)),
}
# torch_compile's norm is fused into the residual region (read branch + residual, write
# residual + normed = 4 = residual 3 + norm 1); its backward reads the input, the rstd and
# both gradients again for dx and for the weight's gradient, a reduction of its own (6 =
# residual 3 + norm 3; TorchInductor's CPU kernels of transformers' LlamaDecoderLayer,
# tests/data/compiled_passes_llama.json); its attention dropout is in the softmax kernel
# (only the mask is extra).
# The output layer's softmax cross-entropy reads the logits for their maximum and exponent
# sum and writes the probabilities in fp32 (torch cross_entropy on upcast logits): 6
# passes of the 16-bit logits forward, 4 backward. Megatron casts the 16-bit logits to
# fp32 first (gpt_model.py: ``vocab_parallel_cross_entropy(output.float(), labels)``
# unless --fp16-lm-cross-entropy) and works in place on the copy (mpu/cross_entropy.py
# _VocabParallelCrossEntropy): cast (read 2 B, write 4), max (4), ``sub_`` (8), ``exp``
# (8), sum (4), ``div_`` (8) forward: 38 B a logit, 19 passes; backward ``mul_`` (8) and
# the cast's gradient back to 16 bits (read 4, write 2): 14 B, 7 passes.
LOSS_PASSES = {"megatron": (19, 7), "pytorch_eager": (6, 4), "torch_compile": (6, 4)}
# ALiBi on eager attention: the biases (a [b x heads, 1, s] tensor) are the ``input`` of the
# score GEMM, ``torch.baddbmm(alibi, q, k^T, beta=1)`` (Megatron-DeepSpeed, bigscience-
# workshop/Megatron-DeepSpeed megatron/model/transformer.py ParallelAttention.forward, the
# code BLOOM trained with; transformers' BloomAttention ``alibi.baddbmm``): the broadcast
# input is first copied into the [b x heads, s, s] result (one write of the scores) and
# the GEMM then reads it back as C (beta = 1; one read), where without biases it is an
# empty buffer (beta = 0). The biases need no gradient: nothing in backward. Under
# FlashAttention (``alibi_slopes``) the bias is added in the kernel: no pass.
ALIBI_SCORE_PASSES = 2


def software_stack(sc: Scenario) -> str:
    """``training.software_stack``, by default Megatron's fused kernels for the Megatron
    framework and eager PyTorch otherwise."""
    return _stack(sc.training)


def _stack(tr) -> str:
    if tr.software_stack:
        return tr.software_stack
    return "megatron" if tr.framework == "megatron" else "pytorch_eager"


def uses_work_model(sc: Scenario) -> bool:
    """True where the step's compute comes from the work (this module:
    ``training.compute_model`` "work", the default); False for the constant model:
    ``compute_model`` "constant", an explicit ``compute_efficiency``, fp32, or an
    accelerator without figures."""
    tr = sc.training
    return (tr.compute_model == "work" and tr.compute_efficiency is None
            and tr.precision != "fp32" and figures(sc.cluster.accelerator) is not None)


def figures(acc) -> GpuFigures | None:
    """The accelerator's GEMM figures: its own ``gemm_flops`` and ``sm_count`` where given
    (a measurement of the user's cluster; the preset's HBM share stays), else the table's
    for its preset, else None."""
    table = GPU_FIGURES.get(acc.preset)
    if acc.gemm_flops and acc.sm_count:
        return GpuFigures(acc.gemm_flops, acc.sm_count, "accelerator.gemm_flops (given)",
                          table.hbm_fraction if table else 1.0)
    return table


def fp8_gemm_flops(acc, g: GpuFigures) -> float:
    """Achievable dense FP8 matmul FLOP/s on ``acc``: the measured figure of ``g`` where
    there is one (given 16-bit figures of the user's own are scaled instead, as the part's
    FP8 rate is not theirs), else the 16-bit figure times the FP8 / 16-bit peak ratio
    (the same share of peak; an assumption where nothing is measured: MI300X, MI325X)."""
    if g.fp8_gemm_flops and not acc.gemm_flops:
        return g.fp8_gemm_flops
    return g.gemm_flops * acc.peak_flops_fp8 / acc.peak_flops_bf16


def dequant_seconds(m, lora, tensor_parallel: int, hbm_bytes_per_s: float,
                    compute_bytes: int = 2) -> tuple[float, float]:
    """Seconds of one block's dequantisation under QLoRA, ``(forward, backward)``, on one
    GPU (memory-bound: bytes moved over ``hbm_bytes_per_s``); ``(0, 0)`` without a
    quantised base. 4-bit: read the packed weights and constants, write ``compute_bytes``
    a weight, forward and backward; int8: backward only, 1 B read and 2 written for
    ``CB.to(dtype)`` and 2 + 2 for the in-place scaling by SCB (see the caller's note)."""
    if lora is None or not lora.quantised:
        return 0.0, 0.0
    wb = base_weight_bytes(m, lora)
    n_q = quantised_elements(m) / tensor_parallel
    if lora.base_dtype == "int8":
        return 0.0, n_q * (wb["weights"] + 3 * compute_bytes) / hbm_bytes_per_s
    per = n_q * (wb["weights"] + wb["constants"] + compute_bytes) / hbm_bytes_per_s
    return per, per


def sustained_hbm_bytes_per_s(acc) -> float:
    """HBM bandwidth memory-bound kernels reach on ``acc`` (bytes/s): the datasheet figure
    times the accelerator's measured share (``GpuFigures.hbm_fraction``; 1 without
    figures). Used for every memory-bound pass: layer kernels, gradient accumulation,
    the optimizer step."""
    g = figures(acc)
    return acc.hbm_bytes_per_s * (g.hbm_fraction if g else 1.0)


def wave_efficiency(m: int, n: int, sms: int, batch: int = 1) -> float:
    """Share of the SMs' tile slots used: tiles / (waves x SMs), the best of ``TILES``
    (Matrix Multiplication Background, Sec. 3.2: a GEMM runs in waves of one tile per SM;
    a last partial wave leaves SMs idle). A 1024x1024 output on 108 SMs: 32 tiles of
    256x128 (0.30) or 64 of 128x128 (0.59)."""
    best = 0.0
    for tm, tn in TILES:
        tiles = math.ceil(m / tm) * math.ceil(n / tn) * batch
        best = max(best, tiles / (math.ceil(tiles / sms) * sms))
    return best


# Fixed costs of one GEMM kernel beside its K-loop (the wave model above times only the
# K-loop's math). cuBLAS / CUTLASS GEMMs stream K in stages of 64 16-bit elements (cuBLAS
# kernel names such as sm90 ``..._tilesize128x256x64_...`` and sm80 ``..._128x256_..._
# stages_64x3_...``); CUTLASS's Hopper mainloop (include/cutlass/gemm/collective/
# sm90_mma_tma_gmma_ss_warpspecialized.hpp) waits on the first stage's TMA barrier before
# its first WGMMA, and the epilogue (include/cutlass/epilogue/collective/
# sm90_epilogue_tma_warpspecialized.hpp) writes the C tile after the last K stage.
# * Pipeline fill, each wave: the first K stage of the wave's tiles before their MMAs
#   start: the wave's distinct A row panels (tm x 64) and B column panels (64 x tn), read
#   from HBM at the sustained rate (tiles of one row or column share a panel through L2).
# * Epilogue drain, once: the last wave's C tile (tm x tn, 16-bit) written back at an SM's
#   share of HBM bandwidth (hbm / SMs); the epilogues of earlier waves overlap later
#   tiles' loads (the warp-specialized producer runs ahead).
# * Launch floor: what each kernel of a stream costs at least when short kernels run back to
#   back without a sync between them: 3.8 us a kernel (NVIDIA Technical Blog, A. Gray,
#   "Getting Started with CUDA Graphs", 2019, 20 short kernels launched in a stream); the
#   same figure bounds the list collectives' copy kernels (step.list_collective_copy_s).
# The sustained figures (GPU_FIGURES) are whole square 8192 GEMMs, so these costs come off
# them to leave the K-loop's rate (kloop_flops).
GEMM_K_STAGE = 64
GEMM_OUT_BYTES = 2
KERNEL_LAUNCH_S = 3.8e-6
# Split-K (cuBLAS's heuristics and CUTLASS's split-K / stream-K tile schedulers, include/
# cutlass/gemm/kernel/sm90_tile_scheduler_stream_k.hpp, for outputs of too few tiles to
# fill the SMs): K cut into up to 4 slices of at least 256, each slice's fp32 partial C
# written and read back once by the reduction.
SPLIT_K_MAX = 4
SPLIT_K_MIN_K = 256
SPLIT_K_PARTIAL_BYTES = 4


CALIBRATION_GEMM = 8192     # the square GEMM the sustained figures were measured on


def _fixed_s(m: int, n: int, k: int, tm: int, tn: int, sms: int, hbm_bytes_per_s: float,
             batch: int, elem_bytes: int) -> tuple[float, float]:
    """(wave efficiency, fixed seconds) of ``batch`` (m x k) by (k x n) GEMMs on ``tm x tn``
    output tiles, one tile per SM a wave: each wave's pipeline fill (the first K stage of
    its tiles: the distinct A row panels and B column panels of the wave, rows filled
    first, read from HBM at ``hbm_bytes_per_s``; tiles of one row or column share their
    panel through L2) plus one C-tile epilogue drain at the SM's share of HBM (the last
    wave's; earlier epilogues overlap later tiles). See the notes above ``GEMM_K_STAGE``."""
    tiles_m, tiles_n = math.ceil(m / tm), math.ceil(n / tn)
    tiles = tiles_m * tiles_n * batch
    waves = math.ceil(tiles / sms)
    stage_bytes = min(GEMM_K_STAGE, k) * elem_bytes

    def wave_fill_bytes(w: int) -> float:
        rows = math.ceil(w / tiles_n)                       # A panels (tm rows each)
        cols = min(tiles_n, w) * math.ceil(rows / tiles_m)  # B panels, per batch item spanned
        return (rows * tm + cols * tn) * stage_bytes

    full, rest = divmod(tiles, sms)
    fill_bytes = full * wave_fill_bytes(sms) + (wave_fill_bytes(rest) if rest else 0.0)
    drain_s = tm * tn * GEMM_OUT_BYTES / (hbm_bytes_per_s / sms)
    return tiles / (waves * sms), fill_bytes / hbm_bytes_per_s + drain_s


@functools.lru_cache(maxsize=256)
def kloop_flops(gemm_flops: float, sms: int, hbm_bytes_per_s: float) -> float:
    """FLOP/s of the K-loop alone: the sustained figure ``gemm_flops`` is a whole square
    ``CALIBRATION_GEMM`` cuBLAS GEMM (launch, fills and drain included: mli's A100 and
    gpu-fryer's H100 burns, ``GPU_FIGURES``), so its fixed costs come off its time:
    2 n^3 / (2 n^3 / gemm_flops - launch - fills - drain), the 256x128 tile (the figures'
    large-shape tile, Matrix Multiplication Background Sec. 2.3). A100, 8192^3 at 230
    TFLOP/s over 1616 GB/s: 19 waves of 256x128 tiles, 20.5 us of 4781, 231.0 TFLOP/s."""
    c = CALIBRATION_GEMM
    flops = 2.0 * c ** 3
    _, fixed = _fixed_s(c, c, c, 256, 128, sms, hbm_bytes_per_s, 1, 2)
    return flops / (flops / gemm_flops - KERNEL_LAUNCH_S - fixed)


def gemm_s(m: float, n: float, k: float, g: GpuFigures, hbm_bytes_per_s: float,
           batch: int = 1, elem_bytes: int = 2) -> float:
    """Seconds of ``batch`` GEMMs of (m x k) by (k x n) in one kernel: the launch floor
    (``KERNEL_LAUNCH_S``) plus the larger of the math, over the best output tile of
    ``TILES`` (the K-loop: 2 m n k FLOPs at :func:`kloop_flops` over the tile's wave
    efficiency, plus one K-stage pipeline fill per wave (its distinct panels over
    ``hbm_bytes_per_s``) and one C-tile epilogue at an SM's share of it; split-K where it is
    faster; see the notes above ``GEMM_K_STAGE``), and the
    bytes of A, B and C over HBM bandwidth. ``elem_bytes`` the operands' width (1 for FP8).
    A square ``CALIBRATION_GEMM`` at 16 bits comes out at ``g.gemm_flops`` times its wave
    efficiency (as the wave model alone gave it)."""
    m, n, k = (max(1, int(round(x))) for x in (m, n, k))
    flops = 2.0 * m * n * k * batch
    rate = kloop_flops(g.gemm_flops, g.sms, hbm_bytes_per_s)
    math_s = math.inf
    for tm, tn in TILES:
        for split in range(1, SPLIT_K_MAX + 1):
            if split > 1 and k / split < SPLIT_K_MIN_K:
                break
            # split-K: each of ``split`` tiles of an output block takes k / split of the K
            # loop, and writes its fp32 partial block that the reduction reads back
            eff, fixed = _fixed_s(m, n, math.ceil(k / split), tm, tn, g.sms, hbm_bytes_per_s,
                                  batch * split, elem_bytes)
            reduce_s = (2 * SPLIT_K_PARTIAL_BYTES * m * n * batch * split / hbm_bytes_per_s
                        if split > 1 else 0.0)
            math_s = min(math_s, flops / (rate * eff) + fixed + reduce_s)
    mem_s = elem_bytes * batch * (m * k + k * n + m * n) / hbm_bytes_per_s
    return KERNEL_LAUNCH_S + max(math_s, mem_s)


def layer_times(sc: Scenario, pc: ParamCount) -> dict:
    """Seconds of one layer's forward and backward (recomputation included) and of the
    output layer's forward + backward, for one micro-batch on one GPU, and their parts.

    Returns ``fwd_s``, ``bwd_s``, ``head_s`` and ``parts`` (``gemm``, ``attention``,
    ``memory_bound``: forward seconds each; ``head`` forward + backward;
    ``attention_bwd``: the attention core's backward). With context parallelism the rank
    computes its seq_len / cp tokens and a cp-th of the sequence's causal attention
    (:mod:`simulation.context_parallel`). Remembered per
    identity of the scenario's sections (``simulation.memo``): sweeps ask again and again.
    """
    out = _layer_times(sc.model, sc.training, sc.cluster.accelerator, pc)
    fp8 = sc.training.fp8
    if fp8 is None:
        return out
    w_step = out["parts"]["fp8_weight_cast_per_step"]
    if fp8_model.uses_torchao(sc.training):
        # torchao casts the weight in forward and again in backward, every micro-batch; with
        # FSDP2's float8 all-gather (param) each rank casts its own shard before the gather
        # (float8/fsdp_utils.py WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather)
        from .parallel import layout
        w_fwd = w_bwd = w_step / (layout(sc).shard_degree if fp8.param else 1)
    elif fp8_weights_cached(sc):
        # Transformer Engine's cached FP8 weight copy (simulation/fp8.py) is refreshed on
        # the first micro-batch of a step: its cast, spread over the step's micro-batches.
        from .parallel import layout
        w_fwd, w_bwd = w_step / max(layout(sc).grad_accumulation_steps, 1), 0.0
    else:
        # ZeRO-3 / FSDP: each gathered unit is cast in forward and again in backward
        # (TE re-quantizes the all-gathered weight for FSDP2, linear.py, issue #2681)
        w_fwd = w_bwd = w_step
    parts = dict(out["parts"], fp8_cast=out["parts"]["fp8_cast"] + w_fwd,
                 fp8_cast_bwd=out["parts"]["fp8_cast_bwd"] + w_bwd)
    return dict(out, fwd_s=out["fwd_s"] + w_fwd, bwd_s=out["bwd_s"] + w_bwd, parts=parts)


def fp8_weights_cached(sc: Scenario) -> bool:
    """Whether TE keeps each FP8 weight copy for the step (Megatron passes
    ``is_first_microbatch``; not under ZeRO-3/FSDP, whose units are gathered and freed:
    ``linear.py`` ``cache_name`` None for FSDP2). torchao never caches."""
    tr = sc.training
    return (tr.fp8 is not None and not fp8_model.uses_torchao(tr)
            and sc.strategy.zero_stage < 3)


def _fp8_casts(m, tr, acc, hbm, tok, h, a, kv, d, f, t, up_n, e_tok, experts):
    """Seconds of one layer's FP8 cast kernels for a micro-batch (memory-bound, at the
    sustained HBM rate ``hbm``), forward and backward, and of the weight casts of a step
    (``simulation.fp8.cast_bytes_per_element``).

    TE (Hopper layout): each GEMM input is cast forward in both layouts (row-wise for
    fprop, column-wise for wgrad; with sequence parallelism the local 1/t shard, before the
    FP8 all-gather), each output gradient backward in both (dgrad, wgrad); the weights
    (row-wise and the transpose for dgrad) once a step when cached, else each micro-batch;
    FP8 primary weights need only their transpose (1 B written from 1 read). Where the
    part's FP8 GEMMs take any layout (Blackwell) the per-tensor recipes cast to the row-wise
    layout alone and transpose nothing (:func:`simulation.fp8.te_layouts`). Delayed
    scaling adds the fused amax-history update after forward and after backward (read and
    write each fp32 history). torchao: the input cast row-wise forward and again
    column-wise backward, the output gradient in both layouts, at 5 B an element and
    layout eagerly, 3 B under torch.compile (Inductor fuses the cast into the kernel that
    makes its input, as :data:`PASSES` counts torch_compile's pointwise chains: the amax
    pass reads 2 B, the cast writes 1); the weight's casts, per pass, are the third value
    (the caller places them: :func:`layer_times`).
    """
    fp8 = tr.fp8
    torchao = fp8_model.uses_torchao(tr)
    sp = t if tr.sequence_parallel else 1
    # GEMM inputs (elements, forward) and output gradients (elements, backward)
    inputs = tok * h / sp + tok * a * d / t + e_tok * experts * h / sp + e_tok * experts * f / t
    grads = tok * (a + 2 * kv) * d / t + tok * h / sp + e_tok * experts * up_n + e_tok * experts * h / sp
    weights = (h * (a + 2 * kv) * d + a * d * h + experts * (h * up_n * t + f * h)) / t
    if torchao:
        fused = _stack(tr) == "torch_compile"
        one = fp8_model.cast_bytes_per_element(fp8.recipe, 1, True, fused=fused)
        fwd = inputs * one
        bwd = inputs * one + grads * fp8_model.cast_bytes_per_element(fp8.recipe, 2, True, fused=fused)
        return fwd / hbm, bwd / hbm, weights * fp8_model.cast_bytes_per_element(fp8.recipe, 1, True) / hbm
    lay = fp8_model.te_layouts(fp8.recipe, acc)
    cast = fp8_model.cast_bytes_per_element(fp8.recipe, lay, False)
    fwd = inputs * cast
    bwd = grads * cast
    if fp8.param:
        # the transpose of the FP8 primary weight (read 1, write 1 and its scales); none
        # where the GEMMs take the row-wise weight in any layout
        w_bytes = weights * (1 + 1 + fp8_model.block_scale_bytes(fp8.recipe, weight=True)) * (lay - 1)
    else:
        w_bytes = weights * cast
    hist = fp8.history_len
    if hist:
        state = fp8_model.gemms_per_layer(m) * (hist + 1) * fp8_model.FP32 * 2
        fwd += state * 3 / 5          # the 3 forward quantizers of each GEMM
        bwd += state * 2 / 5
    return fwd / hbm, bwd / hbm, w_bytes / hbm


def _layer_times_of(m, tr, acc, pc: ParamCount) -> dict:
    g = figures(acc)
    hbm = acc.hbm_bytes_per_s * g.hbm_fraction
    eb = 2
    fp8 = tr.fp8
    # FP8 (simulation/fp8.py): the projections' and MLP's GEMMs at the FP8 matmul rate,
    # 1-byte operands; attention and the output head stay 16-bit.
    g_lin = g if fp8 is None else GpuFigures(fp8_gemm_flops(acc, g), g.sms, g.source, g.hbm_fraction)
    lin_eb = 2 if fp8 is None else 1
    b, s, h, t = tr.sequences_per_micro_batch, tr.seq_len, m.hidden_size, tr.tensor_parallel
    cp = tr.context_parallel      # each CP rank computes its s / cp tokens (context_parallel.py)
    a = m.num_attention_heads or max(1, h // 128)
    kv = m.num_kv_heads or a
    d = m.head_dim or h / a          # head width; Gemma's 256 x 16 heads != hidden 3072
    f = m.ffn_hidden_size or 4 * h
    tok = b * s // cp
    experts, top_k = max(m.num_experts, 1), max(m.moe_top_k, 1)

    # GEMMs: (M, N, K, count); forward. Backward: dgrad (M, K, N) and wgrad (K, N, M).
    # Blocks with and without experts (first_dense_layers) are timed apart and weighed by
    # their number: the result is the mean layer.
    e_tok = tok * top_k / experts if experts > 1 else tok
    up_n = (2 if m.gated_mlp else 1) * ((m.expert_ffn_size if experts > 1 else f) or f) / t
    attn_g = attention_gemms(m, tok, t)
    moe_share = m.moe_layers / m.num_layers if experts > 1 and m.num_layers else 0.0
    local, routed = experts, False
    fe = (m.expert_ffn_size if experts > 1 else f) or f
    if experts > 1 and (tr.expert_parallel > 1 or tr.moe_capacity_factor is not None
                        or tr.expert_tp != t):
        # expert parallelism (simulation/experts.py): the rank's experts / EP experts each
        # take EP times the tokens, the busiest rank token_factor times the mean; with ETP
        # the tokens of the ETP ranks (all-gathered) and fe / ETP wide
        ep, et = tr.expert_parallel, tr.expert_tp
        local, routed = experts // ep, True
        e_tok = tok / t * et * top_k / experts * ep * _experts.token_factor(tr)
        up_n = (2 if m.gated_mlp else 1) * fe / et
    moe_g = mlp_gemms(m, tok, t, True)
    if routed:
        moe_g = [(e_tok, up_n, h, local), (e_tok, h, fe / et, local)] + moe_g[2:]
    mlp_sets = [(1.0 - moe_share, mlp_gemms(m, tok, t, False)), (moe_share, moe_g)]

    def fwd_of(gs):
        return sum(c * gemm_s(M, N, K, g_lin, hbm, 1, lin_eb) for M, N, K, c in gs)

    def bwd_of(gs):
        return sum(c * (gemm_s(M, K, N, g_lin, hbm, 1, lin_eb) + gemm_s(K, N, M, g_lin, hbm, 1, lin_eb)) for M, N, K, c in gs)

    def dgrad_of(gs):
        return sum(c * gemm_s(M, K, N, g_lin, hbm, 1, lin_eb) for M, N, K, c in gs)

    g_fwd = fwd_of(attn_g) + sum(w * fwd_of(gs) for w, gs in mlp_sets if w)
    lora = tr.lora
    if lora is None:
        g_bwd = bwd_of(attn_g) + sum(w * bwd_of(gs) for w, gs in mlp_sets if w)
    else:
        # LoRA: the base matrices are frozen, their backward is the data gradient alone (no
        # weight-gradient GEMM, Hu et al. 2021 Sec. 4.2); the adapters' small GEMMs
        # (simulation/lora.py adapter_gemms) run forward and with both gradients backward.
        g_bwd = dgrad_of(attn_g) + sum(w * dgrad_of(gs) for w, gs in mlp_sets if w)
        ad = adapter_gemms(m, lora, tok, t)
        g_fwd += sum(c * gemm_s(M, N, K, g, hbm) for M, N, K, c in ad)
        g_bwd += sum(c * (gemm_s(M, K, N, g, hbm) + gemm_s(K, N, M, g, hbm)) for M, N, K, c in ad)

    st = PASSES[_stack(tr)]
    hidden = tok * h / (t if tr.sequence_parallel else 1)
    # MLP activation elements per layer (mean over dense and expert blocks; the busiest
    # expert-parallel rank's routed tokens token_factor times the mean)
    ffn = (1.0 - moe_share) * tok * f / t + moe_share * tok * (
        top_k * fe * _experts.token_factor(tr) + m.shared_expert_ffn_size) / t
    heads_l = max(1, round(a / t))
    attn_drop = m.attention_dropout if m.attention_dropout is not None else m.dropout
    hid_drop = m.hidden_dropout if m.hidden_dropout is not None else m.dropout

    # Attention core
    if tr.flash_attention:
        gen = _FLASH_GEN.get(acc.preset)
        if gen:
            ff, fb = FLASH_FRACTION[gen]
        else:
            scale = (g.gemm_flops / acc.peak_flops_bf16) / (GPU_FIGURES["a100-sxm4-80gb"].gemm_flops / 312e12)
            ff, fb = FLASH_FRACTION["a100"][0] * scale, FLASH_FRACTION["a100"][1] * scale
        # QK^T over the q/k head width, PV over the value width (MLA: 192 and 128;
        # transformers pads V to the q/k width for FlashAttention-2, DeepseekV3Attention:
        # counted at its own width); causal half, or the sliding window's share; with CP
        # the load-balanced split gives each rank a cp-th of the causal work
        qk_d, v_d = m.qk_head_dim, m.value_head_dim
        causal = 0.5 * 2.0 * b * s * s * a * (qk_d + v_d) / t * window_share(m, s) / cp
        a_fwd = causal / (ff * acc.peak_flops_bf16)
        a_bwd = 2.5 * causal / (fb * acc.peak_flops_bf16)
    else:
        sc_el = b * heads_l * s * s
        bt = b * heads_l
        # eager attention computes every s x s score and masks (causal, and the sliding
        # window: transformers' create_sliding_window_causal_mask): no work saved
        qk_d, v_d = m.qk_head_dim, m.value_head_dim
        a_fwd = gemm_s(s, s, qk_d, g, hbm, bt) + gemm_s(s, v_d, s, g, hbm, bt)
        a_bwd = (gemm_s(s, qk_d, s, g, hbm, bt) + gemm_s(s, v_d, s, g, hbm, bt)
                 + gemm_s(s, s, v_d, g, hbm, bt) + gemm_s(s, qk_d, s, g, hbm, bt))
        sp_f, sp_b = st["softmax"]
        if attn_drop:
            sp_f, sp_b = sp_f + st["attn_dropout"][0], sp_b + st["attn_dropout"][1]
        if m.position_embedding == "alibi":
            sp_f += ALIBI_SCORE_PASSES
        a_fwd += sp_f * sc_el * eb / hbm
        a_bwd += sp_b * sc_el * eb / hbm

    # Memory-bound kernels: two norms, two residual points, the activation, rotary
    norm = st["rmsnorm" if m.norm == "rmsnorm" else "norm"]
    if lora is not None and "rmsnorm_frozen" in st and m.norm == "rmsnorm":
        norm = st["rmsnorm_frozen"]          # a frozen weight: no weight-gradient product
    res = st["residual"]
    act = st["swiglu" if m.gated_mlp else "gelu"]
    hf_extra = [0.0, 0.0]
    if _stack(tr) in ("pytorch_eager", "torch_compile") and tr.framework == "huggingface":
        # transformers' split projections: autograd sums x's gradients where q, k and v
        # read one input (two sums) and gate and up another (one), 3 passes of h each, in
        # eager and compiled graphs alike (the sums follow extern GEMMs); eager attention's
        # torch.matmul copies q, k, v and the output to contiguous (b, heads) batches,
        # forward and backward (2 passes each; measured: eager_passes_llama.json,
        # compiled_passes_llama.json)
        if not m.has_fused_projections:
            hf_extra[1] += 3 * (2 + (1 if m.gated_mlp else 0)) * hidden
        if not tr.flash_attention and _stack(tr) == "pytorch_eager":
            cp_w = tok * (2 * a * d + 2 * kv * d) / t
            hf_extra = [hf_extra[0] + 2 * cp_w, hf_extra[1] + 2 * cp_w]
        # Liger's kernels in transformers' modules: one RMSNorm kernel (LigerRMSNorm: read
        # x, write y; backward read x and dy, write dx) and one SwiGLU (LigerSiLUMulFunction:
        # read gate and up, write the product; backward read dy, gate, up, write two), as
        # Megatron's fused ones
        if tr.fused_norm and m.norm == "rmsnorm":
            norm = PASSES["megatron"]["rmsnorm"]
        if tr.fused_mlp_activation and m.gated_mlp:
            act = PASSES["megatron"]["swiglu"]
    mask = st["hidden_mask"] if hid_drop else (0, 0)
    mb = [2 * (norm[i] + res[i] + mask[i]) * hidden + act[i] * ffn + hf_extra[i] for i in (0, 1)]
    if m.position_embedding == "rope":
        # MLA rotates only the rope part: heads x qk_rope of q and one qk_rope of k
        qk = tok * (a + 1) * m.qk_rope_head_dim / t if m.uses_mla else tok * (a + kv) * d / t
        mb = [mb[i] + st["rope"][i] * qk for i in (0, 1)]
    if m.uses_mla:
        # the latent RMSNorms (kv_a_layernorm, q_a_layernorm) on every rank
        lat = tok * (m.kv_lora_rank + (m.q_lora_rank or 0))
        mb = [mb[i] + st["rmsnorm"][i] * lat for i in (0, 1)]
    if lora is not None:
        # the adapters' own element-wise kernels (simulation/lora.py): the sum with the
        # base's output, the scale, PEFT's casts, dropout; fp32 adapters under autocast
        # are PEFT's default with 16-bit training (as simulation/memory.py counts them)
        casts = lora.adapter_dtype in (None, "fp32") and tr.precision != "fp32"
        la = adapter_elementwise_elements(m, lora, tok, t, _stack(tr) == "torch_compile", casts)
        mb = [mb[0] + la[0], mb[1] + la[1]]
    mb_fwd, mb_bwd = (x * eb / hbm for x in mb)

    # QLoRA: a memory-bound dequantisation of each frozen matrix (bitsandbytes
    # autograd/_functions.py, 0.50.2.dev0). 4-bit (MatMul4Bit): the forward's gemm_4bit
    # and the backward's F.dequantize_4bit each read the packed weights and constants
    # and write 2 B a weight. int8 (MatMul8bitLt): the forward runs int8_scaled_mm on
    # the int8 weights (the activations quantised, not timed here), the backward makes
    # CB.to(dtype) (1 B read, 2 B written) and scales it in place by SCB (2 + 2 B).
    dq, dq_bwd = dequant_seconds(m, lora, t, hbm, eb)
    mb_fwd += dq
    mb_bwd += dq_bwd
    c_fwd = c_bwd = w_step = 0.0
    if fp8 is not None:
        c_fwd, c_bwd, w_step = _fp8_casts(m, tr, acc, hbm, tok, h, a, kv, d,
                                          fe * t / et if routed else fe, t, up_n, e_tok, local)
    fwd = g_fwd + a_fwd + mb_fwd + c_fwd
    # full: every checkpointed layer re-runs its forward before its backward; with
    # layer-selective recomputation only n of a stage's L layers do, and the step graph's
    # uniform layers each carry the mean n / L of a forward (recompute_fraction)
    extra = {"full": fwd * (recompute_fraction(tr, m) if tr.recompute == "full" else 0.0),
             "selective": selective_recompute_s(m, tr, a_fwd, tok, t, g, hbm), "none": 0.0,
             "selective_ops": op_sac_recompute_s(m, tok, a, kv, d, h,
                                                 fe * t / et if routed else fe, t,
                                                 local, e_tok, g_lin, hbm)
             + mb_fwd + c_fwd}[tr.recompute]
    bwd = g_bwd + a_bwd + mb_bwd + c_bwd + extra
    v = m.vocab_size or 0
    head = 0.0
    if v:
        hm = (tok, v / t, h)
        wgrad = gemm_s(h, v / t, tok, g, hbm) if lora is None else 0.0     # LoRA: frozen head
        head = (gemm_s(*hm, g, hbm) + gemm_s(tok, h, v / t, g, hbm) + wgrad
                + sum(LOSS_PASSES[_stack(tr)]) * tok * v / t * eb / hbm)
    parts = dict(gemm=g_fwd, attention=a_fwd, memory_bound=mb_fwd, memory_bound_bwd=mb_bwd,
                 head=head, attention_bwd=a_bwd,
                 dequant=dq, dequant_bwd=dq_bwd)
    if fp8 is not None:
        parts.update(fp8_cast=c_fwd, fp8_cast_bwd=c_bwd, fp8_weight_cast_per_step=w_step)
    if routed:                    # expert parallelism: the rank's expert GEMMs, fwd + bwd
        parts["expert_gemm"] = moe_share * sum(
            c * (gemm_s(M, N, K, g_lin, hbm, 1, lin_eb) + gemm_s(M, K, N, g_lin, hbm, 1, lin_eb)
                 + gemm_s(K, N, M, g_lin, hbm, 1, lin_eb)) for M, N, K, c in moe_g[:2])
    return dict(fwd_s=fwd, bwd_s=bwd, head_s=head, parts=parts)


_layer_times = ByIdentity(_layer_times_of)


def window_share(m, s: int) -> float:
    """Share of a causal s x s score matrix a layer computes, as the mean over layers:
    1 for full attention; with a sliding window of w keys (query i sees keys i-w+1..i,
    transformers ``sliding_window_overlay``: ``kv_idx > q_idx - sliding_window``;
    FlashAttention-2 ``window_size=(w-1, w-1)``) the pairs are sum_i min(i+1, w) =
    w(w+1)/2 + (s-w) w for s > w, over the causal s(s+1)/2, in the ``sliding_layers`` of
    ``num_layers``. Only kernels that skip masked blocks (FlashAttention) gain it."""
    n = m.sliding_layers
    w = m.sliding_window
    if not n or not w or s <= w:
        return 1.0
    pairs = w * (w + 1) / 2 + (s - w) * w
    share = pairs / (s * (s + 1) / 2)
    return (n * share + (m.num_layers - n)) / m.num_layers


def attention_gemms(m, tok: float, t: int) -> list:
    """(M, N, K, count) of one block's attention projections, forward, per GPU.

    Multi-head: the fused q/k/v GEMM (tok x (heads + 2 kv_heads) head_dim / t x h) and o.
    Multi-head latent attention: the down-projections q_a (h -> q_lora_rank) and kv_a
    (h -> kv_lora_rank + qk_rope) are whole on every tensor-parallel rank (DeepSeek-V3
    inference/model.py ``MLA``: ``wq_a`` and ``wkv_a`` are plain ``Linear``), the
    up-projections q_b / q_proj (-> heads x (nope + rope)) and kv_b (kv_lora_rank ->
    heads x (nope + v)) column-parallel, o (heads x v -> h) row-parallel."""
    h = m.hidden_size
    a = m.num_attention_heads or max(1, h // 128)
    if m.uses_mla:
        qk, vd = m.qk_head_dim, m.v_head_dim
        if m.q_lora_rank is None:
            q = [(tok, a * qk / t, h, 1)]
        else:
            q = [(tok, m.q_lora_rank, h, 1), (tok, a * qk / t, m.q_lora_rank, 1)]
        return q + [(tok, m.kv_lora_rank + m.qk_rope_head_dim, h, 1),
                    (tok, a * (m.qk_nope_head_dim + vd) / t, m.kv_lora_rank, 1),
                    (tok, h, a * vd / t, 1)]
    kv = m.num_kv_heads or a
    d = m.head_dim or h / a
    return [(tok, (a + 2 * kv) * d / t, h, 1), (tok, h, a * d / t, 1)]


def mlp_gemms(m, tok: float, t: int, moe: bool) -> list:
    """(M, N, K, count) of one block's MLP, forward, per GPU: the dense MLP of
    ffn_hidden_size (up, or gate and up in one, then down), or (``moe``) each routed
    expert's on its share of the tokens (tok x top_k / experts, an even spread) plus the
    shared experts' MLP on every token (``DeepseekV3MoE.shared_experts``)."""
    h = m.hidden_size
    n_up = 2 if m.gated_mlp else 1
    if not moe or m.num_experts <= 1:
        f = m.ffn_hidden_size or 4 * h
        return [(tok, n_up * f / t, h, 1), (tok, h, f / t, 1)]
    e = m.num_experts
    fe = m.expert_ffn_size
    e_tok = tok * max(m.moe_top_k, 1) / e
    out = [(e_tok, n_up * fe / t, h, e), (e_tok, h, fe / t, e)]
    fs = m.shared_expert_ffn_size
    if fs:
        out += [(tok, n_up * fs / t, h, 1), (tok, h, fs / t, 1)]
    return out


def recompute_fraction(tr, m) -> float:
    """Share of a pipeline stage's layers whose forward is re-run in backward under
    ``recompute: full``: 1, or n / L with ``recompute_layers`` / ``recompute_every``
    (:func:`simulation.scenario.checkpointed_layers`)."""
    layers = m.num_layers / tr.pipeline_parallel
    return checkpointed_layers(tr, layers) / layers if layers else 1.0


def op_sac_recompute_s(m, tok, a, kv, d, h, f, t, experts, e_tok, g, hbm) -> float:
    """Seconds of the matmuls torchtitan's op-level selective checkpointing reruns in the
    backward (``recompute: selective_ops``): of a block's ``aten.mm`` calls, counted in
    order, it saves the odd ones and recomputes the even ones (parallelize_llama.py
    ``_custom_policy`` at 9dec370: ``meta[mm_count_key] % 2 == 0`` is not saved). Llama's
    block calls wq, wk, wv, wo, then w1, w3 (SwiGLU) and w2: wk, wo and w3 rerun; a plain
    MLP (up, down) reruns wk, wo and down. The element-wise ops rerun too (the caller adds
    the memory-bound forward); SDPA is saved. GEMM shapes as in ``_layer_times_of``."""
    wk = gemm_s(tok, kv * d / t, h, g, hbm)
    wo = gemm_s(tok, h, a * d / t, g, hbm)
    if m.gated_mlp:
        mlp = experts * gemm_s(e_tok, f / t, h, g, hbm)        # w3, the up projection
    else:
        mlp = experts * gemm_s(e_tok, h, f / t, g, hbm)        # the down projection
    return wk + wo + mlp


def selective_recompute_s(m, tr, a_fwd: float, tok: float, t: int, g, hbm) -> float:
    """Seconds one layer re-runs in backward under Megatron's selective recomputation
    (``training.recompute_modules``, :data:`simulation.activations.RECOMPUTE_MODULES`):
    ``core_attn`` the attention core's forward ``a_fwd`` (the default); ``mla_up_proj`` the
    q and kv up-projection GEMMs of the ``tok`` tokens (q_lora_rank x heads x qk_head_dim
    and kv_lora_rank x heads x (qk_nope + v_head_dim), split over t), RoPE being
    element-wise and not timed; ``layernorm`` and ``moe_act`` re-run element-wise kernels,
    not timed either (their HBM traffic is small beside the layer's GEMMs)."""
    mods = tr.recompute_modules or ("core_attn",)
    out = a_fwd if "core_attn" in mods else 0.0
    if "mla_up_proj" in mods and m.uses_mla:
        heads = (m.num_attention_heads or 1) / t
        if m.q_lora_rank:
            out += gemm_s(tok, heads * m.qk_head_dim, m.q_lora_rank, g, hbm)
        out += gemm_s(tok, heads * (m.qk_head_dim - m.qk_rope_head_dim + m.v_head_dim),
                      m.kv_lora_rank, g, hbm)
    return out
