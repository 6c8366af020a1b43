"""The exported FSDP snippet runs as downloaded: torchrun starts 2 CPU ranks (gloo) that
wrap a tiny transformer with it and train a few steps (tests/engine/fsdp_worker.py).

Needs torch (the ``torch`` extra: ``pip install -e '.[dev,torch]'``); skips without it.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from simulation import Scenario
from simulation.export import fsdp_snippet

torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[torch]')")
if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
    pytest.skip("this torch build has no gloo backend for torch.distributed", allow_module_level=True)

WORKER = Path(__file__).with_name("fsdp_worker.py")
LAYERS = 3                       # fsdp_worker.TinyLM's blocks
ROOT_PARAMS = ["embed.weight", "head.weight", "norm.bias", "norm.weight"]


def scenario(training=None, **strategy):
    return Scenario.from_dict({"model": "llama2-70b", "cluster": {"node": "dgx-h100", "num_nodes": 2},
                               "training": {"micro_batch_size": 2, "global_batch_size": 64,
                                            **(training or {})},
                               "strategy": strategy})


def run_snippet(text: str, tmp_path: Path) -> list[dict]:
    snippet = tmp_path / "fsdp_plan.py"
    snippet.write_text(text)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc-per-node=2", str(WORKER), str(snippet), str(tmp_path)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]


def assert_trained(ranks: list[dict]) -> None:
    for r in ranks:
        assert r["world_size"] == 2 and r["changed"]
        assert all(math.isfinite(x) for x in r["losses"])
        # one unit per block plus the root, which holds embedding, final norm and head
        assert r["units"] == LAYERS + 1 and r["block_units"] == LAYERS
        assert r["root_params"] == ROOT_PARAMS


def test_full_shard_with_block_checkpointing_runs(tmp_path):
    text = fsdp_snippet(scenario({"recompute": "full"}, kind="fsdp_full_shard"))
    ranks = run_snippet(text, tmp_path)
    assert_trained(ranks)
    r = ranks[0]
    assert r["sharding_strategy"] == "FULL_SHARD"
    assert r["checkpointed"] == ["Block"] * LAYERS        # the blocks, nothing else
    assert r["shard_dtypes"] == ["torch.float32"]        # the shard is the fp32 master copy
    assert r["compute_dtypes"] == ["torch.bfloat16"]     # MixedPrecision(param_dtype=bf16)


def test_hybrid_shard_runs_on_a_replica_by_shard_mesh(tmp_path):
    text = fsdp_snippet(scenario(kind="fsdp_hybrid_shard", shard_group_size=2))
    assert "SHARD_GROUP_SIZE = 2" in text
    ranks = run_snippet(text, tmp_path)
    assert_trained(ranks)
    assert ranks[0]["sharding_strategy"] == "HYBRID_SHARD" and ranks[0]["checkpointed"] == []


def test_fp32_zero2_runs_as_shard_grad_op(tmp_path):
    text = fsdp_snippet(scenario({"precision": "fp32", "recompute": "full"}, kind="zero2"))
    assert "mixed_precision=None" in text
    ranks = run_snippet(text, tmp_path)
    assert_trained(ranks)
    assert ranks[0]["sharding_strategy"] == "SHARD_GRAD_OP"
    assert ranks[0]["compute_dtypes"] == ["torch.float32"]


@pytest.mark.parametrize("training, wrapped", [({"recompute_every": 2}, 1),     # block 2 of 3
                                               ({"recompute_layers": 2}, 2)])   # blocks 1, 2
def test_layer_selective_checkpointing_wraps_the_chosen_blocks(tmp_path, training, wrapped):
    # issue #15: torchtitan's every k-th block (counted from 1) / Megatron's first k blocks
    text = fsdp_snippet(scenario({"recompute": "full", **training}, kind="fsdp_full_shard"))
    ranks = run_snippet(text, tmp_path)
    assert_trained(ranks)
    assert ranks[0]["checkpointed"] == ["Block"] * wrapped


@pytest.mark.parametrize("strategy", [dict(kind="fsdp_full_shard"),
                                      dict(kind="fsdp_hybrid_shard", shard_group_size=2)])
def test_fsdp2_fully_shard_runs(tmp_path, strategy):
    # strategy.fsdp_version 2: fully_shard per block and on the root (torchtitan apply_fsdp),
    # parameters as DTensor shards, MixedPrecisionPolicy(param_dtype=bf16)
    text = fsdp_snippet(scenario({"recompute": "full"}, fsdp_version=2, **strategy))
    assert "fully_shard(block" in text and "FullyShardedDataParallel" not in text
    ranks = run_snippet(text, tmp_path)
    assert_trained(ranks)
    r = ranks[0]
    assert r["sharding_strategy"] == "fully_shard" and r["dtensor_params"]
    assert r["checkpointed"] == ["FSDPBlock"] * LAYERS     # fully_shard swaps in FSDP<class>
    assert r["shard_dtypes"] == ["torch.float32"]
    assert r["compute_dtypes"] == ["torch.bfloat16"]
