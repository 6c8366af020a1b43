"""config.json import (simulation/hf_config.py): each preset family's published config.json
(tests/data/hf_configs/<preset>.json, with the URL it was copied from) gives the preset's
own model, and so transformers' meta-device count recorded in param_counts_hf.json.
Configs of models that are no preset (``"preset": null``: BLOOM) are checked against the
counts of param_counts_hf_bloom.json."""

import dataclasses
import json
from pathlib import Path

import pytest

from simulation.hf_config import model_from_hf_config
from simulation.params import count_params
from simulation.presets import MODELS
from simulation.scenario import ModelSpec, ScenarioError

DATA = Path(__file__).parents[1] / "data"
ALL_CONFIGS = {p.stem: json.loads(p.read_text()) for p in sorted((DATA / "hf_configs").glob("*.json"))}
CONFIGS = {k: c for k, c in ALL_CONFIGS.items() if c["preset"] is not None}
META = {c["preset"]: c for c in json.loads((DATA / "param_counts_hf.json").read_text())["cases"]}


def _spec(d: dict) -> ModelSpec:
    return dataclasses.replace(ModelSpec.from_dict(dict(d)), name="", source=None, preset=None)


def test_every_hf_preset_has_a_config():
    hf_presets = {slug for slug, m in MODELS.items() if "huggingface.co" in m["source"]
                  or slug.startswith(("llama2", "mixtral"))}
    assert hf_presets <= set(CONFIGS)
    for slug, case in CONFIGS.items():
        assert case["preset"] == slug
        assert case["url"].startswith("https://huggingface.co/")
        if slug in META:
            assert META[slug]["url"] == case["url"]


@pytest.mark.parametrize("slug", sorted(CONFIGS))
def test_config_gives_the_preset(slug):
    section, ignored, notes = model_from_hf_config(CONFIGS[slug]["config"])
    assert _spec(section) == _spec(MODELS[slug])
    assert "model_type" not in ignored and "hidden_size" not in ignored
    assert ignored == sorted(ignored)


@pytest.mark.parametrize("slug", sorted(set(CONFIGS) & set(META)))
def test_config_counts_as_transformers(slug):
    pc = count_params(ModelSpec.from_dict(model_from_hf_config(CONFIGS[slug]["config"])[0]))
    assert pc.total == META[slug]["total"]
    assert pc.first_layer == META[slug]["per_layer"]
    assert pc.largest_layer == max(META[slug]["per_layer"], META[slug]["last_layer"])


def test_ignored_keys_are_named():
    _, ignored, notes = model_from_hf_config(CONFIGS["mistral-7b"]["config"])
    # every key of Mistral-7B's config.json that sets no model field, and only those
    assert ignored == ["architectures", "bos_token_id", "eos_token_id", "initializer_range",
                       "rope_theta", "torch_dtype", "transformers_version", "use_cache"]
    assert not notes            # sliding_window 4096 is now the model's own field
    m, ignored, notes = model_from_hf_config(CONFIGS["qwen2.5-7b"]["config"])
    # use_sliding_window false: Qwen2Config.layer_types is full attention everywhere
    assert "sliding_window" not in m and not any("sliding_window" in n for n in notes)
    m, _, notes = model_from_hf_config(dict(CONFIGS["qwen2.5-7b"]["config"], use_sliding_window=True))
    assert "sliding_window" not in m and any("max_window_layers" in n for n in notes)


def test_falcon_variants():
    """FalconAttention / FalconDecoderLayer: Falcon-40B's new decoder architecture has
    num_kv_heads 8 and two norms (ln_attn, ln_mlp); a sequential block has two too."""
    base = dict(CONFIGS["falcon-7b"]["config"])
    f40 = dict(base, hidden_size=8192, num_attention_heads=128, num_hidden_layers=60,
               new_decoder_architecture=True, num_kv_heads=8)
    m, _, _ = model_from_hf_config(f40)
    assert m["num_kv_heads"] == 8 and "norms_per_block" not in m and m["ffn_hidden_size"] == 4 * 8192
    # hand count of one Falcon-40B block, h = 8192, head_dim 64, 8 KV heads, LayerNorm:
    # qkv 8192 x (8192 + 2 x 512) + dense 8192^2 + MLP 2 x 8192 x 32768 + 2 norms x 2 x 8192
    h = 8192
    assert count_params(ModelSpec.from_dict(m)).per_layer == (
        h * (h + 2 * 512) + h * h + 2 * h * 4 * h + 2 * 2 * h)
    m, _, _ = model_from_hf_config(dict(base, parallel_attn=False))
    assert "norms_per_block" not in m        # input + post-attention: the default 2
    m, _, _ = model_from_hf_config(dict(base, multi_query=False))
    assert m["num_kv_heads"] == 71
    with pytest.raises(ScenarioError) as e:
        model_from_hf_config(dict(base, alibi=True))
    assert e.value.field == "config.alibi"


