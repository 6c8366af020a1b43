"""Parameter counts against transformers' own modules built on the meta device.

``tests/data/param_counts_hf.json`` is written by ``scripts/count_params_meta.py``
(``AutoModelForCausalLM.from_config`` under ``torch.device("meta")``, with the torch and
transformers versions it ran with); the engine's count of each preset must equal it
exactly, and each preset must be the config.json the script built.
"""

import json
import math
from pathlib import Path

import pytest

from simulation import step
from simulation.params import count_params
from simulation.presets import MODELS
from simulation.scenario import ModelSpec, ScenarioError
from tests.refdata import assert_close

DATA = json.loads((Path(__file__).parents[1] / "data" / "param_counts_hf.json").read_text())
CASES = DATA["cases"]

# Hugging Face config.json key -> ModelSpec field, and the class defaults it leaves out.
_HF_KEYS = {"hidden_size": "hidden_size", "num_hidden_layers": "num_layers",
            "num_attention_heads": "num_attention_heads", "num_key_value_heads": "num_kv_heads",
            "intermediate_size": "ffn_hidden_size", "vocab_size": "vocab_size", "head_dim": "head_dim",
            "tie_word_embeddings": "tied_embeddings", "num_local_experts": "num_experts",
            "num_experts_per_tok": "moe_top_k", "n_routed_experts": "num_experts",
            "moe_intermediate_size": "moe_ffn_hidden_size", "n_shared_experts": "num_shared_experts",
            "first_k_dense_replace": "first_dense_layers", "q_lora_rank": "q_lora_rank",
            "kv_lora_rank": "kv_lora_rank", "qk_nope_head_dim": "qk_nope_head_dim",
            "qk_rope_head_dim": "qk_rope_head_dim", "v_head_dim": "v_head_dim",
            "sliding_window": "sliding_window"}


def spec(slug: str) -> ModelSpec:
    return ModelSpec.from_dict(dict(MODELS[slug]))


def test_recorded_with_versions():
    v = DATA["versions"]
    assert v["torch"] and v["transformers"]
    assert len(CASES) >= 19


@pytest.mark.parametrize("case", CASES, ids=[c["preset"] for c in CASES])
def test_count_equals_meta_device_model(case):
    pc = count_params(spec(case["preset"]))
    assert pc.total == case["total"]
    assert pc.first_layer == case["per_layer"]
    assert pc.largest_layer == max(case["per_layer"], case["last_layer"])
    if case["per_layer"] == case["last_layer"]:          # uniform blocks
        assert pc.per_layer == case["per_layer"]
    assert pc.embedding == case["embedding"]
    assert pc.largest_module == case["largest_module"]
    assert (pc.output_head == 0) == case["tied"]


@pytest.mark.parametrize("case", CASES, ids=[c["preset"] for c in CASES])
def test_preset_is_the_config_built(case):
    m = spec(case["preset"])
    for key, value in case["config"].items():
        if key in _HF_KEYS:
            assert getattr(m, _HF_KEYS[key]) == value, key
    source = MODELS[case["preset"]]["source"]
    assert case["url"] in source or "config.json: https" not in source   # Llama 2, Mixtral: papers


def test_every_config_json_preset_is_recorded():
    from_configs = {k for k, v in MODELS.items() if "config.json: https://" in v.get("source", "")}
    assert from_configs <= {c["preset"] for c in CASES}
    assert {"llama3.1-8b", "llama3.1-70b", "llama3.1-405b", "llama3.2-1b", "llama3.2-3b",
            "qwen2.5-7b", "qwen2.5-72b", "mistral-7b", "gemma2-9b", "gemma2-27b"} <= from_configs


