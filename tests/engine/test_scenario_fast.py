"""The cold quick estimate's fast paths give what the plain code gives, byte for byte.

Issue #17 asks for a quick estimate several times llm-analysis's rate on inputs never seen
before. Parsing a scenario was about half of such an estimate, so the section parsers now
check a field's common case first (an exact int or float inside its bounds), build the
frozen specs without their ``__init__`` (:func:`simulation.fields.frozen_new`), hand out
constants for empty sections, and the scenario's JSON echo is kept only from its second
call on (:class:`simulation.memo.KeptOnSecondCall`). Each test below holds one of them to
the plain code it replaces: the field checks to the checks as they were (written out here
as the specification), the specs to their dataclass ``__init__``, the reports of a sample
of scenarios (distinct models, every strategy, offload, pipelines, both conventions) to
the same reports computed again with every memo cleared and with every memo warm.
"""

import copy
import dataclasses
import itertools
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulation import ScenarioError, estimate_dict, evaluate_dict
from simulation import fields
from simulation.checkpoint import CheckpointSpec, Target, resolve_target
from simulation.memo import KeptOnSecondCall, forget
from simulation.scenario import (AcceleratorSpec, ClusterSpec, ModelSpec, RuntimeSpec, Scenario,
                                 StrategySpec, TierSpec, TrainingSpec, resolve)


# ------------------------------------------------------------------ the checks as they were
def int_spec(d, key, path, default=None, minimum=1, required=False, maximum=None):
    v = d.get(key)
    v = default if v is None else v          # absent or null: the default
    if v is None:
        if required:
            raise ScenarioError(f"{path}.{key}", "is required")
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or isinstance(v, float) and (
            not math.isfinite(v) or v != int(v)):
        raise ScenarioError(f"{path}.{key}", "must be a whole number")
    v = int(v)
    # without a bound of its own a whole number stops at fields.INT_CEILING (10**15)
    if v < minimum or v > (fields.INT_CEILING if maximum is None else maximum):
        raise ScenarioError(f"{path}.{key}", "out of range")
    return v


def num_spec(d, key, path, default=None, minimum=0.0, strict=False, maximum=None):
    v = d.get(key)
    v = default if v is None else v          # absent or null: the default
    if v is None:
        return None
    # an integer past float's range is not finite (fields.finite), not an OverflowError
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not fields.finite(v):
        raise ScenarioError(f"{path}.{key}", "must be a finite number")
    if v < minimum or (strict and v == minimum) or (maximum is not None and v > maximum):
        raise ScenarioError(f"{path}.{key}", "out of range")
    if minimum == 0 and 0 < v < fields.TINY:  # a size, rate, time or share: 0 or >= 1e-12
        raise ScenarioError(f"{path}.{key}", "out of range")
    return float(v)


def outcome(fn, *args, **kw):
    """``(type, repr)`` of the value, or the error's field: 1, 1.0 and True kept apart."""
    try:
        v = fn(*args, **kw)
        return type(v).__name__, repr(v)
    except ScenarioError as e:
        return "error", e.field


VALUES = st.one_of(st.integers(-3, 12), st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0.0, 1.0, 2.5, 4.0, 8.0, 1e15, True, False, None, "2", [1], 1e-12,
                                    1e-13, 5e-324,
                                    10 ** 15 + 1, 10 ** 309, -10 ** 309]))


@settings(max_examples=400, deadline=None)
@given(VALUES, st.integers(-1, 2), st.one_of(st.none(), st.integers(0, 9)), st.booleans())
def test_int_field_common_case_first_gives_what_the_full_check_gives(v, minimum, maximum, absent):
    d = {} if absent else {"k": v}
    for default in (None, 1, 3):
        assert outcome(fields.int_field, d, "k", "p", default, minimum, False, maximum) == \
            outcome(int_spec, d, "k", "p", default, minimum, False, maximum)


@settings(max_examples=400, deadline=None)
@given(VALUES, st.sampled_from([0.0, 1.0, -2.0]), st.booleans(),
       st.one_of(st.none(), st.sampled_from([1.0, 8.0, 1e15])), st.booleans())
def test_num_field_common_case_first_gives_what_the_full_check_gives(v, minimum, strict, maximum, absent):
    d = {} if absent else {"k": v}
    for default in (None, 0.8, 2592000):          # an int default comes back as a float
        assert outcome(fields.num_field, d, "k", "p", default, minimum, strict, maximum) == \
            outcome(num_spec, d, "k", "p", default, minimum, strict, maximum)


