"""Eager PyTorch's element-wise work in transformers' Llama layer, as measured.

``simulation/compute.py`` counts the memory-bound kernels of a layer in passes over its
tensors (``PASSES``). For the eager stack on transformers' modules those counts are held
here against the bytes every element-wise aten op of a bf16 ``LlamaDecoderLayer`` reads
and writes, forward and backward (``scripts/measure_eager_passes.py``, torch 2.13 on the
CPU: ``tests/data/eager_passes_llama.json`` with eager attention, transformers 4.31;
``eager_passes_llama_sdpa.json`` with SDPA, transformers 4.57.3; autograd's derivative
formulas are the same aten ops on CUDA), and TorchInductor's fused kernels the same way
(``scripts/measure_compiled_passes.py``, ``compiled_passes_llama*.json``). Unit: one pass
= one read or write of a 16-bit tensor of b x s x h elements.
"""

import json
from pathlib import Path

import pytest

from simulation.compute import GPU_FIGURES, PASSES, layer_times
from simulation.params import model_params
from simulation.scenario import Scenario

_DIR = Path(__file__).parent.parent / "data"
DATA = json.loads((_DIR / "eager_passes_llama.json").read_text())
SDPA = json.loads((_DIR / "eager_passes_llama_sdpa.json").read_text())
EAGER_CASES = [(c, False) for c in DATA["cases"]] + [(c, True) for c in SDPA["cases"]]
EAGER = PASSES["pytorch_eager"]
HBM = 3350e9 * GPU_FIGURES["h100-sxm5-80gb"].hbm_fraction


def _passes(case, part, unit_elements):
    p = case["parts"][part]
    return p["forward_bytes"] / (2 * unit_elements), p["backward_bytes"] / (2 * unit_elements)


def _scenario(p, **training):
    return Scenario.from_dict({
        "model": dict(name="small", num_layers=1, hidden_size=p["h"], num_attention_heads=p["a"],
                      num_kv_heads=p["kv"], ffn_hidden_size=p["ffn"], vocab_size=128, gated_mlp=True,
                      tied_embeddings=False, position_embedding="rope", norm="rmsnorm",
                      linear_bias=False, dropout=False, max_seq_len=1024),
        "cluster": {"node": "dgx-h100", "num_nodes": 1, "gpus_per_node": 1},
        "training": {"micro_batch_size": p["b"], "seq_len": p["s"], "recompute": "none",
                     "framework": "huggingface", **training},
        "strategy": {"kind": "ddp"}})


def test_the_data_says_what_it_was_measured_with():
    for d in (DATA, SDPA):
        assert set(d["versions"]) >= {"torch", "transformers"}
        assert d["device"] == "cpu" and d["dtype"] == "bfloat16"
    assert all(c["config"].get("attn", "eager") == "eager" for c in DATA["cases"])
    assert all(c["config"]["attn"] == "sdpa" for c in SDPA["cases"])


@pytest.mark.parametrize("i", range(len(EAGER_CASES)))
def test_llama_rmsnorm_and_swiglu_passes_as_measured(i):
    """LlamaRMSNorm: 18 passes forward (to fp32, pow, mean, rsqrt, product, to bf16, scale),
    48 backward (44 with a frozen weight: no weight-gradient product and sum); SwiGLU (SiLU
    then the product): 5 passes of b x s x f forward, 9 backward, and autograd's sum of the
    gate and up projections' input gradients, 3 passes of b x s x h."""
    c, _ = EAGER_CASES[i]
    p = c["config"]
    sbh, sbf = p["b"] * p["s"] * p["h"], p["b"] * p["s"] * p["ffn"]
    for part, want in (("rmsnorm", EAGER["rmsnorm"]), ("rmsnorm_frozen", EAGER["rmsnorm_frozen"])):
        got = _passes(c, part, sbh)
        assert got == pytest.approx(want, rel=0.01), part
    fwd, bwd = _passes(c, "mlp", sbf)
    assert fwd == pytest.approx(EAGER["swiglu"][0], rel=0.01)
    assert bwd - 3 * sbh / sbf == pytest.approx(EAGER["swiglu"][1], rel=0.01)


@pytest.mark.parametrize("i", range(len(EAGER_CASES)))
def test_a_whole_eager_llama_layer_within_5_percent(i):
    """The engine's memory-bound work of the layer (norms, residual adds and forks, SwiGLU,
    rotary, the split projections' gradient sums, eager attention's contiguous copies) plus
    the eager softmax chain over the b x heads x s x s scores (none with SDPA, whose fused
    kernel is the attention core), against the measured layer."""
    c, sdpa = EAGER_CASES[i]
    p = c["config"]
    sc = _scenario(p, flash_attention=sdpa)
    parts = layer_times(sc, model_params(sc.model))["parts"]
    scores = 0 if sdpa else p["b"] * p["a"] * p["s"] ** 2
    fwd = parts["memory_bound"] * HBM / 2 + EAGER["softmax"][0] * scores
    bwd = parts["memory_bound_bwd"] * HBM / 2 + EAGER["softmax"][1] * scores
    layer = c["parts"]["layer"]
    assert 2 * fwd == pytest.approx(layer["forward_bytes"], rel=0.05)
    assert 2 * bwd == pytest.approx(layer["backward_bytes"], rel=0.05)


