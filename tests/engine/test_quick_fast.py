"""Issue #17's cold quick estimate: each shortcut gives what the code it stands for gives.

* The cluster, tier and accelerator sections are parsed by direct checks first
  (``_direct``: no :class:`simulation.errors.Collect` wrapper per field); a section they
  reject is parsed again by the collecting parse (``_collecting``), the specification,
  which names every bad field. Held equal here on every node template (with fewer GPUs,
  a tier removed, a tier overridden) and on bad sections.
* A tier's summary (:func:`simulation.memory._summary`) sums its live parts in one pass
  over a frozen set of phases and builds an empty tier from a template: held here to the
  two-pass summary as it was (written out below as the specification) on the parts of a
  sample of scenarios (every strategy, both conventions, offload, MoE, pipelines, fp32).
"""

import copy
import random
import itertools

import pytest

from simulation import ScenarioError, presets
from simulation.errors import ScenarioErrors
from simulation.evaluate import _stage_parts
from simulation.memory import (_CATEGORY_KEYS, _NOT_ALLOCATED, _TRAINING_MOMENTS, MOMENTS,
                               NODE_TIERS, _moments_of, build_parts, tier_summaries)
from simulation.params import model_params
from simulation.parallel import layout
from simulation.scenario import AcceleratorSpec, ClusterSpec, Scenario, TierSpec, resolve_cluster
from simulation.states import state_bytes


# ------------------------------------------------------------------ direct vs collecting parse
def _clusters():
    for node in presets.NODES:
        for extra in ({}, {"gpus_per_node": 4}, {"gpus_per_node": 2, "host_share": "whole"},
                      {"tiers": {"nvme": None}},
                      {"tiers": {"cxl": {"capacity_bytes": 5e11, "read_bytes_per_s": 6e10,
                                         "write_bytes_per_s": 6e10, "devices": 2}}},
                      {"nic_bytes_per_s": 1e11, "leaf_switch_ports": 32,
                       "spine_oversubscription": 2.0, "rail_optimized": False}):
            try:
                yield resolve_cluster({"node": node, **copy.deepcopy(extra)})
            except ScenarioError:
                continue


CLUSTERS = list(_clusters())


def test_the_sample_holds_every_node_template():
    assert {c.get("node") for c in CLUSTERS} == set(presets.NODES)
    assert len(CLUSTERS) >= 4 * len(presets.NODES)


@pytest.mark.parametrize("i", range(len(CLUSTERS)))
def test_a_valid_cluster_parses_directly_to_the_collecting_parse_spec(i):
    r = CLUSTERS[i]
    direct = ClusterSpec._direct(copy.deepcopy(r), "cluster")
    spec = ClusterSpec._collecting(copy.deepcopy(r), "cluster")
    assert direct == spec and repr(direct) == repr(spec)
    assert list(vars(direct)) == list(vars(spec))            # the same field order (plain())
    assert direct.accelerator == spec.accelerator and direct.tiers == spec.tiers
    for name, t in direct.tiers.items():
        assert list(vars(t)) == list(vars(spec.tiers[name]))
    assert ClusterSpec.from_dict(copy.deepcopy(r)) == spec


BAD = [
    ("gpus_per_node", 0), ("gpus_per_node", True), ("num_nodes", 1.5), ("nic_bytes_per_s", -1),
    ("nic_bytes_per_s", 1e300), ("host_share", "half"), ("cpu_isa", "sse"), ("nvls", 1),
    ("spine_oversubscription", 0.5), ("leaf_switch_ports", 0), ("price_source", 3),
    ("tiers", {"hbm": {}}), ("tiers", {"ddr": 5}),
    ("tiers", {"ddr": {"capacity_bytes": 1e12}}),                        # rates missing
    ("tiers", {"ddr": {"capacity_bytes": 1e12, "read_bytes_per_s": 0, "write_bytes_per_s": 1e9}}),
    ("accelerator", {"name": "x"}),                                       # every spec missing
    ("accelerator", {"hbm_capacity_bytes": 8e10, "hbm_bytes_per_s": 3e12, "peak_flops_bf16": 1e15,
                     "peak_flops_fp32": 6e13, "host_link_bytes_per_s": 5e10,
                     "scaleup_bytes_per_s": 4.5e11, "gemm_flops": 2e15, "sm_count": 132}),
    ("accelerator", {"hbm_capacity_bytes": 8e10, "hbm_bytes_per_s": 3e12, "peak_flops_bf16": 1e15,
                     "peak_flops_fp32": 6e13, "host_link_bytes_per_s": 5e10,
                     "scaleup_bytes_per_s": 4.5e11, "gemm_flops": 7e14}),   # sm_count missing
    ("accelerator", "h100"), ("unknown_field", 1), ("profile", {"nonsense": 1}),
]


