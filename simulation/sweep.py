"""Sweeps: one base scenario, one or two parameters varied over a grid.

Axes name a dotted scenario path and its values, e.g.
``[{"path": "cluster.num_nodes", "values": [1, 2, 4]},
   {"path": "strategy.offload_optimizer", "values": ["none", "cpu", "nvme"]}]``.
Every grid point is evaluated on its own; a point whose scenario is invalid or does not
fit is a result (``valid``/``fits`` false with the reason), never an abort.
A ``cluster.num_nodes`` axis with ``"scales_global_batch": true`` keeps the per-GPU batch
instead of the global one: each point's ``training.global_batch_size`` is the base's times
its node count over the base's (weak scaling; without a base global batch the engine's
default, micro batch x data-parallel degree, scales by itself). ``summarize``
keeps what a heatmap and a Pareto chart need; ``pareto`` marks the points no other point
beats on both cost per million tokens and step time.

A value of JSON null sets its field to null in the point's scenario, which the engine reads
as the field's null meaning: no FP8 for ``training.fp8``, no LoRA for ``training.lora``, the
default for a number (``simulation.fields``: null is the field left out). Two paths go
further: a null under a section the base does not have leaves it out (a null LoRA base
dtype does not switch LoRA on), and a null FP8 recipe switches FP8 off, as a blank recipe does
on the scenario form (:data:`NULL_SECTION`). :func:`null_label` says how a null reads.
"""

from __future__ import annotations

import copy
import itertools
import math
from typing import Callable

from .cost import validate
from .errors import ScenarioError
from .evaluate import evaluate
from .scenario import Scenario

MAX_POINTS = 10_000             # the planner's scale; a point takes ~0.4-6 ms (simulation.cost)


# Object fields whose null has a meaning of their own (``simulation.scenario``: null or
# absent is off), which an axis may set whole: ``{"path": "training.fp8", "values": [null,
# {"recipe": "delayed"}]}``.
NULLABLE_SECTIONS = ("training.fp8", "training.lora")

# A null on these fields is a null of the section named: a recipe of null is no FP8 (the
# engine refuses ``{"recipe": null}``; the scenario form's blank recipe is FP8 off).
NULL_SECTION = {"training.fp8.recipe": "training.fp8"}

# How a null reads where it means more than "the default": short, a heatmap cell is narrow.
# ``simulation.scenario`` and ``simulation.fields`` for each meaning.
NULL_MEANINGS = {
    "training.fp8": "off", "training.fp8.recipe": "off",          # TrainingSpec.fp8: every GEMM in precision
    "training.lora": "off",                                       # TrainingSpec.lora: every weight trains
    "strategy.shard_group_size": "none",                          # no hybrid shard group
    "training.recompute_layers": "every layer",                   # recompute full: every layer checkpointed
    "training.recompute_every": "every layer",
    "training.seq_len": "the model's maximum",                    # ModelSpec.max_seq_len
    "training.global_batch_size": "micro batch × data-parallel GPUs",
    "cluster.profile": "none",
}


def null_label(path: str) -> str:
    """How a null value of the axis on ``path`` reads: :data:`NULL_MEANINGS`, else
    "default" (the engine reads a null number as the field left out: its default, a
    preset's or template's value where one sets it)."""
    return NULL_MEANINGS.get(path, "default")


def _set(d: dict, path: str, value):
    if value is None and path in NULL_SECTION:
        path = NULL_SECTION[path]
    node = d
    *head, last = path.split(".")
    for k in head:
        nxt = node.get(k)
        if isinstance(nxt, str) and k in ("model",):
            nxt = {"preset": nxt}
        if not isinstance(nxt, dict):
            if value is None and nxt is None:
                return              # the section is absent: its field is null already
            nxt = {}
        node[k] = nxt
        node = nxt
    node[last] = value


def grid_size(axes: list) -> int:
    """Points of the grid ``axes`` spans (the product of the axes' lengths), after checking
    its shape: one or two axes, each ``{"path": str, "values": non-empty list}``, at most
    :data:`MAX_POINTS` points. Raises ScenarioError naming ``axes`` or ``axes.<k>.<key>``."""
    if not isinstance(axes, list) or not 1 <= len(axes) <= 2:
        raise ScenarioError("axes", "give one or two axes")
    for k, ax in enumerate(axes):
        if not isinstance(ax, dict) or not isinstance(ax.get("path"), str) or not ax["path"]:
            raise ScenarioError(f"axes.{k}.path", "must name a scenario field, e.g. cluster.num_nodes")
        if not isinstance(ax.get("values"), list) or not ax["values"]:
            raise ScenarioError(f"axes.{k}.values", "must be a non-empty list")
    n = 1
    for ax in axes:
        n *= len(ax["values"])
    if n > MAX_POINTS:
        raise ScenarioError("axes", f"{n} points; at most {MAX_POINTS:,} per sweep")
    return n


def expand(base: dict, axes: list, start: int = 0, stop: int | None = None) -> list[dict]:
    """Grid points ``start`` .. ``stop - 1`` (all by default), in row-major order of the
    axes: ``[{"index": i, "values": {path: v}, "scenario": {...}}]``. Only the points asked
    for are built (a chunk of a large sweep copies its own points, not the whole grid)."""
    n = grid_size(axes)
    stop = n if stop is None else min(stop, n)
    combos = itertools.product(*[ax["values"] for ax in axes])
    return [_point(base, axes, i, combo) for i, combo in enumerate(itertools.islice(combos, start, stop), start)]


