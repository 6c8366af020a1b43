"""The planner (simulation/planner.py): its answer equals brute force, pruning never drops
the feasible optimum, any split into chunks gives the same answer, and hand checks."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from simulation import ScenarioError, ScenarioErrors, planner
from simulation.evaluate import evaluate
from simulation.parallel import layout
from simulation.scenario import STRATEGY_KINDS, Scenario

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
    keys = [planner._rank_key(r) for r in top]
    assert keys == sorted(keys)
    for r in top:
        assert r["bottleneck_message"] and r["bottleneck"]
        assert r["hbm_total_bytes"] <= r["hbm_capacity_bytes"] * 0.95
        assert r["usd_per_hour"] <= 60
        # the row's scenario is a valid scenario: saving it as one gives the same step
        rep = evaluate(Scenario.from_dict(r["scenario"]), detail=False).to_dict()
        assert rep["step"]["time_s"] == r["step_time_s"]
        # and its memory verdict, "tight" included, as its run page says (rows had none)
        assert r["fit_state"] == rep["fit_state"]


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
    """Llama-2-70B (Touvron et al. 2023: 80 layers, h 8192, 64 heads, 8 KV heads, FFN 28672,
    vocabulary 32,000, untied) per block: Q and O 2 x 8192^2 = 134,217,728; K and V
    2 x 8192 x 1024 = 16,777,216; SwiGLU 3 x 8192 x 28672 = 704,643,072; two RMSNorms
    16,384: 855,654,400. Whole: 80 blocks + 2 x 32000 x 8192 + 8192 = 68,976,648,192.
    Bytes per parameter held on HBM at least (ZeRO, SC'20 Table 1, mixed-precision Adam):
    2 (bf16 parameters) + 2 (gradients) + 12 (fp32 master and moments) = 16, each divided
    by the shard degree from its ZeRO stage on. Stored activations with full recompute:
    the input of each layer, 2 s b h = 2 x 4096 x 8192 = 67,108,864 bytes a layer x 80
    layers (Korthikanti et al. 2022, Sec. 5); the CUDA context 1.5 GiB.
    - ZeRO-3 over 16 GPUs: 16 / 16 x 68,976,648,192 + 5,368,709,120 + 1,610,612,736;
    - ZeRO-1 with TP 8 x PP 2 on 16 GPUs (DP 1, nothing to shard): the 16 bytes over the
      16 model-parallel ranks, plus the larger pipeline stage's activations (the first
      stage's, from the activation model; the last stage's 40 layers of one micro-batch);
    - ZeRO-3 with the parameters offloaded to the CPU: the 2 bytes go, 14 / 16 stay;
    - ZeRO-Offload (optimizer on the CPU): only the 2 bytes of the parameters stay.
    """
    per_block = 2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192
    assert per_block == 855_654_400
    whole = per_block * 80 + 2 * 32000 * 8192 + 8192
    assert whole == 68_976_648_192
    acts, runtime = 80 * 2 * 4096 * 8192, 1.5 * 2**30
    full = {"recompute": "full", "micro_batch_size": 1, "global_batch_size": 16}

    def bound(train, strat):
        sc = Scenario.from_dict({"model": "llama2-70b", "cluster": {"node": "dgx-h100", "num_nodes": 2},
                                 "training": dict(full, **train), "strategy": strat})
        return planner.hbm_lower_bound_bytes(sc, layout(sc))

    assert bound({}, {"kind": "zero3"}) == 16 / 16 * whole + acts + runtime
    assert bound({}, {"kind": "zero3", "offload_params": "cpu"}) == 14 / 16 * whole + acts + runtime
    assert bound({}, {"kind": "zero_offload"}) == 2 * whole + acts + runtime
    from simulation.memory import _stage_activations
    sc = Scenario.from_dict({"model": "llama2-70b", "cluster": {"node": "dgx-h100", "num_nodes": 2},
                             "training": dict(full, tensor_parallel=8, pipeline_parallel=2,
                                              sequence_parallel=True), "strategy": {"kind": "zero1"}})
    lay = layout(sc)
    act = _stage_activations(sc.model, sc.training, lay.grad_accumulation_steps, True)
    # with a pipeline every stage holds at least its 40 blocks (the embedding sits on the
    # first stage, the final norm and head on the last: simulation.memory.stage_param_share)
    assert planner.hbm_lower_bound_bytes(sc, lay) == pytest.approx(
        16 * (per_block * 80) / 16 + max(act.layers_bytes, act.per_layer_bytes * 40) + runtime, rel=1e-12)


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


def test_independent_bad_fields_are_named_together():
    """A bad model preset, objective and top_k are three fields no check of which needs
    another's value: one ScenarioErrors names all three (the sweep and scenario parses do
    the same), in the order the spec's checks run; each keeps its single-error name."""
    with pytest.raises(ScenarioErrors) as e:
        planner.parse_spec(dict(SMALL, model="nope", objective="fastest", top_k=-1))
    assert [x.field for x in e.value.errors] == ["model.preset", "objective", "top_k"]
    with pytest.raises(ScenarioErrors) as e:
        planner.parse_spec(dict(SMALL, cluster={"node": "nope", "num_nodes": 1},
                                training={"tensor_parallel": 2, "seq_len": 0},
                                space={"tensor_parallel": [1, "2"], "color": [1]},
                                constraints={"memory_margin": 2}))
    assert [x.field for x in e.value.errors] == [
        "cluster.node", "training.tensor_parallel", "training.seq_len", "constraints.memory_margin",
        "space.color", "space.tensor_parallel.1"]