def _error(parse, d):
    with pytest.raises(ScenarioError) as exc:
        parse(d, "cluster")
    e = exc.value
    return type(e), str(e), [(x.field, x.message) for x in getattr(e, "errors", [e])]


@pytest.mark.parametrize("key,value", BAD, ids=[f"{k}-{i}" for i, (k, _v) in enumerate(BAD)])
def test_a_bad_cluster_raises_what_the_collecting_parse_raises(key, value):
    d = copy.deepcopy(CLUSTERS[0])
    d[key] = value
    d_many = dict(d, num_nodes=0, cpu_isa="none")                   # and several at once
    for case in (d, d_many):
        want = _error(ClusterSpec._collecting, copy.deepcopy(case))
        assert _error(ClusterSpec.from_dict, copy.deepcopy(case)) == want
    assert _error(ClusterSpec.from_dict, copy.deepcopy(d_many))[0] is ScenarioErrors


def test_tier_and_accelerator_sections_alone():
    acc = copy.deepcopy(CLUSTERS[0]["accelerator"])
    assert AcceleratorSpec.from_dict(acc, "a") == AcceleratorSpec._collecting(acc, "a")
    for t in ({"capacity_bytes": 1e12, "read_bytes_per_s": 1e10, "write_bytes_per_s": 1e10},
              {"capacity_bytes": 0, "read_bytes_per_s": 1, "write_bytes_per_s": 2,
               "latency_s": 1e-6, "device": "d", "devices": 0}):
        assert TierSpec.from_dict(t, "t") == TierSpec._collecting(t, "t")
        assert list(vars(TierSpec.from_dict(t, "t"))) == list(vars(TierSpec._collecting(t, "t")))
    for bad in ({"capacity_bytes": 1e12, "read_bytes_per_s": 1e10},
                {"capacity_bytes": 1e12, "read_bytes_per_s": 1e10, "write_bytes_per_s": 1e10,
                 "devices": -1}):
        assert _error(TierSpec.from_dict, bad) == _error(TierSpec._collecting, bad)


# ------------------------------------------------------------------ tier summaries
def summary_spec(mine, capacity, present):
    """A tier's summary as :func:`simulation.memory._summary` made it before issue #17's
    shortcuts: the peak moment from the bytes per phase, then a second pass summing the
    live parts (persistent ones too unless the peak is the load) by category."""
    by_phase = {}
    for p in mine:
        by_phase[p["phase"]] = by_phase.get(p["phase"], 0.0) + p["bytes"]
    per = _moments_of(by_phase)
    peak = None
    if mine:
        peak = max(_TRAINING_MOMENTS, key=per.__getitem__)
        if per[peak] <= 0:
            peak = None
        if per["load"] > by_phase.get("persistent", 0.0) + (per[peak] if peak else 0.0):
            peak = "load"
    live = MOMENTS.get(peak, ())
    out = dict.fromkeys(_CATEGORY_KEYS.values(), 0)
    reserve = 0.0
    for p in mine:
        if (peak != "load" and p["phase"] == "persistent") or p["phase"] in live:
            out[_CATEGORY_KEYS[p["category"]]] += p["bytes"]
            if p["name"] in _NOT_ALLOCATED:
                reserve += p["bytes"]
    total = sum(out.values()) if mine else 0
    out.update(total_bytes=total, capacity_bytes=capacity, free_bytes=capacity - total,
               utilization=(total / capacity) if capacity else None, present=present,
               peak_phase=peak or "persistent", moments_bytes=per if mine else dict.fromkeys(MOMENTS, 0.0),
               allocated_bytes=total - reserve if mine else 0, reserved_bytes=total, parts=mine)
    return out


def _scenarios():
    for kind, conv, (tp, pp), rec, off, model, prec in itertools.product(
            ["ddp", "zero1", "zero2", "zero3", "fsdp_full_shard", "fsdp_hybrid_shard",
             "zero_offload", "zero_infinity", "megatron_dist_opt"],
            ["realistic", "zero_paper"], [(1, 1), (2, 2)], ["none", "full"], ["none", "cpu"],
            ["llama2-7b", "mixtral-8x7b"], ["bf16", "fp32"]):
        st = {"kind": kind, "offload_activations": off}
        if kind == "fsdp_hybrid_shard":
            st["shard_group_size"] = 8
        d = {"model": {"preset": model}, "cluster": {"node": "dgx-h100-cxl", "num_nodes": 2},
             "training": {"micro_batch_size": 1, "global_batch_size": 64 * tp * pp,
                          "seq_len": 2048, "tensor_parallel": tp, "pipeline_parallel": pp,
                          "recompute": rec, "precision": prec},
             "strategy": st, "convention": conv, "checkpoint": {"method": "in_memory_then_flush"}}
        try:
            sc = Scenario.from_dict(d)
            layout(sc)
        except ScenarioError:
            continue
        yield sc


