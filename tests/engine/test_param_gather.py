"""Megatron's distributed optimizer with ``--overlap-param-gather``: the all-gather of the
updated parameters runs in the next step's forward, each bucket waited for by its module's
forward pre-hook (Megatron-LM core_r0.8.0 megatron/core/distributed/
distributed_data_parallel.py ``_make_forward_pre_hook``; param_and_grad_buffer.py
``start_param_sync`` / ``finish_param_sync``), instead of after the optimizer step."""

import pytest

from simulation import evaluate_dict
from simulation.errors import ScenarioError
from simulation.scenario import Scenario
from simulation import step


def scenario(overlap: bool) -> dict:
    # GPT 1.3B-like, 24 layers, one DGX H100: data parallel 8 over NVLink
    return {"model": {"name": "gpt", "num_layers": 24, "hidden_size": 2048, "num_attention_heads": 16,
                      "ffn_hidden_size": 8192, "vocab_size": 51200, "gated_mlp": False,
                      "norm": "layernorm", "position_embedding": "learned", "linear_bias": True},
            "cluster": {"node": "dgx-h100", "num_nodes": 1},
            "training": {"micro_batch_size": 8, "global_batch_size": 64, "seq_len": 2048,
                         "framework": "megatron", "flash_attention": True,
                         "overlap_param_gather": overlap},
            "strategy": {"kind": "megatron_dist_opt"}}


@pytest.mark.parametrize("engine", ["python", "c"])
def test_the_gather_hides_behind_the_forward_but_its_first_layer(engine, monkeypatch):
    """Without the overlap the step ends with the whole all-gather: alpha + V / B, with
    V = (n - 1) / n x P x 2 bytes (ring all-gather of the bf16 parameters, n = 8) and B the
    NVLink rate NCCL reaches (450 GB/s x 0.8 = 360 GB/s). With it, layer i's forward waits
    for its 1/24 share; each share (0.26 ms) is shorter than a layer's forward (about 1 ms)
    so only the first share stays exposed: the step is shorter by V / B x (1 - 1/24), less
    what the shares' NCCL CTAs (16 of the H100's 132 SMs) take from the forwards they run
    beside: 24 x 16/132 x (alpha + V / B / 24), alpha = 8.4 + 7 x 3.4 us (ring all-gather
    over 8 NVLink ranks; collectives.sm_contention_s, a share shorter than its forward)."""
    orig = step.graph_arrays
    monkeypatch.setattr(step, "graph_arrays", lambda r, links, last, e="auto": orig(r, links, last, engine))
    off = evaluate_dict(scenario(False), detail=False)
    on = evaluate_dict(scenario(True), detail=False)
    p = off["model"]["num_params"]
    v = 7 / 8 * p * 2
    contention = 24 * 16 / 132 * ((8.4 + 7 * 3.4) * 1e-6 + v / 360e9 / 24)
    saved = v / 360e9 * (1 - 1 / 24) - contention
    assert off["step"]["time_s"] - on["step"]["time_s"] == pytest.approx(saved, rel=1e-6)
    assert saved > 5e-3


def test_default_is_megatrons_off():
    assert Scenario.from_dict(scenario(False)).training.overlap_param_gather is False
    sc = scenario(True)
    del sc["training"]["overlap_param_gather"]
    assert Scenario.from_dict(sc).training.overlap_param_gather is False


def test_other_strategies_refuse_it():
    sc = scenario(True)
    sc["strategy"] = {"kind": "zero3"}
    with pytest.raises(ScenarioError, match="training.overlap_param_gather"):
        Scenario.from_dict(sc)
