"""POST /api/v1/estimate/: the engine's report, synchronously."""

import pytest

URL = "/api/v1/estimate/"
pytestmark = pytest.mark.django_db


def test_it_returns_the_report(owner_api, example_spec):
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 200
    report = r.json()
    assert report["fits"] is True
    assert report["memory"]["per_gpu"]["hbm"]["total_bytes"] > 0
    assert not report.get("step")                     # memory only: the fast path


def test_it_simulates_the_step_when_asked(owner_api, example_spec):
    r = owner_api.post(URL, {"scenario": example_spec, "include_step": True}, format="json")
    assert r.status_code == 200 and r.json()["step"]["time_s"] > 0
    assert r.json()["timeline"] == {}                 # the page's Gantt data only on request
    r = owner_api.post(URL, {"scenario": example_spec, "include_step": True, "detail": True}, format="json")
    assert r.json()["timeline"]["tasks"] and r.json()["checkpoint"]["monte_carlo"]
    r = owner_api.post(URL, {"scenario": example_spec, "detail": True}, format="json")   # implies the step
    assert r.json()["step"]["time_s"] > 0 and r.json()["timeline"]["tasks"]


def test_an_unknown_request_key_is_a_400_naming_it(owner_api, example_spec):
    r = owner_api.post(URL, {"scenario": example_spec, "includ_step": True}, format="json")
    assert r.status_code == 400
    assert r.json() == {"includ_step": ["unknown field; known fields: scenario, include_step, detail, step_if_within_limit"]}


def test_a_scenario_given_as_text_that_is_not_json_says_what_is_wanted(owner_api):
    r = owner_api.post(URL, {"scenario": "hello"}, format="json")
    assert r.status_code == 400
    assert r.json()["scenario"][0].startswith("must be a JSON object (the scenario); this text is not JSON")


def test_it_reports_an_overflow_as_a_result(owner_api, example_spec):
    example_spec["strategy"] = {"kind": "ddp"}
    example_spec["model"] = {"preset": "llama2-70b"}
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 200
    assert r.json()["fits"] is False and r.json()["violations"]


def test_it_names_the_bad_field(owner_api, example_spec):
    example_spec["training"]["micro_batch_size"] = 0
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 400
    assert list(r.json()) == ["scenario.training.micro_batch_size"]


def test_it_names_every_bad_field_at_once(owner_api, example_spec):
    example_spec["training"]["micro_batch_size"] = 0
    example_spec["training"]["seq_len"] = -1
    example_spec["strategy"]["kind"] = "zero9"
    example_spec["cluster"]["num_nodes"] = "two"
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 400
    assert sorted(r.json()) == ["scenario.cluster.num_nodes", "scenario.strategy.kind",
                                "scenario.training.micro_batch_size", "scenario.training.seq_len"]
    assert r.json()["scenario.training.seq_len"] == ["must be at least 1, got -1"]
    # saving says the same
    r = owner_api.post("/api/v1/scenarios/", {"name": "x", "scenario": example_spec}, format="json")
    assert r.status_code == 400 and len(r.json()) == 4, r.json()


def test_a_custom_accelerator_names_every_missing_and_bad_field_at_once(owner_api, example_spec):
    # an inline accelerator without a preset, two required figures left out and one bad,
    # with a bad cluster field beside it: all four in one 400, not one per request
    example_spec["cluster"] = {"gpus_per_node": 1, "num_nodes": "two", "accelerator": {
        "name": "my card", "hbm_capacity_bytes": 24 * 2**30, "hbm_bytes_per_s": -1,
        "peak_flops_bf16": 1.5e14, "host_link_bytes_per_s": 32e9}}
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 400
    assert sorted(r.json()) == ["scenario.cluster.accelerator.hbm_bytes_per_s",
                                "scenario.cluster.accelerator.peak_flops_fp32",
                                "scenario.cluster.accelerator.scaleup_bytes_per_s",
                                "scenario.cluster.num_nodes"], r.json()
    assert r.json()["scenario.cluster.accelerator.peak_flops_fp32"] == ["is required"]


def test_it_requires_the_scenario(owner_api):
    r = owner_api.post(URL, {}, format="json")
    assert r.status_code == 400 and "scenario" in r.json()


def test_it_rejects_malformed_json(owner_api):
    r = owner_api.post(URL, data="{", content_type="application/json")
    assert r.status_code == 400 and "body" in r.json()


def test_it_requires_login(anon_api, example_spec):
    assert anon_api.post(URL, {"scenario": example_spec}, format="json").status_code == 401


