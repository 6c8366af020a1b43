"""Eager PyTorch's element-wise work in transformers' Llama layer, as measured.

``simulation/compute.py`` counts the memory-bound kernels of a layer in passes over its
tensors (``PASSES``). For the eager stack on transformers' modules those counts are held
here against the bytes every element-wise aten op of a bf16 ``LlamaDecoderLayer`` reads
and writes, forward and backward (``tests/data/eager_passes_llama.json``,
``scripts/measure_eager_passes.py``: torch 2.13, transformers 4.31, CPU; autograd's
derivative formulas are the same aten ops on CUDA). Unit: one pass = one read or write of
a 16-bit tensor of b x s x h elements.
"""

import json
from pathlib import Path

import pytest

from simulation.compute import GPU_FIGURES, PASSES, layer_times
from simulation.params import model_params
from simulation.scenario import Scenario

DATA = json.loads((Path(__file__).parent.parent / "data" / "eager_passes_llama.json").read_text())
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
    assert set(DATA["versions"]) >= {"torch", "transformers"}
    assert DATA["device"] == "cpu" and DATA["dtype"] == "bfloat16"


@pytest.mark.parametrize("i", range(len(DATA["cases"])))
def test_llama_rmsnorm_and_swiglu_passes_as_measured(i):
    """LlamaRMSNorm: 18 passes forward (to fp32, pow, mean, rsqrt, product, to bf16, scale),
    48 backward (44 with a frozen weight: no weight-gradient product and sum); SwiGLU (SiLU
    then the product): 5 passes of b x s x f forward, 9 backward, and autograd's sum of the
    gate and up projections' input gradients, 3 passes of b x s x h."""
    c = DATA["cases"][i]
    p = c["config"]
    sbh, sbf = p["b"] * p["s"] * p["h"], p["b"] * p["s"] * p["ffn"]
    for part, want in (("rmsnorm", EAGER["rmsnorm"]), ("rmsnorm_frozen", EAGER["rmsnorm_frozen"])):
        got = _passes(c, part, sbh)
        assert got == pytest.approx(want, rel=0.01), part
    fwd, bwd = _passes(c, "mlp", sbf)
    assert fwd == pytest.approx(EAGER["swiglu"][0], rel=0.01)
    assert bwd - 3 * sbh / sbf == pytest.approx(EAGER["swiglu"][1], rel=0.01)


@pytest.mark.parametrize("i", range(len(DATA["cases"])))
def test_a_whole_eager_llama_layer_within_5_percent(i):
    """The engine's memory-bound work of the layer (norms, residual adds and forks, SwiGLU,
    rotary, the split projections' gradient sums, eager attention's contiguous copies) plus
    the eager softmax chain over the b x heads x s x s scores, against the measured layer."""
    c = DATA["cases"][i]
    p = c["config"]
    sc = _scenario(p)
    parts = layer_times(sc, model_params(sc.model))["parts"]
    scores = p["b"] * p["a"] * p["s"] ** 2
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

COMPILED = json.loads((Path(__file__).parent.parent / "data" / "compiled_passes_llama.json").read_text())
COMPILE = PASSES["torch_compile"]


def test_the_compiled_data_says_what_it_was_measured_with():
    assert set(COMPILED["versions"]) >= {"torch", "transformers"}
    assert [c["config"]["s"] for c in COMPILED["cases"]] == [64, 128]


@pytest.mark.parametrize("i", range(len(COMPILED["cases"])))
def test_compiled_swiglu_and_norm_regions_as_measured(i):
    """TorchInductor (CPU kernels) on transformers' LlamaMLP: one kernel reads gate and up
    and writes the product (3 passes of b x s x f), backward 5, plus the sum of the gate and
    up projections' input gradients after their GEMMs (3 passes of b x s x h). The norm and
    residual regions (the layer less its MLP and attention): 2 x (residual 3 + norm 3)
    backward; forward 2 x (3 + 1), the measured kernels moving about 12 % more."""
    c = COMPILED["cases"][i]
    p = c["config"]
    sbh, sbf = p["b"] * p["s"] * p["h"], p["b"] * p["s"] * p["ffn"]
    fwd, bwd = _passes(c, "mlp", sbf)
    assert fwd == pytest.approx(COMPILE["swiglu"][0], rel=0.01)
    assert bwd - 3 * sbh / sbf == pytest.approx(COMPILE["swiglu"][1], rel=0.01)
    layer, mlp, attn = (_passes(c, k, sbh) for k in ("layer", "mlp", "self_attn"))
    regions = [layer[j] - mlp[j] - attn[j] for j in (0, 1)]
    assert regions[1] == pytest.approx(2 * (COMPILE["residual"][1] + COMPILE["rmsnorm"][1]), rel=0.02)
    assert regions[0] == pytest.approx(2 * (COMPILE["residual"][0] + COMPILE["rmsnorm"][0]), rel=0.15)


@pytest.mark.xfail(strict=True, reason=(
    "compiled eager-attention layer (CPU kernels): outside the s x s scores the measured kernels "
    "move 19.2 passes of b x s x h forward and 14.2 backward against the engine's rotary 4 and 4 "
    "(the layout copies torch.matmul needs and what the partitioner saves are not counted), and "
    "6.25 / 7.25 passes a score against the engine's 2 / 3 (the CPU code generator splits the "
    "softmax's reductions into kernels of their own, Triton on a GPU fewer): a GPU measurement "
    "(or the SDPA path, transformers >= 4.36) is needed before these terms are changed"))
def test_compiled_attention_within_10_percent():
    short, long_ = COMPILED["cases"]
    for c in (short, long_):
        p = c["config"]
        sc = _scenario(p, software_stack="torch_compile")
        parts = layer_times(sc, model_params(sc.model))["parts"]
        scores = p["b"] * p["a"] * p["s"] ** 2
        fwd = parts["memory_bound"] * HBM / 2 + COMPILE["softmax"][0] * scores
        layer = c["parts"]["layer"]
        assert 2 * fwd == pytest.approx(layer["forward_bytes"], rel=0.10)
