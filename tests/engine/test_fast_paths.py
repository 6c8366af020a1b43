"""The fast paths give the numbers the detailed path gives.

Sweeps and the API evaluate with ``detail=False`` (graphs built and attributed in C, no
timeline, no checkpoint Monte-Carlo) and scenario sections are parsed once and
remembered; a run's report uses the full path. Both must agree on every number.
"""

import copy

import pytest

from simulation import Scenario, ScenarioError, evaluate, evaluate_dict

CASES = [
    {"model": {"preset": "llama2-70b"}, "cluster": {"node": "dgx-h100", "num_nodes": 2},
     "training": {"micro_batch_size": 1, "global_batch_size": 32, "seq_len": 4096, "recompute": "full"},
     "strategy": {"kind": "zero3"}},
    {"model": {"preset": "llama2-13b"}, "cluster": {"node": "dgx-h100", "num_nodes": 1},
     "training": {"micro_batch_size": 2, "global_batch_size": 16, "seq_len": 2048, "tensor_parallel": 2},
     "strategy": {"kind": "zero1"}},
    {"model": {"preset": "llama2-70b"}, "cluster": {"node": "dgx-h100-cxl", "num_nodes": 1},
     "training": {"micro_batch_size": 1, "global_batch_size": 8, "seq_len": 4096, "recompute": "full"},
     "strategy": {"kind": "zero_infinity", "offload_optimizer": "cxl", "offload_params": "cxl",
                  "offload_activations": "cpu", "prefetch_miss_rate": 0.25},
     "checkpoint": {"method": "async", "target": "local_nvme"}},
    {"model": {"preset": "gpt3-175b"}, "cluster": {"node": "dgx-a100-80gb", "num_nodes": 16},
     "training": {"micro_batch_size": 1, "global_batch_size": 256, "seq_len": 2048,
                  "tensor_parallel": 8, "pipeline_parallel": 4, "recompute": "selective"},
     "strategy": {"kind": "zero1"}},
    {"model": {"preset": "mixtral-8x7b"}, "cluster": {"node": "dgx-h100", "num_nodes": 4},
     "training": {"micro_batch_size": 1, "global_batch_size": 64, "seq_len": 4096},
     "strategy": {"kind": "fsdp_hybrid_shard", "shard_group_size": 8}},
]


def strip(r: dict) -> dict:
    r = copy.deepcopy(r)
    r.pop("timeline", None)
    r["checkpoint"].pop("monte_carlo", None)
    r["checkpoint"]["spec"].pop("monte_carlo_runs", None)     # 0 on the fast path: none ran
    r["scenario"]["checkpoint"].pop("monte_carlo_runs", None)
    return r


@pytest.mark.parametrize("case", CASES, ids=["zero3-2nodes", "zero1-tp2", "infinity-cxl", "gpt3-pp4", "mixtral-hsdp"])
def test_summary_path_equals_detailed_path(case):
    full = evaluate_dict(case, detail=True)
    fast = evaluate_dict(case, detail=False)
    assert full["step"]["available"], full["notes"]
    assert "tasks" in full["timeline"] and fast["timeline"] == {}
    assert fast["checkpoint"]["monte_carlo"] is None
    assert full["checkpoint"]["monte_carlo"] is not None
    assert strip(fast) == strip(full)                      # every other number, exactly
    # and the pure-Python engine (Python graph, reference simulator and attribution) agrees
    sc = Scenario.from_dict(case)
    from simulation.params import count_params
    from simulation.parallel import layout
    from simulation.states import state_bytes
    from simulation.step import step_report
    pc, lay = count_params(sc.model), layout(sc)
    sb = state_bytes(sc.training.precision, sc.training.optimizer)
    ref = step_report(sc, pc, lay, sb, engine="python", detail=False)
    assert ref["step"]["time_s"] == pytest.approx(full["step"]["time_s"], rel=1e-9)
    for k, v in ref["step"]["breakdown_s"].items():
        assert v == pytest.approx(full["step"]["breakdown_s"][k], rel=1e-9, abs=1e-12), k


def test_remembered_sections_keep_json_types_apart():
    base = copy.deepcopy(CASES[0])
    ok = Scenario.from_dict(base)
    assert ok.training.flash_attention in (True, False)
    bad = copy.deepcopy(base)
    bad["training"]["micro_batch_size"] = True          # a bool is not a whole number
    with pytest.raises(ScenarioError, match="training.micro_batch_size"):
        Scenario.from_dict(bad)
    one_float = copy.deepcopy(base)
    one_float["training"]["micro_batch_size"] = 1.0     # 1.0 is accepted as 1
    assert Scenario.from_dict(one_float).training.micro_batch_size == 1
    # an error is raised every time, not remembered as a success
    for _ in range(2):
        with pytest.raises(ScenarioError, match="training.micro_batch_size"):
            Scenario.from_dict(bad)


def test_remembered_sections_follow_changed_values():
    d = copy.deepcopy(CASES[0])
    a = evaluate(Scenario.from_dict(d), include_step=False)
    d["training"]["micro_batch_size"] = 2
    b = evaluate(Scenario.from_dict(d), include_step=False)
    assert b.scenario["training"]["micro_batch_size"] == 2
    assert b.memory["per_gpu"]["hbm"]["activations_bytes"] > a.memory["per_gpu"]["hbm"]["activations_bytes"]


def test_a_changed_scenario_dict_does_not_change_the_next_one():
    a = Scenario.from_dict(CASES[2]).to_dict()
    a["cluster"]["tiers"]["ddr"]["capacity_bytes"] = -1       # a caller edits what it got
    a["training"]["micro_batch_size"] = 99
    a["cluster"]["accelerator"]["name"] = "edited"
    b = Scenario.from_dict(CASES[2]).to_dict()                  # the same (remembered) sections
    assert b["cluster"]["tiers"]["ddr"]["capacity_bytes"] > 0
    assert b["training"]["micro_batch_size"] == 1
    assert b["cluster"]["accelerator"]["name"] != "edited"