def test_biases():
    llama = CONFIGS["llama3.1-8b"]["config"]
    m, _, notes = model_from_hf_config(dict(llama, attention_bias=True, mlp_bias=True))
    assert m["linear_bias"] is True and "qkv_bias" not in m
    m, _, notes = model_from_hf_config(dict(llama, attention_bias=True))
    assert m["qkv_bias"] is True and m["linear_bias"] is False
    assert any("o_proj" in n for n in notes)


def test_dropout_from_probabilities():
    m, _, _ = model_from_hf_config(dict(CONFIGS["phi3-mini"]["config"], resid_pdrop=0.1))
    spec = ModelSpec.from_dict(m)
    assert spec.hidden_dropout is True and spec.attention_dropout is False


@pytest.mark.parametrize("change, field", [
    (dict(model_type="bert"), "config.model_type"),
    (dict(model_type=None), "config.model_type"),
    (dict(hidden_size="4096"), "config.hidden_size"),
    (dict(hidden_size=True), "config.hidden_size"),
    (dict(num_hidden_layers=0), "config.num_hidden_layers"),
    (dict(num_hidden_layers=None), "config.num_hidden_layers"),
    (dict(num_key_value_heads=5), "config.num_key_value_heads"),      # 32 % 5
    (dict(num_attention_heads=33), "config.num_attention_heads"),     # 4096 % 33
    (dict(tie_word_embeddings="no"), "config.tie_word_embeddings"),
    (dict(hidden_act="tanh"), "config.hidden_act"),
    (dict(attention_dropout=2), "config.attention_dropout"),
    (dict(intermediate_size=4.5), "config.intermediate_size"),
])
def test_bad_values_name_the_key(change, field):
    cfg = dict(CONFIGS["llama3.1-8b"]["config"], **change)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    with pytest.raises(ScenarioError) as e:
        model_from_hf_config(cfg)
    assert e.value.field == field


def test_not_an_object():
    with pytest.raises(ScenarioError) as e:
        model_from_hf_config([1, 2])
    assert e.value.field == "config"


def test_mixtral_top_k():
    with pytest.raises(ScenarioError) as e:
        model_from_hf_config(dict(CONFIGS["mixtral-8x7b"]["config"], num_experts_per_tok=9))
    assert e.value.field == "config.num_experts_per_tok"


def test_qwen2_biases_are_its_modules_not_its_keys():
    """Qwen2Attention: q/k/v with bias, o without, whatever attention_bias says (it reads none)."""
    m, ignored, notes = model_from_hf_config(dict(CONFIGS["qwen2.5-7b"]["config"], attention_bias=True))
    assert m["qkv_bias"] is True and m["linear_bias"] is False and "attention_bias" in ignored
    assert not notes


def test_falcon_keys_it_does_not_read_are_ignored():
    _, ignored, _ = model_from_hf_config(dict(CONFIGS["falcon-7b"]["config"], num_kv_heads=8))
    assert "num_kv_heads" in ignored          # multi_query: one KV head, num_kv_heads unread


def test_deepseek_keys():
    """DeepSeek's config keys as transformers' classes read them: null n_shared_experts is
    no shared MLP (DeepseekV2MoE), an absent key is the class default, q_lora_rank null is
    one q_proj; moe_layer_freq and the MTP module get notes; biases are refused."""
    v3 = CONFIGS["deepseek-v3"]["config"]
    m, ignored, notes = model_from_hf_config(v3)
    assert any(n.startswith("num_nextn_predict_layers") for n in notes)
    assert "n_routed_experts" not in ignored and "moe_layer_freq" not in ignored
    bare = {k: v3[k] for k in ("model_type", "hidden_size", "num_attention_heads",
                               "num_hidden_layers", "vocab_size", "intermediate_size")}
    defaults, _, _ = model_from_hf_config(bare)        # DeepseekV3Config's defaults
    assert {k: defaults[k] for k in ("num_experts", "moe_top_k", "q_lora_rank", "first_dense_layers")} == \
        dict(num_experts=256, moe_top_k=8, q_lora_rank=1536, first_dense_layers=3)
    lite = CONFIGS["deepseek-v2-lite"]["config"]
    m, _, _ = model_from_hf_config(lite)
    assert "q_lora_rank" not in m and m["num_shared_experts"] == 2
    m, _, _ = model_from_hf_config(dict(lite, n_shared_experts=None))
    assert "num_shared_experts" not in m
    _, _, notes = model_from_hf_config(dict(lite, moe_layer_freq=2))
    assert any(n.startswith("moe_layer_freq") for n in notes)
    for change, field in ((dict(attention_bias=True), "config.attention_bias"),
                          (dict(num_experts_per_tok=65), "config.num_experts_per_tok"),
                          (dict(first_k_dense_replace=28), "config.first_k_dense_replace"),
                          (dict(kv_lora_rank=0), "config.kv_lora_rank"),
                          (dict(num_experts_per_tok=None), "config.num_experts_per_tok")):
        cfg = {k: v for k, v in dict(lite, **change).items() if v is not None}
        with pytest.raises(ScenarioError) as e:
            model_from_hf_config(cfg)
        assert e.value.field == field


