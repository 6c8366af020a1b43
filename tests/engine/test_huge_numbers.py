"""JSON allows integers of up to 4,300 digits; past float's range (about 1.8e308) ``float()``
and ``math.isfinite`` raise OverflowError. Every number the engine reads, replaced by an
integer of 310 digits (and its negative), is a ScenarioError naming that field, never another
exception (a 500 through the API): scenarios, a plan spec and a cluster profile's
measurements."""

import copy

import pytest

from simulation import ScenarioError, calibrate, checked_scenario, planner
from tests.refdata import cases

BIG = 10 ** 309


def numeric_leaves(d, path=()):
    """Paths of every int / float leaf of ``d`` (not booleans)."""
    if isinstance(d, dict):
        for k, v in d.items():
            yield from numeric_leaves(v, path + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            yield from numeric_leaves(v, path + (i,))
    elif isinstance(d, (int, float)) and not isinstance(d, bool):
        yield path


def replaced(d, path, value):
    out = copy.deepcopy(d)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return out


def dotted(path) -> str:
    return ".".join(f"[{p}]" if isinstance(p, int) else p for p in path).replace(".[", "[")


# rich scenarios: a custom accelerator, tiers and offload; FP8 and a pipeline; LoRA
SCENARIOS = [cases("public_oom_reports", "oom-03b")[0]["scenario"],
             cases("megatron_bridge_h100_fp8_2025", "mbridge_h100_70b_fp8_2509")[0]["scenario"],
             cases("nemo_h100_bf16_2026", "am_llama33_70b_lora_16gpu")[0]["scenario"]]


@pytest.mark.parametrize("sc", SCENARIOS, ids=["custom-offload", "fp8-pipeline", "lora"])
@pytest.mark.parametrize("value", [BIG, -BIG], ids=["big", "-big"])
def test_every_number_of_a_scenario(sc, value):
    leaves = list(numeric_leaves(sc))
    assert len(leaves) > 8
    for path in leaves:
        with pytest.raises(ScenarioError) as e:
            checked_scenario(replaced(sc, path, value))
        fields = [x.field for x in getattr(e.value, "errors", [e.value])]
        assert dotted(path) in fields or any(dotted(path).startswith(f) for f in fields), (path, fields)
        for x in getattr(e.value, "errors", [e.value]):       # no 310-digit numbers in it
            assert len(x.message) < 200, (path, x.message[:100])


PLAN = {"model": "llama2-13b", "cluster": {"node": "dgx-h100", "num_nodes": [1, 2]},
        "training": {"seq_len": 4096, "global_batch_size": 64, "total_tokens": 1e11},
        "constraints": {"memory_margin": 0.05, "max_usd_per_hour": 60},
        "space": {"tensor_parallel": [1, 2], "micro_batch_size": [1, 4]}}


@pytest.mark.parametrize("value", [BIG, -BIG], ids=["big", "-big"])
def test_every_number_of_a_plan_spec(value):
    for path in numeric_leaves(PLAN):
        with pytest.raises(ScenarioError):
            planner.plan(replaced(PLAN, path, value))


MEASUREMENTS = {"cluster": {"node": "dgx-a100-80gb"}, "gemm": {"flops_per_s": 250e12},
                "collectives": [{"collective": "all_reduce", "size_bytes": 1e9, "ranks": 16,
                                 "bus_bytes_per_s": 90e9}]}


@pytest.mark.parametrize("value", [BIG, -BIG], ids=["big", "-big"])
def test_every_number_of_a_cluster_profile(value):
    for path in numeric_leaves(MEASUREMENTS):
        with pytest.raises(ScenarioError):
            calibrate.fit_profile(replaced(MEASUREMENTS, path, value))
