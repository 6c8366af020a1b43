"""The engine's version: stored with every run; a new version invalidates reused results."""

ENGINE_VERSION = "0.14.0"    # 0.14: strategies the frameworks cannot run refused (ZeRO-2/3 with a pipeline, FSDP optimizer-only or NVMe offload, NVMe below ZeRO-3), ZeRO-Infinity checkpoints staged and read where their states live, FSDP CPU offload at torch AdamW's rate, the optimizer-state offload intensity counts accumulation, NVMe wear note
# 0.12: whole bytes in reports, QLoRA's fp32 MLP tensors and fp32 head copy, torch AMP's autocast weight copies (measured on CPU with bitsandbytes and the profiler)
# 0.11: the HGX B200 at a sustained GEMM figure (GB200's share of MAMF), FP8 in any operand layout on Blackwell (no transposed FP8 copies for the per-tensor recipes)
# 0.10: eager and compiled element-wise passes measured on transformers' Llama layer, LoRA adapters' element-wise kernels, NeMo AutoModel's LinearLoRA, Liger's fused RMSNorm / SwiGLU
# 0.9: GEMM fixed per-kernel costs (launch, fills, epilogue, split-K), DeepSpeed 2021 list-collective launches, FSDP2 copy-out/copy-in, GQA K/V repeat, interleaved schedules of uneven virtual stages, node-limited MoE routing and the all-to-all SMs, PEFT fp32 residual stream
# 0.8: FP8, context and expert parallelism, uneven and DualPipe pipelines (every stage), NVLink domains, QLoRA, DPO, layer-selective recompute, MLA, shared experts, sliding windows
# 0.7: bytes-per-param table from the parts, DeepSpeed ZeRO-3 reuse distance and bucket copy, fp32 activations, MoE routing, NCCL SM contention, TP-comm overlap, NVLS, NVMe gradients
# 0.4: NCCL alpha-beta collectives, strided groups, ZeRO-3 fetch granularity per framework
# 0.3: activations as PyTorch saves them, loss and logits, recompute working set, whole-module gathers, per-stage memory, fit_state
