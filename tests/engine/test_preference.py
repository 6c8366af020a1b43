"""Preference tuning (DPO, ``training.preference``; issue #14) worked by hand.

Sources (TRL v1.9.0): trl/trainer/dpo_trainer.py — ``DataCollatorForPreference``
concatenates the chosen and rejected completions along the batch (``torch.cat(pad([chosen_ids,
rejected_ids]))``; ``concatenated_forward`` did the same up to v0.24), ``_compute_loss`` runs
the policy, then the reference under ``torch.no_grad`` (the policy with ``use_adapter(model,
None)`` for a PEFT model without ``ref_model``), or reads ``ref_chosen_logps`` with
``precompute_ref_log_probs``; trl/models/utils.py ``prepare_deepspeed`` (ZeRO-3: the
reference is sharded like the policy; any other stage: stage 0, whole) and ``prepare_fsdp``.
Korthikanti et al. 2022 Eq. 2 for a layer's activations.
"""

import pytest

from simulation import evaluate_dict
from simulation import collectives as nccl
from simulation.errors import ScenarioError
from simulation.export import deepspeed_config, fsdp_snippet
from simulation.memory import reference_forward_working_bytes
from simulation.params import model_params
from simulation.parallel import layout
from simulation.scenario import Scenario
from simulation.step import layer_flops, links_for, peak_flops, reference_forward_s

P7 = 6_738_415_616          # Llama-2-7B
GPT = {"name": "gpt-1024", "num_layers": 8, "hidden_size": 1024, "num_attention_heads": 16,
       "ffn_hidden_size": 4096, "vocab_size": 32000, "gated_mlp": False, "norm": "layernorm",
       "dropout": True, "position_embedding": "learned"}
S, H, A, V = 1024, 1024, 16, 32000


def scenario(reference=None, model=None, lora=None, kind="ddp", gpus=1, **training):
    tr = {"micro_batch_size": 1, "seq_len": S, "recompute": "none", "framework": "megatron",
          **training}
    if reference is not None:
        tr["preference"] = {"method": "dpo", "reference": reference}
    if lora is not None:
        tr["lora"] = lora
    return {"model": model or GPT,
            "cluster": {"node": "dgx-h100", "num_nodes": 1, "gpus_per_node": gpus},
            "training": tr, "strategy": {"kind": kind}}


def parts(report):
    return {p["name"]: p for p in report["memory"]["per_gpu"]["hbm"]["parts"]}


def part(report, prefix):
    hits = [p["bytes"] for n, p in parts(report).items() if n.startswith(prefix)]
    assert len(hits) == 1, list(parts(report))
    return hits[0]


def test_a_separate_reference_is_a_16_bit_copy_whole_or_sharded():
    # Llama-2-7B in bf16: 2 B x 6,738,415,616 = 13,476,831,232 B on the one GPU (stage 0)
    r = evaluate_dict(scenario("separate", model={"preset": "llama2-7b"}))
    assert part(r, "reference model weights") == 2 * P7
    # ZeRO-3 over 8 GPUs: prepare_deepspeed keeps stage 3, so 2 x P / 8 each
    r = evaluate_dict(scenario("separate", model={"preset": "llama2-7b"}, kind="zero3", gpus=8))
    assert part(r, "reference model weights") == pytest.approx(2 * P7 / 8)
    # ZeRO-2: prepare_deepspeed sets stage 0 for the reference: whole on every rank
    r = evaluate_dict(scenario("separate", model={"preset": "llama2-7b"}, kind="zero2", gpus=8))
    assert part(r, "reference model weights") == 2 * P7


def test_adapters_off_and_precomputed_hold_no_reference_weights():
    for ref, lora in (("adapters_off", {"rank": 8}), ("precomputed", None)):
        names = parts(evaluate_dict(scenario(ref, lora=lora)))
        assert not any(n.startswith("reference model weights") for n in names)
    names = parts(evaluate_dict(scenario("precomputed")))
    assert not any(n.startswith("reference forward") for n in names)


def test_the_policy_runs_twice_the_sequences():
    # chosen + rejected: 2 sequences a micro-batch of 1 example. Eq. 2 with b = 2:
    # s b h (34 + 5 a s / h) = 1024 x 2 x 1024 x (34 + 80) = 239,075,328 B a layer, 8 layers
    r = evaluate_dict(scenario("precomputed"))
    assert part(r, "activations (") == pytest.approx(8 * S * 2 * H * (34 + 5 * A * S / H))
    # the policy's logits and loss for 2 x 1024 tokens: 12 B x tokens x vocab (loss.py)
    assert part(r, "logits and cross-entropy") == 12 * 2 * S * V
    # and its step time is that of 2 sequences without preference tuning
    two = evaluate_dict(scenario(micro_batch_size=2))
    assert r["step"]["time_s"] == pytest.approx(two["step"]["time_s"])
    # throughput counts sequences' tokens (2 x 1024 a step), samples count examples (1)
    tp = r["throughput"]
    assert tp["tokens_per_s"] == pytest.approx(2 * S / r["step"]["time_s"])
    assert tp["samples_per_s"] == pytest.approx(1 / r["step"]["time_s"])


