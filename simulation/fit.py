"""The fit verdict a user reads: fits, tight, or does not fit, from one error model.

An estimate is a number with an error. ``fit_state`` compares each tier's peak with its
capacity inside the error band of the estimate:

* ``fits``: the peak is below ``capacity x (1 - band)``;
* ``tight``: within ``capacity x (1 +- band)``: on real hardware it may or may not run;
* ``does_not_fit``: above ``capacity x (1 + band)``.

The band is the memory part of the engine's one published error model
(:mod:`simulation.errormodel`, ``simulation/data/error_model.json``, written by
``python -m simulation validate --write-bands``): per kind of scenario, the larger of the
prior below (:data:`MEMORY_ERROR`, fixed before the reference cases were run) and the
smallest error, as a fraction of the capacity, that explains each public report of a real
run of that kind, never wider than 10 % of the capacity (issue #12). The priors come from
what the terms were validated against:

* model states (parameters, gradients, master weights, optimizer states) are exact counts
  of what the framework allocates (ZeRO Table 1, DeepSpeed's estimator, Megatron's
  distributed-optimizer table): 0 %;
* activations are held to PyTorch's measured saved tensors within +-5 % per layer
  (``tests/engine/test_activations_measured.py``): 5 %;
* what the caching allocator reserves beyond the tensors (fragmentation) depends on the
  allocation order: 3 % more for ZeRO-3 / FSDP, whose all-gather / free churn of
  differently sized units fragments more than persistent DDP buckets (FSDP1 also
  ``record_stream``\\ s unsharded gradients, delaying reuse), and 5 % more with offload or
  a pipeline, whose pinned staging and in-flight micro batches the engine counts least
  exactly.
"""

from __future__ import annotations

from . import errormodel

FIT_STATES = ("fits", "tight", "does_not_fit")
MAX_BAND = 0.10

# Prior relative error of the per-GPU / per-node memory estimate, by kind of scenario.
MEMORY_ERROR = {
    "replicated": 0.05,      # DDP, ZeRO-1/2: exact states + measured activations
    "sharded": 0.08,         # ZeRO-3 / FSDP: + allocator churn of gathered units
    "offload_or_pipeline": 0.10,
}


def scenario_kind(zero_stage: int, offloaded: bool, pipeline_parallel: int) -> str:
    """The error model's kind of a scenario (a key of :data:`MEMORY_ERROR`)."""
    if offloaded or pipeline_parallel > 1:
        return "offload_or_pipeline"
    return "sharded" if zero_stage >= 3 else "replicated"


def memory_band(kind: str) -> float:
    """Relative half-width of the tight band for ``kind`` (at most :data:`MAX_BAND`), from
    the recorded error model."""
    return min(errormodel.memory_band(kind), MAX_BAND)


def tier_state(total_bytes: float, capacity_bytes: float, band: float) -> str:
    """``fits`` | ``tight`` | ``does_not_fit`` for one tier (bytes; ``band`` a fraction)."""
    if total_bytes <= capacity_bytes * (1 - band):
        return "fits"
    if total_bytes <= capacity_bytes * (1 + band):
        return "tight"
    return "does_not_fit"


def fit_state(states: list[str]) -> str:
    """The scenario's state: its worst tier's."""
    return max(states, key=FIT_STATES.index) if states else "fits"