def test_the_softmax_chain_separates_by_sequence_length():
    """Self-attention at s = 64 and 128 (same b, h): the difference is the s x s work, 14
    passes of each score forward (the scale's division, the mask's sum, the fp32 upcast, the
    softmax and the cast back) plus the fp32 mask's read, and 14 backward."""
    short, long_ = (c for c in DATA["cases"] if c["config"]["kv"] == 4)
    p = short["config"]
    scores = [c["config"]["b"] * c["config"]["a"] * c["config"]["s"] ** 2 for c in (short, long_)]
    masks = [c["config"]["b"] * c["config"]["s"] ** 2 * 4 for c in (short, long_)]     # fp32, read once
    d_sbh = p["b"] * (long_["config"]["s"] - p["s"]) * p["h"]       # the s-linear work's growth
    lin_f = (short["parts"]["self_attn"]["forward_bytes"] - 2 * EAGER["softmax"][0] * scores[0]
             - masks[0]) / (2 * p["b"] * p["s"] * p["h"])
    grown = (long_["parts"]["self_attn"]["forward_bytes"] - short["parts"]["self_attn"]["forward_bytes"])
    assert grown == pytest.approx(2 * EAGER["softmax"][0] * (scores[1] - scores[0])
                                  + masks[1] - masks[0] + 2 * lin_f * d_sbh, rel=0.01)
    grown_b = (long_["parts"]["self_attn"]["backward_bytes"] - short["parts"]["self_attn"]["backward_bytes"])
    lin_b = (short["parts"]["self_attn"]["backward_bytes"] - 2 * EAGER["softmax"][1] * scores[0]) / (
        2 * p["b"] * p["s"] * p["h"])
    assert grown_b == pytest.approx(2 * EAGER["softmax"][1] * (scores[1] - scores[0]) + 2 * lin_b * d_sbh,
                                    rel=0.01)


# ---------------------------------------------------------------- torch.compile

COMPILED = json.loads((_DIR / "compiled_passes_llama.json").read_text())
COMPILED_SDPA = json.loads((_DIR / "compiled_passes_llama_sdpa.json").read_text())
COMPILED_CASES = COMPILED["cases"] + COMPILED_SDPA["cases"]
COMPILE = PASSES["torch_compile"]


def test_the_compiled_data_says_what_it_was_measured_with():
    for d in (COMPILED, COMPILED_SDPA):
        assert set(d["versions"]) >= {"torch", "transformers"}
        assert [c["config"]["s"] for c in d["cases"]] == [64, 128]


@pytest.mark.parametrize("i", range(len(COMPILED_CASES)))
def test_compiled_swiglu_and_norm_regions_as_measured(i):
    """TorchInductor (CPU kernels) on transformers' LlamaMLP: one kernel reads gate and up
    and writes the product (3 passes of b x s x f), backward 5, plus the sum of the gate and
    up projections' input gradients after their GEMMs (3 passes of b x s x h). The norm and
    residual regions (the layer less its MLP and attention): 2 x (residual 3 + norm 3)
    backward; forward 2 x (3 + 1), the measured kernels moving about 12 % more."""
    c = COMPILED_CASES[i]
    p = c["config"]
    sbh, sbf = p["b"] * p["s"] * p["h"], p["b"] * p["s"] * p["ffn"]
    fwd, bwd = _passes(c, "mlp", sbf)
    assert fwd == pytest.approx(COMPILE["swiglu"][0], rel=0.01)
    assert bwd - 3 * sbh / sbf == pytest.approx(COMPILE["swiglu"][1], rel=0.01)
    layer, mlp, attn = (_passes(c, k, sbh) for k in ("layer", "mlp", "self_attn"))
    regions = [layer[j] - mlp[j] - attn[j] for j in (0, 1)]
    assert regions[1] == pytest.approx(2 * (COMPILE["residual"][1] + COMPILE["rmsnorm"][1]), rel=0.02)
    assert regions[0] == pytest.approx(2 * (COMPILE["residual"][0] + COMPILE["rmsnorm"][0]), rel=0.15)


@pytest.mark.parametrize("i", range(len(COMPILED_CASES)))
@pytest.mark.xfail(strict=True, reason=(
    "compiled layer, forward (CPU kernels): with eager attention the measured kernels move 19.2 "
    "passes of b x s x h outside the s x s scores against the engine's rotary 4 (the layout "
    "copies torch.matmul needs), and 6.25 passes a score against 2 (the CPU code generator "
    "splits the softmax's reductions into kernels of their own); with SDPA 14.5 against 4: it "
    "lowers rotate_half's cat as kernels of its own (two halves written, then joined) before the "
    "product. Triton on a GPU fuses more; a GPU measurement is needed before these terms change "
    "(the backward, within 4 % with SDPA, is taken)"))
def test_compiled_attention_forward_within_10_percent(i):
    c = COMPILED_CASES[i]
    p = c["config"]
    sdpa = p.get("attn") == "sdpa"
    sc = _scenario(p, software_stack="torch_compile", flash_attention=sdpa)
    parts = layer_times(sc, model_params(sc.model))["parts"]
    scores = 0 if sdpa else p["b"] * p["a"] * p["s"] ** 2
    fwd = parts["memory_bound"] * HBM / 2 + COMPILE["softmax"][0] * scores
    assert 2 * fwd == pytest.approx(c["parts"]["layer"]["forward_bytes"], rel=0.10)


def test_compiled_sdpa_layer_backward_within_5_percent():
    for c in COMPILED_SDPA["cases"]:
        sc = _scenario(c["config"], software_stack="torch_compile", flash_attention=True)
        parts = layer_times(sc, model_params(sc.model))["parts"]
        assert parts["memory_bound_bwd"] * HBM == pytest.approx(c["parts"]["layer"]["backward_bytes"],
                                                                  rel=0.05)
