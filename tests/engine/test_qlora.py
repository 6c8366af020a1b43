"""QLoRA and LoRA memory fidelity (issue #14): a quantised frozen base, what a frozen base
and PEFT's adapters save for backward, paged optimizers, dequantisation time, exports.

Sources: Dettmers et al. 2023, "QLoRA: Efficient Finetuning of Quantized LLMs" (arXiv
2305.14314; Sec. 1-3 as quoted in each test); bitsandbytes 0.50.2.dev0 (``functional.py``
``quantize_4bit``, ``nn/modules.py`` ``Params4bit`` / ``Int8Params``, ``optim/optimizer.py``);
peft 0.20.1.dev0 (``utils/other.py`` ``prepare_model_for_kbit_training``,
``tuners/tuners_utils.py`` ``cast_adapter_dtype``, ``tuners/lora/layer.py``); the QLoRA
code, artidoro/qlora at 7f4e95a (``qlora.py``, ``scripts/finetune_guanaco_*.sh``);
measurements in ``tests/data/saved_tensors_lora_hf.json`` (``scripts/measure_saved_tensors_lora.py``).
"""

import json
from pathlib import Path

import pytest

from simulation import evaluate_dict
from simulation.activations import CPU, ActivationShape, layer_bytes
from simulation.compute import GPU_FIGURES, layer_times
from simulation.errors import ScenarioError
from simulation.export import deepspeed_config, fsdp_snippet
from simulation.lora import adapter_activation_bytes, base_weight_bytes, quantised_elements
from simulation.params import model_params
from simulation.scenario import Scenario

DATA = json.loads((Path(__file__).parent.parent / "data" / "saved_tensors_lora_hf.json").read_text())
CASES = {c["id"]: c for c in DATA["cases"]}
GIB = 2**30
ALL = ["q", "k", "v", "o", "gate", "up", "down"]

# LLaMA (Touvron et al. 2023, arXiv 2302.13971, Table 2; huggyllama config.json): layers,
# hidden, heads, ffn; vocabulary 32,000, untied head, RMSNorm, SwiGLU.
LLAMA1 = {7: (32, 4096, 32, 11008), 13: (40, 5120, 40, 13824), 33: (60, 6656, 52, 17920),
          65: (80, 8192, 64, 22016)}


def llama1(n):
    layers, h, a, f = LLAMA1[n]
    return dict(name=f"LLaMA-{n}B", num_layers=layers, hidden_size=h, num_attention_heads=a,
                num_kv_heads=a, ffn_hidden_size=f, vocab_size=32000, gated_mlp=True,
                tied_embeddings=False, position_embedding="rope", norm="rmsnorm",
                linear_bias=False, dropout=False, max_seq_len=2048)


def card(gb):
    """One workstation card of ``gb`` GB (RTX A6000-class for 48 GB: 768 GB/s GDDR6;
    RTX 3090/4090-class for 24 GB), PCIe 4.0 x16, 256 GB of host DDR."""
    return {"num_nodes": 1, "gpus_per_node": 1,
            "accelerator": {"name": f"{gb} GB card", "hbm_capacity_bytes": gb * 1e9,
                            "hbm_bytes_per_s": 768e9, "peak_flops_bf16": 150e12,
                            "peak_flops_fp32": 38e12, "host_link_bytes_per_s": 25e9,
                            "scaleup_bytes_per_s": 25e9},
            "tiers": {"ddr": {"capacity_bytes": 256e9, "read_bytes_per_s": 40e9,
                              "write_bytes_per_s": 40e9}}}


def scenario(lora=None, model=None, cluster=None, kind="ddp", **training):
    tr = {"micro_batch_size": 1, "seq_len": 2048, "recompute": "none", **training}
    if lora is not None:
        tr["lora"] = lora
    return {"model": model or {"preset": "llama2-7b"},
            "cluster": cluster or {"node": "dgx-h100", "num_nodes": 1, "gpus_per_node": 1},
            "training": tr, "strategy": {"kind": kind}}


def parts(report, prefix=""):
    return [p for p in report["memory"]["per_gpu"]["hbm"]["parts"] if p["name"].startswith(prefix)]


def part_bytes(report, prefix):
    hits = parts(report, prefix)
    assert len(hits) == 1, [p["name"] for p in parts(report)]
    return hits[0]["bytes"]


# ---------------------------------------------------------------- measured activations

def _shape(cfg, frozen):
    return ActivationShape(seq_len=cfg["s"], micro_batch=cfg["b"], hidden=cfg["h"], heads=cfg["a"],
                           kv_heads=cfg["kv"], ffn=cfg["ffn"], gated_mlp=True, dropout=False,
                           framework="huggingface", norm="rmsnorm", frozen=frozen)


def test_the_lora_data_says_what_it_was_measured_with():
    assert set(DATA["versions"]) >= {"torch", "transformers", "peft"}
    assert DATA["device"] == "cpu" and DATA["dtype"] == "bfloat16"


