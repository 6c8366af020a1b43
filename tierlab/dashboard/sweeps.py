"""Sweeps: one base scenario, one or two parameters over a grid, run in chunks by Celery.

A sweep is split into chunks, one Celery task each: about ``SWEEP_CHUNKS_PER_WORKER``
chunks for each of the ``SWEEP_WORKERS`` worker processes, fewer points per chunk where its
points would take long (:func:`chunk_size`), or ``SWEEP_CHUNK_POINTS`` points when that is
set. A running chunk adds the points it evaluated to its ``done`` count and those that
failed to ``failed`` (``F()``; the first failure's index and error beside them) and checks
for a cancel at most every ``PROGRESS_EVERY_S`` seconds, so progress moves without a
database write per point; when it ends it writes its results and, holding the sweep's row
(``select_for_update``), settles the sweep once no chunk is left. Cancelling stops queued
chunks at once and running ones within ``PROGRESS_EVERY_S`` (and the point in hand). Every
point ends as a result: evaluated (``done``: a report, fitting or not, see
``simulation.sweep``), failed (the engine refused its scenario, ``valid`` false; its
evaluation raised; or its chunk failed, with the chunk's reason), or cancelled; a sweep
whose every point failed is failed; a chunk whose worker died is failed by the read-time
check, so no sweep stays running forever.
"""

from __future__ import annotations

import itertools
import logging
import math
import re
import time
import uuid

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.db.models import F, Sum
from django.utils import timezone

import simulation
from simulation import ScenarioError
from simulation import sweep as engine_sweep
from simulation.units import plural
from tierlab import jobs
from tierlab.catalog.labels import axis_value_labels
from tierlab.catalog.lookups import catalog_lookups
from tierlab.dashboard.comparisons import InputError, owned_for
from tierlab.dashboard.models import Sweep, SweepChunk
from tierlab.dashboard.table import flatten
from tierlab.scenarios import services
from tierlab.scenarios.models import Scenario

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 0.5         # a running chunk writes its progress and checks for a cancel this often
# A chunk aims to end within this share of the task's soft time limit, by the engine's cost
# bound of its points: work units are microseconds on the development machine, and on a
# loaded host a 7B point of ~1,000 units took 2 ms of CPU and 6 ms of wall time
# (bench/bench_api.py's sweep phase), so a tenth leaves room.
TIME_LIMIT_SHARE = 0.1
COST_SAMPLE_POINTS = 32        # grid points whose cost bound estimates a point's work
MIN_CHUNK_WORK_UNITS = 100_000  # ~0.1 s of engine time: less is not worth a chunk of its own

# What the sweep form offers: (path, label, unit or choices hint).
PARAMETERS: tuple[tuple[str, str, str], ...] = (
    ("cluster.num_nodes", "Number of nodes", "nodes"),
    ("cluster.gpus_per_node", "GPUs per node", "GPUs"),
    ("cluster.node", "Node template", "catalog slug, e.g. dgx-h100"),
    ("model.preset", "Model", "catalog slug, e.g. llama2-13b"),
    ("training.micro_batch_size", "Micro batch size", "sequences per GPU"),
    ("training.global_batch_size", "Global batch size", "sequences per step"),
    ("training.seq_len", "Sequence length", "tokens"),
    ("training.tensor_parallel", "Tensor-parallel degree", "GPUs"),
    ("training.pipeline_parallel", "Pipeline-parallel degree", "stages"),
    ("training.expert_parallel", "Expert-parallel degree (MoE)", "GPUs"),
    ("training.context_parallel", "Context-parallel degree", "ranks per sequence"),
    ("training.pipeline_schedule", "Pipeline schedule", "1f1b, dualpipe"),
    ("training.fp8.recipe", "FP8 recipe", "delayed, tensorwise, blockwise, mxfp8 (Transformer Engine); "
                                          "tensorwise, rowwise (torchao)"),
    ("training.lora.rank", "LoRA rank", "r"),
    ("training.lora.base_dtype", "LoRA base storage", "bf16, fp16, nf4, fp4, int8"),
    ("training.recompute", "Activation recomputation", "none, selective, full, selective_ops"),
    ("training.precision", "Precision", "bf16, fp16, fp32"),
    ("training.optimizer", "Optimizer", "adam, adamw, adam_8bit, sgd_momentum, adafactor, paged_adamw, paged_adamw_8bit"),
    ("strategy.kind", "Strategy", "ddp, zero1, zero2, zero3, fsdp_full_shard, fsdp_hybrid_shard, "
                                  "zero_offload, zero_infinity, megatron_dist_opt"),
    ("strategy.offload_optimizer", "Offload optimizer states to", "none, cpu, nvme, cxl"),
    ("strategy.offload_params", "Offload parameters to", "none, cpu, nvme, cxl"),
    ("strategy.prefetch_depth", "Prefetch depth", "layers ahead"),
    ("strategy.shard_group_size", "Shard group size", "GPUs"),
    ("checkpoint.target", "Checkpoint target", "local_nvme, remote_dram, cxl_pool, parallel_fs, "
                                               "object_store, gds_nvme"),
    ("checkpoint.method", "Checkpoint method", "blocking, async, in_memory_then_flush"),
)
PARAMETER_LABELS = {path: label for path, label, _ in PARAMETERS}
# Sections an API axis may set whole, null (off) or an object (``simulation.sweep.NULLABLE_SECTIONS``);
# the form's comma-separated values cannot spell an object, so it offers their fields instead.
PARAMETER_LABELS.update({"training.fp8": "FP8", "training.lora": "LoRA"})
PARAMETER_HINTS = {path: hint for path, _, hint in PARAMETERS}