def test_tier_summaries_equal_the_two_pass_summary_on_a_sample():
    n = 0
    for sc in _scenarios():
        pc, lay = model_params(sc.model), layout(sc)
        sb = state_bytes(sc.training.precision, sc.training.optimizer, sc.training.dtypes)
        for stage in (("only",) if lay.pipeline_parallel == 1 else ("first", "last")):
            parts = build_parts(sc, pc, lay, sb, stage)
            per_gpu, per_node = tier_summaries(parts, sc.cluster.accelerator.hbm_capacity_bytes,
                                               sc.cluster.tiers)
            want = summary_spec([p for p in parts if p["tier"] == "hbm"],
                                sc.cluster.accelerator.hbm_capacity_bytes, True)
            assert repr(per_gpu["hbm"]) == repr(want)           # same keys, order and floats
            for t in NODE_TIERS:
                spec = sc.cluster.tiers.get(t)
                want = summary_spec([p for p in parts if p["tier"] == t],
                                    spec.capacity_bytes if spec else 0.0, spec is not None)
                assert repr(per_node[t]) == repr(want), t
            n += 1
        assert _stage_parts(sc, pc, lay, sb)                      # the evaluate path runs too
    assert n >= 200


def test_built_in_presets_are_parsed_once_and_only_as_the_table_has_them():
    from simulation import scenario as S
    for name in presets.ACCELERATORS:
        acc = resolve_cluster({"accelerator": name, "gpus_per_node": 8})["accelerator"]
        spec = AcceleratorSpec._direct(copy.deepcopy(acc), "a")
        assert spec is S._BUILT_IN_ACCELERATORS[name][1]
        assert spec == AcceleratorSpec._collecting(copy.deepcopy(acc), "a")
        changed = dict(acc, hbm_capacity_bytes=acc["hbm_capacity_bytes"] / 2)
        other = AcceleratorSpec._direct(copy.deepcopy(changed), "a")
        assert other is not spec and other == AcceleratorSpec._collecting(changed, "a")
        assert other.hbm_capacity_bytes == acc["hbm_capacity_bytes"] / 2
        bad = dict(acc, hbm_bytes_per_s=True)      # == 1 but a bool: not the preset, rejected
        assert _error(AcceleratorSpec.from_dict, bad) == _error(AcceleratorSpec._collecting, bad)
    for tpl in presets.NODES.values():
        for t in (tpl.get("tiers") or {}).values():
            assert TierSpec._direct(dict(t), "t") is S._BUILT_IN_TIERS[repr(dict(t))]
            assert TierSpec._direct(dict(t), "t") == TierSpec._collecting(dict(t), "t")
            as_int = dict(t, capacity_bytes=int(t["capacity_bytes"]) + 1)
            assert TierSpec._direct(as_int, "t") == TierSpec._collecting(as_int, "t")
            assert TierSpec._direct(as_int, "t").capacity_bytes == float(int(t["capacity_bytes"]) + 1)


def test_a_built_in_section_is_matched_as_its_repr_would_match_it():
    """``scenario._as_written`` (C-level ``==``, key order and value types) stands for
    ``repr(d) == repr(preset)``: never true where the reprs differ (1 / 1.0 / True, -0.0,
    NaN, key order, nested values), true for the preset as written."""
    from simulation import scenario as S
    rng = random.Random(5)
    values = [0, 1, 1.0, True, False, None, 0.0, -0.0, float("nan"), 2.5, "a", "b", [1], {"x": 1}]
    n = 0
    for _ in range(3000):
        keys = rng.sample(["p", "q", "r", "s"], rng.randint(1, 4))
        ref = {k: rng.choice(values) for k in keys}
        d = dict(ref) if rng.random() < 0.5 else {}
        for k in keys if not d else rng.sample(keys, rng.randint(0, len(keys))):
            d[k] = rng.choice(values) if rng.random() < 0.5 else d.get(k, ref[k])
        if rng.random() < 0.2:
            d = dict(reversed(list(d.items())))
        got = S._as_written(d, S._written(ref))
        assert not got or repr(d) == repr(ref), (d, ref)
        n += got
    assert n > 300
    for name, (written_repr, spec, written) in S._BUILT_IN_ACCELERATORS.items():
        assert written is not None and S._as_written(written[0], written)
        assert written_repr == repr(written[0])
    for device, rows in S._BUILT_IN_TIERS_BY_DEVICE.items():
        for written, spec in rows:
            assert written is not None and spec is S._BUILT_IN_TIERS[repr(written[0])]
