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
from .scenario import Scenario, ep_nodes


_PEFT_MODULES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj", "gate": "gate_proj",
                 "up": "up_proj", "down": "down_proj", "embeddings": "embed_tokens"}


def _lora_note(lora, precision: str = "bf16") -> str:
    """What a framework config cannot carry of ``training.lora``: the adapters are made
    by PEFT before the model is wrapped (Llama module names)."""
    targets = ", ".join(repr(_PEFT_MODULES[t]) for t in lora.targets)
    alpha = f", lora_alpha={lora.alpha:g}" if lora.alpha is not None else ""
    if lora.implementation == "automodel":
        # NeMo AutoModel's PeftConfig (components/_peft/lora.py): dim, alpha, dropout,
        # dropout_position, target_modules; its recipes apply it before parallelizing
        a = f", alpha: {lora.alpha:g}" if lora.alpha is not None else ""
        return ("LoRA is not part of this config: NeMo AutoModel applies it from the recipe's "
                f"peft section (_target_: nemo_automodel.components._peft.lora.PeftConfig, dim: "
                f"{lora.rank}{a}, dropout: {lora.dropout:g}, dropout_position: {lora.dropout_at}, "
                f"target_modules: [{targets}]); the plan counts a frozen base with gradients and "
                "optimizer states for the adapters only, in the base's dtype")
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


def megatron_fp8_args(fp8) -> list[str]:
    """Megatron-LM's arguments for ``training.fp8`` (megatron/training/arguments.py,
    the Transformer-Engine group: ``--fp8-format {e4m3,hybrid}``, ``--fp8-recipe
    {tensorwise,delayed,mxfp8,blockwise}``, ``--fp8-amax-history-len`` (Megatron's default
    1, not TE's 1024, so it is always written for delayed scaling),
    ``--fp8-amax-compute-algo`` (Megatron's default most_recent), ``--fp8-param-gather``)."""
    args = ["--fp8-format", fp8.format, "--fp8-recipe", fp8.recipe]
    if fp8.recipe == "delayed":
        args += ["--fp8-amax-history-len", str(fp8.history_len),
                 "--fp8-amax-compute-algo", fp8.amax_compute_algo or "max"]
    if fp8.param:
        args.append("--fp8-param-gather")
    return args


def _fp8_note(sc: Scenario, what: str) -> str:
    """What a DeepSpeed or FSDP config cannot carry of ``training.fp8``."""
    fp8 = sc.training.fp8
    if sc.training.framework != "megatron":
        return (f"FP8 is not part of this {what}: convert the model with torchao before "
                f"wrapping, torchao.float8.convert_to_float8_training(model, config="
                f"Float8LinearConfig.from_recipe_name('{fp8.recipe}')) (torchtitan's "
                "float8 converter does the same); the plan counts its casts, not FP8 copies")
    return (f"FP8 is not part of this {what}: the plan runs Transformer Engine's FP8 "
            f"({fp8.recipe} scaling, {fp8.format}) as Megatron-LM sets it with "
            + " ".join(megatron_fp8_args(fp8))
            + "; with DeepSpeed or FSDP, build the model from transformer_engine.pytorch "
              "modules and run forward under te.fp8_autocast(recipe=...)")


# model.position_embedding -> Megatron-LM's --position-embedding-type (megatron/training/
# arguments.py); alibi has none (Megatron-DeepSpeed's arguments.py adds it)
MEGATRON_POSITION_EMBEDDINGS = {"rope": "rope", "learned": "learned_absolute"}


