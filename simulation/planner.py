"""The planner: the best configuration of a model on a cluster, searched exhaustively.

A plan spec (JSON) names a model, a cluster (a node template and node counts, or a GPU
count), the training target, the constraints, the space of choices and an objective::

    {"model": "llama2-70b",
     "cluster": {"node": "dgx-h100", "num_nodes": {"min": 1, "max": 4}},   # or [1, 2, 4],
                                                   # 2, or "num_gpus": 16 instead
     "training": {"seq_len": 4096, "global_batch_size": 512,               # or tokens_per_step
                  "total_tokens": 2e12, "flash_attention": true},          # + any training field
     "constraints": {"memory_margin": 0.05, "max_usd_per_hour": 200,
                     "min_global_batch_size": 64},
     "space": {"tensor_parallel": [1, 2, 4, 8], "pipeline_parallel": [1, 2, 4, 8, 16],
               "interleave_stages": [1], "micro_batch_size": [1, 2, 4],
               "recompute": ["none", "selective", "full"],
               "strategies": ["megatron_dist_opt", "zero1", "zero3"],
               "offload_optimizer": ["none"], "offload_params": ["none"],
               "prefetch_depth": [1], "checkpoint_target": ["parallel_fs"],
               "checkpoint_interval_s": [null]},                           # null: Daly's optimum
     "objective": "step_time",        # cost_per_million_tokens, time_to_train, cost_to_train
     "top_k": 10}

The space is the product of the lists in the order above, behind the node counts: candidate
``i`` is the same configuration on every machine. :func:`evaluate_candidate` takes one
candidate through the checks one after another, cheapest first:

1. the scenario's own checks (:meth:`Scenario.from_dict`, :func:`simulation.parallel.layout`)
   and Megatron's interleaving rule: a refusal on a parallel degree or the batch is
   ``indivisible``, one on a strategy/offload pairing ``invalid_combination``;
2. the engine's caps on work (:func:`simulation.cost.validate`): ``over_work_cap``;
3. the price (node price x nodes) against ``max_usd_per_hour``: ``over_budget``;
   the global batch against ``min_global_batch_size``: ``below_min_global_batch``;
4. a lower bound on HBM per GPU (:func:`hbm_lower_bound_bytes`: the states, stored
   activations and CUDA context a GPU must hold), then the memory estimate
   (:func:`memory_tiers`, the memory of ``evaluate(..., include_step=False)``): a tier
   above ``capacity x (1 - memory_margin)`` is ``does_not_fit_<tier>``;
5. the step model (``evaluate(..., detail=False)``) on what fits; a step the engine cannot
   simulate is ``step_unavailable``; an exception of the engine, ``engine_error``; a time to
   train over ``max_time_to_train_s`` (``training.total_tokens`` / tokens per second /
   checkpoint goodput), ``over_deadline``.

A chunk (:func:`plan_chunk`) gives every candidate the same verdict faster, in three passes:

* **screen** (:class:`_Space`, numpy over blocks of :data:`BLOCK` candidates): the layout
  rules of step 1, the strategy section's own checks (parsed once per distinct section),
  the budget and minimum batch of step 3 and the HBM bound of step 4 on whole arrays. A
  candidate is counted under the first of ``indivisible``, ``invalid_combination``,
  ``over_budget``, ``below_min_global_batch``, ``does_not_fit_hbm`` it fails, in that order
  (one-by-one, a candidate failing two checks may be counted under the other);
* **fit**: each survivor through steps 1, 3 and 4 (its scenario built, its memory
  estimated); one that fits gets lower bounds on its step time
  (:func:`step_lower_bound_s`), cost and objective (:func:`_floors`);
* **branch and bound**: the fitting candidates in the order of their bounds through steps
  2 and 5, skipping one whose bounds show it can be neither in the top k (k rows already
  rank strictly better) nor on the front (a row already has a lower step time at no more
  cost, or a lower cost at no more step time). A skipped candidate is feasible and
  ``dominated``; it is never simulated, so the work cap and the deadline are checked only
  on what is (the top k and front are exact either way: a skipped candidate ranks behind k
  simulated ones that met the deadline; with a deadline, the feasible count may hold
  skipped candidates a full simulation would have found over it).

Of the feasible candidates a chunk keeps its ``top_k`` by the objective and its Pareto front
of step time against cost per million tokens; every other one is ``dominated`` there and
cannot be in the merged answer (the global top-k and front are subsets of the chunks'), so
:func:`merge` of any split of the space into chunks equals :func:`plan`, and both equal
:func:`brute_force` (every candidate simulated) on top k, front and feasible count (tests).
A ranked entry is a *class* of equivalent candidates: the same layout (every choice but the
strategy section's: strategy, offload tiers, prefetch depth) at exactly the same objective,
step time and cost. At data-parallel degree 1, for one, ZeRO-1/2/3, Megatron's distributed
optimizer, DDP and FSDP shard nothing and the step model gives them the same step (their
memory still differs: each framework's own buffers); the class is ranked once, named by its
first candidate, and lists the others as ``alternatives`` with their HBM, so the top k are
k different answers (:func:`_classes`). Classes are ranked by objective, step time, cost,
then the layout's index (:func:`layout_index`): a class's key is the same in every chunk
that holds some of it, which is what makes the merge exact.

Objectives: ``step_time`` (s), ``cost_per_million_tokens`` (USD), ``time_to_train``
(``total_tokens`` / tokens per s / checkpoint goodput: checkpoint stalls, lost work and
restarts included, s) and ``cost_to_train`` (that time x USD per hour).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from typing import Callable

import numpy as np

from .cost import validate
from .errors import MAX_REPORTED_ERRORS, Collect, ScenarioError
from .evaluate import evaluate
from .fields import finite, show
from .parallel import layout
from . import experts
from .params import model_params
from .lora import adapter_params
from .scenario import (OFFLOAD_TARGETS, RECOMPUTE, STRATEGY_KINDS, ModelSpec, Scenario, TrainingSpec,
                       _expand, resolve_cluster)
from . import presets
from .checkpoint import TARGET_KINDS
from .states import PAGED_OPTIMIZERS, state_bytes
from .memory import _stage_activations, plan_activations, stage_param_share, stage_plans_for
from .parallel import is_uneven, pipeline_stage_layers

PLAN_SCHEMA = 1
# product of the space's lists, per plan request; the search itself took a 14.7-million space
# in about 4 minutes on 2 cores (bench/bench_planner.py, README "Planner")
MAX_CANDIDATES = 200_000
MAX_TOP_K = 100
# the strategies a spec that lists none searches (space.strategies)
DEFAULT_STRATEGIES = ("megatron_dist_opt", "zero1", "zero3")
MAX_NODE_COUNTS = 64
OBJECTIVES = ("step_time", "cost_per_million_tokens", "time_to_train", "cost_to_train")
REASONS = ("indivisible", "invalid_combination", "over_work_cap", "over_budget",
           "below_min_global_batch", "does_not_fit_hbm", "does_not_fit_ddr", "does_not_fit_nvme",
           "does_not_fit_cxl", "does_not_fit_pmem", "step_unavailable", "over_deadline", "engine_error")
# each reason in words, as the plan page's table of rejected candidates names it
REASON_LABELS = {
    "indivisible": "parallel degrees or batch do not divide",
    "invalid_combination": "strategy, offload and pipeline do not combine",
    "over_work_cap": "over the work cap of one evaluation",
    "over_budget": "over the $/hour budget",
    "below_min_global_batch": "global batch below the minimum",
    "does_not_fit_hbm": "does not fit GPU memory (HBM)",
    "does_not_fit_ddr": "does not fit host memory (DDR)",
    "does_not_fit_nvme": "does not fit NVMe",
    "does_not_fit_cxl": "does not fit CXL memory",
    "does_not_fit_pmem": "does not fit persistent memory",
    "step_unavailable": "no step time for this layout",
    "over_deadline": "takes longer to train than the deadline",
    "engine_error": "the engine refused the candidate",
}
# ScenarioError fields that mean a degree or batch does not divide (parallel.layout's)
_DIVISIBILITY_FIELDS = ("training.tensor_parallel", "training.pipeline_parallel",
                        "training.global_batch_size", "training.interleave_stages",
                        "strategy.shard_group_size", "training.expert_parallel",
                        "training.expert_tensor_parallel")
_DIMS = ("tensor_parallel", "pipeline_parallel", "interleave_stages", "micro_batch_size",
         "recompute", "strategies", "offload_optimizer", "offload_params", "prefetch_depth",
         "checkpoint_target", "checkpoint_interval_s")
_TOP = {"schema", "name", "model", "cluster", "training", "constraints", "space", "objective",
        "top_k", "checkpoint", "strategy", "runtime", "convention"}
_PLAN_TRAINING = {"total_tokens", "tokens_per_step"}
# set by the space, not by the base training section
# the strategy section's dimensions: a class's members differ in these alone (layout_index)
_STRATEGY_DIMS = ("strategies", "offload_optimizer", "offload_params", "prefetch_depth")
_SPACE_TRAINING = {"tensor_parallel", "pipeline_parallel", "interleave_stages", "micro_batch_size",
                   "recompute"}


# ------------------------------------------------------------------ the spec
def _list(d: dict, key: str, path: str, default: list, check) -> list:
    v = d.get(key, default)
    if not isinstance(v, list) or not v:
        raise ScenarioError(f"{path}.{key}", f"must be a non-empty list, got {show(v)}")
    out = []
    for i, x in enumerate(v):
        check(x, f"{path}.{key}.{i}")
        if x not in out:
            out.append(x)
    return out


def _whole(lo: int = 1, hi: int = 100_000, none_ok: bool = False):
    def check(x, where):
        if x is None and none_ok:
            return
        if isinstance(x, bool) or not isinstance(x, int) or not lo <= x <= hi:
            raise ScenarioError(where, f"must be a whole number from {lo} to {hi:,}, got {show(x)}")
    return check


def _positive(x, where):
    if x is None:
        return
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not finite(x) or x <= 0:
        raise ScenarioError(where, f"must be a positive number of seconds or null, got {show(x)}")


def _one_of(choices):
    def check(x, where):
        if x not in choices:
            raise ScenarioError(where, f"must be one of {', '.join(choices)}; got {show(x)}")
    return check


def _num(d: dict, key: str, path: str, lo: float = 0.0, hi: float | None = None):
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not finite(v) or v < lo \
            or (hi is not None and v > hi):
        bound = f"from {lo:g} to {hi:g}" if hi is not None else f">= {lo:g}"
        raise ScenarioError(f"{path}.{key}", f"must be a number {bound}, got {show(v)}")
    return v


def _node_counts(cluster: dict, gpus_per_node: int) -> tuple[list[int], int]:
    """``(node counts, GPUs per node)`` from ``cluster.num_nodes`` (int, list, {min, max})
    or ``cluster.num_gpus`` (fewer than a node: one node with that many GPUs)."""
    if "num_gpus" in cluster:
        if "num_nodes" in cluster:
            raise ScenarioError("cluster.num_gpus", "give num_gpus or num_nodes, not both")
        n = cluster["num_gpus"]
        _whole(1, 1_000_000)(n, "cluster.num_gpus")
        if n < gpus_per_node:
            return [1], n
        if n % gpus_per_node:
            raise ScenarioError("cluster.num_gpus",
                                f"must be a multiple of the node's {gpus_per_node} GPUs, got {n}")
        return [n // gpus_per_node], gpus_per_node
    v = cluster.get("num_nodes", 1)
    if isinstance(v, dict):
        extra = set(v) - {"min", "max"}
        if extra:
            raise ScenarioError(f"cluster.num_nodes.{sorted(extra)[0]}", "unknown field; known: max, min")
        lo, hi = v.get("min", 1), v.get("max")
        _whole(1, 1_000_000)(lo, "cluster.num_nodes.min")
        _whole(1, 1_000_000)(hi, "cluster.num_nodes.max")
        if hi < lo:
            raise ScenarioError("cluster.num_nodes.max", f"must be >= min ({lo}), got {hi}")
        counts = list(range(lo, hi + 1))
    elif isinstance(v, list):
        counts = _list(cluster, "num_nodes", "cluster", [1], _whole(1, 1_000_000))
    else:
        _whole(1, 1_000_000)(v, "cluster.num_nodes")
        counts = [v]
    if len(counts) > MAX_NODE_COUNTS:
        raise ScenarioError("cluster.num_nodes", f"{len(counts)} node counts; at most {MAX_NODE_COUNTS}")
    return sorted(counts), gpus_per_node


def parse_spec(d: dict, models=None, nodes=None, accelerators=None, max_candidates: int = MAX_CANDIDATES,
               **_other_lookups) -> dict:
    """A plan spec checked and filled in with its defaults (a new, plain dict).

    Raises :class:`ScenarioError` naming the field (``space.tensor_parallel.2``,
    ``objective``, ``cluster.num_nodes.max``...), or :class:`ScenarioErrors` naming every
    bad field at once when several are (each section's and each field's checks run even
    after another's failed; a check that needs a bad field's value, such as the space's
    size or ``training.total_tokens`` for a time objective, runs only when those are good;
    at most :data:`~simulation.errors.MAX_REPORTED_ERRORS`). A spec that is not an object
    is ``plan``. A space over ``max_candidates`` (:data:`MAX_CANDIDATES`) candidates is
    named after its longest list (the benchmark raises it for Calculon's 10.46-million
    space). ``models``, ``nodes``, ``accelerators``: preset tables as
    :meth:`Scenario.from_dict` takes them.
    """
    if not isinstance(d, dict):
        raise ScenarioError("plan", "must be a JSON object")
    bad = Collect()
    for k in d:
        if k not in _TOP:
            bad.add(k, f"unknown field; known fields: {', '.join(sorted(_TOP))}")
    if d.get("schema", PLAN_SCHEMA) != PLAN_SCHEMA:
        bad.add("schema", f"unsupported plan schema {show(d.get('schema'))}; this engine reads {PLAN_SCHEMA}")
    if d.get("model") is None:
        bad.add("model", "is required: a model preset name or an architecture")
    cluster = d.get("cluster")
    base_cluster, counts, gpn_used = None, None, None
    if not isinstance(cluster, dict):
        bad.add("cluster", "is required: an object with a node template and num_nodes or num_gpus")
    else:
        base_cluster = {k: v for k, v in cluster.items() if k not in ("num_nodes", "num_gpus")}
        resolved = bad(resolve_cluster, base_cluster, nodes, accelerators)
        gpn = resolved.get("gpus_per_node") if resolved is not None else None
        if resolved is not None and bad.passes(_whole(1, 1024), gpn, "cluster.gpus_per_node"):
            node_counts = bad(_node_counts, cluster, gpn)
            if node_counts is not None:
                counts, gpn_used = node_counts
                if gpn_used != gpn:
                    base_cluster["gpus_per_node"] = gpn_used
    sections = {}
    for sec in ("training", "constraints", "space", "strategy", "runtime", "checkpoint"):
        if d.get(sec) is not None and not isinstance(d[sec], dict):
            bad.add(sec, "must be an object")
        else:
            sections[sec] = d.get(sec) or {}
    if d.get("model") is not None:
        # the model preset expanded as resolve() does it (the cluster's errors are its own)
        model = bad(_expand, d["model"], presets.MODELS if models is None else models, "model", "model")
        if model is not None:
            bad(ModelSpec.from_dict, model)
    training, total_tokens = _parse_training(sections.get("training"), bad)
    # each candidate's own: a base value would be overwritten without a word
    for k, dim in (("kind", "strategies"), ("offload_optimizer", "offload_optimizer"),
                   ("offload_params", "offload_params"), ("prefetch_depth", "prefetch_depth")):
        if k in sections.get("strategy", {}):
            bad.add(f"strategy.{k}", f"is set per candidate by space.{dim}; give the values there")
    margin = max_usd = min_gbs = deadline = None
    if "constraints" in sections:
        c = sections["constraints"]
        for k in c:
            if k not in ("memory_margin", "max_usd_per_hour", "min_global_batch_size", "max_time_to_train_s"):
                bad.add(f"constraints.{k}", "unknown field; known fields: max_usd_per_hour, "
                                            "memory_margin, min_global_batch_size, max_time_to_train_s")
        margin = bad(_num, c, "memory_margin", "constraints", 0.0, 0.9)
        max_usd = bad(_num, c, "max_usd_per_hour", "constraints", 0.0)
        min_gbs = c.get("min_global_batch_size")
        if min_gbs is not None:
            bad(_whole(1, 10**9), min_gbs, "constraints.min_global_batch_size")
        deadline = bad(_num, c, "max_time_to_train_s", "constraints", 1.0)
    space = None
    if "space" in sections:
        s = sections["space"]
        for k in s:
            if k not in _DIMS:
                bad.add(f"space.{k}", f"unknown field; known fields: {', '.join(_DIMS)}")
        checkpoint = sections.get("checkpoint") or {}
        tp_default = [t for t in (1, 2, 4, 8) if t <= (gpn_used or 8)] or [1]
        lists = dict(
            tensor_parallel=(tp_default, _whole()),
            pipeline_parallel=([1, 2, 4, 8, 16], _whole()),
            interleave_stages=([1], _whole(1, 1000)),
            micro_batch_size=([1, 2, 4], _whole(1, 1_000_000)),
            recompute=(list(RECOMPUTE), _one_of(RECOMPUTE)),
            strategies=(list(DEFAULT_STRATEGIES), _one_of(STRATEGY_KINDS)),
            offload_optimizer=(["none"], _one_of(OFFLOAD_TARGETS)),
            offload_params=(["none"], _one_of(OFFLOAD_TARGETS)),
            prefetch_depth=([1], _whole(0, 10_000)),
            checkpoint_target=([checkpoint.get("target", "parallel_fs")], _one_of(TARGET_KINDS)),
            checkpoint_interval_s=([None], _positive))
        space = {k: bad(_list, s, k, "space", default, check) for k, (default, check) in lists.items()}
    objective = d.get("objective", "step_time")
    if objective not in OBJECTIVES:
        bad.add("objective", f"must be one of {', '.join(OBJECTIVES)}; got {show(objective)}")
    elif objective in ("time_to_train", "cost_to_train") and total_tokens is None \
            and training is not None and not bad.named("training.total_tokens"):
        bad.add("training.total_tokens", f"is required for the objective {objective}")
    if deadline is not None and total_tokens is None and training is not None \
            and not bad.named("training.total_tokens"):
        bad.add("training.total_tokens", "is required for constraints.max_time_to_train_s")
    top_k = d.get("top_k", 10)
    bad(_whole(1, MAX_TOP_K), top_k, "top_k")
    bad.check(limit=MAX_REPORTED_ERRORS)
    # every field is good: the checks across them
    n = len(counts)
    for v in space.values():
        n *= len(v)
    if n > max_candidates:
        longest = max(space, key=lambda k: len(space[k]))
        raise ScenarioError(f"space.{longest}", f"the space has {n:,} candidates; at most "
                                                f"{max_candidates:,} per plan (shorten this list)")
    cluster_out = dict(base_cluster)
    return dict(schema=PLAN_SCHEMA, name=d.get("name"), model=d["model"], cluster=cluster_out,
                node_counts=counts, training=training, total_tokens=total_tokens,
                strategy=dict(d.get("strategy") or {}), runtime=d.get("runtime"),
                checkpoint=dict(d.get("checkpoint") or {}), convention=d.get("convention"),
                constraints=dict(memory_margin=margin or 0.0, max_usd_per_hour=max_usd,
                                 min_global_batch_size=min_gbs, max_time_to_train_s=deadline),
                space=space, objective=objective, top_k=top_k, num_candidates=n)


def _parse_training(section: dict | None, bad: Collect) -> tuple[dict | None, float | None]:
    """``(training section, total_tokens)`` of a plan spec's ``training`` (None when it is
    not an object: ``(None, None)``), its errors recorded in ``bad``: the planner's own
    rules, then the base's other fields as :meth:`TrainingSpec.from_dict` checks them
    (named ``training.<field>``; the fields already reported are left out of that check)."""
    if section is None:
        return None, None
    training = dict(section)
    for k in sorted(_SPACE_TRAINING):
        if k in training:
            bad.add(f"training.{k}", f"is chosen by the planner: list its values in space.{k}")
    if training.get("context_parallel") not in (None, 1):
        # its prefilters and bounds (GPUs per model replica, the HBM floor) count TP x PP
        bad.add("training.context_parallel",
                "the planner does not search context parallelism yet: evaluate CP "
                "layouts as scenarios (or compare them)")
    for k in ("pipeline_layers", "first_pipeline_layers", "last_pipeline_layers"):
        if training.get(k) is not None:
            bad.add(f"training.{k}", "the planner searches even splits of the layers "
                                     "over pipeline_parallel; evaluate an uneven split "
                                     "as a scenario")
    if training.get("pipeline_schedule") not in (None, "1f1b"):
        bad.add("training.pipeline_schedule", "the planner searches 1F1B (and "
                                              "interleaved) schedules only")
    total_tokens = bad(_num, training, "total_tokens", "training", lo=1)
    tps = training.pop("tokens_per_step", None)
    training.pop("total_tokens", None)
    seq = training.get("seq_len", 4096)
    seq_ok = bad.passes(_whole(1, 100_000_000), seq, "training.seq_len")
    if tps is not None and bad.passes(_whole(1, 10**12), tps, "training.tokens_per_step"):
        if "global_batch_size" in training:
            bad.add("training.tokens_per_step", "give tokens_per_step or global_batch_size, not both")
        elif seq_ok and tps % seq:
            bad.add("training.tokens_per_step", f"must be a multiple of seq_len ({seq}), got {tps}")
        elif seq_ok:
            training["global_batch_size"] = tps // seq
    reported = {e.field.split(".")[1] for e in bad.errors if e.field.startswith("training.")}
    # the base's other fields, named training.<field>
    bad(TrainingSpec.from_dict, {k: v for k, v in training.items() if k not in reported})
    return training, total_tokens


def _spec(spec: dict, lookups: dict | None = None) -> dict:
    """``spec`` parsed, unless it already is (the output of :func:`parse_spec`)."""
    if isinstance(spec, dict) and "node_counts" in spec and "num_candidates" in spec:
        return spec
    return parse_spec(spec, **(lookups or {}))


# ------------------------------------------------------------------ the candidates
def candidate(spec: dict, index: int, **lookups) -> tuple[dict, dict]:
    """``(choices, scenario dict)`` of candidate ``index`` (0 <= index < num_candidates)."""
    spec = _spec(spec, lookups)
    dims = [spec["node_counts"]] + [spec["space"][k] for k in _DIMS]
    pick = []
    for values in reversed(dims):          # mixed radix, the last list varies fastest
        index, r = divmod(index, len(values))
        pick.append(values[r])
    nodes, tp, pp, v, mb, rc, kind, oo, op, pf, target, interval = reversed(pick)
    choices = dict(num_nodes=nodes, tensor_parallel=tp, pipeline_parallel=pp, interleave_stages=v,
                   micro_batch_size=mb, recompute=rc, strategy=kind, offload_optimizer=oo,
                   offload_params=op, prefetch_depth=pf, checkpoint_target=target,
                   checkpoint_interval_s=interval)
    training = _training_section(spec, tp, pp, v, mb, rc)
    strategy = _strategy_section(spec, kind, oo, op, pf, tp * pp)
    checkpoint = dict(spec["checkpoint"], target=target)
    if interval is not None:
        checkpoint["interval_s"] = interval
    sc = dict(model=spec["model"], cluster=dict(spec["cluster"], num_nodes=nodes),
              training=training, strategy=strategy, checkpoint=checkpoint)
    if spec.get("runtime") is not None:
        sc["runtime"] = spec["runtime"]
    if spec.get("convention") is not None:
        sc["convention"] = spec["convention"]
    return choices, sc


def _training_section(spec: dict, tp: int, pp: int, v: int, mb: int, rc: str) -> dict:
    training = dict(spec["training"], tensor_parallel=tp, pipeline_parallel=pp,
                    micro_batch_size=mb, recompute=rc)
    if v > 1:
        training["interleave_stages"] = v
    training.setdefault("sequence_parallel", tp > 1)     # Megatron's practice with TP
    return training


def _strategy_section(spec: dict, kind: str, oo: str, op: str, pf: int, mp: int) -> dict:
    strategy = dict(spec["strategy"], kind=kind, offload_optimizer=oo, offload_params=op,
                    prefetch_depth=pf)
    if kind == "fsdp_hybrid_shard" and "shard_group_size" not in strategy:
        strategy["shard_group_size"] = _hybrid_group(spec, mp)
    return strategy


def _hybrid_group(spec: dict, mp):
    """HSDP's shard group when the spec names none: the GPUs of a node over TP x PP
    (``mp``, an int or an array), or 1 when the cluster section gives no GPU count."""
    gpn = spec["cluster"].get("gpus_per_node") or 0
    if not gpn:
        return 1 if isinstance(mp, int) else np.ones_like(mp)
    return max(1, gpn // mp) if isinstance(mp, int) else np.maximum(1, gpn // mp)


def hbm_lower_bound_bytes(sc: Scenario, lay) -> float:
    """Bytes every GPU's HBM holds at least (:func:`_hbm_floor_bytes` on the scenario's
    sections): the memory model of :mod:`simulation.memory` never gives less
    (``tests/engine/test_planner.py`` checks it on generated spaces)."""
    pc = model_params(sc.model)
    tr = sc.training
    sb = state_bytes(tr.precision, tr.optimizer, tr.dtypes)
    act = _stage_activations(sc.model, tr, lay.grad_accumulation_steps, sc.convention == "realistic")
    plans = stage_plans_for(sc, lay)
    if len(plans) > 1 and (is_uneven(sc) or tr.pipeline_schedule != "1f1b"):
        # uneven stages / DualPipe: the least-loaded rank's states and the most activations
        # any rank stores (the worst rank holds at least both)
        share = min(stage_param_share(sc, pc, lay, pl) for pl in plans)
        most = max(pl.activation_layers * plan_activations(sc.model, tr, lay, pl, act).per_layer_bytes
                   for pl in plans)
        act = dataclasses.replace(act, layers_bytes=most, layers_held=0.0)
        return _hbm_floor_bytes(sc.strategy, sb, pc.total * share * lay.pipeline_parallel,
                                0, lay.tensor_parallel, lay.pipeline_parallel, lay.shard_degree, act,
                                sc.runtime.runtime_bytes if sc.convention == "realistic" else 0.0,
                                _trained(sc.model, tr) and _trained(sc.model, tr) * share * lay.pipeline_parallel,
                                None, tr)
    return _hbm_floor_bytes(sc.strategy, sb, experts.floor_params(sc.model, pc.total, tr),
                            sc.model.num_layers, lay.tensor_parallel,
                            lay.pipeline_parallel, lay.shard_degree, act,
                            sc.runtime.runtime_bytes if sc.convention == "realistic" else 0.0,
                            _trained(sc.model, tr), _layer_params(sc.model, pc), tr)


def _layer_params(model, pc) -> float | None:
    """The transformer layers' parameters (every pipeline stage holds its share of them;
    the embedding, final norm and head sit on one stage each:
    :func:`simulation.memory.stage_param_share`), or None when only ``num_params`` is known."""
    if not model.has_architecture or model.num_params is not None:
        return None
    return (model.num_layers or 0) * pc.per_layer


def _trained(model, tr) -> float | None:
    """LoRA's adapter count (the parameters with gradients and optimizer states), or
    None when every parameter trains."""
    return None if tr.lora is None else adapter_params(model, tr.lora)["total"]


def _hbm_floor_bytes(st, sb, num_params: float, num_layers: int, tp: int, pp: int, shard: int,
                     act, runtime_bytes: float, trained_params: float | None = None,
                     layer_params: float | None = None, training=None) -> float:
    """A lower bound on one GPU's HBM bytes, from the terms of
    :func:`simulation.memory.build_parts` that are always there, each at its smallest:

    * ``psi`` = the parameters per model-parallel rank, ``num_params / (tp x pp)``, with a
      pipeline ``layer_params / (tp x pp)`` where given (the layers every stage holds; the
      embedding and head sit on the first and last stage only,
      :func:`simulation.memory.stage_param_share`);
    * 16-bit parameters ``params x psi / d`` (``d`` the shard degree under ZeRO-3 / FSDP,
      else 1; FSDP's fp32 flat shards are larger), none with parameters offloaded;
    * gradients ``min(grads, params, 4) x psi / d`` (``d`` from ZeRO-2 on; Megatron's and
      DDP's fp32 ``main_grad`` are larger), none with the optimizer offloaded (they move
      to the host with it);
    * optimizer states ``(master + moments) x psi / d`` (``d`` from ZeRO-1 on; FSDP's
      master weights are the parameters above), none with the optimizer offloaded
      (ZeRO, SC'20 Table 1: ``2 + 2 + K`` bytes per parameter split by stage);
    * the stored activations (``act``: :class:`simulation.activations.StageActivations`
      of the first stage, ``layers_bytes``; the last stage holds ``per_layer_bytes x
      layers / pp``): the larger of the two, since the memory model reports the worse
      stage; none when they are offloaded to the CPU;
    * the CUDA context and libraries (``runtime_bytes``, realistic convention only).

    Buffers, the loss and logits, the recompute working set and fragmentation are left
    out: each is zero somewhere. Units: bytes; ``st`` a StrategySpec, ``sb`` StateBytes.
    ``trained_params``: under LoRA the adapters' count, which the gradients and optimizer
    states are counted on (the frozen base has neither); None: ``num_params``.
    ``training`` (the TrainingSpec, optional): under LoRA the adapters may have no master
    copy (PEFT's fp32 adapters, qlora.py's bf16 ones), a quantised base (QLoRA) stores
    at least 0.5 B (4-bit) or 1 B (int8) a parameter, and paged optimizer states
    (``paged_adamw*``) can leave the GPU: each at its smallest.
    """
    stage = st.zero_stage
    psi = num_params / (tp * pp)
    if layer_params is not None:
        psi = np.where(pp > 1, layer_params / (tp * pp), psi) if isinstance(pp, np.ndarray) else (
            layer_params / (tp * pp) if pp > 1 else psi)
    p_div = shard if stage >= 3 else 1
    g_div = shard if stage >= 2 else 1
    o_div = shard if stage >= 1 else 1
    fsdp_master = st.is_fsdp and sb.master_weights > 0 and trained_params is None
    out = runtime_bytes
    lora = getattr(training, "lora", None)
    base_bpp = sb.params
    if lora is not None and lora.quantised:
        base_bpp = 1.0 if lora.base_dtype == "int8" else 0.5
    elif lora is not None and lora.base_dtype is not None:
        base_bpp = 2.0
    if st.offload_params == "none":
        out += (min(sb.params, sb.master_weights) if fsdp_master else base_bpp) * psi / p_div
    if trained_params is not None:
        psi = trained_params / (tp * pp)
        if layer_params is not None and num_params:       # the memory model's stage share
            psi = np.where(pp > 1, psi * layer_params / num_params, psi) if isinstance(pp, np.ndarray) \
                else (psi * layer_params / num_params if pp > 1 else psi)
    master = 0.0 if fsdp_master or lora is not None else sb.master_weights
    moments = 0.0 if getattr(training, "optimizer", None) in PAGED_OPTIMIZERS else sb.optimizer_states
    if st.offload_optimizer == "none":
        out += min(sb.grads, sb.params, 4.0) * psi / g_div
        out += (master + moments) * psi / o_div
    if st.offload_activations != "cpu":
        out += (act.layers_bytes if pp == 1 else
                max(act.layers_bytes, act.per_layer_bytes * num_layers / pp))
    return out


def _classify(err: ScenarioError) -> str:
    if err.field in _DIVISIBILITY_FIELDS:
        return "indivisible"
    return "invalid_combination"


def _interleave_check(sc: Scenario, lay) -> None:
    """Megatron's interleaved schedule: ``v`` chunks per stage need a pipeline, layers that
    split into ``pp x v`` chunks, and micro-batches a multiple of ``pp``
    (megatron/core/pipeline_parallel/schedules.py,
    ``forward_backward_pipelining_with_interleaving``: "number of microbatches ... must be
    divisible by pipeline-model-parallel-size when using interleaved schedule")."""
    v = sc.training.interleave_stages or 1
    if v == 1:
        return
    p = lay.pipeline_parallel
    if p == 1:
        raise ScenarioError("training.interleave_stages", "needs pipeline_parallel > 1")
    if sc.model.num_layers % (p * v):
        raise ScenarioError("training.interleave_stages",
                            f"pipeline_parallel x interleave_stages = {p * v} must divide the "
                            f"{sc.model.num_layers} layers")
    if lay.grad_accumulation_steps % p:
        raise ScenarioError("training.interleave_stages",
                            f"the {lay.grad_accumulation_steps} micro-batches must be a multiple "
                            f"of pipeline_parallel ({p}) with an interleaved schedule")


def _memory(report) -> dict:
    """A report's memory section (of a report dict, or :func:`memory_tiers`' answer)."""
    return report.get("memory", report)


def _tier_over(report, margin: float) -> str | None:
    """The first tier above ``capacity x (1 - margin)`` (HBM first), or None."""
    mem = _memory(report)
    for scope in ("per_gpu", "per_node"):
        for tier, s in mem[scope].items():
            if s["total_bytes"] > 0 and s["total_bytes"] > s["capacity_bytes"] * (1 - margin):
                return tier
    return None


def _objective(spec: dict, row: dict) -> float | None:
    obj = spec["objective"]
    if obj == "step_time":
        return row["step_time_s"]
    if obj == "cost_per_million_tokens":
        return row["usd_per_million_tokens"]
    if obj == "time_to_train":
        return row["time_to_train_s"]
    return row["cost_to_train_usd"]


def _engine_failure(e: BaseException) -> bool:
    """True for an error of the computation itself (Python's built-in exceptions, numpy's,
    the engine's), which rejects one candidate as ``engine_error``; anything else (a
    worker's time limit, a cancel raised by a progress callback) stops the chunk."""
    mod = type(e).__module__ or ""
    return mod == "builtins" or mod.split(".")[0] in ("simulation", "numpy")


def _engine_error(out: dict, e: BaseException) -> dict:
    return dict(out, status="engine_error", message=f"engine error: {type(e).__name__}: {e}")


def _scenario_of(spec: dict, index: int, lookups: dict, work_cap: bool = True):
    """``(out, sc, lay)`` of candidate ``index``, or ``(out with its refusal, None, None)``
    (steps 1-3 of the module docstring; the work cap only with ``work_cap``)."""
    choices, d = candidate(spec, index)
    out = dict(index=index, choices=choices, scenario=d)
    try:
        sc = Scenario.from_dict(d, **lookups)
        lay = layout(sc)
        _interleave_check(sc, lay)
    except ScenarioError as e:
        return dict(out, status=_classify(e), message=str(e)), None, None
    if work_cap:
        try:
            validate(sc)
        except ScenarioError as e:
            return dict(out, status="over_work_cap", message=str(e)), None, None
    refusal = _constraint_refusal(spec, sc.cluster, lay.global_batch_size)
    if refusal:
        return dict(out, status=refusal[0], message=refusal[1]), None, None
    return out, sc, lay


def _constraint_refusal(spec: dict, cluster, global_batch_size: int) -> tuple[str, str] | None:
    con = spec["constraints"]
    price = cluster.price_usd_per_node_hour
    usd_per_hour = price * cluster.num_nodes if price is not None else None
    if con["max_usd_per_hour"] is not None and (usd_per_hour is None or usd_per_hour > con["max_usd_per_hour"]):
        msg = ("the node has no price (cluster.price_usd_per_node_hour)" if usd_per_hour is None else
               f"{usd_per_hour:,.2f} USD per hour is over the budget of {con['max_usd_per_hour']:,.2f}")
        return "over_budget", msg
    if con["min_global_batch_size"] is not None and global_batch_size < con["min_global_batch_size"]:
        return "below_min_global_batch", f"global batch {global_batch_size} < {con['min_global_batch_size']}"
    return None


def _lb_message(lb: float, cap: float) -> str:
    return (f"HBM needs at least {lb / 2**30:,.1f} GiB (its states, stored activations and "
            f"CUDA context); {cap / 2**30:,.1f} GiB usable (lower bound)")


def memory_tiers(sc: Scenario, lay) -> dict:
    """``{"per_gpu": {tier: summary}, "per_node": {...}}``: the memory section of
    ``evaluate(sc, include_step=False)`` (its worst pipeline stage, fragmentation
    included) without the rest of the report (notes, cross-checks, the scenario's JSON)."""
    from .evaluate import _stage_parts, worst_stage
    tr = sc.training
    stages = _stage_parts(sc, model_params(sc.model), lay, state_bytes(tr.precision, tr.optimizer, tr.dtypes),
                          worst_only=True)
    per_gpu, per_node = worst_stage(stages)[2]
    return {"per_gpu": per_gpu, "per_node": per_node}


def _fit_refusal(spec: dict, sc: Scenario, lay, bound: bool) -> tuple[str, str] | None:
    """Step 4: the HBM lower bound (``bound``), then the quick memory estimate."""
    margin = spec["constraints"]["memory_margin"]
    cap = sc.cluster.accelerator.hbm_capacity_bytes * (1 - margin)
    if bound:
        lb = hbm_lower_bound_bytes(sc, lay)
        if lb > cap:
            return "does_not_fit_hbm", _lb_message(lb, cap)
    rep = memory_tiers(sc, lay)
    tier = _tier_over(rep, margin)
    if tier is not None:
        return f"does_not_fit_{tier}", _over_message(rep, tier, margin)
    return None


def _row(spec: dict, out: dict, sc: Scenario) -> dict:
    """Step 5: the step model on a candidate that fits; its row (feasible or not)."""
    margin = spec["constraints"]["memory_margin"]
    r = evaluate(sc, detail=False, every_stage=False).to_dict()
    tier = _tier_over(r, margin)
    if tier is not None:
        return dict(out, status=f"does_not_fit_{tier}", message=_over_message(r, tier, margin))
    step = r.get("step", {})
    if not step.get("available"):
        return dict(out, status="step_unavailable", message=step.get("reason", "no step time"))
    tps = r["throughput"]["tokens_per_s"]
    cost = r.get("cost", {})
    goodput = (r.get("checkpoint") or {}).get("goodput")
    ttt = spec["total_tokens"] / tps / (goodput or 1.0) if spec["total_tokens"] and tps else None
    # fit_state: a feasible row may still be "tight" (within the engine's memory error of
    # the capacity), as the run page of its scenario says
    row = dict(out, status="feasible", message="", fit_state=r.get("fit_state"),
               layout_index=layout_index(spec, out["index"]),
               data_parallel=r["parallelism"]["data_parallel"],
               global_batch_size=r["parallelism"]["global_batch_size"],
               grad_accumulation_steps=r["parallelism"]["grad_accumulation_steps"],
               step_time_s=step["time_s"], tokens_per_s=tps, mfu=r.get("mfu"),
               usd_per_hour=cost.get("usd_per_hour"),
               usd_per_million_tokens=cost.get("usd_per_million_tokens"), goodput=goodput,
               time_to_train_s=ttt,
               cost_to_train_usd=(ttt * cost["usd_per_hour"] / 3600
                                  if ttt is not None and cost.get("usd_per_hour") is not None else None),
               hbm_total_bytes=r["memory"]["per_gpu"]["hbm"]["total_bytes"],
               hbm_capacity_bytes=r["memory"]["per_gpu"]["hbm"]["capacity_bytes"],
               breakdown_s=step["breakdown_s"],
               bottleneck=r.get("verdict", {}).get("bottleneck"),
               bottleneck_message=r.get("verdict", {}).get("message"))
    deadline = spec["constraints"].get("max_time_to_train_s")
    if deadline is not None and (ttt is None or ttt > deadline):
        return dict(out, status="over_deadline",
                    message=(f"{ttt / 86400:,.1f} days to train is over the deadline of "
                             f"{deadline / 86400:,.1f} days (constraints.max_time_to_train_s)"
                             if ttt is not None else "no time to train (no tokens per second)"))
    row["objective"] = _objective(spec, row)
    if row["objective"] is None:
        return dict(out, status="over_budget" if spec["objective"] != "step_time" else "step_unavailable",
                    message=f"no {spec['objective']} (the node has no price: cluster.price_usd_per_node_hour)")
    return row


def evaluate_candidate(spec: dict, index: int, prune: bool = True, **lookups) -> dict:
    """One candidate through the filters of the module docstring, one after another.

    Returns ``{"index", "choices", "scenario", "status": "feasible" | <reason>, "message"}``
    plus, when feasible, its numbers (step time, cost, bottleneck, ...). With ``prune``
    false the lower bound is skipped and every fitting candidate is simulated (what the
    brute-force tests compare against). An exception of the engine on this candidate is
    its ``engine_error``, with the exception in the message.
    """
    spec = _spec(spec, lookups)
    out, sc, lay = _scenario_of(spec, index, lookups)
    if sc is None:
        return out
    try:
        if prune:
            refusal = _fit_refusal(spec, sc, lay, bound=True)
            if refusal:
                return dict(out, status=refusal[0], message=refusal[1])
        return _row(spec, out, sc)
    except Exception as e:           # noqa: BLE001 - one candidate's failure is its reason
        if not _engine_failure(e):
            raise
        return _engine_error(out, e)


def _over_message(r: dict, tier: str, margin: float) -> str:
    for scope in ("per_gpu", "per_node"):
        s = _memory(r)[scope].get(tier)
        if s is not None and s["total_bytes"] > s["capacity_bytes"] * (1 - margin):
            where = "per GPU" if scope == "per_gpu" else "per node"
            return (f"{tier.upper()} {where} needs {s['total_bytes'] / 2**30:,.1f} GiB; "
                    f"{s['capacity_bytes'] * (1 - margin) / 2**30:,.1f} GiB usable"
                    + (f" with a {margin:.0%} margin" if margin else ""))
    return tier


# ------------------------------------------------------------------ ranking
def layout_index(spec: dict, index: int) -> int:
    """Candidate ``index`` with its strategy-section choices (strategy, offload tiers,
    prefetch depth: four consecutive digits of the mixed radix of :func:`candidate`) at
    their first values: the same number for every candidate of one layout."""
    space = spec["space"]
    inner = len(space["checkpoint_target"]) * len(space["checkpoint_interval_s"])
    block = inner * math.prod(len(space[k]) for k in _STRATEGY_DIMS)
    return index - index % block + index % inner


def _rank_key(row: dict) -> tuple:
    """A feasible row's class (and its rank: smaller is better): objective, step time,
    cost per million tokens, layout. Rows of one layout at the same figures share it."""
    return (row["objective"], row["step_time_s"], _cost(row), row.get("layout_index", row["index"]))


def _classes(rows: list[dict]) -> list[list[dict]]:
    """Feasible rows grouped by :func:`_rank_key`, best class first, each by index."""
    groups: dict = {}
    for r in sorted(rows, key=lambda r: r["index"]):
        groups.setdefault(_rank_key(r), []).append(r)
    return [groups[k] for k in sorted(groups)]


def _alternative_name(first: dict, other: dict) -> str:
    """What ``other`` changes in ``first``'s strategy section, in words: "zero3",
    "zero1, prefetch 2", "zero_offload, optimizer on cpu"."""
    a, b = first["choices"], other["choices"]
    words = [b["strategy"]] if b["strategy"] != a["strategy"] else []
    if b["offload_optimizer"] != a["offload_optimizer"]:
        words.append(f"optimizer on {b['offload_optimizer']}")
    if b["offload_params"] != a["offload_params"]:
        words.append(f"parameters on {b['offload_params']}")
    if b["prefetch_depth"] != a["prefetch_depth"]:
        words.append(f"prefetch {b['prefetch_depth']}")
    return ", ".join(words)


def _entry(members: list[dict]) -> dict:
    """One ranked entry of a class: its first row, with the others as ``alternatives``
    (``index``, ``choices``, ``name``, ``hbm_total_bytes``) and ``alternatives_message``
    ("also: zero1 (58.4 GiB HBM) at the same step time and cost (megatron_dist_opt:
    61.5 GiB HBM)"),
    empty for a class of one."""
    first = members[0]
    alts = [dict(index=r["index"], choices=r["choices"], name=_alternative_name(first, r),
                 hbm_total_bytes=r["hbm_total_bytes"]) for r in members[1:]]
    gib = lambda b: f"{b / 2**30:,.1f} GiB HBM"  # noqa: E731
    msg = ("also: " + ", ".join(f"{a['name']} ({gib(a['hbm_total_bytes'])})" for a in alts)
           + f" at the same step time and cost ({first['choices']['strategy']}: {gib(first['hbm_total_bytes'])})"
           if alts else "")
    return dict(first, alternatives=alts, alternatives_message=msg)


def pareto_front(rows: list[dict]) -> list[dict]:
    """Rows no other row beats on both step time and cost per million tokens (a row without
    a cost is judged on step time alone), sorted by step time; of rows with the same step
    time and cost (say, two prefetch depths that change neither) only the lowest index."""
    pts = sorted(rows, key=lambda r: (r["step_time_s"], _cost(r), r["index"]))
    front, best_cost = [], math.inf
    for r in pts:
        c = _cost(r)
        if c < best_cost or (not front and c == math.inf):
            front.append(r)
            best_cost = c
    return front


def _cost(r: dict) -> float:
    c = r.get("usd_per_million_tokens")
    return math.inf if c is None else c


def _keep(spec: dict, rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """``(top_k, front)`` of feasible rows: the k best classes as entries (:func:`_entry`)
    and the Pareto front's rows."""
    top = [_entry(c) for c in _classes(rows)[:spec["top_k"]]]
    return top, pareto_front(rows)


def _kept_rows(spec: dict, rows: list[dict]) -> list[dict]:
    """What a chunk hands to the merge: every row of its k best classes and its front."""
    kept = {r["index"]: r for c in _classes(rows)[:spec["top_k"]] for r in c}
    kept.update((r["index"], r) for r in pareto_front(rows))
    return [kept[i] for i in sorted(kept)]


def _empty_counts() -> dict:
    return {k: 0 for k in REASONS}


def plan_chunk(spec: dict, chunk_index: int = 0, n_chunks: int = 1, prune: bool = True,
               progress: Callable[[dict], None] | None = None, every: int = 25,
               **lookups) -> dict:
    """Search chunk ``chunk_index`` of ``n_chunks`` (candidates ``[N k / n, N (k+1) / n)``).

    Returns JSON: ``{"chunk", "n_chunks", "candidates", "done", "feasible", "rejected":
    {reason: count}, "examples": {reason: message}, "dominated", "kept": [row]}`` where
    ``kept`` holds the chunk's top-k and Pareto front, ``simulated`` counts the candidates
    the step model ran on. ``progress(partial)`` is called with ``{"done", "feasible",
    "best"}`` every ``every`` candidates screened and fitted, then every ``every``
    candidates through the step model (``done`` = all of the chunk by then).
    """
    spec = _spec(spec, lookups)
    if not isinstance(n_chunks, int) or n_chunks < 1:
        raise ScenarioError("n_chunks", f"must be a whole number >= 1, got {show(n_chunks)}")
    if not isinstance(chunk_index, int) or not 0 <= chunk_index < n_chunks:
        raise ScenarioError("chunk_index", f"must be from 0 to {n_chunks - 1}, got {show(chunk_index)}")
    n = spec["num_candidates"]
    lo, hi = n * chunk_index // n_chunks, n * (chunk_index + 1) // n_chunks
    if not prune:
        return _exhaustive_chunk(spec, chunk_index, n_chunks, lo, hi, progress, every, lookups)
    s = _search_chunk(spec, lo, hi, progress, every, lookups)
    examples = {}
    for status, (_i, msg) in s.first.items():
        examples[status] = _screen_message(*msg, lookups) if isinstance(msg, tuple) else msg
    kept = _kept_rows(spec, [r for k in s.top for r in s.members[k]] + s.front)
    return dict(chunk=chunk_index, n_chunks=n_chunks, candidates=hi - lo, done=hi - lo,
                feasible=s.feasible, rejected=s.counts, examples=examples,
                dominated=s.feasible - len(kept), simulated=s.simulated, kept=kept)


def _exhaustive_chunk(spec, chunk_index, n_chunks, lo, hi, progress, every, lookups) -> dict:
    """Every candidate of the chunk through :func:`evaluate_candidate` without bounds:
    each one that fits is simulated (the reference the search is tested against)."""
    counts, examples, feasible, best = _empty_counts(), {}, [], None
    for k, i in enumerate(range(lo, hi)):
        row = evaluate_candidate(spec, i, prune=False, **lookups)
        st = row["status"]
        if st == "feasible":
            feasible.append(row)
            if best is None or _rank_key(row) < _rank_key(best):
                best = row
        else:
            counts[st] = counts.get(st, 0) + 1
            examples.setdefault(st, row["message"])
        if progress and (k + 1) % every == 0:
            progress(dict(done=k + 1, feasible=len(feasible), best=_brief(best)))
    kept = _kept_rows(spec, feasible)
    return dict(chunk=chunk_index, n_chunks=n_chunks, candidates=hi - lo, done=hi - lo,
                feasible=len(feasible), rejected=counts, examples=examples,
                dominated=len(feasible) - len(kept), simulated=len(feasible), kept=kept)


# ------------------------------------------------------------------ the fast search
BLOCK = 1 << 16          # candidates screened together with numpy
_SLACK = 1e-9            # relative slack on the lower bounds against float rounding
_SCREENED = (None, "indivisible", "invalid_combination", "over_budget", "below_min_global_batch",
             "does_not_fit_hbm")


def step_lower_bound_s(sc: Scenario, lay) -> float:
    """Seconds a step takes at least:
    ``(m + (p - 1) / v) x (layers / p) x (fwd + bwd) + p2p + acc``.

    ``fwd``/``bwd``: one layer's forward and backward (recomputation included) on one
    micro-batch (:func:`simulation.step.compute_times`), ``m`` micro-batches, ``p``
    pipeline stages, ``v`` interleaved chunks. The step graph chains every layer's compute
    on the GPU stream (:func:`simulation.stepgraph.build`), so a micro-batch takes at least
    ``layers / p x (fwd + bwd)``; :func:`simulation.step.step_report` adds ``m - 1 + (p -
    1) / v`` such micro-batches to the last one (Narayanan et al. 2021, Sec. 2.2: the
    interleaved bubble is ``(p - 1) / v`` micro-batches), then the same ``p2p`` (pipeline
    sends and the vocabulary all-reduces) and ``acc`` (gradient accumulation, DDP's bucket
    copies, Megatron's optimizer passes) as here. The TP all-reduces, the ZeRO gathers,
    the head and the optimizer step are left out, so the bound never exceeds the
    simulated step (a property test)."""
    from .step import (compute_times, ddp_bucket_copy_s, embedding_tp_allreduce_s, grad_accumulation_s,
                       links_for, optimizer_extra_s, pipeline_p2p_s)
    pc = model_params(sc.model)
    tr = sc.training
    sb = state_bytes(tr.precision, tr.optimizer, tr.dtypes)
    ct = compute_times(sc, pc)
    m, p, v = lay.grad_accumulation_steps, lay.pipeline_parallel, (tr.interleave_stages or 1)
    links = links_for(sc, lay)
    dual = tr.pipeline_schedule == "dualpipe"
    p2p_s = (0.0 if dual else pipeline_p2p_s(sc, lay, links)) + embedding_tp_allreduce_s(sc, lay, links)
    acc_s = ((m - 1) * grad_accumulation_s(sc, pc, lay, sb) + ddp_bucket_copy_s(sc, pc, lay, sb)
             + optimizer_extra_s(sc, pc, lay, sb))
    # uneven stages: no stage is faster than the least-loaded one, and a schedule of
    # slower stages never ends earlier (each op starts no sooner); DualPipe: no bubble
    fewest = min(pipeline_stage_layers(sc))
    bubble = 0.0 if dual else (p - 1) / v
    return (m + bubble) * fewest * (ct["fwd_s"] + ct["bwd_s"]) + p2p_s + acc_s


def _missing_tier(sc: Scenario) -> str | None:
    """The offload tier the node lacks (the step model's first check, ``step_report``)."""
    from .memory import OFFLOAD_TIER
    for t in (OFFLOAD_TIER.get(sc.strategy.offload_optimizer), OFFLOAD_TIER.get(sc.strategy.offload_params)):
        if t and t != "ddr" and t not in sc.cluster.tiers:
            return t
    return None


def _floors(spec: dict, sc: Scenario, lay, step_s: float) -> tuple[float, float, float]:
    """``(objective, step s, USD per million tokens)`` at least, from a step-time lower
    bound: every objective grows with the step time (the cost per token is the hourly
    price times the step over its tokens; the time to train divides by the goodput <= 1)."""
    if not step_s > 0:
        return 0.0, 0.0, 0.0
    tps = lay.global_batch_size * sc.training.seq_len / step_s
    price = sc.cluster.price_usd_per_node_hour
    per_hour = price * sc.cluster.num_nodes if price is not None else None
    cost = per_hour / 3600 / tps * 1e6 if per_hour is not None else math.inf
    obj = spec["objective"]
    if obj == "step_time":
        o = step_s
    elif obj == "cost_per_million_tokens":
        o = cost
    else:
        o = spec["total_tokens"] / tps
        if obj == "cost_to_train":
            o = o * per_hour / 3600 if per_hour is not None else math.inf
    return o, step_s, cost


class _Space:
    """The spec's space as numpy arrays, and what the screen needs: the model's layers and
    heads, each node count's cluster, the training and strategy sections (parsed once,
    shared with the candidates' scenarios, so the engine's identity memos hit)."""

    def __init__(self, spec: dict, lookups: dict):
        from .scenario import _parsed, StrategySpec
        self._parsed, self._strategy_cls = _parsed, StrategySpec
        self.spec = spec
        self.dims = [spec["node_counts"]] + [spec["space"][k] for k in _DIMS]
        self.shape = tuple(len(v) for v in self.dims)
        self.ok = "profile" not in spec["cluster"]       # a profile rewrites sections: no screen
        self.clusters = []
        if not self.ok:
            return
        probe = None
        for n in spec["node_counts"]:
            d = dict(model=spec["model"], cluster=dict(spec["cluster"], num_nodes=n),
                     training=spec["training"])
            for k in ("runtime", "convention"):
                if spec.get(k) is not None:
                    d[k] = spec[k]
            try:
                probe = Scenario.from_dict(d, **lookups)
            except ScenarioError:
                self.ok = False
                return
            self.clusters.append(probe.cluster)
        self.model = probe.model
        self.realistic = probe.convention == "realistic"
        self.runtime_bytes = probe.runtime.runtime_bytes if self.realistic else 0.0
        # with expert parallelism a rank holds fewer parameters than num_params / (tp pp):
        # the floor takes the fewest it may hold (experts.floor_params)
        self.num_params = experts.floor_params(self.model, model_params(self.model).total, probe.training)
        self.layer_params = _layer_params(self.model, model_params(self.model))
        self.layers, self.heads = self.model.num_layers, self.model.num_attention_heads or 0
        sp = spec["space"]
        self.arr = {k: np.asarray(sp[k], dtype=np.int64) for k in
                    ("tensor_parallel", "pipeline_parallel", "interleave_stages", "micro_batch_size")}
        self.gpus = np.array([c.num_gpus for c in self.clusters], dtype=np.int64)
        margin = spec["constraints"]["memory_margin"]
        self.cap = np.array([c.accelerator.hbm_capacity_bytes * (1 - margin) for c in self.clusters])
        most = spec["constraints"]["max_usd_per_hour"]
        self.over_budget = np.array([most is not None and (c.price_usd_per_node_hour is None or
                                                           c.price_usd_per_node_hour * c.num_nodes > most)
                                     for c in self.clusters])
        self.gbs = spec["training"].get("global_batch_size")
        self.hybrid = np.array([k == "fsdp_hybrid_shard" for k in sp["strategies"]])
        self.strategies: dict = {}   # (kind, oo, op, pf, group) indices -> StrategySpec | None
        self.trainings: dict = {}    # (tp, pp, v, mb, rc) indices -> (TrainingSpec, StateBytes) | None
        self.acts: dict = {}         # (training key, accumulation steps) -> StageActivations

    def _strategy(self, key):
        if key not in self.strategies:
            k, oo, op, pf, group = key
            sp = self.spec["space"]
            d = dict(self.spec["strategy"], kind=sp["strategies"][k], offload_optimizer=sp["offload_optimizer"][oo],
                     offload_params=sp["offload_params"][op], prefetch_depth=sp["prefetch_depth"][pf])
            if group >= 0:
                d["shard_group_size"] = int(group)
            try:
                self.strategies[key] = self._parsed(self._strategy_cls, d)
            except ScenarioError:
                self.strategies[key] = None
        return self.strategies[key]

    def _training(self, key):
        if key not in self.trainings:
            t, p, v, m, r = key
            sp = self.spec["space"]
            d = _training_section(self.spec, sp["tensor_parallel"][t], sp["pipeline_parallel"][p],
                                  sp["interleave_stages"][v], sp["micro_batch_size"][m], sp["recompute"][r])
            try:
                tr = self._parsed(TrainingSpec, d)
                self.trainings[key] = (tr, state_bytes(tr.precision, tr.optimizer, tr.dtypes))
            except ScenarioError:
                self.trainings[key] = None
        return self.trainings[key]

    def screen(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """``(code, floor)`` for candidates ``a .. b - 1``: ``code`` the index into
        :data:`_SCREENED` (0: on to the memory estimate), ``floor`` the HBM lower bound in
        bytes (0 where not computed). The rules are :func:`simulation.parallel.layout`'s,
        :func:`_interleave_check`'s, the strategy section's own checks, the budget, the
        minimum batch and :func:`_hbm_floor_bytes`, on whole arrays."""
        ix = np.unravel_index(np.arange(a, b, dtype=np.int64), self.shape)
        ni, ti, pi, vi, mi, ri, ki, ooi, opi, pfi = ix[:10]
        tp, pp = self.arr["tensor_parallel"][ti], self.arr["pipeline_parallel"][pi]
        v, mb = self.arr["interleave_stages"][vi], self.arr["micro_batch_size"][mi]
        gpus, mp = self.gpus[ni], tp * pp
        bad = gpus % mp != 0
        dp = np.where(bad, 1, gpus // mp)
        bad |= self.layers % pp != 0
        if self.heads:
            bad |= self.heads % tp != 0
        per_step = mb * dp
        gbs = per_step if self.gbs is None else np.full_like(per_step, self.gbs)
        bad |= gbs % per_step != 0
        gas = np.maximum(gbs // per_step, 1)
        bad |= (v > 1) & ((pp == 1) | (self.layers % (pp * v) != 0) | (gas % pp != 0))
        # the strategy sections, parsed once per distinct one
        base_group = self.spec["strategy"].get("shard_group_size")
        group = (np.full_like(mp, base_group) if base_group is not None else _hybrid_group(self.spec, mp))
        group = np.where(self.hybrid[ki], group, -1)
        n_s = int(np.prod(self.shape[6:10]))
        skey = np.ravel_multi_index((ki, ooi, opi, pfi), self.shape[6:10]) + n_s * (group + 1)
        su, sinv = np.unique(skey, return_inverse=True)
        specs = []
        for u in su:
            g, rest = divmod(int(u), n_s)
            specs.append(self._strategy(tuple(int(x) for x in np.unravel_index(rest, self.shape[6:10])) + (g - 1,)))
        valid_u = np.array([s is not None for s in specs])
        stage_u = np.array([s.zero_stage if s is not None else 0 for s in specs], dtype=np.int64)
        sval, stage = valid_u[sinv], stage_u[sinv]
        # DeepSpeed's pipeline engine takes ZeRO stage 0 or 1 only (scenario._check_pipeline_strategy)
        no_pipeline_u = np.array([s is not None and not s.takes_pipeline for s in specs])
        sval = sval & ~(no_pipeline_u[sinv] & (pp > 1))
        hyb = self.hybrid[ki] & (stage > 0)
        bad |= sval & hyb & (dp % np.where(group > 0, group, 1) != 0)
        code = np.where(bad, 1, 0).astype(np.int8)
        code[(code == 0) & ~sval] = 2
        code[(code == 0) & self.over_budget[ni]] = 3
        min_gbs = self.spec["constraints"]["min_global_batch_size"]
        if min_gbs is not None:
            code[(code == 0) & (gbs < min_gbs)] = 4
        floor = np.zeros(b - a)
        alive = np.nonzero(code == 0)[0]
        if alive.size:
            lkey = np.ravel_multi_index((ni, ti, pi, vi, mi, ri), self.shape[:6])[alive] * len(su) + sinv[alive]
            lu, first, linv = np.unique(lkey, return_index=True, return_inverse=True)
            lb_u = np.zeros(len(lu))
            for j, f in enumerate(alive[first]):
                trs = self._training((int(ti[f]), int(pi[f]), int(vi[f]), int(mi[f]), int(ri[f])))
                st = specs[sinv[f]]
                if trs is None or st is None:
                    continue
                tr, sb = trs
                g = int(gas[f])
                akey = (int(ti[f]), int(pi[f]), int(vi[f]), int(mi[f]), int(ri[f]), g)
                act = self.acts.get(akey)
                if act is None:
                    act = self.acts[akey] = _stage_activations(self.model, tr, g, self.realistic)
                shard = 1 if st.zero_stage == 0 else (int(group[f]) if st.kind == "fsdp_hybrid_shard"
                                                      else int(dp[f]))
                lb_u[j] = _hbm_floor_bytes(st, sb, self.num_params, self.layers, int(tp[f]), int(pp[f]),
                                           shard, act, self.runtime_bytes, _trained(self.model, tr),
                                           self.layer_params, tr)
            floor[alive] = lb_u[linv]
            over = floor[alive] > self.cap[ni[alive]]
            code[alive[over]] = 5
        return code, floor


class _Search:
    """One chunk's search state: counts, the first example of each reason, the rows kept
    (top-k by the objective, the Pareto front) and the candidates that fit, awaiting the
    step model in the order of their lower bounds."""

    def __init__(self, spec: dict, lookups: dict):
        self.spec, self.lookups, self.k = spec, lookups, spec["top_k"]
        self.counts, self.first = _empty_counts(), {}
        self.top: list = []          # the k best classes' _rank_key, sorted
        self.members: dict = {}      # _rank_key of a class in top -> its rows
        self.front: list = []        # the Pareto front of the rows simulated so far
        self.fits = self.simulated = self.pruned = self.failed = 0
        self.kept_rows: dict = {}
        self.floor_memo: dict = {}

    def reject(self, status: str, index: int, message) -> None:
        self.counts[status] = self.counts.get(status, 0) + 1
        if status not in self.first or index < self.first[status][0]:
            self.first[status] = (index, message)

    def settle(self, index: int):
        """Candidate ``index`` through the scenario's checks and the memory estimate:
        ``(floor objective, index, step floor, cost floor)`` when it fits, else None (and
        its reason counted). The work cap waits for the step model (:meth:`simulate`)."""
        spec = self.spec
        out = dict(index=index)
        try:
            out, sc, lay = _scenario_of(spec, index, self.lookups, work_cap=False)
            if sc is None:
                self.reject(out["status"], index, out["message"])
                return None
            refusal = _fit_refusal(spec, sc, lay, bound=False)
            if refusal is None:
                t = _missing_tier(sc)
                if t is not None:
                    refusal = ("step_unavailable", f"the node has no {t.upper()} tier to offload to")
                elif spec["objective"] != "step_time" and sc.cluster.price_usd_per_node_hour is None:
                    refusal = ("over_budget", f"no {spec['objective']} (the node has no price: "
                                              "cluster.price_usd_per_node_hour)")
            if refusal:
                self.reject(refusal[0], index, refusal[1])
                return None
            key = (id(sc.training), id(sc.strategy), id(sc.cluster), id(sc.runtime), id(sc.model))
            hit = self.floor_memo.get(key)
            if hit is None:       # the sections ride along: their ids stay theirs
                hit = self.floor_memo[key] = (step_lower_bound_s(sc, lay), sc.training, sc.strategy,
                                              sc.cluster, sc.runtime, sc.model)
            self.fits += 1
            obj, step_s, cost = _floors(spec, sc, lay, hit[0])
            return obj, index, step_s, cost, key
        except Exception as e:           # noqa: BLE001 - one candidate's failure is its reason
            if not _engine_failure(e):
                raise
            self.reject("engine_error", index, _engine_error(out, e)["message"])
            return None

    def dominated(self, obj: float, step_s: float, cost: float) -> bool:
        """True when a candidate whose objective, step and cost are at least these can be
        neither in the top k (k rows already rank strictly better) nor on the front (a row
        is better in one of step time and cost and no worse in the other)."""
        lo = 1 - _SLACK
        if len(self.top) < self.k or not self.top[-1][0] < obj * lo:
            return False
        s, c = step_s * lo, cost * lo
        for f in self.front:
            fs, fc = f["step_time_s"], _cost(f)
            if (fs < s and fc <= c) or (fs <= s and fc < c):
                return True
        return False

    def outranked(self, obj: float, step_s: float, cost: float, index: int) -> bool:
        """True when a row of exactly these figures and index would be neither in the top
        k classes nor on the front (a row at the same point with a lower index is kept
        instead)."""
        if len(self.top) < self.k or not self.top[-1] < (obj, step_s, cost, layout_index(self.spec, index)):
            return False
        for f in self.front:
            fs, fc = f["step_time_s"], _cost(f)
            if (fs < step_s and fc <= cost) or (fs <= step_s and fc < cost) or \
                    (fs == step_s and fc == cost and f["index"] < index):
                return True
        return False

    def simulate(self, fits: list, progress=None, every: int = 25, done: int = 0) -> None:
        """The step model on the candidates that fit and are not dominated, best lower
        bound first (branch and bound: the bounds only rise along the list, the k-th best
        and the front only improve, so what is dominated once stays dominated)."""
        fits.sort()
        # candidates sharing a step graph (the same training, strategy, cluster, runtime and
        # model sections: they differ in the checkpoint alone) have the same step time and
        # cost; where the objective is one of those, the first one simulated gives the
        # others' exact figures, and a twin that cannot rank is skipped on them
        twins = {} if self.spec["objective"] in ("step_time", "cost_per_million_tokens") else None
        for n, (obj, index, step_s, cost, key) in enumerate(fits):
            if progress and n and n % every == 0:
                progress(self.progress(done))
            if self.dominated(obj, step_s, cost) or (
                    twins is not None and key in twins and self.outranked(*twins[key], index)):
                self.pruned += 1
                continue
            self.simulated += 1
            out = dict(index=index)
            try:
                out, sc, _lay = _scenario_of(self.spec, index, self.lookups)
                row = out if sc is None else _row(self.spec, out, sc)
            except Exception as e:       # noqa: BLE001
                if not _engine_failure(e):
                    raise
                row = _engine_error(out, e)
            if row["status"] != "feasible":
                self.failed += 1
                self.reject(row["status"], index, row["message"])
                continue
            if twins is not None and key not in twins:
                twins[key] = (row["objective"], row["step_time_s"], _cost(row))
            rank = _rank_key(row)
            if rank in self.members:                 # one more of a class in the top k
                self.members[rank].append(row)
            elif len(self.top) < self.k or rank < self.top[-1]:
                bisect.insort(self.top, rank)
                self.members[rank] = [row]
                for gone in self.top[self.k:]:       # a class out of the top k never returns
                    del self.members[gone]
                del self.top[self.k:]
            self.front = pareto_front(self.front + [row])

    @property
    def feasible(self) -> int:
        return self.fits - self.failed

    def progress(self, done: int) -> dict:
        best = min(self.members[self.top[0]], key=lambda r: r["index"]) if self.top else None
        return dict(done=done, feasible=self.feasible, best=_brief(best))


def _screen_message(spec: dict, index: int, status: str, floor: float, lookups: dict) -> str:
    """The message of a candidate the screen refused: the bound, or the scenario's own
    words (its first refusal, which may name another problem of the same candidate)."""
    out, sc, _lay = _scenario_of(spec, index, lookups)
    if status == "does_not_fit_hbm":
        cap = (sc.cluster.accelerator.hbm_capacity_bytes * (1 - spec["constraints"]["memory_margin"])
               if sc is not None else math.nan)
        return _lb_message(floor, cap)
    if sc is None:
        return out["message"]
    return {"indivisible": "the parallel degrees or the batch do not divide",
            "invalid_combination": "the strategy section is refused"}.get(status, status)


def _search_chunk(spec: dict, lo: int, hi: int, progress, every: int, lookups: dict) -> _Search:
    space = _Space(spec, lookups)
    s = _Search(spec, lookups)
    fits: list = []
    last = 0

    def report(upto: int) -> None:
        """``progress`` once per ``every`` candidates screened and fitted (as one by one)."""
        nonlocal last
        while progress and last + every <= upto:
            last += every
            progress(s.progress(last))

    for a in range(lo, hi, BLOCK):
        b = min(hi, a + BLOCK)
        if space.ok:
            code, floor = space.screen(a, b)
        else:
            code, floor = np.zeros(b - a, dtype=np.int8), np.zeros(b - a)
        present = np.bincount(code, minlength=len(_SCREENED))
        for c in range(1, len(_SCREENED)):
            if present[c]:
                status = _SCREENED[c]
                j = int(np.argmax(code == c))
                s.counts[status] += int(present[c])
                if status not in s.first or a + j < s.first[status][0]:
                    s.first[status] = (a + j, (spec, a + j, status, float(floor[j])))
        for j in np.nonzero(code == 0)[0]:
            report(a - lo + int(j))
            e = s.settle(a + int(j))
            if e is not None:
                fits.append(e)
        report(b - lo)
    s.simulate(fits, progress, every, hi - lo)
    return s


def _brief(row: dict | None) -> dict | None:
    if row is None:
        return None
    return dict(index=row["index"], layout_index=row.get("layout_index", row["index"]),
                choices=row["choices"], objective=row["objective"],
                step_time_s=row["step_time_s"], usd_per_million_tokens=row["usd_per_million_tokens"])


def merge(spec: dict, chunks: list[dict], **lookups) -> dict:
    """The plan's answer from the results of its chunks (any split, any order).

    Returns ``{"objective", "candidates", "feasible", "rejected", "examples", "dominated",
    "top": [row], "pareto": [row], "best"}``; each row has ``rank``, its ``choices``, its
    ``scenario`` (to save as a scenario), its numbers and ``bottleneck_message``.
    """
    spec = _spec(spec, lookups)
    counts, examples, rows = _empty_counts(), {}, {}
    feasible = done = 0
    for ch in sorted(chunks, key=lambda c: (c["n_chunks"], c["chunk"])):
        done += ch["done"]
        feasible += ch["feasible"]
        for k, v in ch["rejected"].items():
            counts[k] = counts.get(k, 0) + v
        for k, v in ch["examples"].items():
            examples.setdefault(k, v)
        for r in ch["kept"]:
            rows[r["index"]] = r
    kept = [rows[i] for i in sorted(rows)]
    top, front = _keep(spec, kept)
    top = [dict(r, rank=k + 1) for k, r in enumerate(top)]
    on_front = {r["index"] for r in front}
    for r in top:
        r["on_pareto_front"] = r["index"] in on_front
    return dict(objective=spec["objective"], candidates=spec["num_candidates"], done=done,
                feasible=feasible, rejected=counts, examples=examples,
                advice=infeasible_advice(spec, counts) if not feasible and done else [],
                dominated=feasible - len({i for r in top for i in [r["index"]]
                                          + [a["index"] for a in r["alternatives"]]} | on_front),
                top=top, pareto=front, best=top[0] if top else None)


def infeasible_advice(spec: dict, counts: dict) -> list[str]:
    """What to widen when no candidate is feasible, from the most common rejection: ``[str]``
    naming the spec fields to change (empty when the rejections name no lever)."""
    if not counts or not any(counts.values()):
        return []
    # the space's own shape (degrees over the GPU count, strategy pairings) says nothing of
    # what to widen: the most common other reason does, when there is one
    shaped = ("indivisible", "invalid_combination")
    others = [k for k in REASONS if k not in shaped and counts.get(k, 0)]
    reason = max(others or shaped, key=lambda k: counts.get(k, 0))
    sp = spec["space"]
    out = []
    if reason == "does_not_fit_hbm":
        if set(sp["offload_optimizer"]) == {"none"} and set(sp["offload_params"]) == {"none"}:
            out.append("Most candidates do not fit GPU memory and the space offloads nothing: "
                       "allow host offload (space.offload_optimizer [\"none\", \"cpu\"] for "
                       "ZeRO-Offload, space.offload_params [\"none\", \"cpu\"] or \"nvme\" with "
                       "zero3 / zero_infinity in space.strategies for ZeRO-Infinity).")
        if "full" not in sp["recompute"]:
            out.append("Recompute the activations (space.recompute with \"full\").")
        out.append("Or more GPUs (cluster.num_nodes), a shorter sequence (training.seq_len) or "
                   "LoRA (training.lora) to train fewer parameters.")
    elif reason == "over_deadline":
        out.append("Most candidates take longer to train than constraints.max_time_to_train_s: "
                   "allow more nodes (cluster.num_nodes), train fewer tokens (training.total_tokens) "
                   "or extend the deadline.")
    elif reason == "over_budget":
        out.append("Most candidates cost more per hour than constraints.max_usd_per_hour: raise it "
                   "or allow fewer nodes (cluster.num_nodes).")
    elif reason == "below_min_global_batch":
        out.append("Most candidates' global batch is below constraints.min_global_batch_size: lower "
                   "it, or give training.global_batch_size.")
    elif reason == "indivisible":
        out.append("Most candidates' degrees or batch do not divide: check training.global_batch_size "
                   "against the GPU counts (cluster.num_nodes) and space.micro_batch_size.")
    elif reason.startswith("does_not_fit_"):
        tier = reason[len("does_not_fit_"):].upper()
        out.append(f"Most candidates do not fit {tier}: offload to another tier "
                   "(space.offload_optimizer, space.offload_params) or use more nodes (cluster.num_nodes).")
    return out


def plan(spec: dict, prune: bool = True, **lookups) -> dict:
    """The whole search in this process: ``merge(spec, [plan_chunk(spec)])``."""
    spec = _spec(spec, lookups)
    return merge(spec, [plan_chunk(spec, 0, 1, prune=prune, **lookups)])


def brute_force(spec: dict, **lookups) -> dict:
    """Every candidate through the full evaluation, no pruning, no chunk discards: the
    reference the planner's answer must equal (tests)."""
    spec = _spec(spec, lookups)
    rows = [evaluate_candidate(spec, i, prune=False, **lookups) for i in range(spec["num_candidates"])]
    ok = [r for r in rows if r["status"] == "feasible"]
    top, front = _keep(spec, ok)
    return dict(top=top, pareto=front, feasible=len(ok))


def plan_chunks(spec: dict, n_chunks: int, **lookups) -> list[tuple[int, int]]:
    """``[(chunk_index, n_chunks)]`` of a split into ``n_chunks`` (no more than candidates)."""
    spec = _spec(spec, lookups)
    n = max(1, min(n_chunks, spec["num_candidates"]))
    return [(k, n) for k in range(n)]


__all__ = ["MAX_CANDIDATES", "OBJECTIVES", "REASONS", "brute_force", "candidate",
           "evaluate_candidate", "hbm_lower_bound_bytes", "infeasible_advice", "layout_index", "merge", "pareto_front", "parse_spec",
           "plan", "plan_chunk", "plan_chunks"]
