"""Step-time terms of the expert layout, latent attention and sliding windows
(simulation/compute.py attention_gemms, mlp_gemms, window_share; step.layer_flops),
each against a hand calculation written out here."""

import pytest

from simulation import compute, step
from simulation.params import count_params
from simulation.scenario import Scenario


def no_window(slug: str) -> dict:
    from simulation.presets import MODELS
    return {k: v for k, v in MODELS[slug].items() if not k.startswith("sliding_window")}


def scenario(model: dict, **training) -> Scenario:
    tr = {"seq_len": 8, "micro_batch_size": 1, "global_batch_size": 8, "flash_attention": True}
    tr.update(training)
    return Scenario.from_dict({"model": model, "cluster": {"node": "dgx-h100"}, "training": tr})


def test_window_share_by_hand():
    # s = 8, w = 3: query i sees min(i+1, 3) keys: 1 + 2 + 3*6 = 21 of the causal 36
    m = scenario({"preset": "mistral-7b"}).model
    assert compute.window_share(m, 8) == 1.0            # 8 < 4096: the window is never reached
    from dataclasses import replace
    small = replace(m, sliding_window=3)
    assert compute.window_share(small, 8) == pytest.approx(21 / 36)
    # Gemma 2's alternate layers: half the 42 layers (0, 2, ...) slide
    g = replace(scenario({"preset": "gemma2-9b"}).model, sliding_window=3)
    assert g.sliding_layers == 21
    assert compute.window_share(g, 8) == pytest.approx((21 * 21 / 36 + 21) / 42)


def test_mistral_flash_attention_flops_follow_the_window():
    # Mistral-7B-v0.1 at 16384 tokens, window 4096: pairs 4096*4097/2 + 12288*4096 of the
    # causal 16384*16385/2 -> the FlashAttention forward's FLOPs scale by that share
    sc = scenario({"preset": "mistral-7b"}, seq_len=16384)
    pc = count_params(sc.model)
    w, s = 4096, 16384
    share = (w * (w + 1) / 2 + (s - w) * w) / (s * (s + 1) / 2)
    full = step.layer_flops(scenario(no_window("mistral-7b"), seq_len=s), pc)
    fl = step.layer_flops(sc, pc)
    attn_full = 4 * s * s * 4096
    assert full["fwd"] - fl["fwd"] == pytest.approx(attn_full * (1 - share))
    # eager attention computes every score (the mask only hides them): no change
    eager = step.layer_flops(scenario({"preset": "mistral-7b"}, seq_len=s, flash_attention=False), pc)
    eager_full = step.layer_flops(scenario(no_window("mistral-7b"), seq_len=s,
                                           flash_attention=False), pc)
    assert eager["fwd"] == eager_full["fwd"]


def test_mla_gemm_shapes(monkeypatch):
    # DeepSeek-V3, 8 tokens, TP 1: q_a 8 x 1536 x 7168, q_b 8 x 128*192 x 1536, kv_a
    # 8 x (512 + 64) x 7168, kv_b 8 x 128*(128 + 128) x 512, o 8 x 7168 x 128*128; a dense
    # block's MLP 8 x 2*18432 x 7168; expert block: 256 experts on 8*8/256 tokens each of
    # 8/32 x 2*2048 x 7168, the shared expert 8 x 2*2048 x 7168
    sc = scenario({"preset": "deepseek-v3"})
    m = sc.model
    assert compute.attention_gemms(m, 8, 1) == [(8, 1536, 7168, 1), (8, 128 * 192, 1536, 1),
                                                (8, 576, 7168, 1), (8, 128 * 256, 512, 1),
                                                (8, 7168, 128 * 128, 1)]
    assert compute.mlp_gemms(m, 8, 1, False) == [(8, 2 * 18432, 7168, 1), (8, 7168, 18432, 1)]
    assert compute.mlp_gemms(m, 8, 1, True) == [(8 * 8 / 256, 2 * 2048, 7168, 256),
                                               (8 * 8 / 256, 7168, 2048, 256),
                                               (8, 2 * 2048, 7168, 1), (8, 7168, 2048, 1)]
    # tensor parallel 8: the down-projections stay whole on every rank
    assert compute.attention_gemms(m, 8, 8)[0] == (8, 1536, 7168, 1)
    assert compute.attention_gemms(m, 8, 8)[1] == (8, 128 * 192 / 8, 1536, 1)