def megatron_args(sc: Scenario) -> list[str]:
    """Megatron-LM (``pretrain_gpt.py``) command-line arguments for the scenario's batch,
    parallel layout (tensor, pipeline with its split and schedule, context and expert
    parallelism), precision, recomputation and FP8 (a list; join with spaces). What the
    arguments do not decide (model size flags come from the model's own script, data,
    learning rate) is left out. Raises ScenarioError for a scenario without a transformer.
    The pieces: :func:`megatron_pipeline_args`, :func:`megatron_moe_args`,
    :func:`megatron_fp8_args`; ``--context-parallel-size`` / ``--cp-comm-type`` as
    :func:`megatron_parallel_args` writes them; ``training.recompute_modules`` as
    ``--recompute-modules``. ``training.activation_func_fp8_input_store`` has no argument
    (megatron/training/arguments.py excludes that TransformerConfig field from the command
    line): it is left out, to be set in the model's TransformerConfig.
    ``model.position_embedding`` is ``--position-embedding-type`` (megatron/training/
    arguments.py: choices learned_absolute, rope, mrope, relative, none; default
    learned_absolute): ``rope`` and ``learned_absolute`` (model ``learned``); ALiBi has no
    Megatron-LM choice, so no flag: :func:`megatron_notes` says so (Megatron-DeepSpeed's
    ``--position-embedding-type alibi``)."""
    _need_transformer(sc)
    lay, tr, st = layout(sc), sc.training, sc.strategy
    args = megatron_pipeline_args(sc)        # TP, PP, virtual stages, the split, SP
    args += ["--micro-batch-size", str(tr.micro_batch_size),
             "--global-batch-size", str(lay.global_batch_size),
             "--seq-length", str(tr.seq_len)]
    if sc.model.position_embedding in MEGATRON_POSITION_EMBEDDINGS:
        args += ["--position-embedding-type", MEGATRON_POSITION_EMBEDDINGS[sc.model.position_embedding]]
    if lay.context_parallel > 1:
        args += ["--context-parallel-size", str(lay.context_parallel),
                 "--cp-comm-type", tr.context_parallel_comm]
    args += megatron_moe_args(sc)
    if tr.precision in ("bf16", "fp16"):
        args.append(f"--{tr.precision}")
    if tr.recompute == "selective":
        args += ["--recompute-granularity", "selective"]
        if tr.recompute_modules is not None:
            args += ["--recompute-modules", *tr.recompute_modules]
    elif tr.recompute == "full":
        # block: the first k layers of each stage (recompute_layers); uniform 1: every layer
        method, k = ("block", tr.recompute_layers) if tr.recompute_layers is not None else ("uniform", 1)
        args += ["--recompute-granularity", "full", "--recompute-method", method,
                 "--recompute-num-layers", str(k)]
    if st.kind == "megatron_dist_opt":
        args.append("--use-distributed-optimizer")
    if tr.overlap_grad_reduce:
        args.append("--overlap-grad-reduce")
    if tr.overlap_param_gather:
        args.append("--overlap-param-gather")
    if tr.tp_comm_overlap:
        args.append("--tp-comm-overlap")
    if tr.flash_attention:
        args += ["--attention-backend", "flash"]
    if tr.fp8 is not None:
        args += megatron_fp8_args(tr.fp8)
    return args


def _domain_note(sc: Scenario) -> str | None:
    """What a launcher cannot say about an NVLink domain wider than a host (GB200 NVL72),
    or None on HGX/DGX."""
    c = sc.cluster
    if c.domain_gpus <= c.gpus_per_node:
        return None
    return (f"The plan's collectives use one NVLink domain of {c.domain_gpus} GPUs across "
            f"{c.domain_gpus // c.gpus_per_node} hosts (cluster.nvlink_domain_gpus): no "
            "DeepSpeed, FSDP or Megatron argument sets it; NCCL runs multi-node NVLink (MNNVL) "
            "on GB200 from version 2.25.2 (NVIDIA Multi-Node NVLink tuning guide, NCCL "
            "section), with the IMEX service up on the hosts. Launch with "
            f"--nproc_per_node {c.gpus_per_node} (the host's GPUs).")
def _recompute_layers_note(tr) -> str | None:
    """Layer-selective full recomputation in framework terms: Megatron-LM's arguments for
    ``recompute_layers``, torchtitan's for ``recompute_every``."""
    if tr.recompute != "full":
        return None
    if tr.recompute_layers is not None:
        return (f"Only the first {tr.recompute_layers} layers of each pipeline stage are "
                "checkpointed (Megatron-LM --recompute-granularity full --recompute-method block "
                f"--recompute-num-layers {tr.recompute_layers}); this config's "
                "activation-checkpointing settings do not choose layers: call the checkpoint "
                "function on those blocks only")
    if tr.recompute_every is not None:
        return (f"Only every {tr.recompute_every}-th layer is checkpointed (torchtitan "
                f'[activation_checkpoint] mode = "selective", selective_ac_option = '
                f'"{tr.recompute_every}"); this config\'s activation-checkpointing settings do '
                "not choose layers: call the checkpoint function on those blocks only")
    return None


