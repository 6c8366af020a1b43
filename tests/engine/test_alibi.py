"""ALiBi position biases (``model.position_embedding: "alibi"``, Press et al. 2022) and the
BLOOM 176B step it makes a validation case (tests/data/reference/bloom_176b_2022.json).

ALiBi has no parameters; on eager attention the biases are the ``input`` of the score
GEMM, ``baddbmm(alibi, q, k^T, beta=1)`` (Megatron-DeepSpeed ParallelAttention, the code
BLOOM trained with; transformers' BloomAttention): the broadcast [b x heads, 1, s] biases
are copied into the [b x heads, s, s] result and read back as C, two passes of the
scores, forward only (no gradient). FlashAttention adds the bias inside the kernel.
"""

import copy

import pytest

from simulation import ScenarioError, evaluate_dict
from simulation.compute import ALIBI_SCORE_PASSES, layer_times, sustained_hbm_bytes_per_s
from simulation.params import count_params
from simulation.scenario import Scenario
from tests.refdata import cases

BASE = {
    "model": {"name": "GPT 1.3B", "num_layers": 24, "hidden_size": 2048, "num_attention_heads": 16,
              "ffn_hidden_size": 8192, "vocab_size": 51200, "gated_mlp": False, "tied_embeddings": True,
              "position_embedding": "learned", "norm": "layernorm", "linear_bias": True,
              "dropout": True, "max_seq_len": 2048},
    "cluster": {"node": "dgx-a100-80gb", "num_nodes": 1},
    "training": {"micro_batch_size": 2, "global_batch_size": 16, "seq_len": 2048, "precision": "bf16",
                 "tensor_parallel": 2, "flash_attention": False, "framework": "megatron"},
    "strategy": {"kind": "ddp"},
}


def scenario(pe: str, **training) -> Scenario:
    d = copy.deepcopy(BASE)
    d["model"]["position_embedding"] = pe
    d["training"].update(training)
    return Scenario.from_dict(d)


def test_alibi_has_no_parameters():
    # learned positions: a max_seq_len x hidden table = 2048 x 2048 = 4,194,304 parameters;
    # ALiBi's slopes are fixed, like RoPE's frequencies
    learned, alibi, rope = (count_params(scenario(pe).model).total for pe in ("learned", "alibi", "rope"))
    assert learned - alibi == 2048 * 2048
    assert alibi == rope


def test_alibi_adds_two_score_passes_on_eager_attention():
    # scores of one micro-batch on one GPU: b x heads/t x s x s = 2 x 8 x 2048 x 2048
    # = 67,108,864 elements of 2 B; two passes (the copy of the biases into the result,
    # cuBLAS reading it back as C) at the A100's sustained HBM rate (1616 GB/s):
    # 2 x 67,108,864 x 2 / 1.616e12 = 166.1 us more forward, nothing more backward
    learned, alibi = scenario("learned"), scenario("alibi")
    tl = layer_times(learned, count_params(learned.model))
    ta = layer_times(alibi, count_params(alibi.model))
    hbm = sustained_hbm_bytes_per_s(alibi.cluster.accelerator)
    assert hbm == pytest.approx(1616e9)
    extra = ALIBI_SCORE_PASSES * 2 * 8 * 2048 * 2048 * 2 / hbm
    assert extra == pytest.approx(166.1e-6, rel=1e-3)
    # learned positions add the table's rows to the embedding output, outside the layer
    assert ta["fwd_s"] - tl["fwd_s"] == pytest.approx(extra, rel=1e-9)
    assert ta["parts"]["attention"] - tl["parts"]["attention"] == pytest.approx(extra, rel=1e-9)
    assert ta["bwd_s"] == pytest.approx(tl["bwd_s"], rel=1e-12)


def test_alibi_recomputed_with_the_forward():
    # full recomputation re-runs the layer's forward in backward, biases included
    learned, alibi = scenario("learned", recompute="full"), scenario("alibi", recompute="full")
    tl = layer_times(learned, count_params(learned.model))
    ta = layer_times(alibi, count_params(alibi.model))
    extra = ta["fwd_s"] - tl["fwd_s"]
    assert extra > 0
    assert ta["bwd_s"] - tl["bwd_s"] == pytest.approx(extra, rel=1e-9)


def test_alibi_costs_nothing_under_flash_attention():
    learned, alibi = scenario("learned", flash_attention=True), scenario("alibi", flash_attention=True)
    assert (layer_times(alibi, count_params(alibi.model))["fwd_s"]
            == layer_times(learned, count_params(learned.model))["fwd_s"])


def test_unknown_position_embedding_names_the_field():
    d = copy.deepcopy(BASE)
    d["model"]["position_embedding"] = "sinusoidal"
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.field == "model.position_embedding"
    assert "alibi" in e.value.message


def test_bloom_case_is_the_logged_step():
    # the log line of iteration 85376 prints the step: 104.70 s at global batch 2048,
    # 19.561 samples/s (2048 / 104.70 = 19.561)
    (c,) = cases("bloom_176b_2022")
    assert c["expected_step_time_s"] == 104.7
    assert 2048 / c["expected_step_time_s"] == pytest.approx(19.561, abs=1e-3)
    t = c["scenario"]["training"]
    assert sum(t["pipeline_layers"]) == c["scenario"]["model"]["num_layers"] == 70
    assert (t["tensor_parallel"] * t["pipeline_parallel"] * 8
            == c["scenario"]["cluster"]["num_nodes"] * 8 == 384)


def test_bloom_step_within_15_percent():
    # held out (no engine figure set from it): -11.5 % at engine 0.13.0, fast by what the
    # case leaves out (the embedding LayerNorm, the tied embedding's gradient all-reduce)
    # and by what is not identified
    (c,) = cases("bloom_176b_2022")
    r = evaluate_dict(c["scenario"], detail=False)
    assert r["fits"]
    err = r["step"]["time_s"] / c["expected_step_time_s"] - 1
    assert abs(err) < 0.15, err
