"""The engine held against published step times it was not tuned on (issue 13: "aim for
under 8 % mean error there"): Megatron-Core's H100 weak-scaling table, torchtitan's
Llama 3.1 8B H100 benchmark, NeMo AutoModel's DGX-H100 BF16 rows (FSDP2: Llama 3.1 70B
pre-training with CP 2, LoRA of Llama 3.1 8B / 3.3 70B and Qwen2.5 7B / 32B),
Megatron-Bridge's Llama 3 8B FP8 rows on B200 / GB200 and its DGX-H100 FP8 rows of Llama 3
8B / 70B and Llama 3.1 405B (tests/data/reference/megatron_core_h100_2024.json,
torchtitan_llama3_h100_2024.json, nemo_h100_bf16_2026.json, megatron_bridge_blackwell_2025.json,
megatron_bridge_h100_fp8_2025.json; the last two in test_heldout_blackwell.py and
test_heldout_h100_fp8.py) and BLOOM 176B's logged step on 384 A100s (Megatron-DeepSpeed,
bloom_176b_2022.json; test_alibi.py). No engine figure was set from these rows; the H100's
sustained GEMM rate (simulation/compute.py, gpu-fryer's 730 TFLOP/s) was chosen by a rule
written down beforehand (the A100's: a square 8192 16-bit cuBLAS matmul held for seconds), but
in the knowledge that every H100 row came out too fast at the best-of-sweep 794.5.

The conversions are checked by hand; the error targets are strict xfails that say the
current figure and its causes, so a fix that reaches them turns them into failures to
be promoted to plain tests.
"""

import json

import pytest

from simulation import evaluate_dict
from tests.refdata import cases

HELD_OUT = ("megatron_core_h100_2024", "torchtitan_llama3_h100_2024", "nemo_h100_bf16_2026",
            "megatron_bridge_blackwell_2025", "megatron_bridge_h100_fp8_2025", "bloom_176b_2022")


def errors(name: str) -> dict:
    return {c["id"]: evaluate_dict(c["scenario"], detail=False)["step"]["time_s"]
            / c["expected_step_time_s"] - 1 for c in cases(name)}


def mean_abs_error(name: str) -> float:
    e = errors(name)
    return sum(map(abs, e.values())) / len(e)


def test_megatron_core_conversion_by_hand():
    # 1.7B row: B=192, s=4096, L=24, h=2048, f=4h, V=131072 (README), 48 GPUs at 408.8
    # TFLOP/s. Megatron's num_floating_point_operations (r0.8.0), no GQA, no SwiGLU:
    # F = 12 B s L h^2 ((1 + 1 + s/h) + f/h + V/(2 L h))
    #   = 12 x 192 x 4096 x 24 x 2048^2 x (4 + 4 + 131072 / 98304) = 8.8672e15 FLOP
    f = 12 * 192 * 4096 * 24 * 2048**2 * (4 + 4 + 131072 / 98304)
    assert f == pytest.approx(8.8672e15, rel=1e-4)
    (c,) = cases("megatron_core_h100_2024", "mcore_h100_1p7B")
    assert c["expected_step_time_s"] == pytest.approx(f / (48 * 408.8e12))     # 0.4519 s
    # the printed MFU is TFLOP/s over the dense BF16 peak (989): 408.8 / 989 = 41 %
    for c in cases("megatron_core_h100_2024"):
        assert c["measured"]["value"] / 989 == pytest.approx(c["measured"]["mfu"], abs=0.006)


def test_torchtitan_conversion_by_hand():
    # TPS/GPU = local batch x seq_len / step: 2 x 8192 / 5762 = 2.8435 s (Table 1, FSDP)
    (c,) = cases("torchtitan_llama3_h100_2024", "titan_8b_8gpu_fsdp")[:1]
    assert c["expected_step_time_s"] == pytest.approx(2 * 8192 / 5762)
    assert c["scenario"]["training"]["micro_batch_size"] * c["scenario"]["training"]["seq_len"] == 2 * 8192


