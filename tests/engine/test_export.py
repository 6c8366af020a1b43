"""Exported DeepSpeed config and FSDP snippet follow the scenario."""

import ast
import json

from simulation import Scenario
from simulation.export import deepspeed_config, fsdp_snippet


def sc(**strategy):
    return Scenario.from_dict({"model": "llama2-70b", "cluster": {"node": "dgx-h100", "num_nodes": 2},
                               "training": {"micro_batch_size": 2, "global_batch_size": 64,
                                            "recompute": "full"},
                               "strategy": strategy or {"kind": "zero3"}})


def test_deepspeed_zero3_batch_and_buckets():
    cfg = deepspeed_config(sc())
    # 64 = 2 per GPU x 16 GPUs x 2 accumulation steps
    assert (cfg["train_batch_size"], cfg["train_micro_batch_size_per_gpu"],
            cfg["gradient_accumulation_steps"]) == (64, 2, 2)
    z = cfg["zero_optimization"]
    assert z["stage"] == 3 and z["stage3_max_live_parameters"] == 10**9
    assert cfg["bf16"]["enabled"] and not cfg["fp16"]["enabled"]
    json.dumps(cfg)


def test_deepspeed_infinity_and_cxl_offload():
    inf = deepspeed_config(sc(kind="zero_infinity"))["zero_optimization"]
    assert inf["offload_optimizer"]["device"] == "nvme" and inf["offload_param"]["device"] == "nvme"
    assert inf["offload_param"]["buffer_count"] == 5
    cxl = deepspeed_config(sc(kind="zero3", offload_optimizer="cxl"))
    assert cxl["zero_optimization"]["offload_optimizer"]["device"] == "cpu"
    # the note is with the others, under _tierlab_notes (README), as the FSDP snippet's is
    assert "_tierlab_note" not in cxl
    note = next(n for n in cxl["_tierlab_notes"] if "CXL" in n)
    assert "numactl --membind=<CXL node>" in note and "--preferred" in note and "'cpu'" in note
    params = deepspeed_config(sc(kind="zero3", offload_optimizer="cxl", offload_params="cxl"))
    assert any("CXL" in n for n in params["_tierlab_notes"])
    assert "CXL" not in json.dumps(deepspeed_config(sc(kind="zero3", offload_optimizer="cpu")))


def test_fsdp_snippet_is_python_and_names_the_strategy():
    hybrid = fsdp_snippet(sc(kind="fsdp_hybrid_shard", shard_group_size=8))
    ast.parse(hybrid)
    assert "ShardingStrategy.HYBRID_SHARD" in hybrid and "SHARD_GROUP_SIZE = 8" in hybrid
    assert "init_device_mesh(device.type, (world // SHARD_GROUP_SIZE, SHARD_GROUP_SIZE)" in hybrid
    # the memory model's units and block-level checkpointing (tests/engine/test_fsdp_snippet_runs.py runs it)
    assert "auto_wrap_policy=ModuleWrapPolicy({block_cls})" in hybrid and "device_id=device" in hybrid
    assert "check_fn=lambda module: isinstance(module, block_cls)" in hybrid
    z2 = fsdp_snippet(sc(kind="zero2"))
    ast.parse(z2)
    assert "SHARD_GRAD_OP" in z2 and "device_mesh" not in z2


def flat(text: str) -> str:
    return " ".join(text.split())


def test_fsdp_snippet_says_what_fsdp_cannot_express():
    # ZeRO-Offload's plan as an FSDP snippet (an FSDP scenario cannot offload the optimizer
    # alone: scenario._check_fsdp_offload): CPUOffload moves the parameter shards too
    opt_only = flat(fsdp_snippet(sc(kind="zero_offload", offload_optimizer="cpu")))
    assert "cpu_offload=CPUOffload(offload_params=True)" in opt_only
    assert "FSDP cannot offload the optimizer alone" in opt_only
    # the fp32 shard moves too: 69.0e9 params x 4 B / 16 ranks x 8 GPUs per node
    assert "host memory needs about 138.0 GB more per node" in opt_only
    assert "cpu_offload=None" in fsdp_snippet(sc(kind="fsdp_full_shard"))
    infinity = fsdp_snippet(sc(kind="zero_infinity"))
    assert "never to NVMe" in infinity
    z1 = fsdp_snippet(sc(kind="zero1"))
    assert "FSDP has no ZeRO-1" in z1
    selective = flat(fsdp_snippet(Scenario.from_dict({
        "model": "llama2-70b", "cluster": {"node": "dgx-h100", "num_nodes": 2},
        "training": {"recompute": "selective", "tensor_parallel": 8},
        "strategy": {"kind": "fsdp_full_shard", "prefetch_depth": 2}})))
    assert "apply_activation_checkpointing(" not in selective and "Selective recomputation" in selective
    assert "tensor_parallel=8" in selective and "FSDP prefetches one" in selective


def test_deepspeed_marks_placeholders_and_maps_hybrid_shard():
    inf = deepspeed_config(sc(kind="zero_infinity"))
    marked = inf["_tierlab_placeholders"]
    assert set(marked) == {"optimizer.params.lr", "zero_optimization.offload_optimizer.nvme_path",
                           "zero_optimization.offload_param.nvme_path"}
    assert inf["zero_optimization"]["offload_param"]["nvme_path"] in marked["zero_optimization.offload_param.nvme_path"]
    hybrid = deepspeed_config(sc(kind="fsdp_hybrid_shard", shard_group_size=8))
    z = hybrid["zero_optimization"]
    assert z["stage"] == 3 and z["zero_hpz_partition_size"] == 8
    assert "DeepSpeed has no hybrid shard" in hybrid["_tierlab_notes"][0]
    assert "zero_hpz_partition_size" not in deepspeed_config(sc())["zero_optimization"]


def _with_position(position_embedding):
    return Scenario.from_dict({"model": {"preset": "llama2-7b", "position_embedding": position_embedding},
                               "cluster": {"node": "dgx-h100", "num_nodes": 1},
                               "training": {"micro_batch_size": 1, "global_batch_size": 8},
                               "strategy": {"kind": "megatron_dist_opt"}})


def test_megatron_args_name_the_position_embedding_and_alibi_gets_a_note():
    # megatron/training/arguments.py: --position-embedding-type {learned_absolute,rope,mrope,relative,none}
    from simulation.export import megatron_args, megatron_notes
    for ours, theirs in (("rope", "rope"), ("learned", "learned_absolute")):
        args = megatron_args(_with_position(ours))
        i = args.index("--position-embedding-type")
        assert args[i + 1] == theirs
        assert not any("ALiBi" in n for n in megatron_notes(_with_position(ours)))
    alibi = _with_position("alibi")
    assert "--position-embedding-type" not in megatron_args(alibi)     # no wrong flag
    note = next(n for n in megatron_notes(alibi) if "ALiBi" in n)
    assert "no Megatron-LM flag" in note and "Megatron-DeepSpeed" in note
    assert "--position-embedding-type alibi" in note
