"""Activation checkpointing as users set it (issue #15): layer-selective full recomputation
(``training.recompute_layers``, ``training.recompute_every``) and activation offload to
the CPU overlapped with compute (``strategy.offload_activations``), worked by hand.

Sources:
* Megatron-LM ``--recompute-granularity full --recompute-method block
  --recompute-num-layers k``: megatron/core/transformer/transformer_block.py
  ``_checkpointed_forward`` (core_r0.11.0; at d98e8a6 the same loop is in
  megatron/core/recompute.py): layer l of a stage runs under ``tensor_parallel.checkpoint``
  when ``l < recompute_num_layers``, plainly otherwise.
* torchtitan ``activation_checkpoint.mode = "selective"``, ``selective_ac_option = "k"``:
  torchtitan/models/llama3/infra/parallelize.py ``_apply_ac_to_transformer_block`` (at
  55e42c0): a counter of the blocks passed in, starting at 1, wraps a block when
  ``count % k == 0``.
* Korthikanti et al. 2022, Eq. 2: a layer keeps ``s b h (34 + 5 a s / h)`` bytes without
  recomputation; full recomputation keeps its 16-bit input, ``2 s b h``.
"""

import pytest

from simulation import evaluate_dict
from simulation.errors import ScenarioError
from simulation.export import deepspeed_config, fsdp_snippet
from simulation.memory import build_parts
from simulation.params import model_params
from simulation.parallel import layout
from simulation.scenario import Scenario, checkpointed_layers
from simulation.scheduler import simulate
from simulation.states import state_bytes
from simulation.step import attribute, layer_flops, rank_model
from simulation.stepgraph import graph_arrays, task_names
from tests.engine.test_step import LINKS, tiny

# A GPT-style layer Korthikanti's Eq. 2 covers exactly: LayerNorm, GeLU MLP of 4h, dropout,
# eager attention, Megatron's kernels.
GPT = {"name": "gpt-1024", "num_layers": 8, "hidden_size": 1024, "num_attention_heads": 16,
       "ffn_hidden_size": 4096, "vocab_size": 32000, "gated_mlp": False, "norm": "layernorm",
       "dropout": True, "position_embedding": "learned"}
S, B, H, A = 1024, 2, 1024, 16
WHOLE = S * B * H * (34 + 5 * A * S / H)      # 239,075,328 B a layer, Eq. 2
INPUT = 2 * S * B * H                          # 4,194,304 B: the checkpointed layer's input


def scenario(model=GPT, gpus=1, **training):
    tr = {"micro_batch_size": B, "seq_len": S, "recompute": "full", "framework": "megatron",
          **training}
    return {"model": model, "cluster": {"node": "dgx-h100", "num_nodes": 1, "gpus_per_node": gpus},
            "training": tr, "strategy": {"kind": "ddp"}}


def activation_parts(report):
    return {p["name"]: p["bytes"] for p in report["memory"]["per_gpu"]["hbm"]["parts"]
            if p["category"] == "activations"}


def stored(report):
    hits = [b for n, b in activation_parts(report).items() if n.startswith("activations (")]
    assert len(hits) == 1
    return hits[0]


def working_set(report):
    return sum(b for n, b in activation_parts(report).items() if n.startswith("recompute working set"))


def test_the_two_layer_kinds_are_korthikantis():
    assert stored(evaluate_dict(scenario(recompute="none"))) == pytest.approx(8 * WHOLE)
    assert stored(evaluate_dict(scenario())) == pytest.approx(8 * INPUT)


def test_megatron_block_keeps_inputs_of_k_layers_and_everything_of_the_rest():
    # --recompute-method block --recompute-num-layers 3 on 8 layers: layers 0-2 checkpointed
    # 3 x 4,194,304 + 5 x 239,075,328 = 1,207,959,552 B
    r = evaluate_dict(scenario(recompute_layers=3))
    assert stored(r) == pytest.approx(3 * INPUT + 5 * WHOLE) == 1_207_959_552
    # layers 3-7 run plainly, and the first in backward (7) is plain: by the time layer 2 is
    # rebuilt, layers 7..3 have freed 5 whole layers; no working set on top
    assert working_set(r) == 0
    # full recomputation of every layer: the rebuilt layer comes on top, whole - input
    assert working_set(evaluate_dict(scenario())) == pytest.approx(WHOLE - INPUT)