@pytest.mark.xfail(strict=True, reason=(
    "mean |error| 10.8 % (mean -5.8 %), -22 % (1.7B) to +22 % (32B), with the H100's GEMMs at the "
    "sustained 730 TFLOP/s of Hugging Face gpu-fryer's 8192^3 cuBLAS burn (15.5 % at the "
    "best-of-sweep 794.5; chosen by the A100's rule, knowing the rows were fast: "
    "simulation/compute.py), --tp-comm-overlap (each TP collective beside its compute, the SMs "
    "it holds slowing it), the distributed optimizer's fp32 reduce-scatter and the H100's "
    "measured HBM share (2903 of 3350 GB/s). Causes left: the 1.7B and 7.1B rows are 21-22 % too "
    "fast, and not by their GEMM shapes: XLA's measured sm_90 table runs shapes of theirs "
    "(every dimension >= 2048) at 0.94-1.0 of its fastest, as the wave model does "
    "(test_compute.py), though the source puts their lower MFU down to smaller GEMMs; cause not "
    "identified. The unstated micro-batch (1 "
    "assumed) decides the 32B row's exposed data-parallel reduce-scatter (16 GB fp32 over one "
    "NIC a GPU) and the pipeline bubble of the PP rows (-2..-8 % now)"))
def test_megatron_core_h100_within_8_percent_on_average():
    assert mean_abs_error("megatron_core_h100_2024") < 0.08


@pytest.mark.xfail(strict=True, reason=(
    "every row 20-28 % too fast (mean |error| 24.3 %; 26.3 % before the eager and compiled passes were measured, "
    "tests/data/eager_passes_llama.json, compiled_passes_llama.json; 29.0 % before FSDP2's exposed copy-out / "
    "copy-in passes, strategy.fsdp_version 2, test_fsdp2.py, and the materialised GQA K/V "
    "repeat, training.repeat_kv, test_repeat_kv.py), with the "
    "H100's GEMMs at the sustained 730 TFLOP/s (gpu-fryer), torchtitan's op-level selective "
    "checkpointing (training.recompute 'selective_ops') and fp32 gradient reduction set from its "
    "source (HBM per GPU then within 7 % of the benchmark's, test_op_sac.py). Cause left: the "
    "benchmark's H100s are 96 GB HBM2e parts at a 500 W power limit whose peak lies 'between SXM "
    "and NVL' (835-989 TFLOP/s) by the benchmark's own footnote, unknown; the engine runs them at "
    "the 700 W part's sustained rate. That alone does not close it: the compile rows are "
    "26-28 % fast and the eager ones 20-23 % (the engine's eager - compile gap is now larger than "
    "the measured one, test below), so most of the shortfall is in what both stacks "
    "share, and even GEMMs at the NVL's share (gemm_flops 730e12 x 835 / 989 = 616e12, sm_count 132) "
    "leave every row -18..-24 % (engine run, before the FSDP2 and K/V repeat terms); FlashAttention-2's H100 rate is not it either (FlashAttention-3 paper, H100 SXM5, "
    "head dim 128, seq 8k: 370 TFLOP/s forward, 318 backward, against the engine's 335 both ways)"))
def test_torchtitan_h100_within_8_percent_on_average():
    assert mean_abs_error("torchtitan_llama3_h100_2024") < 0.08


def test_torch_compile_is_faster_than_eager_as_measured():
    # what is right already: Tables 1 and 3 measure torch.compile at 16 % more tokens/s than eager;
    # the engine orders them the same way (fused element-wise passes, simulation.compute)
    e = {c["id"]: evaluate_dict(c["scenario"], detail=False)["step"]["time_s"]
         for c in cases("torchtitan_llama3_h100_2024")}
    m = {c["id"]: c["expected_step_time_s"] for c in cases("torchtitan_llama3_h100_2024")}
    for n in ("8gpu", "128gpu"):
        eager, comp = f"titan_8b_{n}_fsdp", f"titan_8b_{n}_fsdp_compile"
        assert m[comp] < m[eager] and e[comp] < e[eager]