@pytest.mark.parametrize("case_id", [i for i in CASES if "-frozen-" in i or "-trained-" in i])
def test_a_frozen_layer_saves_what_the_engine_counts(case_id):
    """A LlamaDecoderLayer with every weight frozen (LoRA's base) keeps neither the
    projections' inputs nor RMSNorm's normalised value: equal to the byte."""
    c = CASES[case_id]
    frozen = c["config"]["mode"] == "frozen"
    assert layer_bytes(_shape(c["config"], frozen), CPU) == c["layer_bytes"]
    if frozen:   # and the old count (the trained layer's) is wrong for it
        assert layer_bytes(_shape(c["config"], False), CPU) > 1.2 * c["layer_bytes"]


def _small_model(cfg):
    return Scenario.from_dict(scenario(model=dict(
        name="small", num_layers=1, hidden_size=cfg["h"], num_attention_heads=cfg["a"],
        num_kv_heads=cfg["kv"], ffn_hidden_size=cfg["ffn"], vocab_size=128, gated_mlp=True,
        tied_embeddings=False, position_embedding="rope", norm="rmsnorm", linear_bias=False,
        dropout=False, max_seq_len=1024))).model


@pytest.mark.parametrize("case_id", [i for i in CASES if "-lora-" in i and i.endswith("-autocast")])
def test_peft_adapters_under_autocast_save_what_the_engine_counts(case_id):
    """PEFT's LoraModel (fp32 adapters, bf16 base, torch.autocast bf16): the layer's bytes
    minus the frozen layer's are the adapters' (each target's bf16 input copy, lora_A's
    output, autocast's bf16 weight copies; CPU dropout masks take the fp32 input's dtype)."""
    c, frozen = CASES[case_id], CASES["llama-eager-frozen-b2-s64-h128-a4-kv4-ffn344-autocast"]
    cfg = c["config"]
    assert c["adapter_dtypes"] == ["float32"]
    from simulation.lora import LoraSpec
    lora = LoraSpec(rank=cfg["r"], dropout=cfg["dropout"], targets=tuple(cfg["targets"]))
    added = adapter_activation_bytes(_small_model(cfg), lora, cfg["b"] * cfg["s"], 2, mask_bytes=4)
    assert added == c["layer_bytes"] - frozen["layer_bytes"]


# ---------------------------------------------------------------- quantised base

def test_quantisation_constants_by_hand():
    """QLoRA Sec. 3: "using 32-bit constants and a blocksize of 64 for W, quantization
    constants add 32/64 = 0.5 bits per parameter"; double quantisation "reduces the memory
    footprint per parameter from 32/64 = 0.5 bits, to 8/64 + 32/(64 * 256) = 0.127 bits"."""
    m = Scenario.from_dict(scenario()).model
    lo = Scenario.from_dict(scenario({"base_dtype": "nf4"})).training.lora
    dq = Scenario.from_dict(scenario({"base_dtype": "nf4", "double_quant": True})).training.lora
    assert base_weight_bytes(m, lo) == {"weights": 0.5, "constants": 0.5 / 8}
    assert base_weight_bytes(m, dq)["constants"] * 8 == pytest.approx(0.127, abs=5e-4)
    b128 = Scenario.from_dict(scenario({"base_dtype": "fp4", "quant_block_size": 128})).training.lora
    assert base_weight_bytes(m, b128)["constants"] == 4 / 128
    # int8 (LLM.int8, Int8Params): 1 B a weight, an fp32 scale per output row
    i8 = Scenario.from_dict(scenario({"base_dtype": "int8"})).training.lora
    rows = 4 * 4096 + 2 * 11008 + 4096                 # q, k, v, o; gate, up; down
    elems = 4 * 4096 * 4096 + 3 * 4096 * 11008
    assert base_weight_bytes(m, i8) == {"weights": 1.0, "constants": 4 * rows / elems}


def test_a_4_bit_base_of_llama2_7b_by_hand():
    r = evaluate_dict(scenario({"rank": 8, "base_dtype": "nf4", "double_quant": True}))
    q = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)      # 6,476,005,376 quantised weights
    assert quantised_elements(Scenario.from_dict(scenario()).model) * 32 == q
    assert part_bytes(r, "nf4 frozen base matrices") == q / 2
    assert part_bytes(r, "quantisation constants") == pytest.approx(q * (1 / 64 + 4 / (64 * 256)))
    # embeddings, head and norms: 6,738,415,616 - q = 262,410,240, fp32 after
    # prepare_model_for_kbit_training ("cast all non INT8 parameters to fp32")
    assert part_bytes(r, "fp32 unquantised base parameters") == 4 * (6738415616 - q)
    # bitsandbytes dequantises one matrix at a time: the largest, gate/up/down, 4096 x 11008
    assert part_bytes(r, "16-bit dequantised weight") == 2 * 4096 * 11008
    assert not parts(r, "bf16 frozen base parameters")