def test_block_with_k_at_least_the_stage_is_full_recomputation():
    full = activation_parts(evaluate_dict(scenario()))
    assert activation_parts(evaluate_dict(scenario(recompute_layers=8))) == full
    assert activation_parts(evaluate_dict(scenario(recompute_layers=100))) == full


def test_torchtitan_every_kth_layer_counts_from_one():
    # torchtitan's counter: blocks 1..8, wrapped when count % k == 0
    for k in (1, 2, 3, 5, 8, 9):
        wrapped = [c for c in range(1, 9) if c % k == 0]
        sc = Scenario.from_dict(scenario(recompute_every=k))
        assert checkpointed_layers(sc.training, 8) == len(wrapped)
    # k = 2: blocks 2, 4, 6, 8; block 8 (the first in backward) is checkpointed, so its
    # rebuild comes on top of everything stored
    r = evaluate_dict(scenario(recompute_every=2))
    assert stored(r) == pytest.approx(4 * INPUT + 4 * WHOLE)
    assert working_set(r) == pytest.approx(WHOLE - INPUT)
    # k = 3: blocks 3 and 6; blocks 7 and 8 are plain and run their backward first
    r = evaluate_dict(scenario(recompute_every=3))
    assert stored(r) == pytest.approx(2 * INPUT + 6 * WHOLE)
    assert working_set(r) == 0


def test_counts_are_per_pipeline_stage():
    # 8 layers on 2 stages, 4 per stage; block k = 3 checkpoints 3 of each stage's 4.
    # global batch 16 = 2 x 8 micro-batches: the first stage holds p = 2 in flight
    # (Korthikanti Sec. 4.2.3), so 2 x (3 x input + 1 x whole) per first-stage GPU
    sc = Scenario.from_dict(scenario(gpus=2, recompute_layers=3, pipeline_parallel=2,
                                     global_batch_size=16))
    pc, lay = model_params(sc.model), layout(sc)
    for stage, in_flight in (("first", 2), ("last", 1)):
        parts = build_parts(sc, pc, lay, state_bytes("bf16", "adam"), stage)
        held = [p["bytes"] for p in parts if p["name"].startswith("activations (")]
        assert held == [pytest.approx(in_flight * (3 * INPUT + 1 * WHOLE))]


def test_recompute_time_is_one_forward_per_checkpointed_layer():
    # constant compute model: a layer's backward is 2 x its forward, plus a forward for a
    # checkpointed layer; the graph's layers are alike, so each carries n / L of one
    def flops(**kw):
        sc = Scenario.from_dict(scenario(compute_efficiency=0.5, **kw))
        return layer_flops(sc, model_params(sc.model))
    none, full, part = flops(recompute="none"), flops(), flops(recompute_layers=3)
    assert full["bwd"] - none["bwd"] == pytest.approx(none["fwd"])
    assert part["bwd"] - none["bwd"] == pytest.approx(3 / 8 * none["fwd"])
    assert part["fwd"] == none["fwd"]
    # the work model: the same share of the rerun forward's seconds
    secs = {k: evaluate_dict(scenario(**kw))["step"]["compute"]["layer_bwd_s"]
            for k, kw in (("none", {"recompute": "none"}), ("full", {}), ("every4", {"recompute_every": 4}))}
    assert secs["every4"] - secs["none"] == pytest.approx(2 / 8 * (secs["full"] - secs["none"]))