@pytest.mark.xfail(strict=True, reason="held-out mean |error| 12.4 % over 33 rows (Megatron-Core "
                                       "H100 10.7 %, torchtitan H100 24.3 %, NeMo AutoModel H100 8.2 %, "
                                       "Megatron-Bridge B200 / GB200 FP8 21.2 %, Megatron-Bridge H100 FP8 "
                                       "7.9 %, BLOOM 176B on A100 11.5 %); see the tests above, below and in "
                                       "test_heldout_blackwell.py, test_heldout_h100_fp8.py and test_alibi.py")
def test_held_out_mean_error_under_8_percent():
    es = [v for name in HELD_OUT for v in errors(name).values()]
    assert sum(map(abs, es)) / len(es) < 0.08


@pytest.mark.xfail(strict=True, reason=(
    "the engine's eager - compile difference is 0.456 s on 8 and 128 GPUs against the measured "
    "0.386 / 0.408 s (+18 / +12 %): the eager passes are now measured on transformers' "
    "LlamaDecoderLayer (tests/data/eager_passes_llama.json: RMSNorm 18 / 48, SwiGLU 5 / 9, "
    "rotary 10 / 14, the split projections' gradient sums), so either TorchInductor's fused "
    "regions move more bytes than the engine counts (measured on the CPU code generator: "
    "tests/data/compiled_passes_llama.json; its attention terms, a strict xfail in "
    "test_eager_passes.py, are not taken), or torchtitan's eager modules fewer than transformers'; within 10 % "
    "before, with the eager backward counted low (RMSNorm 30)"))
def test_eager_minus_compile_gap_as_measured():
    # The step-time difference of eager and torch.compile (Tables 1 and 3: 2 x 8192 / 5762 -
    # 2 x 8192 / 6667 = 0.386 s on 8 GPUs) is the element-wise / memory-bound work
    # TorchInductor fuses; the engine's difference (simulation.compute PASSES, pytorch_eager
    # vs torch_compile) should be within 10 % of it on 8 and 128 GPUs.
    e = {c["id"]: evaluate_dict(c["scenario"], detail=False)["step"]["time_s"]
         for c in cases("torchtitan_llama3_h100_2024")}
    m = {c["id"]: c["expected_step_time_s"] for c in cases("torchtitan_llama3_h100_2024")}
    for n in ("8gpu", "128gpu"):
        eager, comp = f"titan_8b_{n}_fsdp", f"titan_8b_{n}_fsdp_compile"
        assert e[eager] - e[comp] == pytest.approx(m[eager] - m[comp], rel=0.10)


def test_nemo_automodel_conversion_by_hand():
    # 70B pre-training row: GBS 128 x seq 8192 / (866.77 tokens/s/GPU x 64 GPUs) = 18.90 s, the
    # table's own "Time per Global Step (s)"; every row's conversion agrees with its printed step
    (c,) = cases("nemo_h100_bf16_2026", "am_llama31_70b_pretrain_64gpu")
    assert c["expected_step_time_s"] == pytest.approx(128 * 8192 / (866.77 * 64))       # 18.903 s
    for c in cases("nemo_h100_bf16_2026"):
        row = c["inputs"]["table_row"]
        assert c["expected_step_time_s"] == pytest.approx(
            row["gbs"] * row["seq_len"] / (row["tokens_per_s_per_gpu"] * row["gpus"]))
        assert c["expected_step_time_s"] == pytest.approx(row["time_per_global_step_s"], rel=1e-3)
        t = c["scenario"]["training"]
        assert (t["global_batch_size"], t["seq_len"], t["micro_batch_size"]) == (
            row["gbs"], row["seq_len"], row["mbs"])
        assert t.get("tensor_parallel", 1) == row["tp"] and t.get("context_parallel", 1) == row["cp"]


