"""Megatron-Core selective recomputation by module (``training.recompute_modules``), the FP8
store of SwiGLU inputs (``training.activation_func_fp8_input_store``), Megatron's MLA
activations, and DualPipe's per-rank in-flight chunks (issue #15: DeepSeek-V3's layout).

Hand calculations below use DeepSeek-V3's shape (h 7168, 128 heads, q_lora 1536, kv_lora
512, rope 64, qk 192, v 128, 8 of 256 experts of 2048, one shared expert of 2048), s 4096,
b 1, 16-bit activations, FlashAttention, Megatron (Transformer Engine) kernels, FP8."""

import pytest

from simulation.activations import ActivationShape, layer_terms
from simulation.errors import ScenarioError
from simulation.export import megatron_args
from simulation.pipeline import dualpipe_in_flight, stage_plans
from simulation.scenario import Scenario
from tests.engine.test_published_layouts import SPLIT, deepseek_v3

S, H, A_HEADS = 4096, 7168, 128


def moe_layer(**kw):
    base = dict(seq_len=S, micro_batch=1, hidden=H, heads=A_HEADS, kv_heads=A_HEADS, ffn=18432,
                gated_mlp=True, top_k=8, dropout=False, flash_attention=True, framework="megatron",
                num_experts=256, norm="rmsnorm", moe_ffn=2048, shared_ffn=2048, q_lora_rank=1536,
                kv_lora_rank=512, qk_head_dim=192, qk_rope_head_dim=64, v_head_dim=128,
                fp8_linear_inputs=True)
    base.update(kw)
    return ActivationShape(**base)


def test_megatron_mla_keeps_contiguous_q_k_v_and_mla_up_proj_drops_them():
    # multi_latent_attention.py: query = cat(q_nope, q_rope) 128 x 192, key = cat(k_nope,
    # k_rope) 128 x 192, value.contiguous() 128 x 128 (a copy): 2 B x 128 x 512 per token.
    # (The transformers path keeps V as a view of kv_b_proj's 128 x 256 output: 640 wide.)
    t = layer_terms(moe_layer())
    assert t["Q, K, V"] == 2 * 128 * (192 + 192 + 128) * S
    # latents: q 1536 and the kv_down output 512 + 64 (the split view keeps it all), 16-bit;
    # the up-projections' FP8 inputs: 1 B x (1536 + 512)
    assert t["latents (up-projection norm inputs)"] == 2 * (1536 + 512 + 64) * S
    assert t["normalised latents (up-projection inputs) (FP8)"] == 1 * (1536 + 512) * S
    up = layer_terms(moe_layer(recompute="selective", recompute_modules=("mla_up_proj",)))
    assert "Q, K, V" not in up and not any(k.startswith("normalised latents") for k in up)
    assert up["latents (up-projection norm inputs)"] == t["latents (up-projection norm inputs)"]
    assert up["attention output (out-projection input)"] == 2 * 128 * 128 * S
    assert up["logsumexp (fp32)"] == 4 * 128 * S


def test_the_moe_layer_as_deepseek_v3_ran_it_by_hand():
    # Per token, bytes (B): LayerNorm inputs 2 x 2 x 7168 = 28672 (kept: the checkpoints'
    # inputs); layernorm recompute frees the norm outputs (MLA's down-projections and the
    # router keep nothing of their own): 0; latents 2 x 2112 = 4224; mla_up_proj: no Q, K,
    # V, no normalised latents; attention output 2 x 16384 = 32768; logsumexp 4 x 128 = 512;
    # router top-8 indices 8 x 8, top-8 fp32 probs 4 x 8, aux-loss softmax 4 x 256 = 1120;
    # permutation indices 2 x 8 x 8 = 128; routed tokens (fc1 input, FP8) 8 x 7168 = 57344
    # and their 16-bit probs 8 x 2 = 16; routed experts: SwiGLU input in FP8 2 x 2048,
    # fc2 input freed by moe_act: 8 x 4096 = 32768; shared expert: SwiGLU input FP8 4096
    # + fc2's FP8 input 2048 = 6144.
    per_token = 28672 + 4224 + 32768 + 512 + 1120 + 128 + 57344 + 16 + 32768 + 6144
    x = moe_layer(recompute="selective", recompute_modules=("layernorm", "mla_up_proj", "moe_act"),
                  activation_fp8_input_store=True)
    assert sum(layer_terms(x).values()) == pytest.approx(per_token * S, rel=1e-12)
    # without the modules the same layer keeps Q, K, V (131072), the latents' FP8 inputs
    # (2048), the down-projection input (FP8, 7168), the router's 16-bit input (14336), and
    # full SwiGLU inputs (2 x 2 x 2048 per routed token, fc2's FP8 input 2048)
    plain = sum(layer_terms(moe_layer()).values())
    extra = 131072 + 2048 + 7168 + 14336 + 8 * (4096 + 2048) + 4096
    assert plain == pytest.approx((per_token + extra) * S, rel=1e-12)


