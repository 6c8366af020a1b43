"""Turn a planned scenario into configuration a team can run.

``deepspeed_config`` writes a DeepSpeed JSON config (keys as documented at
deepspeed.ai/docs/config-json: ``train_batch_size``, ``zero_optimization.stage``,
``offload_optimizer.device`` ...); ``fsdp_snippet`` writes a Python module whose
``wrap(model, block_cls)`` applies PyTorch FSDP (``FullyShardedDataParallel``) with the
unit layout the memory model counts (one unit per block, ``ModuleWrapPolicy``),
block-level activation checkpointing, ``MixedPrecision``, ``CPUOffload``, a 2-D device
mesh for HYBRID_SHARD. Bucket sizes are the engine's accounting defaults, so the memory
the plan shows is the memory the config asks for. What a framework cannot express is
written into the export (``_tierlab_notes``; the snippet's docstring), not approximated
silently.

CXL memory appears to Linux as a CPU-less NUMA node; neither framework names it, so a CXL
offload is exported as ``cpu`` with a note to bind host allocations to that node.
"""

from __future__ import annotations

import textwrap

from .memory import (DS_BUCKET_ELEMENTS, DS_MAX_LIVE_PARAMETERS, DS_PARAM_SWAP_BUFFERS,
                     DS_PARAM_SWAP_ELEMENTS, DS_SUB_GROUP_ELEMENTS)
from .parallel import layout
from .params import count_params
from .states import state_bytes
from .errors import ScenarioError
from .scenario import Scenario


_PEFT_MODULES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj", "gate": "gate_proj",
                 "up": "up_proj", "down": "down_proj", "embeddings": "embed_tokens"}


def _lora_note(lora, precision: str = "bf16") -> str:
    """What a framework config cannot carry of ``training.lora``: the adapters are made
    by PEFT before the model is wrapped (Llama module names)."""
    targets = ", ".join(repr(_PEFT_MODULES[t]) for t in lora.targets)
    alpha = f", lora_alpha={lora.alpha:g}" if lora.alpha is not None else ""
    return (f"LoRA is not part of this config: apply it with PEFT before wrapping, "
            f"peft.get_peft_model(model, LoraConfig(r={lora.rank}{alpha}, "
            f"lora_dropout={lora.dropout:g}, target_modules=[{targets}])); the plan counts a "
            "frozen base with gradients and optimizer states for the adapters only"
            + _quant_note(lora, precision) + _adapter_dtype_note(lora))


def _adapter_dtype_note(lora) -> str:
    """``adapter_dtype``: PEFT's default upcasts the adapters to fp32; 16-bit adapters
    need ``autocast_adapter_dtype=False`` (or qlora.py's cast after get_peft_model)."""
    if lora.adapter_dtype not in ("bf16", "fp16"):
        return ""
    return (f"; {lora.adapter_dtype} adapters: get_peft_model(..., autocast_adapter_dtype=False) "
            f"on a {lora.adapter_dtype} model (PEFT upcasts them to fp32 by default)")


_PAGED_NOTES = {
    o: (f"{o} is bitsandbytes' {cls} (CUDA unified memory for the states), which this "
        f"config cannot name: build it, bitsandbytes.optim.{cls}(model.parameters(), lr=...), "
        "and pass it to the framework (deepspeed.initialize(optimizer=...), or the FSDP "
        "model's optimizer); the optimizer entry here is a plain AdamW stand-in")
    for o, cls in (("paged_adamw", "PagedAdamW"), ("paged_adamw_8bit", "PagedAdamW8bit"))}

_TORCH_DTYPE = {"bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32"}


def bnb_config(lora, compute_dtype: str = "bf16") -> str | None:
    """``transformers.BitsAndBytesConfig(...)`` for a quantised base (``training.lora
    .base_dtype`` nf4 / fp4 / int8), as Python source; None for a 16-bit base. 4-bit:
    ``load_in_4bit``, ``bnb_4bit_quant_type``, ``bnb_4bit_use_double_quant``,
    ``bnb_4bit_compute_dtype`` (the training precision) and, for FSDP / ZeRO-3,
    ``bnb_4bit_quant_storage`` in the same 16-bit dtype so the packed weights can be
    flattened with the rest (transformers' ``BitsAndBytesConfig``; bitsandbytes >= 0.43).
    The block size has no ``BitsAndBytesConfig`` field: a size other than 64 is said."""
    if not lora.quantised:
        return None
    dt = _TORCH_DTYPE.get(compute_dtype, "torch.bfloat16")
    if lora.base_dtype == "int8":
        return "BitsAndBytesConfig(load_in_8bit=True)"
    return (f"BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type={lora.base_dtype!r}, "
            f"bnb_4bit_use_double_quant={lora.double_quant}, bnb_4bit_compute_dtype={dt}, "
            f"bnb_4bit_quant_storage={dt})")