def test_checks_needing_a_bad_field_are_left_out():
    """The space's size needs every list, ``total_tokens`` for a time objective a valid
    objective: with one of those bad, only it is named."""
    big = {"micro_batch_size": list(range(1, 80)), "pipeline_parallel": list(range(1, 60)),
           "tensor_parallel": list(range(1, 60)), "recompute": ["x"]}
    with pytest.raises(ScenarioError) as e:
        planner.parse_spec(dict(SMALL, space=big))
    assert not isinstance(e.value, ScenarioErrors) and e.value.field == "space.recompute.0"
    with pytest.raises(ScenarioError) as e:
        planner.parse_spec(dict(SMALL, objective="time_to_train", training={"total_tokens": -1}))
    assert not isinstance(e.value, ScenarioErrors) and e.value.field == "training.total_tokens"


def test_a_spec_that_is_no_object_is_the_plan():
    with pytest.raises(ScenarioError) as e:
        planner.parse_spec("x")
    assert e.value.field == "plan" and e.value.message == "must be a JSON object"


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
                      "interleave_stages": sub([1, 2]),
                      "micro_batch_size": sub([1, 2]), "recompute": sub(["none", "selective", "full"]),
                      "strategies": sub(list(STRATEGY_KINDS)),
                      "offload_optimizer": sub(["none", "cpu", "nvme"]),
                      "offload_params": sub(["none", "cpu"]), "prefetch_depth": sub([1, 2]),
                      "checkpoint_target": sub(["parallel_fs", "local_nvme"])},
            "objective": draw(st.sampled_from(planner.OBJECTIVES)), "top_k": draw(st.sampled_from([1, 3]))}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs())
