"""BLOOM's block (``layer_family`` bloom) held to what PyTorch saves in transformers' own class.

``tests/data/saved_tensors_hf_bloom.json`` was recorded by
``scripts/measure_saved_tensors.py --set bloom`` (``saved_tensors_hooks`` around one
transformers ``BloomBlock``, eager attention with ALiBi, on the CPU in bf16, with and
without attention and hidden dropout; the versions are in the file). The tests read it;
they do not measure. Each point is turned into the BLOOM ``config.json`` it was built from,
read by :func:`model_from_hf_config` into a model section, and the engine's layer
(``simulation.memory._shape``, the ``huggingface`` stack, CPU kernel traits) must be within
5 % of the measurement.
"""

import json
from pathlib import Path

import pytest

from simulation.activations import CPU, CUDA, FAMILY_TRAITS, layer_bytes, layer_terms
from simulation.hf_config import model_from_hf_config
from simulation.memory import _shape as engine_shape
from simulation.scenario import ModelSpec, TrainingSpec

DATA = json.loads((Path(__file__).parent.parent / "data" / "saved_tensors_hf_bloom.json").read_text())
LAYERS = {c["id"]: c for c in DATA["cases"]}
TOLERANCE = 0.05
BASE = "bloom-eager-b2-s64-h128-a4"


def hf_config(p: dict) -> dict:
    """The BLOOM config.json of a measured point (BloomConfig's own key names)."""
    return {"model_type": "bloom", "hidden_size": p["h"], "n_head": p["a"], "n_layer": 1,
            "vocab_size": 128, "attention_dropout": p.get("attn_dropout", 0.0),
            "hidden_dropout": p.get("hidden_dropout", 0.0),
            "apply_residual_connection_post_layernorm": p.get("post_ln_residual", False),
            "pretraining_tp": p.get("pretraining_tp", 1),
            "slow_but_exact": p.get("slow_but_exact", False)}


def model(p: dict) -> ModelSpec:
    section, _, _ = model_from_hf_config(hf_config(p))
    return ModelSpec.from_dict(section)


def shape(p: dict, flash: bool = False):
    tr = TrainingSpec.from_dict({"micro_batch_size": p["b"], "seq_len": p["s"],
                                 "flash_attention": flash, "framework": "huggingface"})
    return engine_shape(model(p), tr, "none")


def _rows(case, pred):
    return sum(t["storage_bytes"] for t in case["tensors"]
               if t["kind"] in ("activation", "layer_input") and pred(t))


def test_the_data_says_what_it_was_measured_with():
    assert DATA["device"] == "cpu" and DATA["dtype"] == "bfloat16"
    assert set(DATA["versions"]) == {"torch", "transformers", "python"}
    assert {c["config"]["arch"] for c in LAYERS.values()} == {"bloom"}
    # with and without each dropout
    drops = {(bool(c["config"].get("attn_dropout")), bool(c["config"].get("hidden_dropout")))
             for c in LAYERS.values()}
    assert drops == {(False, False), (True, False), (False, True), (True, True)}
    assert "bloom" in FAMILY_TRAITS


@pytest.mark.parametrize("case_id", list(LAYERS))
def test_bloom_layer_within_5_percent(case_id):
    case = LAYERS[case_id]
    x = shape(case["config"])
    got = layer_bytes(x, CPU)
    err = got / case["layer_bytes"] - 1
    assert abs(err) <= TOLERANCE, (
        f"{case_id}: engine {got:.0f} B vs measured {case['layer_bytes']} B ({err:+.1%}); "
        f"terms {layer_terms(x, CPU)}")


@pytest.mark.parametrize("case_id", list(LAYERS))
def test_without_the_family_it_misses(case_id):
    # the same section without layer_family (a GPT-2-style LayerNorm block: gelu_new's five
    # tensors, a 16-bit softmax) is outside the tolerance at every point (+8 .. +42 %)
    case = LAYERS[case_id]
    x = shape(case["config"]).replaced(single_op_activation=False, eager_softmax_fp32=None)
    assert abs(layer_bytes(x, CPU) / case["layer_bytes"] - 1) > TOLERANCE