def test_sliding_window_layers():
    """Mistral-7B-v0.1 slides every layer, Gemma 2 layers 0, 2, 4, ... (the pattern
    transformers' Gemma2Config.layer_types makes, recorded as sliding_layers in
    param_counts_hf.json); a config with another pattern is refused."""
    for slug in ("mistral-7b", "gemma2-9b", "gemma2-27b"):
        spec = ModelSpec.from_dict(model_from_hf_config(CONFIGS[slug]["config"])[0])
        assert spec.sliding_window == 4096
        assert spec.sliding_layers == META[slug]["sliding_layers"]
    g = CONFIGS["gemma2-9b"]["config"]
    full = ["full_attention"] * g["num_hidden_layers"]
    with pytest.raises(ScenarioError) as e:
        model_from_hf_config(dict(g, layer_types=full))
    assert e.value.field == "config.layer_types"
    assert "sliding_window" not in model_from_hf_config(CONFIGS["mixtral-8x7b"]["config"])[0]


def test_every_bad_key_is_named_at_once():
    """Three bad keys, three errors (the first alone was named): each is read."""
    from simulation.errors import ScenarioErrors
    cfg = dict(CONFIGS["llama3.1-8b"]["config"], hidden_size="4096", hidden_act="tanh", attention_dropout=2)
    with pytest.raises(ScenarioErrors) as e:
        model_from_hf_config(cfg)
    assert [x.field for x in e.value.errors] == ["config.hidden_size", "config.hidden_act",
                                                 "config.attention_dropout"]


def test_a_cross_key_check_is_named_beside_a_bad_key():
    """heads that do not divide hidden_size (the model section's check) and a bad flag."""
    from simulation.errors import ScenarioErrors
    cfg = dict(CONFIGS["llama3.1-8b"]["config"], num_attention_heads=33, tie_word_embeddings="no")
    with pytest.raises(ScenarioErrors) as e:
        model_from_hf_config(cfg)
    assert {x.field for x in e.value.errors} == {"config.num_attention_heads", "config.tie_word_embeddings"}


def test_every_independent_cross_key_check_is_named_beside_bad_keys():
    """A bad vocab_size left heads-divide-hidden unchecked (the whole model check was
    skipped); now only the checks reading a bad key are: KV heads that do not divide the
    heads are named beside a bad hidden_size, not beside bad heads."""
    from simulation.errors import ScenarioErrors
    cfg = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
           "num_attention_heads": 33, "num_hidden_layers": 32, "vocab_size": -5}
    with pytest.raises(ScenarioErrors) as e:
        model_from_hf_config(cfg)
    assert [x.field for x in e.value.errors] == ["config.vocab_size", "config.num_attention_heads"]
    with pytest.raises(ScenarioErrors) as e:
        model_from_hf_config(dict(cfg, vocab_size=32000, hidden_size=0, num_key_value_heads=5))
    assert [x.field for x in e.value.errors] == ["config.hidden_size", "config.num_key_value_heads"]
    with pytest.raises(ScenarioError) as e:
        model_from_hf_config(dict(cfg, vocab_size=32000, num_attention_heads="x", num_key_value_heads=5))
    assert e.value.field == "config.num_attention_heads"


@pytest.mark.parametrize("model_type", [[], {"a": 1}, 7])
def test_a_model_type_of_another_json_type_is_named(model_type):
    with pytest.raises(ScenarioError) as e:       # a list was a TypeError (unhashable)
        model_from_hf_config({"model_type": model_type})
    assert e.value.field == "config.model_type"


def test_a_bad_key_adds_no_consequence():
    """hidden_size bad: the heads-divide-hidden check, which would read a default, is not run;
    the missing intermediate_size is named too."""
    from simulation.errors import ScenarioErrors
    cfg = {k: v for k, v in CONFIGS["llama3.1-8b"]["config"].items() if k != "intermediate_size"}
    with pytest.raises(ScenarioErrors) as e:
        model_from_hf_config(dict(cfg, hidden_size=0))
    assert [(x.field, x.message) for x in e.value.errors] == [
        ("config.hidden_size", "must be between 1 and 1,000,000, got 0"),
        ("config.intermediate_size", "is required")]


# ---------------------------------------------------------------- BLOOM (no preset)
BLOOM_META = {c["name"]: c for c in json.loads((DATA / "param_counts_hf_bloom.json").read_text())["cases"]}