def test_pruning_never_drops_the_feasible_optimum(spec):
    """The search (numpy screen, HBM lower bound, memory estimate, step model in the order
    of the step-time lower bound, dominated candidates skipped) against every candidate
    simulated: the same feasible count, top k and Pareto front. And each bound under what
    it bounds: the HBM bound under the memory model's HBM, the step bound under the
    simulated step; the memory the search reads is evaluate()'s."""
    got, ref = planner.plan(spec), planner.brute_force(spec)
    assert got["feasible"] == ref["feasible"]
    assert _strip(got["top"]) == ref["top"]
    assert got["pareto"] == ref["pareto"]
    parsed = planner.parse_spec(spec)
    for i in range(parsed["num_candidates"]):
        _c, d = planner.candidate(parsed, i)
        try:
            sc = Scenario.from_dict(d)
            lay = layout(sc)
        except ScenarioError:
            continue
        mem = evaluate(sc, include_step=False).to_dict()["memory"]
        tiers = planner.memory_tiers(sc, lay)
        assert tiers["per_gpu"] == mem["per_gpu"] and tiers["per_node"] == mem["per_node"]
        assert planner.hbm_lower_bound_bytes(sc, lay) <= mem["per_gpu"]["hbm"]["total_bytes"]
    for row in ref["top"] + ref["pareto"]:
        sc = Scenario.from_dict(row["scenario"])
        assert planner.step_lower_bound_s(sc, layout(sc)) <= row["step_time_s"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs())
def test_the_screen_refuses_only_what_the_checks_refuse(spec):
    """The numpy screen's verdict on each candidate against the candidate's own checks
    (Scenario.from_dict, layout, the interleaving rule, the budget, the HBM bound): what
    the screen refuses is never feasible, a layout it calls indivisible is refused by the
    scenario's checks, and one it lets through passes the layout."""
    parsed = planner.parse_spec(spec)
    space = planner._Space(parsed, {})
    assert space.ok
    code, _floor = space.screen(0, parsed["num_candidates"])
    for i, c in enumerate(code):
        old = planner.evaluate_candidate(parsed, i, prune=False)["status"]
        if c:
            assert old != "feasible", (i, planner._SCREENED[c])
        if c == 1:
            assert old in ("indivisible", "invalid_combination"), (i, old)
        if c == 0:
            assert old != "indivisible", i


def test_search_skips_dominated_candidates(small_plan):
    """On the small space the step model runs on fewer candidates than fit: the others'
    step-time lower bounds are already worse than the k-th best and than a row of the
    front (the answer is still brute force's: the test above)."""
    part = planner.plan_chunk(SMALL)
    assert part["feasible"] == small_plan["feasible"]
    assert 0 < part["simulated"] < part["feasible"]
    assert planner.plan_chunk(SMALL, prune=False)["simulated"] == part["feasible"]


def test_step_lower_bound_by_hand():
    """Llama-2-7B on one DGX H100, PP 4 x DP 2, 8 micro-batches, interleaving 2: the bound
    is (8 + 3 / 2) x 32 / 4 layers x (fwd + bwd of one layer), plus the step's pipeline
    sends, the vocabulary all-reduces, 7 gradient accumulations, DDP's bucket copies and
    Megatron's optimizer passes (the step model's own terms; here the sends are > 0)."""
    from simulation.params import model_params
    from simulation.states import state_bytes
    from simulation.step import (compute_times, ddp_bucket_copy_s, embedding_tp_allreduce_s,
                                 grad_accumulation_s, links_for, optimizer_extra_s, pipeline_p2p_s)
    sc = Scenario.from_dict({"model": "llama2-7b", "cluster": {"node": "dgx-h100", "num_nodes": 1},
                             "training": {"pipeline_parallel": 4, "interleave_stages": 2, "micro_batch_size": 1,
                                          "global_batch_size": 16, "recompute": "full"},
                             "strategy": {"kind": "zero1"}})
    lay = layout(sc)
    assert lay.grad_accumulation_steps == 8
    ct = compute_times(sc, model_params(sc.model))
    lb = planner.step_lower_bound_s(sc, lay)
    sb, pc = state_bytes(sc.training.precision, sc.training.optimizer), model_params(sc.model)
    links = links_for(sc, lay)
    p2p = pipeline_p2p_s(sc, lay, links)
    assert p2p > 0
    rest = (embedding_tp_allreduce_s(sc, lay, links) + 7 * grad_accumulation_s(sc, pc, lay, sb)
            + ddp_bucket_copy_s(sc, pc, lay, sb) + optimizer_extra_s(sc, pc, lay, sb))
    assert lb == pytest.approx(9.5 * 8 * (ct["fwd_s"] + ct["bwd_s"]) + p2p + rest, rel=1e-12)
    step = evaluate(sc, detail=False).to_dict()["step"]["time_s"]
    assert lb < step


