"""Parameter counts against published exact counts (Llama 2, GPT-3, Mixtral)."""

import pytest

from simulation.params import count_params
from simulation.presets import MODELS
from simulation.scenario import ModelSpec
from tests.refdata import assert_close, cases, ids

LLAMA = cases("llama2_configs")
PRESET_OF = {"Llama 2 7B": "llama2-7b", "Llama 2 13B": "llama2-13b", "Llama 2 70B": "llama2-70b"}


def preset(name):
    return ModelSpec.from_dict(dict(MODELS[name]))


@pytest.mark.parametrize("case", LLAMA, ids=ids(LLAMA))
def test_llama2_exact_counts(case):
    exp = case["expected"]
    m = preset(PRESET_OF[case["inputs"]["model"]])
    assert (m.num_layers, m.hidden_size, m.ffn_hidden_size) == (exp["layers"], exp["hidden"], exp["ffn"])
    assert (m.num_attention_heads, m.num_kv_heads, m.vocab_size) == (exp["heads"], exp["kv_heads"], exp["vocab"])
    pc = count_params(m)
    assert pc.total == exp["params_exact_untied"]
    assert pc.embedding == exp["embedding_params"]
    assert pc.largest_module == exp["largest_module_params"]


def test_gpt3_175b_gpt2_style_count():
    case = cases("gpt3_brown2020", "gpt3_175B")[0]
    exp = case["expected"]
    m = preset("gpt3-175b")
    assert (m.num_layers, m.hidden_size, m.num_attention_heads) == (exp["n_layers"], exp["d_model"], exp["n_heads"])
    assert count_params(m).total == exp["params_exact_gpt2_style_tied"]


def test_mixtral_total_and_active():
    case = cases("mixtral_2024")[0]
    exp = case["expected"]
    pc = count_params(preset("mixtral-8x7b"))
    assert pc.total == exp["params_exact_untied"]
    assert_close(pc.total, exp["total_params_published"], case["tolerance"], "total")
    assert_close(pc.active, exp["active_params_published"], {"rel": 0.005}, "active")


def test_hand_counted_tiny_model():
    # 2 layers, h=8, 2 heads (head_dim 4), 1 KV head (GQA), f=16, gated, v=10, untied, RMSNorm.
    # attention: q 8*8 + k 8*4 + v 8*4 + o 8*8 = 192; MLP 3*8*16 = 384; norms 2*8 = 16
    # per layer 592; embedding 80 + head 80 + final norm 8 -> 2*592 + 168 = 1352
    m = ModelSpec.from_dict(dict(num_layers=2, hidden_size=8, num_attention_heads=2, num_kv_heads=1,
                                 ffn_hidden_size=16, vocab_size=10, gated_mlp=True))
    pc = count_params(m)
    assert pc.per_layer == 592
    assert pc.total == 1352


def test_num_params_only_is_taken_as_given():
    m = ModelSpec.from_dict(dict(num_params=7_000_000_000, num_layers=32, hidden_size=4096))
    pc = count_params(m)
    assert pc.total == 7_000_000_000 and not pc.exact