def test_config_sets_the_bloom_block():
    m = model(LAYERS[BASE]["config"])
    assert m.layer_family == "bloom" and m.position_embedding == "alibi"
    assert m.norm == "layernorm" and not m.gated_mlp and m.linear_bias and m.has_qkv_bias
    assert m.tied_embeddings and m.has_fused_projections
    assert m.ffn_hidden_size == 4 * m.hidden_size and m.num_kv_heads == m.num_attention_heads
    assert m.max_seq_len is None                 # ALiBi: BloomConfig has no context length
    x = shape(LAYERS[BASE]["config"])
    assert x.single_op_activation and x.eager_softmax_fp32 and x.fused


def test_softmax_is_fp32_beside_its_16_bit_copy():
    # BloomAttention: F.softmax(..., dtype=torch.float32).to(input_dtype): the softmax keeps
    # its fp32 output (4 B a score) and the second bmm the 16-bit copy (2 B a score)
    case = LAYERS[BASE]
    p = case["config"]
    scores = p["a"] * p["s"] ** 2 * p["b"]
    fp32 = _rows(case, lambda t: t["function"] == "softmax")
    copy = _rows(case, lambda t: t["saved_by"] == ["BmmBackward0._saved_self"])
    assert (fp32, copy) == (4 * scores, 2 * scores)
    assert layer_terms(shape(p), CPU)["attention scores (softmax, dropout)"] == fp32 + copy


def test_bloom_gelu_keeps_its_input_only():
    # GeLUFunction.forward: ctx.save_for_backward(input); dense_4h_to_h keeps the output:
    # 4 B per f and token
    case = LAYERS[BASE]
    p = case["config"]
    mlp = _rows(case, lambda t: t["module"] in ("mlp.gelu_impl", "mlp.dense_4h_to_h"))
    assert mlp == 4 * p["s"] * p["b"] * p["ffn"]
    assert layer_terms(shape(p), CPU)["MLP activations"] == mlp


def test_alibi_and_the_mask_are_shared_not_per_layer():
    # alibi.baddbmm keeps q and k, not its input (the ALiBi tensor needs no gradient);
    # masked_fill keeps the bool mask BloomModel makes once for every block
    case = LAYERS[BASE]
    p = case["config"]
    shared = [t for t in case["tensors"] if t["kind"] == "shared_input"]
    assert [(t["function"], t["dtype"]) for t in shared] == [("masked_fill", "bool")]
    assert case["shared_input_bytes"] == p["b"] * p["s"] ** 2
    saved_by = {s for t in case["tensors"] for s in t["saved_by"] if s.startswith("Baddbmm")}
    assert saved_by == {"BaddbmmBackward0._saved_batch1", "BaddbmmBackward0._saved_batch2"}


def test_dropout_masks_follow_the_kernels():
    # CPU: the masks are bf16 (2 B), as measured; CUDA's native_dropout: bool (1 B)
    base = LAYERS[BASE]
    attn = LAYERS[BASE + "-attn_dropout0.1"]
    hidden = LAYERS[BASE + "-hidden_dropout0.1"]
    p = base["config"]
    scores, sbh = p["a"] * p["s"] ** 2 * p["b"], p["s"] * p["b"] * p["h"]
    assert attn["layer_bytes"] - base["layer_bytes"] == 2 * scores
    assert hidden["layer_bytes"] - base["layer_bytes"] == 2 * 2 * sbh
    x = shape(hidden["config"])
    assert layer_terms(x, CPU)["residual dropout masks"] == 2 * 2 * sbh
    assert layer_terms(x, CUDA)["residual dropout masks"] == 2 * 1 * sbh
    y = shape(attn["config"])
    cpu = layer_terms(y, CPU)["attention scores (softmax, dropout)"]
    cuda = layer_terms(y, CUDA)["attention scores (softmax, dropout)"]
    assert cpu - cuda == scores


def test_post_layernorm_residual_and_slow_but_exact_save_the_same():
    base = LAYERS[BASE]["layer_bytes"]
    assert LAYERS[BASE + "-post_ln_residualTrue"]["layer_bytes"] == base
    assert LAYERS[BASE + "-pretraining_tp2-slow_but_exactTrue"]["layer_bytes"] == base


def test_flash_attention_has_no_score_terms():
    # transformers' BloomAttention is eager only; under flash_attention the engine counts a
    # FlashAttention kernel with ALiBi slopes: no s^2 term, the fp32 softmax neither
    p = LAYERS[BASE]["config"]
    terms = layer_terms(shape(p, flash=True), CUDA)
    assert "attention scores (softmax, dropout)" not in terms and "logsumexp (fp32)" in terms
