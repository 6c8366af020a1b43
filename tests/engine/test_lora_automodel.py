"""NeMo AutoModel's own LoRA and Liger's fused RMSNorm: what they keep for backward.

Sources: NeMo AutoModel ``nemo_automodel/components/_peft/lora.py`` at commit 507bfb75
(the commit its performance table cites) and in the 0.2.0 release that the measurement
ran (``LinearLoRA.forward``: ``res = F.linear(x, W, b)``; ``lora_res =
lora_B(lora_A(x) * scale)``; dropout on ``x`` when ``dropout_position`` is "pre", on
``lora_res`` when "post", the default; adapters in the base weight's dtype);
``nemo_automodel/_transformers/auto_model.py`` (``use_liger_kernel=True`` by default,
turned off with TP or CP); Liger-Kernel 0.8.5 ``liger_kernel/ops/rms_norm.py``
(``ctx.save_for_backward(X, W, RSTD)``, RSTD fp32 per row in the llama casting mode) and
``ops/swiglu.py`` (``ctx.save_for_backward(a, b)``). Measurements:
``tests/data/saved_tensors_lora_automodel.json``
(``scripts/measure_saved_tensors_lora_automodel.py``).
"""

import json
from pathlib import Path

import pytest

from simulation import evaluate_dict
from simulation.activations import CPU, CUDA, ActivationShape, layer_bytes
from simulation.errors import ScenarioError
from simulation.lora import LoraSpec, adapter_activation_bytes, adapter_elementwise_elements
from simulation.scenario import Scenario
from tests.engine.test_qlora import _small_model as _model

DATA = json.loads((Path(__file__).parent.parent / "data" / "saved_tensors_lora_automodel.json").read_text())
CASES = {c["id"]: c for c in DATA["cases"]}
FROZEN = CASES["llama-eager-frozen-b2-s64-h128-a4-kv4-ffn344"]
ALL = ["q", "k", "v", "o", "gate", "up", "down"]


def _scenario(lora=None, model=None, **training):
    tr = {"micro_batch_size": 1, "seq_len": 2048, "recompute": "none", **training}
    if lora is not None:
        tr["lora"] = lora
    return {"model": model or {"preset": "llama2-7b"},
            "cluster": {"node": "dgx-h100", "num_nodes": 1, "gpus_per_node": 1},
            "training": tr, "strategy": {"kind": "ddp"}}


def test_the_data_says_what_it_was_measured_with():
    assert set(DATA["versions"]) >= {"torch", "transformers", "nemo_automodel"}
    assert DATA["device"] == "cpu" and DATA["dtype"] == "bfloat16"


def test_the_frozen_layer_of_this_run_is_the_engine_s_frozen_layer():
    cfg = FROZEN["config"]
    x = ActivationShape(seq_len=cfg["s"], micro_batch=cfg["b"], hidden=cfg["h"], heads=cfg["a"],
                        kv_heads=cfg["kv"], ffn=cfg["ffn"], gated_mlp=True, dropout=False,
                        framework="huggingface", norm="rmsnorm", frozen=True)
    assert layer_bytes(x, CPU) == FROZEN["layer_bytes"]


@pytest.mark.parametrize("case_id", [i for i in CASES if "-automodel-" in i])
def test_automodel_adapters_save_what_the_engine_counts(case_id):
    """The layer's bytes minus the frozen layer's are the adapters', to the byte (eager
    attention: o_proj's input is a tensor of its own; CPU dropout masks are bf16, 2 B)."""
    c = CASES[case_id]
    cfg = c["config"]
    assert c["adapter_dtypes"] == ["bfloat16"]          # lora_dtype None: the base's dtype
    lora = LoraSpec(rank=cfg["r"], dropout=cfg["dropout"], targets=tuple(cfg["targets"]),
                    implementation="automodel", dropout_position=cfg["position"])
    added = adapter_activation_bytes(_model(cfg), lora, cfg["b"] * cfg["s"], 2, mask_bytes=2)
    assert added == c["layer_bytes"] - FROZEN["layer_bytes"]


def test_automodel_saves_far_less_than_peft_without_dropout_and_more_with_post_dropout():
    # b x s = 128 tokens, h = 128, f = 344, r = 8, all seven targets, eager attention:
    # distinct inputs: the first norm's output (q, k, v), o's, the second's (gate, up) and
    # down's (f wide): 128 x (3 x 128 + 344) x 2 B = 186,368; lora_B's inputs 7 x 128 x 8 x 2
    # = 14,336 -> 200,704 B. PEFT's: an input copy per target, 128 x (6 x 128 + 344) x 2 =
    # 284,672, the same lora_A outputs, and autocast's 16-bit weight casts.
    m = _model(dict(h=128, a=4, kv=4, ffn=344))
    am = LoraSpec(rank=8, targets=tuple(ALL), implementation="automodel")
    assert adapter_activation_bytes(m, am, 128, 2) == 186_368 + 14_336
    peft = LoraSpec(rank=8, targets=tuple(ALL))
    assert adapter_activation_bytes(m, peft, 128, 2) > 284_672 + 14_336
    # post dropout on CUDA: a 1-byte mask per element of each d_out-wide adapter output:
    # q, k, v, o 128 each, gate and up 344, down 128 = 1,328 a token
    post = LoraSpec(rank=8, dropout=0.1, targets=tuple(ALL), implementation="automodel")
    assert adapter_activation_bytes(m, post, 128, 2, mask_bytes=1) == 200_704 + 128 * 1_328


