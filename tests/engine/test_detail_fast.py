"""The detailed evaluation's fast path gives the report the slow one gave (issue #17).

The timeline used to rebuild the step's graph in Python (``stepgraph.build``) for the task
names and walk it for the critical path and the rows (``step.timeline``, kept as the
specification); now the names come from ``stepgraph.task_name_plan`` and the critical
path and rows from C. The checkpoint Monte-Carlo used numpy's ``percentile``, ``mean``
and ``std`` and a fresh array per operation; ``monte_carlo_before`` below is that code as
it was (engine 0.6.0), the reference the new one must equal bit for bit.
"""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simulation import ScenarioErrors, checked_scenario, evaluate_dict
from simulation import checkpoint, step
from simulation.checkpoint import DAY_S, monte_carlo, percentiles
from simulation.scheduler import simulate
from simulation.stepgraph import build, graph_arrays, task_name_plan, task_names

from .test_stepgraph_c import ALL_LINKS, rank_models

pytest.importorskip("simulation._cstepgraph")


def monte_carlo_before(interval_s, cost_s, mtbf_s, restart_s=0.0, *, lag_s=0.0,
                       run_length_s=30 * DAY_S, runs=200, seed=0):
    """``checkpoint.monte_carlo`` before issue #17, verbatim."""
    rng = np.random.default_rng(seed)
    period = interval_s + cost_s
    horizon = min(run_length_s, 1e6 / max(runs, 1) * mtbf_s)
    expect = horizon / mtbf_s
    k = int(expect + 6 * math.sqrt(expect) + 16)
    out = []
    chunk = max(1, int(2e6 // k))
    for lo in range(0, runs, chunk):
        n = min(chunk, runs - lo)
        f = np.cumsum(rng.exponential(mtbf_s, (n, k)), axis=1)
        while (f[:, -1] < horizon).any():
            f = np.hstack([f, f[:, -1:] + np.cumsum(rng.exponential(mtbf_s, (n, k)), axis=1)])
        start = np.hstack([np.zeros((n, 1)), f[:, :-1]])
        restart = np.full_like(start, restart_s)
        restart[:, 0] = 0.0
        x = np.clip(np.minimum(f, horizon) - start - restart, 0.0, None)
        kept = np.floor(np.clip(x - lag_s, 0.0, None) / period) * interval_s
        whole = np.floor(x / period)
        partial = whole * interval_s + np.minimum(x - whole * period, interval_s)
        useful = np.where(f <= horizon, kept, partial)
        out.append(useful.sum(axis=1) / horizon)
    g = np.concatenate(out)
    p5, p50, p95 = np.percentile(g, [5, 50, 95])
    return dict(mean_goodput=float(g.mean()), std_goodput=float(g.std()), p5=float(p5),
                p50=float(p50), p95=float(p95), runs=runs, seed=seed, run_length_s=horizon,
                expected_failures_per_run=expect)


def timeline_before(r, links, a, sched, engine="auto"):
    """The timeline as ``step_report`` made it before issue #17: the graph rebuilt."""
    return step.timeline(build(r, links, last=True), sched)


# ---------------------------------------------------------------- the pieces

@settings(max_examples=300, deadline=None)
@given(r=rank_models(), last=st.booleans())
def test_task_names_are_the_python_graphs(r, last):
    g = build(r, ALL_LINKS, last)
    names, streams = task_names(r, last)
    assert names == g.names
    assert streams == list(g.streams)
    plan, _ = task_name_plan(r, last)
    assert sum(len(t) for _, t in plan) == len(g.names)


@settings(max_examples=200, deadline=None)
@given(r=rank_models())
def test_c_critical_path_and_rows_equal_the_specification(r):
    from simulation import _cstepgraph
    g = build(r, ALL_LINKS, True)
    a = graph_arrays(r, ALL_LINKS, True, "c")
    s = simulate(a, "c")
    fast = np.frombuffer(_cstepgraph.critical_path(a["kind"], a["stream"], a["dep_ptr"],
                                                   a["dep_idx"], s.start_s, s.end_s), np.int32)
    assert fast.tolist() == step.critical_path(g, s)
    assert step.step_timeline(r, ALL_LINKS, a, s) == step.timeline(g, s)


def test_the_rows_stop_at_the_timeline_limit(monkeypatch):
    r = next(iter(_rank_models_of([{"model": {"preset": "llama2-70b"},
                                    "cluster": {"node": "dgx-h100", "num_nodes": 2},
                                    "strategy": {"kind": "zero3"}}])))
    a = graph_arrays(r, ALL_LINKS, True, "c")
    s = simulate(a, "c")
    monkeypatch.setattr(step, "TIMELINE_MAX_TASKS", 50)
    fast, ref = step.step_timeline(r, ALL_LINKS, a, s), step.timeline(build(r, ALL_LINKS, True), s)
    assert fast == ref and ref["truncated"] and 0 < len(ref["tasks"]) <= 50


def test_names_that_do_not_fit_the_graph_fall_back_to_building_it(monkeypatch):
    """A builder changed without ``task_name_plan`` (a task more in C): the timeline is
    still the specification's, built the slow way."""
    r = next(iter(_rank_models_of([{"model": {"preset": "llama2-7b"},
                                    "cluster": {"node": "dgx-h100", "gpus_per_node": 2},
                                    "strategy": {"kind": "zero3"}}])))
    a = graph_arrays(r, ALL_LINKS, True, "c")
    s = simulate(a, "c")
    ref = step.timeline(build(r, ALL_LINKS, True), s)

    def one_short(r, last):
        plan, streams = task_name_plan(r, last)
        return plan[:-1], streams
    monkeypatch.setattr(step, "task_name_plan", one_short)
    assert step.step_timeline(r, ALL_LINKS, a, s) == ref


def test_bad_arrays_are_errors_not_crashes():
    from simulation import _cstepgraph
    i32 = lambda *v: np.array(v, dtype=np.int32)       # noqa: E731
    f64 = lambda *v: np.array(v, dtype=np.float64)     # noqa: E731
    with pytest.raises(ValueError, match="unknown task"):
        _cstepgraph.critical_path(i32(0), i32(0), i32(0, 1), i32(3), f64(0.0), f64(1.0))
    with pytest.raises(ValueError, match="lengths"):
        _cstepgraph.critical_path(i32(0, 0), i32(0), i32(0, 0), i32(), f64(0.0), f64(1.0))
    with pytest.raises(TypeError, match="plan"):
        _cstepgraph.timeline_rows([("L0",)], ["gpu"], ("compute",), ["nvlink"], i32(0), i32(0),
                                  i32(0, 0), i32(), f64(0.0), f64(1.0), i32(0), i32(0, 0), i32(), 10)
    with pytest.raises(ValueError, match="unknown link"):
        _cstepgraph.timeline_rows([(None, ["x"])], [], ("compute", "transfer"), ["nvlink"],
                                  i32(1), i32(-1), i32(0, 0), i32(), f64(0.0), f64(1.0), i32(1),
                                  i32(0, 1), i32(4), 10)
    # a compute task on a stream the names do not have: not the graph's, None
    assert _cstepgraph.timeline_rows([(None, ["x"])], [], ("compute",), [], i32(0), i32(0),
                                     i32(0, 0), i32(), f64(0.0), f64(1.0), i32(0), i32(0, 0),
                                     i32(), 10) is None


def test_percentiles_are_numpys_bit_for_bit():
    rng = np.random.default_rng(3)
    qs = (5, 50, 95, 0, 100, 37.5, 99.9)
    for n in (1, 2, 3, 7, 199, 200, 201, 1000):
        for _ in range(40):
            x = rng.standard_normal(n) * 10 ** rng.uniform(-3, 3)
            assert percentiles(x, qs) == [float(v) for v in np.percentile(x, qs)]
    x = np.array([1.0, np.nan, 2.0])
    assert all(math.isnan(v) for v in percentiles(x, qs))


@pytest.mark.parametrize("interval,cost,mtbf,restart,lag,runs,seed", [
    p for p in itertools.product([30.0, 9849.26], [0.0, 17.07, 600.0], [3e3, 2.85e6, 2.28e7],
                                 [0.0, 437.0], [0.0, 120.0], [1, 200], [0, 7])])
def test_monte_carlo_is_the_one_before_bit_for_bit(interval, cost, mtbf, restart, lag, runs, seed):
    kw = dict(lag_s=lag, run_length_s=30 * DAY_S, runs=runs, seed=seed)
    assert monte_carlo(interval, cost, mtbf, restart, **kw) == \
        monte_carlo_before(interval, cost, mtbf, restart, **kw)


def test_monte_carlo_in_several_chunks_is_the_one_before():
    """More than 2e6 draws: the runs go in chunks (and the failures past k are drawn)."""
    kw = dict(lag_s=60.0, run_length_s=365 * DAY_S, runs=3000, seed=5)
    assert monte_carlo(3600.0, 30.0, 3e4, 300.0, **kw) == monte_carlo_before(3600.0, 30.0, 3e4, 300.0, **kw)


# ---------------------------------------------------------------- whole reports

def scenarios() -> list[dict]:
    """Strategies, offload tiers, tensor and pipeline parallelism, node counts and
    releases, as a run's page evaluates them (``detail``)."""
    out = []
    base = {"model": {"preset": "llama2-70b"},
            "training": {"micro_batch_size": 1, "global_batch_size": 64, "seq_len": 4096,
                         "recompute": "full", "flash_attention": True}}
    for kind, nodes, rec in itertools.product(
            ["ddp", "zero1", "zero2", "zero3", "fsdp_full_shard", "fsdp_hybrid_shard",
             "zero_offload", "zero_infinity", "megatron_dist_opt"], [1, 4], ["full", "selective"]):
        strategy = {"kind": kind, **({"shard_group_size": 8} if kind == "fsdp_hybrid_shard" else {})}
        out.append(dict(base, cluster={"node": "dgx-h100", "num_nodes": nodes},
                        training=dict(base["training"], recompute=rec), strategy=strategy))
    small = {"model": {"preset": "llama2-7b"},
             "training": {"micro_batch_size": 2, "global_batch_size": 32, "seq_len": 2048}}
    extra = [
        {"cluster": {"node": "dgx-h100-cxl", "num_nodes": 1},
         "strategy": {"kind": "zero3", "offload_optimizer": "cxl", "offload_params": "cxl"}},
        {"cluster": {"node": "dgx-a100-80gb", "num_nodes": 2},
         "strategy": {"kind": "zero_infinity", "offload_activations": "cpu"}},
        {"cluster": {"node": "dgx-h100", "num_nodes": 2},
         "strategy": {"kind": "zero3", "prefetch_miss_rate": 0.25, "prefetch_depth": 2}},
        {"cluster": {"node": "dgx-h100", "num_nodes": 2},
         "strategy": {"kind": "zero3", "deepspeed_release": "v0.3-v0.5"}},
        {"cluster": {"node": "dgx-h100", "num_nodes": 2},
         "training": dict(small["training"], tensor_parallel=4, pipeline_parallel=2,
                          global_batch_size=64), "strategy": {"kind": "zero1"}},
        {"cluster": {"node": "dgx-h100", "num_nodes": 4},
         "training": dict(small["training"], tensor_parallel=8, pipeline_parallel=4,
                          interleave_stages=2, global_batch_size=64, recompute="full"),
         "strategy": {"kind": "megatron_dist_opt"}},
    ]
    for e in extra:
        out.append(dict(small, **e))
    valid = []
    for d in out:
        try:
            checked_scenario(d)
        except ScenarioErrors:
            continue
        valid.append(d)
    return valid


def _rank_models_of(ds):
    from simulation import Scenario
    from simulation.parallel import layout
    from simulation.params import model_params
    from simulation.states import state_bytes
    for d in ds:
        sc = Scenario.from_dict(d)
        pc, lay = model_params(sc.model), layout(sc)
        yield step.rank_model(sc, pc, lay, state_bytes(sc.training.precision, sc.training.optimizer,
                                                       sc.training.dtypes))


def test_detailed_reports_are_the_reports_before(monkeypatch):
    """Every scenario's detailed report, whole, equals the one the graph rebuilt in
    Python and the Monte-Carlo before #17 give."""
    ds = scenarios()
    fast = [evaluate_dict(d, detail=True) for d in ds]
    monkeypatch.setattr(step, "step_timeline", timeline_before)
    monkeypatch.setattr(checkpoint, "monte_carlo", monte_carlo_before)
    slow = [evaluate_dict(d, detail=True) for d in ds]
    assert len(ds) >= 36
    timelines = 0
    for d, a, b in zip(ds, fast, slow):
        assert a == b, d
        timelines += bool(a["timeline"].get("tasks"))
        assert a["checkpoint"]["monte_carlo"] is not None
    assert timelines >= 30