def test_it_uses_a_preset_edited_a_moment_ago(owner_api, example_spec, catalog):
    """The preset tables are cached per process, keyed by each table's count and last edit."""
    from tierlab.catalog.models import ModelPreset

    before = owner_api.post(URL, {"scenario": example_spec}, format="json").json()
    preset = ModelPreset.objects.get(slug=example_spec["model"]["preset"])
    preset.spec = {**preset.spec, "num_layers": preset.spec["num_layers"] * 2}
    preset.save()
    after = owner_api.post(URL, {"scenario": example_spec}, format="json").json()
    assert after["memory"]["per_gpu"]["hbm"]["total_bytes"] != before["memory"]["per_gpu"]["hbm"]["total_bytes"]
    preset.delete()
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 400 and "unknown" in str(r.json())


def test_it_accepts_lora_and_names_a_bad_lora_field(owner_api, example_spec):
    """issue #14: ``training.lora`` was refused as an unknown field."""
    example_spec["strategy"] = {"kind": "ddp"}
    full = owner_api.post(URL, {"scenario": example_spec}, format="json").json()
    example_spec["training"]["lora"] = {"rank": 16, "alpha": 32, "targets": ["q", "k", "v", "o"]}
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 200
    hbm, full_hbm = r.json()["memory"]["per_gpu"]["hbm"], full["memory"]["per_gpu"]["hbm"]
    assert hbm["optimizer_bytes"] < 0.01 * full_hbm["optimizer_bytes"]     # adapters only
    assert any(p["name"].startswith("bf16 frozen base parameters") for p in hbm["parts"])
    example_spec["training"]["lora"]["targets"] = ["q", "attn"]
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 400
    assert list(r.json()) == ["scenario.training.lora.targets[1]"]


def test_it_accepts_fp8_and_names_a_bad_fp8_field(owner_api, example_spec):
    """issue #15: ``training.fp8`` (Transformer Engine under Megatron, torchao otherwise)."""
    example_spec["strategy"] = {"kind": "ddp"}
    example_spec["training"].update(framework="megatron", fp8={"recipe": "delayed"})
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 200
    names = [p["name"] for p in r.json()["memory"]["per_gpu"]["hbm"]["parts"]]
    assert any(n.startswith("FP8 weight row-wise and transposed copies") for n in names)
    assert any(n.startswith("FP8 scaling state") for n in names)
    example_spec["training"]["fp8"] = {"recipe": "tensorwise", "amax_history_len": 16}
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 400 and list(r.json()) == ["scenario.training.fp8.amax_history_len"]
    example_spec["training"]["fp8"] = {"recipe": "delayed"}
    example_spec["cluster"] = {"accelerator": "a100-sxm4-80gb", "gpus_per_node": 1}
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 400 and list(r.json()) == ["scenario.training.fp8"]


def test_it_accepts_preference_tuning_and_names_a_bad_reference(owner_api, example_spec):
    """issue #14: ``training.preference`` (DPO): a separate reference copies the model in
    16-bit; adapters_off without LoRA is a 400 naming the field."""
    example_spec["strategy"] = {"kind": "ddp"}
    example_spec["training"]["preference"] = {"method": "dpo", "reference": "separate"}
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 200, r.json()
    body = r.json()
    ref = [p for p in body["memory"]["per_gpu"]["hbm"]["parts"]
           if p["name"].startswith("reference model weights")]
    assert len(ref) == 1 and ref[0]["bytes"] == 2 * body["model"]["num_params"]
    example_spec["training"]["preference"]["reference"] = "adapters_off"
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 400
    assert list(r.json()) == ["scenario.training.preference.reference"]


def test_it_accepts_layer_selective_recompute_and_names_a_bad_one(owner_api, example_spec):
    """issue #15: ``training.recompute_every`` (torchtitan every k-th layer)."""
    example_spec["training"].update(recompute="full", recompute_every=2)
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 200, r.json()
    assert r.json()["scenario"]["training"]["recompute_every"] == 2
    example_spec["training"]["recompute"] = "none"
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 400
    assert list(r.json()) == ["scenario.training.recompute_every"]