class _Boom(Exception):
    """Not an engine error: it must stop the chunk (as a cancel or a time limit does)."""


def test_one_engine_error_rejects_one_candidate(monkeypatch):
    """An exception of the engine on some candidates (here the memory model failing on TP
    2 with a ZeroDivisionError) rejects those with ``engine_error`` and its words; the
    chunk finishes and counts every candidate once. A foreign exception still stops it."""
    real = planner.memory_tiers

    def flaky(sc, lay):
        if lay.tensor_parallel == 2:
            raise ZeroDivisionError("float division by zero")
        return real(sc, lay)

    monkeypatch.setattr(planner, "memory_tiers", flaky)
    out = planner.plan(SMALL)
    assert out["rejected"]["engine_error"] > 0
    assert out["examples"]["engine_error"] == "engine error: ZeroDivisionError: float division by zero"
    assert out["feasible"] + sum(out["rejected"].values()) == out["candidates"]
    assert all(r["choices"]["tensor_parallel"] != 2 for r in out["top"])
    ref = planner.plan(SMALL, prune=True)     # noqa: F841 - the same patch, the same answer twice
    assert ref == out

    def boom(sc, lay):
        raise _Boom("cancelled")

    monkeypatch.setattr(planner, "memory_tiers", boom)
    with pytest.raises(_Boom):
        planner.plan(SMALL)


def test_engine_error_in_the_step_model(monkeypatch):
    """The same for the step model: the candidate is counted, the others go on."""
    real = planner._row
    calls = {"n": 0}

    def flaky(spec, out, sc):
        calls["n"] += 1
        if calls["n"] == 1:
            raise ValueError("bad graph")
        return real(spec, out, sc)

    monkeypatch.setattr(planner, "_row", flaky)
    out = planner.plan(SMALL)
    assert out["rejected"]["engine_error"] == 1
    assert out["examples"]["engine_error"] == "engine error: ValueError: bad graph"
    assert out["feasible"] + sum(out["rejected"].values()) == out["candidates"]
    assert out["top"]


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


# ------------------------------------------------------------------ equivalent candidates
# the planner page's default question (the form's spec): Llama-2-70B on 1 to 4 DGX H100
LLAMA70_ON_4 = {"model": "llama2-70b", "cluster": {"node": "dgx-h100", "num_nodes": {"min": 1, "max": 4}},
                "training": {"seq_len": 4096, "global_batch_size": 512, "flash_attention": True},
                "constraints": {"memory_margin": 0.05}, "objective": "step_time"}
# a slice of it small enough to simulate every candidate: 4 nodes, TP 4, PP 4 (DP 2) or 8 (DP 1)
DP1_SLICE = dict(LLAMA70_ON_4, cluster={"node": "dgx-h100", "num_nodes": 4},
                 space={"tensor_parallel": [4], "pipeline_parallel": [4, 8], "micro_batch_size": [1],
                        "recompute": ["none", "selective"],
                        "strategies": ["megatron_dist_opt", "zero1", "zero3"]}, top_k=10)


def _report(parsed, index):
    return evaluate(Scenario.from_dict(planner.candidate(parsed, index)[1]), detail=False).to_dict()


