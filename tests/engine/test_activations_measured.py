"""Activation terms held to what PyTorch itself saves for backward.

``tests/data/saved_tensors_hf.json`` was recorded by ``scripts/measure_saved_tensors.py``
(``saved_tensors_hooks`` around one transformers decoder layer on the CPU, bf16; the
versions are in the file). The tests read it; they do not measure. Each layer must be
within 5 % of the engine's ``huggingface`` stack with the CPU kernel traits; the CUDA
traits must differ from the measurement exactly by the documented corrections.
"""

import json
from pathlib import Path

import pytest

from simulation.activations import CPU, CUDA, ActivationShape, layer_bytes, layer_terms
from simulation.errors import ScenarioError
from simulation.evaluate import evaluate
from simulation.scenario import Scenario

DATA = json.loads((Path(__file__).parent.parent / "data" / "saved_tensors_hf.json").read_text())
CASES = {c["id"]: c for c in DATA["cases"]}
TOLERANCE = 0.05


def shape(cfg: dict, **over) -> ActivationShape:
    gpt2 = cfg["arch"] == "gpt2"
    kw = dict(seq_len=cfg["s"], micro_batch=cfg["b"], hidden=cfg["h"], heads=cfg["a"],
              kv_heads=cfg["kv"], ffn=cfg["ffn"], gated_mlp=not gpt2, framework="huggingface",
              norm="layernorm" if gpt2 else "rmsnorm", dropout=False,
              attention_dropout=cfg.get("attn_dropout", 0) > 0,
              hidden_dropout=cfg.get("hidden_dropout", 0) > 0,
              fused_mlp_activation=cfg.get("act") == "gelu_pytorch_tanh",
              num_experts=cfg.get("experts", 1), top_k=cfg.get("top_k", 1),
              flash_attention=cfg["attn"] == "sdpa", recompute=cfg.get("recompute", "none"))
    kw.update(over)
    return ActivationShape(**kw)


def ids_for(arch, attn=None):
    return [i for i, c in CASES.items()
            if c["config"]["arch"] == arch and attn in (None, c["config"]["attn"])]


def check(case_id, kernels=CPU):
    case = CASES[case_id]
    got = layer_bytes(shape(case["config"]), kernels)
    err = got / case["layer_bytes"] - 1
    assert abs(err) <= TOLERANCE, (
        f"{case_id}: engine {got:.0f} B vs measured {case['layer_bytes']} B ({err:+.1%}); "
        f"terms {layer_terms(shape(case['config']), kernels)}")


def test_the_data_says_what_it_was_measured_with():
    assert DATA["device"] == "cpu" and DATA["dtype"] == "bfloat16"
    assert set(DATA["versions"]) == {"torch", "transformers", "python"}
    archs = {(c["config"]["arch"], c["config"]["attn"]) for c in DATA["cases"]}
    assert archs == {(a, k) for a in ("llama", "gpt2", "mixtral") for k in ("sdpa", "eager")}


@pytest.mark.parametrize("case_id", ids_for("llama", "sdpa"))
def test_llama_sdpa_layer_within_5_percent(case_id):
    check(case_id)


@pytest.mark.parametrize("case_id", ids_for("llama", "eager"))
def test_llama_eager_layer_within_5_percent(case_id):
    check(case_id)


@pytest.mark.parametrize("case_id", ids_for("gpt2"))
def test_gpt2_layer_within_5_percent(case_id):
    check(case_id)


@pytest.mark.parametrize("case_id", ids_for("mixtral"))
def test_mixtral_layer_within_5_percent(case_id):
    check(case_id)


def _mask_bytes(case):
    return sum(t["storage_bytes"] for t in case["tensors"] if t["function"] == "dropout")


def _sdpa_dropout(case):
    return case["config"]["attn"] == "sdpa" and case["config"].get("attn_dropout")


@pytest.mark.parametrize("case_id", [i for i, c in CASES.items() if _mask_bytes(c) and not _sdpa_dropout(c)])
def test_cuda_masks_are_one_byte_where_cpu_keeps_the_dtype(case_id):
    # CPU's dropout keeps a bf16 noise tensor (2 B per element); CUDA's native_dropout a
    # bool mask (1 B): the CUDA figure is the measurement less half its mask bytes.
    case = CASES[case_id]
    x = shape(case["config"])
    cuda = case["layer_bytes"] - _mask_bytes(case) / 2
    # layer_norm's mean/rstd are fp32 on CUDA, bf16 on CPU: per token, not per element
    stats = 2 * 2 * (CUDA.norm_stat_bytes - CPU.norm_stat_bytes) * x.seq_len * x.micro_batch
    if x.norm == "layernorm":
        cuda += stats
    assert layer_bytes(x, CUDA) == pytest.approx(cuda, rel=0.01)


