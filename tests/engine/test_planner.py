"""The planner (simulation/planner.py): its answer equals brute force, pruning never drops
the feasible optimum, any split into chunks gives the same answer, and hand checks."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from simulation import ScenarioError, planner
from simulation.evaluate import evaluate
from simulation.parallel import layout
from simulation.scenario import Scenario

SMALL = {
    "model": "llama2-13b",
    "cluster": {"node": "dgx-h100", "num_nodes": [1, 2]},
    "training": {"seq_len": 4096, "global_batch_size": 64, "flash_attention": True,
                 "total_tokens": 1e11},
    "constraints": {"memory_margin": 0.05, "max_usd_per_hour": 60},
    "space": {"tensor_parallel": [1, 2, 8], "pipeline_parallel": [1, 4],
              "micro_batch_size": [1, 4], "recompute": ["none", "full"],
              "strategies": ["ddp", "zero1", "zero3"], "offload_optimizer": ["none", "cpu"]},
    "objective": "step_time", "top_k": 5,
}


def _strip(rows):
    return [{k: v for k, v in r.items() if k not in ("rank", "on_pareto_front")} for r in rows]


@pytest.fixture(scope="module")
def small_brute():
    return planner.brute_force(SMALL)


@pytest.fixture(scope="module")
def small_plan():
    return planner.plan(SMALL)


def test_plan_equals_brute_force_on_a_small_space(small_plan, small_brute):
    assert small_plan["candidates"] == 2 * 3 * 2 * 2 * 2 * 3 * 2
    assert small_plan["feasible"] == small_brute["feasible"] > 5
    assert _strip(small_plan["top"]) == small_brute["top"]
    assert small_plan["pareto"] == small_brute["pareto"]
    # the counts add up: every candidate is feasible or rejected for one reason
    assert small_plan["feasible"] + sum(small_plan["rejected"].values()) == small_plan["candidates"]
    # the space has each kind of refusal: DDP with CPU offload, 2 nodes over 60 USD/h,
    # TP 8 x PP 4 on 8 GPUs, 13B states unsharded
    for reason in ("invalid_combination", "over_budget", "indivisible", "does_not_fit_hbm"):
        assert small_plan["rejected"][reason] > 0, reason


def test_top_rows_are_ranked_and_explained(small_plan):
    top = small_plan["top"]
    assert [r["rank"] for r in top] == list(range(1, len(top) + 1))
    keys = [(r["objective"], r["step_time_s"], r["index"]) for r in top]
    assert keys == sorted(keys)
    for r in top:
        assert r["bottleneck_message"] and r["bottleneck"]
        assert r["hbm_total_bytes"] <= r["hbm_capacity_bytes"] * 0.95
        assert r["usd_per_hour"] <= 60
        # the row's scenario is a valid scenario: saving it as one gives the same step
        rep = evaluate(Scenario.from_dict(r["scenario"]), detail=False).to_dict()
        assert rep["step"]["time_s"] == r["step_time_s"]


def test_pareto_front_is_not_dominated(small_plan):
    front = small_plan["pareto"]
    assert front
    for a in front:
        for b in front:
            assert not (b["step_time_s"] <= a["step_time_s"]
                        and b["usd_per_million_tokens"] <= a["usd_per_million_tokens"]
                        and (b["step_time_s"], b["usd_per_million_tokens"])
                        != (a["step_time_s"], a["usd_per_million_tokens"]))


@pytest.mark.parametrize("n_chunks", [2, 3, 7, 50])
def test_any_split_into_chunks_gives_the_same_answer(small_plan, n_chunks):
    parts = [planner.plan_chunk(SMALL, k, n) for k, n in planner.plan_chunks(SMALL, n_chunks)]
    random.Random(n_chunks).shuffle(parts)       # workers finish in any order
    merged = planner.merge(SMALL, parts)
    assert merged == small_plan
    assert sum(p["candidates"] for p in parts) == small_plan["candidates"]


def test_chunk_results_are_json():
    part = planner.plan_chunk(SMALL, 1, 4)
    assert json.loads(json.dumps(part)) == part


def test_hbm_lower_bound_by_hand():
    """Llama-2-70B (Touvron et al. 2023: 80 layers, h 8192, 64 heads, 8 KV heads, FFN 28672)
    per block: Q and O 2 x 8192^2 = 134,217,728; K and V 2 x 8192 x 1024 = 16,777,216;
    SwiGLU 3 x 8192 x 28672 = 704,643,072; two RMSNorms 16,384: 855,654,400 elements.
    80 blocks in bf16 on one GPU (TP 1, PP 1, DDP): 136,904,704,000 bytes = 127.5 GiB.
    With TP 8 x PP 2 on 16 GPUs: / 16. ZeRO-3 over DP 16 on 16 GPUs: / 16."""
    per_block = 2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192
    assert per_block == 855_654_400
    whole = 2 * per_block * 80
    for train, strat, nodes, div in (({}, {"kind": "ddp"}, 1, 1),
                                     ({"tensor_parallel": 8, "pipeline_parallel": 2}, {"kind": "zero1"}, 2, 16),
                                     ({}, {"kind": "zero3"}, 2, 16),
                                     ({}, {"kind": "zero3", "offload_params": "cpu"}, 2, None)):
        sc = Scenario.from_dict({"model": "llama2-70b", "cluster": {"node": "dgx-h100", "num_nodes": nodes},
                                 "training": train, "strategy": strat})
        lb = planner.hbm_lower_bound_bytes(sc, layout(sc))
        assert lb == (0.0 if div is None else pytest.approx(whole / div, rel=1e-12))


def test_time_and_cost_to_train_by_hand():
    """time to train = total tokens / tokens per s / goodput; cost = that x USD per hour."""
    spec = dict(SMALL, objective="cost_to_train")
    best = planner.plan(spec)["best"]
    t = 1e11 / best["tokens_per_s"] / best["goodput"]
    assert best["time_to_train_s"] == pytest.approx(t, rel=1e-12)
    assert best["cost_to_train_usd"] == pytest.approx(t / 3600 * best["usd_per_hour"], rel=1e-12)
    assert 0 < best["goodput"] < 1


def test_indivisible_counts_by_hand():
    """Llama-2-70B has 80 layers and 64 heads. On 1 node of 8 GPUs, TP in {1, 3, 8} x PP in
    {1, 3, 5}: TP 3 divides neither 8 GPUs nor 64 heads (3 candidates), PP 3 does not divide
    8 GPUs (TP 1 and TP 8: 2 more), PP 5 neither (2 more), TP 8 x PP 5 = 40 > 8 (counted).
    Indivisible: 3 + 2 + 2 = 7 of 9; left: (1, 1), (8, 1)."""
    spec = {"model": "llama2-70b", "cluster": {"node": "dgx-h100", "num_nodes": 1},
            "training": {"global_batch_size": 8},
            "space": {"tensor_parallel": [1, 3, 8], "pipeline_parallel": [1, 3, 5],
                      "micro_batch_size": [1], "recompute": ["full"], "strategies": ["zero3"]}}
    out = planner.plan(spec)
    assert out["rejected"]["indivisible"] == 7
    assert out["feasible"] + out["rejected"]["does_not_fit_hbm"] == 2


def test_interleaving_follows_megatrons_rule():
    spec = {"model": "llama2-7b", "cluster": {"node": "dgx-h100", "num_nodes": 1},
            "training": {"global_batch_size": 6},
            "space": {"tensor_parallel": [1], "pipeline_parallel": [1, 2], "interleave_stages": [1, 2],
                      "micro_batch_size": [1], "recompute": ["full"], "strategies": ["zero1"]}}
    rows = [planner.evaluate_candidate(spec, i) for i in range(4)]
    by = {(r["choices"]["pipeline_parallel"], r["choices"]["interleave_stages"]): r for r in rows}
    assert by[(1, 2)]["status"] == "indivisible"           # no pipeline to interleave
    # PP 2 on 8 GPUs: DP 4, 6 / (1 x 4) is no whole number of micro-batches
    assert by[(2, 2)]["status"] == "indivisible"
    spec["training"]["global_batch_size"] = 8              # DP 4: 2 micro-batches, a multiple of 2
    assert planner.evaluate_candidate(spec, 3)["status"] == "feasible"


@pytest.mark.parametrize("patch,field", [
    ({"objective": "fastest"}, "objective"),
    ({"space": {"tensor_parallel": [1, "2"]}}, "space.tensor_parallel.1"),
    ({"space": {"strategies": ["zero9"]}}, "space.strategies.0"),
    ({"space": {"color": [1]}}, "space.color"),
    ({"cluster": {"node": "dgx-h100", "num_nodes": {"min": 4, "max": 2}}}, "cluster.num_nodes.max"),
    ({"cluster": {"node": "dgx-h100", "num_gpus": 12}}, "cluster.num_gpus"),
    ({"cluster": {"node": "nope", "num_nodes": 1}}, "cluster.node"),
    ({"training": {"tensor_parallel": 2}}, "training.tensor_parallel"),
    ({"training": {"tokens_per_step": 1000, "seq_len": 4096}}, "training.tokens_per_step"),
    ({"objective": "time_to_train", "training": {"seq_len": 4096}}, "training.total_tokens"),
    ({"constraints": {"memory_margin": 2}}, "constraints.memory_margin"),
    ({"top_k": 0}, "top_k"),
    ({"space": {"micro_batch_size": list(range(1, 80)), "pipeline_parallel": list(range(1, 60)),
                "tensor_parallel": list(range(1, 60))}}, "space.micro_batch_size"),
])
def test_bad_specs_name_the_field(patch, field):
    with pytest.raises(ScenarioError) as e:
        planner.parse_spec(dict(SMALL, **patch))
    assert e.value.field == field


def test_gpu_count_and_tokens_per_step():
    spec = planner.parse_spec({"model": "llama2-7b", "cluster": {"node": "dgx-h100", "num_gpus": 4},
                               "training": {"seq_len": 2048, "tokens_per_step": 2048 * 32}})
    assert spec["node_counts"] == [1] and spec["cluster"]["gpus_per_node"] == 4
    assert spec["training"]["global_batch_size"] == 32
    assert spec["space"]["tensor_parallel"] == [1, 2, 4]


def test_min_global_batch_without_a_batch():
    """Without a global batch each candidate runs micro-batch x DP (no accumulation)."""
    spec = {"model": "llama2-7b", "cluster": {"node": "dgx-h100", "num_nodes": 1},
            "constraints": {"min_global_batch_size": 16},
            "space": {"tensor_parallel": [1, 8], "pipeline_parallel": [1], "micro_batch_size": [2],
                      "recompute": ["full"], "strategies": ["zero3"]}}
    out = planner.plan(spec)
    # TP 8: DP 1, batch 2 < 16; TP 1: DP 8, batch 16
    assert out["rejected"]["below_min_global_batch"] == 1
    assert out["best"]["choices"]["tensor_parallel"] == 1 and out["best"]["global_batch_size"] == 16


# ------------------------------------------------------------------ property: pruning
_MODELS = ("llama2-7b", "llama2-13b", "llama2-70b")


@st.composite
def small_specs(draw):
    sub = lambda xs: draw(st.lists(st.sampled_from(xs), min_size=1, max_size=2, unique=True))  # noqa: E731
    return {"model": draw(st.sampled_from(_MODELS)),
            "cluster": {"node": "dgx-h100", "num_nodes": sub([1, 2, 4])},
            "training": {"seq_len": draw(st.sampled_from([2048, 4096])),
                         "global_batch_size": draw(st.sampled_from([32, 64])),
                         "flash_attention": True, "total_tokens": 1e11},
            "constraints": {"memory_margin": draw(st.sampled_from([0.0, 0.1, 0.3]))},
            "space": {"tensor_parallel": sub([1, 2, 8]), "pipeline_parallel": sub([1, 2, 4]),
                      "micro_batch_size": sub([1, 2]), "recompute": sub(["none", "selective", "full"]),
                      "strategies": sub(["ddp", "zero1", "zero2", "zero3", "megatron_dist_opt"]),
                      "offload_optimizer": sub(["none", "cpu"])},
            "objective": draw(st.sampled_from(planner.OBJECTIVES)), "top_k": 3}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs())
def test_pruning_never_drops_the_feasible_optimum(spec):
    got, ref = planner.plan(spec), planner.brute_force(spec)
    assert got["feasible"] == ref["feasible"]
    assert _strip(got["top"]) == ref["top"]
    assert got["pareto"] == ref["pareto"]
    # and the bound under each pruned candidate is below what the memory model says
    parsed = planner.parse_spec(spec)
    for i in range(parsed["num_candidates"]):
        _c, d = planner.candidate(parsed, i)
        try:
            sc = Scenario.from_dict(d)
            lay = layout(sc)
        except ScenarioError:
            continue
        est = evaluate(sc, include_step=False).to_dict()["memory"]["per_gpu"]["hbm"]["total_bytes"]
        assert planner.hbm_lower_bound_bytes(sc, lay) <= est


def test_cli_plan(tmp_path):
    spec = {"model": "llama2-7b", "cluster": {"node": "dgx-h100", "num_nodes": 1},
            "training": {"global_batch_size": 16},
            "space": {"tensor_parallel": [1, 2], "pipeline_parallel": [1], "micro_batch_size": [1],
                      "recompute": ["full"], "strategies": ["zero1", "zero3"]}}
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(spec))
    p = subprocess.run([sys.executable, "-m", "simulation", "plan", str(f), "--json"],
                       capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["candidates"] == 4 and out["best"]["rank"] == 1
    p = subprocess.run([sys.executable, "-m", "simulation", "plan", str(f)],
                       capture_output=True, text=True, check=False)
    assert p.returncode == 0 and "1." in p.stdout and "bottleneck" in p.stdout.lower()
    f.write_text(json.dumps(dict(spec, objective="fast")))
    p = subprocess.run([sys.executable, "-m", "simulation", "plan", str(f)],
                       capture_output=True, text=True, check=False)
    assert p.returncode == 2 and "objective" in p.stderr


@pytest.mark.parametrize("patch,field", [
    ({"model": "llama9"}, "model.preset"),
    ({"training": {"seq_len": 4096, "precision": "int4"}}, "training.precision"),
])
def test_bad_model_or_training_names_the_field(patch, field):
    with pytest.raises(ScenarioError) as e:
        planner.parse_spec(dict(SMALL, **patch))
    assert e.value.field == field


def test_pareto_front_by_hand():
    """(step s, USD per M tokens): a (1, 5), b (2, 3), c (2, 3) the same as b, d (3, 4) beaten
    by b, e (4, 1): the front is a, b (not its twin c), e."""
    rows = [dict(index=i, step_time_s=t, usd_per_million_tokens=c)
            for i, (t, c) in enumerate([(1, 5), (2, 3), (2, 3), (3, 4), (4, 1)])]
    assert [r["index"] for r in planner.pareto_front(rows)] == [0, 1, 4]
    no_price = [dict(index=i, step_time_s=t, usd_per_million_tokens=None) for i, t in enumerate([2, 1, 1])]
    assert [r["index"] for r in planner.pareto_front(no_price)] == [1]