def test_strategies_that_coincide_at_dp_1_are_one_ranked_entry():
    """At data-parallel degree 1 (TP 4 x PP 8 on 32 GPUs) ZeRO-1 and Megatron's distributed
    optimizer shard nothing (ZeRO-3 takes no pipeline: DeepSpeed's pipeline engine runs
    stage 0 or 1): the engine's reports give them the same step (every
    term of the breakdown) and cost, and different HBM (each framework's own buffers). The
    planner ranks such a class once, named by its first candidate, listing the others with
    their HBM; the top 10 are 10 different (layout, step, cost). Before, ranks 3 to 5 were
    the same layout three times."""
    parsed = planner.parse_spec(LLAMA70_ON_4)
    top = planner.plan(LLAMA70_ON_4)["top"]
    assert len(top) == 10
    points = {(planner.layout_index(parsed, r["index"]), r["step_time_s"], r["usd_per_million_tokens"])
              for r in top}
    assert len(points) == 10
    dp1 = [r for r in top if r["data_parallel"] == 1]
    assert dp1 and all(r["alternatives"] for r in dp1)
    for r in dp1:
        assert sorted([r["choices"]["strategy"]] + [a["name"] for a in r["alternatives"]]) == \
            ["megatron_dist_opt", "zero1"]
        first = _report(parsed, r["index"])
        hbm = set()
        for a in r["alternatives"]:
            assert {k: v for k, v in a["choices"].items() if k != "strategy"} == \
                {k: v for k, v in r["choices"].items() if k != "strategy"}
            rep = _report(parsed, a["index"])
            assert rep["step"]["time_s"] == first["step"]["time_s"] == r["step_time_s"]
            assert rep["step"]["breakdown_s"] == first["step"]["breakdown_s"]
            assert rep["cost"]["usd_per_million_tokens"] == first["cost"]["usd_per_million_tokens"]
            assert a["hbm_total_bytes"] == rep["memory"]["per_gpu"]["hbm"]["total_bytes"]
            hbm.add(a["hbm_total_bytes"])
        assert len(hbm | {r["hbm_total_bytes"]}) == 2          # the memory is not the same
        assert r["alternatives_message"].startswith("also: zero1 (")
        assert "at the same step time and cost (megatron_dist_opt: " in r["alternatives_message"]
    # a layout at DP 2 keeps its strategies apart: their steps differ (gradient traffic)
    assert all(not r["alternatives"] for r in top if r["data_parallel"] > 1)


def test_collapsed_ranking_against_every_candidate_simulated():
    """On a slice small enough for every candidate to be simulated one by one: the best
    entry's objective is the minimum over every feasible candidate (the optimum unchanged),
    the entries are exactly the distinct (layout, step, cost) of the feasible candidates,
    each class's members all listed, and the search and every split into chunks (one
    candidate a chunk cuts each class apart) give brute force's answer."""
    parsed = planner.parse_spec(DP1_SLICE)
    rows = [planner.evaluate_candidate(parsed, i, prune=False) for i in range(parsed["num_candidates"])]
    ok = [r for r in rows if r["status"] == "feasible"]
    classes = {}
    for r in ok:
        classes.setdefault((r["layout_index"], r["step_time_s"], r["usd_per_million_tokens"]), []).append(r["index"])
    # TP 4 x PP 8: 2 strategies coincide (zero3 takes no pipeline)
    assert len(ok) == 8 and len(classes) < len(ok)
    got = planner.plan(DP1_SLICE)
    assert got["best"]["objective"] == min(r["objective"] for r in ok)
    assert len(got["top"]) == len(classes)
    for e in got["top"]:
        members = classes[(e["layout_index"], e["step_time_s"], e["usd_per_million_tokens"])]
        assert [e["index"]] + [a["index"] for a in e["alternatives"]] == sorted(members)
    assert _strip(got["top"]) == planner.brute_force(DP1_SLICE)["top"]
    n = parsed["num_candidates"]
    assert planner.merge(DP1_SLICE, [planner.plan_chunk(DP1_SLICE, k, n) for k in range(n)]) == got
    assert got["dominated"] == 0                            # every feasible candidate is listed