def test_dense_first_layers_weigh_the_layer_time(monkeypatch):
    # the layer's GEMM time is (3 x dense + 58 x expert block) / 61 plus the attention
    sc = scenario({"preset": "deepseek-v3"})
    m, tr, acc = sc.model, sc.training, sc.cluster.accelerator
    g = compute.figures(acc)
    hbm = acc.hbm_bytes_per_s * g.hbm_fraction

    def t_of(gs):
        return sum(c * compute.gemm_s(M, N, K, g, hbm) for M, N, K, c in gs)
    want = (t_of(compute.attention_gemms(m, 8, 1)) + 3 / 61 * t_of(compute.mlp_gemms(m, 8, 1, False))
            + 58 / 61 * t_of(compute.mlp_gemms(m, 8, 1, True)))
    got = compute._layer_times_of(m, tr, acc, count_params(m))["parts"]["gemm"]
    assert got == pytest.approx(want)


def test_mla_attention_flops_use_qk_and_v_widths():
    # DeepSeek-V3, 8 tokens, eager counting: QK^T 2*8*8*128*192 + PV 2*8*8*128*128
    sc = scenario({"preset": "deepseek-v3"}, flash_attention=False)
    assert step.attention_core_flops(sc.model, 1, 8) == 2 * 8 * 8 * 128 * (192 + 128)
    pc = count_params(sc.model)
    norms = 2 * 7168 + 512 + 1536                 # 2 block RMSNorms + the latent ones
    fl = step.layer_flops(sc, pc)
    assert fl["fwd"] == pytest.approx(2 * (pc.per_layer_active - norms) * 8 + 2 * 8 * 8 * 128 * 320)


def test_every_new_preset_evaluates():
    import simulation
    for slug in ("deepseek-v3", "deepseek-v2-lite"):
        sc = Scenario.from_dict({"model": {"preset": slug}, "cluster": {"node": "dgx-h100", "num_nodes": 16},
                                 "training": {"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 128,
                                              "flash_attention": True, "recompute": "full",
                                              },
                                 "strategy": {"kind": "zero3"}})
        d = simulation.evaluate(sc).to_dict()
        assert d["step"]["available"] and d["step"]["time_s"] > 0


def test_lora_targets_that_latent_attention_or_shared_experts_lack_are_refused():
    from simulation.errors import ScenarioError
    from simulation.lora import LoraSpec, adapter_params
    for targets in (["q", "v"], ["gate"]):
        with pytest.raises(ScenarioError) as e:
            scenario({"preset": "deepseek-v2-lite"}, lora={"rank": 8, "targets": targets})
        assert e.value.field == "training.lora.targets"
    # o alone: 27 layers x r (heads x v_head_dim + hidden) = 27 x 8 x (16*128 + 2048)
    sc = scenario({"preset": "deepseek-v2-lite"}, lora={"rank": 8, "targets": ["o"]})
    assert adapter_params(sc.model, sc.training.lora)["total"] == 27 * 8 * (16 * 128 + 2048)
    # a routed expert's own width (moe_ffn_hidden_size), not the dense ffn_hidden_size
    m = scenario({"num_layers": 1, "hidden_size": 8, "num_attention_heads": 2, "ffn_hidden_size": 64,
                  "vocab_size": 10, "num_experts": 4, "moe_top_k": 2, "moe_ffn_hidden_size": 4}).model
    assert adapter_params(m, LoraSpec(rank=1, targets=("down",)))["total"] == 4 * (4 + 8)