def point_at(base: dict, axes: list, index: int) -> dict:
    """Grid point ``index`` alone (``expand(base, axes, index, index + 1)[0]`` without
    walking the grid up to it). Raises IndexError outside the grid."""
    n = grid_size(axes)
    if not 0 <= index < n:
        raise IndexError(f"point {index} of a {n}-point grid")
    combo, rest = [], index
    for ax in reversed(axes):                 # row-major: the last axis varies fastest
        rest, j = divmod(rest, len(ax["values"]))
        combo.append(ax["values"][j])
    return _point(base, axes, index, tuple(reversed(combo)))


def _point(base: dict, axes: list, index: int, combo: tuple) -> dict:
    d = copy.deepcopy(base)
    for ax, v in zip(axes, combo):
        _set(d, ax["path"], v)
        if ax.get("scales_global_batch"):
            _scale_global_batch(base, d, v)
    return {"index": index, "values": {ax["path"]: v for ax, v in zip(axes, combo)}, "scenario": d}


def _scale_global_batch(base: dict, point: dict, nodes) -> None:
    """``point``'s global batch: the base's times ``nodes`` over the base's node count (an
    integer when it divides; else the fraction, which the engine then rejects as a point)."""
    gbs = (base.get("training") or {}).get("global_batch_size")
    base_nodes = (base.get("cluster") or {}).get("num_nodes", 1)
    if not isinstance(gbs, int) or not isinstance(nodes, int) or not isinstance(base_nodes, int) \
            or base_nodes < 1:
        return
    scaled = gbs * nodes
    _set(point, "training.global_batch_size",
         scaled // base_nodes if scaled % base_nodes == 0 else scaled / base_nodes)


def summarize(point: dict, **lookups) -> dict:
    """Evaluate one grid point and keep its headline numbers. A point over the engine's caps
    on work (:func:`simulation.cost.validate`) is invalid, with the reason, not evaluated."""
    out = {"index": point["index"], "values": point["values"]}
    try:
        sc = Scenario.from_dict(point["scenario"], **lookups)
        validate(sc)
        r = evaluate(sc, detail=False, every_stage=False).to_dict()
    except ScenarioError as e:
        return dict(out, valid=False, fits=False, error=str(e))
    step = r.get("step", {})
    hbm = r["memory"]["per_gpu"]["hbm"]
    peak = step.get("mfu_peak") or {}
    # fit_state beside fits: a "tight" point (within the engine's memory error of the
    # capacity) fits but may not; the run page says so, and so must the sweep's row
    return dict(out, valid=True, fits=r["fits"], fit_state=r.get("fit_state"),
                violations=[v["message"] for v in r["violations"]],
                hbm_total_bytes=hbm["total_bytes"], hbm_capacity_bytes=hbm["capacity_bytes"],
                step_time_s=step.get("time_s"), tokens_per_s=r.get("throughput", {}).get("tokens_per_s"),
                mfu=r.get("mfu"), mfu_peak_precision=peak.get("precision"),
                mfu_16bit_peak=_mfu_16bit(r.get("mfu"), peak),
                usd_per_hour=r.get("cost", {}).get("usd_per_hour"),
                usd_per_million_tokens=r.get("cost", {}).get("usd_per_million_tokens"),
                goodput=r.get("checkpoint", {}).get("goodput"),
                bottleneck=r.get("verdict", {}).get("bottleneck"))


def _mfu_16bit(mfu, peak: dict):
    """MFU over the dense 16-bit peak, so that a sweep's FP8 and 16-bit points compare: a
    16-bit point's own MFU, an FP8 point's ``mfu_peak.mfu_16bit_peak`` (the same model FLOPs
    over the 16-bit peak, :func:`simulation.step.step_report`); None for fp32 and for points
    without a step."""
    if peak.get("precision") == "fp8":
        return peak.get("mfu_16bit_peak")
    return mfu if peak.get("precision") == "16-bit" else None


def run(points: list, progress: Callable[[float], None] | None = None, **lookups) -> list[dict]:
    """Summaries of ``points`` in order; ``progress(fraction)`` after each one."""
    out = []
    for k, p in enumerate(points):
        out.append(summarize(p, **lookups))
        if progress:
            progress((k + 1) / len(points))
    return out


def pareto(results: list[dict]) -> list[int]:
    """Indices of feasible points on the cost-per-million-tokens / step-time front: those no
    other feasible point beats, that is matches or betters on both and betters on one (so
    points with equal cost and time are all kept). Sorted by index.

    By cost, then time (O(n log n), the two-criteria case of Kung, Luccio and Preparata,
    "On finding the maxima of a set of vectors", J. ACM 22(4), 1975): a point is beaten
    exactly when a cheaper point is as fast (``best`` below: the fastest time among cheaper
    points) or a point of the same cost is faster (``fastest`` of its cost).
    """
    pts = sorted((r["usd_per_million_tokens"], r["step_time_s"], r["index"]) for r in results
                 if r.get("fits") and r.get("step_time_s") and r.get("usd_per_million_tokens") is not None)
    front, best = [], math.inf
    for _, same_cost in itertools.groupby(pts, key=lambda p: p[0]):
        group = list(same_cost)
        fastest = group[0][1]                     # sorted by time within one cost
        if fastest < best:
            front.extend(i for _, t, i in group if t == fastest)
            best = fastest
    return sorted(front)