def test_layout_index_by_hand():
    """DP1_SLICE's space: TP [4] x PP [4, 8] x v [1] x mb [1] x recompute [none, selective]
    x strategies [3] x offloads [1] x [1] x prefetch [1] x checkpoint target [1] x interval
    [1]: candidate i = (pp x 2 + recompute) x 3 + strategy, so the layout index of i is
    i - i % 3 (i = 7: PP 8, none, zero1 -> 6)."""
    parsed = planner.parse_spec(DP1_SLICE)
    assert [planner.layout_index(parsed, i) for i in range(12)] == [0, 0, 0, 3, 3, 3, 6, 6, 6, 9, 9, 9]
    c, _ = planner.candidate(parsed, 7)
    assert (c["pipeline_parallel"], c["recompute"], c["strategy"]) == (8, "none", "zero1")
    two = dict(DP1_SLICE, space=dict(DP1_SLICE["space"], checkpoint_target=["parallel_fs", "local_nvme"]))
    parsed = planner.parse_spec(two)       # the target varies fastest: i = ... x 6 + strategy x 2 + target
    assert [planner.layout_index(parsed, i) for i in range(7)] == [0, 1, 0, 1, 0, 1, 6]


def test_checkpoint_interval_is_a_dimension_of_the_space():
    """space.checkpoint_interval_s (null: Daly's optimum) under time_to_train: the search
    equals brute force, each row's scenario carries its interval, its time to train is
    total tokens / tokens per s / the goodput the engine reports for that scenario, and on
    one layout Daly's interval trains sooner than one checkpoint a minute or one in ten
    hours (Daly 2006: the waste C / tau + tau / 2M is least near sqrt(2 C M))."""
    spec = {"model": "llama2-7b", "cluster": {"node": "dgx-h100", "num_nodes": 1},
            "training": {"seq_len": 4096, "global_batch_size": 64, "flash_attention": True, "total_tokens": 1e11},
            "space": {"tensor_parallel": [1, 2], "pipeline_parallel": [1], "micro_batch_size": [1],
                      "recompute": ["full"], "strategies": ["zero1"], "checkpoint_interval_s": [None, 60.0, 36000.0]},
            "objective": "time_to_train", "top_k": 6}
    got = planner.plan(spec)
    assert _strip(got["top"]) == planner.brute_force(spec)["top"] and len(got["top"]) == 6
    by_layout = {}
    for r in got["top"]:
        interval = r["choices"]["checkpoint_interval_s"]
        assert r["scenario"]["checkpoint"].get("interval_s") == interval
        rep = evaluate(Scenario.from_dict(r["scenario"]), detail=False).to_dict()
        assert r["goodput"] == rep["checkpoint"]["goodput"]
        assert r["time_to_train_s"] == pytest.approx(1e11 / r["tokens_per_s"] / r["goodput"], rel=1e-12)
        by_layout.setdefault(r["choices"]["tensor_parallel"], {})[interval] = r["time_to_train_s"]
    for times in by_layout.values():
        assert times[None] < times[60.0] and times[None] < times[36000.0]


def test_zero3_with_a_pipeline_is_an_invalid_combination_for_the_screen_and_one_by_one():
    """DeepSpeed's pipeline engine takes ZeRO stage 0 or 1 only (deepspeed/runtime/pipe/
    engine.py asserts it): the planner refuses ZeRO-3 with PP > 1 as an invalid combination,
    in its whole-array screen and candidate by candidate alike, and ranks none of them (an
    expert review found ZeRO-3 with PP 4 as a 70B plan's first pick)."""
    parsed = planner.parse_spec(DP1_SLICE)
    rows = [planner.evaluate_candidate(parsed, i, prune=False) for i in range(parsed["num_candidates"])]
    zero3 = [r for r in rows if r["choices"]["strategy"] == "zero3"]
    assert zero3 and all(r["status"] == "invalid_combination" for r in zero3)
    assert "incompatible with pipeline parallelism" in zero3[0]["message"]
    got = planner.plan(DP1_SLICE)
    assert got["rejected"]["invalid_combination"] == len(zero3)
    assert all(e["choices"]["strategy"] != "zero3" for e in got["top"])
    wide = planner.plan(LLAMA70_ON_4)
    assert all(e["choices"]["strategy"] != "zero3" or e["choices"]["pipeline_parallel"] == 1 for e in wide["top"])