def test_bloom_560m_config():
    """bigscience/bloom-560m's config.json (tests/data/hf_configs/bloom-560m.json, the URL in
    it): transformers' BloomConfig names (n_layer, n_head), ALiBi, LayerNorm, a 4 h BloomGelu
    MLP with biases, tied embeddings; the Megatron-DeepSpeed keys that transformers' classes
    do not read are ignored."""
    case = ALL_CONFIGS["bloom-560m"]
    assert case["preset"] is None and case["url"] == BLOOM_META["bloom-560m"]["url"]
    m, ignored, notes = model_from_hf_config(case["config"])
    assert (m["num_layers"], m["hidden_size"], m["num_attention_heads"], m["num_kv_heads"],
            m["ffn_hidden_size"], m["vocab_size"]) == (24, 1024, 16, 16, 4096, 250880)
    assert m["position_embedding"] == "alibi" and m["layer_family"] == "bloom"
    assert m["norm"] == "layernorm" and not m["gated_mlp"] and m["linear_bias"]
    assert m["tied_embeddings"] and "max_seq_len" not in m and m["dropout"] is False
    assert ignored == ["_name_or_path", "architectures", "attention_softmax_in_fp32",
                       "bias_dropout_fusion", "bos_token_id", "eos_token_id", "initializer_range",
                       "masked_softmax_fusion", "n_inner", "offset_alibi", "pad_token_id",
                       "skip_bias_add", "skip_bias_add_qkv", "transformers_version",
                       "unk_token_id", "use_cache"]
    assert not notes


@pytest.mark.parametrize("name", sorted(BLOOM_META))
def test_bloom_counts_as_transformers(name):
    """BloomForCausalLM on the meta device (scripts/count_params_meta.py --set bloom,
    param_counts_hf_bloom.json): 12 h^2 + 13 h a block, the token table (tied head), the
    final LayerNorm and word_embeddings_layernorm (2 h each)."""
    case = BLOOM_META[name]
    cfg = dict(case["config"], model_type="bloom")
    pc = count_params(ModelSpec.from_dict(model_from_hf_config(cfg)[0]))
    assert pc.total == case["total"]
    assert pc.first_layer == pc.per_layer == case["per_layer"]
    assert pc.embedding == case["embedding"] and pc.largest_module == case["largest_module"]
    assert pc.output_head == 0 and case["tied"]
    # without the embedding LayerNorm (the family unset) 2 h short
    plain = dict(model_from_hf_config(cfg)[0])
    del plain["layer_family"]
    assert count_params(ModelSpec.from_dict(plain)).total == case["total"] - 2 * cfg["hidden_size"]


def test_bloom_key_names():
    """bigscience/bloom's config.json names hidden n_embed and heads num_attention_heads
    (BloomConfig.__init__ takes n_embed for hidden_size; attribute_map maps the generic
    names): either spelling reads the same; both with different values are refused."""
    own = {"model_type": "bloom", "n_embed": 14336, "n_layer": 70, "num_attention_heads": 112,
           "vocab_size": 250880}
    generic = {"model_type": "bloom", "hidden_size": 14336, "num_hidden_layers": 70,
               "n_head": 112, "vocab_size": 250880}
    a, ignored, _ = model_from_hf_config(own)
    b, _, _ = model_from_hf_config(generic)
    assert a == b and a["hidden_size"] == 14336 and not ignored
    assert count_params(ModelSpec.from_dict(a)).total == BLOOM_META["bloom-176b"]["total"]
    with pytest.raises(ScenarioError) as e:
        model_from_hf_config(dict(own, hidden_size=1024))
    assert e.value.field == "config.n_embed"
    with pytest.raises(ScenarioError) as e:
        model_from_hf_config(dict(generic, n_head="112"))
    assert e.value.field == "config.n_head"


def test_bloom_switches_are_read_and_noted():
    base = ALL_CONFIGS["bloom-560m"]["config"]
    m, _, notes = model_from_hf_config(dict(base, apply_residual_connection_post_layernorm=True))
    assert m == model_from_hf_config(base)[0] and any("post_layernorm" in n for n in notes)
    _, _, notes = model_from_hf_config(dict(base, slow_but_exact=True, pretraining_tp=4))
    assert any("4 sliced matmuls" in n for n in notes)
    assert not model_from_hf_config(dict(base, slow_but_exact=True))[2]     # pretraining_tp 1
    m, _, _ = model_from_hf_config(dict(base, hidden_dropout=0.1, attention_dropout=0.1))
    assert m["hidden_dropout"] and m["attention_dropout"]
    with pytest.raises(ScenarioError) as e:
        model_from_hf_config(dict(base, apply_residual_connection_post_layernorm="yes"))
    assert e.value.field == "config.apply_residual_connection_post_layernorm"
