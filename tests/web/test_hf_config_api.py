"""POST /api/v1/models/from-hf-config/: a pasted config.json as a scenario's model section."""

import json
from pathlib import Path

import pytest

from simulation import evaluate_dict
from simulation.presets import MODELS

URL = "/api/v1/models/from-hf-config/"
CONFIGS = Path(__file__).parents[1] / "data" / "hf_configs"
pytestmark = pytest.mark.django_db


def config(slug: str) -> dict:
    return json.loads((CONFIGS / f"{slug}.json").read_text())["config"]


def test_it_returns_the_model_section_and_the_ignored_keys(owner_api):
    r = owner_api.post(URL, {"config": config("qwen2.5-7b")}, format="json")
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"model", "ignored", "notes"}
    preset = MODELS["qwen2.5-7b"]
    for key in ("num_layers", "hidden_size", "num_kv_heads", "ffn_hidden_size", "vocab_size", "qkv_bias"):
        assert body["model"][key] == preset[key], key
    assert "rope_theta" in body["ignored"] and "hidden_size" not in body["ignored"]


def test_the_model_section_evaluates_as_the_preset(owner_api):
    model = owner_api.post(URL, {"config": config("gemma2-9b")}, format="json").json()["model"]
    cluster = {"node": "dgx-h100", "gpus_per_node": 1}
    imported = evaluate_dict({"model": model, "cluster": cluster})
    preset = evaluate_dict({"model": {"preset": "gemma2-9b"}, "cluster": cluster})
    assert imported["memory"] == preset["memory"]


def test_the_files_text_is_accepted(owner_api):
    text = (CONFIGS / "falcon-7b.json").read_text()
    r = owner_api.post(URL, {"config": json.dumps(json.loads(text)["config"])}, format="json")
    assert r.status_code == 200 and r.json()["model"]["norms_per_block"] == 1


@pytest.mark.parametrize("body, field", [
    ({"config": {**config("llama3.1-8b"), "num_attention_heads": 33}}, "config.num_attention_heads"),
    ({"config": {**config("llama3.1-8b"), "model_type": "bert"}}, "config.model_type"),
    ({"config": {"model_type": []}}, "config.model_type"),        # was a 500 (unhashable)
    ({"config": {"model_type": {"a": 1}}}, "config.model_type"),
    ({"config": "not json"}, "config"),
    ({"config": [1]}, "config"),
    ({"config": {"x": "y" * 70_000}}, "config"),
    ({"config": config("llama3.1-8b"), "name": "x"}, "name"),
    ({}, "config"),
])
def test_bad_input_is_a_400_naming_the_field(owner_api, body, field):
    r = owner_api.post(URL, body, format="json")
    assert r.status_code == 400
    assert list(r.json()) == [field]


def test_every_bad_key_is_named_at_once(owner_api):
    """Three bad keys: a 400 naming each (the first alone was), in the API's shape."""
    body = {"config": {**config("llama3.1-8b"), "hidden_size": "4096", "hidden_act": "tanh",
                       "attention_dropout": 2}}
    r = owner_api.post(URL, body, format="json")
    assert r.status_code == 400
    assert r.json() == {"config.hidden_size": ['must be a whole number, got "4096"'],
                        "config.hidden_act": [r.json()["config.hidden_act"][0]],
                        "config.attention_dropout": ["must be a probability between 0 and 1, got 2"]}
    assert r.json()["config.hidden_act"][0].startswith("must be one of silu")


def test_a_cross_key_error_is_named_beside_a_bad_key(owner_api):
    """heads that do not divide hidden_size are named with a bad vocab_size, not after it."""
    body = {"config": {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
                       "num_attention_heads": 33, "num_hidden_layers": 32, "vocab_size": -5}}
    r = owner_api.post(URL, body, format="json")
    assert r.status_code == 400
    assert list(r.json()) == ["config.vocab_size", "config.num_attention_heads"]


def test_it_needs_a_login(anon_api):
    assert anon_api.post(URL, {"config": config("llama3.1-8b")}, format="json").status_code in (401, 403)


def test_deepseek_v3_config_is_the_preset_in_memory_and_step_time(owner_api):
    r = owner_api.post(URL, {"config": config("deepseek-v3")}, format="json")
    assert r.status_code == 200
    body = r.json()
    for key in ("num_experts", "moe_top_k", "moe_ffn_hidden_size", "num_shared_experts",
                "first_dense_layers", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                "qk_rope_head_dim", "v_head_dim"):
        assert body["model"][key] == MODELS["deepseek-v3"][key], key
    assert any(n.startswith("num_nextn_predict_layers") for n in body["notes"])
    cluster = {"node": "dgx-h100", "num_nodes": 16}
    training = {"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 128,
                "flash_attention": True, "recompute": "full"}
    imported = evaluate_dict({"model": body["model"], "cluster": cluster, "training": training,
                              "strategy": {"kind": "zero3"}})
    preset = evaluate_dict({"model": {"preset": "deepseek-v3"}, "cluster": cluster, "training": training,
                            "strategy": {"kind": "zero3"}})
    assert imported["memory"] == preset["memory"] and imported["model"]["num_params"] == 671026404352
    assert imported["step"]["time_s"] == preset["step"]["time_s"]
