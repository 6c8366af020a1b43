"""Every leaf of a rich scenario replaced by a value of the wrong JSON type (an object, a
list, a string, a boolean) is a ScenarioError, never another exception (a 500 through the
API: ``strategy.kind`` as an object raised TypeError from a dict lookup); and every number
replaced by 1e-300 (a bandwidth, a rate, a size that small) gives a report without an
infinite or NaN number, or a ScenarioError (a NIC of 1e-300 B/s made the step infinite, a
report JSON cannot hold: the run was never stored and stayed "running")."""

import json

import pytest

from simulation import ScenarioError, checked_scenario, evaluate_dict
from tests.engine.test_huge_numbers import SCENARIOS, dotted, numeric_leaves, replaced


def leaves(d, path=()):
    if isinstance(d, dict):
        for k, v in d.items():
            yield from leaves(v, path + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            yield from leaves(v, path + (i,))
    else:
        yield path


WRONG = [{"a": 1}, [1], "x", True]
# plus a section's own kind: {"strategy": {"kind": {...}}} alone takes a fast path
ALONE = [{"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100"}, "strategy": {"kind": w}}
         for w in WRONG[:2]]


@pytest.mark.parametrize("sc", SCENARIOS, ids=["custom-offload", "fp8-pipeline", "lora"])
def test_every_leaf_of_the_wrong_type(sc):
    paths = list(leaves(sc))
    assert len(paths) > 20
    for path in paths:
        for w in WRONG:
            try:
                checked_scenario(replaced(sc, path, w))
            except ScenarioError:
                pass                      # named or not, a clear 400


@pytest.mark.parametrize("sc", ALONE, ids=["kind-object", "kind-list"])
def test_a_section_whose_only_key_is_of_the_wrong_type(sc):
    with pytest.raises(ScenarioError) as e:
        checked_scenario(sc)
    assert "strategy.kind" in str(e.value)


@pytest.mark.parametrize("sc", SCENARIOS, ids=["custom-offload", "fp8-pipeline", "lora"])
def test_every_number_near_zero_gives_a_finite_report_or_an_error(sc):
    for path in numeric_leaves(sc):
        try:
            r = evaluate_dict(replaced(sc, path, 1e-300))
        except ScenarioError:
            continue
        json.dumps(r, allow_nan=False)    # ValueError: an inf or NaN in the report