def test_nemo_automodel_single_gpu_rows_within_8_percent():
    # LoRA of Llama 3.1 8B and Qwen2.5 7B on one H100 (no communication of any kind) come out
    # within 8 % of the measured 10.51 s and 9.29 s (-1.9 %, -5.1 % now) as the stack ran them
    # (the cases' edit: transformers' modules with Liger's RMSNorm and SwiGLU, AutoModel's
    # LinearLoRA and its element-wise kernels, no FSDP). The multi-GPU rows miss (below).
    e = errors("nemo_h100_bf16_2026")
    for k in ("am_llama31_8b_lora_1gpu", "am_qwen25_7b_lora_1gpu"):
        assert abs(e[k]) < 0.08, k


def test_nemo_automodel_lora_1gpu_rows_fit_one_h100_as_they_ran():
    # Both ran on one 80 GB H100 (micro-batch 2 x 4096, no recomputation). As the stack ran
    # them (the cases' "edit": no FSDP at world size 1, AutoModel's LinearLoRA, Liger's
    # RMSNorm and SwiGLU) they fit or are tight; as PEFT under FSDP2 they would not.
    for k in ("am_llama31_8b_lora_1gpu", "am_qwen25_7b_lora_1gpu"):
        (c,) = cases("nemo_h100_bf16_2026", k)
        assert evaluate_dict(c["scenario"])["fit_state"] in ("fits", "tight"), k
        peft = json.loads(json.dumps(c["scenario"]))
        for key in ("fused_norm", "fused_mlp_activation", "dtypes"):
            peft["training"].pop(key)
        peft["training"]["lora"].pop("implementation")
        peft["strategy"] = {"kind": "fsdp_full_shard", "fsdp_version": 2}
        assert evaluate_dict(peft)["fit_state"] == "does_not_fit", k


@pytest.mark.xfail(strict=True, reason=(
    "mean |error| 8.2 % (mean -8.2 %): -1.9 % and -5.1 % for LoRA 8B / 7B on 1 GPU (no "
    "communication, no FSDP at world size 1, Liger kernels), -6.8 % 70B pre-training (FSDP2, CP 2, "
    "64 GPUs, torch.compile), -11.6 % / "
    "-18.8 % LoRA Llama 70B with TP 2 (async TP as tp_comm_overlap) and -3.5 % / -9.9 % LoRA Qwen "
    "32B with TP 2, FSDP2 on 8 / 16 GPUs (the adapters' element-wise kernels counted). Every "
    "multi-GPU row runs torch.compile, and with eager passes instead they would come out +1.7, "
    "-1.3, -9.5, +15.6, +7.8 % (the compile saving the engine takes is the largest single "
    "lever); the 16-GPU rows, "
    "whose FSDP group crosses the network, are 6-7 points faster than the 8-GPU ones: see the "
    "per-micro-batch test below"))
def test_nemo_automodel_h100_within_8_percent_on_average():
    assert mean_abs_error("nemo_h100_bf16_2026") < 0.08


@pytest.mark.parametrize("model", ["llama33_70b", "qwen25_32b"])
@pytest.mark.xfail(strict=True, reason=(
    "measured: a 2-node LoRA row runs a micro-batch 11 % (Llama 3.3 70B: 8.32 / 2 = 4.16 s against "
    "15.00 / 4 = 3.75 s) and 9 % (Qwen2.5 32B: 3.95 / 2 = 1.98 s against 7.28 / 4 = 1.82 s) slower "
    "than the 1-node row (FSDP2 over 8 ranks on 2 nodes: the frozen base's all-gathers on the "
    "NICs); the engine +1.8 % and +1.4 %, hiding the cross-node all-gathers behind compute"))
def test_nemo_automodel_lora_two_node_slowdown_as_measured(model):
    per_mb = {}
    for n in (8, 16):
        (c,) = cases("nemo_h100_bf16_2026", f"am_{model}_lora_{n}gpu")
        s = evaluate_dict(c["scenario"], detail=False)["step"]
        per_mb[n] = (s["time_s"] / s["micro_batches"],
                     c["expected_step_time_s"] / c["inputs"]["table_row"]["ga"])
    assert per_mb[16][0] / per_mb[8][0] == pytest.approx(per_mb[16][1] / per_mb[8][1], rel=0.05)