@pytest.mark.parametrize("case_id", [i for i, c in CASES.items() if _sdpa_dropout(c)])
def test_sdpa_dropout_on_cuda_saves_what_it_saves_without(case_id):
    # On the CPU, SDPA with dropout runs the fp32 math kernel (the measurement shows
    # BmmBackward / SafeSoftmaxBackward, fp32, and no flash node); on CUDA FlashAttention
    # regenerates the mask, so the layer saves what the same layer saves without dropout.
    case = CASES[case_id]
    fns = {t["dtype"] for t in case["tensors"] if t["function"] == "scaled_dot_product_attention"}
    assert fns == {"float32"}
    twin = dict(case["config"], attn_dropout=0.0)
    without = shape(twin)
    assert layer_bytes(shape(case["config"]), CUDA) == pytest.approx(layer_bytes(without, CUDA))


@pytest.mark.parametrize("case_id", [i for i, c in CASES.items() if c["config"].get("recompute") == "full"])
def test_full_recompute_keeps_the_layer_input(case_id):
    case = CASES[case_id]
    assert [t["kind"] for t in case["tensors"]] == ["layer_input"]
    check(case_id)


# ---------------------------------------------------------------- through a scenario
def scenario(kind="zero3", **training):
    return Scenario.from_dict({
        "model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100", "gpus_per_node": 8},
        "training": {"micro_batch_size": 1, "seq_len": 2048, **training},
        "strategy": {"kind": kind}})


def activation_part(sc):
    hbm = evaluate(sc).to_dict()["memory"]["per_gpu"]["hbm"]
    return [p for p in hbm["parts"] if p["name"].startswith("activations (")][0]


def test_a_scenario_uses_the_huggingface_terms_by_default():
    sc = scenario()
    assert sc.training.framework == "huggingface" and sc.training.fused_mlp_activation is False
    x = ActivationShape(seq_len=2048, micro_batch=1, hidden=4096, heads=32, kv_heads=32,
                        ffn=11008, gated_mlp=True, dropout=False, framework="huggingface",
                        norm="rmsnorm")
    assert activation_part(sc)["bytes"] == pytest.approx(32 * layer_bytes(x))
    assert "transformers" in activation_part(sc)["note"]


def test_megatron_framework_keeps_korthikanti():
    sc = scenario(framework="megatron")
    assert sc.training.fused_mlp_activation is True
    x = ActivationShape(seq_len=2048, micro_batch=1, hidden=4096, heads=32, kv_heads=32,
                        ffn=11008, gated_mlp=True, dropout=False)
    assert activation_part(sc)["bytes"] == pytest.approx(32 * layer_bytes(x))
    assert "Korthikanti" in activation_part(sc)["note"]


def test_megatron_parallelism_picks_megatron_unless_told():
    assert scenario(tensor_parallel=2).training.framework == "megatron"
    assert scenario("zero1", pipeline_parallel=2).training.framework == "megatron"
    told = scenario(tensor_parallel=2, framework="huggingface").training
    assert told.framework == "huggingface" and told.fused_mlp_activation is False


def test_dropout_settings_default_to_dropout_and_round_trip():
    sc = Scenario.from_dict({"model": {"preset": "gpt3-6.7b"}, "cluster": {"node": "dgx-h100"},
                             "training": {"micro_batch_size": 1, "seq_len": 2048}})
    assert sc.model.attention_dropout is True and sc.model.hidden_dropout is True
    d = sc.to_dict()
    d["model"]["attention_dropout"] = False
    again = Scenario.from_dict(d)
    assert again.model.attention_dropout is False and again.model.hidden_dropout is True
    assert Scenario.from_dict(again.to_dict()) == again


@pytest.mark.parametrize("section,key,value", [
    ("training", "framework", "deepspeed"), ("training", "fused_mlp_activation", "yes"),
    ("model", "attention_dropout", 0.1), ("model", "hidden_dropout", "no")])
def test_bad_values_name_their_field(section, key, value):
    d = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100"}, "training": {}}
    d[section][key] = value
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.field == f"{section}.{key}"


# ---------------------------------------------------------------- fp32 training
# ``saved_tensors_hf_fp32.json``: the same script with ``--dtype float32`` (fp32 weights
# and activations, as fp32 training runs), recorded with transformers 4.31, which has
# GPT2Block and LlamaDecoderLayer with eager attention only (no SDPA there, no Mixtral).
FP32_DATA = json.loads((Path(__file__).parent.parent / "data" / "saved_tensors_hf_fp32.json").read_text())
FP32_CASES = {c["id"]: c for c in FP32_DATA["cases"]}


