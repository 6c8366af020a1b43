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


def test_a_long_unknown_name_is_not_echoed_whole():
    # a 100 kB preset name came back whole in the 400 (newcomer check)
    for sc in ({"model": {"preset": "x" * 100_000}, "cluster": {"node": "dgx-h100"}},
               {"model": {"preset": "llama2-7b"}, "cluster": {"node": "y" * 100_000}}):
        with pytest.raises(ScenarioError) as e:
            checked_scenario(sc)
        assert len(str(e.value)) < 2_000 and "…" in str(e.value)


def test_a_plan_s_base_strategy_does_not_take_what_each_candidate_sets():
    # {"strategy": {"kind": {"a": 1}}} was accepted (202) and silently overwritten by each
    # candidate's kind (newcomer check); the four the space sets are refused, naming space.*
    from simulation import planner
    base = {"model": "llama2-13b", "cluster": {"node": "dgx-h100", "num_nodes": [1]},
            "training": {"seq_len": 4096, "global_batch_size": 64}}
    for k, v, dim in (("kind", {"a": 1}, "strategies"), ("kind", "zero3", "strategies"),
                      ("offload_optimizer", "cpu", "offload_optimizer"), ("prefetch_depth", 2, "prefetch_depth")):
        with pytest.raises(ScenarioError) as e:
            planner.parse_spec(dict(base, strategy={k: v}))
        assert e.value.field == f"strategy.{k}" and f"space.{dim}" in str(e.value)
    planner.parse_spec(dict(base, strategy={"shard_group_size": 8}))      # other keys stay the base's


def test_a_message_shows_letters_and_emoji_and_escapes_control_characters():
    from simulation.fields import show
    assert show("ллама-🦙") == '"ллама-🦙"' and show({"k": "é"}) == '{"k": "é"}'
    # control, bidi/format and separator characters and lone surrogates stay JSON escapes
    assert show("a\u202eb\x00\x7f\u200b\u2028\ud800") == '"a\\u202eb\\u0000\\u007f\\u200b\\u2028\\ud800"'
    assert show("\U000f0000") == '"\\udb80\\udc00"'        # private use, past U+FFFF
    assert show("я" * 100) == '"' + "я" * 78 + "…"