def test_an_infeasible_plan_says_what_to_widen():
    """7B on one 24 GB card with the default space (no offload): nothing fits GPU memory
    (Adam's 16 B a parameter alone is 108 GB), and the plan says to allow offload, the way
    ZeRO-Offload trains such a model on one GPU (Ren et al. 2021); with offload allowed,
    ZeRO-Offload / ZeRO-Infinity candidates are feasible and no advice is given. The
    degrees that do not divide one GPU are not what it names."""
    card = {"name": "24 GB card", "hbm_capacity_bytes": 24 * 2**30, "hbm_bytes_per_s": 936e9,
            "peak_flops_bf16": 71e12, "peak_flops_fp32": 35.6e12, "host_link_bytes_per_s": 25e9,
            "scaleup_bytes_per_s": 25e9}
    spec = {"model": "llama2-7b", "cluster": {"node": "dgx-h100", "num_nodes": 1, "gpus_per_node": 1,
                                               "accelerator": card},
            "training": {"seq_len": 2048, "global_batch_size": 16, "flash_attention": True}}
    r = planner.plan(spec)
    assert r["feasible"] == 0 and r["rejected"]["indivisible"] > r["rejected"]["does_not_fit_hbm"] > 0
    assert "space.offload_optimizer" in r["advice"][0] and "GPU memory" in r["advice"][0]
    spec["space"] = {"offload_optimizer": ["none", "cpu"], "offload_params": ["none", "cpu"]}
    r = planner.plan(spec)
    assert r["feasible"] > 0 and r["advice"] == []
    assert r["best"]["choices"]["offload_optimizer"] == "cpu"
    over = dict(spec, constraints={"max_usd_per_hour": 0.01})
    over["cluster"] = dict(spec["cluster"], price_usd_per_node_hour=98.32)
    assert "max_usd_per_hour" in planner.plan(over)["advice"][0]


def test_a_deadline_refuses_what_trains_too_long_and_the_ranking_stays_exact():
    """constraints.max_time_to_train_s (expert review: cost_to_train picked a one-node run of
    about six years): a simulated candidate whose time to train (total tokens / tokens per s
    / checkpoint goodput) is over it is ``over_deadline``; the best then meets it, and the
    search's top k equal brute force's."""
    spec = dict(SMALL, objective="cost_to_train")
    free = planner.plan(spec)
    slowest = max(r["time_to_train_s"] for r in free["top"])
    fastest = min(r["time_to_train_s"] for r in free["top"])
    deadline = (slowest + fastest) / 2
    tight = dict(spec, constraints=dict(SMALL["constraints"], max_time_to_train_s=deadline))
    got = planner.plan(tight)
    assert got["rejected"]["over_deadline"] > 0
    assert got["top"] and all(r["time_to_train_s"] <= deadline for r in got["top"])
    assert _strip(got["top"]) == planner.brute_force(tight)["top"]
    rows = [planner.evaluate_candidate(planner.parse_spec(tight), i, prune=False)
            for i in range(planner.parse_spec(tight)["num_candidates"])]
    late = [r for r in rows if r["status"] == "over_deadline"]
    assert late and "days to train is over the deadline" in late[0]["message"]
    with pytest.raises(ScenarioError) as e:
        planner.parse_spec(dict(tight, training={"seq_len": 4096, "global_batch_size": 64}))
    assert e.value.field == "training.total_tokens"
    with pytest.raises(ScenarioError) as e:
        planner.parse_spec(dict(tight, constraints={"max_time_to_train_s": -1}))
    assert e.value.field == "constraints.max_time_to_train_s"