def test_flash_attention_s_output_is_the_out_projection_s_input():
    # FlashAttention keeps its (b, s, heads, d) output, which o_proj reads as it is:
    # lora_A on o adds no copy of it (simulation/activations.py _hf_attention)
    m = _model(dict(h=128, a=4, kv=4, ffn=344))
    o = LoraSpec(rank=8, targets=("o",), implementation="automodel")
    assert adapter_activation_bytes(m, o, 128, 2) == 128 * 128 * 2 + 128 * 8 * 2
    assert adapter_activation_bytes(m, o, 128, 2, o_input_kept=True) == 128 * 8 * 2
    flash = evaluate_dict(_scenario({"rank": 8, "targets": ["o"], "implementation": "automodel"},
                                    flash_attention=True))
    eager = evaluate_dict(_scenario({"rank": 8, "targets": ["o"], "implementation": "automodel"}))

    def adapters(r):
        return sum(p["bytes"] for p in r["memory"]["per_gpu"]["hbm"]["parts"]
                   if p["name"].startswith("LoRA adapter activations"))
    # Llama 2 7B, 2048 tokens: 32 layers x 2048 x 4096 x 2 B of o's input, eager only
    assert adapters(eager) - adapters(flash) == 32 * 2048 * 4096 * 2


def test_llama31_8b_lora_at_automodel_s_benchmark_shape_by_hand():
    """Llama 3.1 8B, micro-batch 2 x 4096 (8,192 tokens), r 16 on all seven matrices,
    dropout 0.1 post, bf16 on CUDA: per layer the inputs 8192 x (2 x 4096 + 14336) x 2 B
    = 369,098,752 (q, k, v share the first norm's output, gate and up the second's, down
    reads the 14336-wide product; o reads FlashAttention's output, kept anyway), lora_B's inputs 7 x 8192 x 16 x 2 = 1,835,008 and the 1-byte masks on
    the outputs, 8192 x (4096 + 1024 + 1024 + 4096 + 14336 + 14336 + 4096) = 352,321,536."""
    m = Scenario.from_dict(_scenario(model={"preset": "llama3.1-8b"})).model
    lora = LoraSpec(rank=16, dropout=0.1, targets=tuple(ALL), implementation="automodel")
    got = adapter_activation_bytes(m, lora, 8192, 2, mask_bytes=1, o_input_kept=True)
    assert got == 369_098_752 + 1_835_008 + 352_321_536


def test_automodel_adapters_are_the_base_s_dtype_with_no_master_copy():
    r = evaluate_dict(_scenario({"rank": 16, "targets": ALL, "implementation": "automodel"}))
    names = [p["name"] for p in r["memory"]["per_gpu"]["hbm"]["parts"]]
    assert any(n.startswith("bf16 LoRA adapter parameters") for n in names), names
    assert not any("master" in n for n in names), names
    peft = evaluate_dict(_scenario({"rank": 16, "targets": ALL}))
    assert any(n.startswith("fp32 LoRA adapter parameters")
               for n in (p["name"] for p in peft["memory"]["per_gpu"]["hbm"]["parts"]))


@pytest.mark.parametrize("lora,field", [
    ({"implementation": "unsloth"}, "training.lora.implementation"),
    ({"dropout_position": "post"}, "training.lora.dropout_position"),
    ({"dropout_position": "middle", "implementation": "automodel"}, "training.lora.dropout_position"),
    ({"implementation": "automodel", "base_dtype": "nf4"}, "training.lora.base_dtype"),
])
def test_bad_lora_implementation_fields_are_named(lora, field):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(_scenario(lora))
    assert e.value.field == field


def test_the_defaults_leave_older_lora_json_unchanged():
    sc = Scenario.from_dict(_scenario({"rank": 8}))
    assert sc.training.to_dict()["lora"] == {"rank": 8, "dropout": 0.0, "targets": ["q", "v"]}
    assert "fused_norm" not in sc.training.to_dict()
    am = Scenario.from_dict(_scenario({"rank": 8, "implementation": "automodel",
                                       "dropout_position": "pre"}))
    assert Scenario.from_dict(_scenario(am.training.to_dict()["lora"])).training.lora == am.training.lora


