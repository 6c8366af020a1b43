"""The engine's published error model: one band per kind of scenario, read from
``simulation/data/error_model.json``.

The file is written by ``python -m simulation validate --write-bands`` from the validation
data of a checkout (:mod:`simulation.validation`) and only looked up here, so evaluating a
scenario stays a dictionary lookup. ``tests/engine/test_validate.py`` recomputes it and fails
when the recorded file no longer matches what the engine predicts.

Step time. For each kind (:func:`step_kind`) the validation set's errors
``e = predicted / measured - 1`` span ``[e_min, e_max]``; every measurement of that kind lay
in ``[predicted / (1 + e_max), predicted / (1 + e_min)]``, which is the band
(``time_band_s``) given to every prediction of the kind; where the kind has cases on the
scenario's GPU generation, the band of those cases alone (``by_generation``). It is the observed spread, not a
confidence interval: a lopsided band (all of a kind's cases too fast) says the engine is
biased there. A scenario outside what the kind's cases covered (GPU generation, strategy
kind, number of GPUs, parameters, compute model) gets the band with ``validated: false`` and the reasons;
a kind with no validated case gets the spread of all validated cases (on its GPU generation
where there are any).

Memory. The *tight* band of :mod:`simulation.fit` is the same model's memory part: per
memory kind, the larger of the error its terms were validated to (the prior,
:data:`simulation.fit.MEMORY_ERROR`) and the smallest error, as a fraction of the tier's
capacity, that explains each public report of a real run (an OOM below capacity, a run that
fit above it, a measured figure), at most :data:`simulation.fit.MAX_BAND`.
"""

from __future__ import annotations

import json
from pathlib import Path

from .compute import DEFAULT_COMPUTE_EFFICIENCY, uses_work_model
from .units import plural

MODEL_PATH = Path(__file__).parent / "data" / "error_model.json"

STEP_KIND_LABELS = {
    "tensor_pipeline": "DDP / tensor + pipeline",
    "sharded": "ZeRO-3 / FSDP",
    "offload": "offload",
    "recsys": "recommendation model",
}
POOLED = "any"


def step_kind(sc) -> str:
    """The kind of a scenario for the step-time error model (a key of
    :data:`STEP_KIND_LABELS`): a recommendation model; offload (of the optimizer, the
    parameters or the activations); sharded data parallel (ZeRO-3, FSDP); else tensor + pipeline with replicated
    (or ZeRO-1/2) data parallelism."""
    if sc.model is None or sc.recsys is not None:
        return "recsys"
    s = sc.strategy
    if "none" != s.offload_optimizer or "none" != s.offload_params or s.offload_activations != "none":
        return "offload"
    return "sharded" if s.zero_stage >= 3 else "tensor_pipeline"


def gpu_generation(sc) -> str:
    """``a100``, ``h100``, ... from the accelerator preset; ``custom`` for one typed in."""
    preset = sc.cluster.accelerator.preset
    return preset.split("-")[0] if preset else "custom"


def compute_setting(sc) -> str:
    """``work`` (the work compute model) or ``constant 0.55`` (the constant model at that
    fraction of peak): a band holds only for the compute setting its cases ran with."""
    if uses_work_model(sc):
        return "work"
    return f"constant {sc.training.compute_efficiency or DEFAULT_COMPUTE_EFFICIENCY:g}"


def _read() -> dict:
    return json.loads(MODEL_PATH.read_text(encoding="utf-8"))


_MODEL = _read()        # package data, read on import: evaluate() itself does no I/O


def load() -> dict:
    """The recorded error model (the JSON file as this process imported it)."""
    return _MODEL


def memory_band(kind: str) -> float:
    """Relative half-width of the *tight* band for memory kind ``kind`` (a fraction of the
    tier's capacity; see :mod:`simulation.fit`)."""
    return load()["memory"]["kinds"][kind]["band"]


def outside(domain: dict, facts: dict) -> list[str]:
    """Why a scenario with ``facts`` ({gpu_generation, strategy, num_gpus, num_params, compute})
    lies outside ``domain`` (what the validated cases covered); empty when inside."""
    out = []
    if facts["gpu_generation"] not in domain["gpu_generations"]:
        out.append(f"GPU {facts['gpu_generation'].upper()} (validated: "
                   f"{', '.join(g.upper() for g in domain['gpu_generations'])})")
    if facts["strategy"] not in domain["strategies"]:
        out.append(f"strategy {facts['strategy']} (validated: {', '.join(domain['strategies'])})")
    lo, hi = domain["num_gpus"]
    if not lo <= facts["num_gpus"] <= hi:
        out.append(f"{plural(facts['num_gpus'], 'GPU')} (validated: {lo:,}–{hi:,})")
    lo, hi = domain["num_params"]
    if not lo <= facts["num_params"] <= hi:
        out.append(f"{facts['num_params'] / 1e9:.3g}B parameters (validated: "
                   f"{lo / 1e9:.3g}B–{hi / 1e9:.3g}B)")
    if "compute" in domain and facts["compute"] not in domain["compute"]:
        out.append(f"compute model {facts['compute']} (validated: {', '.join(domain['compute'])})")
    return out


def step_band(sc, num_gpus: int, num_params: float, time_s: float) -> dict:
    """The error band of a predicted step time ``time_s`` (s), as the step report carries it:

    ``time_band_s`` [lo, hi] (s): where the kind's measured steps lay relative to their
    predictions, applied to ``time_s``; it need not hold ``time_s`` (lo > time_s when every
    case was measured slower: the engine is biased low for the kind, and what shows it must say
    so); ``band`` {kind, label, on, error_rel [lo, hi] (fractions
    of the prediction), cases (validated cases behind it), source}; ``validated`` (bool) and
    ``outside_validation`` (reasons, empty when validated).
    """
    model = load()["step_time"]
    kind = step_kind(sc)
    gen = gpu_generation(sc)
    # The kind's cases on this GPU generation where there are any (a band measured on one
    # generation says little about another: held against H100 runs the engine errs
    # otherwise than on A100); else the kind's cases on every generation.
    rec = model.get("by_generation", {}).get(kind, {}).get(gen) or model["kinds"].get(kind)
    facts = dict(gpu_generation=gen, strategy=sc.strategy.kind if sc.model else "recsys",
                 num_gpus=num_gpus, num_params=num_params, compute=compute_setting(sc))
    if rec is None:
        on_gen = model.get("by_generation", {}).get(POOLED, {}).get(gen)
        rec = on_gen or model["kinds"][POOLED]
        why = [f"no {STEP_KIND_LABELS[kind]} step time in the validation set; the band is the "
               f"spread of all {rec['cases']} validated cases"
               + (f" on {gen.upper()}" if on_gen else "")]
    else:
        why = outside(rec["domain"], facts)
    lo, hi = rec["band_rel"]
    return dict(
        time_band_s=[time_s * (1 + lo), time_s * (1 + hi)],
        band=dict(kind=rec["kind"], label=rec["label"], on=rec["on"], error_rel=[lo, hi],
                  cases=rec["cases"], source=rec["source"]),
        validated=not why, outside_validation=why)
