"""LoRA (``training.lora``): adapter counts, memory and step time by hand.

Sources: Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models" (Sec. 4.1:
``r (d_in + d_out)`` parameters per adapted matrix; Sec. 4.2: no gradients or optimizer
states for the frozen weights); PEFT ``peft/tuners/lora/layer.py`` (``Linear.forward``:
``lora_B(lora_A(dropout(x)))``, ``nn.Identity`` without dropout).
"""

import pytest

from simulation import evaluate_dict
from simulation.compute import GPU_FIGURES, gemm_s, layer_times
from simulation.errors import ScenarioError
from simulation.lora import adapter_params
from simulation.params import model_params
from simulation.scenario import Scenario
from simulation.step import layer_flops

P7 = 6738415616            # Llama-2-7B, every parameter
GIB = 2**30

# A 24 GB GeForce card (RTX 4090): NVIDIA Ada Lovelace architecture whitepaper v2.02,
# Appendix A Table 2: 24 GB GDDR6X at 1008 GB/s; dense FP16/BF16 tensor FLOPS with FP32
# accumulate 165.2 T (half the 330.3 T headline, which is with FP16 accumulate); FP32
# 82.6 T; PCIe 4.0 x16 (~25 GB/s), no NVLink.
RTX4090 = {"name": "24 GB card (RTX 4090 figures)", "hbm_capacity_bytes": 24 * GIB,
           "hbm_bytes_per_s": 1008e9, "peak_flops_bf16": 165.2e12, "peak_flops_fp32": 82.6e12,
           "host_link_bytes_per_s": 25e9, "scaleup_bytes_per_s": 25e9}


def scenario(lora=None, cluster=None, kind="ddp", **training):
    tr = {"micro_batch_size": 1, "seq_len": 2048, "recompute": "none", **training}
    if lora is not None:
        tr["lora"] = lora
    return {"model": {"preset": "llama2-7b"},
            "cluster": cluster or {"node": "dgx-h100", "num_nodes": 1, "gpus_per_node": 1},
            "training": tr, "strategy": {"kind": kind}}


def hbm_part(report, prefix):
    hits = [p for p in report["memory"]["per_gpu"]["hbm"]["parts"] if p["name"].startswith(prefix)]
    assert len(hits) == 1, [p["name"] for p in report["memory"]["per_gpu"]["hbm"]["parts"]]
    return hits[0]["bytes"]


def test_llama2_7b_r8_qv_has_peft_s_4_2_million_trainable_parameters():
    sc = Scenario.from_dict(scenario({"rank": 8, "targets": ["q", "v"]}))
    ad = adapter_params(sc.model, sc.training.lora)
    # 32 layers x 2 matrices x r (4096 + 4096) = 32 x 2 x 65,536
    assert ad["per_layer"] == 2 * 8 * (4096 + 4096)
    assert ad["total"] == 4_194_304
    # PEFT print_trainable_parameters for Llama-2-7B r=8 q_proj, v_proj: 0.0622 %
    assert ad["total"] / P7 * 100 == pytest.approx(0.0622, abs=5e-5)


def test_every_target_shape_by_hand():
    sc = Scenario.from_dict(scenario({"rank": 4, "targets": ["q", "k", "v", "o", "gate", "up",
                                                             "down", "embeddings"]}))
    h, f, v, r = 4096, 11008, 32000, 4
    per_layer = 4 * r * (h + h) + 3 * r * (h + f)        # MHA: k, v are h -> h
    ad = adapter_params(sc.model, sc.training.lora)
    assert ad["per_layer"] == per_layer
    assert ad["embedding"] == r * (v + h)                 # lora_embedding_A r x V, B h x r
    assert ad["total"] == 32 * per_layer + r * (v + h)


@pytest.mark.parametrize("lora,field", [
    ({"rank": 0}, "training.lora.rank"),
    ({"rank": 2.5}, "training.lora.rank"),
    ({"targets": ["q", "x"]}, "training.lora.targets[1]"),
    ({"targets": []}, "training.lora.targets"),
    ({"targets": ["q", "q"]}, "training.lora.targets"),
    ({"dropout": 1.5}, "training.lora.dropout"),
    ({"alpha": 0}, "training.lora.alpha"),
    ({"bias": "all"}, "training.lora.bias"),
    ("yes", "training.lora"),
])
def test_bad_lora_fields_are_named(lora, field):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(scenario(lora))
    assert e.value.field == field


