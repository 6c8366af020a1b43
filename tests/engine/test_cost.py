"""Cost before work: the engine's cost bound, its caps on work, and validation without
simulating (``simulation.cost``)."""

import copy
import json
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import simulation
from simulation import Scenario, ScenarioError, cost_bound, evaluate, validate
from simulation.cost import MAX_STEP_GRAPH_TASKS, MAX_WORK_UNITS, monte_carlo_draws, step_graph_size
from simulation.stepgraph import build
from tests.engine.test_stepgraph_c import ALL_LINKS, rank_models

# the web side's example scenarios, read as plain JSON (engine tests import no Django)
EXAMPLES = json.loads((Path(__file__).resolve().parents[2] / "tierlab" / "scenarios" / "examples.json").read_text())


def examples() -> list:
    return copy.deepcopy(EXAMPLES)


OFFLOAD_7B = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100", "gpus_per_node": 1},
              "strategy": {"kind": "zero_offload", "offload_optimizer": "cpu"}}


def custom(num_params: int, **strategy) -> dict:
    return {"model": {"num_params": num_params, "num_layers": 32, "hidden_size": 4096},
            "cluster": {"node": "dgx-h100", "gpus_per_node": 1},
            "strategy": strategy or {"kind": "zero_offload", "offload_optimizer": "cpu"}}


def recsys(tables: int = 3, rows: int = 2_000_000, **extra) -> dict:
    return {"recsys": {"tables": [{"name": f"t{i}", "rows": rows, "dim": 16} for i in range(tables)],
                       "bottom_mlp": [13, 16], "batch_size": 2048, **extra},
            "cluster": {"node": "dgx-h100"}}


def refusal(d: dict) -> ScenarioError:
    with pytest.raises(ScenarioError) as e:
        validate(Scenario.from_dict(d))
    return e.value


# ------------------------------------------------------------------ the step graph's size
@settings(max_examples=300, deadline=None)
@given(r=rank_models(), last=st.booleans())
def test_the_graph_size_is_counted_exactly_without_building_it(r, last):
    g = build(r, ALL_LINKS, last)
    size = step_graph_size(r, last)
    assert size.tasks == len(g.names)
    assert size.edges >= sum(len(d) for d in g.deps)          # an upper bound


def test_the_bound_counts_the_graphs_evaluate_builds():
    sc = Scenario.from_dict(examples()[0]["scenario"])        # 70B, two nodes, 2 micro-batches
    quick, full, memory = cost_bound(sc, True, False), cost_bound(sc), cost_bound(sc, False, False)
    assert memory.step_graph_tasks == memory.timeline_tasks == memory.samples == 0
    assert quick.timeline_tasks == 0 and quick.samples == 0   # no timeline, no Monte-Carlo
    assert full.timeline_tasks == full.largest_step_graph_tasks > 0
    report = evaluate(sc)
    assert report.step["micro_batches"] > 1
    assert full.step_graph_tasks > full.largest_step_graph_tasks   # the micro-batch graph too
    assert len(report.timeline["tasks"]) <= full.timeline_tasks
    assert full.samples == monte_carlo_draws(sc, report.parallelism["num_gpus"])
    assert full.work_units > quick.work_units > memory.work_units > 0
    assert full.curve_points == len(report.checkpoint["curve"]["interval_s"]) + 3 * len(
        report.offload_bandwidth["bandwidth_bytes_per_s"])


def test_host_optimizer_sub_groups_are_what_makes_a_big_model_expensive():
    small, big = (cost_bound(Scenario.from_dict(custom(n))) for n in (10**12, 10**14))
    assert big.largest_step_graph_tasks - small.largest_step_graph_tasks == (10**14 - 10**12) // 10**9
    assert big.driver == "model.num_params"
    # on the GPU the optimizer is one task, whatever the size
    on_gpu = cost_bound(Scenario.from_dict(custom(10**16, kind="zero3")))
    assert on_gpu.largest_step_graph_tasks < 1000


def test_recommendation_samples_and_tables_are_counted():
    sc = Scenario.from_dict(recsys(tables=4, sample_lookups=500_000))
    assert cost_bound(sc).samples == 4 * 500_000
    assert cost_bound(sc, include_step=False).samples == 0    # the quick estimate skips the check
    assert cost_bound(sc).driver == "recsys.sample_lookups"
    assert cost_bound(Scenario.from_dict(recsys(tables=4, sample_lookups=0))).driver == "recsys.tables"


def test_the_bound_takes_microseconds_even_for_a_huge_scenario():
    sc = Scenario.from_dict(custom(10**16))               # ~10 million tasks if it were built
    cost_bound(sc)
    t0 = time.perf_counter()
    for _ in range(100):
        b = cost_bound(sc)
    assert (time.perf_counter() - t0) / 100 < 1e-3
    assert b.largest_step_graph_tasks > 10**7


def test_work_units_order_scenarios_as_their_evaluation_times_do():
    """Weights are about microseconds on the development machine: loosely, scenarios whose
    bounds are far apart take times in the same order, and none is wildly off."""
    specs = [examples()[2]["scenario"], custom(10**12), recsys(tables=3, sample_lookups=1_000_000)]
    scs = [Scenario.from_dict(d) for d in specs]
    bounds = [cost_bound(sc).work_units for sc in scs]
    assert bounds[0] * 20 < bounds[1] and bounds[1] * 5 < bounds[2]
    times_us = []
    for sc in scs:
        evaluate(sc)
        t0 = time.perf_counter()
        evaluate(sc)
        times_us.append((time.perf_counter() - t0) * 1e6)
    assert times_us == sorted(times_us)
    assert bounds[2] / 10 < times_us[2] < bounds[2] * 10