def test_reference_forward_keeps_no_activations_only_a_layer_and_its_logits():
    # 2 sequences x 1024 = 2048 tokens, no gate, eager attention, bf16 (A = 2 B):
    #   MLP: 2 x 2048 x (2 x 1024 + 2 x 4096) = 41,943,040 B
    #   attention: 2 x 2048 x (2 x 1024 + (16 + 32) x 64) + 2 x 16 x 1024^2 x (2 + 4)
    #            = 20,971,520 + 201,326,592 = 222,298,112 B (the larger)
    #   logits: 2 B x (2048 + one row of 1024) x 32000 = 196,608,000 B
    r = evaluate_dict(scenario("separate"))
    assert part(r, "reference forward: one layer") == 222_298_112
    assert part(r, "reference forward: logits") == 196_608_000
    # with flash attention the MLP's peak is the larger
    sc = Scenario.from_dict(scenario("separate", flash_attention=True))
    assert reference_forward_working_bytes(sc.model, sc.training) == 2 * 2048 * (2 * 1024 + 3 * 4096 - 4096)
    # the same for the policy's base with its adapters off: a forward, no weights
    r = evaluate_dict(scenario("adapters_off", lora={"rank": 8}))
    assert part(r, "reference forward: one layer") == 222_298_112


def test_adapters_off_needs_lora_and_other_bad_input_names_the_field():
    with pytest.raises(ScenarioError, match=r"training\.preference\.reference.*needs training\.lora"):
        Scenario.from_dict(scenario("adapters_off"))
    with pytest.raises(ScenarioError, match=r"training\.preference\.reference.*must be one of"):
        Scenario.from_dict(scenario("base"))
    bad = scenario("separate")
    bad["training"]["preference"]["beta"] = 0.1
    with pytest.raises(ScenarioError, match=r"training\.preference"):
        Scenario.from_dict(bad)
    with pytest.raises(ScenarioError, match=r"training\.preference: .*pipeline"):
        Scenario.from_dict(scenario("separate", gpus=2, pipeline_parallel=2, global_batch_size=4))


def test_step_time_adds_the_reference_forward_on_2x_sequences():
    # constant compute model, one GPU (no communication): the reference forward is the
    # layers' forward FLOPs on 2 sequences and the head's forward, at peak x 0.5
    sc = Scenario.from_dict(scenario("separate", compute_efficiency=0.5))
    pc = model_params(sc.model)
    fl = layer_flops(sc, pc)
    rate = peak_flops(sc) * 0.5
    by_hand = (8 * fl["fwd"] + fl["head_fwd"]) / rate
    # fwd FLOPs of a layer for 2 x 1024 tokens: 2 x matmul weights x tokens + 4 b s^2 h, the
    # weights 4h^2 (attention) + 8h^2 (MLP), no biases
    assert pc.per_layer == 12 * H * H + 4 * H                   # + two LayerNorms' 4h
    assert fl["fwd"] == pytest.approx(2 * 12 * H * H * 2048 + 4 * 2 * S * S * H)
    r = evaluate_dict(scenario("separate", compute_efficiency=0.5))
    pre = evaluate_dict(scenario("precomputed", compute_efficiency=0.5))
    assert r["step"]["reference_forward_s"] == pytest.approx(by_hand)
    assert r["step"]["time_s"] - pre["step"]["time_s"] == pytest.approx(by_hand)
    assert "reference_forward_s" in pre["step"] and pre["step"]["reference_forward_s"] == 0
    # MFU's model FLOPs: the policy's 6 N per token plus the reference's 2 N: x 4/3
    assert r["step"]["model_flops"] == pytest.approx(4 / 3 * pre["step"]["model_flops"])


def test_zero3_reference_gathers_each_layer_behind_the_previous_ones_compute():
    sc = Scenario.from_dict(scenario("separate", model={"preset": "llama2-7b"}, kind="zero3",
                                     gpus=8, compute_efficiency=0.5))
    pc, lay = model_params(sc.model), layout(sc)
    links = links_for(sc, lay)
    fl = layer_flops(sc, pc)
    rate = peak_flops(sc) * 0.5
    gather = nccl.collective_time_s("allgather", 2 * pc.per_layer, 8, 1,
                                    nccl.bus_bandwidth(8, False, links["nvlink"], links["nic"]))
    layer = max(fl["fwd"] / rate, gather)
    got = reference_forward_s(sc, pc, lay, links)
    assert got["total_s"] == pytest.approx(gather + 32 * layer + fl["head_fwd"] / rate)
    assert got["comm_s"] == pytest.approx(gather + 32 * (layer - fl["fwd"] / rate))


def test_round_trip_and_default_json_unchanged():
    sc = Scenario.from_dict(scenario("adapters_off", lora={"rank": 8}))
    assert sc.to_dict()["training"]["preference"] == {"method": "dpo", "reference": "adapters_off"}
    assert Scenario.from_dict(sc.to_dict()) == sc
    assert "preference" not in Scenario.from_dict(scenario()).to_dict()["training"]


def test_exports_name_trl_dpo_config():
    sc = Scenario.from_dict(scenario("precomputed"))
    notes = " ".join(deepspeed_config(sc)["_tierlab_notes"])
    assert "DPOConfig(per_device_train_batch_size=1, max_length=1024, precompute_ref_log_probs=True" in notes
    assert "2 sequences a micro-batch" in notes
    text = fsdp_snippet(Scenario.from_dict(scenario("adapters_off", lora={"rank": 8}, kind="fsdp_full_shard")))
    assert "DPOTrainer" in text and "peft_config" in text


def test_the_report_says_what_it_counts():
    for ref, lora in (("separate", None), ("adapters_off", {"rank": 8}), ("precomputed", None)):
        notes = " ".join(evaluate_dict(scenario(ref, lora=lora))["notes"])
        assert "chosen and a rejected" in notes
        assert ("not counted in memory or step time" in notes) == (ref == "precomputed")