def test_the_paper_s_7b_4_bit_base_model_consumes_5048_mb():
    """QLoRA Sec. 2: "In comparison, the 4-bit base model consumes 5,048 MB of memory"
    (LLaMA 7B). The paragraph is about a plain 4-bit base (double quantisation comes in
    Sec. 3): transformers' ``load_in_4bit`` defaults (``BitsAndBytesConfig`` in
    transformers 4.31 ``utils/quantization_config.py``: bnb_4bit_quant_type="fp4",
    bnb_4bit_use_double_quant=False; bitsandbytes' block 64) and PEFT's
    prepare_model_for_kbit_training (fp32 embeddings, head, norms). The engine's
    frozen-base parts within 10 %."""
    r = evaluate_dict(scenario({"rank": 8, "base_dtype": "fp4"}, model=llama1(7)))
    base = sum(p["bytes"] for p in parts(r) if p["category"] == "params" and "LoRA" not in p["name"])
    assert base == pytest.approx(5048e6, rel=0.10)        # 3,238 + 405 + 1,050 = 4,693 MB


def test_double_quantisation_saves_about_3_gb_on_65b():
    """QLoRA Sec. 1: Double Quantization saves "an average of about 0.37 bits per parameter
    (approximately 3 GB for a 65B model)". LLaMA-65B, NF4, block 64, with and without."""
    m = llama1(65)
    plain = evaluate_dict(scenario({"rank": 8, "base_dtype": "nf4"}, model=m), include_step=False)
    dq = evaluate_dict(scenario({"rank": 8, "base_dtype": "nf4", "double_quant": True}, model=m),
                       include_step=False)
    saved = part_bytes(plain, "quantisation constants") - part_bytes(dq, "quantisation constants")
    assert saved == pytest.approx(3e9, rel=0.10)


def _guanaco(n, optimizer):
    """The Guanaco runs (artidoro/qlora scripts/finetune_guanaco_{33,65}b.sh): NF4, double
    quantisation, bf16, LoRA r = 64 (alpha 16, dropout 0.05) on every linear layer
    (find_all_linear_names), per_device_train_batch_size 1, source_max_len 16 +
    target_max_len 512 tokens, gradient checkpointing; qlora.py casts the LoRA layers,
    embed_tokens and lm_head to bf16; its default optim is paged_adamw_32bit."""
    return scenario({"rank": 64, "alpha": 16, "dropout": 0.05, "targets": ALL, "base_dtype": "nf4",
                     "double_quant": True, "adapter_dtype": "bf16"},
                    model=llama1(n), cluster=card(48 if n == 65 else 24), seq_len=528,
                    recompute="full", optimizer=optimizer)


def test_65b_fits_one_48_gb_gpu_and_33b_one_24_gb_gpu_with_paged_optimizers():
    """QLoRA abstract: "finetune a 65B parameter model on a single 48GB GPU"; Sec. 4:
    "paged optimizers are critical to do 33B/65B QLoRA tuning on a single 24/48GB GPU";
    Figure 3 caption: it "allows ... to fit models of certain size (33B/65B) into certain
    GPUs (24/48GB)". With the Guanaco scripts' settings (_guanaco)."""
    r65 = evaluate_dict(_guanaco(65, "paged_adamw"), include_step=False)
    r33 = evaluate_dict(_guanaco(33, "paged_adamw"), include_step=False)
    assert r65["fits"] and r33["fits"]
    # without paging the 33B run's fp32 Adam states (2 x 4 B x 488M adapters) stay on the GPU
    unpaged = evaluate_dict(_guanaco(33, "adamw"), include_step=False)
    assert not unpaged["fits"]
    # and the 65B run is under 48 GB with some room, not by an accident of rounding
    assert r65["memory"]["per_gpu"]["hbm"]["total_bytes"] < 0.9 * 48e9
    # the paged states live in host RAM; the GPU holds one tensor's at a time in the step
    ddr = r33["memory"]["per_node"]["ddr"]["parts"] if "per_node" in r33["memory"] else None
    paged = parts(r33, "paged_adamw optimizer states (fp32), paged in")
    assert len(paged) == 1 and paged[0]["phase"] == "step"
    assert paged[0]["bytes"] == 8 * 64 * 17920         # the largest adapter: B of up/gate, 17920 x 64
    assert ddr is None or any("host pages" in p["name"] for p in ddr)


def test_small_adapters_are_not_paged():
    """bitsandbytes get_state_buffer: tensors under 1e5 elements get ordinary GPU buffers.
    r = 8 on q, v of Llama-2-7B: A is 8 x 4096 = 32,768 elements, B 4096 x 8: none paged."""
    r = evaluate_dict(scenario({"rank": 8}, optimizer="paged_adamw_8bit"), include_step=False)
    resident = parts(r, "paged_adamw_8bit optimizer states (int8), tensors under 1e5")
    assert len(resident) == 1 and resident[0]["bytes"] == 2 * 4_194_304
    assert not parts(r, "paged_adamw_8bit optimizer states (int8), paged in")


def test_qlora_py_adapters_are_16_bit_without_a_master_copy():
    r = evaluate_dict(scenario({"rank": 16, "base_dtype": "nf4", "adapter_dtype": "bf16"}))
    n = 32 * 2 * 16 * 8192
    hbm = r["memory"]["per_gpu"]["hbm"]
    assert part_bytes(r, "bf16 LoRA adapter parameters") == 2 * n
    assert hbm["grads_bytes"] == 2 * n and hbm["optimizer_bytes"] == 8 * n
    assert part_bytes(r, "bf16 unquantised base parameters") == 2 * (6738415616 - 6476005376)


