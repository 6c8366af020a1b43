"""FSDP1 (``FullyShardedDataParallel``) vs FSDP2 (``fully_shard``): ``strategy.fsdp_version``
and FSDP2's copy-out / copy-in passes on the compute stream (simulation/step.py
``fsdp2_copy_s``; torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py)."""

import copy

import pytest

from simulation import evaluate_dict
from simulation.errors import ScenarioError
from simulation.params import model_params
from simulation.parallel import layout
from simulation.scenario import Scenario
from simulation.states import state_bytes
from simulation.step import fsdp2_copy_s
from tests.refdata import cases


def _titan(version):
    (c,) = cases("torchtitan_llama3_h100_2024", "titan_8b_8gpu_fsdp")[:1]
    d = copy.deepcopy(c["scenario"])
    d["strategy"]["fsdp_version"] = version
    return d


def _copy(d):
    sc = Scenario.from_dict(d)
    pc = model_params(sc.model)
    sb = state_bytes(sc.training.precision, sc.training.optimizer, sc.training.dtypes)
    return fsdp2_copy_s(sc, pc, layout(sc), sb)


def test_fsdp2_copy_bytes_by_hand_llama31_8b():
    # Llama 3.1 8B block: q, o 4096^2; k, v 4096 x 1024; SwiGLU 3 x 4096 x 14336; 2 norms
    u = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096     # 218,112,000
    head = 2 * 128256 * 4096                                            # embedding + output
    b_p, b_r = 2, 4             # bf16 all-gather, fp32 reduce (torchtitan reduce_dtype=float32)
    # H100 HBM at the benchmark's 2.4 TB/s x the H100's measured share 2903 / 3350
    hbm = 2.4e12 * 2903 / 3350
    t = _copy(_titan(2))
    assert t["fwd_s"] == pytest.approx(2 * u * b_p / hbm, rel=1e-3)             # copy-out: 0.42 ms
    assert t["bwd_s"] == pytest.approx((2 * u * b_p + u * (b_p + b_r)) / hbm, rel=1e-3)   # 1.05 ms
    assert t["head_s"] == pytest.approx((2 * head * b_p + head * (b_p + b_r)) / hbm, rel=1e-3)
    # a step: 32 x (0.872 + 2.181) GB + 10.5 GB = 108 GB of HBM, 52 ms = 1.8 % of 2.84 s
    total_bytes = 32 * (2 * u * b_p + 2 * u * b_p + u * (b_p + b_r)) + 10 * head
    assert total_bytes == pytest.approx(108.2e9, rel=1e-3)
    assert 32 * (t["fwd_s"] + t["bwd_s"]) + t["head_s"] == pytest.approx(total_bytes / hbm, rel=1e-3)


def test_fsdp1_adds_nothing_and_is_the_default():
    assert _copy(_titan(1)) == dict(fwd_s=0.0, bwd_s=0.0, head_s=0.0)
    d = _titan(1)
    del d["strategy"]["fsdp_version"]
    assert Scenario.from_dict(d).strategy.fsdp_version == 1
    assert "fsdp_version" not in Scenario.from_dict(d).to_dict()["strategy"]


def test_fsdp2_step_slower_by_its_exposed_copies():
    # the copies run on the compute stream (split_with_sizes_copy after current_stream().
    # wait_event; chunk_cat before reduce_scatter_stream.wait_stream(current_stream)): the
    # step grows by about their sum, 32 x (fwd + bwd) + head = 52 ms
    s1 = evaluate_dict(_titan(1), detail=False)["step"]["time_s"]
    s2 = evaluate_dict(_titan(2), detail=False)["step"]["time_s"]
    t = _copy(_titan(2))
    assert s2 - s1 == pytest.approx(32 * (t["fwd_s"] + t["bwd_s"]) + t["head_s"], rel=0.15)


def test_fsdp_version_only_for_fsdp():
    d = _titan(2)
    d["strategy"]["kind"] = "zero3"
    with pytest.raises(ScenarioError, match="fsdp_version"):
        Scenario.from_dict(d)
    d = _titan(3)
    with pytest.raises(ScenarioError, match="fsdp_version"):
        Scenario.from_dict(d)


def _parts(d):
    r = evaluate_dict(d, include_step=False)
    return {p["name"]: p["bytes"] for p in r["memory"]["per_gpu"]["hbm"]["parts"]}


def test_fsdp2_memory_by_hand_llama31_8b():
    # fully_shard keeps the flat all-gather output beside the copied-out parameters (one
    # block more, bf16: 218,112,000 x 2 B = 436 MB) and, at a block's copy-in, its bf16
    # gradients beside the fp32 reduce-scatter input: 218,112,000 x (2 + 4) B = 1.309 GB
    # where FSDP1 holds one fp32 flat gradient, 0.872 GB
    u = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    p1, p2 = _parts(_titan(1)), _parts(_titan(2))
    assert p2["all-gather output buffer (1 FSDP2 unit)"] == pytest.approx(u * 2, rel=1e-6)
    assert p2["unsharded gradients + reduce-scatter input (1 FSDP2 unit)"] == pytest.approx(u * 6, rel=1e-6)
    assert p1["unsharded gradients (1 FSDP unit)"] == pytest.approx(u * 4, rel=1e-6)
    assert "all-gather output buffer (1 FSDP2 unit)" not in p1
