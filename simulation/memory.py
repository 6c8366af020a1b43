"""Memory per tier: every part of training state, placed on HBM, DDR, NVMe or CXL.

Two accounting conventions:

``zero_paper``
    What ZeRO (Rajbhandari et al., SC'20, Sec. 5.1-5.3, Table 1) counts: with Psi
    parameters per model-parallel rank and N_d the shard degree,

    ======  ======================================
    DDP     (2 + 2 + K) * Psi
    ZeRO-1  2*Psi + 2*Psi + K*Psi/N_d
    ZeRO-2  2*Psi + (2 + K)*Psi/N_d
    ZeRO-3  (2 + 2 + K)*Psi/N_d
    ======  ======================================

    plus Korthikanti activations; no buffers, no runtime, no fragmentation.

``realistic`` (default)
    What the frameworks allocate, so that "fits" means it fits (read in DeepSpeed 0.16.5,
    Megatron-LM core 0.20, torch FSDP1/FSDP2; file and function in each term's docstring):

    * DDP / Megatron: bf16 parameters, a full fp32 ``main_grad`` buffer
      (``param_and_grad_buffer.py``; ``--bf16`` forces
      ``accumulate_allreduce_grads_in_fp32``), fp32 master + Adam: 18 B/param; Megatron's
      distributed optimizer shards the 12 over DP: 6 + 12/d (``dist_optimizer.md``).
    * DeepSpeed ZeRO keeps gradients in the model dtype (``engine.get_data_types``:
      ``grad_accum_dtype`` defaults to it): ZeRO-1 the full 16-bit gradients, ZeRO-2 a
      16-bit partition (``stage_1_and_2.py``), ZeRO-3 a 16-bit partition in
      ``grad_partitions_flat_buffer`` (``stage3.py``); the fp32 gradient exists only at the
      step, one partition (ZeRO-1/2) or one ``sub_group_size`` (1e9) sub-group (ZeRO-3,
      ``_prepare_fp32_grad_for_sub_group``). DeepSpeed's own estimator counts that transient
      as a persistent 4 B/param ("18 = 2 + 2 + 4 + 4 + 8"), which is why it says 18 where
      this convention says 16 + one sub-group. Buckets: ``reduce_bucket_size`` (5e8
      elements, persistent in ZeRO-3's ``__ipg_bucket_flat_buffer``, plus the copy of a full
      bucket that ``reduce_scatter_coalesced`` makes in backward) and
      ``allgather_bucket_size``; ZeRO-3 holds the layer in backward and the last layers
      that ``stage3_max_reuse_distance`` (1e9) keeps from forward, the prefetch bucket
      (``stage3_prefetch_bucket_size``, under ``stage3_max_live_parameters``) and the head
      as a module of its own (:func:`_ds_live_parameters`).
    * PyTorch FSDP under mixed precision keeps fp32 flat shards (the master weights; HF
      Accelerate upcasts a bf16-loaded model) and fp32 sharded gradients, unshards
      (1 + prefetch) units of bf16 parameters plus one unit of gradients, and keeps the
      root unit (embedding, final norm, head) gathered from forward through backward.
    * NVMe offload adds DeepSpeed's pinned DDR swap buffers (``offload_param``: 5 buffers x
      1e8 elements; ``offload_optimizer``: 4 fp32 buffers of the largest sub-group).
    * The loss and logits (:mod:`simulation.loss`), the recompute working set, checkpoint
      staging in host DRAM, the model's load into host RAM, the CUDA context / NCCL /
      cuBLAS runtime and allocator fragmentation that follows the allocation pattern.

HBM is accounted per GPU; DDR, NVMe and CXL per node (sum over the node's ranks). Each
part has the phase it is live in; a tier's figure is its persistent parts plus the
largest of the moments of :data:`MOMENTS` (loss, backward, step, checkpoint), or the
load phase when that is larger (it comes before training's states exist).
"""

from __future__ import annotations

import dataclasses
import math

from .activations import (ActivationShape, StageActivations, family_traits, final_norm_bytes,
                          amp_fp32_weight_bytes, first_stage, fp32_residual_mlp_bytes,
                          layer_bytes)
from .parallel import split_of
from .pipeline import StagePlan, stage_plans
from .loss import loss_bytes
from . import experts
from .lora import (adapter_activation_bytes, adapter_params, adapter_tensors, base_weight_bytes,
                   largest_base_matrix, quantised_elements)
from .memo import ByIdentity
from .params import ParamCount
from .parallel import Layout
from .checkpoint import TARGET_DEFAULTS, checkpoint_size_bytes
from .context_parallel import ring_buffer_bytes
from .scenario import ModelSpec, Scenario, TrainingSpec, checkpointed_layers, last_layer_checkpointed
from .states import DTYPE_BYTES, PAGED_OPTIMIZERS, StateBytes
from . import fp8 as fp8_model
from .fp8 import uses_torchao

CATEGORIES = ("params", "grads", "optimizer", "activations", "buffers")
_CATEGORY_KEYS = {c: f"{c}_bytes" for c in CATEGORIES}
NODE_TIERS = ("ddr", "nvme", "cxl")
OFFLOAD_TIER = {"cpu": "ddr", "nvme": "nvme", "cxl": "cxl"}

# DeepSpeed defaults (deepspeed/runtime/zero/config.py, offload_config.py)
DS_BUCKET_ELEMENTS = 5e8            # reduce_bucket_size, allgather_bucket_size
DS_MAX_LIVE_PARAMETERS = 1e9        # stage3_max_live_parameters
DS_MAX_REUSE_DISTANCE = 1e9         # stage3_max_reuse_distance
DS_PREFETCH_ELEMENTS = 5e7          # stage3_prefetch_bucket_size
DS_SUB_GROUP_ELEMENTS = 1e9         # sub_group_size
DS_PARAM_SWAP_BUFFERS = 5           # offload_param.buffer_count
DS_OPTIMIZER_SWAP_BUFFERS = 4       # offload_optimizer.buffer_count (offload_config.py)
DS_PARAM_SWAP_ELEMENTS = 1e8        # offload_param.buffer_size


# What nvidia-smi shows beyond the tensors (``torch.cuda.max_memory_allocated``): the CUDA
# context with its libraries' buffers, and what the caching allocator reserves but no
# tensor uses. A tier summary gives both figures: ``allocated_bytes`` and ``reserved_bytes``.
RUNTIME_PART = "CUDA context, cuBLAS workspace, NCCL buffers"
FRAGMENTATION_PART = "allocator fragmentation and reserve"
_NOT_ALLOCATED = frozenset({RUNTIME_PART, FRAGMENTATION_PART})


def part(name: str, category: str, tier: str, bytes: float, phase: str = "persistent",
         bytes_per_param: float | None = None, note: str = "") -> dict:
    """One allocation, as the report lists it: ``bytes`` is per GPU on HBM, per node on
    DDR/NVMe/CXL; ``phase`` is persistent, fwd_bwd or step. A plain dict because a report
    lists a dozen of them per tier and a quick estimate should cost ~0.1 ms. ``bytes`` is
    rounded to a whole byte (a share such as a fragmentation fraction or an average
    rounding factor is no fraction of a byte), so totals and free bytes are whole too."""
    d = {"name": name, "category": category, "tier": tier,
         "bytes": float(round(bytes)) if type(bytes) is float and not bytes.is_integer() else bytes,
         "phase": phase,
         "note": note}
    if bytes_per_param is not None:
        d["bytes_per_param"] = bytes_per_param
    return d