# Ready-made grids: (slug, title, axes). The sweep form offers each fitted to the base
# scenario (``presets_for``): the values that would make a point invalid there are left
# out, e.g. node counts and micro batches whose data-parallel batch does not divide its
# global batch.
# "Nodes × micro batch" keeps the per-GPU batch (the global batch scales with the nodes,
# ``scales_global_batch``): with the global batch fixed, most node counts left it undivided.
PRESETS: tuple[tuple[str, str, list], ...] = (
    ("nodes-x-micro-batch", "Nodes × micro batch",
     [{"path": "cluster.num_nodes", "values": [1, 2, 4], "scales_global_batch": True},
      {"path": "training.micro_batch_size", "values": [1, 2, 4]}]),
    ("offload-x-prefetch", "Offload tier × prefetch depth",
     [{"path": "strategy.offload_optimizer", "values": ["none", "cpu", "nvme"]},
      {"path": "strategy.prefetch_depth", "values": [0, 1, 2]}]),
    ("sharding", "ZeRO-2 vs ZeRO-3 vs FSDP",
     [{"path": "strategy.kind", "values": ["zero2", "zero3", "fsdp_full_shard"]}]),
    ("checkpoint-target", "Checkpoint target × method",
     [{"path": "checkpoint.target", "values": ["local_nvme", "remote_dram", "parallel_fs"]},
      {"path": "checkpoint.method", "values": ["blocking", "async"]}]),
)


def point_is_valid(spec: dict) -> bool:
    """Whether the engine accepts ``spec`` (it may still not fit)."""
    try:
        services.resolve(spec)
    except ScenarioError:
        return False
    return True


def fit_axes(base_spec: dict, axes: list[dict], is_valid=point_is_valid) -> list[dict] | None:
    """``axes`` with as few values left out as it takes for every point of the grid to be
    valid on ``base_spec``: the largest such grid (most points, then the most even one,
    then the most values on the first axis, then the earliest values), each axis in its
    order; None when no point is valid. Tries every subset of every axis: for presets.
    """
    sizes = [len(ax["values"]) for ax in axes]
    cells = itertools.product(*[range(n) for n in sizes])   # expand's order
    ok = {cell: is_valid(p["scenario"]) for cell, p in zip(cells, engine_sweep.expand(base_spec, axes))}

    def subsets(n: int):   # of a preset's few values: 2^n - 1 of them
        for r in range(n, 0, -1):
            yield from itertools.combinations(range(n), r)

    best, best_key = None, None
    for combo in itertools.product(*[list(subsets(n)) for n in sizes]):
        if not all(ok[cell] for cell in itertools.product(*combo)):
            continue
        key = (math.prod(len(c) for c in combo), min(len(c) for c in combo),
               tuple(len(c) for c in combo), tuple(-i for c in combo for i in c))
        if best_key is None or key > best_key:
            best, best_key = combo, key
    if best is None:
        return None
    return [dict(ax, values=[ax["values"][i] for i in keep]) for ax, keep in zip(axes, best)]


def presets_for(base_spec: dict | None) -> list[dict]:
    """The ready-made grids offered with ``base_spec``, each fitted to it:
    ``[{slug, title, axes, left_out, batch}]``, ``left_out`` naming the values dropped
    (``[{"path", "label", "values"}]``, empty when none were), ``batch`` saying what the
    grid does with the global batch (``batch_rule``). A grid left with fewer than
    two valid points there is not offered. Without a base, or one the engine rejects, the
    grids as they are.
    """
    out = [{"slug": slug, "title": title, "axes": axes, "left_out": [], "batch": batch_rule(base_spec, axes)}
           for slug, title, axes in PRESETS]
    if base_spec is None or not point_is_valid(base_spec):
        return out
    offered = []
    for p in out:
        fitted = fit_axes(base_spec, p["axes"])
        if fitted is None or math.prod(len(ax["values"]) for ax in fitted) < 2:
            continue
        left_out = [{"path": ax["path"], "label": PARAMETER_LABELS.get(ax["path"], ax["path"]),
                     "values": [v for v in ax["values"] if v not in kept["values"]]}
                    for ax, kept in zip(p["axes"], fitted)]
        offered.append(dict(p, axes=fitted, left_out=[d for d in left_out if d["values"]],
                            batch=batch_rule(base_spec, fitted)))
    return offered