def test_rerun_forward_tp_allreduces_follow_the_checkpointed_share():
    # Megatron TP: 2 all-reduces a layer's forward, 2 its backward; a rerun forward has its
    # 2 again. The alike layers carry the mean to the nearest whole: 2 + round(2 n / L)
    def allreduces(**kw):
        sc = Scenario.from_dict(scenario(gpus=2, tensor_parallel=2, **kw))
        return rank_model(sc, model_params(sc.model), layout(sc),
                          state_bytes("bf16", "adam")).bwd_allreduces
    assert allreduces() == 4 and allreduces(recompute="none") == 2
    assert allreduces(recompute_layers=3) == 3          # 2 + round(0.75)
    assert allreduces(recompute_layers=1) == 2          # 2 + round(0.25)


def test_bad_input_names_the_field():
    with pytest.raises(ScenarioError, match=r"training\.recompute_layers.*needs recompute full"):
        Scenario.from_dict(scenario(recompute="selective", recompute_layers=2))
    with pytest.raises(ScenarioError, match=r"training\.recompute_every.*not both"):
        Scenario.from_dict(scenario(recompute_layers=2, recompute_every=2))
    with pytest.raises(ScenarioError, match=r"training\.recompute_every.*at least 1"):
        Scenario.from_dict(scenario(recompute_every=0))


def test_round_trip_and_default_json_unchanged():
    sc = Scenario.from_dict(scenario(recompute_every=4))
    assert sc.to_dict()["training"]["recompute_every"] == 4
    assert Scenario.from_dict(sc.to_dict()) == sc
    plain = Scenario.from_dict(scenario()).to_dict()["training"]
    assert "recompute_layers" not in plain and "recompute_every" not in plain


def test_exports_say_which_layers():
    sc = Scenario.from_dict(scenario(recompute_layers=3))
    notes = " ".join(deepspeed_config(sc)["_tierlab_notes"])
    assert "--recompute-method block --recompute-num-layers 3" in notes
    assert "blocks[:3]" in fsdp_snippet(sc)
    sc = Scenario.from_dict(scenario(recompute_every=2))
    assert 'selective_ac_option = "2"' in " ".join(deepspeed_config(sc)["_tierlab_notes"])
    assert "blocks[2 - 1::2]" in fsdp_snippet(sc)


# ---- activation offload to the CPU, overlapped with compute


def test_activation_offload_copies_run_beside_the_next_layers_compute():
    # 3 layers, forward 1 s, backward 2 s; each layer's checkpoint 0.5e9 B over PCIe at
    # 1e9 B/s: 0.5 s a copy each way. By hand:
    #   f0 [0,1] f1 [1,2] f2 [2,3]; copies out o0 [1,1.5] o1 [2,2.5], beside f1 and f2;
    #   layer 2's checkpoint stays on the GPU (DeepSpeed 0.19.6 keep_last_count=1: its
    #   backward comes first), so b2 [3,5] waits for nothing;
    #   two HBM slots: i1 may come back once the backward starts, [3,3.5] beside b2;
    #   i0 once b2 is done, [5,5.5] beside b1 [5,7]; b0 [7,9]. Nothing exposed.
    r = tiny(layers=3, stage=0, shard=1, dp=1, offload_activations="cpu", act_ckpt_bytes=0.5e9,
             params_per_rank=1e6, unit_params=1e6)
    names = task_names(r, True)[0]
    assert "L2 activations to DDR" not in names and "L2 activations from DDR" not in names
    for engine in ("python", "c"):
        a = graph_arrays(r, LINKS, True, engine)
        s = simulate(a, engine)
        at = {n: (float(b), float(e)) for n, b, e in zip(names, s.start_s, s.end_s)}
        assert at["forward L1"] == pytest.approx((1.0, 2.0))         # not held up by o0
        assert at["L0 activations to DDR"] == pytest.approx((1.0, 1.5))
        assert at["L1 activations to DDR"] == pytest.approx((2.0, 2.5))
        assert at["backward L2"] == pytest.approx((3.0, 5.0))
        assert at["L1 activations from DDR"] == pytest.approx((3.0, 3.5))
        assert at["L0 activations from DDR"] == pytest.approx((5.0, 5.5))
        assert at["backward L1"] == pytest.approx((5.0, 7.0))
        assert at["backward L0"] == pytest.approx((7.0, 9.0))
        assert attribute(a, s, engine)["exposed_offload"] == pytest.approx(0.0)