def test_gate_needs_a_gated_mlp_and_lora_needs_the_architecture():
    d = scenario({"targets": ["gate"]})
    d["model"] = {"preset": "falcon-7b"}
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.field == "training.lora.targets"
    d = scenario({"targets": ["q"]})
    d["model"] = {"num_params": 7e9, "num_layers": 32, "hidden_size": 4096}
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.field == "training.lora"


def test_lora_round_trips_through_to_dict():
    sc = Scenario.from_dict(scenario({"rank": 16, "alpha": 32, "targets": ["v", "q"]}))
    assert sc.to_dict()["training"]["lora"] == {"rank": 16, "alpha": 32.0, "dropout": 0.0,
                                                "targets": ["q", "v"]}
    assert Scenario.from_dict(sc.to_dict()) == sc
    assert "lora" not in Scenario.from_dict(scenario()).to_dict()["training"]


def test_memory_of_a_lora_run_by_hand():
    """Llama-2-7B, r = 16 on q, k, v, o, lora_dropout 0.05, one H100, DDP, b = 1, s = 2048,
    counted as PEFT runs it under torch AMP (peft 0.20.1.dev0): fp32 adapters
    (``autocast_adapter_dtype``), each target's input cast to their dtype."""
    r = evaluate_dict(scenario({"rank": 16, "targets": ["q", "k", "v", "o"], "dropout": 0.05}))
    full = evaluate_dict(scenario())
    n = 32 * 4 * 16 * (4096 + 4096)                       # 16,777,216 adapter parameters
    hbm = r["memory"]["per_gpu"]["hbm"]
    assert hbm_part(r, "bf16 frozen base parameters") == 2 * P7       # no grads, no master
    # fp32 adapters (PEFT upcasts them) are what AdamW updates: no separate master copy
    assert hbm_part(r, "fp32 LoRA adapter parameters") == 4 * n
    assert hbm["grads_bytes"] == 4 * n                    # fp32 gradients, adapters only
    assert hbm["optimizer_bytes"] == 8 * n                # Adam m, v
    # adapter activations, per layer and target (tests/data/saved_tensors_lora_hf.json):
    # the 16-bit copy of the target's input that autocast makes for lora_A (b*s*h x 2 B),
    # lora_A's output b*s*r (2 B), autocast's 16-bit copies of A and B (r*(h + h) x 2 B)
    # and the dropout mask (bool, b*s*h x 1 B)
    per_target = 2048 * 4096 * 2 + 2048 * 16 * 2 + 16 * 8192 * 2 + 2048 * 4096 * 1
    assert hbm_part(r, "LoRA adapter activations") == 32 * 4 * per_target
    # the frozen base saves less than full fine-tuning: no projection inputs (q/k/v's and
    # gate/up's shared inputs, o's and down's), no RMSNorm 16-bit normalised values:
    # 10 s*b*h + 2 s*b*f bytes a layer (saved_tensors_lora_hf.json, "frozen" points)
    s, h, f = 2048, 4096, 11008
    assert (hbm_part(full, "activations (") - hbm_part(r, "activations (")
            == 32 * (10 * s * h + 2 * s * f))
    fh = full["memory"]["per_gpu"]["hbm"]
    assert fh["grads_bytes"] == 4 * P7 and fh["optimizer_bytes"] == 12 * P7


def test_without_dropout_each_adapter_still_saves_a_copy_of_its_input():
    r = evaluate_dict(scenario({"rank": 8, "targets": ["q", "v"]}))
    # PEFT casts x to the fp32 adapters' dtype and autocast casts it back for lora_A: a
    # new tensor per target even without dropout, plus b*s*r and the weights' casts
    per_target = 2048 * 4096 * 2 + 2048 * 8 * 2 + 8 * 8192 * 2
    assert hbm_part(r, "LoRA adapter activations") == 32 * 2 * per_target