def build_parts(sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes,
                pipeline_stage="only", counted: list | None = None,
                spans: list | None = None) -> list[dict]:
    """Every allocation of one rank (HBM) and of one node (other tiers).

    ``pipeline_stage`` is the pipeline stage the rank runs: a
    :class:`simulation.pipeline.StagePlan` (:func:`stage_plans_for`), or by name ``only``
    (no pipeline), ``first`` (embedding, the most micro batches in flight) or ``last``
    (output head and loss). A stage's model states are its own parameters
    (:func:`stage_param_share`: its layers, plus the embedding on the first stage and
    the final norm and head on the last), its activations its layers times the
    micro-batches in flight on it (:func:`simulation.pipeline.in_flight_chunks`).

    ``counted``, a list, gets ``(state, dtype, bytes_per_param, tier)`` for each model-state
    part, its bytes per parameter before sharding (:func:`counted_bytes_per_param`).
    ``spans``, a list, gets the two ``(start, stop)`` index ranges of the parts that depend
    on the micro-batches in flight (the stored activations, the busiest expert rank's
    routed tokens): :func:`in_flight_variant` rebuilds those alone for another rank.
    """
    st, tr = sc.strategy, sc.training
    realistic = sc.convention == "realistic"
    gpn = sc.cluster.gpus_per_node
    plan = pipeline_stage if isinstance(pipeline_stage, StagePlan) else _named_plan(sc, lay, pipeline_stage)
    pipeline_stage = plan.name
    share = stage_param_share(sc, pc, lay, plan)
    # params per model-parallel rank: the stage's share; with expert parallelism the experts
    # over ETP x EP (simulation/experts.py rank_params), and ``d`` the divisor that shards the
    # dense part over the shard group and the experts over its expert-data-parallel ranks
    psi = experts.rank_params(sc.model, pc.total, lay) * share * lay.pipeline_parallel
    base_psi = psi
    lora = tr.lora
    if lora is not None:
        # LoRA (simulation/lora.py): the base is frozen in its dtype, no gradients, no
        # master copy, no optimizer states; gradients, master weights and moments below
        # are the adapters' (psi: their count per model-parallel rank).
        psi = adapter_params(sc.model, lora)["total"] * share / lay.tensor_parallel
    d = experts.sharded_divisor(sc.model, pc.total, lay, lay.shard_degree) if lora is None else lay.shard_degree
    stage = st.zero_stage
    shard_note = (f"sharded over {lay.shard_degree} ranks" if lay.shard_degree > 1
                  else "replicated on every rank")
    if lay.expert_parallel > 1:
        shard_note += (f"; experts: {sc.model.num_experts // lay.expert_parallel} per rank "
                       f"(EP {lay.expert_parallel}), states over "
                       f"{lay.expert_shard_degree} expert-data-parallel ranks")
    parts: list[dict] = []
    add = _adder(parts, gpn, counted, (psi, base_psi) if lora is not None else None)

    opt_tier = OFFLOAD_TIER.get(st.offload_optimizer, "hbm")
    par_tier = OFFLOAD_TIER.get(st.offload_params, "hbm")
    p_div = d if stage >= 3 else 1
    g_div = d if stage >= 2 else 1
    o_div = d if stage >= 1 else 1
    pdt, mdt = sb.params_dtype, sb.master_dtype
    megatron = st.kind == "megatron_dist_opt"
    # FSDP's sharded flat parameters keep the dtype the model was wrapped in: fp32 when
    # mixed precision is on (HF Accelerate upcasts a bf16-loaded model, "Upcasted low
    # precision parameters"), and then they double as the master weights.
    fsdp_master = fsdp_shard_is_master(sc, sb)
    # PEFT keeps the adapters in fp32 when the base is 16-bit (autocast_adapter_dtype=True,
    # peft tuners_utils.cast_adapter_dtype, peft 0.20.1.dev0): under torch AMP (DDP, FSDP)
    # the fp32 adapters are what the optimizer updates, no separate master copy. DeepSpeed
    # casts the whole module to its 16-bit dtype and keeps fp32 masters of its own.
    regime = adapter_regime(sc, sb)
    peft_fp32 = regime == "peft_fp32"
    base_sb = sb
    if regime == "16bit":
        # qlora.py's recipe: 16-bit adapters updated in place (no master copy), 16-bit
        # gradients (the parameters' dtype), the optimizer's own fp32 states
        adt = lora.adapter_dtype or sb.params_dtype
        sb = dataclasses.replace(sb, params=2, grads=2, master_weights=0, params_dtype=adt,
                                 grads_dtype=adt, master_dtype="none", grads_explicit=True)
        pdt = adt

    # ---- parameters
    if lora is not None and lora.quantised:
        _quantised_base(add, sc, lay, sb, base_psi, p_div, par_tier, peft_fp32)
    elif lora is not None:
        bdt = lora.base_dtype or base_sb.params_dtype
        bb = DTYPE_BYTES[bdt]
        add(f"{bdt} frozen base parameters" + (" (shard)" if p_div > 1 else ""), "params",
            par_tier, bb * base_psi / p_div, bb / p_div,
            note="LoRA: frozen, no gradients or optimizer states (Hu et al. 2021 Sec. 4.2)",
            state=("params", bdt, bb))
    if lora is not None:
        adt, ab = ("fp32", 4) if peft_fp32 else (pdt, sb.params)
        add(f"{adt} LoRA adapter parameters (r={lora.rank}: {', '.join(lora.targets)})"
            + (", also the master weights" if peft_fp32 else ""),
            "params", par_tier, ab * psi / p_div,
            note=f"{psi:,.0f} trainable parameters per rank, r x (d_in + d_out) per matrix"
                 + ("; PEFT upcasts 16-bit adapters to fp32 (autocast_adapter_dtype)"
                    if peft_fp32 else ""))
    elif fsdp_master:
        add(f"{mdt} parameters (FSDP shard, also the master weights)", "params", par_tier,
            sb.master_weights * psi / p_div, sb.master_weights / p_div, note=shard_note,
            state=("params", mdt, sb.master_weights))
        if counted is not None:      # no copy of its own: the table says where it is
            counted.append(("master_weights", f"{mdt}, the parameters", 0.0, par_tier))
    elif tr.fp8 is not None and tr.fp8.param:
        # FP8 primary weights (TE fp8_model_init, Megatron --fp8-param-gather): the Linear
        # weights are FP8 tensors (1 B); embedding, norms and head stay 16-bit
        lin = fp8_linear_fraction(sc.model, pc)
        sh = " (shard)" if p_div > 1 else ""
        add(f"fp8 Linear weights (primary, fp8_model_init){sh}", "params", par_tier,
            psi * lin / p_div, lin / p_div,
            note=f"{lin:.1%} of the parameters: QKV, projection, MLP (simulation/fp8.py)",
            state=("params", "fp8", lin))
        add(f"{pdt} other parameters (embedding, norms, head){sh}", "params", par_tier,
            sb.params * psi * (1 - lin) / p_div, sb.params * (1 - lin) / p_div,
            note=shard_note if p_div > 1 else "every rank holds all parameters",
            state=("params", pdt, sb.params * (1 - lin)))
    else:
        add(f"{pdt} parameters" + (" (shard)" if p_div > 1 else ""), "params", par_tier,
            sb.params * psi / p_div, sb.params / p_div,
            note=shard_note if p_div > 1 else "every rank holds all parameters",
            state=("params", pdt, sb.params))

    # ---- gradients
    grad_tier = "hbm"
    if st.offload_optimizer != "none":
        # ZeRO-Offload: gradients go to host memory for the CPU optimizer step; a CXL
        # offload is DeepSpeed's device "cpu" with the ranks bound to the CXL NUMA node
        # (export.py), so every host tensor of the optimizer lands there; with NVMe the host
        # is DDR (and ZeRO-3 swaps the fp32 gradients to NVMe, below).
        grad_tier = "cxl" if st.offload_optimizer == "cxl" else "ddr"
    explicit = sb.grads_explicit
    if realistic and (stage == 0 or megatron) and not (explicit or pdt == "fp32"):
        # Megatron: --bf16 forces accumulate_allreduce_grads_in_fp32; the main_grad buffer
        # is full size on every data-parallel rank (param_and_grad_buffer.py grad_data).
        add("fp32 main gradients (full, every rank)", "grads", "hbm", 4 * psi, 4,
            note="Megatron/PyTorch-AMP accumulate gradients in fp32", state=("grads", "fp32", 4))
    elif realistic and st.is_fsdp and not explicit:
        gb = sb.master_weights or sb.params        # sharded grads take the shard's dtype
        add(f"{'fp32' if gb == 4 else pdt} gradients (FSDP shard)", "grads", grad_tier,
            gb * psi / g_div, gb / g_div, note=shard_note,
            state=("grads", "fp32" if gb == 4 else pdt, gb))
    elif realistic and grad_tier != "hbm":
        if stage == 1:
            # ZeRO-1 has no backward hooks: the full 16-bit gradients stay on the GPU until
            # the accumulation boundary (stage_1_and_2.py, overlap_comm off for stage < 3).
            add(f"{sb.grads_dtype} gradients (full, until the boundary)", "grads", "hbm",
                sb.grads * psi, sb.grads, note="ZeRO-1 reduces at the boundary",
                state=("grads", sb.grads_dtype, sb.grads))
        if stage >= 3 and opt_tier == "nvme":
            # stage3.py partition_grads: at the boundary the fp32 gradients of each swappable
            # sub-group are swapped out beside its optimizer states
            # (swap_tensor/partitioned_optimizer_swapper.py swap_out_gradients)
            add("fp32 gradient partition (swapped with the optimizer)", "grads", opt_tier,
                4 * psi / g_div, 4 / g_div,
                note="ZeRO-Infinity swaps fp32 gradients to NVMe with the optimizer states",
                state=("grads", "fp32", 4))
        else:
            # stage_1_and_2.py / stage3.py: fp32 grads of the host optimizer's partition,
            # in host memory (a CXL node's, when the ranks are bound to it)
            add("fp32 gradient partition (host)", "grads", grad_tier, 4 * psi / g_div,
                4 / g_div, note="DeepSpeed copies reduced gradients to host memory as fp32",
                state=("grads", "fp32", 4))
        if stage >= 3:
            # stage3.py: grad_partitions_flat_buffer, the 16-bit partition the reduced
            # gradients land in, lives on the host with the optimizer (18 B/param in all)
            add(f"{sb.grads_dtype} gradient partition buffer (host)", "grads", grad_tier,
                sb.grads * psi / g_div, sb.grads / g_div,
                note="ZeRO-3 grad_partitions_flat_buffer, offloaded with the optimizer",
                state=("grads", sb.grads_dtype, sb.grads))
    else:
        gdiv = 1 if megatron else g_div
        add(f"{sb.grads_dtype} gradients" + (" (shard)" if gdiv > 1 else ""), "grads", grad_tier,
            sb.grads * psi / gdiv, sb.grads / gdiv,
            note=shard_note if gdiv > 1 else "full gradients on every rank",
            state=("grads", sb.grads_dtype, sb.grads))

    # ---- optimizer: master weights and moments
    if sb.master_weights and not fsdp_master and not peft_fp32:
        add(f"{mdt} master weights" + (" (shard)" if o_div > 1 else ""), "optimizer", opt_tier,
            sb.master_weights * psi / o_div, sb.master_weights / o_div,
            note=shard_note if o_div > 1 else "", state=("master_weights", mdt, sb.master_weights))
    paged = tr.optimizer in PAGED_OPTIMIZERS and opt_tier == "hbm"
    if sb.optimizer_states and paged:
        _paged_states(add, sc, pc, lay, sb, psi, o_div)
    elif sb.optimizer_states:
        add(f"{tr.optimizer} optimizer states ({sb.optimizer_dtype})" + (" (shard)" if o_div > 1 else ""),
            "optimizer", opt_tier, sb.optimizer_states * psi / o_div,
            sb.optimizer_states / o_div, note=shard_note if o_div > 1 else "",
            state=("optimizer_states", sb.optimizer_dtype, sb.optimizer_states))

    # ---- activations (what depends on the micro-batches in flight is recorded in
    # ``spans``: :func:`in_flight_variant` rebuilds only those parts for another rank)
    act = _stage_activations(sc.model, tr, lay.grad_accumulation_steps, realistic)
    first = len(parts)
    layers_held = _stored_activations(add, sc, lay, plan, act)
    held_span = (first, len(parts))
    if tr.preference is not None:
        _reference_model(add, sc, pc, lay, par_tier)
    if realistic:
        _realistic_activations(add, sc, pc, lay, sb, act, pipeline_stage, plan)
        if tr.fp8 is not None:
            _fp8_parts(add, sc, pc, lay, plan.layers)
    first = len(parts)
    _expert_tokens(add, sc, lay, layers_held, plan)
    if spans is not None:
        spans.extend((held_span, (first, len(parts))))

    # ---- working buffers (realistic only)
    if realistic:
        _buffers(add, sc, pc, lay, sb, psi, pipeline_stage)
        _host_staging(add, sc, pc, lay, sb)
        _model_load(add, sc, pc, lay, sb)
    return parts


def _adder(parts: list, gpn: int, counted: list | None = None, adapters: tuple | None = None):
    """``add(name, category, tier, per_rank_bytes, bpp=None, phase, note, state)``: appends
    one part to ``parts`` (nothing for bytes <= 0; a node tier's part holds the ``gpn``
    local ranks' shares) and, with ``counted``, the model state's ``state`` row
    (:func:`counted_bytes_per_param`); ``adapters`` ``(psi, base_psi)``: LoRA's adapter
    and base counts, which turn an adapter state's bytes per parameter into the model's."""
    def add(name, category, tier, per_rank_bytes, bpp=None, phase="persistent", note="",
            state=None):
        if per_rank_bytes <= 0:
            return
        if state is not None and counted is not None:
            if adapters is not None and state[0] != "params":     # per parameter of the model
                state = (state[0], state[1], state[2] * adapters[0] / adapters[1])
            counted.append((*state, tier))
        # node tiers hold every local rank's share; the dict is part()'s, made inline
        b = per_rank_bytes if tier == "hbm" else per_rank_bytes * gpn
        if type(b) is float and not b.is_integer():      # whole bytes, as part() rounds them
            b = float(round(b))
        p = {"name": name, "category": category, "tier": tier, "bytes": b, "phase": phase,
             "note": note}
        if bpp is not None:
            p["bytes_per_param"] = bpp
        parts.append(p)
    return add


def _peft_fp32_residual(sc: Scenario) -> bool:
    """Whether the residual stream (each decoder layer's input) is fp32: a quantised QLoRA
    base under torch AMP (DDP / FSDP, realistic convention) with PEFT's fp32 adapters,
    i.e. where ``prepare_model_for_kbit_training`` left the embeddings, norms and head in
    fp32 (:func:`_quantised_base`). The fp32 embedding output is the first layer's input;
    bitsandbytes ``Linear4bit.forward`` / ``Linear8bitLt`` return ``out.to(inp_dtype)``
    and ``residual + branch`` promotes to fp32, so every block input is fp32 (measured with
    a CPU stand-in: ``tests/data/qlora_residual_dtype.json``,
    ``scripts/measure_qlora_residual_dtype.py``). qlora.py (``adapter_dtype`` bf16/fp16)
    casts ``embed_tokens`` back to bf16: a 16-bit residual."""
    tr, st, lora = sc.training, sc.strategy, sc.training.lora
    return (lora is not None and lora.quantised and lora.adapter_dtype is None
            and sc.convention == "realistic" and (st.kind == "ddp" or st.is_fsdp)
            and tr.precision in ("bf16", "fp16"))


def _stored_activations(add, sc: Scenario, lay: Layout, plan: StagePlan,
                        act: StageActivations) -> float:
    """The stored activations of ``plan``'s rank (and LoRA's adapter activations); returns
    the layer-equivalents held (``plan.activation_layers``, or on the first rank of an even
    1F1B split Korthikanti's Eq. 5-6 count)."""
    tr, st, lora = sc.training, sc.strategy, sc.training.lora
    if plan.index == 0 and tr.pipeline_schedule == "1f1b" and plan.layers * lay.pipeline_parallel == (
            sc.model.num_layers or 0):
        layers_held, layers_bytes = act.layers_held, act.layers_bytes     # Korthikanti Eq. 5-6
    else:
        layers_held = plan.activation_layers
        act = plan_activations(sc.model, tr, lay, plan, act)
        layers_bytes = act.per_layer_bytes * layers_held
    note = f"{act.per_layer_bytes / 1e6:.1f} MB per layer ({act.source})" + _layout_note(sc.model, tr, plan)
    n_ckpt = checkpointed_layers(tr, sc.model.num_layers / tr.pipeline_parallel)
    partial = tr.recompute == "full" and n_ckpt < sc.model.num_layers / tr.pipeline_parallel
    if partial:
        note += (f"; mean of {n_ckpt:g} checkpointed layers (input only) and "
                 f"{sc.model.num_layers / tr.pipeline_parallel - n_ckpt:g} whole layers per stage")
    if st.offload_activations == "cpu" and layers_held > 2:
        # Activation checkpoints live in DDR; HBM keeps the layer being computed and the
        # one in flight to or from the host (ZeRO-R's Pa+cpu, ZeRO Sec. 6.1).
        on_hbm = layers_bytes * 2 / layers_held
        add("activations (2 layers in HBM, the rest offloaded)", "activations", "hbm", on_hbm,
            phase="fwd_bwd", note=note)
        add(f"offloaded activations ({layers_held - 2:g} layers)", "activations", "ddr",
            layers_bytes - on_hbm, note="pinned host copies of activation checkpoints")
    else:
        how = "no recompute" if tr.recompute == "none" else f"{tr.recompute} recompute"
        add(f"activations ({layers_held:g} layers, {how}"
            + (f" of {n_ckpt:g} per stage)" if partial else ")"),
            "activations", "hbm", layers_bytes, phase="fwd_bwd", note=note)
        if tr.recompute == "full" and (lora is not None and _peft_fp32_residual(sc)
                                       or tr.dtypes is not None and _amp_fp32_weights(sc)):
            ckpt = n_ckpt / (sc.model.num_layers / tr.pipeline_parallel) * layers_held
            add("fp32 residual stream (checkpointed layer inputs: the other 2 B)", "activations",
                "hbm", 2 * tr.local_seq_len * tr.sequences_per_micro_batch * sc.model.hidden_size
                * ckpt, phase="fwd_bwd",
                note="PEFT's fp32 embeddings make the residual fp32 (bitsandbytes returns "
                     "out.to(inp_dtype)); tests/data/qlora_residual_dtype.json")
    if lora is not None and _peft_fp32_residual(sc):
        _fp32_residual_mlp(add, sc, layers_held, n_ckpt, partial)
    if tr.dtypes is not None and _amp_fp32_weights(sc):
        _amp_layer_extra(add, sc, layers_held, n_ckpt, partial)
    if lora is not None:
        ab = DTYPE_BYTES["fp32"] if tr.precision == "fp32" else 2
        xs = _shape(sc.model, tr, "none")
        per_layer = adapter_activation_bytes(sc.model, lora, tr.local_seq_len * tr.sequences_per_micro_batch,
                                             ab, tr.tensor_parallel,
                                             o_input_kept=xs.flash_attention and not xs.sdpa_output_copy)
        kept = ("lora_A's input (the tensor the frozen base reads; AutoModel casts nothing) and "
                "lora_B's (b x s x r)" if lora.implementation == "automodel" else
                "each adapter's 16-bit copy of its input (PEFT casts it to the fp32 adapters' "
                "dtype, autocast back) and lora_A output (b x s x r)")
        if lora.dropout:
            kept += f", dropout mask ({lora.dropout_at})"
        if tr.recompute == "full" and partial:   # the plain layers keep theirs
            plain = layers_held * (1 - n_ckpt / (sc.model.num_layers / tr.pipeline_parallel))
            add(f"LoRA adapter activations ({plain:g} plain layers, +1 re-run)", "activations",
                "hbm", per_layer * (plain + 1), phase="fwd_bwd",
                note="lora_A outputs of the layers not checkpointed, and one rebuilt")
        elif tr.recompute == "full":       # only block inputs stored: one block rebuilt at a time
            add("LoRA adapter activations (1 layer re-run in backward)", "activations", "hbm",
                per_layer, phase="backward",
                note="each adapter's input copy, lora_A output (and dropout mask)")
        else:
            add(f"LoRA adapter activations ({layers_held:g} layers)", "activations", "hbm",
                per_layer * layers_held, phase="fwd_bwd",
                note=f"{per_layer / 1e6:.2f} MB per layer: {kept}")
    return layers_held