def _preference_note(sc: Scenario) -> str | None:
    """``training.preference`` as TRL's ``DPOConfig`` / ``DPOTrainer`` arguments (TRL v1.9.0,
    trl/trainer/dpo_config.py); no DeepSpeed or FSDP key carries it."""
    pref, tr = sc.training.preference, sc.training
    if pref is None:
        return None
    ref = {"separate": "ref_model=<a second copy of the model, loaded in the compute dtype> "
                       "(or None without PEFT: DPOTrainer loads one)",
           "adapters_off": "ref_model=None with peft_config (the base with adapters off is "
                           "the reference)",
           "precomputed": "ref_model=None"}[pref.reference]
    return (f"Preference tuning is not part of this config: run TRL's DPOTrainer with "
            f"DPOConfig(per_device_train_batch_size={tr.micro_batch_size}, "
            f"max_length={tr.seq_len}, precompute_ref_log_probs="
            f"{pref.reference == 'precomputed'}, gradient_checkpointing="
            f"{tr.recompute == 'full'}) and {ref}; each example is a chosen and a rejected "
            f"sequence, so the policy runs {tr.sequences_per_micro_batch} sequences a "
            "micro-batch (the plan counts the same)")


def _shared_notes(sc: Scenario, what: str) -> list[str]:
    """What a DeepSpeed config or an FSDP module (``what``) leaves to the user, alike for
    both: the adapter setup, paged optimizers, FP8, an NVLink domain wider than a host,
    the DPO reference model."""
    tr = sc.training
    notes = []
    if tr.lora is not None:
        notes.append(_lora_note(tr.lora, tr.precision))
    if tr.optimizer in _PAGED_NOTES:
        notes.append(_PAGED_NOTES[tr.optimizer])
    if tr.fp8 is not None:
        notes.append(_fp8_note(sc, what))
    return notes + [n for n in (_domain_note(sc), _preference_note(sc)) if n]


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


# Both exports' note on a CXL offload: neither framework names CXL (module docstring).
_CXL_NOTE = "CXL memory is a CPU-less NUMA node; neither DeepSpeed nor PyTorch names it."


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
    notes = _shared_notes(sc, "DeepSpeed config") + [n for n in (_recompute_layers_note(tr),) if n]
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
    if st.offload_activations == "cpu" and tr.tensor_parallel > 1:
        notes.append("With partition_activations (tensor parallelism) DeepSpeed's "
                     "cpu_checkpointing copies each checkpoint to the host with a blocking "
                     ".cpu() (activation_checkpointing/checkpointing.py, 0.19.6); only the "
                     "unpartitioned path uses its side-stream offload engine, which the plan's "
                     "overlapped copies follow")
    if tr.recompute != "none":
        cfg["activation_checkpointing"] = {"partition_activations": tr.tensor_parallel > 1,
                                           "cpu_checkpointing": st.offload_activations == "cpu",
                                           "contiguous_memory_optimization": True}
    if "cxl" in (st.offload_optimizer, st.offload_params):
        notes.append(_CXL_NOTE + " DeepSpeed offloads to device 'cpu' (the CXL offload is "
                     "exported as that); start the ranks under numactl --membind=<CXL node> "
                     "(or --preferred) so its pinned host buffers land on the CXL expander.")
    if lay.context_parallel > 1:
        notes.append(_context_parallel_note(sc, "DeepSpeed"))
    if lay.expert_parallel > 1 or sc.model.num_experts > 1 and tr.moe_capacity_factor is not None:
        cfg["_tierlab_moe"] = deepspeed_moe_kwargs(sc)
        cfg["_tierlab_megatron_args"] = megatron_moe_args(sc)
        notes.append("Expert parallelism is not a DeepSpeed config key: build each MoE layer as "
                     "deepspeed.moe.layer.MoE(hidden_size, expert, **_tierlab_moe) (ep_size is "
                     "the plan's expert_parallel); the routing imbalance the plan counts is a "
                     "property of the data, not a setting. _tierlab_megatron_args are the same "
                     "choices as Megatron-LM arguments.")
    if lay.pipeline_parallel > 1:
        notes.append(_deepspeed_pipeline_note(sc))
        cfg["_tierlab_megatron_args"] = megatron_pipeline_args(sc) + cfg.get("_tierlab_megatron_args", [])
    cfg["_tierlab_placeholders"] = placeholders
    if notes:
        cfg["_tierlab_notes"] = notes
    return cfg