# ---------------------------------------------------------------- Liger's fused RMSNorm

def _llama_layer(**kw):
    return ActivationShape(seq_len=4096, micro_batch=1, hidden=4096, heads=32, kv_heads=8,
                           ffn=14336, gated_mlp=True, dropout=False, flash_attention=True,
                           framework="huggingface", norm="rmsnorm", **kw)


@pytest.mark.parametrize("frozen", [False, True])
def test_liger_rmsnorm_keeps_its_16_bit_input_and_an_fp32_rstd(frozen):
    """transformers' LlamaRMSNorm keeps an fp32 copy of its input (4 B) and, trained, the
    16-bit normalised value (2 B); Liger's keeps the 16-bit input (2 B) and the same fp32
    rstd per token: 2 B (trained: 4 B) less per element and norm, two norms a block."""
    sbh = 4096 * 4096
    saved = 2 * (2 if frozen else 4) * sbh
    assert (layer_bytes(_llama_layer(frozen=frozen), CUDA)
            - layer_bytes(_llama_layer(frozen=frozen, fused_norm=True), CUDA)) == saved


def test_a_frozen_llama_layer_with_liger_kernels_by_hand():
    """Frozen Llama 3 8B layer, 4096 tokens, FlashAttention, Liger RMSNorm and SwiGLU:
    norms 2 x (2 B x sbh + 4 B x sb); Q, K, V 2 x (4096 + 1024 + 1024) x sb, output
    2 x 4096 x sb, logsumexp 4 x 32 x sb; SwiGLU's gate and up 2 x 2 x 14336 x sb (Liger's
    LigerSiLUMulFunction keeps a and b; a frozen down_proj keeps no input)."""
    sb = 4096
    want = (2 * (2 * 4096 + 4) + 2 * (4096 + 1024 + 1024) + 2 * 4096 + 4 * 32
            + 2 * 2 * 14336) * sb
    got = layer_bytes(_llama_layer(frozen=True, fused_norm=True, fused_mlp_activation=True), CUDA)
    assert got == want


def test_fused_norm_reaches_the_memory_report():
    base = evaluate_dict(_scenario({"rank": 8}, model={"preset": "llama3.1-8b"}, flash_attention=True))
    liger = evaluate_dict(_scenario({"rank": 8}, model={"preset": "llama3.1-8b"}, flash_attention=True,
                                    fused_norm=True))

    def acts(r):
        return r["memory"]["per_gpu"]["hbm"]["activations_bytes"]
    # 32 layers x 2 norms x 2 B x 2048 x 4096, and the final norm's 2 B x 2048 x 4096
    assert acts(base) - acts(liger) == (32 * 2 + 1) * 2 * 2048 * 4096


def test_the_export_names_automodel_s_peft_config():
    from simulation.export import deepspeed_config
    sc = Scenario.from_dict({**_scenario({"rank": 16, "alpha": 32, "dropout": 0.1, "targets": ["q", "v"],
                                          "implementation": "automodel"}),
                             "strategy": {"kind": "zero2"}})
    (note,) = [n for n in deepspeed_config(sc)["_tierlab_notes"] if n.startswith("LoRA")]
    assert "nemo_automodel.components._peft.lora.PeftConfig, dim: 16, alpha: 32" in note
    assert "dropout: 0.1, dropout_position: post" in note and "'q_proj', 'v_proj'" in note
    assert "LoraConfig" not in note


# ---------------------------------------------------------------- element-wise kernels

ELEMENTWISE = json.loads((Path(__file__).parent.parent / "data" / "lora_elementwise_automodel.json").read_text())


def _one_target(c):
    """A one-layer model whose target ``t`` has the measured Linear's (d_in, d_out)."""
    d_in, d_out = c["d_in"], c["d_out"]
    if d_in == d_out:        # q: h -> heads x head_dim
        return _model(dict(h=d_in, a=4, kv=4, ffn=4 * d_in)), "q"
    if d_out > d_in:         # gate: h -> f
        return _model(dict(h=d_in, a=4, kv=4, ffn=d_out)), "gate"
    return _model(dict(h=d_out, a=4, kv=4, ffn=d_in)), "down"      # down: f -> h


def test_the_elementwise_data_says_what_it_was_measured_with():
    assert set(ELEMENTWISE["versions"]) >= {"torch", "nemo_automodel"}
    bases = [c for c in ELEMENTWISE["cases"] if not c["config"]["lora"]]
    assert bases and all(c["forward_bytes"] == c["backward_bytes"] == 0 for c in bases)


