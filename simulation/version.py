"""The engine's version: stored with every run; a new version invalidates reused results."""

ENGINE_VERSION = "0.5.0"     # 0.5: compute from the work (training.compute_model "work"), step.compute in the report
# 0.4: NCCL alpha-beta collectives, strided groups, ZeRO-3 fetch granularity per framework
# 0.3: activations as PyTorch saves them, loss and logits, recompute working set, whole-module gathers, per-stage memory, fit_state