def test_layernorm_recompute_is_a_no_op_where_te_fuses_the_norm():
    # gpt_layer_specs.py: without MLA the input norm is fused into linear_qkv
    # (TELayerNormColumnParallelLinear), and a dense MLP's into fc1: IdentityOp modules.
    dense = dict(num_experts=1, top_k=1, moe_ffn=None, shared_ffn=0, q_lora_rank=None,
                 kv_lora_rank=None, qk_head_dim=None, qk_rope_head_dim=None, v_head_dim=None)
    a = layer_terms(moe_layer(**dense))
    b = layer_terms(moe_layer(**dense, recompute="selective", recompute_modules=("layernorm",)))
    assert a == b


def test_dualpipe_in_flight_is_counted_from_its_schedule():
    # an independent count: replay DualPipe.step's phases (dualpipe.py, 3da1bbe), +1 a
    # forward chunk, -1 a backward chunk, phase 0 = the rank's shallow stage
    def replay(p, m, rank):
        half, hr, hc = p // 2, min(rank, p - 1 - rank), m // 2
        live, best = [0, 0], (0, None)

        def f(ph, d):
            nonlocal best
            live[ph] += d
            if sum(live) > best[0]:
                best = (sum(live), tuple(live))
        for _ in range((half - hr - 1) * 2):
            f(0, 1)
        for _ in range(hr + 1):
            f(0, 1), f(1, 1)
        for _ in range(half - hr - 1):
            f(1, -1), f(1, 1)
        for _ in range(hc - p + hr + 1):
            f(0, 1), f(1, -1), f(1, 1), f(0, -1)
        for _ in range(half - hr - 1):
            f(1, -1), f(1, 1), f(0, -1)
        for _ in range(hr + 1):
            f(1, -1), f(0, -1)
        for _ in range(half - hr - 1):
            f(0, -1)
        assert live == [0, 0]
        return best[1]
    for p in (2, 4, 8, 16):
        for r in range(p):
            assert dualpipe_in_flight(r, p) == replay(p, 4 * p, r), (p, r)
    assert dualpipe_in_flight(0, 16) == (16, 1) and dualpipe_in_flight(3, 16) == (13, 4)


def test_dualpipe_ranks_hold_their_own_stages_chunks_and_dense_blocks():
    plans = stage_plans(tuple(SPLIT), 120, 1, "dualpipe", dense_layers=3)
    # rank 0: 16 chunks of stage 0 (4 layers, 3 dense) + 1 of stage 15 (3 layers)
    assert plans[0].activation_layers == 16 * 4 + 1 * 3
    assert plans[0].dense_activation_layers == 16 * 3
    # rank 3: 13 chunks of stage 3 + 4 of stage 12, 4 MoE blocks each, no dense block
    assert plans[3].activation_layers == 17 * 4 and plans[3].dense_activation_layers == 0
    # rank 13 (stages 2 and 13: 4 and 3 layers): lo = 2, 14 x 4 + 3 x 3
    assert plans[13].activation_layers == 14 * 4 + 3 * 3