# ------------------------------------------------------------------ caps
def test_a_huge_model_with_the_optimizer_on_the_host_is_refused_naming_num_params():
    e = refusal(custom(10**16))
    assert e.field == "model.num_params"
    assert f"at most {MAX_STEP_GRAPH_TASKS:,} tasks per step graph" in e.message
    assert "10,000,000 sub-groups" in e.message


def test_queued_nvme_write_backs_count_quadratically_and_hit_the_work_cap():
    e = refusal(custom(5 * 10**13, kind="zero_infinity"))   # 50,000 sub-groups, ~80 s
    assert e.field == "model.num_params"
    assert f"{MAX_WORK_UNITS:,} work units" in e.message
    validate(Scenario.from_dict(custom(3 * 10**12, kind="zero_infinity")))


@pytest.mark.parametrize("section, field, limit", [
    ("checkpoint", "monte_carlo_runs", 10_000), ("recsys", "sample_lookups", 1_000_000)])
def test_sample_counts_have_caps(section, field, limit):
    d = copy.deepcopy(OFFLOAD_7B) if section == "checkpoint" else recsys()
    d.setdefault(section, {})[field] = limit
    validate(Scenario.from_dict(d))
    d[section][field] = limit + 1
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.field == f"{section}.{field}"
    assert f"at most {limit:,}" in e.value.message


def test_the_number_of_tables_has_a_cap():
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(recsys(tables=1001, rows=10))
    assert e.value.field == "recsys.tables" and "at most 1,000 tables" in e.value.message


def test_work_over_the_engine_cap_names_its_biggest_driver():
    e = refusal(recsys(tables=300, sample_lookups=1_000_000))   # 3e8 draws, ~90 s
    assert e.field == "recsys.sample_lookups"
    assert "engine takes at most 60 s" in e.message


# ------------------------------------------------------------------ validation without simulating
MUTATIONS = [
    lambda d: d["training"].update(global_batch_size=17),
    lambda d: d["training"].update(tensor_parallel=3),
    lambda d: d["training"].update(pipeline_parallel=7),
    lambda d: d["training"].update(micro_batch_size=3),
    lambda d: d["strategy"].update(kind="fsdp_hybrid_shard", shard_group_size=3),
    lambda d: d["cluster"].update(num_nodes=3),
    lambda d: d["checkpoint"].update(method="async"),
    lambda d: d.update(recsys={"preset": "dlrm-mlperf-v1", "tiers": {"hbm": {}, "ddr": {"capacity_bytes": None}}}),
    lambda d: d.update(recsys={"preset": "dlrm-mlperf-v1", "tiers": {"pmem": {}}}),
    lambda d: (d.pop("model"), d.update(recsys={"preset": "dlrm-mlperf-v2",
                                                "tiers": {"hbm": {"read_bytes_per_s": None}}})),
    lambda d: None,
]


def outcome(fn, sc):
    try:
        fn(sc)
    except ScenarioError as e:
        return (e.field, e.message)
    return None


@pytest.mark.parametrize("k", range(len(MUTATIONS)))
@pytest.mark.parametrize("example", range(4))
def test_validate_refuses_exactly_what_evaluate_refuses(example, k):
    d = examples()[example]["scenario"]
    for s in ("training", "strategy", "checkpoint"):
        d.setdefault(s, {})
    MUTATIONS[k](d)
    try:
        sc = Scenario.from_dict(d)
    except ScenarioError:
        return                                   # refused while parsing, before either
    assert outcome(validate, sc) == outcome(lambda s: evaluate(s, detail=False), sc)


def test_validate_is_fast_where_evaluating_is_slow():
    sc = Scenario.from_dict(recsys(tables=26, sample_lookups=1_000_000))   # ~8 s to evaluate
    t0 = time.perf_counter()
    bound = validate(sc)
    assert time.perf_counter() - t0 < 0.05
    assert bound.work_units > 5_000_000


def test_the_bound_is_json_ready():
    b = simulation.validate(Scenario.from_dict(OFFLOAD_7B)).to_dict()
    assert set(b) >= {"step_graph_tasks", "samples", "curve_points", "work_units", "drivers"}
    assert all(isinstance(v, float) for v in b["drivers"].values())


def test_a_remembered_bound_equals_a_cold_one_and_follows_the_sections():
    from simulation import memo

    d = custom(10**13)
    warm = cost_bound(Scenario.from_dict(d))
    assert cost_bound(Scenario.from_dict(d)) is warm          # the same frozen sections
    memo.forget()
    assert cost_bound(Scenario.from_dict(d)) == warm
    d["checkpoint"] = {"method": "async"}       # the background write: simulated without and with it
    assert cost_bound(Scenario.from_dict(d)).step_graph_tasks == 3 * warm.step_graph_tasks + 1


def test_a_sweep_point_over_the_caps_is_an_invalid_result_not_an_evaluation():
    from simulation import sweep

    base = custom(10**12)
    points = sweep.expand(base, [{"path": "model.num_params", "values": [10**12, 10**16]}])
    t0 = time.perf_counter()
    ok, huge = sweep.run(points)
    assert time.perf_counter() - t0 < 1.0             # 10**16 would take minutes and gigabytes
    assert ok["valid"] and ok["step_time_s"] > 0
    assert not huge["valid"] and huge["error"].startswith("model.num_params: ")
    assert "at most 500,000 tasks per step graph" in huge["error"]