def test_deepspeed_keeps_its_own_masters_for_16_bit_adapters():
    two = {"node": "dgx-h100", "num_nodes": 1, "gpus_per_node": 2}
    r = evaluate_dict(scenario({"rank": 16}, cluster=two, kind="zero2"), include_step=False)
    n = 32 * 2 * 16 * 8192
    assert part_bytes(r, "bf16 LoRA adapter parameters") == 2 * n
    assert part_bytes(r, "fp32 master weights") == 4 * n / 2


# ---------------------------------------------------------------- step time

def test_dequantisation_adds_a_memory_bound_kernel_forward_and_backward():
    bf = Scenario.from_dict(scenario({"rank": 8}))
    q4 = Scenario.from_dict(scenario({"rank": 8, "base_dtype": "nf4"}))
    pc = model_params(bf.model)
    tb, tq = layer_times(bf, pc), layer_times(q4, pc)
    g = GPU_FIGURES["h100-sxm5-80gb"]
    hbm = 3350e9 * g.hbm_fraction
    elems = 4 * 4096 * 4096 + 3 * 4096 * 11008        # one block's matrices
    # read 0.5 B + 4/64 B of constants, write 2 B a weight, once forward, once backward
    dq = elems * (0.5 + 4 / 64 + 2) / hbm
    assert tq["parts"]["dequant"] == pytest.approx(dq)
    assert tq["fwd_s"] - tb["fwd_s"] == pytest.approx(dq)
    assert tq["bwd_s"] - tb["bwd_s"] == pytest.approx(dq)
    r = evaluate_dict(scenario({"rank": 8, "base_dtype": "nf4"}))
    assert r["step"]["compute"]["dequant_s"] == pytest.approx(dq)


# ---------------------------------------------------------------- scenario, exports

@pytest.mark.parametrize("lora,field", [
    ({"base_dtype": "nf3"}, "training.lora.base_dtype"),
    ({"base_dtype": "bf16", "double_quant": True}, "training.lora.double_quant"),
    ({"double_quant": True}, "training.lora.double_quant"),
    ({"base_dtype": "int8", "quant_block_size": 128}, "training.lora.quant_block_size"),
    ({"base_dtype": "nf4", "quant_block_size": 100}, "training.lora.quant_block_size"),
    ({"base_dtype": "nf4", "double_quant": "yes"}, "training.lora.double_quant"),
    ({"adapter_dtype": "int8"}, "training.lora.adapter_dtype"),
])
def test_bad_qlora_fields_are_named(lora, field):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(scenario(lora))
    assert e.value.field == field


def test_the_4_bit_defaults_may_be_sent_with_any_base():
    sc = Scenario.from_dict(scenario({"base_dtype": "int8", "double_quant": False,
                                      "quant_block_size": 64}))
    assert sc.to_dict()["training"]["lora"]["base_dtype"] == "int8"
    assert "double_quant" not in sc.to_dict()["training"]["lora"]


def test_paged_optimizers_are_named_values_of_training_optimizer():
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(scenario(optimizer="paged_adam_4bit"))
    assert e.value.field == "training.optimizer"


def test_qlora_fields_round_trip_and_old_lora_json_is_unchanged():
    old = {"rank": 16, "alpha": 32.0, "dropout": 0.0, "targets": ["q", "v"]}
    assert Scenario.from_dict(scenario(old)).to_dict()["training"]["lora"] == old
    q = {"rank": 16, "dropout": 0.0, "targets": ["q", "v"], "base_dtype": "nf4",
         "double_quant": True, "quant_block_size": 128, "adapter_dtype": "bf16"}
    sc = Scenario.from_dict(scenario(q))
    assert sc.to_dict()["training"]["lora"] == q
    assert Scenario.from_dict(sc.to_dict()) == sc


def test_exports_carry_the_bitsandbytes_config():
    d = scenario({"rank": 16, "base_dtype": "nf4", "double_quant": True}, kind="zero2",
                 optimizer="paged_adamw_8bit")
    notes = " ".join(deepspeed_config(Scenario.from_dict(d))["_tierlab_notes"])
    assert ("BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4', "
            "bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16") in notes
    assert "prepare_model_for_kbit_training" in notes and "PagedAdamW8bit" in notes
    d["strategy"]["kind"] = "fsdp_full_shard"
    d["training"]["lora"] = {"rank": 16, "base_dtype": "int8"}
    snippet = fsdp_snippet(Scenario.from_dict(d))
    assert "BitsAndBytesConfig(load_in_8bit=True)" in snippet
    d["training"]["lora"] = {"rank": 16, "base_dtype": "fp4", "quant_block_size": 128}
    assert "quant_block_size 128 has no BitsAndBytesConfig field" in " ".join(
        fsdp_snippet(Scenario.from_dict(d)).split())