def deepspeed_moe_kwargs(sc: Scenario) -> dict:
    """Keyword arguments of ``deepspeed.moe.layer.MoE`` for the plan's experts: ``num_experts``,
    ``ep_size`` (expert parallel), ``k`` (top-k), ``capacity_factor`` and ``drop_tokens``
    (DeepSpeed drops over capacity unless ``drop_tokens`` is False: the plan's dropless is
    ``drop_tokens`` False), ``enable_expert_tensor_parallelism`` (expert tensor parallel > 1;
    DeepSpeed then splits experts over the tensor-parallel group). DeepSpeed's MoE API
    (deepspeed/moe/layer.py ``MoE.__init__``); it has no padding option."""
    m, tr, lay = sc.model, sc.training, layout(sc)
    dropless = tr.moe_capacity_factor is None
    return {"num_experts": m.num_experts, "ep_size": lay.expert_parallel, "k": m.moe_top_k,
            "capacity_factor": 1.0 if dropless else tr.moe_capacity_factor,
            "drop_tokens": not dropless,
            "enable_expert_tensor_parallelism": lay.expert_tensor_parallel > 1}


def megatron_moe_args(sc: Scenario) -> list[str]:
    """Megatron-LM command-line arguments for the plan's experts (megatron/training/
    arguments.py, core 0.20): ``--num-experts``, ``--moe-router-topk``,
    ``--expert-model-parallel-size``, ``--expert-tensor-parallel-size``,
    ``--moe-token-dispatcher-type alltoall`` (the dispatcher the plan models), and where
    set ``--moe-expert-capacity-factor``, ``--moe-pad-expert-input-to-capacity``,
    ``--overlap-moe-expert-parallel-comm``, and for node-limited routing
    ``--moe-router-num-groups`` (the nodes the EP group spans) with
    ``--moe-router-group-topk``. Empty for a dense model."""
    m, tr, lay = sc.model, sc.training, layout(sc)
    if m.num_experts <= 1:
        return []
    out = [f"--num-experts {m.num_experts}", f"--moe-router-topk {m.moe_top_k}",
           f"--expert-model-parallel-size {lay.expert_parallel}",
           f"--expert-tensor-parallel-size {lay.expert_tensor_parallel}",
           "--moe-token-dispatcher-type alltoall"]
    if tr.moe_capacity_factor is not None:
        out.append(f"--moe-expert-capacity-factor {tr.moe_capacity_factor:g}")
    if tr.moe_pad_to_capacity:
        out.append("--moe-pad-expert-input-to-capacity")
    if tr.moe_a2a_overlap:
        out.append("--overlap-moe-expert-parallel-comm")
    if tr.moe_router_group_topk is not None:
        out += [f"--moe-router-num-groups {ep_nodes(sc)}",
                f"--moe-router-group-topk {tr.moe_router_group_topk}"]
    return out


def megatron_pipeline_args(sc: Scenario) -> list[str]:
    """Megatron-LM command-line arguments of the scenario's model parallelism and pipeline
    split (``megatron/training/arguments.py``): ``--tensor-model-parallel-size``,
    ``--pipeline-model-parallel-size``, when interleaved
    ``--num-layers-per-virtual-pipeline-stage`` (even) or
    ``--num-virtual-stages-per-pipeline-rank`` (uneven first/last stages; a layout string
    has its virtual stages in it), ``--decoder-first-pipeline-num-layers`` /
    ``--decoder-last-pipeline-num-layers`` for a first/last split, or
    ``--pipeline-model-parallel-layout`` for an explicit list
    (:func:`simulation.pipeline.megatron_layout`). Megatron-LM has no DualPipe schedule:
    for ``pipeline_schedule = dualpipe`` the arguments describe the split and
    :func:`megatron_notes` says so."""
    from .parallel import pipeline_stage_layers
    from .pipeline import megatron_layout
    tr = sc.training
    layers = pipeline_stage_layers(sc)
    args = [f"--tensor-model-parallel-size {tr.tensor_parallel}",
            f"--pipeline-model-parallel-size {tr.pipeline_parallel}"]
    v = tr.interleave_stages or 1
    # arguments.py: at most one of --num-layers-per-virtual-pipeline-stage,
    # --num-virtual-stages-per-pipeline-rank (the one for uneven first/last stages) and
    # --pipeline-model-parallel-layout (which carries the virtual stages itself)
    if v > 1 and tr.pipeline_layers is None:
        args.append(f"--num-layers-per-virtual-pipeline-stage {max(layers) // v}"
                    if len(set(layers)) == 1 else f"--num-virtual-stages-per-pipeline-rank {v}")
    if tr.sequence_parallel:
        args.append("--sequence-parallel")
    if tr.pipeline_layers is not None:
        from .pipeline import chunk_layers
        args.append("--pipeline-model-parallel-layout "
                    f"'{megatron_layout(layers, v, chunk_layers(layers, v, tr.pipeline_layers))}'")
    if tr.first_pipeline_layers is not None:
        args.append(f"--decoder-first-pipeline-num-layers {tr.first_pipeline_layers}")
    if tr.last_pipeline_layers is not None:
        args.append(f"--decoder-last-pipeline-num-layers {tr.last_pipeline_layers}")
    return args


