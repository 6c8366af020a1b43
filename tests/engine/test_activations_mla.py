"""Latent attention, routed + shared experts and dense first blocks held to what PyTorch
saves in transformers' DeepseekV3DecoderLayer.

``tests/data/saved_tensors_hf_mla.json`` was recorded by
``scripts/measure_saved_tensors_mla.py`` (saved_tensors_hooks around one layer on the CPU,
bf16; versions in the file). Each layer must be within 5 % of the engine's
``huggingface`` terms with the CPU kernel traits, as tests/engine/test_activations_measured.py
holds the Llama, GPT-2 and Mixtral layers.
"""

import dataclasses
import json
from pathlib import Path

import pytest

from simulation.activations import CPU, CUDA, ActivationShape, layer_bytes, layer_terms
from simulation.memory import _shape
from simulation.presets import MODELS
from simulation.scenario import ModelSpec, Scenario

DATA = json.loads((Path(__file__).parent.parent / "data" / "saved_tensors_hf_mla.json").read_text())
CASES = {c["id"]: c for c in DATA["cases"]}
TOLERANCE = 0.05


def shape(p: dict, **over) -> ActivationShape:
    moe = p["block"] == "moe"
    kw = dict(seq_len=p["s"], micro_batch=p["b"], hidden=p["h"], heads=p["a"], kv_heads=p["a"],
              ffn=p["ffn"], gated_mlp=True, framework="huggingface", norm="rmsnorm", dropout=False,
              flash_attention=p["attn"] == "sdpa", num_experts=p["experts"] if moe else 1,
              top_k=p["top_k"] if moe else 1, moe_ffn=p["moe_ffn"] if moe else None,
              shared_ffn=p["shared"] * p["moe_ffn"] if moe else 0,
              q_lora_rank=p["q_lora"], kv_lora_rank=p["kv_lora"], qk_head_dim=p["nope"] + p["rope"],
              qk_rope_head_dim=p["rope"], v_head_dim=p["v"])
    kw.update(over)
    return ActivationShape(**kw)


def test_the_data_says_what_it_was_measured_with():
    assert DATA["device"] == "cpu" and DATA["dtype"] == "bfloat16"
    assert DATA["versions"]["transformers"] >= "4.57"
    assert {c["config"]["attn"] for c in DATA["cases"]} == {"sdpa", "eager"}
    assert {c["config"]["block"] for c in DATA["cases"]} == {"moe", "dense"}


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_deepseek_layer_within_5_percent(case_id):
    case = CASES[case_id]
    x = shape(case["config"])
    got = layer_bytes(x, CPU)
    err = got / case["layer_bytes"] - 1
    assert abs(err) <= TOLERANCE, (f"{case_id}: engine {got:.0f} B vs measured {case['layer_bytes']} B "
                                   f"({err:+.1%}); terms {layer_terms(x, CPU)}")


def test_latent_terms_are_the_measured_tensors():
    # q_a_layernorm and kv_a_layernorm: fp32 input + rsqrt + 16-bit normalised value, and
    # q_b_proj / kv_b_proj's input: exactly the measured tensors of those modules
    case = CASES["deepseek_v3-sdpa-moe-s64-q_lora96-kv_lora64-v32-shared1"]
    measured = sum(t["storage_bytes"] for t in case["tensors"]
                   if t["module"].startswith(("self_attn.q_a_layernorm", "self_attn.kv_a_layernorm",
                                              "self_attn.q_b_proj", "self_attn.kv_b_proj"))
                   and t["kind"] == "activation")
    terms = layer_terms(shape(case["config"]), CPU)
    assert (terms["latent RMSNorms (kv_a_layernorm, q_a_layernorm)"]
            + terms["normalised latents (kv_b_proj, q_b_proj inputs)"]) == measured


def test_cuda_sdpa_keeps_16_bit_qkv_not_the_math_kernel():
    # on CUDA the memory-efficient kernel takes v narrower than q/k: no fp32 Q/K/V, no scores
    p = CASES["deepseek_v3-sdpa-moe-s128-q_lora96-kv_lora64-v32-shared1"]["config"]
    cuda = layer_terms(shape(p), CUDA)
    assert "Q, K, V (fp32, math kernel)" not in cuda and "logsumexp (fp32)" in cuda
    # Q and K of heads x (nope + rope); V a view of kv_b_proj's heads x (nope + v) output
    a, qk, v, sb = p["a"], p["nope"] + p["rope"], p["v"], p["s"] * p["b"]
    assert cuda["Q, K, V"] == 2 * a * (2 * qk + p["nope"] + v) * sb


def test_dense_first_layers_weigh_the_mean_layer():
    p = CASES["deepseek_v3-sdpa-moe-s64-q_lora96-kv_lora64-v32-shared1"]["config"]
    moe = layer_bytes(shape(p), CPU)
    dense = layer_bytes(shape(dict(p, block="dense")), CPU)
    mixed = layer_bytes(shape(p, dense_share=0.25), CPU)
    assert mixed == pytest.approx(0.75 * moe + 0.25 * dense)


def test_scenario_shape_from_the_deepseek_preset():
    # DeepSeek-V3 with pipeline parallel 4: the first stage holds 61/4 = 15.25 layers, of
    # which the first 3 are dense (first_k_dense_replace): dense share 3/15.25
    sc = Scenario.from_dict({"model": {"preset": "deepseek-v3"}, "cluster": {"node": "dgx-h100", "num_nodes": 8},
                             "training": {"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 64,
                                          "pipeline_parallel": 4, "flash_attention": True}})
    x = _shape(sc.model, sc.training, "none")
    assert x.dense_share == pytest.approx(3 / 15.25)
    assert (x.moe_ffn, x.shared_ffn, x.q_lora_rank, x.kv_lora_rank, x.qk_head_dim, x.v_head_dim) == \
        (2048, 2048, 1536, 512, 192, 128)
    sc1 = Scenario.from_dict({**sc.to_dict(), "training": {**sc.to_dict()["training"], "pipeline_parallel": 1}})
    assert _shape(sc1.model, sc1.training, "none").dense_share == pytest.approx(3 / 61)


def test_report_names_the_layout():
    import simulation
    sc = Scenario.from_dict({"model": {"preset": "deepseek-v2-lite"}, "cluster": {"node": "dgx-h100"},
                             "training": {"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 64,
                                          "flash_attention": True}, "strategy": {"kind": "zero3"}})
    parts = simulation.evaluate(sc).to_dict()["memory"]["per_gpu"]["hbm"]["parts"]
    note = next(p["note"] for p in parts if p["name"].startswith("activations ("))
    # 1 of 27 blocks dense; 6 routed + 2 shared experts; MLA
    assert "4% dense" in note and "6 routed + 2 shared" in note and "latent attention" in note