@pytest.mark.parametrize("lora,optimizer", [
    ({"rank": 64, "targets": ALL, "base_dtype": "nf4", "double_quant": True}, "adamw"),
    ({"rank": 64, "targets": ALL, "base_dtype": "int8"}, "paged_adamw_8bit"),
    ({"rank": 64, "targets": ALL, "base_dtype": "nf4", "adapter_dtype": "bf16"}, "paged_adamw"),
])
def test_the_planner_s_hbm_floor_stays_under_the_qlora_memory(lora, optimizer):
    """The planner drops a candidate whose floor is over the card: a 4-bit base (0.5 B a
    weight, not 2), 16-bit adapters without a master copy and paged states must lower it,
    or a QLoRA plan that fits would be rejected."""
    from simulation import planner
    from simulation.parallel import layout
    d = _guanaco(33, optimizer)
    d["training"]["lora"] = lora
    sc = Scenario.from_dict(d)
    floor = planner.hbm_lower_bound_bytes(sc, layout(sc))
    assert floor <= evaluate_dict(d, include_step=False)["memory"]["per_gpu"]["hbm"]["total_bytes"]


@pytest.mark.parametrize("base,published_gib", [(None, 16.2), ("nf4", 7.4)])
def test_torchtune_s_published_llama31_8b_lora_and_qlora_memory(base, published_gib):
    """torchtune README ("Memory and training speed", pytorch/torchtune at bd2a0fc): Llama
    3.1 8B on 1x 4090, LoRA 16.2 GiB and QLoRA 7.4 GiB peak memory per GPU, "batch size 2
    (without gradient accumulation), a dataset packed to sequence length 2048, and torch
    compile enabled"; recipes/configs/llama3_1/8B_{lora,qlora}_single_device.yaml: r = 8
    (alpha 16, dropout 0) on q_proj, v_proj, output_proj and the MLP, dtype bf16 (adapters,
    gradients and torch AdamW's states in bf16: no master copy), activation checkpointing,
    LinearCrossEntropyLoss (chunked: no full logits); QLoRA's base is torchao NF4 (block
    64, its scalers quantised in blocks of 256: double quantisation), embeddings and head
    in bf16. The README does not name the statistic; compared: the engine's allocated
    bytes (torch.cuda.max_memory_allocated, no CUDA context), within 10 %. Not modelled:
    torch.compile's fusions, and torchtune's LoRALinear keeps no input copy per adapter
    (PEFT's does: 0.27 GiB in the one re-run layer, inside the tolerance)."""
    lora = {"rank": 8, "alpha": 16, "targets": ["q", "v", "o", "gate", "up", "down"],
            "adapter_dtype": "bf16"}
    if base:
        lora.update(base_dtype=base, double_quant=True)
    from tests.engine.test_lora import RTX4090
    d = scenario(lora, model={"preset": "llama3.1-8b"},
                 cluster={"num_nodes": 1, "gpus_per_node": 1, "accelerator": RTX4090},
                 micro_batch_size=2, recompute="full", flash_attention=True,
                 loss_kernel="fused_linear_cross_entropy", dtypes={"optimizer_states": "bf16"})
    hbm = evaluate_dict(d, include_step=False)["memory"]["per_gpu"]["hbm"]
    assert hbm["allocated_bytes"] == pytest.approx(published_gib * GIB, rel=0.10)


def test_fsdp_gathers_the_packed_4_bit_block():
    """FSDP-QLoRA: the unsharded unit is the block's packed NF4 storage and constants
    (bnb_4bit_quant_storage bf16 lets FSDP flatten it), not 16-bit weights. Llama-2-7B
    block: 202,375,168 matrix weights x (0.5 + 4/64) B + 2 x 4096 norm weights x 2 B."""
    two = {"node": "dgx-h100", "num_nodes": 1, "gpus_per_node": 2}
    r = evaluate_dict(scenario({"rank": 8, "base_dtype": "nf4"}, cluster=two, kind="fsdp_full_shard"),
                      include_step=False)
    block = 202_375_168 * (0.5 + 4 / 64) + 2 * 4096 * 2
    assert part_bytes(r, "unsharded parameters (2 FSDP units)") == pytest.approx(2 * block)


def test_an_int8_base_dequantises_in_the_backward_only():
    """LLM.int8 (MatMul8bitLt): the forward multiplies int8 weights (int8_scaled_mm), the
    backward dequantises CB to 16-bit (read 1 B, write 2 B) and scales it by SCB in place
    (read 2 B, write 2 B): 7 B a weight, backward only."""
    bf = Scenario.from_dict(scenario({"rank": 8}))
    i8 = Scenario.from_dict(scenario({"rank": 8, "base_dtype": "int8"}))
    pc = model_params(bf.model)
    tb, ti = layer_times(bf, pc), layer_times(i8, pc)
    hbm = 3350e9 * GPU_FIGURES["h100-sxm5-80gb"].hbm_fraction
    elems = 4 * 4096 * 4096 + 3 * 4096 * 11008
    assert ti["fwd_s"] == pytest.approx(tb["fwd_s"])
    assert ti["bwd_s"] - tb["bwd_s"] == pytest.approx(elems * 7 / hbm)