def megatron_notes(sc: Scenario) -> list[str]:
    """What the Megatron-LM arguments (:func:`megatron_args`) cannot say, one sentence each
    (the download writes them as comment lines after the arguments, not among them)."""
    notes = []
    if sc.model.position_embedding == "alibi":
        notes.append("ALiBi (model.position_embedding alibi) has no Megatron-LM flag: its "
                     "--position-embedding-type takes learned_absolute, rope, mrope, relative or none. "
                     "Megatron-DeepSpeed (BLOOM's trainer) has --position-embedding-type alibi; with "
                     "Megatron-LM, add the biases in the attention yourself")
    if sc.training.pipeline_schedule == "dualpipe":
        notes.append("DualPipe (deepseek-ai/DualPipe) is not a Megatron-LM schedule: run it with "
                     "that library; each rank holds stages i and p-1-i")
    if sc.training.moe_router_group_topk is not None and ep_nodes(sc) > 1:
        notes.append("Node-limited routing: the plan sends a token over the network once per "
                     "destination node and forwards it over NVLink inside the node, as DeepEP's "
                     "internode dispatch does (Megatron-LM: --moe-token-dispatcher-type flex with "
                     "DeepEP); the alltoall dispatcher sends each expert's copy over the network")
    return notes


def _deepspeed_pipeline_note(sc: Scenario) -> str:
    """What DeepSpeed's pipeline engine can express of the split (``deepspeed/runtime/pipe/
    module.py`` ``PipelineModule._partition_layers``: ``partition_method`` ``uniform``,
    ``parameters``, ``type:<regex>``; no list of layers per stage; the 1F1B ``TrainSchedule``
    in ``runtime/pipe/schedule.py``, no interleaving, no DualPipe)."""
    from .parallel import pipeline_stage_layers
    tr = sc.training
    layers = pipeline_stage_layers(sc)
    out = (f"Pipeline parallelism is set in code, not in this JSON: deepspeed.pipe.PipelineModule("
           f"num_stages={tr.pipeline_parallel}, partition_method=...). ")
    if len(set(layers)) > 1:
        out += (f"The plan's uneven split {list(layers)} has no partition_method: 'uniform' splits "
                "the layers evenly, 'parameters' balances parameter counts (which, with the "
                "embedding and head counted as layers, also takes layers off the end stages, but "
                "not to a given count); override _partition_layers to set it exactly. ")
    else:
        out += "partition_method='type:<block class>' gives the even split of blocks the plan counts. "
    if (tr.interleave_stages or 1) > 1 or tr.pipeline_schedule != "1f1b":
        out += ("DeepSpeed's TrainSchedule is plain 1F1B: the plan's "
                + ("interleaved" if tr.pipeline_schedule == "1f1b" else "DualPipe")
                + " schedule is not available in it. ")
    return out + "The Megatron-LM arguments are under _tierlab_megatron_args."


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
    notes = _shared_notes(sc, "FSDP module")   # what FSDP cannot express, for the docstring
    if st.kind in _FSDP_KIND_NOTES:
        notes.append(_FSDP_KIND_NOTES[st.kind])
    if lay.context_parallel > 1:
        notes.append(_context_parallel_note(sc, "FSDP"))
    if lay.tensor_parallel > 1 or lay.pipeline_parallel > 1:
        notes.append(f"The plan uses tensor_parallel={lay.tensor_parallel} and "
                     f"pipeline_parallel={lay.pipeline_parallel}: FSDP shards over the "
                     f"{lay.data_parallel} data-parallel ranks only; tensor and pipeline "
                     "parallelism need torch.distributed.tensor.parallel / "
                     "torch.distributed.pipelining on a device mesh of their own.")

    if lay.expert_parallel > 1:
        notes.append(f"The plan uses expert_parallel={lay.expert_parallel}: this FSDP module leaves "
                     "expert parallelism out (every rank would hold all experts, sharded as the "
                     "rest). Place the experts with an expert-parallel mesh dimension of your own "
                     "(torchtitan's ExpertParallel) or use Megatron-LM: "
                     + " ".join(megatron_moe_args(sc)) + ".")

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
        notes.append(_CXL_NOTE + " Start the ranks under numactl --membind=<CXL node> "
                     "(or --preferred) so host tensors land there.")
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

    if st.fsdp_version == 2:
        return _fully_shard_module(sc, lay, sb, notes, strategy, hybrid, build, rank0)
    head = _snippet_doc(f"PyTorch FSDP for this tierlab plan ({st.kind}, ShardingStrategy.{strategy}).",
                        build, "FSDP's shard keeps that dtype", "is", sb, notes)
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
        check = "lambda module: isinstance(module, block_cls)"
        if tr.recompute_layers is not None or tr.recompute_every is not None:
            chosen = (f"blocks[:{tr.recompute_layers}]" if tr.recompute_layers is not None
                      else f"blocks[{tr.recompute_every} - 1::{tr.recompute_every}]")
            what = (f"the first {tr.recompute_layers} blocks (Megatron --recompute-method block)"
                    if tr.recompute_layers is not None else
                    f"every {tr.recompute_every}-th block (torchtitan selective_ac_option)")
            lines += [
                f"    # layer-selective recomputation: {what}",
                "    blocks = [m for m in model.modules() if isinstance(m, block_cls)]",
                f"    chosen = {{id(m) for m in {chosen}}}",
            ]
            check = "lambda module: id(module) in chosen"
        lines += [
            "    # full recomputation, one block at a time: only the blocks are checkpointed",
            "    apply_activation_checkpointing(",
            "        model,",
            "        checkpoint_wrapper_fn=functools.partial(checkpoint_wrapper,",
            "                                                checkpoint_impl=CheckpointImpl.NO_REENTRANT),",
            f"        check_fn={check})",
        ]
    lines.append("    return model")
    return "\n".join(lines) + "\n"



