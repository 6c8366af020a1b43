"""Cost before work: what evaluating a scenario will cost, said without evaluating it.

:func:`cost_bound` counts, from a parsed scenario alone, the work :func:`simulation.evaluate`
would do: tasks in the step graphs it builds and simulates (and walks for the timeline),
random draws (the checkpoint Monte-Carlo, the recommendation model's sample
check), terms of the Zipf sums, points of the curves. It reads the same numbers the
evaluation reads (layout, the rank's step-graph model, table sizes) and builds nothing,
so it takes microseconds. ``work_units`` weighs the counts by what each costs: one unit
is about one microsecond of engine time on one core of the development machine (x86_64
Xeon at 2.8 GHz, Python 3.11, the C extensions built); the weights (``US_PER_*``) are
fitted to times measured there, and ``tests/engine/test_cost.py`` checks them loosely
(bounds far apart order the measured times the same way).

:func:`validate` makes every check of ``evaluate`` that can refuse a scenario (layout,
recommendation tiers) plus the caps on work, without simulating: a scenario it accepts
evaluates within :data:`MAX_WORK_UNITS` and with no step graph over
:data:`MAX_STEP_GRAPH_TASKS` tasks. Each refusal is a :class:`ScenarioError` naming the
field that drives the work and the limit.

Why a field costs what it costs:

* the step graph has a few tasks per layer of the rank's pipeline stage (more with tensor
  parallelism and collectives that cross nodes) plus, when the optimizer runs on the host
  (ZeRO-Offload, ZeRO-Infinity), two or three tasks per sub-group of 1e9 parameters that
  the rank updates (DeepSpeed's ``sub_group_size``): ``model.num_params`` on few GPUs
  with the optimizer offloaded is what makes a graph of millions of tasks;
* ``checkpoint.monte_carlo_runs`` runs each draw about 16 failure times at least;
* ``recsys.sample_lookups`` draws per table, and each table's closed forms sum up to
  2^20 terms (``recsys.tables``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import ScenarioError, every_error
from .memo import ByIdentity
from .params import model_params
from .recsys import resolve_tiers
from .parallel import layout
from .scenario import Scenario
from .states import state_bytes
from .step import rank_model
from .stepgraph import SUB_GROUP_ELEMENTS, RankModel

# Caps on a scenario's work: what the engine accepts at all (web requests have a lower
# limit on work_units, a setting of the web side).
MAX_STEP_GRAPH_TASKS = 500_000     # one step graph: ~15 s and ~400 MB with its timeline
MAX_WORK_UNITS = 60_000_000        # ~60 s of engine time: well inside a worker's time limit

# Microseconds per item, measured on the development machine (see the module docstring).
US_PER_GRAPH_TASK = 0.4            # built in C, simulated, attributed
US_PER_GRAPH_EDGE = 0.05           # one dependency of such a task
US_PER_QUEUED_WRITE_PAIR = 0.03    # (sub-groups)^2: optimizer write-backs to NVMe/CXL pile up
US_PER_TIMELINE_TASK = 14.0        # names, critical path, timeline row: fitted when the graph was
                                   # built again in Python; since #17 some 0.05-0.3 us (not refitted)
US_PER_TIMELINE_EDGE = 1.3         # one dependency of such a task
US_PER_PY_GRAPH_TASK = 15.0        # the PS / MoE graphs: built in Python, simulated in C
US_PER_MC_DRAW = 0.1               # one failure time of the checkpoint Monte-Carlo
US_PER_SAMPLE = 0.3                # one Zipf draw of the recommendation sample check
US_PER_HARMONIC_TERM = 0.012       # one term of a harmonic number (numpy)
US_PER_DISTINCT_TERM = 0.045       # one term of an expected-distinct-rows sum (numpy)
US_PER_DISTINCT_TERM_MORE = 0.015  # the same term for one more lookup count (~0.01 measured)
US_PER_TABLE = 60.0                # fixed cost per embedding table and tier
US_BASE_MEMORY = 300.0             # memory estimate of a transformer
US_BASE_STEP = 600.0               # the rest of a full evaluation (checkpoint, cost, report)

GOODPUT_CURVE_POINTS = 61          # checkpoint.evaluate_checkpoint's curve
OFFLOAD_CURVE_POINTS = 3 * 40      # bandwidth.analysis: three curves of 40 points
HARMONIC_EXACT_TERMS = 4096        # recsys.zipf.EXACT_TERMS
DISTINCT_EXACT_ROWS = 1 << 20      # recsys.zipf.DISTINCT_EXACT_ROWS
DISTINCT_TAIL_TERMS = 4097         # recsys.zipf's Simpson points
PLACEMENT_ITERATIONS = 200         # bisection steps of recsys.tiers.prefix_rows, at most


@dataclass(frozen=True)
class CostBound:
    """What one evaluation will cost; counts are upper bounds of what it does.

    ``step_graph_tasks``: tasks of every step graph built and simulated (summed);
    ``largest_step_graph_tasks``: the largest of them; ``timeline_tasks``: tasks rebuilt in
    Python for the timeline (``detail``); ``other_graph_tasks``: tasks of the parameter-server
    and MoE graphs; ``samples``: random draws (Monte-Carlo failure times + Zipf samples);
    ``zipf_terms``: terms summed by the Zipf closed forms; ``curve_points``: points of the
    curves in the report; ``work_units``: all of it weighted, about microseconds of engine
    time on one core of the development machine. ``drivers``: field -> work units it
    drives, largest first (dotted scenario fields).
    """
    step_graph_tasks: int
    largest_step_graph_tasks: int
    timeline_tasks: int
    other_graph_tasks: int
    samples: int
    zipf_terms: int
    curve_points: int
    work_units: float
    drivers: tuple = ()

    @property
    def driver(self) -> str:
        """The field that drives most of the work (``model`` when nothing stands out)."""
        return self.drivers[0][0] if self.drivers else "model"

    def to_dict(self) -> dict:
        return dict(step_graph_tasks=self.step_graph_tasks,
                    largest_step_graph_tasks=self.largest_step_graph_tasks,
                    timeline_tasks=self.timeline_tasks, other_graph_tasks=self.other_graph_tasks,
                    samples=self.samples, zipf_terms=self.zipf_terms, curve_points=self.curve_points,
                    work_units=self.work_units, drivers=dict(self.drivers))


# ------------------------------------------------------------------ the step graph
def _collective_tasks(r: RankModel, link: str, per_node: int = 0, latency_s: float = 0.0) -> int:
    """Tasks of ``stepgraph.collective``: a latency task when it has a latency, then one
    transfer, or (a ring that crosses nodes with more than one hop per node) a start, the
    NVLink and network parts and a done (the latency task doubles as the start)."""
    k = per_node or r.gpus_per_node
    if link == "nic" and k > 1:
        return 4
    return 1 + (1 if latency_s > 0 else 0)


def _layer_compute_tasks(r: RankModel, n_allreduce: int) -> int:
    """Tasks of ``stepgraph.build``'s ``layer_compute``: with tensor parallelism each
    all-reduce splits the compute, and each is a collective on NVLink; with
    ``tp_comm_overlap`` one more task joins the last share and the last collective."""
    if r.tp > 1 and n_allreduce:
        return (n_allreduce * (1 + _collective_tasks(r, "nvlink", latency_s=r.tp_latency_s))
                + (1 if r.tp_comm_overlap else 0))
    return 1


def optimizer_sub_groups(r: RankModel) -> int:
    """Sub-groups of 1e9 parameters the host optimizer steps through (1 on the GPU)."""
    if r.offload_optimizer == "none":
        return 1
    return max(1, math.ceil(r.params_per_rank / r.shard / SUB_GROUP_ELEMENTS))


@dataclass(frozen=True)
class GraphSize:
    """A step graph's size, counted without building it: ``tasks`` (as
    ``stepgraph.build`` and the C builder emit them), ``optimizer_tasks`` (of those, the
    optimizer step's), ``edges`` (dependencies, an upper bound), ``sub_groups`` (host
    optimizer sub-groups) and whether their write-backs queue on NVMe/CXL (``queued``)."""
    tasks: int
    optimizer_tasks: int
    edges: int
    sub_groups: int
    queued: bool

    def units(self, timeline: bool = False) -> float:
        """Work units to build, simulate and attribute it (and rebuild its timeline)."""
        u = self.tasks * US_PER_GRAPH_TASK + self.edges * US_PER_GRAPH_EDGE
        if self.queued:
            u += self.sub_groups ** 2 * US_PER_QUEUED_WRITE_PAIR
        if timeline:
            u += self.tasks * US_PER_TIMELINE_TASK + self.edges * US_PER_TIMELINE_EDGE
        return u


def step_graph_size(r: RankModel, last: bool) -> GraphSize:
    """The size of ``stepgraph.build(r, links, last)``, counted without building it."""
    zero3 = r.stage >= 3
    units = r.units_per_layer if zero3 else 1
    fetch = 0
    if zero3:
        fetch_f = ((1 if r.offload_params != "none" else 0)
                   + _collective_tasks(r, r.shard_link, r.shard_per_node, r.gather_latency_s))
        fetch_b = ((1 if r.offload_params != "none" else 0)
                   + _collective_tasks(r, r.shard_link, r.shard_per_node,
                                       r.gather_latency_s * r.bwd_fetch_factor))
        fetch = fetch_f + fetch_b
    act = 1 if r.offload_activations != "none" else 0
    # per layer: every unit computes once; the layer's TP all-reduces come with one unit
    fwd_compute = (units - 1) + _layer_compute_tasks(r, 2)
    bwd_compute = (units - 1) + _layer_compute_tasks(r, r.bwd_allreduces)
    sync_outs = 0
    if r.stage >= 2:
        n_rs = r.rs_per_layer if zero3 else 1
        sync = n_rs * _collective_tasks(r, r.shard_link, r.shard_per_node, r.reduce_latency_s)
        sync_outs = n_rs
        if last and r.replicas > 1:
            sync += _collective_tasks(r, r.replica_link, r.replica_per_node, r.replica_latency_s)
            sync_outs += 1
        if last and r.offload_optimizer != "none":
            nvme = 1 if r.offload_optimizer == "nvme" else 0     # stepgraph._grads_to_nvme
            sync += 1 + nvme
            sync_outs += 1 + nvme
    elif last and r.dp > 1:
        sync = _collective_tasks(r, r.dp_link, r.dp_per_node, r.dp_allreduce_latency_s)
        sync_outs = 1
    elif last and r.offload_optimizer != "none":
        sync = sync_outs = 2 if r.offload_optimizer == "nvme" else 1
    else:
        sync = 0
    # --overlap-param-gather: one all-gather share ahead of each layer's forward
    gather = (_collective_tasks(r, r.dp_link, r.dp_per_node, r.dp_gather_latency_s)
              if last and r.overlap_param_gather and r.stage in (1, 2) and r.dp > 1 else 0)
    per_layer = units * fetch + fwd_compute + bwd_compute + 2 * act + sync + gather
    # the last layer's activations are not offloaded (stepgraph.build): 2 copies fewer
    n = r.layers * per_layer - (2 * act if r.layers else 0) + (1 if r.head_s else 0)
    opt = groups = extra_edges = 0
    io = r.offload_optimizer in ("nvme", "cxl")
    if last:
        where = r.offload_optimizer
        if where == "none":
            opt = 1
        else:
            groups = optimizer_sub_groups(r)
            opt = groups * (3 if io else 1)
            opt += 1 if r.offload_params in ("none", "nvme") else 0
            opt += 1 if io or r.offload_params == "nvme" else 0      # "optimizer step done"
            extra_edges = groups * (r.layers * sync_outs + 2)      # each waits for every sync
        if r.stage in (1, 2) and r.dp > 1 and not r.overlap_param_gather:
            opt += _collective_tasks(r, r.dp_link, r.dp_per_node, r.dp_gather_latency_s)
    tasks = n + opt
    return GraphSize(tasks=tasks, optimizer_tasks=opt, edges=3 * tasks + extra_edges,
                     sub_groups=groups, queued=io and groups > 1)


# ------------------------------------------------------------------ the bound
def cost_bound(sc: Scenario, include_step: bool = True, detail: bool = True) -> CostBound:
    """What ``evaluate(sc, include_step, detail)`` will cost, without evaluating it.

    Raises ScenarioError only where ``evaluate`` would (a layout that does not divide).
    Remembered per identity of the sections it reads (see :mod:`simulation.memo`).
    """
    return _bound(sc.model, sc.cluster, sc.training, sc.strategy, sc.checkpoint, sc.recsys,
                  bool(include_step), bool(detail))


def _bound_of(model, cluster, training, strategy, checkpoint, recsys, include_step, detail) -> CostBound:
    return _cost_bound(Scenario(model=model, cluster=cluster, training=training, strategy=strategy,
                                checkpoint=checkpoint, recsys=recsys), include_step, detail)


def _cost_bound(sc: Scenario, include_step: bool, detail: bool) -> CostBound:
    step = last = largest = timeline = other = samples = zipf_terms = curve = 0
    drivers: dict[str, float] = {}
    work = US_BASE_MEMORY

    def add(field: str, units: float) -> None:
        drivers[field] = drivers.get(field, 0.0) + units

    if sc.model is not None:
        pc, lay = model_params(sc.model), layout(sc)
        if include_step:
            work += US_BASE_STEP
            r = rank_model(sc, pc, lay, state_bytes(sc.training.precision, sc.training.optimizer))
            g_last = step_graph_size(r, True)
            sims = 1 + (2 if sc.checkpoint.method != "blocking" else 0)     # + background slowdown
            units = g_last.units() * sims
            step, largest = g_last.tasks * sims + (sims > 1), g_last.tasks   # + the write's flow
            if lay.grad_accumulation_steps > 1 or lay.pipeline_parallel > 1:
                g_mb = step_graph_size(r, False)
                step += g_mb.tasks
                units += g_mb.units()
            if detail:
                timeline = g_last.tasks
                units += g_last.units(timeline=True) - g_last.units()
            work += units
            opt_share = g_last.optimizer_tasks / g_last.tasks if g_last.tasks else 0.0
            if g_last.queued:
                opt_share = max(opt_share, g_last.sub_groups ** 2 * US_PER_QUEUED_WRITE_PAIR / g_last.units())
            add("model.num_params", units * opt_share)
            add("model.num_layers", units * (1 - opt_share))
            curve += GOODPUT_CURVE_POINTS + OFFLOAD_CURVE_POINTS
            if sc.model.num_experts > 1 and sc.model.has_architecture:
                moe = 14 * sc.model.num_layers
                other += moe
                experts = min(sc.model.num_experts, DISTINCT_EXACT_ROWS) + DISTINCT_TAIL_TERMS
                zipf_terms += experts
                units = moe * US_PER_PY_GRAPH_TASK + experts * US_PER_DISTINCT_TERM
                work += units
                add("model.num_experts", units)
            if detail and sc.checkpoint.monte_carlo_runs:
                draws = monte_carlo_draws(sc, lay.num_gpus)
                samples += draws
                work += draws * US_PER_MC_DRAW
                add("checkpoint.monte_carlo_runs", draws * US_PER_MC_DRAW)
    if sc.recsys is not None and (include_step or sc.model is None):
        rs = _recsys_cost(sc, include_step)
        samples += rs["samples"]
        zipf_terms += rs["zipf_terms"]
        other += rs["graph_tasks"]
        work += rs["sample_units"] + rs["table_units"]
        add("recsys.sample_lookups", rs["sample_units"])
        add("recsys.tables", rs["table_units"])
    ranked = tuple(sorted(((k, v) for k, v in drivers.items() if v > 0), key=lambda kv: -kv[1]))
    return CostBound(step_graph_tasks=step, largest_step_graph_tasks=largest, timeline_tasks=timeline,
                     other_graph_tasks=other, samples=samples, zipf_terms=zipf_terms,
                     curve_points=curve, work_units=work, drivers=ranked)


_bound = ByIdentity(_bound_of)


def monte_carlo_draws(sc: Scenario, num_gpus: int) -> int:
    """Failure times ``checkpoint.monte_carlo`` draws: ``runs`` x k, k about the expected
    failures per run over its (shortened) horizon plus six standard deviations and 16."""
    from .checkpoint import LLAMA3_GPU_FAILURE_RATE_PER_HOUR, mtbf_from_rate_s

    ck = sc.checkpoint
    runs = ck.monte_carlo_runs
    mtbf = ck.mtbf_s or mtbf_from_rate_s(ck.gpu_failure_rate_per_hour or LLAMA3_GPU_FAILURE_RATE_PER_HOUR,
                                          num_gpus)
    horizon = min(ck.run_length_s, 1e6 / max(runs, 1) * mtbf)
    expect = horizon / mtbf
    return runs * int(expect + 6 * math.sqrt(expect) + 16)


def _recsys_cost(sc: Scenario, include_step: bool) -> dict:
    spec = sc.recsys
    tiers = len(spec.tiers) if spec.tiers is not None else 1 + max(
        1, sum(1 for t in ("ddr", "cxl", "pmem", "nvme") if t in sc.cluster.tiers))
    n_tables = len(spec.tables)
    sampled = include_step and spec.sample_lookups > 0
    harmonic = distinct = distinct_more = 0
    for t in spec.tables:
        head = min(t.rows, HARMONIC_EXACT_TERMS)
        harmonic += head * (1 + 3 * tiers * (2 if sampled else 1))         # H(n), hit rates
        # distinct rows of the global batch (the embedding update, recsys.step) and, with a
        # NIC, of one worker's share (the parameter server): one pass, a second count
        harmonic += head
        terms = min(t.rows, DISTINCT_EXACT_ROWS) + (DISTINCT_TAIL_TERMS if t.rows > DISTINCT_EXACT_ROWS else 0)
        distinct += terms
        if sc.cluster.nic_bytes_per_s:
            distinct_more += terms
    harmonic += tiers * PLACEMENT_ITERATIONS * n_tables
    samples = n_tables * spec.sample_lookups if sampled else 0
    # graphs: the parameter server's (6 tasks), the all-to-all step's (7 kernel groups, 3
    # NCCL latencies, 2 x 2 all-to-all and 2 all-reduce transfers, 1 prefetch: 17), the
    # tiers' lookups (2 graphs of one transfer per tier)
    return dict(samples=samples, zipf_terms=harmonic + distinct + distinct_more,
                graph_tasks=6 + 17 + 2 * tiers,
                sample_units=samples * US_PER_SAMPLE,
                table_units=(harmonic * US_PER_HARMONIC_TERM + distinct * US_PER_DISTINCT_TERM
                             + distinct_more * US_PER_DISTINCT_TERM_MORE
                             + n_tables * tiers * US_PER_TABLE))


# ------------------------------------------------------------------ validation
def validate(sc: Scenario) -> CostBound:
    """Every check ``evaluate(sc)`` makes that can refuse ``sc``, without evaluating it,
    and the caps on work. Returns the cost bound of a full evaluation (step and detail).

    Raises ScenarioError: the layout's (batch and parallel degrees that do not divide), the
    recommendation tiers' (a tier without capacity or bandwidth), a step graph over
    :data:`MAX_STEP_GRAPH_TASKS` tasks, or work over :data:`MAX_WORK_UNITS`; each names
    the field that drives it and says the limit.
    """
    bound = cost_bound(sc)
    if sc.recsys is not None:
        _check_recsys_tiers(sc)
    if bound.largest_step_graph_tasks > MAX_STEP_GRAPH_TASKS:
        raise _graph_error(sc, bound)
    if bound.work_units > MAX_WORK_UNITS:
        field = bound.driver
        raise ScenarioError(field, f"evaluating this scenario would take about "
                                   f"{bound.work_units / 1e6:,.0f} s of engine time, "
                                   f"{_share(bound, field)} of it from this field; the engine "
                                   f"takes at most {MAX_WORK_UNITS / 1e6:,.0f} s "
                                   f"({MAX_WORK_UNITS:,} work units) per scenario")
    return bound


def checked_scenario(d: dict, **lookups) -> Scenario:
    """``Scenario.from_dict(d, **lookups)`` passed through :func:`validate`, with every bad
    field of ``d`` found at once: raises ScenarioError for one, ``ScenarioErrors`` (its
    ``errors``) for several (``errors.every_error`` says how they are found)."""
    def check(x):
        sc = Scenario.from_dict(x, **lookups)
        validate(sc)
        return sc
    return every_error(check, d)


def _share(bound: CostBound, field: str) -> str:
    return f"{dict(bound.drivers).get(field, 0.0) / bound.work_units:.0%}"


def _graph_error(sc: Scenario, bound: CostBound) -> ScenarioError:
    pc, lay = model_params(sc.model), layout(sc)
    r = rank_model(sc, pc, lay, state_bytes(sc.training.precision, sc.training.optimizer))
    g = step_graph_size(r, True)
    n, opt = g.tasks, g.optimizer_tasks
    limit = f"at most {MAX_STEP_GRAPH_TASKS:,} tasks per step graph"
    if opt > n - opt:
        groups = optimizer_sub_groups(r)
        return ScenarioError("model.num_params", (
            f"{_count(pc.total)} parameters make each GPU's host optimizer step through "
            f"{groups:,} sub-groups of {SUB_GROUP_ELEMENTS:.0e} parameters, a step graph of "
            f"{n:,} tasks; {limit} (use more GPUs, fewer parameters, or keep the optimizer "
            "in HBM)"))
    return ScenarioError("model.num_layers", (
        f"{sc.model.num_layers:,} layers ({r.layers:,} per pipeline stage) make a step graph "
        f"of {n:,} tasks; {limit} (use fewer layers or more pipeline stages)"))


def _count(n: float) -> str:
    return f"{n:,}" if n < 1e15 else f"{float(n):.3g}"


def _check_recsys_tiers(sc: Scenario) -> None:
    """``resolve_tiers``'s refusals, with the HBM figure the evaluation would pass it."""
    acc = sc.cluster.accelerator
    resolve_tiers(sc.recsys, hbm_free_bytes_per_gpu=0.0, hbm_bytes_per_s=acc.hbm_bytes_per_s,
                  node_tiers={k: v.to_dict() for k, v in sc.cluster.tiers.items()})