def _quant_note(lora, precision: str = "bf16") -> str:
    cfg = bnb_config(lora, precision)
    if cfg is None:
        return ""
    block = ("" if lora.quant_block_size == 64 else
             f"; quant_block_size {lora.quant_block_size} has no BitsAndBytesConfig field "
             "(transformers quantises with bitsandbytes' default 64)")
    return (f"; QLoRA: load the base with AutoModelForCausalLM.from_pretrained(..., "
            f"quantization_config={cfg}), then peft.prepare_model_for_kbit_training(model)"
            + block)


def _need_transformer(sc: Scenario) -> None:
    if sc.model is None:
        raise ScenarioError("model", "framework configs are exported for transformer models; "
                                     "this scenario has only a recommendation model")

_DS_OPT = {"adam": "Adam", "adamw": "AdamW", "sgd_momentum": "SGD", "adafactor": "Adafactor",
           "adam_8bit": "AdamW", "paged_adamw": "AdamW", "paged_adamw_8bit": "AdamW"}
_FSDP = {"ddp": "NO_SHARD", "zero1": "SHARD_GRAD_OP", "zero2": "SHARD_GRAD_OP",
         "zero_offload": "SHARD_GRAD_OP", "zero3": "FULL_SHARD", "zero_infinity": "FULL_SHARD",
         "fsdp_full_shard": "FULL_SHARD", "fsdp_hybrid_shard": "HYBRID_SHARD",
         "megatron_dist_opt": "SHARD_GRAD_OP"}


def _device(target: str) -> str:
    return "cpu" if target == "cxl" else target


NVME_PATH_PLACEHOLDER = "/local_nvme"     # DeepSpeed's documented example path
LR_PLACEHOLDER = 3e-4