def _snippet_doc(title: str, build: str, keeps: str, verb: str, sb, notes: list[str]) -> str:
    """The FSDP snippet's module docstring: how to call ``wrap``, the dtype to build the
    model in (``keeps``: what holds it; ``verb``: "is" / "are" before "the fp32 master
    copy"), and the notes on what FSDP cannot express."""
    master = build == "float32" and sb.params_dtype != "fp32"
    doc = [f'"""{title}',
           "",
           "Call wrap(model, block_cls) on every rank after torch.distributed.init_process_group",
           "and torch.cuda.set_device(local_rank), before creating the optimizer. block_cls is",
           "your transformer block class (Hugging Face Llama: LlamaDecoderLayer). Build or load",
           f"the model in {build}: {keeps}" + (f" and {verb} the fp32 master copy." if master else "."),
           ""]
    if notes:
        doc.append("What this plan counts and FSDP cannot express as such:")
        for n in notes:
            doc += _wrapped(n, "- ", "  ")
    doc.append('"""')
    return "\n".join(doc)

def _fully_shard_module(sc: Scenario, lay, sb, notes: list, strategy: str, hybrid: bool,
                        build: str, rank0: bool) -> str:
    """``fsdp_snippet`` for FSDP2 (``strategy.fsdp_version`` 2): ``fully_shard`` on each
    transformer block, then on the root (embedding, final norm, head), as torchtitan's
    ``apply_fsdp`` (torchtitan/parallelisms/parallelize_llama.py at 9dec370) does;
    ``MixedPrecisionPolicy(param_dtype, reduce_dtype)``, ``CPUOffloadPolicy`` for
    parameter offload, a (replicate, shard) mesh for HYBRID_SHARD (HSDP)."""
    tr, st = sc.training, sc.strategy
    gpn = sc.cluster.gpus_per_node
    notes = list(notes)
    if rank0:
        notes = [n for n in notes if not n.startswith("The plan loads the weights on rank 0")]
        notes.append("The plan loads the weights on rank 0 only (runtime.model_load = rank0): "
                     "fully_shard has no sync_module_states; build the model on the meta "
                     "device, wrap it, then torch.distributed.checkpoint.state_dict."
                     "set_model_state_dict(model, full_state_dict, options=StateDictOptions("
                     "full_state_dict=True, broadcast_from_rank0=True)).")
    if st.prefetch_depth == 0:
        notes.append("The plan prefetches nothing; fully_shard always prefetches the next "
                     "block (implicit forward and backward prefetch), so it overlaps more.")
    if sb.params_dtype == "fp32" or sb.master_weights == 0:
        mp = "MixedPrecisionPolicy()"
    else:
        mp = (f"MixedPrecisionPolicy(param_dtype={_DTYPE[sb.params_dtype]}, "
              f"reduce_dtype={_DTYPE[sb.grads_dtype]})")
    offload = st.offload_params != "none" or st.offload_optimizer != "none"
    lines = [_snippet_doc(f"PyTorch FSDP2 (fully_shard) for this tierlab plan ({st.kind}, "
                          + ("HSDP" if hybrid else "full shard") + ").",
                          build, "the DTensor shards keep that dtype", "are", sb, notes),
             "import functools",
             "",
             "import torch",
             "import torch.distributed as dist",
             "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (",
             "    CheckpointImpl, apply_activation_checkpointing, checkpoint_wrapper)",
             "from torch.distributed.device_mesh import init_device_mesh",
             "from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard",
             "",
             f"MICRO_BATCH_SIZE = {tr.micro_batch_size}  # per GPU",
             f"GRAD_ACCUMULATION_STEPS = {lay.grad_accumulation_steps}",
             f"GLOBAL_BATCH_SIZE = {lay.global_batch_size}  # = {tr.micro_batch_size} x "
             f"{lay.data_parallel} data-parallel ranks x {lay.grad_accumulation_steps}"]
    if hybrid:
        lines.append(f"SHARD_GROUP_SIZE = {lay.shard_degree}  # ranks one copy is sharded over"
                     + (" (the plan: one node)" if lay.shard_degree == gpn else ""))
    lines += ["", "",
              "def wrap(model: torch.nn.Module, block_cls: type, device: torch.device | None = None):",
              '    """Shard model as the plan counts it (in place); returns it."""',
              "    if device is None:",
              '        device = torch.device("cuda", torch.cuda.current_device())',
              "    world = dist.get_world_size()"]
    if hybrid:
        lines += ["    if world % SHARD_GROUP_SIZE:",
                  '        raise ValueError(f"{world} ranks do not split into shard groups of {SHARD_GROUP_SIZE}")',
                  "    # rows: replicas of the model; columns: the ranks one replica is sharded over (HSDP)",
                  "    mesh = init_device_mesh(device.type, (world // SHARD_GROUP_SIZE, SHARD_GROUP_SIZE),",
                  '                            mesh_dim_names=("replicate", "shard"))']
    else:
        lines.append('    mesh = init_device_mesh(device.type, (world,), mesh_dim_names=("shard",))')
    lines.append("    blocks = [m for m in model.modules() if isinstance(m, block_cls)]")
    if tr.recompute == "full":
        chosen = "blocks"
        if tr.recompute_layers is not None:
            chosen = f"blocks[:{tr.recompute_layers}]"
        elif tr.recompute_every is not None:
            chosen = f"blocks[{tr.recompute_every} - 1::{tr.recompute_every}]"
        lines += ["    # full recomputation, one block at a time: only the blocks are checkpointed",
                  f"    chosen = {{id(m) for m in {chosen}}}",
                  "    apply_activation_checkpointing(",
                  "        model,",
                  "        checkpoint_wrapper_fn=functools.partial(checkpoint_wrapper,",
                  "                                                checkpoint_impl=CheckpointImpl.NO_REENTRANT),",
                  "        check_fn=lambda module: id(module) in chosen)"]
    lines += [f"    config = dict(mesh=mesh, mp_policy={mp}"
              + (", offload_policy=CPUOffloadPolicy())" if offload else ")"),
              "    # one unit per transformer block, as the plan counts: all-gathered before its",
              "    # forward and again before its backward (reshard_after_forward=True)",
              "    for block in blocks:",
              "        fully_shard(block, **config, reshard_after_forward=True)",
              "    # the root unit: embedding, final norm and output head",
              "    fully_shard(model, **config)",
              "    return model"]
    return "\n".join(lines) + "\n"