def test_frozen_backward_drops_the_weight_gradient_flops():
    """Constant model: FLOPs of one Llama-2-7B layer, b = 1, s = 2048, r = 8 on q, v."""
    full = Scenario.from_dict(scenario(compute_model="constant"))
    lora = Scenario.from_dict(scenario({"rank": 8, "targets": ["q", "v"]}, compute_model="constant"))
    pc = model_params(full.model)
    ff, fl = layer_flops(full, pc), layer_flops(lora, pc)
    tok = 2048
    matmul = 4 * 4096 * 4096 + 3 * 4096 * 11008           # 202,375,168 weights per layer
    adapter_fwd = 2 * tok * 2 * 8 * (4096 + 4096)         # 2 FLOPs x tokens x adapter params
    assert fl["fwd"] == pytest.approx(ff["fwd"] + adapter_fwd)
    # backward: data gradients only for the frozen weights (2 x matmul x tokens fewer),
    # both gradients for the adapters
    assert fl["bwd"] == pytest.approx(ff["bwd"] - 2 * matmul * tok + 2 * adapter_fwd)
    assert fl["head_bwd"] == pytest.approx(ff["head_bwd"] / 2)     # the head is frozen too


def test_frozen_backward_drops_the_weight_gradient_gemms_in_the_work_model():
    full = Scenario.from_dict(scenario())
    lora = Scenario.from_dict(scenario({"rank": 8, "targets": ["q", "v"]}))
    pc = model_params(full.model)
    tf, tl = layer_times(full, pc), layer_times(lora, pc)
    g = GPU_FIGURES["h100-sxm5-80gb"]
    hbm = 3350e9 * g.hbm_fraction
    tok, h, f = 2048, 4096, 11008
    # weight-gradient GEMMs (K x N by M) of QKV, O, gate+up, down that LoRA does not run
    wgrad = (gemm_s(h, 3 * h, tok, g, hbm) + gemm_s(h, h, tok, g, hbm)
             + gemm_s(h, 2 * f, tok, g, hbm) + gemm_s(f, h, tok, g, hbm))
    # the adapters' GEMMs: x A^T (tok x 8 x h), then (tok x h x 8), for q and v; each
    # forward, and backward with a data- and a weight-gradient GEMM
    a_fwd = 2 * (gemm_s(tok, 8, h, g, hbm) + gemm_s(tok, h, 8, g, hbm))
    a_bwd = 2 * (gemm_s(tok, h, 8, g, hbm) + gemm_s(h, 8, tok, g, hbm)
                 + gemm_s(tok, 8, h, g, hbm) + gemm_s(8, h, tok, g, hbm))
    # PEFT's element-wise kernels, fp32 adapters under autocast (simulation/lora.py
    # adapter_elementwise_elements), per target and token: forward x to fp32 and back (3 + 3
    # of h), the product by scaling (2 h) and the sum (3 h) = 11 h; backward the two casts'
    # gradients (6 h), the product's (2 h) and the sum of x's two gradients (3 h) = 11 h;
    # 2 B an element at the H100's HBM rate
    ew = 2 * 11 * h * tok * 2 / hbm
    # the frozen norms' backward has no weight-gradient product and sum: 44 passes of
    # b x s x h instead of 48, two norms (measured: tests/data/eager_passes_llama.json)
    norms = 2 * (48 - 44) * h * tok * 2 / hbm
    assert tl["fwd_s"] == pytest.approx(tf["fwd_s"] + a_fwd + ew)
    assert tl["bwd_s"] == pytest.approx(tf["bwd_s"] - wgrad + a_bwd + ew - norms)
    assert tf["bwd_s"] - tl["bwd_s"] > 0.3 * tf["bwd_s"] - tf["parts"]["attention"] * 3


def test_lora_reduces_and_updates_only_the_adapters():
    two = {"node": "dgx-h100", "num_nodes": 1, "gpus_per_node": 8}
    full = evaluate_dict(scenario(cluster=two))
    lora = evaluate_dict(scenario({"rank": 8, "targets": ["q", "v"]}, cluster=two))
    # all-reduce of 4.2M fp32 gradients, not 6.7B: the exposed communication and the
    # optimizer step shrink by about the trainable share (0.06 %), plus fixed latencies
    assert lora["step"]["optimizer_phase_s"] < 0.01 * full["step"]["optimizer_phase_s"]
    assert lora["step"]["breakdown_s"]["exposed_comm"] < 0.1 * full["step"]["breakdown_s"]["exposed_comm"]


