"""Memos never change a result.

The engine remembers what it derives from frozen, shared scenario sections (parsed
sections, expanded presets, parameter counts, layouts, activations, the checkpoint-target
check, the scenario's JSON echo). A report computed with every memo warm must equal the
report computed cold, an error must be raised again each time, a different preset table
must be honoured, and a caller who changes a report must not change the next one.
"""

import copy
import itertools
import json

import pytest

from simulation import Scenario, ScenarioError, estimate_dict, evaluate_dict, presets
from simulation.memo import ByIdentity, forget

from tests.engine.test_fast_paths import CASES


def grid() -> list[dict]:
    """Scenarios that share sections in many combinations, valid and not."""
    out = []
    for case, mbs, kind, nodes in itertools.product(CASES[:3], [1, 2, 3], ["zero3", "zero2", "ddp"], [1, 2]):
        d = copy.deepcopy(case)
        d["training"]["micro_batch_size"] = mbs
        d["strategy"] = dict(d["strategy"], kind=kind)
        d["cluster"] = dict(d["cluster"], num_nodes=nodes)
        out.append(d)
    return out


def outcome(fn, d):
    try:
        return json.dumps(fn(d), sort_keys=True)
    except ScenarioError as e:
        return f"error {e}"


@pytest.mark.parametrize("fn", [estimate_dict, lambda d: evaluate_dict(d, detail=False)],
                         ids=["estimate", "evaluate"])
def test_warm_equals_cold(fn):
    cases = grid()
    cold = []
    for d in cases:
        forget()
        cold.append(outcome(fn, d))
    assert any(c.startswith("error") for c in cold) and any(not c.startswith("error") for c in cold)
    for _ in range(2):                     # warm, in order and in reverse
        assert [outcome(fn, d) for d in cases] == cold
        assert [outcome(fn, d) for d in reversed(cases)] == cold[::-1]


def test_errors_are_raised_every_time():
    bad = copy.deepcopy(CASES[0])
    bad["training"]["global_batch_size"] = 33       # not a multiple of 1 x 16
    for _ in range(3):
        with pytest.raises(ScenarioError, match="training.global_batch_size"):
            estimate_dict(bad)
    no_nvme = copy.deepcopy(CASES[0])
    no_nvme["cluster"]["tiers"] = {"nvme": None}
    no_nvme["checkpoint"] = {"target": "local_nvme"}
    for _ in range(3):
        with pytest.raises(ScenarioError, match="checkpoint.target_write_bytes_per_s"):
            estimate_dict(no_nvme)


def test_another_preset_table_is_honoured():
    d = CASES[0]
    before = estimate_dict(d)
    models = dict(presets.MODELS)
    models["llama2-70b"] = dict(models["llama2-70b"], num_layers=40)   # a catalog edit
    after = estimate_dict(d, models=models)
    assert after["model"]["num_layers"] == 40 and before["model"]["num_layers"] == 80
    assert after["model"]["num_params"] < before["model"]["num_params"]
    assert estimate_dict(d)["model"]["num_layers"] == 80


def test_a_changed_report_does_not_change_the_next():
    d = CASES[2]
    first = estimate_dict(d)
    first["scenario"]["cluster"]["tiers"]["ddr"]["capacity_bytes"] = -1
    first["scenario"]["training"]["seq_len"] = -1
    first["memory"]["per_gpu"]["hbm"]["parts"].clear()
    second = estimate_dict(d)
    assert second["scenario"]["cluster"]["tiers"]["ddr"]["capacity_bytes"] > 0
    assert second["scenario"]["training"]["seq_len"] == 4096
    assert second["memory"]["per_gpu"]["hbm"]["parts"]
    sc = Scenario.from_dict(d)
    echo = sc.to_dict()
    echo["cluster"]["accelerator"]["hbm_capacity_bytes"] = 0
    assert sc.to_dict()["cluster"]["accelerator"]["hbm_capacity_bytes"] > 0


def test_by_identity_keeps_its_arguments_apart():
    calls = []
    square = ByIdentity(lambda x: calls.append(x) or [x[0] * x[0]])
    a, b = [3], [3]                       # equal, not identical: two entries
    assert square(a) is square(a) == [9]
    assert square(b) is not square(a) and len(calls) == 2
    square.clear()
    square(a)
    assert len(calls) == 3