def test_uneven_pipeline_stages_through_the_api(owner_api, example_spec):
    """Issue #15: an uneven split (Megatron --decoder-first/last-pipeline-num-layers) is
    accepted and every stage's memory comes back; a bad list names its element."""
    example_spec["model"] = {"preset": "llama2-70b"}
    example_spec["cluster"] = {"node": "dgx-h100", "num_nodes": 4}
    example_spec["strategy"] = {"kind": "zero1"}
    example_spec["training"] = {"micro_batch_size": 1, "seq_len": 4096, "global_batch_size": 64,
                                "tensor_parallel": 8, "pipeline_parallel": 4, "sequence_parallel": True,
                                "recompute": "selective", "flash_attention": True,
                                "first_pipeline_layers": 18, "last_pipeline_layers": 18}
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 200
    rows = r.json()["memory"]["per_stage"]
    # the two 22-layer middle stages peak in the optimizer step with the same bytes: one row
    assert [(s["stages"], s["layers"]) for s in rows] == [("0", 18), ("1-2", 22), ("3", 18)]
    assert r.json()["memory"]["stage_index"] == 1
    del example_spec["training"]["first_pipeline_layers"], example_spec["training"]["last_pipeline_layers"]
    example_spec["training"]["pipeline_layers"] = [20, 20, "x", 20]
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 400 and list(r.json()) == ["scenario.training.pipeline_layers[2]"]


def test_it_accepts_qlora_and_names_a_bad_qlora_field(owner_api, example_spec):
    """issue #14: a 4-bit NF4 base with double quantisation and a paged 8-bit optimizer."""
    example_spec["strategy"] = {"kind": "ddp"}
    example_spec["training"]["optimizer"] = "paged_adamw_8bit"
    example_spec["training"]["lora"] = {"rank": 16, "targets": ["q", "v"], "base_dtype": "nf4",
                                        "double_quant": True}
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 200
    names = [p["name"] for p in r.json()["memory"]["per_gpu"]["hbm"]["parts"]]
    assert "nf4 frozen base matrices" in names
    assert any(n.startswith("quantisation constants (double-quantised") for n in names)
    example_spec["training"]["lora"]["quant_block_size"] = 100
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 400
    assert list(r.json()) == ["scenario.training.lora.quant_block_size"]


@pytest.mark.parametrize("field", ["cluster.num_nodes", "training.seq_len", "training.global_batch_size"])
@pytest.mark.parametrize("sign", [1, -1])
def test_an_integer_past_floats_range_is_a_400_naming_the_field(owner_api, example_spec, field, sign):
    # JSON allows 4,300 digits; float() of 10**309 is an OverflowError (it was a 500)
    section, key = field.split(".")
    example_spec.setdefault(section, {})[key] = sign * 10 ** 309
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 400, r.content[:200]
    assert list(r.json()) == [f"scenario.{field}"]
    assert "e+309 (an integer of 310 digits)" in r.json()[f"scenario.{field}"][0]


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_a_report_json_cannot_hold_is_a_400_naming_the_scenario(owner_api, example_spec, monkeypatch, value):
    """A report holding inf or NaN (RFC 8259 section 6 permits neither) made DRF's renderer
    raise ValueError "Out of range float values are not JSON compliant": a 500. The engine
    rejects the inputs known to make one (a NIC of 1e-300 B/s); any other is a 400."""
    import simulation

    class Report:
        def to_dict(self):
            return {"fits": True, "memory": {"per_gpu": {"hbm": {"total_bytes": value}}}}

    monkeypatch.setattr(simulation, "evaluate", lambda *a, **k: Report())
    r = owner_api.post(URL, {"scenario": example_spec}, format="json")
    assert r.status_code == 400
    (message,) = r.json()["scenario"]
    assert "memory.per_gpu.hbm.total_bytes = " in message and "JSON" in message


def test_an_error_shows_the_characters_of_a_value_not_escapes(owner_api):
    # simulation.fields.show: letters of any script and emoji as themselves; control
    # characters stay escaped
    spec = {"model": {"preset": "ллама-🦙"}, "cluster": {"node": "dgx-h100"}}
    r = owner_api.post(URL, {"scenario": spec}, format="json")
    assert r.status_code == 400
    assert r.json()["scenario.model.preset"][0].startswith('unknown model preset "ллама-🦙"; known:')
    r = owner_api.post(URL, {"scenario": dict(spec, model={"preset": "a\u0007b"})}, format="json")
    assert r.json()["scenario.model.preset"][0].startswith('unknown model preset "a\\u0007b"')
    # a key the body refuses (tierlab/api.py) likewise
    r = owner_api.post(URL, {"scenario": {**spec, "ключ\x00": 1}}, format="json")
    assert r.status_code == 400 and r.json()["scenario"][0].startswith('the key "ключ\\u0000" contains')