def test_exports_say_how_to_keep_16_bit_adapters():
    d = scenario({"rank": 16, "base_dtype": "nf4", "adapter_dtype": "bf16"}, kind="fsdp_full_shard")
    assert "autocast_adapter_dtype=False" in " ".join(fsdp_snippet(Scenario.from_dict(d)).split())


def test_the_bitsandbytes_compute_dtype_is_the_training_precision():
    d = scenario({"rank": 16, "base_dtype": "nf4"}, kind="zero2", precision="fp16")
    notes = " ".join(deepspeed_config(Scenario.from_dict(d))["_tierlab_notes"])
    assert "bnb_4bit_compute_dtype=torch.float16" in notes


def test_a_qlora_checkpoint_holds_the_adapters_in_their_dtype():
    """PEFT save_pretrained writes the adapters as they are (bf16 under qlora.py), the
    trainer the fp32 Adam m, v: 10 B per adapter parameter, no master copy, no base."""
    r = evaluate_dict(scenario({"rank": 8, "base_dtype": "nf4", "adapter_dtype": "bf16"}))
    assert r["checkpoint"]["size_bytes"] == pytest.approx(10 * 4_194_304)


def test_the_constant_compute_model_adds_the_dequantisation_seconds():
    """compute_efficiency set: FLOPs at peak x efficiency, and the dequantisation (memory
    traffic, no FLOPs) on top: 4-bit, 0.5 + 4/64 + 2 B a weight over the sustained HBM
    bandwidth, forward and backward (the forward twice with full recomputation)."""
    from simulation.step import compute_times
    bf = Scenario.from_dict(scenario({"rank": 8}, compute_efficiency=0.5, recompute="full"))
    q4 = Scenario.from_dict(scenario({"rank": 8, "base_dtype": "nf4"}, compute_efficiency=0.5,
                                     recompute="full"))
    pc = model_params(bf.model)
    tb, tq = compute_times(bf, pc), compute_times(q4, pc)
    hbm = 3350e9 * GPU_FIGURES["h100-sxm5-80gb"].hbm_fraction
    dq = (4 * 4096 * 4096 + 3 * 4096 * 11008) * (0.5 + 4 / 64 + 2) / hbm
    assert tq["fwd_s"] - tb["fwd_s"] == pytest.approx(dq)
    assert tq["bwd_s"] - tb["bwd_s"] == pytest.approx(2 * dq)


UNSLOTH_HF_FA2_MAX_CONTEXT = {12: 932, 16: 2551, 24: 5789, 40: 12264, 48: 15502, 80: 28454}


@pytest.mark.xfail(strict=True, reason=(
    "open: at the Hugging Face + FA2 maximum context lengths the engine's HBM total is "
    "1.10, 1.04, 0.98, 0.94, 0.92 and 0.90 of the card (12 ... 80 GB): the published "
    "lengths are linear, 1,619 tokens per 4 GiB (2.65 MB a token), the engine's slope 2.30 MB "
    "a token (the torch loss's 12 B x 128,256, the fp32 checkpointed layer inputs 4 B x "
    "hidden x 32, tests/data/qlora_residual_dtype.json, the final norm and the allocator "
    "reserve), its constant now 1.05 GB higher (the 16-bit autocast copy of PEFT's fp32 "
    "head, 2 B x vocab x hidden, measured). A whole HF QLoRA step measured with the "
    "profiler's allocation events (bitsandbytes NF4 on its CPU backend, transformers 4.44 "
    "and 5.25: tests/data/qlora_step_peak_hf*.json) peaks where and as the engine counts, "
    "to 0.01 % per token and per logit (the test below), so the steeper published slope is "
    "not in what the step allocates: FlashAttention-2's or cuBLAS's workspaces, the CUDA "
    "caching allocator's segments at tensors of 15 GB, or the benchmark's own set-up; a GPU "
    "measurement is needed"))
def test_unsloth_s_published_hf_qlora_context_lengths():
    """Unsloth README ("Llama 3.1 (8B) max. context length", unslothai/unsloth before
    c606366): 4-bit QLoRA on q, k, v, o, gate, up, down, rank 32, batch size 1, sequences
    padded to the length; the Hugging Face + FA2 column is the longest context that fit a
    card of that VRAM, so the memory at that length is about the card's. Assumed: NF4 with
    double quantisation, PEFT defaults, gradient checkpointing, AdamW, FlashAttention-2."""
    for gb, ctx in UNSLOTH_HF_FA2_MAX_CONTEXT.items():
        cluster = {"num_nodes": 1, "gpus_per_node": 1,
                   "accelerator": {"name": f"{gb} GB card", "hbm_capacity_bytes": gb * GIB,
                                   "hbm_bytes_per_s": 2000e9, "peak_flops_bf16": 300e12,
                                   "peak_flops_fp32": 60e12, "host_link_bytes_per_s": 25e9,
                                   "scaleup_bytes_per_s": 25e9}}
        d = scenario({"rank": 32, "targets": ALL, "base_dtype": "nf4", "double_quant": True},
                     model={"preset": "llama3.1-8b"}, cluster=cluster, seq_len=ctx,
                     recompute="full", flash_attention=True, optimizer="adamw")
        total = evaluate_dict(d, include_step=False)["memory"]["per_gpu"]["hbm"]["total_bytes"]
        assert total == pytest.approx(gb * GIB, rel=0.10), gb