def _per_layer_part(add, sc: Scenario, what: str, extra: float, note: str, layers_held: float,
                    n_ckpt: float, partial: bool) -> None:
    """``extra`` bytes a layer keeps as a part: every stored layer's without full
    recomputation; with it, the one layer re-run in backward, and the plain layers' too where
    only some are checkpointed."""
    if extra <= 0:
        return
    tr = sc.training
    if tr.recompute == "full" and partial:
        plain = layers_held * (1 - n_ckpt / (sc.model.num_layers / tr.pipeline_parallel))
        add(f"{what} ({plain:g} plain layers, +1 re-run)", "activations", "hbm",
            extra * (plain + 1), phase="fwd_bwd", note=note)
    elif tr.recompute == "full":
        add(f"{what} (1 layer re-run in backward)", "activations", "hbm", extra,
            phase="backward", note=note)
    else:
        add(f"{what} ({layers_held:g} layers)", "activations", "hbm", extra * layers_held,
            phase="fwd_bwd", note=note)


def _fp32_residual_mlp(add, sc: Scenario, layers_held: float, n_ckpt: float, partial: bool) -> None:
    """The fp32 MLP tensors of a QLoRA base under PEFT (:func:`_peft_fp32_residual`;
    :func:`simulation.activations.fp32_residual_mlp_bytes`, measured with bitsandbytes)."""
    _per_layer_part(add, sc, "fp32 MLP tensors of the fp32 residual (gate, SiLU input and output, up)",
                    fp32_residual_mlp_bytes(_shape(sc.model, sc.training, "none")),
                    "bitsandbytes returns out.to(inp_dtype): the frozen MLP's element-wise tensors are "
                    "fp32, 2 B more each; tests/data/saved_tensors_qlora_hf.json",
                    layers_held, n_ckpt, partial)


def _amp_layer_extra(add, sc: Scenario, layers_held: float, n_ckpt: float, partial: bool) -> None:
    """What a transformers block saves in addition under torch AMP on fp32 weights
    (:func:`_amp_fp32_weights`; :func:`simulation.activations.amp_fp32_weight_bytes`)."""
    _per_layer_part(add, sc, "AMP on fp32 weights: fp32 norm outputs, a 16-bit input cast per projection",
                    amp_fp32_weight_bytes(_shape(sc.model, sc.training, "none")),
                    "RMSNorm's weight x x is fp32, and autocast casts the fp32 norm output once for "
                    "each of q, k, v and gate, up; tests/data/saved_tensors_amp_hf.json",
                    layers_held, n_ckpt, partial)


def in_flight_variant(parts: list[dict], spans: list, sc: Scenario, lay: Layout,
                      plan: StagePlan) -> tuple[list[dict], bool]:
    """``(parts, hbm_only)``: :func:`build_parts` of ``plan``'s rank made from ``parts``,
    another rank's whose plan differs from ``plan`` only in the micro-batches in flight
    (the same name, layers, embedding, head, and both or neither rank 0). The parts in
    ``spans`` (what that :func:`build_parts` call recorded) are made again for ``plan`` by
    the same functions; the others are the same dicts, in the same order, so the list
    equals ``build_parts(..., plan)`` (``tests/engine/test_stage_parts_fast.py``).
    ``hbm_only``: every part made again, the old ones and the new, is on HBM, so both
    ranks' node tiers hold the same parts (the same :func:`tier_summaries` per node)."""
    (a0, a1), (e0, e1) = spans
    tr = sc.training
    act = _stage_activations(sc.model, tr, lay.grad_accumulation_steps, sc.convention == "realistic")
    out = parts[:a0]
    add = _adder(out, sc.cluster.gpus_per_node)
    held = _stored_activations(add, sc, lay, plan, act)
    b1 = len(out)
    out += parts[a1:e0]
    f0 = len(out)
    _expert_tokens(add, sc, lay, held, plan)
    f1 = len(out)
    out += parts[e1:]
    hbm_only = all(p["tier"] == "hbm" for p in
                   (*parts[a0:a1], *parts[e0:e1], *out[a0:b1], *out[f0:f1]))
    return out, hbm_only


def fp8_linear_fraction(m: ModelSpec, pc: ParamCount) -> float:
    """Share of the model's parameters in FP8 GEMM weights (every block's projections and
    MLP: :func:`simulation.fp8.linear_params_per_layer`); 0 without a parameter count."""
    if not pc.total:
        return 0.0
    return min(1.0, fp8_model.linear_params_per_layer(m, pc) * m.num_layers / pc.total)


def _block_gather_bytes(sc: Scenario, pc: ParamCount, sb: StateBytes) -> float:
    """Bytes per parameter of a gathered transformer block: the parameter dtype's, or with
    FP8 weights gathered (``training.fp8.param``: TE's FP8 primary weights, torchao's FSDP2
    float8 all-gather) 1 byte for the block's FP8 GEMM weights."""
    fp8 = sc.training.fp8
    if fp8 is None or not fp8.param or not pc.per_layer:
        return sb.params
    lin = fp8_model.linear_params_per_layer(sc.model, pc) / pc.per_layer
    return lin + (1 - lin) * sb.params


def _fp8_parts(add, sc: Scenario, pc: ParamCount, lay: Layout, layers: float) -> None:
    """What Transformer Engine's FP8 keeps beside the model states (:mod:`simulation.fp8`):

    * the FP8 weight copies, row-wise and column-wise (transposed) data of every FP8 GEMM
      weight of the rank (2 B per weight, block scales on top; 1 B with FP8 primary
      weights), cached for the step (``_fp8_workspaces``, refreshed on the first
      micro-batch). Under ZeRO-3 / FSDP they are not cached: each gathered unit's copy
      lives while the unit does, the layer computing and the one prefetched (2 units).
    * the scaling state: per GEMM 5 quantizers, each an fp32 scale and (delayed scaling)
      an ``amax_history_len`` row of fp32 amaxes (``quantization.py``
      ``DelayedScalingRecipeState``).

    torchao's casts are transient (made and consumed within one GEMM's forward or
    backward); nothing is kept.
    """
    tr, m = sc.training, sc.model
    fp8 = tr.fp8
    if fp8_model.uses_torchao(tr):
        return
    # the rank's FP8 GEMM weights of a block (its experts over ETP x EP), over the
    # ``layers`` of its pipeline stage
    per_layer = experts.layer_params_per_rank(m, fp8_model.linear_params_per_layer(m, pc), lay, mean=True)
    bpp = fp8_model.weight_copy_bytes_per_param(fp8, sc.cluster.accelerator)
    one = fp8_model.te_layouts(fp8.recipe, sc.cluster.accelerator) == 1
    what = ("row-wise copy" if one else "transposed copy" if fp8.param
            else "row-wise and transposed copies")
    # bpp 0: FP8 primary weights on a part whose FP8 GEMMs take any layout make no copy
    if bpp and sc.strategy.zero_stage >= 3:
        units = min(2.0, layers)
        add(f"FP8 weight {what} of the gathered units ({units:g} layers)", "buffers", "hbm",
            bpp * per_layer * units, phase="fwd_bwd",
            note=f"{bpp:g} B per gathered weight, freed with its unit (TE linear.py: no "
                 "workspace cache under FSDP)")
    elif bpp:
        add(f"FP8 weight {what} ({fp8.recipe})", "buffers", "hbm", bpp * per_layer * layers,
            note=f"{bpp:g} B per FP8 GEMM weight, cached for the step (TE linear.py "
                 "_fp8_workspaces, is_first_microbatch)")
    state = fp8_model.scaling_state_bytes_per_gemm(fp8) * fp8_model.gemms_per_layer(m) * layers
    hist = f"amax history {fp8.history_len} x fp32, " if fp8.history_len else ""
    add("FP8 scaling state (amax history and scales)", "buffers", "hbm", state,
        note=f"{hist}5 quantizers per GEMM (TE quantization.py DelayedScalingRecipeState)")
def _expert_tokens(add, sc: Scenario, lay: Layout, layers_held: float,
                   plan: StagePlan | None = None) -> None:
    """The busiest expert-parallel rank's routed tokens (simulation/experts.py).

    * Imbalance or capacity: the stored per-layer activations count each rank's experts
      as taking the mean ``b x s x top_k`` tokens; the busiest takes
      :func:`simulation.experts.token_factor` times that, so the routed tokens' share of a
      layer (the expert inputs, MLPs and outputs: the layer's bytes less the same layer
      with no token routed, ``top_k`` 0) grows by ``factor - 1`` over the layers held (a
      capacity factor under 1 is not subtracted: an upper bound).
    * The all-to-all's buffers: the dispatch's permuted send buffer and the combine's
      receive buffer of the layer being run, ``dispatch bytes`` each
      (Megatron-Core ``MoEAlltoAllTokenDispatcher``: the permuted tokens and the
      all-to-all output are separate tensors), live through forward and backward.
    """
    m, tr = sc.model, sc.training
    if not experts.moe_layers(m) or (lay.expert_parallel <= 1 and tr.moe_capacity_factor is None):
        return
    f = experts.token_factor(tr)
    if f > 1.0 and tr.recompute != "full":
        shape = _shape(m, tr, tr.recompute)
        routed = layer_bytes(shape) - layer_bytes(shape.replaced(top_k=0))
        moe_share = experts.moe_layers(m) / m.num_layers
        if plan is not None and plan.activation_layers and m.first_dense_layers:
            moe_share = 1 - plan.dense_activation_layers / plan.activation_layers
        add(IMBALANCE_PART, "activations", "hbm", (f - 1) * routed * layers_held * moe_share,
            phase="fwd_bwd",
            note=f"x{f:g} the mean routed tokens (moe_routing_imbalance, moe_capacity_factor)")
    if lay.expert_parallel > 1:
        add(experts.A2A_PART, "buffers", "hbm", 2 * experts.dispatch_bytes(m, tr), phase="fwd_bwd",
            note="permuted tokens sent and tokens received back, b x s / TP x top_k x h x "
                 f"{experts.token_factor(tr):g}")


IMBALANCE_PART = experts.IMBALANCE_PART