def chunk_size(total_points: int, workers: int, chunks_per_worker: int, point_work_units: float = 0.0,
               chunk_budget_s: float = math.inf, min_chunk_work_units: float = MIN_CHUNK_WORK_UNITS) -> int:
    """Points per chunk for a sweep of ``total_points`` run by ``workers`` worker processes.

    ``workers * chunks_per_worker`` chunks, so every process takes part and the per-chunk
    costs (the broker's hand-over: up to its 0.25 s poll on the filesystem broker,
    milliseconds on Redis; writing and settling the results) are paid that many times, not
    once every few points; fewer when the sweep's work (``total_points * point_work_units``,
    work units being about a microsecond of engine time each, :mod:`simulation.cost`) gives
    each less than ``min_chunk_work_units``, and then a multiple of ``workers`` when there
    are that many (3 chunks on 2 processes would end when the one doing two ends). No more
    points a chunk than fit ``chunk_budget_s`` seconds, so a chunk of heavy points still
    ends inside the task time limit; at least one point. ``point_work_units`` 0 (unknown):
    only the chunk count applies.

    By hand, 2 processes, 2 chunks each, ~1,000 units a point (a 7B model on one GPU):
    10,000 points: 10^7 units / 10^5 = 100 chunks' worth, 4 wanted: 2,500 points a chunk;
    400 points: 3 chunks' worth, rounded down to 2 (the processes): 200 points a chunk;
    3 points: less than one chunk's worth: one chunk of 3.
    100 points of 8,000,000 units (8 s) with a 27 s budget: 25 a chunk wanted, 3 fit (24 s).
    Raises ValueError for a count below 1.
    """
    if total_points < 1 or workers < 1 or chunks_per_worker < 1:
        raise ValueError(f"need at least one point, worker and chunk per worker, got "
                         f"{total_points}, {workers}, {chunks_per_worker}")
    chunks = workers * chunks_per_worker
    if point_work_units > 0:
        chunks = max(1, min(chunks, int(total_points * point_work_units // min_chunk_work_units)))
        if chunks >= workers:
            chunks -= chunks % workers
    size = -(-total_points // chunks)
    if point_work_units > 0 and math.isfinite(chunk_budget_s):
        size = min(size, int(chunk_budget_s * 1e6 // point_work_units))
    return max(1, size)


def point_work_units(base_spec: dict, axes: list[dict], total: int, sample: int = COST_SAMPLE_POINTS) -> float:
    """The most work units (:func:`simulation.cost.cost_bound` of a full evaluation without
    its timeline, as ``simulation.sweep.summarize`` does) among up to ``sample + 1`` grid
    points spread evenly over the grid (the first and the last included); 0 when none of
    them is valid. A few milliseconds: it builds only those points."""
    from simulation.cost import cost_bound

    lookups = catalog_lookups()
    picks = sorted({min(total - 1, round(k * (total - 1) / sample)) for k in range(sample + 1)})
    most = 0.0
    for i in picks:
        point = engine_sweep.point_at(base_spec, axes, i)
        try:
            sc = simulation.Scenario.from_dict(point["scenario"], **lookups)
            most = max(most, cost_bound(sc, include_step=True, detail=False).work_units)
        except ScenarioError:
            continue
    return most


def chunk_points(base_spec: dict, axes: list[dict], total: int) -> int:
    """Points per chunk of a new sweep: ``SWEEP_CHUNK_POINTS`` when set, else
    :func:`chunk_size` from the settings and the grid's heaviest sampled point."""
    fixed = int(getattr(settings, "TIERLAB_SWEEP_CHUNK_POINTS", 0) or 0)
    if fixed > 0:
        return fixed
    return chunk_size(total, settings.TIERLAB_SWEEP_WORKERS, settings.TIERLAB_SWEEP_CHUNKS_PER_WORKER,
                      point_work_units(base_spec, axes, total),
                      TIME_LIMIT_SHARE * settings.CELERY_TASK_SOFT_TIME_LIMIT)


# ---------------------------------------------------------------- input
_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")


def parse_value(text: str):
    """A typed value from a form: ``"4"`` -> 4, ``"0.5"`` -> 0.5, ``"true"`` -> True,
    ``"null"`` -> None (the field's null: FP8 off for a recipe, the default for a number),
    else the text."""
    t = text.strip()
    if t.lower() == "null":
        return None
    if _INT.match(t):
        return int(t)
    if _FLOAT.match(t):
        return float(t)
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    return t


def parse_values(text: str) -> list:
    """``"1, 2, 4"`` -> ``[1, 2, 4]``; empty items dropped."""
    return [parse_value(part) for part in str(text).split(",") if part.strip()]


def grid_values(axes: list) -> list[dict]:
    """``{path: value}`` of every grid point, in ``simulation.sweep.expand``'s order."""
    return [{ax["path"]: v for ax, v in zip(axes, combo)}
            for combo in itertools.product(*[ax["values"] for ax in axes])]


def validate_axes(base_spec: dict, axes) -> list[dict]:
    """The axes, checked against the engine's grid rules and the scenario's fields.

    Raises ScenarioError (``axes``, ``axes.<k>.path``, ``axes.<k>.values``; a
    ``ScenarioErrors`` naming each when several are bad), or InputError
    (``scenario``) when the base scenario itself cannot run.
    """
    if isinstance(axes, list):
        axes = [_axis(ax, k) if isinstance(ax, dict) else ax for k, ax in enumerate(axes)]
    engine_sweep.grid_size(axes)              # shape, sizes, at most MAX_POINTS points
    try:
        resolved = services.resolve(base_spec)
    except ScenarioError as exc:
        raise InputError("scenario", f"the base scenario cannot run: {exc.field}: {exc.message}") from None
    known = set(flatten(resolved)) | set(PARAMETER_LABELS) | set(engine_sweep.NULLABLE_SECTIONS)
    seen = set()
    errors = []
    for k, ax in enumerate(axes):
        path = ax["path"]
        if path not in known:
            errors.append(ScenarioError(f"axes.{k}.path", f"no scenario field “{path}”; for example "
                                        + ", ".join(p for p, _, _ in PARAMETERS[:5])))
        elif path in seen:
            errors.append(ScenarioError(f"axes.{k}.path", f"“{path}” is already the other axis"))
        seen.add(path)
        if len(set(map(repr, ax["values"]))) != len(ax["values"]):
            errors.append(ScenarioError(f"axes.{k}.values", "each value may appear once"))
    if not errors:
        errors = _values_never_valid(base_spec, axes)
    if errors:
        raise errors[0] if len(errors) == 1 else simulation.ScenarioErrors(errors)
    return axes


AXIS_FIELDS = ("path", "values", "scales_global_batch")


def _axis(ax: dict, k: int) -> dict:
    """The axis's path and values, and ``scales_global_batch`` where it is set (a node-count
    axis only). Raises ScenarioError (``axes.<k>.<key>`` for a key it does not know,
    ``axes.<k>.scales_global_batch``)."""
    for key in ax:
        # refused, not dropped: a misspelt "scale_global_batch" would silently keep the global batch
        if key not in AXIS_FIELDS:
            raise ScenarioError(f"axes.{k}.{key}", f"unknown field; known fields: {', '.join(AXIS_FIELDS)}")
    out = {"path": ax.get("path"), "values": ax.get("values")}
    scales = ax.get("scales_global_batch", False)
    if not isinstance(scales, bool):
        raise ScenarioError(f"axes.{k}.scales_global_batch", "must be true or false")
    if scales:
        if out["path"] != "cluster.num_nodes":
            raise ScenarioError(f"axes.{k}.scales_global_batch",
                                "applies to a cluster.num_nodes axis only (the global batch "
                                "scales with the nodes, keeping the per-GPU batch)")
        out["scales_global_batch"] = True
    return out


def batch_rule(base_spec: dict | None, axes: list[dict]) -> str:
    """What a grid does with the global batch, in words (for the form and the sweep page)."""
    training = (base_spec or {}).get("training") or {}
    gbs = training.get("global_batch_size")
    paths = {ax["path"] for ax in axes}
    if not paths & {"cluster.num_nodes", "training.micro_batch_size", "cluster.gpus_per_node"}:
        return ""
    if any(ax.get("scales_global_batch") for ax in axes):
        if gbs is None:
            return ("The global batch scales with the nodes: the base sets none, so it is micro "
                    "batch × data-parallel GPUs (one accumulation step) at every point.")
        nodes = (base_spec.get("cluster") or {}).get("num_nodes", 1)
        counts = next(ax["values"] for ax in axes if ax.get("scales_global_batch"))
        at = ", ".join(f"{gbs * n / nodes:g} on {n}" for n in counts if isinstance(n, int))
        return (f"The global batch scales with the nodes, keeping the base's per-GPU batch "
                f"({plural(gbs, 'sequence')} on {plural(nodes, 'node')}): {at} "
                f"node{'s' if counts != [1] else ''}; accumulation steps = per-GPU batch / micro batch.")
    if gbs is not None:
        return (f"The global batch stays at {plural(gbs, 'sequence')}: points where micro batch × "
                "data-parallel GPUs does not divide it are invalid.")
    return ""


def _values_never_valid(base_spec: dict, axes: list[dict],
                        max_points: int | None = None) -> list[ScenarioError]:
    """A value that the scenario refuses on its own field at every point of the grid (a word
    where a number goes, -3 nodes, an FP8 recipe the base's framework lacks: delayed on
    torchao) is a typo, not a finding: a ScenarioError naming ``axes.<k>.values.<j>`` for
    each such value, with the engine's message (and the field inside the axis's it names,
    for an axis that sets a section whole: ``training.fp8.recipe`` of ``training.fp8``).
    Only scenarios are built (``Scenario.from_dict``: tens of microseconds for a small
    scenario, ~5 ms for a recommender with 600 tables), never evaluated.

    Bounded: at most ``max_points`` (``SWEEP_VALUE_CHECK_POINTS``) points are built. First the
    grid's diagonal (point ``(i mod n0, i mod n1)``: every value once, max(n0, n1) points),
    which settles every value that is valid somewhere on it; then, in expand's order, only
    points that hold a value not yet accepted. A 100 x 100 grid of typos built all 10,000
    points (50 s of one web process for 600 tables); now ``max_points``. A value still
    refused at every point built when the budget runs out is refused naming how many points
    held it (``at the 2 grid points checked of the 100 that hold it``); within the budget the check is
    exact (``at every point of the grid``). Points invalid only in combination (a batch that
    does not divide, offload the other axis's strategy cannot do; a recipe valid under one
    framework of a framework axis) stay results of the sweep, failed points
    (``failed_points``). A null that the base scenario cannot take by itself is refused
    wherever the engine's error lands, if no point takes it (a null node template leaves no
    accelerator)."""
    if max_points is None:
        max_points = settings.TIERLAB_SWEEP_VALUE_CHECK_POINTS
    lookups = catalog_lookups()
    sizes = [len(ax["values"]) for ax in axes]
    refused = {(k, j): None for k, n in enumerate(sizes) for j in range(n)}   # None: not yet
    checked = dict.fromkeys(refused, 0)         # points built that hold the value
    # A null the base scenario cannot take on its own is refused like a typo wherever the
    # engine's error lands (a null node template: "cluster.accelerator is required"), once
    # no point of the grid takes it: null is never a finding of the sweep.
    null_breaks = {(k, j): _null_breaks_base(base_spec, ax["path"], lookups)
                   for k, ax in enumerate(axes) for j, v in enumerate(ax["values"]) if v is None}
    null_breaks = {kj: e for kj, e in null_breaks.items() if e is not None}
    open_values = len(refused)                  # values not yet seen accepted on their field
    total = math.prod(sizes)
    diagonal = [tuple(i % n for n in sizes) for i in range(max(sizes))]
    built, seen = 0, set()
    for cell in itertools.chain(diagonal, itertools.product(*[range(n) for n in sizes])):
        if not open_values or built >= max_points:
            break
        if cell in seen or all(refused[(k, j)] is False for k, j in enumerate(cell)):
            continue                            # built already, or it can tell nothing new
        seen.add(cell)
        built += 1
        index = sum(j * math.prod(sizes[k + 1:]) for k, j in enumerate(cell))
        point = engine_sweep.point_at(base_spec, axes, index)
        try:
            simulation.Scenario.from_dict(point["scenario"], **lookups)
            error = None
        except ScenarioError as exc:
            error = exc
        for k, j in enumerate(cell):
            if refused[(k, j)] is False:
                continue
            checked[(k, j)] += 1
            own = None if error is None else (error if (k, j) in null_breaks else _on_field(error, axes[k]["path"]))
            refused[(k, j)] = False if own is None else (
                own.message if own.field == axes[k]["path"] else f"{own.field}: {own.message}")
            open_values -= own is None

    def where(kj) -> str:
        holding = total // sizes[kj[0]]         # grid points that hold the value
        if checked[kj] >= holding:
            return " (at every point of the grid)"
        return (f" (at the {plural(checked[kj], 'grid point')} checked of the {holding} that hold it: "
                f"at most {max_points} points are checked, SWEEP_VALUE_CHECK_POINTS)")

    return [ScenarioError(f"axes.{k}.values.{j}", (_null_refusal(axes[k]["path"], null_breaks[(k, j)])
                                                   if (k, j) in null_breaks else message) + where((k, j)))
            for (k, j), message in refused.items() if message]


def _on_field(error: ScenarioError, path: str) -> ScenarioError | None:
    """The error of ``error`` (one of a ``ScenarioErrors``' several) that names the axis's
    field ``path`` or a field inside it (``training.fp8.recipe`` for a ``training.fp8``
    axis that sets the section whole), whatever other field its reason reads (the
    framework, for an FP8 recipe); None when none does."""
    for e in getattr(error, "errors", None) or [error]:
        if e.field == path or e.field.startswith(path + "."):
            return e
    return None


def _null_breaks_base(base_spec: dict, path: str, lookups: dict) -> ScenarioError | None:
    """The engine's error for the base scenario with ``path`` set to null alone, or None
    when it takes the null (as its default, or the null's own meaning)."""
    point = engine_sweep.point_at(base_spec, [{"path": path, "values": [None]}], 0)
    try:
        simulation.Scenario.from_dict(point["scenario"], **lookups)
    except ScenarioError as exc:
        return exc
    return None


def _null_refusal(path: str, error: ScenarioError) -> str:
    """Why a null is refused, and what the field takes: the engine's message names the
    choices where the null fails on the field itself; else the sweep form's hint."""
    if error.field == path:
        return f"{path} takes no null: it {error.message}"
    hint = PARAMETER_HINTS.get(path)
    return (f"{path} takes no null here ({error.field}: {error.message})"
            + (f"; give a value: {hint}" if hint else ""))


def value_labels(path: str, values: list) -> list:
    """How each value of a sweep axis reads: a null as its meaning ("off" for an FP8 axis,
    ``simulation.sweep.null_label``), an object by its fields ("recipe: delayed"), a
    preset or choice by its name (:func:`tierlab.catalog.labels.axis_value_labels`), None
    for a value that reads as itself."""
    named = axis_value_labels(path, values)
    out = []
    for v, name in zip(values, named):
        if v is None:
            name = engine_sweep.null_label(path)
        elif isinstance(v, dict):
            name = ", ".join(f"{k}: {_plain(x)}" for k, x in v.items()) or "on (its defaults)"
        out.append(name)
    return out


def _plain(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


# ---------------------------------------------------------------- making and cancelling
@transaction.atomic
def create_sweep(owner, scenario_id, axes, name: str = "") -> Sweep:
    """A sweep of the owner's scenario ``scenario_id`` over ``axes``, its chunks queued (a
    teammate's scenario must be duplicated first).

    Raises InputError (``scenario``; NotYours for a teammate's) or ScenarioError (the axes;
    TooManyActive at ``MAX_ACTIVE_SWEEPS_PER_USER``); nothing is saved then. A cluster
    profile the base (or an axis) names by id must be one the owner may use, as for a run
    (:func:`check_profiles`); the worker checks it again (:func:`execute_chunk`).
    """
    base = owned_for(Scenario, owner, scenario_id, "scenario", "sweep")
    check_profiles(base.spec, axes, owner)
    axes = validate_axes(base.spec, axes)
    jobs.check_active(owner, "sweeps", Sweep.objects.filter(
        owner=owner, status__in=[Sweep.Status.QUEUED, Sweep.Status.RUNNING]))
    total = math.prod(len(ax["values"]) for ax in axes)
    default = f"{base.name}: " + " × ".join(PARAMETER_LABELS.get(ax["path"], ax["path"]) for ax in axes)
    sweep = Sweep.objects.create(owner=owner, name=((name or "").strip() or default)[:200], base=base,
                                 base_spec=base.spec, axes=axes, total_points=total,
                                 engine_version=simulation.ENGINE_VERSION)
    size = chunk_points(base.spec, axes, total)
    now = timezone.now()
    chunks = SweepChunk.objects.bulk_create(
        SweepChunk(sweep=sweep, start=start, stop=min(total, start + size),
                   celery_task_id=str(uuid.uuid4()), enqueued_at=now)
        for start in range(0, total, size))
    transaction.on_commit(lambda: [enqueue(c) for c in chunks])
    return sweep


def check_profiles(base_spec: dict, axes, owner) -> None:
    """InputError (``scenario``) when the base scenario names a cluster profile ``owner`` may
    not use (someone else's, not their team's; :func:`services.check_profile_visible`, as
    ``start_run`` calls it), ScenarioError (``axes.<k>.values.<j>``) for such a value of a
    ``cluster.profile`` axis."""
    try:
        services.check_profile_visible(base_spec, owner)
    except ScenarioError as exc:
        raise InputError("scenario", f"the base scenario cannot run: {exc.field}: {exc.message}") from None
    for k, ax in enumerate(axes if isinstance(axes, list) else []):
        if isinstance(ax, dict) and ax.get("path") == "cluster.profile" and isinstance(ax.get("values"), list):
            for j, value in enumerate(ax["values"]):
                try:
                    services.check_profile_visible({"cluster": {"profile": value}}, owner)
                except ScenarioError as exc:
                    raise ScenarioError(f"axes.{k}.values.{j}", exc.message) from None


def enqueue(chunk: SweepChunk) -> None:
    """Send a chunk to the worker queue; a broker failure fails its points instead of hiding it."""
    from tierlab.dashboard.tasks import run_sweep_chunk

    try:
        # No time limits in the message (the sender's would be): the worker's own apply.
        run_sweep_chunk.apply_async(args=[chunk.pk], task_id=chunk.celery_task_id,
                                    queue=settings.TIERLAB_RUN_QUEUE,
                                    time_limit=None, soft_time_limit=None)
    except Exception as exc:  # broker down or misconfigured
        log.exception("could not queue sweep chunk %s", chunk.pk)
        finish_chunk(chunk, [], SweepChunk.Status.FAILED,
                     f"could not queue the chunk: the task broker is unavailable ({exc})")


def send_again(chunk: SweepChunk, *, count_requeue: bool, expect_status: str) -> bool:
    """Queue ``chunk`` again under a new task id (:func:`tierlab.jobs.send_again`)."""
    return jobs.send_again(chunk, reset=dict(done=0, failed=0, first_failure=None), count_requeue=count_requeue,
                           expect_status=expect_status, enqueue=enqueue)


def recover_chunks_of(worker: str, started_before=None) -> int:
    """At a worker's start: chunks left ``running`` by an earlier process of the same name
    (started before ``started_before``) are queued again (see ``tierlab.celery``); the
    start that died counts as an attempt."""
    return jobs.requeue_left_running(SweepChunk, worker, started_before, send_again, "sweep chunk", log)


def cancel_sweep(sweep: Sweep) -> Sweep:
    """Stop the sweep: queued chunks are cancelled now (their messages taken out of the
    queue once this commits), running ones before their next point.

    Raises InputError (``status``) when the sweep has already finished.
    """
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().get(pk=sweep.pk)
        if sweep.is_finished:
            raise InputError("status", f"the sweep has already {'been ' if sweep.status == 'cancelled' else ''}"
                                       f"{sweep.status}; only a queued or running sweep can be cancelled")
        now = timezone.now()
        sweep.cancelled, sweep.status, sweep.finished_at = True, Sweep.Status.CANCELLED, now
        sweep.save(update_fields=["cancelled", "status", "finished_at"])
        values = grid_values(sweep.axes)
        queued = list(sweep.chunks.filter(status=SweepChunk.Status.QUEUED))
        for chunk in queued:
            _write_chunk(chunk, _left_over(values, chunk, [], "cancelled", "cancelled before it ran"),
                         SweepChunk.Status.CANCELLED, "cancelled", now)
        jobs.remove_cancelled_messages([c.celery_task_id for c in queued])
        _settle(sweep)
    return sweep


# ---------------------------------------------------------------- a chunk, in the worker
def _left_over(values: list[dict], chunk: SweepChunk, results: list, status: str, reason: str) -> list:
    """``results`` plus one entry per point of the chunk that has none (``valid`` null for a
    failed one: the engine never judged its scenario; false for a cancelled one, as before)."""
    rest = [{"index": i, "values": values[i], "valid": None if status == "failed" else False, "fits": False,
             "status": status, "error": reason} for i in range(chunk.start + len(results), chunk.stop)]
    return list(results) + rest


def first_failure(results: list) -> dict | None:
    """``{index, error}`` of the first failed point of ``results``, or None."""
    failed = next((r for r in results if r.get("status") == "failed"), None)
    return {"index": failed["index"], "error": failed.get("error") or "failed"} if failed else None


def _write_chunk(chunk: SweepChunk, results: list, status: str, error: str, now) -> None:
    """Store the chunk's final ``results`` (one per point): ``done`` counts the points
    evaluated, ``failed`` those that failed (invalid, or their evaluation raised) and
    ``cancelled`` those cancelled before they ran, so the page can tell them apart and a
    cancelled sweep's progress is what finished, not 100 %."""
    cancelled = sum(1 for r in results if r.get("status") == "cancelled")
    failed = sum(1 for r in results if r.get("status") == "failed")
    SweepChunk.objects.filter(pk=chunk.pk).update(status=status, results=results, error=error,
                                                  done=chunk.size - cancelled - failed, failed=failed,
                                                  first_failure=first_failure(results),
                                                  cancelled=cancelled, finished_at=now)


def _settle(sweep: Sweep) -> None:
    """Update the Pareto front; finish the sweep once no chunk is queued or running.

    The caller holds the sweep's row (select_for_update) inside a transaction.
    """
    chunks = list(sweep.chunks.all())
    results = [r for c in chunks for r in c.results or []]
    fields = {"pareto": engine_sweep.pareto([r for r in results if r.get("status") == "done"])}
    if not any(c.status in (SweepChunk.Status.QUEUED, SweepChunk.Status.RUNNING) for c in chunks):
        failed = [c for c in chunks if c.status == SweepChunk.Status.FAILED]
        # every point failed (its chunk, or the engine refused its scenario): not a success
        all_failed = bool(chunks) and sum(c.failed for c in chunks) == sweep.total_points
        if not sweep.is_finished:
            fields["status"] = Sweep.Status.FAILED if all_failed else Sweep.Status.SUCCEEDED
            fields["finished_at"] = timezone.now()
        if failed:
            fields["error"] = (f"{sum(c.size for c in failed)} of {sweep.total_points} points failed: "
                               + "; ".join(sorted({c.error for c in failed})))
        elif all_failed:
            first = next((c.first_failure for c in chunks if c.first_failure), None) or {"index": 0, "error": "failed"}
            fields["error"] = (f"all {plural(sweep.total_points, 'point')} failed, none was evaluated; "
                               f"the first (point {first['index'] + 1}): {first['error']}")
    Sweep.objects.filter(pk=sweep.pk).update(**fields)


def finish_chunk(chunk: SweepChunk, results: list, status: str, reason: str = "") -> None:
    """Write the chunk's results (points without one get ``reason``) and settle the sweep."""
    sweep_values = None
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().filter(pk=chunk.sweep_id).first()
        if sweep is None:              # deleted meanwhile (tierlab.dashboard.removal): nothing to write
            log.info("sweep chunk %s: its sweep %s was deleted; result dropped", chunk.pk, chunk.sweep_id)
            return
        if len(results) < chunk.size:
            sweep_values = grid_values(sweep.axes)
            point_status = "cancelled" if status == SweepChunk.Status.CANCELLED else "failed"
            results = _left_over(sweep_values, chunk, results, point_status, reason or point_status)
        _write_chunk(chunk, results, status, reason, timezone.now())
        _settle(sweep)


def _cancel_requested(sweep_id: int) -> bool:
    """The sweep was cancelled, or deleted (a delete cancels it first)."""
    return not Sweep.objects.filter(pk=sweep_id, cancelled=False).exists()


def execute_chunk(chunk_id: int, task_id: str = "", worker: str = "") -> None:
    """Body of the Celery task: evaluate the chunk's points and record them.

    A redelivered chunk that already finished does nothing, nor does a message superseded
    by a later send of the chunk (another task id); one left running by a dead
    worker starts over (its count is reset, so progress is not counted twice), unless its
    workers died ``TIERLAB_RUN_MAX_ATTEMPTS`` times: then its points fail.
    """
    chunk = SweepChunk.objects.select_related("sweep__owner").filter(pk=chunk_id).first()
    if chunk is None or chunk.status in SweepChunk.FINISHED:
        log.info("sweep chunk %s: nothing to do (%s)", chunk_id, chunk.status if chunk else "gone")
        return
    if task_id and chunk.celery_task_id and task_id != chunk.celery_task_id:
        log.info("sweep chunk %s: task %s was superseded by %s", chunk_id, task_id, chunk.celery_task_id)
        return
    sweep = chunk.sweep
    if sweep.cancelled:
        finish_chunk(chunk, [], SweepChunk.Status.CANCELLED, "cancelled before it ran")
        return
    max_attempts = getattr(settings, "TIERLAB_RUN_MAX_ATTEMPTS", 3)
    if chunk.attempts >= max_attempts:
        finish_chunk(chunk, [], SweepChunk.Status.FAILED,
                     f"worker lost: the chunk was started {chunk.attempts} times and its worker died "
                     "each time (killed, out of memory?); not trying again")
        return
    now = timezone.now()
    claimed = SweepChunk.objects.filter(
        pk=chunk.pk, status__in=[SweepChunk.Status.QUEUED, SweepChunk.Status.RUNNING]).update(
        status=SweepChunk.Status.RUNNING, started_at=now, done=0, failed=0, first_failure=None,
        attempts=F("attempts") + 1,
        celery_task_id=task_id or chunk.celery_task_id, worker=worker or chunk.worker)
    if not claimed:
        return
    Sweep.objects.filter(pk=sweep.pk, status=Sweep.Status.QUEUED).update(status=Sweep.Status.RUNNING,
                                                                         started_at=now)
    results, status, reason = [], SweepChunk.Status.DONE, ""
    try:
        if settings.TIERLAB_TEST_TASK_SLEEP_S:
            services._test_sleep()
        points = engine_sweep.expand(sweep.base_spec, sweep.axes, chunk.start, chunk.stop)
        # only the profiles the sweep's owner may use now: one whose use ended (another's,
        # no longer shared with them) fails its points, "unknown cluster profile", as a run
        lookups = services.lookups_for(sweep.owner)
        unwritten = {"done": 0, "failed": 0}   # points since the last progress write
        first, next_check = None, 0.0           # the first failed point, once written
        for point in points:
            if time.monotonic() >= next_check:
                if unwritten["done"] or unwritten["failed"]:
                    progress = {k: F(k) + n for k, n in unwritten.items()}
                    if first is None and unwritten["failed"]:
                        first = progress["first_failure"] = first_failure(results)
                    SweepChunk.objects.filter(pk=chunk.pk).update(**progress)
                    unwritten = {"done": 0, "failed": 0}
                if _cancel_requested(sweep.pk):
                    status, reason = SweepChunk.Status.CANCELLED, "cancelled"
                    break
                next_check = time.monotonic() + PROGRESS_EVERY_S
            summary = engine_sweep.summarize(point, **lookups)
            # a point the engine refused (invalid) failed: it has no report
            summary["status"] = "done" if summary["valid"] else "failed"
            unstorable = jobs.unstorable(summary, "the point's report")
            if unstorable:                            # inf/NaN: jsonb would refuse the whole chunk
                log.error("sweep chunk %s, point %s: %s", chunk_id, point["index"], unstorable)
                summary = {"index": point["index"], "values": point["values"], "valid": True,
                           "fits": False, "status": "failed", "error": unstorable}
            results.append(summary)
            unwritten[summary["status"]] += 1
    except SoftTimeLimitExceeded:
        jobs.reconnect_after_interrupt()
        status, reason = SweepChunk.Status.FAILED, (
            jobs.limit_exceeded("the chunk ran", settings.CELERY_TASK_SOFT_TIME_LIMIT))
    except Exception as exc:
        log.exception("sweep chunk %s failed", chunk_id)
        status, reason = SweepChunk.Status.FAILED, f"engine error: {type(exc).__name__}: {exc}"
    finish_chunk(chunk, results, status, reason)


def fail_chunk_after_hard_limit(chunk_id: int, limit_s: float) -> None:
    """The worker killed the chunk's process at the hard time limit: record why."""
    jobs.fail_chunk_after_hard_limit(SweepChunk, chunk_id, limit_s, finish_chunk, [])


def requeue_lost_chunks() -> int:
    """Chunks still queued ``RUN_QUEUED_TIMEOUT_S`` after they were sent lost their message
    (unless it is still in a queue workers are reading, :func:`tierlab.jobs.lost_messages`):
    sent again, at most ``RUN_MAX_REQUEUES`` times, then their points fail with the reason."""
    n, timeout_s = 0, settings.TIERLAB_RUN_QUEUED_TIMEOUT_S
    for chunk in jobs.lost_messages(SweepChunk.lost()):
        if chunk.requeues < settings.TIERLAB_RUN_MAX_REQUEUES:
            with transaction.atomic():
                if send_again(chunk, count_requeue=True, expect_status=SweepChunk.Status.QUEUED):
                    log.warning("sweep chunk %s was still queued %s s after it was sent: sent again",
                                chunk.pk, timeout_s)
                    n += 1
            continue
        sent = 1 + chunk.requeues
        finish_chunk(chunk, [], SweepChunk.Status.FAILED,
                     f"not started: no worker took the chunk within {timeout_s} s, {sent} "
                     f"time{'s' if sent > 1 else ''} it was sent (its queue message was lost, or no "
                     "worker reads the queue)")
        n += 1
    return n


def fail_stale_chunks() -> int:
    """The read-time check: chunks whose message was lost are sent again or failed, chunks
    whose worker died fail ("worker lost"), settling their sweep."""
    n = requeue_lost_chunks()
    for chunk in SweepChunk.stale():
        finish_chunk(chunk, [], SweepChunk.Status.FAILED,
                     "worker lost: the chunk was still running "
                     f"{settings.TIERLAB_RUN_STALE_AFTER_S} s after it started (past the time limit)")
        n += 1
    return n


# ---------------------------------------------------------------- what the page reads
def points(sweep: Sweep, which: slice = slice(None)) -> list[dict]:
    """The grid points ``which`` selects (every one by default; a step-1 slice of the
    grid's indices), in order: each one's result, or ``{index, values, status: "pending"}``.
    Only the chunks holding them are read (a page of a 10,000-point sweep is not its 7 MB)."""
    values = grid_values(sweep.axes)
    lo, hi, _ = which.indices(len(values))
    hi = max(hi, lo)
    out: list[dict | None] = [None] * (hi - lo)
    for chunk in sweep.chunks.filter(start__lt=hi, stop__gt=lo):
        for r in chunk.results or []:
            if lo <= r.get("index", -1) < hi:
                out[r["index"] - lo] = r
    return [r if r is not None else {"index": lo + k, "values": values[lo + k], "status": "pending"}
            for k, r in enumerate(out)]


def sweep_payload(sweep: Sweep, points_slice: slice | None = slice(None)) -> dict:
    """The sweep as the API and the page read it. ``points_slice``: which of its points to
    include (every one by default, a slice of the grid's indices, or None for none: the
    light form a poll reads, without reading the chunks' results)."""
    fail_stale_chunks()
    sweep.refresh_from_db()
    counts = sweep.chunks.aggregate(done=Sum("done"), failed=Sum("failed"), cancelled=Sum("cancelled"))
    done, failed, cancelled = (counts[k] or 0 for k in ("done", "failed", "cancelled"))
    first = (sweep.chunks.filter(failed__gt=0, first_failure__isnull=False).order_by("start")
             .values_list("first_failure", flat=True).first()) if failed else None
    payload = {
        "id": sweep.pk, "name": sweep.name, "owner": sweep.owner.get_username(),
        "base": {"id": sweep.base_id, "name": sweep.base.name} if sweep.base else None,
        "axes": [dict(ax, label=PARAMETER_LABELS.get(ax["path"], ax["path"])
                      + (" (global batch scaled with it)" if ax.get("scales_global_batch") else ""),
                      value_labels=value_labels(ax["path"], ax["values"])) for ax in sweep.axes],
        "status": sweep.status, "cancelled": sweep.cancelled,
        "progress": min(1.0, (done + failed) / sweep.total_points) if sweep.total_points else 1.0,
        "done_points": done, "failed_points": failed, "first_failure": first,
        "cancelled_points": cancelled, "total_points": sweep.total_points,
        "chunks": sweep.chunks.count(),
        "pareto": sweep.pareto, "error": sweep.error,
        "engine_version": sweep.engine_version,
        "created_at": sweep.created_at, "started_at": sweep.started_at, "finished_at": sweep.finished_at,
    }
    if points_slice is not None:
        payload["points"] = points(sweep, points_slice)
    return payload
