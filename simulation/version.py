"""The engine's version: stored with every run; a new version invalidates reused results."""

ENGINE_VERSION = "0.6.0"     # 0.6: work compute model by default, CPU-Adam cores, shared NVMe drives, DLRM kernels, error bands
# 0.4: NCCL alpha-beta collectives, strided groups, ZeRO-3 fetch granularity per framework
# 0.3: activations as PyTorch saves them, loss and logits, recompute working set, whole-module gathers, per-stage memory, fit_state
