"""GQA's materialised K/V repeat (``training.repeat_kv``, simulation/step.py ``repeat_kv_s``):
torchtitan's ``repeat_kv`` before SDPA (torchtitan/models/llama/model.py at 9dec370)."""

import copy

import pytest

from simulation import evaluate_dict
from simulation.scenario import Scenario
from simulation.step import repeat_kv_s
from tests.refdata import cases


def _titan(**training):
    (c,) = cases("torchtitan_llama3_h100_2024", "titan_8b_8gpu_fsdp")[:1]
    d = copy.deepcopy(c["scenario"])
    d["training"].update(training)
    return d


def test_repeat_kv_bytes_by_hand_llama31_8b():
    # torchtitan Llama 3.1 8B: 2 x 8192 tokens a micro-batch, head dim 128, 8 K/V heads
    # repeated to 32, bf16. Forward: K and V each read at 8 heads, written at 32:
    # 2 x 16384 x 128 x (8 + 32) x 2 B = 335.5 MB; backward the reduction (same bytes) and,
    # under op-level SAC (selective_ops), the repeat again: 671 MB
    once = 2 * 16384 * 128 * (8 + 32) * 2
    assert once == pytest.approx(335.5e6, rel=1e-3)
    hbm = 2.4e12 * 2903 / 3350          # the benchmark's 2.4 TB/s x the H100's measured share
    t = repeat_kv_s(Scenario.from_dict(_titan(repeat_kv=True)))
    assert t["fwd_s"] == pytest.approx(once / hbm, rel=1e-3)            # 0.16 ms a block
    assert t["bwd_s"] == pytest.approx(2 * once / hbm, rel=1e-3)
    # a step: 32 blocks x 3 x 335.5 MB = 32.2 GB, 15.5 ms = 0.55 % of 2.84 s
    assert 32 * (t["fwd_s"] + t["bwd_s"]) == pytest.approx(32 * 3 * once / hbm, rel=1e-3)
    # no recomputation: the backward's reduction only
    t = repeat_kv_s(Scenario.from_dict(_titan(repeat_kv=True, recompute="none")))
    assert t["bwd_s"] == pytest.approx(once / hbm, rel=1e-3)


def test_repeat_kv_off_or_without_gqa_adds_nothing():
    assert repeat_kv_s(Scenario.from_dict(_titan(repeat_kv=False))) == dict(fwd_s=0.0, bwd_s=0.0)
    d = _titan(repeat_kv=True)
    d["model"]["num_kv_heads"] = 32                 # MHA: repeat_kv returns x when n_rep == 1
    assert repeat_kv_s(Scenario.from_dict(d)) == dict(fwd_s=0.0, bwd_s=0.0)
    d = _titan()
    del d["training"]["repeat_kv"]
    assert Scenario.from_dict(d).training.repeat_kv is False          # default: today's
    assert "repeat_kv" not in Scenario.from_dict(d).to_dict()["training"]


def test_repeat_kv_lengthens_the_step_by_its_passes():
    # on the compute stream, between the K/V projections and SDPA: the step grows by the sum
    s0 = evaluate_dict(_titan(repeat_kv=False), detail=False)["step"]["time_s"]
    s1 = evaluate_dict(_titan(repeat_kv=True), detail=False)["step"]["time_s"]
    t = repeat_kv_s(Scenario.from_dict(_titan(repeat_kv=True)))
    assert s1 - s0 == pytest.approx(32 * (t["fwd_s"] + t["bwd_s"]), rel=0.15)