def deepspeed_config(sc: Scenario) -> dict:
    """DeepSpeed config JSON for the scenario (dict; ``json.dumps`` it).

    Values the plan does not decide are placeholders, listed under ``_tierlab_placeholders``
    (the learning rate; ``nvme_path``, the mount of the local NVMe). Where DeepSpeed
    cannot do what the plan counts, ``_tierlab_notes`` says what the config does instead
    (DeepSpeed ignores top-level keys it does not know). Raises ScenarioError for a
    scenario without a transformer model.
    """
    _need_transformer(sc)
    lay, tr, st = layout(sc), sc.training, sc.strategy
    notes: list[str] = []
    if tr.lora is not None:
        notes.append(_lora_note(tr.lora, tr.precision))
    if tr.optimizer in _PAGED_NOTES:
        notes.append(_PAGED_NOTES[tr.optimizer])
    placeholders = {"optimizer.params.lr": f"{LR_PLACEHOLDER:g} is a placeholder: tierlab "
                                           "plans memory and time, not the learning rate"}
    zero = {"stage": st.zero_stage, "overlap_comm": True, "contiguous_gradients": True,
            "reduce_bucket_size": int(DS_BUCKET_ELEMENTS)}
    if st.zero_stage in (1, 2):
        zero["allgather_bucket_size"] = int(DS_BUCKET_ELEMENTS)
    if st.zero_stage == 3:
        zero.update(stage3_max_live_parameters=int(DS_MAX_LIVE_PARAMETERS),
                    stage3_prefetch_bucket_size=int(5e7) if st.prefetch_depth else 0,
                    sub_group_size=int(DS_SUB_GROUP_ELEMENTS))
    if st.kind == "fsdp_hybrid_shard":
        # ZeRO++ hpZ (Wang et al. 2023): a secondary 16-bit parameter partition within
        # groups of zero_hpz_partition_size ranks, so backward all-gathers stay in a group.
        zero["zero_hpz_partition_size"] = lay.shard_degree
        notes.append(
            f"DeepSpeed has no hybrid shard (HSDP). This is ZeRO-3 over all {lay.data_parallel} "
            f"ranks with ZeRO++ hpZ (zero_hpz_partition_size = {lay.shard_degree}): backward "
            f"all-gathers stay within groups of {lay.shard_degree} ranks, but gradients and "
            "optimizer states are sharded over every rank (less HBM than the plan's HSDP "
            f"counts) and each GPU keeps an extra 16-bit parameter copy split {lay.shard_degree} "
            "ways (more). The plan's memory and time are HSDP's (PyTorch FSDP HYBRID_SHARD: "
            "see fsdp.py).")
    elif st.is_fsdp:
        notes.append("FSDP FULL_SHARD exported as ZeRO-3 (both shard parameters, gradients "
                     "and optimizer states over every rank).")
    for key, target in (("offload_optimizer", st.offload_optimizer),
                        ("offload_param", st.offload_params)):
        if target == "none":
            continue
        zero[key] = {"device": _device(target), "pin_memory": True}
        if target == "nvme":
            zero[key]["nvme_path"] = NVME_PATH_PLACEHOLDER
            placeholders[f"zero_optimization.{key}.nvme_path"] = (
                f"{NVME_PATH_PLACEHOLDER} is a placeholder: a directory on each node's local NVMe")
            if key == "offload_optimizer":
                zero[key]["buffer_count"] = 4
            else:
                zero[key].update(buffer_count=DS_PARAM_SWAP_BUFFERS,
                                 buffer_size=int(DS_PARAM_SWAP_ELEMENTS))
    cfg = {
        "train_batch_size": lay.global_batch_size,
        "train_micro_batch_size_per_gpu": tr.micro_batch_size,
        "gradient_accumulation_steps": lay.grad_accumulation_steps,
        "bf16": {"enabled": tr.precision == "bf16"},
        "fp16": {"enabled": tr.precision == "fp16"},
        "optimizer": {"type": _DS_OPT[tr.optimizer], "params": {"lr": LR_PLACEHOLDER}},
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
    cfg["_tierlab_placeholders"] = placeholders
    if notes:
        cfg["_tierlab_notes"] = notes
    return cfg


_DTYPE = {"bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32"}
_FSDP_KIND_NOTES = {
    "ddp": "DDP keeps every state on every rank: NO_SHARD (or torch DistributedDataParallel).",
    "zero1": "FSDP has no ZeRO-1: SHARD_GRAD_OP shards the gradients too (ZeRO-2), so it "
             "needs less HBM than this plan.",
    "megatron_dist_opt": "Megatron's distributed optimizer shards only the optimizer (ZeRO-1); "
                         "FSDP's nearest is SHARD_GRAD_OP, which also shards the gradients.",
    "zero_offload": "ZeRO-Offload shards gradients and optimizer (ZeRO-2) and offloads the "
                    "optimizer: SHARD_GRAD_OP, offload as below.",
}


def fsdp_snippet(sc: Scenario) -> str:
    """A PyTorch FSDP (``FullyShardedDataParallel``) module for the scenario (Python source).

    It defines ``wrap(model, block_cls, device=None)``, which wraps as the memory model
    counts (``memory._buffers``, ``memory._gathered_modules``): one FSDP unit per
    transformer block (``ModuleWrapPolicy({block_cls})``), embedding, final norm and head
    in the root unit; full recomputation checkpoints the blocks only (``check_fn``);
    ``MixedPrecision`` in the scenario's parameter and gradient dtypes; ``device_id``
    given. What FSDP cannot express is said in comments, never silently approximated.
    Raises ScenarioError for a scenario without a transformer model.
    """
    _need_transformer(sc)
    lay, tr, st = layout(sc), sc.training, sc.strategy
    sb = state_bytes(tr.precision, tr.optimizer, tr.dtypes)
    psi = count_params(sc.model).total / (lay.tensor_parallel * lay.pipeline_parallel)
    gpn = sc.cluster.gpus_per_node
    strategy = _FSDP[st.kind]
    hybrid = strategy == "HYBRID_SHARD"
    notes: list[str] = []                       # what FSDP cannot express, for the docstring
    if tr.lora is not None:
        notes.append(_lora_note(tr.lora, tr.precision))
    if tr.optimizer in _PAGED_NOTES:
        notes.append(_PAGED_NOTES[tr.optimizer])
    if st.kind in _FSDP_KIND_NOTES:
        notes.append(_FSDP_KIND_NOTES[st.kind])
    if lay.tensor_parallel > 1 or lay.pipeline_parallel > 1:
        notes.append(f"The plan uses tensor_parallel={lay.tensor_parallel} and "
                     f"pipeline_parallel={lay.pipeline_parallel}: FSDP shards over the "
                     f"{lay.data_parallel} data-parallel ranks only; tensor and pipeline "
                     "parallelism need torch.distributed.tensor.parallel / "
                     "torch.distributed.pipelining on a device mesh of their own.")

    # Mixed precision: the sharded parameters keep the dtype the model is built in.
    if sb.params_dtype == "fp32":
        mp_line = "mixed_precision=None,  # fp32 training"
        build = "float32"
    elif sb.master_weights == 0:
        mp_line = "mixed_precision=None,  # pure 16-bit: no fp32 master copy"
        build = sb.params_dtype
    else:
        mp_line = (f"mixed_precision=MixedPrecision(param_dtype={_DTYPE[sb.params_dtype]},\n"
                   f"                                   reduce_dtype={_DTYPE[sb.grads_dtype]},\n"
                   f"                                   buffer_dtype={_DTYPE[sb.params_dtype]}),")
        build = "float32"

    # Offload: FSDP's CPUOffload moves parameter shards AND their gradients to host DRAM.
    offload = "cpu_offload=None,"
    opt_only = st.offload_params == "none" and st.offload_optimizer != "none"
    if st.offload_params != "none" or opt_only:
        offload = "cpu_offload=CPUOffload(offload_params=True),"
    if opt_only:
        shard_bytes = sb.master_weights or sb.params     # the shard is the master copy
        extra_gb = shard_bytes * psi / lay.shard_degree * gpn / 1e9
        notes.append("The plan offloads only the optimizer (states and fp32 gradients on the "
                     "host, parameters on the GPU). FSDP cannot offload the optimizer alone: "
                     "CPUOffload(offload_params=True) also moves the parameter shards, so the "
                     "GPU holds less than the plan counts and host memory needs about "
                     f"{extra_gb:,.1f} GB more per node; DeepSpeed ZeRO-Offload "
                     "(deepspeed.json) does what the plan counts.")
    if "nvme" in (st.offload_params, st.offload_optimizer):
        notes.append("FSDP offloads to host DRAM only, never to NVMe: CPUOffload puts on the "
                     "host what the plan puts on NVMe; ZeRO-Infinity (deepspeed.json) can use "
                     "NVMe.")
    if "cxl" in (st.offload_params, st.offload_optimizer):
        notes.append("CXL memory is a CPU-less NUMA node: start the ranks under "
                     "numactl --membind=<CXL node> (or --preferred) so host tensors land there.")
    if st.offload_activations == "cpu":
        notes.append("FSDP has no activation offload: wrap the blocks' forward in "
                     "torch.autograd.graph.save_on_cpu(pin_memory=True) to keep activations "
                     "in host DRAM as the plan does.")
    if st.prefetch_depth > 1:
        notes.append(f"The plan prefetches {st.prefetch_depth} units; FSDP prefetches one "
                     "(limit_all_gathers keeps two units gathered), so it holds less.")
    if tr.recompute == "selective":
        notes.append("Selective recomputation (the attention core only, Korthikanti et al. "
                     "2022) has no FSDP switch: use a flash-attention kernel (it recomputes "
                     "the softmax) or checkpoint your attention-core module the way the "
                     "blocks are checkpointed below.")
    rank0 = sc.runtime.model_load_for(st) == "rank0"
    if rank0:
        notes.append("The plan loads the weights on rank 0 only (runtime.model_load = rank0): "
                     "build the model on the meta device on the other ranks and pass "
                     "param_init_fn=lambda m: m.to_empty(device=device, recurse=False); "
                     "sync_module_states=True broadcasts rank 0's weights.")

    doc = [f'"""PyTorch FSDP for this tierlab plan ({st.kind}, ShardingStrategy.{strategy}).',
           "",
           "Call wrap(model, block_cls) on every rank after torch.distributed.init_process_group",
           "and torch.cuda.set_device(local_rank), before creating the optimizer. block_cls is",
           "your transformer block class (Hugging Face Llama: LlamaDecoderLayer). Build or load",
           f"the model in {build}: FSDP's shard keeps that dtype"
           + (" and is the fp32 master copy." if build == "float32" and sb.params_dtype != "fp32" else "."),
           ""]
    if notes:
        doc.append("What this plan counts and FSDP cannot express as such:")
        for n in notes:
            doc += _wrapped(n, "- ", "  ")
    doc.append('"""')
    head = "\n".join(doc)
    lines = [
        head,
        "import functools",
        "",
        "import torch",
        "import torch.distributed as dist",
        "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (",
        "    CheckpointImpl, apply_activation_checkpointing, checkpoint_wrapper)",
        "from torch.distributed.fsdp import (BackwardPrefetch, CPUOffload, MixedPrecision,",
        "                                    ShardingStrategy)",
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP",
        "from torch.distributed.fsdp.wrap import ModuleWrapPolicy",
    ]
    if hybrid:
        lines.append("from torch.distributed.device_mesh import init_device_mesh")
    lines += [
        "",
        f"MICRO_BATCH_SIZE = {tr.micro_batch_size}  # per GPU",
        f"GRAD_ACCUMULATION_STEPS = {lay.grad_accumulation_steps}",
        f"GLOBAL_BATCH_SIZE = {lay.global_batch_size}  # = {tr.micro_batch_size} x "
        f"{lay.data_parallel} data-parallel ranks x {lay.grad_accumulation_steps}",
    ]
    if hybrid:
        lines.append(f"SHARD_GROUP_SIZE = {lay.shard_degree}  # ranks one copy is sharded over "
                     "(the plan: one node)" if lay.shard_degree == gpn else
                     f"SHARD_GROUP_SIZE = {lay.shard_degree}  # ranks one copy is sharded over")
    lines += [
        "",
        "",
        "def wrap(model: torch.nn.Module, block_cls: type, device: torch.device | None = None):",
        '    """Shard model as the plan counts it; returns the FSDP root module."""',
        "    if device is None:",
        '        device = torch.device("cuda", torch.cuda.current_device())',
    ]
    if hybrid:
        lines += [
            "    world = dist.get_world_size()",
            "    if world % SHARD_GROUP_SIZE:",
            '        raise ValueError(f"{world} ranks do not split into shard groups of {SHARD_GROUP_SIZE}")',
            "    # rows: replicas of the model; columns: the ranks one replica is sharded over",
            "    mesh = init_device_mesh(device.type, (world // SHARD_GROUP_SIZE, SHARD_GROUP_SIZE),",
            '                            mesh_dim_names=("replicate", "shard"))',
        ]
    prefetch = st.prefetch_depth > 0
    lines += [
        "    model = FSDP(",
        "        model,",
        "        # one FSDP unit per transformer block, as the plan counts; the embedding, final",
        "        # norm and output head stay in the root unit, gathered from forward to backward",
        "        auto_wrap_policy=ModuleWrapPolicy({block_cls}),",
        f"        sharding_strategy=ShardingStrategy.{strategy},",
        f"        {mp_line}",
        f"        {offload}",
        "        backward_prefetch=BackwardPrefetch.BACKWARD_PRE," if prefetch else
        "        backward_prefetch=None,  # the plan prefetches nothing",
        f"        forward_prefetch={prefetch},",
        "        limit_all_gathers=True,",
        "        use_orig_params=True,",
        "        device_id=device,",
    ]
    if rank0:
        lines.append("        # rank 0's weights to every rank (FSDP broadcasts them from GPU memory only)")
        lines.append('        sync_module_states=device.type == "cuda",')
    if hybrid:
        lines.append("        device_mesh=mesh,")
    lines.append("    )")
    if tr.recompute == "full":
        lines += [
            "    # full recomputation, one block at a time: only the blocks are checkpointed",
            "    apply_activation_checkpointing(",
            "        model,",
            "        checkpoint_wrapper_fn=functools.partial(checkpoint_wrapper,",
            "                                                checkpoint_impl=CheckpointImpl.NO_REENTRANT),",
            "        check_fn=lambda module: isinstance(module, block_cls))",
        ]
    lines.append("    return model")
    return "\n".join(lines) + "\n"


def _wrapped(text: str, first: str, rest: str, width: int = 88) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest)
