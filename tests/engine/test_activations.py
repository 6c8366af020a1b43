"""Activation memory against Korthikanti et al. 2022 (arXiv 2205.05198), Table 2 and Eq. 5-6."""

import pytest

from simulation.activations import ActivationShape, first_stage, layer_bytes, layer_terms
from tests.refdata import assert_close, cases, ids

PER_LAYER = cases("korthikanti_2022", "kort_t2_per_layer")
TOTALS = cases("korthikanti_2022", "kort_eq5_6")
SELECTIVE = cases("korthikanti_2022", "kort_s5_selective")

# (tensor_parallel, sequence_parallel, recompute) for each expected column
COLUMNS = {
    "no_parallelism_bytes": (1, False, "none"),
    "tensor_parallel_bytes": (None, False, "none"),
    "tensor_sequence_parallel_bytes": (None, True, "none"),
    "tensor_parallel_selective_bytes": (None, False, "selective"),
    "tensor_sequence_parallel_selective_bytes": (None, True, "selective"),
    "full_recompute_bytes": (None, False, "full"),
}


def shape(inp, t, sp, recompute):
    return ActivationShape(seq_len=inp["seq_len"], micro_batch=inp["micro_batch"],
                           hidden=inp["hidden"], heads=inp["heads"], tensor_parallel=t,
                           sequence_parallel=sp, recompute=recompute)


@pytest.mark.parametrize("case", PER_LAYER, ids=ids(PER_LAYER))
def test_table2_per_layer(case):
    inp = case["inputs"]
    for col, (t, sp, rc) in COLUMNS.items():
        got = layer_bytes(shape(inp, t or inp["tp"], sp, rc))
        assert_close(got, case["expected"][col], case["tolerance"], f"{case['id']} {col}")


@pytest.mark.parametrize("case", TOTALS, ids=ids(TOTALS))
def test_eq5_eq6_first_stage_totals(case):
    inp, exp = case["inputs"], case["expected"]
    p, L = inp["pp"], inp["layers"]
    many = 64  # enough micro batches to fill the pipeline (1F1B holds p in flight)
    eq5 = first_stage(shape(inp, inp["tp"], True, "none"), L, p, many)
    assert_close(eq5.layers_bytes, exp["eq5_tsp_no_recompute_bytes"], case["tolerance"], "eq5")
    eq6 = first_stage(shape(inp, inp["tp"], True, "selective"), L, p, many)
    assert_close(eq6.layers_bytes, exp["eq6_tsp_selective_bytes"], case["tolerance"], "eq6")
    inter = first_stage(shape(inp, inp["tp"], True, "selective"), L, p, many, inp["interleave_m"])
    assert inter.interleave_factor == pytest.approx(exp["interleave_factor"], abs=1e-6)
    assert_close(inter.layers_bytes, exp["eq6_with_interleave_bytes"], {"abs": 2}, "interleaved")
    full = first_stage(shape(inp, inp["tp"], False, "full"), L, p, many)
    assert_close(full.layers_bytes, exp["full_recompute_total_bytes"], case["tolerance"], "full")


@pytest.mark.parametrize("case", SELECTIVE, ids=ids(SELECTIVE))
def test_section5_selective_saving(case):
    inp, exp = case["inputs"], case["expected"]
    full = layer_bytes(ActivationShape(2048, 1, inp["hidden"], inp["heads"]))
    sel = layer_bytes(ActivationShape(2048, 1, inp["hidden"], inp["heads"], recompute="selective"))
    assert_close(1 - sel / full, exp["memory_saved_fraction_formula"], case["tolerance"], "saved")


def test_generalised_terms_by_hand():
    # GQA (kv = a/4), SwiGLU f = 2h, no dropout, flash attention, t = 1, s = b = h = 1 scale:
    # replicated 4 + 2 + 2 = 8; attention 2 + 2r + 2r + 2 = 4 + 4/4 = 5; MLP: Megatron's
    # fused SwiGLU keeps gate and up (4 B per f) and fc2 the product (2 B): 6 * f/h = 12
    # -> 25 * s*b*h bytes (no s^2 terms); unfused (gate, SiLU, up, product): 8 * f/h -> 29
    kw = dict(seq_len=1024, micro_batch=2, hidden=512, heads=8, kv_heads=2, ffn=1024,
              gated_mlp=True, dropout=False, flash_attention=True)
    assert layer_bytes(ActivationShape(**kw)) == pytest.approx(25 * 1024 * 2 * 512)
    unfused = ActivationShape(**kw, fused_mlp_activation=False)
    assert layer_bytes(unfused) == pytest.approx(29 * 1024 * 2 * 512)


def test_fewer_micro_batches_than_stages_hold_fewer_layers():
    x = ActivationShape(2048, 1, 4096, 32)
    assert first_stage(x, 32, 4, 2).layers_held == 16   # 2 in flight x 8 layers
    assert first_stage(x, 32, 4, 8).layers_held == 32


# ---------------------------------------------------------------- Megatron MoE routing
def _mixtral_megatron(**over):
    kw = dict(seq_len=4096, micro_batch=1, hidden=4096, heads=32, kv_heads=8, ffn=14336,
              gated_mlp=True, dropout=False, flash_attention=True, num_experts=8, top_k=2,
              framework="megatron")
    kw.update(over)
    return ActivationShape(**kw)


def test_megatron_moe_keeps_router_permutation_and_the_permuted_copy():
    # Hand calculation from megatron-core 0.19 moe_utils.py / experts.py (see
    # activations._megatron_moe_routing), Mixtral-8x7B shapes, s*b = 4096 tokens, k = 2:
    #   router: topk indices 8*2 + fp32 top-k softmax 4*2 + fp32 aux-loss softmax 4*8
    #           = 56 B per token
    #   permute: index_select indices + probs indexing, 2 x int64 per routed token
    #   fc1 input: the permuted copy (2 B x h) and its bf16 prob, per routed token
    terms = layer_terms(_mixtral_megatron())
    assert terms["router (top-k indices, fp32 top-k probabilities, fp32 aux-loss scores)"] == 56 * 4096
    assert terms["permutation indices (int64)"] == 2 * 8 * 2 * 4096
    assert terms["permuted tokens (expert fc1 input) and their probs"] == (2 * 4096 + 2) * 2 * 4096
    # the experts' MLP is top-k times one fused SwiGLU MLP (6 B per f per routed token)
    assert terms["MLP activations"] == 6 * 4096 * 14336 * 2


def test_megatron_moe_routing_under_tensor_and_sequence_parallelism():
    # The router sees s*b/t tokens; the dispatcher all-gathers the permuted tokens over
    # the t ranks (expert tensor parallelism splits f), so the fc1 copy stays whole.
    one, two = layer_terms(_mixtral_megatron()), layer_terms(
        _mixtral_megatron(tensor_parallel=2, sequence_parallel=True))
    key = "router (top-k indices, fp32 top-k probabilities, fp32 aux-loss scores)"
    assert two[key] == one[key] / 2
    assert two["permutation indices (int64)"] == one["permutation indices (int64)"] / 2
    copy = "permuted tokens (expert fc1 input) and their probs"
    assert two[copy] == one[copy]
    assert two["MLP activations"] == one["MLP activations"] / 2


def test_dense_megatron_layers_have_no_routing_terms():
    terms = layer_terms(_mixtral_megatron(num_experts=1, top_k=1))
    assert not any("router" in k or "permut" in k for k in terms)