def test_the_qlora_residual_stream_is_fp32_measured():
    """Measurement behind the open Unsloth miss (scripts/measure_qlora_residual_dtype.py,
    transformers + torch versions in the file): with PEFT's fp32 non-quantised parameters
    under bf16 autocast every decoder layer's input (the checkpoint) is fp32."""
    d = json.loads((Path(__file__).parents[1] / "data" / "qlora_residual_dtype.json").read_text())
    assert d["transformers"] and d["torch"]
    assert set(d["layer_input_dtypes"]) == {"torch.float32"}


def test_a_peft_qlora_base_keeps_fp32_checkpointed_layer_inputs():
    """PEFT's fp32 embeddings make the residual stream fp32 (measured above), so full
    recomputation keeps 4 B x hidden a token a layer: the 2 B the 16-bit figure counts plus
    a part of 2 x s x h x L. Hand calculation, Llama 3.1 8B, s = 4096, b = 1, 32 layers:
    2 x 4096 x 4096 x 32 = 1,073,741,824 B. qlora.py's bf16 adapters (bf16 embeddings)
    have no such part."""
    def parts(adapter_dtype):
        lo = {"rank": 32, "targets": ALL, "base_dtype": "nf4", "double_quant": True}
        if adapter_dtype:
            lo["adapter_dtype"] = adapter_dtype
        d = scenario(lo, model={"preset": "llama3.1-8b"}, seq_len=4096, recompute="full",
                     flash_attention=True, optimizer="adamw")
        return {p["name"]: p["bytes"] for p in
                evaluate_dict(d, include_step=False)["memory"]["per_gpu"]["hbm"]["parts"]}
    name = "fp32 residual stream (checkpointed layer inputs: the other 2 B)"
    assert parts(None)[name] == pytest.approx(2 * 4096 * 4096 * 32)
    assert name not in parts("bf16")


# ------------------------------------------ measured with bitsandbytes' own 4-bit layers

QLORA = json.loads((Path(__file__).parent.parent / "data" / "saved_tensors_qlora_hf.json").read_text())


def test_the_qlora_data_says_what_it_was_measured_with():
    assert set(QLORA["versions"]) >= {"torch", "transformers", "peft", "bitsandbytes"}
    assert QLORA["device"] == "cpu" and len(QLORA["cases"]) == 8


@pytest.mark.parametrize("case", QLORA["cases"], ids=[c["id"] for c in QLORA["cases"]])
def test_a_bitsandbytes_qlora_layer_saves_what_the_engine_counts(case):
    """One LlamaDecoderLayer with bitsandbytes' NF4 Linear4bit base (CPU backend), PEFT LoRA
    (r 8) on all seven projections, fp32 adapters, bf16 autocast, SDPA
    (scripts/measure_saved_tensors_qlora.py): with a bf16 input the frozen layer's terms
    plus the adapters' equal the measurement to the byte; with an fp32 input (PEFT's fp32
    residual) the frozen MLP's gate, SiLU output and up are fp32, 6 B x b x s x f more
    (fp32_residual_mlp_bytes), and nothing else changes."""
    from simulation.activations import fp32_residual_mlp_bytes
    from simulation.lora import LoraSpec
    cfg = case["config"]
    x = ActivationShape(seq_len=cfg["s"], micro_batch=cfg["b"], hidden=cfg["h"], heads=cfg["a"],
                        kv_heads=cfg["kv"], ffn=cfg["ffn"], gated_mlp=True, dropout=False,
                        flash_attention=True, framework="huggingface", norm="rmsnorm", frozen=True)
    lora = LoraSpec(rank=cfg["r"], dropout=cfg["dropout"], targets=tuple(ALL))
    adapters = adapter_activation_bytes(_small_model(cfg), lora, cfg["b"] * cfg["s"], 2,
                                        mask_bytes=4, o_input_kept=True)
    engine = layer_bytes(x, CPU) + adapters
    if cfg["residual"] == "fp32":
        assert case["layer_output_dtype"] == "float32"
        extra = fp32_residual_mlp_bytes(x)
        assert extra == 6 * cfg["b"] * cfg["s"] * cfg["ffn"]
        engine += extra
    else:
        assert case["layer_output_dtype"] == "bfloat16"
    assert engine == case["layer_bytes"]