def test_the_fp32_data_says_what_it_was_measured_with():
    assert FP32_DATA["device"] == "cpu" and FP32_DATA["dtype"] == "float32"
    assert FP32_DATA["versions"]["transformers"] == "4.31.0"
    assert {(c["config"]["arch"], c["config"]["attn"]) for c in FP32_DATA["cases"]} == {
        ("llama", "eager"), ("gpt2", "eager")}


@pytest.mark.parametrize("case_id", list(FP32_CASES))
def test_fp32_layer_within_5_percent(case_id):
    case = FP32_CASES[case_id]
    x = shape(case["config"], activation_bytes=4)
    got = layer_bytes(x, CPU)
    err = got / case["layer_bytes"] - 1
    assert abs(err) <= TOLERANCE, (case_id, got, case["layer_bytes"], layer_terms(x, CPU))
    # counted as a 16-bit layer (the old engine) it misses far more than the tolerance
    assert layer_bytes(shape(case["config"]), CPU) < (1 - 3 * TOLERANCE) * case["layer_bytes"]


def test_fp32_rmsnorm_keeps_its_input_and_output_in_fp32_without_an_extra_copy():
    # LlamaRMSNorm in fp32: to(float32) is a no-op; pow keeps x (4 B), rsqrt its per-token
    # result (4 B), weight * x its normalised value (4 B): 8*s*b*h + 4*s*b per norm,
    # where bf16 keeps an fp32 copy beside a 16-bit value (6*s*b*h + 4*s*b).
    b, s, h = 2, 64, 128
    x = shape(FP32_CASES["llama-eager-b2-s64-h128-a4-kv4-ffn344"]["config"], activation_bytes=4)
    assert layer_terms(x, CPU)["norms (2)"] == 2 * (8 * s * b * h + 4 * s * b)
    rows = FP32_CASES["llama-eager-b2-s64-h128-a4-kv4-ffn344"]["tensors"]
    norm = [t for t in rows if t["module"].endswith("layernorm") and t["kind"] != "parameter"]
    assert sum(t["storage_bytes"] for t in norm) == 2 * (8 * s * b * h + 4 * s * b)


def test_fp32_eager_softmax_is_kept_once():
    # Llama's eager attention upcasts the softmax to fp32 and keeps a 16-bit copy; in fp32
    # the upcast is a no-op and the one fp32 tensor is all there is: 4*a*s^2*b.
    cfg = FP32_CASES["llama-eager-b2-s64-h128-a4-kv4-ffn344"]["config"]
    a, s, b = cfg["a"], cfg["s"], cfg["b"]
    terms = layer_terms(shape(cfg, activation_bytes=4), CPU)
    assert terms["attention scores (softmax, dropout)"] == 4 * a * s * s * b
    rows = FP32_CASES["llama-eager-b2-s64-h128-a4-kv4-ffn344"]["tensors"]
    assert sum(t["storage_bytes"] for t in rows if t["shape"] == [b, a, s, s]
               or t["shape"] == [b * a, s, s]) == 4 * a * s * s * b


def test_old_transformers_per_layer_rope_tables_are_listed_apart():
    # transformers 4.31 indexes cos/sin by position inside each layer (a [b, 1, s, d] copy
    # each); newer versions make them once per model, which is what the engine counts.
    case = FP32_CASES["llama-eager-b2-s64-h128-a4-kv4-ffn344"]
    b, s, d = 2, 64, 128 // 4
    assert case["rope_table_bytes"] == 2 * 4 * b * s * d
    assert all(t["shape"] == [b, 1, s, d] for t in case["tensors"] if t["kind"] == "rope_table")


def test_an_fp32_scenario_counts_fp32_activations():
    bf16 = activation_part(scenario())
    fp32 = activation_part(scenario(precision="fp32"))
    x = ActivationShape(seq_len=2048, micro_batch=1, hidden=4096, heads=32, kv_heads=32,
                        ffn=11008, gated_mlp=True, dropout=False, framework="huggingface",
                        norm="rmsnorm", activation_bytes=4)
    assert fp32["bytes"] == pytest.approx(32 * layer_bytes(x))
    # eager attention at s = 2048 is mostly scores: 4 + 2 B (fp32 softmax and its 16-bit
    # copy) per score in bf16, 4 B in fp32; everything else doubles
    assert fp32["bytes"] != pytest.approx(bf16["bytes"])
