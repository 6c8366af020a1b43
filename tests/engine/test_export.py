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
    assert "numactl" in cxl["_tierlab_note"]


def test_fsdp_snippet_is_python_and_names_the_strategy():
    hybrid = fsdp_snippet(sc(kind="fsdp_hybrid_shard", shard_group_size=8))
    ast.parse(hybrid)
    assert "ShardingStrategy.HYBRID_SHARD" in hybrid
    assert 'init_device_mesh("cuda", (2, 8))' in hybrid
    assert "apply_activation_checkpointing" in hybrid
    z2 = fsdp_snippet(sc(kind="zero2"))
    ast.parse(z2)
    assert "SHARD_GRAD_OP" in z2 and "device_mesh" not in z2