def test_the_fp32_residual_mlp_tensors_are_a_part_where_layers_are_held():
    """The measured 6 B x b x s x f a layer (above) as its own part. Hand calculation,
    Llama 3.1 8B (f 14,336, 32 layers), b = 1, s = 2,048: without recomputation every layer
    keeps them, 6 x 2,048 x 14,336 x 32 = 5,637,144,576 B; with full recomputation only the
    layer re-run in backward, 176,160,768 B, in the backward phase. qlora.py's bf16 adapters
    (a 16-bit residual) and DeepSpeed (its bf16 engine casts the whole model) have none."""
    def report(recompute, adapter_dtype=None, kind="ddp"):
        lo = {"rank": 32, "targets": ALL, "base_dtype": "nf4", "double_quant": True}
        if adapter_dtype:
            lo["adapter_dtype"] = adapter_dtype
        d = scenario(lo, model={"preset": "llama3.1-8b"}, seq_len=2048, recompute=recompute,
                     flash_attention=True, optimizer="adamw", kind=kind)
        return evaluate_dict(d, include_step=False)
    prefix = "fp32 MLP tensors of the fp32 residual"
    none = parts(report("none"), prefix)
    assert [p["bytes"] for p in none] == [6 * 2048 * 14336 * 32] and none[0]["phase"] == "fwd_bwd"
    full = parts(report("full"), prefix)
    assert [p["bytes"] for p in full] == [6 * 2048 * 14336] and full[0]["phase"] == "backward"
    assert parts(report("none", adapter_dtype="bf16"), prefix) == []
    assert parts(report("none", kind="zero2"), prefix) == []


# ------------------------------------------- a whole step's peak (allocator events, CPU)

def _tiny_qlora_loss_moment(s, vocab):
    """The engine's bytes at the loss of scripts/measure_qlora_step_peak.py's model (2
    Llama layers, h 64, f 224, 4 heads, 2 KV heads; NF4 + double quantisation, PEFT LoRA r 32
    on all seven, full recomputation, SDPA), fragmentation left out: the profiler counts
    allocations, not a caching allocator's reserve."""
    model = dict(name="tiny", num_layers=2, hidden_size=64, num_attention_heads=4, num_kv_heads=2,
                 ffn_hidden_size=224, vocab_size=vocab, gated_mlp=True, tied_embeddings=False,
                 position_embedding="rope", norm="rmsnorm", linear_bias=False, dropout=False,
                 max_seq_len=2048)
    d = scenario({"rank": 32, "targets": ALL, "base_dtype": "nf4", "double_quant": True}, model=model,
                 seq_len=s, recompute="full", flash_attention=True, optimizer="adamw")
    hbm = evaluate_dict(d, include_step=False)["memory"]["per_gpu"]["hbm"]
    assert hbm["peak_phase"] == "loss"
    frag = sum(p["bytes"] for p in hbm["parts"] if p["name"] == "allocator fragmentation and reserve")
    return hbm["moments_bytes"]["loss"] - frag


@pytest.mark.parametrize("name", ["qlora_step_peak_hf.json", "qlora_step_peak_hf_4.44.json"])
def test_a_qlora_step_peaks_where_and_as_the_engine_counts(name):
    """One HF QLoRA training step (bitsandbytes NF4 on its CPU backend, PEFT's
    prepare_model_for_kbit_training and get_peft_model, autocast bf16, reentrant gradient
    checkpointing) under torch.profiler's memory events (scripts/measure_qlora_step_peak.py),
    with transformers 5.25 and 4.44 (Unsloth's table's time) alike: the peak is in
    _log_softmax_backward_data, at the start of backward. Per token of sequence (256 -> 512
    at vocab 32,000) and per extra logit (vocab 32,000 -> 64,000 at 512 tokens) the engine's
    loss moment grows as the measured peak does, to 0.01 %: 12 B a logit (the fp32
    log-probabilities and two fp32 gradients), the fp32 checkpoints, the final norm, and the
    16-bit copy autocast makes of the fp32 head weight (2 B x vocab x hidden, which the
    engine did not count before: 4,096,000 B of the 200,704,000 the vocabulary adds)."""
    d = json.loads((Path(__file__).parent.parent / "data" / name).read_text())
    assert d["device"] == "cpu" and {"torch", "transformers", "peft", "bitsandbytes"} <= set(d["versions"])
    peak = {(c["config"]["s"], c["config"]["vocab"]): c for c in d["cases"]}
    assert {c["peak_op"] for c in d["cases"]} == {"aten::_log_softmax_backward_data"}
    assert {c["peak_phase"] for c in d["cases"]} == {"backward"}
    per_token = peak[512, 32000]["peak_bytes"] - peak[256, 32000]["peak_bytes"]
    per_vocab = peak[512, 64000]["peak_bytes"] - peak[512, 32000]["peak_bytes"]
    assert _tiny_qlora_loss_moment(512, 32000) - _tiny_qlora_loss_moment(256, 32000) == \
        pytest.approx(per_token, rel=1e-4)
    # transformers before 4.46 shifted the logits (LlamaForCausalLM.forward: logits[..., :-1,
    # :]), so its loss covers one position fewer; since, ForCausalLMLoss pads the labels
    # instead and covers all 512, as the engine counts
    old = tuple(int(x) for x in d["versions"]["transformers"].split(".")[:2]) < (4, 46)
    shifted = 12 * 32000 if old else 0
    assert _tiny_qlora_loss_moment(512, 64000) - _tiny_qlora_loss_moment(512, 32000) - shifted == \
        pytest.approx(per_vocab, rel=1e-4)
    assert per_vocab == pytest.approx(12 * 32000 * (511 if old else 512) + 2 * 32000 * 64, rel=1e-4)