def test_lora_fits_one_24_gb_card_where_full_fine_tuning_does_not():
    # a workstation: one 24 GB card, 64 GB of host DDR
    card = {"num_nodes": 1, "gpus_per_node": 1, "accelerator": RTX4090,
            "tiers": {"ddr": {"capacity_bytes": 64e9, "read_bytes_per_s": 40e9,
                                     "write_bytes_per_s": 40e9}}}
    full = evaluate_dict(scenario(cluster=card, seq_len=1024, recompute="full"))
    lora = evaluate_dict(scenario({"rank": 16, "alpha": 32, "targets": ["q", "k", "v", "o"]},
                                  cluster=card, seq_len=1024, recompute="full"))
    # full: (2 + 4 + 4 + 8) B x 6.74e9 = 121 GB of states alone; LoRA: 13.5 GB of frozen
    # bf16 weights + 16.8M adapters x 18 B + activations + 1.5 GiB runtime
    assert not full["fits"]
    assert lora["fits"]
    hbm = lora["memory"]["per_gpu"]["hbm"]["total_bytes"]
    assert 2 * P7 < hbm < 24 * GIB


def test_a_moe_expert_adapter_sees_its_share_of_the_tokens():
    """Mixtral 8x7B (top-2 of 8): an expert's w1 adapter sees b*s*2/8 tokens."""
    d = scenario({"rank": 8, "targets": ["up"]})
    d["model"] = {"preset": "mixtral-8x7b"}
    sc = Scenario.from_dict(d)
    from simulation.lora import adapter_gemms
    gemms = adapter_gemms(sc.model, sc.training.lora, 2048)
    assert gemms == [(512, 8, 4096, 8), (512, 14336, 8, 8)]    # 8 experts x (A, B)
    assert adapter_params(sc.model, sc.training.lora)["per_layer"] == 8 * 8 * (4096 + 14336)


def test_exports_say_lora_is_left_to_peft():
    from simulation.export import deepspeed_config, fsdp_snippet
    sc = Scenario.from_dict(scenario({"rank": 16, "alpha": 32, "targets": ["q", "v"]}, kind="zero2"))
    note = [n for n in deepspeed_config(sc)["_tierlab_notes"] if n.startswith("LoRA")]
    assert note and "LoraConfig(r=16, lora_alpha=32" in note[0] and "'q_proj', 'v_proj'" in note[0]
    fs = Scenario.from_dict(scenario({"rank": 16, "targets": ["q", "v"]}, kind="fsdp_full_shard"))
    assert "LoRA is not part of this config" in fsdp_snippet(fs)


def test_a_lora_checkpoint_holds_the_adapters_only():
    r = evaluate_dict(scenario({"rank": 8, "targets": ["q", "v"]}))
    full = evaluate_dict(scenario())
    # PEFT's fp32 adapters (adapter_model.safetensors) + Adam m, v: 12 B per adapter
    # parameter (4,194,304); no separate master copy
    assert r["checkpoint"]["size_bytes"] == pytest.approx(12 * 4_194_304)
    assert full["checkpoint"]["size_bytes"] == pytest.approx(14 * P7)
    assert any(n.startswith("LoRA: the base is frozen") for n in r["notes"])
    assert r["model"]["trainable_params"] == 4_194_304
    assert "trainable_params" not in full["model"]


def test_gpt3_175b_r4_qv_matches_the_lora_paper_s_memory_and_checkpoint_figures():
    """Hu et al. 2021 Sec. 4.2: "On GPT-3 175B, we reduce the VRAM consumption during
    training from 1.2TB to 350GB. With r = 4 and only the query and value projection
    matrices being adapted, the checkpoint size is reduced by roughly 10,000x (from 350GB
    to 35MB)". Model states summed over 16 ZeRO-3 ranks (zero_paper: no buffers) and the
    fp16 weights-only checkpoint, each within 10 %."""
    d = scenario({"rank": 4, "targets": ["q", "v"]}, kind="zero3", precision="fp16",
                 seq_len=2048, recompute="full")
    d["model"] = {"preset": "gpt3-175b"}
    d["cluster"] = {"node": "dgx-h100", "num_nodes": 2}
    d["convention"] = "zero_paper"
    d["checkpoint"] = {"content": "weights_only"}
    r = evaluate_dict(d)
    # 96 layers x 2 x 4 x (12288 + 12288) = 18,874,368 adapter parameters
    sc = Scenario.from_dict(d)
    assert adapter_params(sc.model, sc.training.lora)["total"] == 18_874_368
    hbm = r["memory"]["per_gpu"]["hbm"]
    states = (hbm["params_bytes"] + hbm["grads_bytes"] + hbm["optimizer_bytes"]) * 16
    assert states == pytest.approx(350e9, rel=0.10)         # 2 B x 174.6e9 + 16 B x 18.9e6
    assert r["checkpoint"]["size_bytes"] == pytest.approx(35e6, rel=0.10)   # 2 B x 18.9e6 = 37.7 MB