def test_activation_copies_back_are_exposed_when_pcie_is_slower_than_backward():
    # the same with 3e9 B checkpoints: 3 s a copy each way alone on its link. o0 runs alone
    # on PCIe d2h from 1 to 2 (1e9 B), then shares it with o1 at 0.5e9 B/s each: o0's last
    # 2e9 B end at 6; o1 has 2e9 B by then, its last 1e9 B alone: 7. b2 [3,5] needs none.
    # i1 after o1: [7,10] (h2d is a link of its own); b1 waits for it: [10,12]; i0 after
    # o0, i1 and b2: [10,13]; b0 [13,15]. The GPU waits [5,10] and [12,13]: 6 s exposed,
    # and the forward is never held up by the copies.
    r = tiny(layers=3, stage=0, shard=1, dp=1, offload_activations="cpu", act_ckpt_bytes=3e9,
             params_per_rank=1e6, unit_params=1e6)
    names = task_names(r, True)[0]
    for engine in ("python", "c"):
        a = graph_arrays(r, LINKS, True, engine)
        s = simulate(a, engine)
        at = {n: (float(b), float(e)) for n, b, e in zip(names, s.start_s, s.end_s)}
        assert at["forward L2"] == pytest.approx((2.0, 3.0))
        assert at["L0 activations to DDR"] == pytest.approx((1.0, 6.0))
        assert at["L1 activations to DDR"] == pytest.approx((2.0, 7.0))
        assert at["L1 activations from DDR"] == pytest.approx((7.0, 10.0))
        assert at["backward L1"] == pytest.approx((10.0, 12.0))
        assert at["L0 activations from DDR"] == pytest.approx((10.0, 13.0))
        assert at["backward L0"] == pytest.approx((13.0, 15.0))
        assert attribute(a, s, engine)["exposed_offload"] == pytest.approx(6.0)


def test_deepspeed_export_says_partitioned_cpu_checkpoints_are_blocking_copies():
    sc = Scenario.from_dict({**scenario(gpus=2, tensor_parallel=2),
                             "strategy": {"kind": "zero1", "offload_activations": "cpu"}})
    cfg = deepspeed_config(sc)
    assert cfg["activation_checkpointing"]["cpu_checkpointing"] is True
    assert any("blocking" in n for n in cfg["_tierlab_notes"])
    one = Scenario.from_dict({**scenario(), "strategy": {"kind": "zero1", "offload_activations": "cpu"}})
    assert not any("blocking" in n for n in deepspeed_config(one).get("_tierlab_notes", []))


def test_megatron_block_counts_per_model_chunk_with_interleaving():
    # core_r0.11.0 get_num_layers_to_build: with a virtual pipeline each model chunk is a
    # TransformerBlock of num_layers / pp / vp layers, and _checkpointed_forward checkpoints
    # the first k of each: 32 layers, pp 2, vp 4 -> chunks of 4; k = 3 -> 4 x 3 = 12 of 16
    sc = Scenario.from_dict({**scenario({**GPT, "num_layers": 32}, gpus=2, recompute_layers=3,
                                        pipeline_parallel=2, interleave_stages=4,
                                        global_batch_size=16)})
    assert checkpointed_layers(sc.training, 16) == 12


def test_layer_selective_recompute_with_cpu_activation_offload_is_refused_naming_the_field():
    # found by a newcomer: recompute_layers 8 with offload_activations cpu offloaded 30 whole
    # layers and the step did not change; which tensors CPU checkpointing would move from a
    # partly checkpointed stage is not modelled, so it is refused, not guessed
    from simulation.errors import ScenarioError
    from simulation.scenario import Scenario
    for key in ("recompute_layers", "recompute_every"):
        with pytest.raises(ScenarioError) as e:
            Scenario.from_dict({"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100", "num_nodes": 1},
                                "training": {"recompute": "full", key: 8},
                                "strategy": {"kind": "zero3", "offload_activations": "cpu"}})
        assert e.value.field == f"training.{key}" and "offload_activations" in e.value.message
