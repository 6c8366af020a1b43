"""Turn a planned scenario into configuration a team can run.

``deepspeed_config`` writes a DeepSpeed JSON config (keys as documented at
deepspeed.ai/docs/config-json: ``train_batch_size``, ``zero_optimization.stage``,
``offload_optimizer.device`` ...); ``fsdp_snippet`` writes the PyTorch FSDP call
(``ShardingStrategy``, ``MixedPrecision``, ``CPUOffload``, ``BackwardPrefetch``, a 2-D
device mesh for HYBRID_SHARD). Bucket sizes are the engine's accounting defaults, so the
memory the plan shows is the memory the config asks for.

CXL memory appears to Linux as a CPU-less NUMA node; neither framework names it, so a CXL
offload is exported as ``cpu`` with a note to bind host allocations to that node.
"""

from __future__ import annotations

from .memory import (DS_BUCKET_ELEMENTS, DS_MAX_LIVE_PARAMETERS, DS_PARAM_SWAP_BUFFERS,
                     DS_PARAM_SWAP_ELEMENTS, DS_SUB_GROUP_ELEMENTS)
from .parallel import layout
from .errors import ScenarioError
from .scenario import Scenario


def _need_transformer(sc: Scenario) -> None:
    if sc.model is None:
        raise ScenarioError("model", "framework configs are exported for transformer models; "
                                     "this scenario has only a recommendation model")

_DS_OPT = {"adam": "Adam", "adamw": "AdamW", "sgd_momentum": "SGD", "adafactor": "Adafactor",
           "adam_8bit": "AdamW"}
_FSDP = {"ddp": "NO_SHARD", "zero1": "SHARD_GRAD_OP", "zero2": "SHARD_GRAD_OP",
         "zero_offload": "SHARD_GRAD_OP", "zero3": "FULL_SHARD", "zero_infinity": "FULL_SHARD",
         "fsdp_full_shard": "FULL_SHARD", "fsdp_hybrid_shard": "HYBRID_SHARD",
         "megatron_dist_opt": "SHARD_GRAD_OP"}


def _device(target: str) -> str:
    return "cpu" if target == "cxl" else target


def deepspeed_config(sc: Scenario) -> dict:
    """DeepSpeed config JSON for the scenario (dict; ``json.dumps`` it)."""
    _need_transformer(sc)
    lay, tr, st = layout(sc), sc.training, sc.strategy
    zero = {"stage": st.zero_stage, "overlap_comm": True, "contiguous_gradients": True,
            "reduce_bucket_size": int(DS_BUCKET_ELEMENTS)}
    if st.zero_stage in (1, 2):
        zero["allgather_bucket_size"] = int(DS_BUCKET_ELEMENTS)
    if st.zero_stage == 3:
        zero.update(stage3_max_live_parameters=int(DS_MAX_LIVE_PARAMETERS),
                    stage3_prefetch_bucket_size=int(5e7) if st.prefetch_depth else 0,
                    sub_group_size=int(DS_SUB_GROUP_ELEMENTS))
    if st.offload_optimizer != "none":
        zero["offload_optimizer"] = {"device": _device(st.offload_optimizer), "pin_memory": True}
        if st.offload_optimizer == "nvme":
            zero["offload_optimizer"].update(nvme_path="/local_nvme", buffer_count=4)
    if st.offload_params != "none":
        zero["offload_param"] = {"device": _device(st.offload_params), "pin_memory": True}
        if st.offload_params == "nvme":
            zero["offload_param"].update(nvme_path="/local_nvme",
                                         buffer_count=DS_PARAM_SWAP_BUFFERS,
                                         buffer_size=int(DS_PARAM_SWAP_ELEMENTS))
    cfg = {
        "train_batch_size": lay.global_batch_size,
        "train_micro_batch_size_per_gpu": tr.micro_batch_size,
        "gradient_accumulation_steps": lay.grad_accumulation_steps,
        "bf16": {"enabled": tr.precision == "bf16"},
        "fp16": {"enabled": tr.precision == "fp16"},
        "optimizer": {"type": _DS_OPT[tr.optimizer], "params": {"lr": 3e-4}},
        "zero_optimization": zero,
        "gradient_clipping": 1.0,
    }
    if tr.recompute != "none":
        cfg["activation_checkpointing"] = {"partition_activations": tr.tensor_parallel > 1,
                                           "cpu_checkpointing": st.offload_activations == "cpu",
                                           "contiguous_memory_optimization": True}
    if "cxl" in (st.offload_optimizer, st.offload_params):
        cfg["_tierlab_note"] = ("CXL offload exported as device 'cpu': start ranks under "
                                "numactl --membind=<CXL NUMA node> so pinned host memory lands "
                                "on the expander.")
    return cfg


def fsdp_snippet(sc: Scenario) -> str:
    """A PyTorch FSDP wrapping snippet for the scenario's strategy (Python source)."""
    _need_transformer(sc)
    lay, tr, st = layout(sc), sc.training, sc.strategy
    dtype = {"bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32"}[tr.precision]
    strategy = _FSDP[st.kind]
    lines = [
        "import torch",
        "from torch.distributed.fsdp import (FullyShardedDataParallel as FSDP, ShardingStrategy,",
        "                                    MixedPrecision, CPUOffload, BackwardPrefetch)",
    ]
    mesh = ""
    if strategy == "HYBRID_SHARD":
        lines.append("from torch.distributed.device_mesh import init_device_mesh")
        lines.append(f"mesh = init_device_mesh(\"cuda\", ({lay.replica_groups}, {lay.shard_degree}))"
                     "  # (replicas, shard group)")
        mesh = "    device_mesh=mesh,\n"
    offload = st.offload_params != "none" or st.offload_optimizer != "none"
    lines += [
        "",
        "model = FSDP(",
        "    model,",
        f"    sharding_strategy=ShardingStrategy.{strategy},",
        f"    mixed_precision=MixedPrecision(param_dtype={dtype}, reduce_dtype={dtype}, "
        f"buffer_dtype={dtype}),",
        f"    cpu_offload=CPUOffload(offload_params={offload}),",
        "    backward_prefetch=BackwardPrefetch.BACKWARD_PRE," if st.prefetch_depth else
        "    backward_prefetch=None,",
        f"    forward_prefetch={st.prefetch_depth > 0},",
        "    limit_all_gathers=True,",
        "    use_orig_params=True,",
    ]
    text = "\n".join(lines) + "\n" + mesh + ")\n"
    if tr.recompute == "full":
        text += ("\nfrom torch.distributed.algorithms._checkpoint.checkpoint_wrapper import "
                 "apply_activation_checkpointing\napply_activation_checkpointing(model)  "
                 "# full recomputation, one block at a time\n")
    if st.offload_params in ("nvme", "cxl") or st.offload_optimizer in ("nvme", "cxl"):
        text += ("\n# FSDP offloads to host DRAM only; NVMe/CXL tiers need DeepSpeed "
                 "ZeRO-Infinity (see the DeepSpeed config) or a NUMA binding to the CXL node.\n")
    text += (f"# batch: {tr.micro_batch_size} per GPU x {lay.data_parallel} data-parallel x "
             f"{lay.grad_accumulation_steps} accumulation steps = {lay.global_batch_size}\n")
    return text