def test_bool_and_choice_fields_reject_what_they_rejected():
    for v in (True, False):
        assert fields.bool_field({"k": v}, "k", "p", False) is v
    for v in (1, 0, "true", None):
        with pytest.raises(ScenarioError):
            fields.bool_field({"k": v}, "k", "p", False)
    # True == 1 and False == 0: a bool is not the choice 1 or 0
    for v in (True, False):
        with pytest.raises(ScenarioError):
            fields.choice_field({"k": v}, "k", "p", (0, 1, 2), 1)
    assert fields.choice_field({"k": 2}, "k", "p", (0, 1, 2), 1) == 2


# ------------------------------------------------------------------ specs without __init__
SECTIONS = [
    (ModelSpec, {"num_layers": 40, "hidden_size": 5120, "num_attention_heads": 40,
                 "ffn_hidden_size": 13824, "vocab_size": 32000}),
    (ModelSpec, {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_kv_heads": 2,
                 "ffn_hidden_size": 128, "vocab_size": 100, "dropout": False, "hidden_dropout": True}),
    (TrainingSpec, {"micro_batch_size": 2, "tensor_parallel": 2, "sequence_parallel": True,
                    "dtypes": {"master_weights": "none", "optimizer_states": "bf16"}}),
    (TrainingSpec, {"compute_model": "constant"}),
    (StrategySpec, {"kind": "zero_infinity", "prefetch_depth": 2}),
    (RuntimeSpec, {"fragmentation_fraction": 0.15}),
    (CheckpointSpec, {"method": "in_memory_then_flush", "target": "local_nvme"}),
    (TierSpec, {"capacity_bytes": 2e12, "read_bytes_per_s": 1e11, "write_bytes_per_s": 5e10}),
]


@pytest.mark.parametrize("cls,section", SECTIONS + [(c, {}) for c in (TrainingSpec, StrategySpec,
                                                                       RuntimeSpec, CheckpointSpec)])
