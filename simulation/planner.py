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
``i`` is the same configuration on every machine. Each candidate passes, cheapest first:

1. the scenario's own checks (:meth:`Scenario.from_dict`, :func:`simulation.parallel.layout`)
   and Megatron's interleaving rule: a refusal on a parallel degree or the batch is
   ``indivisible``, one on a strategy/offload pairing ``invalid_combination``;
2. the engine's caps on work (:func:`simulation.cost.validate`): ``over_work_cap``;
3. the price (node price x nodes) against ``max_usd_per_hour``: ``over_budget``;
   the global batch against ``min_global_batch_size``: ``below_min_global_batch``;
4. a lower bound on HBM per GPU (:func:`hbm_lower_bound_bytes`: the 16-bit parameters a
   GPU must hold), then the quick memory estimate (``evaluate(..., include_step=False)``):
   a tier above ``capacity x (1 - memory_margin)`` is ``does_not_fit_<tier>``;
5. the step model (``evaluate(..., detail=False)``) on what fits; a step the engine cannot
   simulate is ``step_unavailable``.

Of the feasible candidates a chunk keeps its ``top_k`` by the objective and its Pareto front
of step time against cost per million tokens; every other one is ``dominated`` there and
cannot be in the merged answer (the global top-k and front are subsets of the chunks'), so
:func:`merge` of any split of the space into chunks (:func:`plan_chunk`) equals :func:`plan`.
Ties are broken by the candidate index, which makes the answer deterministic.

Objectives: ``step_time`` (s), ``cost_per_million_tokens`` (USD), ``time_to_train``
(``total_tokens`` / tokens per s / checkpoint goodput: checkpoint stalls, lost work and
restarts included, s) and ``cost_to_train`` (that time x USD per hour).
"""

from __future__ import annotations

import math
from typing import Callable

from .cost import validate
from .errors import ScenarioError
from .evaluate import evaluate
from .fields import show
from .parallel import layout
from .params import model_params
from .scenario import (OFFLOAD_TARGETS, RECOMPUTE, STRATEGY_KINDS, ModelSpec, Scenario, TrainingSpec,
                       resolve, resolve_cluster)
from .checkpoint import TARGET_KINDS
from .states import state_bytes

PLAN_SCHEMA = 1
MAX_CANDIDATES = 200_000       # product of the space's lists: about an hour of one core at worst
MAX_TOP_K = 100
MAX_NODE_COUNTS = 64
OBJECTIVES = ("step_time", "cost_per_million_tokens", "time_to_train", "cost_to_train")
REASONS = ("indivisible", "invalid_combination", "over_work_cap", "over_budget",
           "below_min_global_batch", "does_not_fit_hbm", "does_not_fit_ddr", "does_not_fit_nvme",
           "does_not_fit_cxl", "does_not_fit_pmem", "step_unavailable")
# ScenarioError fields that mean a degree or batch does not divide (parallel.layout's)
_DIVISIBILITY_FIELDS = ("training.tensor_parallel", "training.pipeline_parallel",
                        "training.global_batch_size", "training.interleave_stages",
                        "strategy.shard_group_size")
_DIMS = ("tensor_parallel", "pipeline_parallel", "interleave_stages", "micro_batch_size",
         "recompute", "strategies", "offload_optimizer", "offload_params", "prefetch_depth",
         "checkpoint_target", "checkpoint_interval_s")
_TOP = {"schema", "name", "model", "cluster", "training", "constraints", "space", "objective",
        "top_k", "checkpoint", "strategy", "runtime", "convention"}
_PLAN_TRAINING = {"total_tokens", "tokens_per_step"}
# set by the space, not by the base training section
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
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
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
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < lo \
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


def parse_spec(d: dict, models=None, nodes=None, accelerators=None, **_other_lookups) -> dict:
    """A plan spec checked and filled in with its defaults (a new, plain dict).

    Raises :class:`ScenarioError` naming the field (``space.tensor_parallel.2``,
    ``objective``, ``cluster.num_nodes.max``...), including a space over
    :data:`MAX_CANDIDATES` candidates (named after its longest list). ``models``,
    ``nodes``, ``accelerators``: preset tables as :meth:`Scenario.from_dict` takes them.
    """
    if not isinstance(d, dict):
        raise ScenarioError("plan", "must be a JSON object")
    for k in d:
        if k not in _TOP:
            raise ScenarioError(k, f"unknown field; known fields: {', '.join(sorted(_TOP))}")
    if d.get("schema", PLAN_SCHEMA) != PLAN_SCHEMA:
        raise ScenarioError("schema", f"unsupported plan schema {show(d.get('schema'))}; this engine reads {PLAN_SCHEMA}")
    if d.get("model") is None:
        raise ScenarioError("model", "is required: a model preset name or an architecture")
    cluster = d.get("cluster")
    if not isinstance(cluster, dict):
        raise ScenarioError("cluster", "is required: an object with a node template and num_nodes or num_gpus")
    base_cluster = {k: v for k, v in cluster.items() if k not in ("num_nodes", "num_gpus")}
    resolved = resolve_cluster(base_cluster, nodes, accelerators)
    gpn = resolved.get("gpus_per_node")
    _whole(1, 1024)(gpn, "cluster.gpus_per_node")
    counts, gpn_used = _node_counts(cluster, gpn)
    if gpn_used != gpn:
        base_cluster["gpus_per_node"] = gpn_used
    for sec in ("training", "constraints", "space", "strategy", "runtime", "checkpoint"):
        if d.get(sec) is not None and not isinstance(d[sec], dict):
            raise ScenarioError(sec, "must be an object")
    ModelSpec.from_dict(resolve({"model": d["model"], "cluster": base_cluster},
                                models, nodes, accelerators)["model"])
    training = dict(d.get("training") or {})
    for k in _SPACE_TRAINING:
        if k in training:
            raise ScenarioError(f"training.{k}", f"is chosen by the planner: list its values in space.{k}")
    total_tokens = _num(training, "total_tokens", "training", lo=1)
    tps = training.pop("tokens_per_step", None)
    training.pop("total_tokens", None)
    seq = training.get("seq_len", 4096)
    _whole(1, 100_000_000)(seq, "training.seq_len")
    if tps is not None:
        _whole(1, 10**12)(tps, "training.tokens_per_step")
        if "global_batch_size" in training:
            raise ScenarioError("training.tokens_per_step", "give tokens_per_step or global_batch_size, not both")
        if tps % seq:
            raise ScenarioError("training.tokens_per_step",
                                f"must be a multiple of seq_len ({seq}), got {tps}")
        training["global_batch_size"] = tps // seq
    TrainingSpec.from_dict(training)            # the base's other fields, named training.<field>
    c = d.get("constraints") or {}
    for k in c:
        if k not in ("memory_margin", "max_usd_per_hour", "min_global_batch_size"):
            raise ScenarioError(f"constraints.{k}", "unknown field; known fields: max_usd_per_hour, "
                                                    "memory_margin, min_global_batch_size")
    margin = _num(c, "memory_margin", "constraints", 0.0, 0.9)
    max_usd = _num(c, "max_usd_per_hour", "constraints", 0.0)
    min_gbs = c.get("min_global_batch_size")
    if min_gbs is not None:
        _whole(1, 10**9)(min_gbs, "constraints.min_global_batch_size")
    s = d.get("space") or {}
    for k in s:
        if k not in _DIMS:
            raise ScenarioError(f"space.{k}", f"unknown field; known fields: {', '.join(_DIMS)}")
    tp_default = [t for t in (1, 2, 4, 8) if t <= gpn_used] or [1]
    space = dict(
        tensor_parallel=_list(s, "tensor_parallel", "space", tp_default, _whole()),
        pipeline_parallel=_list(s, "pipeline_parallel", "space", [1, 2, 4, 8, 16], _whole()),
        interleave_stages=_list(s, "interleave_stages", "space", [1], _whole(1, 1000)),
        micro_batch_size=_list(s, "micro_batch_size", "space", [1, 2, 4], _whole(1, 1_000_000)),
        recompute=_list(s, "recompute", "space", list(RECOMPUTE), _one_of(RECOMPUTE)),
        strategies=_list(s, "strategies", "space", ["megatron_dist_opt", "zero1", "zero3"],
                         _one_of(STRATEGY_KINDS)),
        offload_optimizer=_list(s, "offload_optimizer", "space", ["none"], _one_of(OFFLOAD_TARGETS)),
        offload_params=_list(s, "offload_params", "space", ["none"], _one_of(OFFLOAD_TARGETS)),
        prefetch_depth=_list(s, "prefetch_depth", "space", [1], _whole(0, 10_000)),
        checkpoint_target=_list(s, "checkpoint_target", "space",
                                [(d.get("checkpoint") or {}).get("target", "parallel_fs")],
                                _one_of(TARGET_KINDS)),
        checkpoint_interval_s=_list(s, "checkpoint_interval_s", "space", [None], _positive))
    n = len(counts)
    for v in space.values():
        n *= len(v)
    if n > MAX_CANDIDATES:
        longest = max(space, key=lambda k: len(space[k]))
        raise ScenarioError(f"space.{longest}", f"the space has {n:,} candidates; at most "
                                                f"{MAX_CANDIDATES:,} per plan (shorten this list)")
    objective = d.get("objective", "step_time")
    if objective not in OBJECTIVES:
        raise ScenarioError("objective", f"must be one of {', '.join(OBJECTIVES)}; got {show(objective)}")
    if objective in ("time_to_train", "cost_to_train") and total_tokens is None:
        raise ScenarioError("training.total_tokens", f"is required for the objective {objective}")
    top_k = d.get("top_k", 10)
    _whole(1, MAX_TOP_K)(top_k, "top_k")
    cluster_out = dict(base_cluster)
    return dict(schema=PLAN_SCHEMA, name=d.get("name"), model=d["model"], cluster=cluster_out,
                node_counts=counts, training=training, total_tokens=total_tokens,
                strategy=dict(d.get("strategy") or {}), runtime=d.get("runtime"),
                checkpoint=dict(d.get("checkpoint") or {}), convention=d.get("convention"),
                constraints=dict(memory_margin=margin or 0.0, max_usd_per_hour=max_usd,
                                 min_global_batch_size=min_gbs),
                space=space, objective=objective, top_k=top_k, num_candidates=n)


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
    training = dict(spec["training"], tensor_parallel=tp, pipeline_parallel=pp,
                    micro_batch_size=mb, recompute=rc)
    if v > 1:
        training["interleave_stages"] = v
    training.setdefault("sequence_parallel", tp > 1)     # Megatron's practice with TP
    strategy = dict(spec["strategy"], kind=kind, offload_optimizer=oo, offload_params=op,
                    prefetch_depth=pf)
    if kind == "fsdp_hybrid_shard" and "shard_group_size" not in strategy:
        gpn = spec["cluster"].get("gpus_per_node") or 0
        strategy["shard_group_size"] = max(1, gpn // (tp * pp)) if gpn else 1
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


def hbm_lower_bound_bytes(sc: Scenario, lay) -> float:
    """Bytes every GPU's HBM holds at least: its share of the transformer blocks' 16-bit
    parameters (``per_layer x layers / pp / tp`` elements, divided by the shard degree under
    ZeRO-3/FSDP, none with parameters offloaded). The embedding, head, gradients, optimizer
    states, activations, buffers and the CUDA context all come on top, so the memory model
    of :mod:`simulation.memory` never gives less (``tests/engine/test_planner.py`` checks it)."""
    if sc.strategy.offload_params != "none":
        return 0.0
    pc = model_params(sc.model)
    sb = state_bytes(sc.training.precision, sc.training.optimizer, sc.training.dtypes)
    per_gpu = pc.per_layer * (sc.model.num_layers // lay.pipeline_parallel) / lay.tensor_parallel
    if sc.strategy.zero_stage >= 3:
        per_gpu /= lay.shard_degree
    return sb.params * per_gpu


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


def _tier_over(report: dict, margin: float) -> str | None:
    """The first tier above ``capacity x (1 - margin)`` (HBM first), or None."""
    mem = report["memory"]
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


def evaluate_candidate(spec: dict, index: int, prune: bool = True, **lookups) -> dict:
    """One candidate through the filters of the module docstring.

    Returns ``{"index", "choices", "scenario", "status": "feasible" | <reason>, "message"}``
    plus, when feasible, its numbers (step time, cost, bottleneck, ...). With ``prune``
    false the lower bound is skipped and every fitting candidate is simulated (what the
    brute-force tests compare against).
    """
    spec = _spec(spec, lookups)
    choices, d = candidate(spec, index)
    out = dict(index=index, choices=choices, scenario=d)
    try:
        sc = Scenario.from_dict(d, **lookups)
        lay = layout(sc)
        _interleave_check(sc, lay)
    except ScenarioError as e:
        return dict(out, status=_classify(e), message=str(e))
    try:
        validate(sc)
    except ScenarioError as e:
        return dict(out, status="over_work_cap", message=str(e))
    con = spec["constraints"]
    price = sc.cluster.price_usd_per_node_hour
    usd_per_hour = price * sc.cluster.num_nodes if price is not None else None
    if con["max_usd_per_hour"] is not None and (usd_per_hour is None or usd_per_hour > con["max_usd_per_hour"]):
        msg = ("the node has no price (cluster.price_usd_per_node_hour)" if usd_per_hour is None else
               f"{usd_per_hour:,.2f} USD per hour is over the budget of {con['max_usd_per_hour']:,.2f}")
        return dict(out, status="over_budget", message=msg)
    if con["min_global_batch_size"] is not None and lay.global_batch_size < con["min_global_batch_size"]:
        return dict(out, status="below_min_global_batch",
                    message=f"global batch {lay.global_batch_size} < {con['min_global_batch_size']}")
    margin = con["memory_margin"]
    cap = sc.cluster.accelerator.hbm_capacity_bytes * (1 - margin)
    if prune:
        lb = hbm_lower_bound_bytes(sc, lay)
        if lb > cap:
            return dict(out, status="does_not_fit_hbm", message=f"HBM needs at least {lb / 2**30:,.1f} GiB "
                        f"of parameters alone; {cap / 2**30:,.1f} GiB usable (lower bound)")
        est = evaluate(sc, include_step=False).to_dict()
        tier = _tier_over(est, margin)
        if tier is not None:
            return dict(out, status=f"does_not_fit_{tier}", message=_over_message(est, tier, margin))
    r = evaluate(sc, detail=False).to_dict()
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
    row = dict(out, status="feasible", message="", data_parallel=r["parallelism"]["data_parallel"],
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
    row["objective"] = _objective(spec, row)
    if row["objective"] is None:
        return dict(out, status="over_budget" if spec["objective"] != "step_time" else "step_unavailable",
                    message=f"no {spec['objective']} (the node has no price: cluster.price_usd_per_node_hour)")
    return row


def _over_message(r: dict, tier: str, margin: float) -> str:
    for scope in ("per_gpu", "per_node"):
        s = r["memory"][scope].get(tier)
        if s is not None and s["total_bytes"] > s["capacity_bytes"] * (1 - margin):
            where = "per GPU" if scope == "per_gpu" else "per node"
            return (f"{tier.upper()} {where} needs {s['total_bytes'] / 2**30:,.1f} GiB; "
                    f"{s['capacity_bytes'] * (1 - margin) / 2**30:,.1f} GiB usable"
                    + (f" with a {margin:.0%} margin" if margin else ""))
    return tier


# ------------------------------------------------------------------ ranking
def _rank_key(row: dict) -> tuple:
    return (row["objective"], row["step_time_s"], row["index"])


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
    """``(top_k, front)`` of feasible rows; the union is all a merge needs."""
    top = sorted(rows, key=_rank_key)[:spec["top_k"]]
    return top, pareto_front(rows)


def _empty_counts() -> dict:
    return {k: 0 for k in REASONS}


def plan_chunk(spec: dict, chunk_index: int = 0, n_chunks: int = 1, prune: bool = True,
               progress: Callable[[dict], None] | None = None, every: int = 25,
               **lookups) -> dict:
    """Search chunk ``chunk_index`` of ``n_chunks`` (candidates ``[N k / n, N (k+1) / n)``).

    Returns JSON: ``{"chunk", "n_chunks", "candidates", "done", "feasible", "rejected":
    {reason: count}, "examples": {reason: message}, "dominated", "kept": [row]}`` where
    ``kept`` holds the chunk's top-k and Pareto front. ``progress(partial)`` is called every
    ``every`` candidates with ``{"done", "feasible", "best"}``.
    """
    spec = _spec(spec, lookups)
    if not isinstance(n_chunks, int) or n_chunks < 1:
        raise ScenarioError("n_chunks", f"must be a whole number >= 1, got {show(n_chunks)}")
    if not isinstance(chunk_index, int) or not 0 <= chunk_index < n_chunks:
        raise ScenarioError("chunk_index", f"must be from 0 to {n_chunks - 1}, got {show(chunk_index)}")
    n = spec["num_candidates"]
    lo, hi = n * chunk_index // n_chunks, n * (chunk_index + 1) // n_chunks
    counts, examples, feasible, best = _empty_counts(), {}, [], None
    for k, i in enumerate(range(lo, hi)):
        row = evaluate_candidate(spec, i, prune=prune, **lookups)
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
    top, front = _keep(spec, feasible)
    kept = {r["index"]: r for r in top + front}
    return dict(chunk=chunk_index, n_chunks=n_chunks, candidates=hi - lo, done=hi - lo,
                feasible=len(feasible), rejected=counts, examples=examples,
                dominated=len(feasible) - len(kept),
                kept=[kept[i] for i in sorted(kept)])


def _brief(row: dict | None) -> dict | None:
    if row is None:
        return None
    return dict(index=row["index"], choices=row["choices"], objective=row["objective"],
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
                dominated=feasible - len({r["index"] for r in top} | on_front),
                top=top, pareto=front, best=top[0] if top else None)


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
           "evaluate_candidate", "hbm_lower_bound_bytes", "merge", "pareto_front", "parse_spec",
           "plan", "plan_chunk", "plan_chunks"]