def test_a_middle_rank_s_activations_are_moe_blocks_not_the_first_stage_s_mean():
    from simulation.evaluate import evaluate
    rep = evaluate(deepseek_v3(64)).to_dict()
    x = moe_layer()
    per_moe = sum(layer_terms(x).values())
    act = next(p for p in rep["memory"]["per_gpu"]["hbm"]["parts"] if p["name"].startswith("activations ("))
    assert act["bytes"] == pytest.approx(68 * per_moe, rel=1e-9)


def _sc(**tr):
    d = deepseek_v3(64).to_dict()
    d["training"].update(tr)
    return Scenario.from_dict(d)


def test_recompute_modules_round_trip_and_default_json_unchanged():
    plain = deepseek_v3(64).to_dict()["training"]
    assert "recompute_modules" not in plain and "activation_func_fp8_input_store" not in plain
    sc = _sc(recompute="selective", recompute_modules=["layernorm", "moe_act"],
             activation_func_fp8_input_store=True)
    d = sc.to_dict()["training"]
    assert d["recompute_modules"] == ["layernorm", "moe_act"] and d["activation_func_fp8_input_store"]
    assert Scenario.from_dict(sc.to_dict()).to_dict() == sc.to_dict()
    line = " ".join(megatron_args(sc))
    assert "--recompute-granularity selective --recompute-modules layernorm moe_act" in line


@pytest.mark.parametrize("tr, field, words", [
    (dict(recompute="selective", recompute_modules=["mlp"]), "training.recompute_modules[0]", "one of"),
    (dict(recompute="selective", recompute_modules=["moe_act", "moe_act"]),
     "training.recompute_modules[1]", "twice"),
    (dict(recompute="selective", recompute_modules=[]), "training.recompute_modules", "non-empty"),
    (dict(recompute="none", recompute_modules=["layernorm"]), "training.recompute_modules", "selective"),
    (dict(recompute="selective", recompute_modules=["layernorm"], fp8={"recipe": "delayed"}),
     "training.recompute_modules", "delayed"),
    (dict(recompute="selective", recompute_modules=["layernorm"], framework="huggingface", fp8=None,
          pipeline_schedule="1f1b", pipeline_layers=None, pipeline_parallel=1, expert_parallel=1),
     "training.recompute_modules", "megatron"),
])
def test_recompute_modules_errors_name_the_field(tr, field, words):
    with pytest.raises(ScenarioError) as e:
        _sc(**tr)
    assert e.value.field == field and words in str(e.value)


def test_mla_up_proj_needs_latent_attention_and_fp8_store_needs_swiglu():
    d = deepseek_v3(64).to_dict()
    d["model"] = {"preset": "mixtral-8x7b"}
    d["training"].update(recompute="selective", recompute_modules=["mla_up_proj"], pipeline_layers=None,
                         pipeline_parallel=2, expert_parallel=1, pipeline_schedule="1f1b")
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.field == "training.recompute_modules" and "multi-latent" in str(e.value)
    d["training"].update(recompute_modules=None, recompute="none", activation_func_fp8_input_store=True)
    d["model"] = {"preset": "gpt3-6.7b"}
    d["training"]["pipeline_parallel"] = 1
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.field == "training.activation_func_fp8_input_store"


def test_mla_up_proj_recompute_costs_the_up_projections_again():
    from simulation.compute import layer_times
    from simulation.params import model_params
    base = _sc(recompute="selective", recompute_modules=["layernorm"])
    up = _sc(recompute="selective", recompute_modules=["layernorm", "mla_up_proj"])
    pc = model_params(base.model)
    # the extra seconds are the q and kv up-projection GEMMs: positive and less than a
    # tenth of the layer's forward (2 x 4096 x 128 x (1536 x 192 + 512 x 256) FLOPs
    # against the layer's ~1.2 GFLOPs per token)
    extra = layer_times(up, pc)["bwd_s"] - layer_times(base, pc)["bwd_s"]
    assert 0 < extra < 0.1 * layer_times(base, pc)["fwd_s"]