@pytest.mark.parametrize("i", [i for i, c in enumerate(ELEMENTWISE["cases"]) if c["config"]["lora"]])
def test_automodel_elementwise_bytes_as_measured(i):
    """LinearLoRA's element-wise aten ops, forward and backward, to the byte: the frozen
    Linear alone moves none (its GEMMs are apart), so all of it is the adapter's."""
    c = ELEMENTWISE["cases"][i]
    cfg = c["config"]
    m, target = _one_target(cfg)
    lora = LoraSpec(rank=cfg["r"], targets=(target,), implementation="automodel")
    fwd, bwd = adapter_elementwise_elements(m, lora, cfg["tokens"])
    assert (2 * fwd, 2 * bwd) == (c["forward_bytes"], c["backward_bytes"])


def test_peft_elementwise_by_hand():
    # q and v of Llama 2 7B (4096 -> 4096), 2048 tokens, fp32 adapters under autocast:
    # forward 3 + 3 (casts) + 2 (scaling) + 3 (sum) = 11 x 4096 a token and target;
    # backward 3 + 3 + 2 + 3 (the sum of x's gradients) = 11 x 4096; dropout on the fp32
    # input adds 4.5 x 4096 each way; 16-bit adapters (no casts): 5 and 5 x 4096
    m = Scenario.from_dict(_scenario()).model
    qv = LoraSpec(rank=8, targets=("q", "v"))
    assert adapter_elementwise_elements(m, qv, 2048) == (2 * 2048 * 11 * 4096,) * 2
    drop = LoraSpec(rank=8, dropout=0.05, targets=("q", "v"))
    assert adapter_elementwise_elements(m, drop, 2048) == (2 * 2048 * 15.5 * 4096,) * 2
    assert adapter_elementwise_elements(m, qv, 2048, casts=False) == (2 * 2048 * 5 * 4096,) * 2


def test_automodel_post_dropout_passes_by_hand():
    # one target 4096 -> 4096, r 16: forward 2 r + 3 d_out + CUDA native_dropout's 2.5 d_out
    # (read, write, 1-byte mask), fused into the sum's kernel by torch.compile (0.5 d_out:
    # the mask); backward 2 r + 3 d_in + the dropout's gradient 2.5 d_out
    m = Scenario.from_dict(_scenario()).model
    lo = LoraSpec(rank=16, dropout=0.1, targets=("q",), implementation="automodel")
    assert adapter_elementwise_elements(m, lo, 1) == (32 + 5.5 * 4096, 32 + 5.5 * 4096)
    assert adapter_elementwise_elements(m, lo, 1, compiled=True) == (32 + 3.5 * 4096, 32 + 5.5 * 4096)


def test_liger_kernels_shorten_the_eager_memory_bound_work():
    """transformers' eager LlamaRMSNorm moves 18 passes of b x s x h forward and 48
    backward (measured: tests/data/eager_passes_llama.json), Liger's one kernel 2 and 3
    (simulation/compute.py PASSES); SwiGLU eager 5 and 9 passes of b x s x f, Liger's 3 and 5. Llama 3.1 8B, 2048 tokens, 2 B an element, the
    H100's HBM share."""
    from simulation.compute import GPU_FIGURES, layer_times
    from simulation.params import model_params
    kw = dict(model={"preset": "llama3.1-8b"}, flash_attention=True)
    plain = Scenario.from_dict(_scenario(**kw))
    liger = Scenario.from_dict(_scenario(**kw, fused_norm=True, fused_mlp_activation=True))
    pc = model_params(plain.model)
    tp, tl = layer_times(plain, pc), layer_times(liger, pc)
    hbm = 3350e9 * GPU_FIGURES["h100-sxm5-80gb"].hbm_fraction
    tok, h, f = 2048, 4096, 14336
    fwd = (2 * (18 - 2) * tok * h + (5 - 3) * tok * f) * 2 / hbm
    bwd = (2 * (48 - 3) * tok * h + (9 - 5) * tok * f) * 2 / hbm
    assert tp["fwd_s"] - tl["fwd_s"] == pytest.approx(fwd)
    assert tp["bwd_s"] - tl["bwd_s"] == pytest.approx(bwd)


def test_the_run_note_says_whose_lora_it_counts():
    def note(lora):
        r = evaluate_dict(_scenario(lora))
        (n,) = [n for n in r["notes"] if n.startswith("LoRA:")]
        return n
    peft = note({"rank": 8})
    assert "in fp32 under torch AMP, as PEFT keeps them" in peft and "PEFT's cast" in peft
    am = note({"rank": 8, "dropout": 0.1, "implementation": "automodel"})
    assert "AutoModel casts nothing" in am and "PEFT" not in am
    assert "in bf16, updated in place (no master copy)" in am and "mask (on the output)" in am
    r = evaluate_dict(_scenario({"rank": 8, "implementation": "automodel"}))
    assert r["model"]["lora_implementation"] == "automodel"