def megatron_parallel_args(sc: Scenario) -> list[str]:
    """The scenario's layout as Megatron-LM command-line arguments (megatron/training/
    arguments.py): ``--tensor-model-parallel-size``, ``--pipeline-model-parallel-size``,
    ``--context-parallel-size`` with ``--cp-comm-type`` (``training.context_parallel_comm``:
    p2p, the K/V ring, or all_gather), ``--sequence-parallel``, the batch and
    sequence sizes, ``--use-distributed-optimizer`` for ``megatron_dist_opt``. Megatron
    derives the data-parallel degree itself (world size / (t x cp x p))."""
    _need_transformer(sc)
    lay, tr = layout(sc), sc.training
    args = ["--tensor-model-parallel-size", str(lay.tensor_parallel),
            "--pipeline-model-parallel-size", str(lay.pipeline_parallel),
            "--context-parallel-size", str(lay.context_parallel)]
    if lay.context_parallel > 1:
        args += ["--cp-comm-type", tr.context_parallel_comm]
    if tr.sequence_parallel:
        args.append("--sequence-parallel")
    if tr.interleave_stages:
        args += ["--num-layers-per-virtual-pipeline-stage",
                 str(sc.model.num_layers // (lay.pipeline_parallel * tr.interleave_stages))]
    args += ["--seq-length", str(tr.seq_len), "--micro-batch-size", str(tr.micro_batch_size),
             "--global-batch-size", str(lay.global_batch_size)]
    if sc.strategy.kind == "megatron_dist_opt":
        args.append("--use-distributed-optimizer")
    return args


def torchtitan_parallelism(sc: Scenario) -> dict:
    """The scenario's layout as torchtitan's ``[parallelism]`` section (job config keys):
    ``tensor_parallel_degree``, ``context_parallel_degree``, ``pipeline_parallel_degree``
    and the FSDP mesh (``data_parallel_shard_degree`` x ``data_parallel_replicate_degree``
    = the data-parallel degree; torchtitan's FSDP shards over dp_shard x cp). The K/V
    rotation (``context_parallel_rotate_method``): ``alltoall`` for the p2p ring (each chunk
    passed to the next CP rank), ``allgather`` for ``context_parallel_comm`` all_gather."""
    _need_transformer(sc)
    lay, st = layout(sc), sc.strategy
    dp = lay.data_parallel
    if st.zero_stage == 0:
        shard, replicate = 1, dp
    elif st.kind == "fsdp_hybrid_shard":
        shard = max(1, lay.shard_degree // lay.context_parallel)
        replicate = dp // shard
    else:
        shard, replicate = dp, 1
    out = dict(data_parallel_replicate_degree=replicate, data_parallel_shard_degree=shard,
               tensor_parallel_degree=lay.tensor_parallel,
               context_parallel_degree=lay.context_parallel,
               pipeline_parallel_degree=lay.pipeline_parallel)
    if lay.context_parallel > 1:
        out["context_parallel_rotate_method"] = ("allgather" if sc.training.context_parallel_comm
                                                 == "all_gather" else "alltoall")
    return out


def _context_parallel_note(sc: Scenario, framework: str) -> str:
    """What a DeepSpeed or FSDP export leaves out of context parallelism, and the
    Megatron-style arguments that carry it."""
    lay = layout(sc)
    cp = lay.context_parallel
    other = ("DeepSpeed-Ulysses sequence parallelism is different: it all-to-alls the "
             "queries, keys and values so each rank holds whole sequences for a share of the "
             "heads (degree bounded by the KV heads), not the K/V exchange the plan counts. "
             if framework == "DeepSpeed" else
             "PyTorch's context_parallel (torch.distributed.tensor.experimental) on a CP mesh "
             "dimension beside the FSDP one does it (torchtitan: "
             f"context_parallel_degree = {cp}). ")
    how = ("passes its keys and values around the CP ring" if sc.training.context_parallel_comm == "p2p"
           else "all-gathers the keys and values of the whole sequence")
    return (f"The plan splits each sequence over context_parallel = {cp} ranks (each rank holds "
            f"seq_len / {cp} tokens and {how}). {framework} has no such setting, so this config leaves it out: it would "
            f"treat all {lay.num_gpus // (lay.tensor_parallel * lay.pipeline_parallel)} "
            f"non-model-parallel ranks as data parallel. {other}Megatron-LM runs the plan "
            f"with: {' '.join(megatron_parallel_args(sc))}.")


def _wrapped(text: str, first: str, rest: str, width: int = 88) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest)