def reference_forward_working_bytes(m: ModelSpec, tr: TrainingSpec) -> float:
    """Bytes one layer's forward holds at its peak under ``torch.no_grad`` (the reference
    model's DPO forward), per GPU: nothing is saved for backward, each tensor is freed
    when its last user has run. For ``n`` sequences of ``s`` tokens (``tok = n s``), width
    ``h``, FFN width ``f``, ``a`` query and ``kv`` key/value heads of width ``d``, TP
    degree ``t``, ``A`` bytes per activation element:

    * MLP (transformers ``LlamaMLP.forward``: ``down_proj(act_fn(gate_proj(x)) *
      up_proj(x))``): the residual input, x, act(gate(x)), up(x) and their product live
      at once: ``A tok (2h + 3f/t)``; without a gate, fc1's and the activation's outputs:
      ``A tok (2h + 2f/t)``;
    * attention: the residual input, x and q, k, v: ``A tok (2h + (a + 2kv) d / t)``; in
      eager attention also the scores and their fp32 softmax, ``n (a/t) s^2 (A + 4)``.

    The larger of the two (shapes as :func:`simulation.compute` uses them)."""
    A = DTYPE_BYTES["fp32"] if tr.precision == "fp32" else 2
    tok = tr.sequences_per_micro_batch * tr.seq_len
    t, h = tr.tensor_parallel, m.hidden_size
    f = m.ffn_hidden_size or 4 * h
    a = m.num_attention_heads or max(1, h // 128)
    kv = m.num_kv_heads or a
    d = m.head_dim or h / a
    mlp = A * tok * (2 * h + (3 if m.gated_mlp else 2) * f / t)
    attn = A * tok * (2 * h + (a + 2 * kv) * d / t)
    if not tr.flash_attention:
        attn += tr.sequences_per_micro_batch * (a / t) * tr.seq_len ** 2 * (A + 4)
    return max(mlp, attn)


def _reference_model(add, sc: Scenario, pc: ParamCount, lay: Layout, par_tier: str) -> None:
    """The frozen reference model of preference tuning (``training.preference``), as TRL's
    ``DPOTrainer`` holds it (TRL v1.9.0).

    * ``separate``: its weights in the compute dtype (bf16/fp16: 2 B, fp32: 4 B per
      parameter), per model-parallel rank; under ZeRO-3 / FSDP sharded over the shard
      group like the policy and placed where the policy's parameters are (trl/models/
      utils.py ``prepare_deepspeed``: the policy's DeepSpeed config, stage 3 kept, any
      other stage set to 0; ``prepare_fsdp``: the policy's FSDP plugin), whole on every
      rank otherwise; under ZeRO-3 / FSDP one layer gathered at a time during its forward.
      ``adapters_off`` (the policy's base, LoRA switched off) and ``precomputed``
      (``precompute_ref_log_probs``) hold no weights.
    * its forward (``separate``, ``adapters_off``) runs under ``torch.no_grad`` after the
      policy's forward, while the policy's activations and logits are held
      (``DPOTrainer._compute_loss``): one layer's working set
      (:func:`reference_forward_working_bytes`) and its logits, ``tok x V`` in the compute
      dtype (transformers' ``lm_head`` output, divided by t), with one sequence's
      ``log_softmax`` row of ``s x V`` (``selective_log_softmax`` loops over rows in
      16-bit). Counted in the loss phase beside the policy's loss buffers: an upper bound,
      since the policy's backward allocates its loss gradients after the reference ran.
    """
    tr, st, m = sc.training, sc.strategy, sc.model
    ref = tr.preference.reference
    if ref == "precomputed":
        return
    A = DTYPE_BYTES["fp32"] if tr.precision == "fp32" else 2
    t = lay.tensor_parallel
    sharded = st.zero_stage >= 3
    d = lay.shard_degree if sharded else 1
    if ref == "separate":
        add(f"reference model weights ({'fp32' if A == 4 else '16-bit'}, "
            + (f"sharded over {d} ranks)" if d > 1 else "whole copy)"), "params",
            par_tier if sharded else "hbm", A * pc.total / t / d, A / d,
            note="DPO reference: a frozen copy, forward only (TRL prepare_deepspeed / "
                 "prepare_fsdp shard it like the policy under ZeRO-3 / FSDP, stage 0 otherwise)")
        if sharded and d > 1:
            add("reference model gathered layer", "buffers", "hbm", A * pc.per_layer / t,
                phase="loss", note="one layer all-gathered for the reference forward")
    tok = tr.sequences_per_micro_batch * tr.seq_len
    add(f"reference forward: one layer's working set ({tr.sequences_per_micro_batch} sequences)",
        "activations", "hbm", reference_forward_working_bytes(m, tr), phase="loss",
        note="torch.no_grad: nothing kept for backward")
    if m.vocab_size:
        add("reference forward: logits and one row's log-softmax", "activations", "hbm",
            A * (tok + tr.seq_len) * m.vocab_size / t, phase="loss",
            note=f"{tok:,} tokens x vocab in the compute dtype (TRL selective_log_softmax)")


def _has_embedding(stage: str) -> bool:
    """Whether a rank of this stage name holds the input embedding: the first stage, and
    under DualPipe the two end ranks (``ends``: stages 0 and p-1 on each)."""
    return stage in ("only", "first", "ends")


def _has_head(sc: Scenario, stage: str) -> bool:
    """Whether it holds the final norm, the output head and the loss (the last stage, or a
    DualPipe end rank)."""
    return stage in ("only", "last", "ends")


def stage_plans_for(sc: Scenario, lay: Layout) -> tuple[StagePlan, ...]:
    """Every pipeline rank's :class:`simulation.pipeline.StagePlan` for this scenario."""
    return _plans(sc.model, sc.training, lay)


_plans = ByIdentity(lambda m, tr, lay: stage_plans(
    split_of(m, tr), lay.grad_accumulation_steps, tr.interleave_stages or 1, tr.pipeline_schedule,
    (m.first_dense_layers or 0) if m.num_experts > 1 else 0))


def _named_plan(sc: Scenario, lay: Layout, name: str) -> StagePlan:
    plans = stage_plans_for(sc, lay)
    return plans[-1] if name == "last" else plans[0]


def stage_layers_held(sc: Scenario, lay: Layout, stage) -> int:
    """Transformer layers whose parameters a rank of ``stage`` (a name or a plan) holds."""
    plan = stage if isinstance(stage, StagePlan) else _named_plan(sc, lay, stage)
    return plan.layers


def stage_param_share(sc: Scenario, pc: ParamCount, lay: Layout, plan: StagePlan) -> float:
    """Share of the model's parameters a pipeline rank holds (before tensor parallelism).

    Megatron-LM (core, 2025-08) ``megatron/training/training.py`` ``get_model``:
    ``pre_process = is_pp_first_stage``, ``post_process = is_pp_last_stage``; in
    ``megatron/core/models/gpt/gpt_model.py`` the embedding is built with
    ``pre_process``, the final norm and output layer with ``post_process``, each stage
    its own layers (``get_num_layers_to_build``): ``(layers x per_layer + embedding
    [first] + final norm + head [last]) / total``. A tied head is a second copy of the
    embedding on the last stage (the output layer allocates its weight unless
    ``pre_process and share_embeddings_and_output_weights``:
    ``skip_weight_param_allocation``): counted on both. Without a pipeline, 1; without an
    architecture (only ``num_params``) or with an explicit ``num_params``, the layers'
    share."""
    m = sc.model
    if lay.pipeline_parallel == 1:
        return 1.0
    L = m.num_layers or 0
    derived = L * pc.per_layer
    rest = pc.total - derived - pc.embedding        # final norm + untied head
    if not m.has_architecture or m.num_params is not None or rest < 0 or not pc.total:
        return plan.layers / L if L else 1.0 / lay.pipeline_parallel
    own = plan.layers * pc.per_layer
    if plan.embedding:
        own += pc.embedding
    if plan.head:
        own += rest + (pc.embedding if pc.output_head == 0 and not plan.embedding else 0)
    return own / pc.total


PAGE_MIN_ELEMENTS = 1e5       # bitsandbytes get_state_buffer: smaller tensors are not paged


def adapter_regime(sc: Scenario, sb: StateBytes) -> str | None:
    """How the LoRA adapters are kept (realistic convention): ``"peft_fp32"`` under torch
    AMP (DDP, FSDP) with a 16-bit base and fp32 masters (PEFT's ``autocast_adapter_dtype``:
    fp32 adapters, their own master copy), ``"16bit"`` with ``adapter_dtype`` bf16/fp16
    under AMP (qlora.py: no master copy, 16-bit gradients) or with NeMo AutoModel's
    ``LinearLoRA`` (adapters in the 16-bit base's dtype), else None (the scenario's
    precision and optimizer: DeepSpeed casts the module to 16-bit and keeps fp32 masters)."""
    lora, st = sc.training.lora, sc.strategy
    if lora is None or sc.convention != "realistic" or not (st.kind == "ddp" or st.is_fsdp):
        return None
    if lora.adapter_dtype in ("bf16", "fp16"):
        return "16bit"
    if (lora.implementation == "automodel" and lora.adapter_dtype is None
            and sb.params_dtype in ("bf16", "fp16")):
        return "16bit"          # LinearLoRA: adapters in the base weight's dtype (lora_dtype None)
    if sb.params_dtype in ("bf16", "fp16") and sb.master_weights == 4:
        return "peft_fp32"
    return None


def adapter_checkpoint_bytes(sc: Scenario, sb: StateBytes) -> dict:
    """Bytes per adapter parameter of a LoRA checkpoint (PEFT ``save_pretrained`` writes
    the adapters in their dtype; the trainer the optimizer's states), in
    :meth:`StateBytes.to_dict`'s keys: fp32 adapters and no master (``peft_fp32``),
    16-bit adapters and no master (``16bit``), else the scenario's states."""
    regime = adapter_regime(sc, sb)
    d = dict(sb.to_dict())
    if regime == "peft_fp32":
        d.update(params=4, master_weights=0)
    elif regime == "16bit":
        d.update(params=2, master_weights=0)
    return d


def unit_param_bytes(sc: Scenario, pc: ParamCount, sb: StateBytes) -> float:
    """Bytes a gathered transformer block holds per parameter under ZeRO-3 / FSDP: the
    parameters' dtype, or with a quantised base (QLoRA) its packed weights and constants
    plus the block's unquantised norms (FSDP-QLoRA flattens the packed ``Params4bit``
    storage, ``bnb_4bit_quant_storage`` a 16-bit dtype, and gathers those bytes)."""
    lora = sc.training.lora
    if lora is None or not lora.quantised or not pc.per_layer:
        return sb.params
    q = quantised_elements(sc.model)
    wb = base_weight_bytes(sc.model, lora)
    rest = max(pc.per_layer - q, 0)
    return (q * (wb["weights"] + wb["constants"]) + rest * sb.params) / pc.per_layer


def _paged_states(add, sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes, psi: float,
                  o_div: float) -> None:
    """bitsandbytes' paged optimizer states (``paged_adamw``, ``paged_adamw_8bit``).

    ``bitsandbytes/optim/optimizer.py`` (0.50.2.dev0): ``get_state_buffer`` puts a
    tensor's states in CUDA unified memory (``F.get_paged``) unless it has fewer than 1e5
    elements (then an ordinary GPU buffer); ``step`` walks the parameters one at a time,
    ``prefetch_state(p)`` then the update, so under memory pressure the driver keeps the
    pages in host RAM and brings one tensor's states to the GPU at a time. Counted: the
    unpaged states resident on the GPU, the largest paged tensor's states on the GPU in
    the step, and every paged state in host RAM (its backing pages). The paging traffic
    (PCIe) only happens when the GPU runs short and is not timed here."""
    m, lora = sc.model, sc.training.lora
    t = lay.tensor_parallel
    if lora is not None:
        sizes = adapter_tensors(m, lora, t)
    else:
        sizes = [(pc.largest_module / t, psi * t / max(pc.largest_module, 1))]
    paged_el = sum(e * c for e, c in sizes if e >= PAGE_MIN_ELEMENTS)
    paged_el = min(paged_el * psi / max(sum(e * c for e, c in sizes), 1), psi)
    largest = max((e for e, _ in sizes if e >= PAGE_MIN_ELEMENTS), default=0.0)
    b = sb.optimizer_states
    name = f"{sc.training.optimizer} optimizer states ({sb.optimizer_dtype})"
    if psi - paged_el > 0:
        add(f"{name}, tensors under 1e5 elements (not paged)", "optimizer", "hbm",
            b * (psi - paged_el) / o_div, note="ordinary GPU buffers",
            state=("optimizer_states", sb.optimizer_dtype, b * (psi - paged_el) / psi))
    if paged_el > 0:
        add(f"{name}, paged in one tensor at a time for the step", "optimizer", "hbm",
            b * largest / o_div, phase="step",
            note="CUDA unified memory (F.get_paged): prefetch_state(p), then p's update")
        add(f"{name}, host pages (paged out under GPU memory pressure)", "optimizer", "ddr",
            b * paged_el / o_div, note="where the paged states live while the GPU is short",
            state=("optimizer_states", sb.optimizer_dtype, b * paged_el / psi))


def _quantised_base(add, sc: Scenario, lay: Layout, sb: StateBytes, base_psi: float,
                    p_div: float, tier: str, peft_fp32: bool) -> None:
    """QLoRA's frozen base (``training.lora.base_dtype`` nf4 / fp4 / int8), per rank.

    The blocks' matrices (:func:`simulation.lora.base_matrices`) in 4 or 8 bits with
    their quantisation constants (:func:`simulation.lora.base_weight_bytes`); every other
    base parameter (embeddings, output head, norms, biases) unquantised, in fp32 where
    PEFT's ``prepare_model_for_kbit_training`` ran (``peft/utils/other.py``: "cast all non
    INT8 parameters to fp32", every fp16/bf16 parameter that is not ``Params4bit``), the
    usual QLoRA recipe; under DeepSpeed (which casts the module to 16-bit) in the
    training dtype. bitsandbytes dequantises one matrix at a time to the compute dtype
    for the matmul, forward and backward (``autograd/_functions.py`` ``MatMul4Bit``:
    ``F.dequantize_4bit(B, ctx.state).to(grad_output.dtype)`` in backward;
    ``MatMul8bitLt`` likewise ``CB * SCB / 127``): a transient 16-bit copy of the largest
    matrix. Under ZeRO-3 / FSDP the packed storage is sharded like any parameter (FSDP
    needs ``bnb_4bit_quant_storage`` set to the 16-bit dtype, bitsandbytes >= 0.43)."""
    m, lo = sc.model, sc.training.lora
    mp = lay.tensor_parallel * lay.pipeline_parallel
    q = m.num_layers * quantised_elements(m) / mp
    rest = max(base_psi - q, 0.0)
    wb = base_weight_bytes(m, lo)
    sh = " (shard)" if p_div > 1 else ""
    add(f"{lo.base_dtype} frozen base matrices{sh}", "params", tier, wb["weights"] * q / p_div,
        note=f"{q:,.0f} weights per rank, {wb['weights'] * 8:g} bits each (bitsandbytes "
             + ("Linear8bitLt)" if lo.base_dtype == "int8" else "Linear4bit)"),
        state=("params", lo.base_dtype, wb["weights"] * q / base_psi))
    if lo.base_dtype == "int8":
        cname, cnote = "int8 row scales (fp32 SCB)", "one fp32 scale per output row"
    elif lo.double_quant:
        cname = f"quantisation constants (double-quantised, block {lo.quant_block_size})"
        cnote = (f"8-bit absmax per {lo.quant_block_size} weights + fp32 per 256 absmax: "
                 f"{wb['constants'] * 8:.3f} bits a weight (QLoRA Sec. 3)")
    else:
        cname = f"quantisation constants (fp32 absmax per {lo.quant_block_size})"
        cnote = f"{wb['constants'] * 8:.3f} bits a weight"
    add(cname + sh, "params", tier, wb["constants"] * q / p_div, note=cnote,
        state=("params", "fp32", wb["constants"] * q / base_psi))
    rdt = "fp32" if peft_fp32 else sb.params_dtype
    add(f"{rdt} unquantised base parameters (embeddings, head, norms){sh}", "params", tier,
        DTYPE_BYTES[rdt] * rest / p_div,
        note=("PEFT prepare_model_for_kbit_training upcasts them to fp32" if peft_fp32
              else "left in the training dtype"),
        state=("params", rdt, DTYPE_BYTES[rdt] * rest / base_psi))
    add("16-bit dequantised weight (one Linear at a time)", "buffers", "hbm",
        2 * largest_base_matrix(m) / lay.tensor_parallel, phase="fwd_bwd",
        note="bitsandbytes dequantises each matrix for its matmul, forward and backward")


def trained_params(sc: Scenario, pc: ParamCount) -> float:
    """Parameters with gradients, optimizer states and a place in the checkpoint: all of
    them, or under LoRA the adapters (:func:`simulation.lora.adapter_params`)."""
    lora = sc.training.lora
    return pc.total if lora is None else adapter_params(sc.model, lora)["total"]


def trainable_fraction(sc: Scenario, pc: ParamCount) -> float:
    """Share of the model's parameters that train: 1, or under LoRA the adapters' count
    over the base's (:func:`simulation.lora.adapter_params`; Llama-2-7B r=8 q, v:
    4,194,304 / 6,738,415,616)."""
    lora = sc.training.lora
    if lora is None or not pc.total:
        return 1.0
    return adapter_params(sc.model, lora)["total"] / pc.total


def counted_bytes_per_param(counted: list) -> dict:
    """The bytes per parameter of each model state as :func:`build_parts` counts them,
    before sharding (summed over tiers), in :meth:`StateBytes.to_dict`'s shape.

    ``counted``: ``build_parts``' ``(state, dtype, bytes_per_param, tier)`` rows. Returns
    ``{params, grads, master_weights, optimizer_states, k, total: B/param, dtypes: {state:
    "bf16" | "bf16 + fp32" | "none"}}``. Unlike :func:`state_bytes` (the dtypes alone) it
    has the realistic convention's choices: DDP/Megatron's fp32 ``main_grad`` (4, not 2),
    FSDP's fp32 flat parameters doubling as the master weights, ZeRO-Offload's fp32 host
    gradient partition, so the run page's table and the breakdown agree.
    """
    out = {"params": 0.0, "grads": 0.0, "master_weights": 0.0, "optimizer_states": 0.0}
    dtypes: dict = {"params": [], "grads": [], "master_weights": [], "optimizer_states": []}
    for state, dtype, bpp, _tier in counted:
        out[state] += bpp
        seen = dtypes[state]
        if dtype not in seen:
            seen.append(dtype)
    out["k"] = k = out["master_weights"] + out["optimizer_states"]
    out["total"] = out["params"] + out["grads"] + k
    out["dtypes"] = {k: " + ".join(v) or "none" for k, v in dtypes.items()}
    return out


def _realistic_activations(add, sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes,
                           act: StageActivations, stage: str, plan: StagePlan | None = None) -> None:
    """What the frameworks hold beyond the stored per-layer activations.

    * Recompute working set: with selective or full recomputation the backward of a layer
      first re-runs its forward, so one layer's activations as without recomputation sit
      on top of the stored checkpoints (``torch.utils.checkpoint``; Megatron
      ``tensor_parallel/random.py`` ``CheckpointFunction.backward``). The peak is in
      backward, not in forward. With layer-selective full recomputation the rebuild
      comes on top of everything stored only when the stage's last layer (the first in
      backward) is checkpointed; otherwise a plain layer's backward has freed at least
      one whole layer of this micro-batch before a checkpointed one is rebuilt, and the
      rebuild (whole minus input) fits in what it freed.
    * Loss and logits on the last stage (:mod:`simulation.loss`, ``training.loss_kernel``),
      live at the end of forward and the start of backward, plus the head's input.
    * The embedding's dropout mask on the first stage (Korthikanti Sec. 4.3).
    """
    tr, m = sc.training, sc.model
    t = tr.tensor_parallel
    sbh = tr.local_seq_len * tr.sequences_per_micro_batch * m.hidden_size       # this CP rank's tokens
    layers = m.num_layers / tr.pipeline_parallel
    partial = tr.recompute == "full" and checkpointed_layers(tr, layers) < layers
    if partial and not last_layer_checkpointed(tr, int(layers)):
        pass        # a plain layer's backward frees a whole layer before any rebuild
    elif tr.recompute != "none":
        kept = layer_bytes(_shape(m, tr, "full")) if partial else act.per_layer_bytes
        share = _dense_share(m, tr, plan)          # the rank's own blocks (plan_activations)
        whole = (_unrecomputed_layer(m, tr) if share == _dense_share(m, tr)
                 else layer_bytes(_shape(m, tr, "none", share)))
        working = whole - kept
        if working > 0:
            add(f"recompute working set (1 layer re-run in backward, {tr.recompute} recompute)",
                "activations", "hbm", working, phase="backward",
                note="a checkpointed layer's activations rebuilt for its backward")
    ring = ring_buffer_bytes(m, tr)
    if ring["peak_bytes"] > 0:
        add(f"context-parallel K/V ring buffers (1 layer, CP {tr.context_parallel})", "buffers",
            "hbm", ring["peak_bytes"], phase="backward",
            note=f"the larger of the forward's {tr.context_parallel} received K/V chunks "
                 f"({ring['forward_bytes'] / 1e6:.1f} MB) and the backward's K/V + dK/dV "
                 f"send/receive buffers and dQ ({ring['backward_bytes'] / 1e6:.1f} MB); "
                 "Transformer Engine AttnFuncWithCPAndKVP2P")
    if _has_embedding(stage) and m.hidden_dropout:
        add("embedding dropout mask", "activations", "hbm", sbh * tr.pipeline_parallel / t,
            phase="fwd_bwd", note="Korthikanti Sec. 4.3: s*b*h*p/t")
    if _has_head(sc, stage) and m.vocab_size:
        tokens = tr.local_seq_len * tr.sequences_per_micro_batch
        act = DTYPE_BYTES["fp32"] if tr.precision == "fp32" else 2
        if tr.framework == "huggingface":
            add("final norm (" + ("16-bit input, fp32 rstd: fused" if tr.fused_norm else
                                  "fp32 input copy, rsqrt, normalised value") + ")",
                "activations", "hbm",
                final_norm_bytes(_shape(m, tr, "none")) / t, phase="loss",
                note="transformers' model.norm keeps what a block's norm keeps, until the "
                     "head's backward has run (measured: saved_tensors_hf_families.json)")
        add("output-head input (final norm output)", "activations", "hbm", act * sbh / t,
            phase="fwd_bwd", note="saved for the head's weight gradient")
        softcap = m.final_logit_softcapping is not None
        add(f"logits and cross-entropy ({tr.loss_kernel})", "activations", "hbm",
            loss_bytes(tr.loss_kernel, tokens, m.vocab_size, m.hidden_size, t, act,
                       final_softcap=softcap), phase="loss",
            note=_LOSS_NOTES[tr.loss_kernel] + (
                "; + the tanh output of final_logit_softcapping (Gemma2ForCausalLM)"
                if softcap and tr.loss_kernel == "torch" else ""))
        if tr.dtypes is not None and _amp_fp32_weights(sc):
            _autocast_weight_copies(add, sc, pc)
        if tr.lora is not None and _peft_fp32_residual(sc):
            # PEFT leaves the head in fp32; autocast casts its weight to 16 bits on each call
            # (a frozen weight is not in autocast's cast cache) and the matmul keeps that copy
            # for the input gradient until the head's backward has run
            add("16-bit autocast copy of the fp32 output head", "activations", "hbm",
                2 * m.vocab_size * m.hidden_size / t, phase="loss",
                note="vocab x hidden x 2 B, from the head's forward to its backward "
                     "(measured: tests/data/qlora_step_peak_hf.json)")


def _amp_fp32_weights(sc: Scenario) -> bool:
    """Whether the forward runs under torch AMP on fp32 weights: Hugging Face's stack with
    DDP, fp32 parameters (``training.dtypes.params``) and 16-bit precision, as HF Trainer
    with ``bf16=True`` / ``fp16=True`` trains a model loaded in fp32 (FSDP's and DeepSpeed's
    mixed precision cast the weights themselves)."""
    tr = sc.training
    return (tr.dtypes is not None and tr.dtypes.params == "fp32" and tr.precision in ("bf16", "fp16")
            and tr.framework == "huggingface" and tr.lora is None and sc.strategy.kind == "ddp"
            and sc.convention == "realistic")


def _autocast_weight_copies(add, sc: Scenario, pc: ParamCount) -> None:
    """The 16-bit copies torch AMP makes of fp32 weights (:func:`_amp_fp32_weights`).

    ``F.linear`` under autocast casts its fp32 weight; autocast caches the casts of leaf
    tensors that require grad until the outermost autocast region exits
    (``aten/src/ATen/autocast_mode.cpp`` ``cached_cast``), and the matmul keeps the copy for
    the input gradient, so without recomputation every matrix's 16-bit copy (2 B x its
    weights) is live from its forward to its backward: all of them at the loss. With full
    recomputation the checkpointed blocks run under ``no_grad`` (reentrant checkpointing)
    and keep none; the head's copy lives to the head's backward and the re-run block's
    during its own. Measured: one step of an fp32 ``LlamaForCausalLM`` under bf16 autocast
    (``scripts/measure_amp_step_peak.py``, ``tests/data/amp_step_peak_hf.json``)."""
    m, tr = sc.model, sc.training
    block = 2 * fp8_model.linear_params_per_layer(m, pc)
    layers = m.num_layers / tr.pipeline_parallel
    note = "autocast's cache: 2 B x each matrix's weights, until its backward"
    if tr.recompute == "full":
        add("16-bit autocast copies of the re-run block's fp32 weights", "activations", "hbm",
            block, phase="backward", note=note)
    else:
        add(f"16-bit autocast copies of the fp32 weights ({layers:g} blocks)", "activations",
            "hbm", block * layers, phase="fwd_bwd", note=note)
    if m.vocab_size:
        add("16-bit autocast copy of the fp32 output head", "activations", "hbm",
            2 * m.vocab_size * m.hidden_size, phase="loss", note=note)


_LOSS_NOTES = {
    "torch": "12 B per token x vocab: fp32 log-probabilities, their gradient and the "
             "softmax gradient (transformers ForCausalLMLoss / F.cross_entropy)",
    "megatron_vocab_parallel": "6 B per token x vocab/t: 16-bit logits and one in-place fp32 "
                               "softmax buffer (Megatron cross_entropy.py)",
    "fused_linear_cross_entropy": "chunked head + loss, no full logits (Liger kernel)",
}


_unrecomputed_layer = ByIdentity(lambda m, tr: layer_bytes(_shape(m, tr, "none")))
"""One layer's activations without recomputation, per (model, training) section."""


def _shape(m: ModelSpec, tr: TrainingSpec, recompute: str,
           dense_share: float | None = None) -> ActivationShape:
    heads = m.num_attention_heads or max(1, m.hidden_size // 128)
    return ActivationShape.made(dict(
        seq_len=tr.local_seq_len, micro_batch=tr.sequences_per_micro_batch, hidden=m.hidden_size,
        heads=heads, kv_heads=m.num_kv_heads, ffn=m.ffn_hidden_size, gated_mlp=m.gated_mlp,
        top_k=m.moe_top_k if m.num_experts > 1 else 1, dropout=m.dropout,
        flash_attention=tr.flash_attention, tensor_parallel=tr.tensor_parallel,
        sequence_parallel=tr.sequence_parallel, recompute=recompute,
        framework=tr.framework, attention_dropout=m.attention_dropout,
        hidden_dropout=m.hidden_dropout, fused_mlp_activation=tr.fused_mlp_activation,
        fused_norm=tr.fused_norm,
        num_experts=m.num_experts, norm=m.norm,
        activation_bytes=DTYPE_BYTES["fp32"] if tr.precision == "fp32" else 2,
        moe_ffn=m.expert_ffn_size if m.num_experts > 1 else None,
        shared_ffn=m.shared_expert_ffn_size,
        dense_share=_dense_share(m, tr) if dense_share is None else dense_share,
        recompute_modules=tr.recompute_modules,
        activation_fp8_input_store=tr.activation_func_fp8_input_store,
        q_lora_rank=m.q_lora_rank, kv_lora_rank=m.kv_lora_rank,
        qk_head_dim=m.qk_head_dim if m.uses_mla else None,
        qk_rope_head_dim=m.qk_rope_head_dim, v_head_dim=m.v_head_dim,
        fp8_linear_inputs=tr.fp8 is not None and not uses_torchao(tr),
        frozen=tr.lora is not None,
        head_dim=None if m.uses_mla else m.head_dim, norms=m.block_norms,
        attn_softcap=m.attn_logit_softcapping is not None,
        **family_traits(m.layer_family, m.block_norms, m.num_kv_heads or heads, heads)))


def _layout_note(m: ModelSpec, tr: TrainingSpec, plan: StagePlan | None = None) -> str:
    """What the per-layer figure is made of where the block is not plain attention + MLP."""
    bits = []
    share = _dense_share(m, tr, plan)
    if share:
        bits.append(f"mean over the stage's blocks, {share:.0%} dense (first_dense_layers)")
    if m.num_shared_experts and m.num_experts > 1:
        bits.append(f"{m.moe_top_k} routed + {m.num_shared_experts} shared experts a token")
    if m.uses_mla:
        bits.append("latent attention keeps its compressed latents and the up-projected K, V")
    return "; " + "; ".join(bits) if bits else ""


def _dense_share(m: ModelSpec, tr: TrainingSpec, plan: StagePlan | None = None) -> float:
    """Share of the first pipeline stage's layers that are dense (``first_dense_layers``
    lead the model, so the first stage holds them): min(k, L/p) / (L/p); for a given
    pipeline rank's ``plan``, the dense share of the activations it holds
    (:attr:`simulation.pipeline.StagePlan.dense_activation_layers`)."""
    if m.num_experts <= 1 or not m.first_dense_layers or not m.num_layers:
        return 0.0
    if plan is not None and plan.activation_layers:
        return plan.dense_activation_layers / plan.activation_layers
    per_stage = m.num_layers / max(tr.pipeline_parallel, 1)
    return min(m.first_dense_layers, per_stage) / per_stage


def plan_activations(m: ModelSpec, tr: TrainingSpec, lay: Layout, plan: StagePlan,
                     act: StageActivations) -> StageActivations:
    """``act`` (the first stage's, :func:`_activations`) with the per-layer bytes of the
    blocks pipeline rank ``plan`` holds: where an MoE model's leading dense blocks make
    the rank's dense share differ from the first stage's, the mean layer is weighed by
    the rank's own share (a DualPipe middle rank holds no dense block; rank 0 holds p
    chunks of stage 0). Unchanged otherwise."""
    share = _dense_share(m, tr, plan)
    if share == _dense_share(m, tr):
        return act
    return _share_activations(m, tr, lay.grad_accumulation_steps, share)


def _share_activations_fn(m: ModelSpec, tr: TrainingSpec, grad_accumulation_steps: int,
                          share: float) -> StageActivations:
    st = first_stage(_shape(m, tr, tr.recompute, share), m.num_layers, tr.pipeline_parallel,
                     grad_accumulation_steps, tr.interleave_stages, None)
    layers = m.num_layers / tr.pipeline_parallel
    n = checkpointed_layers(tr, layers)
    if tr.recompute != "full" or n >= layers:
        return st
    whole = layer_bytes(_shape(m, tr, "none", share))
    per = (n * st.per_layer_bytes + (layers - n) * whole) / layers
    return dataclasses.replace(st, per_layer_bytes=per,
                               layers_bytes=per * st.layers_held * st.interleave_factor)


_share_memo: dict = {}


def _share_activations(m, tr, gas, share):
    key = (id(m), id(tr), gas, share)
    hit = _share_memo.get(key)
    if hit is None or hit[0] is not m or hit[1] is not tr:
        if len(_share_memo) > 4096:
            _share_memo.clear()
        hit = _share_memo[key] = (m, tr, _share_activations_fn(m, tr, gas, share))
    return hit[2]


def _activations(m: ModelSpec, tr: TrainingSpec, grad_accumulation_steps: int,
                 realistic: bool) -> StageActivations:
    """The first pipeline stage's stored per-layer activations (Korthikanti Eq. 5-6; the
    logits and loss are counted by :mod:`simulation.loss`, not here).

    Layer-selective full recomputation (``training.recompute_layers`` /
    ``recompute_every``, :func:`simulation.scenario.checkpointed_layers`): of a stage's L
    layers the n checkpointed keep their 16-bit input only and the other L - n all their
    activations (Megatron ``block``: ``chunk_runner(l, l + 1, use_checkpoint)`` runs the
    layers past k plainly; torchtitan returns the unwrapped block), so ``per_layer_bytes``
    is the stage's mean, (n x input + (L - n) x whole) / L bytes."""
    st = first_stage(_shape(m, tr, tr.recompute), m.num_layers, tr.pipeline_parallel,
                     grad_accumulation_steps, tr.interleave_stages, None)
    layers = m.num_layers / tr.pipeline_parallel
    n = checkpointed_layers(tr, layers)
    if tr.recompute != "full" or n >= layers:
        return st
    whole = _unrecomputed_layer(m, tr)
    per = (n * st.per_layer_bytes + (layers - n) * whole) / layers
    return dataclasses.replace(st, per_layer_bytes=per,
                               layers_bytes=per * st.layers_held * st.interleave_factor)


_stage_activations = ByIdentity(_activations)


def _buffers(add, sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes, psi: float,
             stage: str = "only"):
    st = sc.strategy
    pipeline_stage = stage
    d, stage = lay.shard_degree, st.zero_stage
    if sc.training.lora is None:        # psi is the rank's count with EP: shard it as build_parts does
        d = experts.sharded_divisor(sc.model, pc.total, lay, d)
    # one transformer block = one FSDP unit, the biggest where blocks differ (experts);
    # its experts over ETP x EP with EP
    unit = experts.layer_params_per_rank(sc.model, max(pc.per_layer, pc.largest_layer), lay)
    k_fp32 = sb.master_weights + sb.optimizer_states
    ub = unit_param_bytes(sc, pc, sb)            # a gathered block's bytes per parameter

    if st.kind == "megatron_dist_opt":
        pass            # Megatron's buckets are views into the main_grad buffer
    elif stage in (1, 2):
        bucket = min(DS_BUCKET_ELEMENTS, psi)
        add("reduce bucket (DeepSpeed reduce_bucket_size)", "buffers", "hbm",
            bucket * sb.grads, phase="fwd_bwd", note="5e8 elements")
        add("all-gather bucket (DeepSpeed allgather_bucket_size)", "buffers", "hbm",
            bucket * sb.params, phase="step", note="5e8 elements")
        if st.offload_optimizer == "none":
            add("fp32 gradient partition for the optimizer step", "buffers", "hbm",
                4 * psi / d, 4 / d, phase="step", note="DeepSpeed converts grads to fp32")
    if stage == 3:
        _gathered_modules(add, sc, pc, lay, sb, pipeline_stage)
    # bytes a gathered block holds per parameter: FP8 weights gathered as 1 B, or
    # QLoRA's packed storage (each is sb.params where it does not apply)
    gathered = min(_block_gather_bytes(sc, pc, sb), ub)
    if stage == 3 and st.is_fsdp:
        add(f"unsharded parameters ({1 + st.prefetch_depth} FSDP units)", "buffers", "hbm",
            (1 + st.prefetch_depth) * unit * gathered, phase="fwd_bwd",
            note="current unit + prefetched units, all-gathered"
                 + ("" if gathered == sb.params else
                    " (the packed 4/8-bit storage and its constants)" if ub < sb.params else
                    " (FP8 weights gathered as 1 B)"))
        if st.fsdp_version == 2:
            # FSDP2 (torch/distributed/fsdp/_fully_shard/): the flat all-gather output is a
            # buffer of its own beside the parameters copied out of it, and in forward the
            # unit's is kept until the next unit's copy-out (_fsdp_param_group.py
            # ``wait_for_unshard``: ``comm_ctx.all_gather_state`` "free after the next
            # copy-out"): at that copy-out the previous output, the next one and its
            # parameters live, one unit more than FSDP1's in-place flat parameter
            add("all-gather output buffer (1 FSDP2 unit)", "buffers", "hbm",
                unit * gathered, phase="fwd_bwd",
                note="fully_shard: gathered flat, then copied out per parameter")
            # foreach_reduce packs the parameter-dtype gradients into a reduce-scatter input
            # of reduce_dtype and frees them only after that copy-in (_fsdp_collectives.py:
            # "Only after the copy-in finishes can we free the gradients")
            add("unsharded gradients + reduce-scatter input (1 FSDP2 unit)", "buffers", "hbm",
                unit * (gathered + sb.grads) * trainable_fraction(sc, pc),
                phase="backward", note="param-dtype gradients and the reduce_dtype copy-in")
        else:
            add("unsharded gradients (1 FSDP unit)", "buffers", "hbm",
                unit * sb.grads * trainable_fraction(sc, pc),
                phase="backward", note="before reduce-scatter")
    elif stage == 3:
        n, ahead = _ds_live_parameters(sc, pc, lay, unit, pipeline_stage)
        add(f"gathered parameters ({n} layer{'s' if n > 1 else ''} + prefetch bucket)", "buffers",
            "hbm", (n * unit + ahead) * gathered, phase="fwd_bwd",
            note="the layer in backward and those stage3_max_reuse_distance (1e9) keeps "
                 "from forward, plus stage3_prefetch_bucket_size (5e7) ahead")
        add("reduce bucket (DeepSpeed reduce_bucket_size)", "buffers", "hbm",
            min(DS_BUCKET_ELEMENTS, psi) * sb.grads,
            note="5e8 elements; stage3.py allocates it once (__ipg_bucket_flat_buffer)")
        _ds_reduce_scatter_staging(add, sc, pc, lay, sb, psi, pipeline_stage)
        if st.offload_optimizer == "none":
            add("fp32 gradients of one optimizer sub-group", "buffers", "hbm",
                4 * min(DS_SUB_GROUP_ELEMENTS, psi / d), phase="step",
                note="sub_group_size 1e9 elements")

    # Pinned host staging that NVMe offload needs (DeepSpeed's swap buffers).
    if st.offload_params == "nvme":
        add("pinned parameter swap buffers", "buffers", "ddr",
            DS_PARAM_SWAP_BUFFERS * DS_PARAM_SWAP_ELEMENTS * sb.params,
            note="offload_param: 5 buffers x 1e8 elements per rank")
    if st.offload_optimizer == "nvme":
        # OptimizerSwapper's pool (deepspeed/runtime/swap_tensor/optimizer_utils.py):
        # SwapBufferManager(num_elems=largest sub-group, count=offload_optimizer.buffer_count
        # (4: parameter, gradient and Adam's two moments), fp32)
        add("pinned optimizer swap buffers", "buffers", "ddr",
            DS_OPTIMIZER_SWAP_BUFFERS * min(DS_SUB_GROUP_ELEMENTS, psi / d) * 4,
            note="offload_optimizer: 4 fp32 buffers of the largest sub_group (1e9 elements) per rank")

    add(RUNTIME_PART, "buffers", "hbm", sc.runtime.runtime_bytes, note="runtime.runtime_bytes")


def _ds_live_parameters(sc: Scenario, pc: ParamCount, lay: Layout, unit: float,
                        pipeline_stage: str) -> tuple[int, float]:
    """``(layers, elements)``: the transformer layers DeepSpeed ZeRO-3 holds gathered at its
    peak, and the prefetched elements on top (per GPU, in parameters; ``unit`` is one
    layer's parameters on this rank).

    Read in DeepSpeed 0.16.5 ``runtime/zero/partitioned_param_coordinator.py``: each
    submodule's parameters are gathered before it runs (``fetch_sub_module``) and released
    after it (``release_sub_module``) unless ``__params_to_release`` finds them again in the
    recorded trace within ``max_reuse_distance`` (1e9) parameters of modules ahead (it walks
    ``__submodule_order[step_id:]``, adding every module's ``ds_numel`` until 1e9). So:

    * with full recomputation a layer's re-run forward and its backward are one layer
      apart: the layer stays gathered through its backward;
    * the last layers of forward are kept until backward when their reuse is near: for
      the layer j from the end the walk passes the rest of the forward (j layers), the
      output head twice (forward, then its backward at once) and, before the layer comes
      back, j layers of backward (each re-run and back-propagated with recomputation):
      about (3j + 1) layers + 2 heads with recomputation, (2j + 1) + 2 heads without; it
      is kept while that is under 1e9. A 128k-vocabulary head (525M at h = 4096) keeps
      none; Llama-2-7B's (131M) keeps its last layer;
    * prefetching (``stage3_prefetch_bucket_size``, 5e7 elements, none when
      ``strategy.prefetch_depth`` is 0, as the DeepSpeed export writes it) adds up to that
      many, while the available parameters stay under ``max_live_parameters`` (1e9,
      ``max_params_to_prefetch``); the module being fetched is not bounded by it.

    The peak holds the kept layers (the first of them is the layer in backward) or, when
    none is kept, the one layer in backward.
    """
    m, tr = sc.model, sc.training
    layers = stage_layers_held(sc, lay, pipeline_stage)
    head = pc.output_head or pc.embedding           # a tied head is the embedding
    head = head / lay.tensor_parallel if _has_head(sc, pipeline_stage) else 0.0
    per = 3 if tr.recompute == "full" else 2
    keep = 0
    while keep < layers and (per * keep + 1) * unit + 2 * head < DS_MAX_REUSE_DISTANCE:
        keep += 1
    n = max(keep, 1)
    ahead = DS_PREFETCH_ELEMENTS if sc.strategy.prefetch_depth else 0.0
    ahead = min(ahead, max(0.0, DS_MAX_LIVE_PARAMETERS - n * unit - head))
    return n, ahead


def _ds_reduce_scatter_staging(add, sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes,
                               psi: float, pipeline_stage: str) -> None:
    """DeepSpeed ZeRO-3's copy of a full gradient bucket for its reduce-scatter (bytes, HBM).

    Read in DeepSpeed 0.16.5: with ``reduce_scatter`` on (the default, ``zero/config.py``
    line 104) ``stage3.py`` ``__reduce_and_partition_ipg_grads`` (line 1314) does not
    reduce the contiguous ``__ipg_bucket_flat_buffer`` in place but hands the bucket's
    gradients to ``comm/coalesced_collectives.py`` ``reduce_scatter_coalesced`` (stage3.py
    line 1391), which interleaves every tensor's rank chunks with ``torch.cat`` (line 199)
    into a new buffer of the bucket's size: up to ``reduce_bucket_size`` (5e8) elements in
    the gradient dtype, live in backward while the bucket is reduced. A bucket of one
    tensor whose size divides by the world size is reduced without the copy (line 179):
    the output head's gradient, bigger than the bucket with a 128k vocabulary, goes that
    way before the first full bucket, so the head's full gradient and this copy are not
    live at once; the part counts the copy beyond the head's gradient (already a
    ``backward`` part), which makes the backward moment hold the larger of the two.
    """
    bucket = min(DS_BUCKET_ELEMENTS, psi)
    head = pc.output_head / lay.tensor_parallel if (
        _has_head(sc, pipeline_stage) and sc.model is not None and sc.model.has_architecture) else 0.0
    add("reduce-scatter staging copy (DeepSpeed reduce_scatter_coalesced)", "buffers", "hbm",
        max(0.0, bucket - head) * sb.grads, phase="backward",
        note="torch.cat of a full bucket's rank chunks, beyond the head's gradient")


def _gathered_modules(add, sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes,
                      pipeline_stage: str) -> None:
    """The embedding and output head gathered as whole modules under ZeRO-3 / FSDP.

    With a 128k-152k vocabulary each is bigger than a transformer block.

    * FSDP (torch ``distributed/fsdp``; FSDP1 ``_runtime_utils._post_forward``: the root
      unit is not resharded after forward; FSDP2 ``fully_shard`` likewise keeps the root
      module unsharded, torchtitan ``parallelize.py`` sets ``reshard_after_forward=False``
      on it): the wrap policy makes a unit per block and leaves embedding, final norm and
      output head in the root unit, which stays gathered from forward through backward; its
      unsharded gradient (one flat tensor) is allocated when the head's gradient arrives and
      reduce-scattered after the embedding's, at the end of backward.
    * DeepSpeed ZeRO-3 (``runtime/zero/partitioned_param_coordinator.py``): every
      submodule is gathered on its own; the head is used last in forward and first in
      backward, well within ``stage3_max_reuse_distance`` (1e9), so it is not released in
      between; its full gradient exists until the reduce bucket takes it.
    """
    m = sc.model
    tp = lay.tensor_parallel
    head = pc.output_head / tp if _has_head(sc, pipeline_stage) else 0.0
    emb = pc.embedding / tp if _has_embedding(pipeline_stage) else 0.0
    if pc.output_head == 0 and _has_head(sc, pipeline_stage):
        emb = pc.embedding / tp          # tied: the head is the embedding
    if not m.has_architecture or head + emb <= 0:
        return
    frozen = sc.training.lora is not None     # LoRA: embedding and head have no gradient
    if sc.strategy.is_fsdp:
        root = head + emb
        add("root FSDP unit gathered (embedding, final norm, output head)", "buffers", "hbm",
            root * sb.params, phase="fwd_bwd",
            note="not resharded after forward: held from forward through backward")
        add("root FSDP unit unsharded gradient", "buffers", "hbm", 0 if frozen else root * sb.grads,
            phase="backward", note="reduce-scattered after the embedding's gradient")
    elif head:
        add("output head gathered (its own ZeRO-3 module)", "buffers", "hbm",
            head * sb.params, phase="fwd_bwd",
            note="last in forward, first in backward: within stage3_max_reuse_distance")
        add("output head full gradient (before the reduce bucket)", "buffers", "hbm",
            0 if frozen else head * sb.grads, phase="backward", note="vocab x hidden in the gradient dtype")


def fsdp_shard_is_master(sc: Scenario, sb: StateBytes) -> bool:
    """Whether FSDP's sharded flat parameters are the master weights (the realistic
    convention, mixed precision, no LoRA): they keep the dtype the model was wrapped in,
    fp32 (HF Accelerate upcasts a bf16-loaded model, "Upcasted low precision parameters"),
    and the 16-bit compute copy exists only while a unit is gathered."""
    return (sc.convention == "realistic" and sc.strategy.is_fsdp and sb.master_weights > 0
            and sc.training.lora is None)


def checkpoint_state_bytes(sc: Scenario, sb: StateBytes) -> dict:
    """Bytes per parameter of each state a checkpoint holds (:meth:`StateBytes.to_dict`'s
    keys; :func:`simulation.checkpoint.checkpoint_size_bytes` reads ``params``,
    ``master_weights`` and ``optimizer_states``). FSDP's fp32 shard, which is the master
    copy (:func:`fsdp_shard_is_master`), is saved once, as the parameters: FSDP's sharded
    state dict holds the flat parameters in their own dtype (torch.distributed.fsdp
    ``FullyShardedDataParallel.state_dict`` under ``StateDictType.SHARDED_STATE_DICT``;
    FSDP2's DTensor parameters likewise) and the optimizer's moments; no 16-bit copy
    exists to save. 4 + 8 = 12 B a parameter with fp32 Adam, where the states' own sum
    would say 2 + 4 + 8."""
    return _checkpoint_states(sb, fsdp_shard_is_master(sc, sb))


def checkpoint_state_tiers(st) -> dict:
    """Where each state a checkpoint saves lives between steps, by the strategy ``st``:
    ``{"params": tier, "master_weights": tier, "optimizer_states": tier}`` with tier
    "hbm", "ddr", "nvme" or "cxl" (:data:`OFFLOAD_TIER`). The parameters follow
    ``offload_params`` (FSDP's fp32 shard, saved as the parameters, included), the master
    weights and the optimizer's moments ``offload_optimizer``, as :func:`build_parts` places
    them."""
    opt = OFFLOAD_TIER.get(st.offload_optimizer, "hbm")
    return {"params": OFFLOAD_TIER.get(st.offload_params, "hbm"), "master_weights": opt,
            "optimizer_states": opt}


def _checkpoint_states(sb: StateBytes, shard_is_master: bool) -> dict:
    d = sb.to_dict()
    return dict(d, params=sb.master_weights, master_weights=0) if shard_is_master else d


def _host_staging(add, sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes) -> None:
    """Host DRAM a checkpoint save stages its shards in, beside what training holds there.

    Blocking ``torch_dist`` saves (Megatron ``dist_checkpointing/strategies/
    filesystem_async.py``, ``FileSystemWriterAsync.preload_tensors``) copy every write
    bucket of the rank to the host before the first file write: the host transient is the
    rank's whole shard. The copies are ``tensor.to("cpu", non_blocking=True)``, which
    PyTorch allocates pinned (``aten/src/ATen/native/TensorConversions.cpp``: ``pin_out``),
    from the caching host allocator, which rounds every block up to a power of two
    (``aten/src/ATen/core/CachingHostAllocator.h``): for tensor sizes spread evenly over
    the octaves the reserve is ``1/ln 2 = 1.44`` times the bytes. Only the states that
    live in HBM are copied (:func:`checkpoint_state_tiers` says where each lives):

    * in host DRAM (``strategy.offload_optimizer`` / ``offload_params`` "cpu"): DeepSpeed
      keeps the fp32 partitions and the optimizer's moments, or the parameters, in pinned
      host tensors and saves them from there;
    * in a CXL expander ("cxl"): that is host memory too (DeepSpeed's device "cpu" with
      the ranks bound to the CXL NUMA node), saved from where it is;
    * on NVMe ("nvme"): DeepSpeed saves the swapped states from their swap files, not
      through host tensors. ``swap_tensor/optimizer_utils.py`` ``release_memory`` leaves
      an empty tensor behind each swapped-out fp32 partition and moment, so the ZeRO-3
      optimizer's ``state_dict`` (``zero/stage3.py`` ``_rigid_state_dict``) holds no
      data, and ``runtime/engine.py`` ``save_checkpoint`` (v0.19.6) copies the swap
      folder into the checkpoint with ``shutil.copytree`` (``offloaded_tensors/rank*``,
      gradient files left out), a file-to-file copy; NVMe-swapped 16-bit parameters
      (``partitioned_param_swapper.py``) are empty placeholders in the module's state
      dict as well.
    """
    if sc.training.lora is not None:     # the checkpoint holds the adapters only
        pc = dataclasses.replace(pc, total=trained_params(sc, pc))
        staged = _staging_parts(sc.checkpoint, sc.cluster, pc, sb, lay, sc.strategy,
                                fsdp_shard_is_master(sc, sb))
    else:
        staged = _staging(sc.checkpoint, sc.cluster, pc, sb, lay, sc.strategy,
                          fsdp_shard_is_master(sc, sb))
    for name, per_rank, note in staged:
        add(name, "buffers", "ddr", per_rank, phase="checkpoint", note=note)


def _staging_parts(ck, cluster, pc: ParamCount, sb: StateBytes, lay: Layout, st,
                   shard_is_master: bool) -> tuple:
    """``((name, bytes per rank, note), ...)`` of :func:`_host_staging` (remembered per
    identity of the frozen sections it reads; ``st`` the strategy, ``shard_is_master``
    :func:`fsdp_shard_is_master`)."""
    # the target was checked when the scenario was parsed; only its kind matters here
    if not (TARGET_DEFAULTS[ck.target].via_host or ck.method == "in_memory_then_flush"):
        return ()
    # only what lives in HBM is copied: host DRAM and CXL states are written from where
    # they are, NVMe-swapped ones copied file to file from their swap files
    homes = checkpoint_state_tiers(st)
    states = {k: (0 if homes.get(k, "hbm") != "hbm" else v)
              for k, v in _checkpoint_states(sb, shard_is_master).items()}
    size = checkpoint_size_bytes(pc.total, states, ck, lay.num_gpus)
    if not size["size_bytes"]:
        return ()
    per_rank = size["size_bytes"] / lay.num_gpus if ck.sharded else size["size_bytes"]
    factor = 2 if ck.method == "in_memory_then_flush" and cluster.num_nodes > 1 else 1
    staged = per_rank * factor
    return (("checkpoint staging copy (pinned host memory)", staged,
             "the rank's whole shard copied to the host before the write"),
            ("pinned-allocator rounding of the staging copy", staged * (_POW2_ROUNDING - 1),
             "CachingHostAllocator rounds blocks up to a power of two (x1.44 on average)"))


_staging = ByIdentity(_staging_parts)


_POW2_ROUNDING = 1 / math.log(2)


def _model_load(add, sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes) -> None:
    """Host DRAM while the model is loaded, before training's states exist (``load`` phase).

    ``runtime.model_load``: ``every_rank`` (each rank process materializes the whole model
    in host RAM, as ``from_pretrained`` without ``zero.Init`` or meta-device init does:
    DeepSpeed's estimator counts ``4 x params x GPUs per node`` for it, with fp32
    weights), ``rank0`` (only the first rank loads, the others start on the meta device
    and receive their shard: Accelerate's ``fsdp_cpu_ram_efficient_loading``) or
    ``sharded`` (``deepspeed.zero.Init`` / meta-device init, each rank holds its shard
    only). The weights are in ``runtime.load_dtype`` (default: the parameters' dtype).
    """
    rt = sc.runtime
    how = rt.model_load_for(sc.strategy)
    b = DTYPE_BYTES[rt.load_dtype or sb.params_dtype]
    psi = pc.total / (lay.tensor_parallel * lay.pipeline_parallel)
    per_rank = {"every_rank": psi * b, "rank0": psi * b / sc.cluster.gpus_per_node,
                "sharded": psi * b / max(lay.shard_degree, 1)}[how]
    add(f"model weights while loading ({how.replace('_', ' ')})", "params", "ddr", per_rank,
        phase="load", note=f"{rt.load_dtype or sb.params_dtype} weights in host RAM before "
                           "training starts (runtime.model_load)")


# The moments a tier's peak can fall in, and the part phases live in each. ``fwd_bwd``
# parts (stored activations, gathered units) are live at the loss and through backward.
MOMENTS = {
    "loss": ("fwd_bwd", "loss"),              # end of forward / start of backward
    "backward": ("fwd_bwd", "backward"),      # a layer's backward (recompute working set)
    "step": ("step",),                        # optimizer step
    "checkpoint": ("checkpoint",),            # a checkpoint save staged through the host
    "load": ("load",),                        # loading the model, before training's states
}
_MOMENT_OF_PHASE: dict = {}
for _m, _phases in MOMENTS.items():
    for _ph in _phases:
        _MOMENT_OF_PHASE.setdefault(_ph, []).append(_m)


def moment_bytes(parts: list[dict]) -> dict:
    """``{moment: bytes}`` of the non-persistent parts live at each moment."""
    by_phase: dict = {}
    for p in parts:                        # one dict add per part, then a few per phase
        ph = p["phase"]
        by_phase[ph] = by_phase.get(ph, 0.0) + p["bytes"]
    return _moments_of(by_phase)


def _peak_moment(per: dict, by_phase: dict) -> str | None:
    """The moment whose bytes peak: the largest training moment (None when nothing but
    persistent bytes), or ``load`` when loading holds more than the persistent states plus
    that moment (training's moments stack on the persistent states; loading comes first)."""
    peak = max(_TRAINING_MOMENTS, key=per.__getitem__)
    if per[peak] <= 0:
        peak = None
    if per["load"] > by_phase.get("persistent", 0.0) + (per[peak] if peak else 0.0):
        peak = "load"
    return peak


def _moments_of(by_phase: dict) -> dict:
    both = by_phase.get("fwd_bwd", 0.0)
    return {"loss": both + by_phase.get("loss", 0.0),
            "backward": both + by_phase.get("backward", 0.0),
            "step": by_phase.get("step", 0.0), "checkpoint": by_phase.get("checkpoint", 0.0),
            "load": by_phase.get("load", 0.0)}


def _peak(parts: list[dict]) -> tuple[str | None, dict]:
    """The moment with the most dynamic bytes (None when there are none) and all of them."""
    per = moment_bytes(parts)
    peak = max(_TRAINING_MOMENTS, key=per.get)
    return (peak if per[peak] > 0 else None), per


def fragmentation_part(parts: list[dict], fraction: float) -> dict | None:
    """Allocator reserve on HBM: ``fraction`` of the dynamic allocations of the peak moment.

    It is listed in the peak moment's phase (``loss``, ``backward`` or ``step``)."""
    if fraction <= 0:
        return None
    peak, per = _peak([p for p in parts if p["tier"] == "hbm"])
    if peak is None:
        return None
    extra = fraction * per[peak]
    phase = {"loss": "loss", "backward": "backward"}.get(peak, peak)
    return part(FRAGMENTATION_PART, "buffers", "hbm", extra, phase,
                note=f"{fraction:.0%} of activations and working buffers at the {peak} peak "
                     "(runtime.fragmentation_fraction)")


def add_fragmentation(parts: list[dict], hbm: dict, fraction: float) -> None:
    """:func:`fragmentation_part` added to ``parts`` and to the HBM summary ``hbm`` made
    from them (it only grows the peak moment, so the peak stays where it is)."""
    peak = hbm["peak_phase"]
    if fraction <= 0 or peak not in MOMENTS or peak == "load":
        return
    extra = float(round(fraction * hbm["moments_bytes"][peak]))
    if extra <= 0:
        return
    p = part(FRAGMENTATION_PART, "buffers", "hbm", extra, peak,
             note=f"{fraction:.0%} of activations and working buffers at the {peak} peak "
                  "(runtime.fragmentation_fraction)")
    parts.append(p)
    if hbm["parts"] is not parts:
        hbm["parts"].append(p)
    total = hbm["total_bytes"] + extra
    cap = hbm["capacity_bytes"]
    hbm["moments_bytes"][peak] += extra
    hbm.update(buffers_bytes=hbm["buffers_bytes"] + extra, total_bytes=total, free_bytes=cap - total,
               utilization=(total / cap) if cap else None, reserved_bytes=total)


def tier_summary(parts: list[dict], tier: str, capacity: float, present: bool) -> dict:
    """Category totals of one tier at its peak phase, with capacity and the parts."""
    return _summary([p for p in parts if p["tier"] == tier], capacity, present)


def stage_figures(hbm: dict) -> tuple:
    """``(total_bytes, model_state_bytes, stored_activation_bytes, peak_phase)`` of an HBM
    summary (:func:`tier_summaries`, after :func:`add_fragmentation`): its total, its
    parameters + gradients + optimizer states, the bytes of its ``fwd_bwd`` activation
    parts (whatever the peak phase) and its peak phase: a pipeline rank's row."""
    return (hbm["total_bytes"], hbm["params_bytes"] + hbm["grads_bytes"] + hbm["optimizer_bytes"],
            sum(p["bytes"] for p in hbm["parts"] if p["category"] == "activations"
                and p["phase"] == "fwd_bwd"), hbm["peak_phase"])


def hbm_figures(parts: list[dict], fragmentation: float | None) -> tuple:
    """:func:`stage_figures` of the HBM summary ``parts`` would have, ``fragmentation``
    (:func:`add_fragmentation`'s fraction, None for none) added, made without the summary:
    the same additions in the same order as :func:`_summary` (its by-phase pass, the peak
    moment, the live parts by category, their total) and :func:`add_fragmentation`, so
    the figures are the summary's to the last bit (``tests/engine/test_stage_parts_fast.py``)."""
    mine, by_phase = [], {}
    for p in parts:
        if p["tier"] == "hbm":
            mine.append(p)
            ph = p["phase"]
            by_phase[ph] = by_phase.get(ph, 0.0) + p["bytes"]
    if not mine:
        return 0, 0, 0, "persistent"
    per = _moments_of(by_phase)
    peak = _peak_moment(per, by_phase)
    live = _LIVE_AT[peak]
    cats = dict.fromkeys(CATEGORIES, 0)           # _NO_BYTES' order
    stored = 0
    for p in mine:
        ph = p["phase"]
        if ph in live:
            cats[p["category"]] += p["bytes"]
        if ph == "fwd_bwd" and p["category"] == "activations":
            stored += p["bytes"]
    total = sum(cats.values())
    phase = peak or "persistent"
    if fragmentation is not None and fragmentation > 0 and phase in MOMENTS and phase != "load":
        extra = float(round(fragmentation * per[phase]))      # as add_fragmentation's
        if extra > 0:
            total = total + extra
    return total, cats["params"] + cats["grads"] + cats["optimizer"], stored, phase


def hbm_summary(parts: list[dict], hbm_capacity_bytes: float) -> dict:
    """``{"hbm": summary}``: :func:`tier_summaries`' per-GPU half alone (the same pass)."""
    mine, by_phase = [], {}
    for p in parts:
        if p["tier"] == "hbm":
            mine.append(p)
            ph = p["phase"]
            by_phase[ph] = by_phase.get(ph, 0.0) + p["bytes"]
    return {"hbm": _summary(mine, hbm_capacity_bytes, True, by_phase)}


def tier_summaries(parts: list[dict], hbm_capacity_bytes: float, node_tiers: dict) -> tuple[dict, dict]:
    """``(per_gpu, per_node)``: :func:`tier_summary` of HBM and of each of ``NODE_TIERS``
    (``node_tiers`` maps a tier to its spec with ``capacity_bytes``; absent: none)."""
    # one pass: each tier's parts and, in the parts' order, its bytes per phase
    mine: dict = {"hbm": [], "ddr": [], "nvme": [], "cxl": []}
    phases: dict = {"hbm": {}, "ddr": {}, "nvme": {}, "cxl": {}}
    for p in parts:
        t = p["tier"]
        held = mine.get(t)
        if held is not None:
            held.append(p)
            by_phase = phases[t]
            ph = p["phase"]
            by_phase[ph] = by_phase.get(ph, 0.0) + p["bytes"]
    per_node = {}
    for t in NODE_TIERS:
        spec = node_tiers.get(t)
        per_node[t] = _summary(mine[t], spec.capacity_bytes if spec else 0.0, spec is not None,
                               phases[t])
    return {"hbm": _summary(mine["hbm"], hbm_capacity_bytes, True, phases["hbm"])}, per_node


_NO_BYTES = dict.fromkeys(_CATEGORY_KEYS.values(), 0)


_EMPTY_MOMENTS = dict.fromkeys(MOMENTS, 0.0)
# An empty tier's summary, in the keys' order; capacity, present, moments and parts are set
# per tier (the moments and parts anew: a caller may change them).
_EMPTY_SUMMARY = dict(_NO_BYTES, total_bytes=0, capacity_bytes=None, free_bytes=None,
                      utilization=None, present=None, peak_phase="persistent",
                      moments_bytes=None, allocated_bytes=0, reserved_bytes=0, parts=None)
_TRAINING_MOMENTS = ("loss", "backward", "step", "checkpoint")
# The phases a tier's total counts when its peak is at a moment (None: persistent alone):
# the moment's phases, on top of the persistent parts except at load, which precedes them.
_LIVE_AT = {m: frozenset(MOMENTS[m]) | ({"persistent"} if m != "load" else set())
            for m in MOMENTS}
_LIVE_AT[None] = frozenset({"persistent"})


def _summary(mine: list[dict], capacity: float, present: bool, by_phase: dict | None = None) -> dict:
    """The summary of one tier's parts ``mine``; ``by_phase``, when given, is their bytes
    per phase summed in their order (what the first pass below makes)."""
    if not mine:                       # most node tiers hold nothing
        out = _EMPTY_SUMMARY.copy()
        out["capacity_bytes"] = out["free_bytes"] = capacity
        out["utilization"] = 0.0 if capacity else None
        out["present"] = present
        out["moments_bytes"] = _EMPTY_MOMENTS.copy()
        out["parts"] = mine
        return out
    # bytes per phase decide the peak moment; a second pass sums the live parts by category
    if by_phase is None:
        by_phase = {}
        for p in mine:
            ph = p["phase"]
            by_phase[ph] = by_phase.get(ph, 0.0) + p["bytes"]
    per = _moments_of(by_phase)
    peak = _peak_moment(per, by_phase)
    live = _LIVE_AT[peak]
    out = _NO_BYTES.copy()
    reserve = 0.0
    for p in mine:
        if p["phase"] in live:
            b = p["bytes"]
            out[_CATEGORY_KEYS[p["category"]]] += b
            if p["name"] in _NOT_ALLOCATED:
                reserve += b
    total = sum(out.values())
    out.update(total_bytes=total, capacity_bytes=capacity, free_bytes=capacity - total,
               utilization=(total / capacity) if capacity else None, present=present,
               peak_phase=peak or "persistent", moments_bytes=per,
               allocated_bytes=total - reserve, reserved_bytes=total, parts=mine)
    return out