# Sizes printed on the Hugging Face model pages (safetensors "Model size", 3 significant
# figures, so within one unit of the third figure: cards truncate as well as round) and in
# the model cards: Qwen2.5-7B "Number of Parameters: 7.61B,
# Non-Embedding: 6.53B"; Llama 3 Herd (arXiv 2407.21783) names 405B; Mistral AI's
# Mixtral 8x22B announcement (mistral.ai/news/mixtral-8x22b, April 2024): "39B active
# parameters out of 141B".
PUBLISHED = [("llama3.1-8b", 8.03e9), ("llama3.1-70b", 70.6e9), ("llama3.1-405b", 406e9),
             ("llama3.2-1b", 1.24e9), ("llama3.2-3b", 3.21e9), ("qwen2.5-7b", 7.61e9),
             ("qwen2.5-72b", 72.7e9), ("mistral-7b", 7.24e9), ("gemma2-9b", 9.24e9),
             ("gemma2-27b", 27.2e9), ("mixtral-8x22b", 141e9), ("phi3-mini", 3.82e9), ("phi4", 14.7e9)]


@pytest.mark.parametrize("slug, published", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_published_size(slug, published):
    last_figure = 10 ** (math.floor(math.log10(published)) - 2)
    assert_close(count_params(spec(slug)).total, published, {"abs": last_figure}, slug)


def test_deepseek_v3_published_totals():
    """DeepSeek-V3: "671B total parameters with 37B activated for each token" (DeepSeek-V3
    Technical Report, arXiv 2412.19437, abstract); the weights' documentation
    (github.com/deepseek-ai/DeepSeek-V3, README_WEIGHTS.md) gives the main model 671B total
    and "36.6B (including 0.9B for the output Head)" activated: the input embedding, a
    lookup, is left out of the activated figure. The multi-token-prediction module
    (11.5B more, 685B on the Hub) is not in transformers' model, nor here."""
    pc = count_params(spec("deepseek-v3"))
    assert_close(pc.total, 671e9, {"abs": 0.5e9}, "total")
    assert_close(pc.active - pc.embedding, 36.6e9, {"abs": 0.05e9}, "activated")
    assert_close(pc.output_head, 0.9e9, {"abs": 0.05e9}, "head")
    assert 36.5e9 <= pc.active - pc.embedding < 37.5e9          # "37B"


def test_deepseek_v2_lite_published_totals():
    """DeepSeek-V2-Lite model card: "15.7B parameters" of which "2.4B activated" (three
    figures, the input embedding left out as for V3)."""
    pc = count_params(spec("deepseek-v2-lite"))
    assert_close(pc.total, 15.7e9, {"abs": 0.05e9}, "total")
    assert 2.4e9 <= pc.active - pc.embedding < 2.5e9


def test_mla_and_shared_experts_by_hand():
    """One MoE block with MLA, small enough to count by hand (transformers'
    DeepseekV3Attention / DeepseekV3MoE modules): h=8, 2 heads, q_lora_rank 4, kv_lora_rank
    6, qk_nope 3, qk_rope 2, v 5; 4 routed experts of 2 (top 2), 1 shared of 2, gated.
    q_a 8*4 + q_a_layernorm 4 + q_b 4*2*5 = 76; kv_a 8*(6+2) + kv_a_layernorm 6 +
    kv_b 6*2*(3+5) = 166; o 2*5*8 = 80 -> attention 322. Expert 3*8*2 = 48: routed 4*48,
    shared 48, router 8*4 = 32 -> 272; 2 norms 16. MoE block 610, active 322 + 2*48 +
    48 + 32 + 16 = 514. A dense first block: 322 + 3*8*16 + 16 = 722."""
    base = dict(num_layers=2, hidden_size=8, num_attention_heads=2, ffn_hidden_size=16,
                vocab_size=10, num_experts=4, moe_top_k=2, moe_ffn_hidden_size=2,
                num_shared_experts=1, q_lora_rank=4, kv_lora_rank=6, qk_nope_head_dim=3,
                qk_rope_head_dim=2, v_head_dim=5)
    pc = count_params(ModelSpec.from_dict(base))
    rest = 80 + 80 + 8
    assert pc.total == 2 * 610 + rest and pc.active == 2 * 514 + rest
    pc = count_params(ModelSpec.from_dict({**base, "first_dense_layers": 1}))
    assert pc.first_layer == 722 and pc.largest_layer == 722
    assert pc.total == 722 + 610 + rest and pc.per_layer == (722 + 610) / 2
    assert pc.active == 722 + 514 + rest
    no_q = count_params(ModelSpec.from_dict({**base, "q_lora_rank": None}))
    assert no_q.total == pc.total - 722 - 610 + 2 * (610 - 76 + 8 * 2 * 5)


@pytest.mark.parametrize("change, field", [
    (dict(num_experts=1, moe_top_k=1), "model.moe_ffn_hidden_size"),
    (dict(first_dense_layers=3), "model.first_dense_layers"),
    (dict(kv_lora_rank=None), "model.q_lora_rank"),
    (dict(v_head_dim=None), "model.v_head_dim"),
    (dict(num_shared_experts=-1), "model.num_shared_experts"),
    (dict(sliding_window_layers="alternate"), "model.sliding_window_layers"),
    (dict(sliding_window=4, sliding_window_layers="every"), "model.sliding_window_layers"),
    (dict(sliding_window=0), "model.sliding_window"),
])
def test_new_layout_errors_name_the_field(change, field):
    base = dict(num_layers=2, hidden_size=8, num_attention_heads=2, ffn_hidden_size=16,
                vocab_size=10, num_experts=4, moe_top_k=2, moe_ffn_hidden_size=2,
                num_shared_experts=1, q_lora_rank=4, kv_lora_rank=6, qk_nope_head_dim=3,
                qk_rope_head_dim=2, v_head_dim=5)
    d = {k: v for k, v in {**base, **change}.items() if v is not None}
    with pytest.raises(ScenarioError) as e:
        ModelSpec.from_dict(d)
    assert e.value.field == field


def test_new_layout_fields_omitted_at_default():
    d = spec("llama3.1-8b").to_dict()
    assert {"moe_ffn_hidden_size", "num_shared_experts", "first_dense_layers", "q_lora_rank",
            "kv_lora_rank", "sliding_window", "sliding_window_layers"}.isdisjoint(d)
    for slug in ("deepseek-v3", "deepseek-v2-lite", "gemma2-9b", "mistral-7b"):
        assert ModelSpec.from_dict(spec(slug).to_dict()) == spec(slug)


def test_mixtral_8x22b_active():
    assert_close(count_params(spec("mixtral-8x22b")).active, 39e9, {"abs": 1e9}, "active")


def test_qwen25_7b_non_embedding():
    pc = count_params(spec("qwen2.5-7b"))
    assert_close(pc.total - pc.embedding - pc.output_head, 6.53e9, {"abs": 0.01e9}, "non-embedding")


def test_new_fields_by_hand():
    # 1 layer, h=8, 2 heads of head_dim 6 (q width 12 != h), 1 KV head, f=16, gated, v=10,
    # untied, RMSNorm. q 8*12 + k 8*6 + v 8*6 + o 12*8 = 288; q/k/v biases 12 + 6 + 6 = 24;
    # MLP 3*8*16 = 384; 4 norms 4*8 = 32 -> block 728; embedding 80 + head 80 + final norm 8.
    m = ModelSpec.from_dict(dict(num_layers=1, hidden_size=8, num_attention_heads=2, num_kv_heads=1,
                                 head_dim=6, qkv_bias=True, norms_per_block=4, ffn_hidden_size=16,
                                 vocab_size=10))
    pc = count_params(m)
    assert pc.per_layer == 728
    assert pc.total == 728 + 168
    assert pc.largest_module == 8 * 16


def test_defaults_leave_counts_and_json_unchanged():
    # head_dim None = h / heads, qkv_bias None = linear_bias, norms_per_block None = 2: the
    # GPT-3 block (biases everywhere, LayerNorm) keeps 12h^2 + 13h.
    h = 12288
    m = spec("gpt3-175b")
    assert count_params(m).per_layer == 12 * h * h + 13 * h
    assert {"head_dim", "qkv_bias", "norms_per_block"}.isdisjoint(m.to_dict())
    explicit = ModelSpec.from_dict({**MODELS["gpt3-175b"], "head_dim": 128, "qkv_bias": True,
                                    "norms_per_block": 2})
    assert count_params(explicit) == count_params(m)


def test_head_dim_lifts_the_divisibility_rule():
    base = dict(num_layers=1, hidden_size=3072, num_attention_heads=20, ffn_hidden_size=8,
                vocab_size=8)
    with pytest.raises(ScenarioError, match="head_dim"):
        ModelSpec.from_dict(base)
    assert ModelSpec.from_dict({**base, "head_dim": 256}).attention_width == 5120
    with pytest.raises(ScenarioError, match="model.qkv_bias"):
        ModelSpec.from_dict({**base, "head_dim": 256, "qkv_bias": 1})


class _Sc:
    def __init__(self, m, **tr):
        self.model = m
        self.training = type("T", (), dict(micro_batch_size=1, sequences_per_micro_batch=1, seq_len=8, local_seq_len=8, context_parallel=1,
                                           tensor_parallel=1, recompute="none", lora=None,
                                           flash_attention=False, **tr))()


@pytest.mark.parametrize("case", CASES, ids=[c["preset"] for c in CASES])
def test_param_tensors_per_layer(case):
    # e.g. Qwen2 block: q, k, v, o, gate, up, down (7) + q/k/v biases (3) + 2 RMSNorms = 12;
    # Gemma 2: 7 + 4 RMSNorms = 11; Falcon-7B: fused QKV, dense, 2 MLP (4) + 1 LayerNorm
    # (weight, bias) = 6; Mixtral: 4 + 8 x 3 experts + router + 2 norms = 31; Phi-3: qkv_proj,
    # o_proj, gate_up_proj, down_proj + 2 norms = 6.
    assert step.param_tensors_per_layer(_Sc(spec(case["preset"])), "first") == case["per_layer_tensors"]


def test_attention_flops_use_heads_times_head_dim():
    # Gemma-7B: QK^T and PV are 2 x 2*s*s*(16*256) per sequence, not 4*s*s*3072.
    m = spec("gemma-7b")
    pc = count_params(m)
    fl = step.layer_flops(_Sc(m), pc)
    norms = 2 * 3072
    assert fl["fwd"] == 2 * (pc.per_layer_active - norms) * 8 + 4 * 8 * 8 * 16 * 256


def test_new_fields_round_trip_json():
    for slug in ("gemma2-9b", "qwen2.5-7b", "falcon-7b", "phi4"):
        m = spec(slug)
        assert ModelSpec.from_dict(m.to_dict()) == m
    assert spec("falcon-7b").to_dict()["norms_per_block"] == 1


def test_work_model_gemms_use_head_dim(monkeypatch):
    # Gemma-7B, one sequence of 8 tokens: the fused q/k/v GEMM is 8 x (16 + 2*16)*256 x 3072
    # and the output projection 8 x 3072 x 16*256 (not 8 x 9216 x 3072 and 8 x 3072 x 3072).
    from simulation import compute
    from simulation.scenario import Scenario
    sc = Scenario.from_dict({"model": {"preset": "gemma-7b"}, "cluster": {"node": "dgx-h100"},
                             "training": {"seq_len": 8, "micro_batch_size": 1, "global_batch_size": 8,
                                          "flash_attention": True}})
    shapes = []
    real = compute.gemm_s
    monkeypatch.setattr(compute, "gemm_s", lambda m, n, k, *a: shapes.append((m, n, k)) or real(m, n, k, *a))
    compute._layer_times_of(sc.model, sc.training, sc.cluster.accelerator, count_params(sc.model))
    assert (8, 48 * 256, 3072) in shapes
    assert (8, 3072, 16 * 256) in shapes


@pytest.mark.parametrize("slug", sorted(MODELS))
def test_every_model_preset_evaluates(slug):
    import simulation
    from simulation.scenario import Scenario
    sc = Scenario.from_dict({"model": {"preset": slug}, "cluster": {"node": "dgx-h100", "num_nodes": 8},
                             "training": {"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 64,
                                          "flash_attention": True, "recompute": "full"},
                             "strategy": {"kind": "zero3"}})
    d = simulation.evaluate(sc).to_dict()
    assert d["step"]["available"] and d["step"]["time_s"] > 0