@pytest.mark.parametrize("kind", ["ddp", "zero1", "zero2", "zero3", "fsdp_full_shard"])
def test_the_planner_s_hbm_floor_stays_under_the_lora_memory(kind):
    """The planner drops a candidate whose HBM floor is over the card: under LoRA the floor
    counts gradients and optimizer states on the adapters, not on the frozen base (else a
    LoRA plan that fits would be rejected). Floor: 2 B x P7 / d (ZeRO-3/FSDP) + the adapters'
    states + activations + runtime, at most the memory model's figure."""
    from simulation import planner
    from simulation.parallel import layout
    two = {"node": "dgx-h100", "num_nodes": 1, "gpus_per_node": 8}
    d = scenario({"rank": 16, "targets": ["q", "k", "v", "o"]}, cluster=two, kind=kind)
    sc = Scenario.from_dict(d)
    floor = planner.hbm_lower_bound_bytes(sc, layout(sc))
    total = evaluate_dict(d, include_step=False)["memory"]["per_gpu"]["hbm"]["total_bytes"]
    assert floor <= total
    shard = 8 if kind in ("zero3", "fsdp_full_shard") else 1
    assert floor < 2 * P7 / shard + 20 * 16_777_216 + 40 * GIB      # not 16 B x P7


def test_a_lora_plan_finds_the_single_card_fit():
    from simulation import planner
    spec = {"model": "llama2-7b", "cluster": {"node": "dgx-h100", "num_nodes": [1]},
            "training": {"seq_len": 2048, "global_batch_size": 8, "flash_attention": True,
                         "total_tokens": 1e9, "lora": {"rank": 16, "targets": ["q", "v"]}},
            "space": {"tensor_parallel": [1], "pipeline_parallel": [1], "micro_batch_size": [1],
                      "recompute": ["none"], "strategies": ["ddp"], "offload_optimizer": ["none"]},
            "objective": "step_time", "top_k": 1}
    rows = planner.plan(spec)["top"]
    assert rows, "LoRA Llama-2-7B with DDP fits an H100; full fine-tuning (18 B/param) does not"


def test_mfu_counts_the_flops_lora_needs_no_weight_gradient_of_the_frozen_base():
    # Hand calculation, Llama-3.1-8B (8,030,261,248 parameters), r = 16 on q, k, v, o:
    # adapters per layer 16 x ((4096 + 4096) + 2 x (4096 + 1024) + (4096 + 4096)) = 425,984,
    # x 32 layers = 13,631,488. Per token: 4 FLOPs a frozen parameter (forward + input
    # gradient), 6 an adapter's, plus attention 3 passes x 4 x s x heads x head_dim = 12 x
    # 2048 x 4096 a layer, x 32 layers; one sequence of 2,048 tokens a step.
    from simulation.evaluate import evaluate_dict
    r = evaluate_dict({"model": {"preset": "llama3.1-8b"}, "cluster": {"node": "rtx4090-workstation", "num_nodes": 1},
                       "training": {"seq_len": 2048, "recompute": "full", "flash_attention": True,
                                    "lora": {"rank": 16, "targets": ["q", "k", "v", "o"]}},
                       "strategy": {"kind": "ddp"}})
    per_token = 4 * 8_030_261_248 + 6 * 13_631_488 + 32 * 12 * 2048 * 4096
    assert r["step"]["model_flops"] == pytest.approx(per_token * 2048, rel=1e-12)