def test_a_parsed_spec_equals_the_one_its_init_makes(cls, section):
    path = "cluster.tiers.ddr" if cls is TierSpec else None
    spec = cls.from_dict(section, path) if path else cls.from_dict(section)
    via_init = cls(**{f.name: getattr(spec, f.name) for f in dataclasses.fields(cls)})
    assert spec == via_init and hash(spec) == hash(via_init) and repr(spec) == repr(via_init)
    assert list(vars(spec)) == [f.name for f in dataclasses.fields(cls)]   # plain() reads it
    assert fields.plain(spec) == {f.name: getattr(spec, f.name) for f in dataclasses.fields(cls)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(spec, dataclasses.fields(cls)[0].name, None)


def test_a_resolved_cluster_target_and_scenario_equal_their_init_made_twins():
    d = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100", "num_nodes": 2}}
    forget()
    sc = Scenario.from_dict(d)
    assert sc == Scenario(**fields.plain(sc))
    assert list(vars(sc)) == [f.name for f in dataclasses.fields(Scenario)]
    r = resolve(d)
    c = ClusterSpec.from_dict(r["cluster"])
    assert c.accelerator == AcceleratorSpec(**fields.plain(c.accelerator))
    assert c == ClusterSpec(**fields.plain(c))
    spec = CheckpointSpec()
    for target in ("parallel_fs", "local_nvme", "gds_nvme"):
        t = resolve_target(dataclasses.replace(spec, target=target), gpus_per_node=8,
                           host_link_bytes_per_s=55e9, nic_bytes_per_s=50e9,
                           nvme_write_bytes_per_s=2e10, nvme_read_bytes_per_s=4e10,
                           nvme_capacity_bytes=3e13)
        assert t == Target(**fields.plain(t))


def test_an_absent_or_empty_section_is_what_parsing_it_gives():
    for given_as in ({}, None):
        d = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100"}}
        if given_as is not None:
            d.update(training={}, strategy={}, runtime={}, checkpoint={})
        forget()
        sc = Scenario.from_dict(d)
        for name, cls in (("training", TrainingSpec), ("strategy", StrategySpec),
                          ("runtime", RuntimeSpec), ("checkpoint", CheckpointSpec)):
            fresh = cls.from_dict({})
            assert getattr(sc, name) == fresh and repr(getattr(sc, name)) == repr(fresh)


# ------------------------------------------------------------------ whole reports
def llama_style(i: int) -> dict:
    """A Llama-style model no other ``i`` has (width and depth both vary)."""
    h = 1024 + 256 * (i % 9)
    return {"name": f"m{i}", "num_layers": 4 + 2 * i, "hidden_size": h,
            "num_attention_heads": h // 128, "num_kv_heads": math.gcd(h // 128, 4),
            "ffn_hidden_size": -(-8 * h // 3 // 256) * 256, "vocab_size": 32000 + 64 * i,
            "tied_embeddings": i % 2 == 0}


def sample() -> list[dict]:
    """Valid scenarios over distinct models: every strategy, offload, TP, pipelines,
    recompute, both conventions, a checkpoint policy and a custom tier."""
    kinds = [({"kind": "zero3"}, 1, 1), ({"kind": "zero2"}, 2, 1), ({"kind": "zero1"}, 1, 2),
             ({"kind": "ddp"}, 1, 1), ({"kind": "fsdp_full_shard"}, 1, 1),
             ({"kind": "fsdp_hybrid_shard", "shard_group_size": 8}, 1, 1),
             ({"kind": "zero_offload"}, 1, 1), ({"kind": "zero_infinity", "prefetch_depth": 2}, 1, 1),
             ({"kind": "megatron_dist_opt"}, 2, 2)]
    out = []
    for i, ((strategy, tp, pp), rec, conv) in enumerate(itertools.product(
            kinds, ["none", "selective", "full"], ["realistic", "zero_paper"])):
        d = {"model": llama_style(i), "cluster": {"node": "dgx-h100", "num_nodes": 2},
             "training": {"micro_batch_size": 1 + i % 2, "global_batch_size": 64, "seq_len": 2048,
                          "recompute": rec, "tensor_parallel": tp, "pipeline_parallel": pp,
                          "flash_attention": i % 3 == 0},
             "strategy": strategy, "convention": conv}
        if i % 5 == 0:
            d["checkpoint"] = {"target": "local_nvme", "method": "in_memory_then_flush"}
        if i % 7 == 0:
            d["cluster"]["tiers"] = {"ddr": {"capacity_bytes": 4e12}}
        out.append(d)
    return out


def report_bytes(fn, d) -> str:
    try:
        return json.dumps(fn(d))          # key order kept: the bytes a client receives
    except ScenarioError as e:
        return f"error {e}"


@pytest.mark.parametrize("fn", [estimate_dict, lambda d: evaluate_dict(d, detail=False)],
                         ids=["quick", "full"])
def test_cold_first_second_and_third_calls_give_the_same_bytes(fn):
    scenarios = sample()
    valid = 0
    for d in scenarios:
        forget()
        cold = report_bytes(fn, copy.deepcopy(d))       # nothing remembered
        second = report_bytes(fn, copy.deepcopy(d))     # the JSON echo kept from here on
        third = report_bytes(fn, d)                     # handed out as a copy
        assert cold == second == third
        valid += not cold.startswith("error")
    assert valid >= 0.8 * len(scenarios)


def test_a_changed_echo_changes_neither_the_next_report_nor_the_kept_one():
    d = sample()[0]
    forget()
    first = estimate_dict(d)
    want = json.dumps(first)
    for _ in range(3):
        r = estimate_dict(d)
        assert json.dumps(r) == want
        r["scenario"]["cluster"]["accelerator"]["name"] = "changed"
        r["scenario"]["training"]["seq_len"] = -1
    first["scenario"]["model"]["name"] = "changed"
    assert json.dumps(estimate_dict(d)) == want


def test_kept_on_second_call_makes_hands_out_and_copies():
    made = []

    def make(x):
        made.append(x)
        return {"x": [x]}

    m = KeptOnSecondCall(make, keep=lambda d: d, copy=lambda d: {"x": list(d["x"])})
    key = object()
    a, b, c = m(key), m(key), m(key)
    assert a == b == c == {"x": [key]} and len(made) == 2      # made twice, then copied
    assert a is not b and b is not c and b["x"] is not c["x"]
    b["x"].append(1)
    assert m(key) == {"x": [key]}
    m.clear()
    m(key)
    assert len(made) == 3


# ------------------------------------------------------------------ specs made at import
def test_a_built_in_node_with_at_most_num_nodes_takes_the_spec_made_at_import():
    from simulation import presets
    from simulation.scenario import _template_cluster, resolve_cluster
    nodes, accs = presets.NODES, presets.ACCELERATORS
    taken = 0
    for node in nodes:
        for extra in ({}, {"num_nodes": 1}, {"num_nodes": 3}, {"num_nodes": 1_000_000}):
            c = {"node": node, **extra}
            try:
                want = ClusterSpec.from_dict(resolve_cluster(c))
            except ScenarioError:
                assert _template_cluster(c, nodes, accs) is None
                continue
            got = _template_cluster(c, nodes, accs)
            assert got is not None, c
            taken += 1
            assert got == want and repr(got) == repr(want)
            assert [k for k in vars(got) if k != "_json"] == list(vars(want))
            j = got.to_dict()
            assert json.dumps(j) == json.dumps(want.to_dict())
            j["accelerator"]["name"] = "changed"          # the caller's own copy
            for t in j.get("tiers", {}).values():
                t["capacity_bytes"] = -1
            assert json.dumps(got.to_dict()) == json.dumps(want.to_dict())
    assert taken >= 4 * (len(nodes) - 2)
    # anything else takes the long way (and its checks)
    for c in ({"node": "dgx-h100", "num_nodes": 0}, {"node": "dgx-h100", "num_nodes": True},
              {"node": "dgx-h100", "num_nodes": 2.0}, {"node": "dgx-h100", "num_nodes": 1_000_001},
              {"node": "dgx-h100", "gpus_per_node": 4}, {"node": "dgx-h100", "tiers": {}},
              {"node": "no-such-node"}, {"node": "dgx-h100", "num_nodes": None}):
        assert _template_cluster(c, nodes, accs) is None, c
    assert _template_cluster({"node": "dgx-h100"}, dict(nodes), accs) is None
    assert _template_cluster({"node": "dgx-h100"}, nodes, dict(accs)) is None


def test_a_strategy_naming_its_kind_alone_takes_the_spec_made_at_import():
    from simulation.scenario import STRATEGY_KINDS, _parsed, _section_json
    made = 0
    for kind in STRATEGY_KINDS:
        try:
            want = StrategySpec.from_dict({"kind": kind})
        except ScenarioError:
            continue
        got = _parsed(StrategySpec, {"kind": kind})
        assert got == want and repr(got) == repr(want)
        j = _section_json(got)
        assert json.dumps(j) == json.dumps(want.to_dict())
        j["kind"] = "changed"
        assert _section_json(got) == want.to_dict()
        made += 1
    assert made == len(STRATEGY_KINDS) - 1        # fsdp_hybrid_shard needs its group size
    for cls in (RuntimeSpec, CheckpointSpec, TrainingSpec):      # the empty sections' constants
        assert json.dumps(_section_json(_parsed(cls, {}))) == json.dumps(cls.from_dict({}).to_dict())


@pytest.mark.parametrize("fn", [estimate_dict, lambda d, **kw: evaluate_dict(d, detail=False, **kw)],
                         ids=["quick", "full"])
def test_reports_through_the_specs_made_at_import_equal_the_long_way(fn):
    """The same scenarios with copies of the preset tables (not the built-in ones: every
    section expanded and parsed) give the same bytes."""
    from simulation import presets
    from simulation.scenario import _template_cluster
    long_way = dict(nodes=dict(presets.NODES), accelerators=dict(presets.ACCELERATORS))
    compared = 0
    for i, node in enumerate(presets.NODES):
        for kind in ("ddp", "zero2", "zero3", "zero_offload", "zero_infinity"):
            d = {"model": llama_style(i), "cluster": {"node": node, "num_nodes": 1 + i % 3},
                 "training": {"micro_batch_size": 1, "global_batch_size": 64, "seq_len": 2048},
                 "strategy": {"kind": kind}}
            taken = _template_cluster(d["cluster"], presets.NODES, presets.ACCELERATORS) is not None
            forget()
            fast = report_bytes(fn, copy.deepcopy(d))
            forget()
            assert fast == report_bytes(lambda x: fn(x, **long_way), copy.deepcopy(d)), (node, kind)
            compared += taken and not fast.startswith("error")
    assert compared >= 3 * len(presets.NODES)
