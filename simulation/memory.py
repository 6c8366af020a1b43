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
    What the frameworks allocate, so that "fits" means it fits:
    Megatron/PyTorch DDP keep fp32 main gradients (4 B/param: Megatron's 18 B/param);
    DeepSpeed ZeRO-1/2 keep bf16 gradients plus, during the optimizer step, an fp32
    gradient partition and reduce/all-gather buckets (``reduce_bucket_size`` and
    ``allgather_bucket_size`` = 5e8 elements each); DeepSpeed ZeRO-3 gathers layers
    up to ``stage3_max_live_parameters`` (1e9) and converts one optimizer sub-group
    (``sub_group_size`` = 1e9) to fp32 at a time; PyTorch FSDP keeps sharded fp32
    parameters (which are the master weights) and fp32 sharded gradients, and
    unshards (1 + prefetch) units of bf16 parameters plus one unit of gradients;
    NVMe offload adds DeepSpeed's pinned DDR swap buffers (``offload_param``:
    5 buffers x 1e8 elements; ``offload_optimizer``: one sub-group of fp32 states).
    Plus the CUDA context/NCCL/cuBLAS runtime and allocator fragmentation.

HBM is accounted per GPU; DDR, NVMe and CXL per node (sum over the node's ranks).
HBM peaks either in forward/backward (activations + gathered buffers) or in the
optimizer step (fp32 gradient conversion); the total is persistent + the larger phase.
"""

from __future__ import annotations

from .activations import ActivationShape, StageActivations, first_stage
from .memo import ByIdentity
from .params import ParamCount
from .parallel import Layout
from .scenario import ModelSpec, Scenario, TrainingSpec
from .states import StateBytes

CATEGORIES = ("params", "grads", "optimizer", "activations", "buffers")
_CATEGORY_KEYS = {c: f"{c}_bytes" for c in CATEGORIES}
NODE_TIERS = ("ddr", "nvme", "cxl")
OFFLOAD_TIER = {"cpu": "ddr", "nvme": "nvme", "cxl": "cxl"}

# DeepSpeed defaults (deepspeed/runtime/zero/config.py, offload_config.py)
DS_BUCKET_ELEMENTS = 5e8            # reduce_bucket_size, allgather_bucket_size
DS_MAX_LIVE_PARAMETERS = 1e9        # stage3_max_live_parameters
DS_SUB_GROUP_ELEMENTS = 1e9         # sub_group_size
DS_PARAM_SWAP_BUFFERS = 5           # offload_param.buffer_count
DS_PARAM_SWAP_ELEMENTS = 1e8        # offload_param.buffer_size


def part(name: str, category: str, tier: str, bytes: float, phase: str = "persistent",
         bytes_per_param: float | None = None, note: str = "") -> dict:
    """One allocation, as the report lists it: ``bytes`` is per GPU on HBM, per node on
    DDR/NVMe/CXL; ``phase`` is persistent, fwd_bwd or step. A plain dict because a report
    lists a dozen of them per tier and a quick estimate should cost ~0.1 ms."""
    d = {"name": name, "category": category, "tier": tier, "bytes": bytes, "phase": phase,
         "note": note}
    if bytes_per_param is not None:
        d["bytes_per_param"] = bytes_per_param
    return d


def build_parts(sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes) -> list[dict]:
    """Every allocation of one rank (HBM) and of one node (other tiers)."""
    st, tr = sc.strategy, sc.training
    realistic = sc.convention == "realistic"
    gpn = sc.cluster.gpus_per_node
    psi = pc.total / (lay.tensor_parallel * lay.pipeline_parallel)   # params per MP rank
    d = lay.shard_degree
    stage = st.zero_stage
    shard_note = f"sharded over {d} ranks" if d > 1 else "replicated on every rank"
    parts: list[dict] = []

    def add(name, category, tier, per_rank_bytes, bpp=None, phase="persistent", note=""):
        if per_rank_bytes <= 0:
            return
        scale = 1 if tier == "hbm" else gpn          # node tiers hold every local rank's share
        parts.append(part(name, category, tier, per_rank_bytes * scale, phase, bpp, note))

    opt_tier = OFFLOAD_TIER.get(st.offload_optimizer, "hbm")
    par_tier = OFFLOAD_TIER.get(st.offload_params, "hbm")
    p_div = d if stage >= 3 else 1
    g_div = d if stage >= 2 else 1
    o_div = d if stage >= 1 else 1
    dt = tr.precision

    # ---- parameters
    if realistic and st.is_fsdp and sb.master_weights:
        # FSDP's sharded flat parameters are fp32 and double as the master weights.
        add("fp32 parameters (FSDP shard, also the master weights)", "params", par_tier,
            4 * psi / p_div, 4 / p_div, note=shard_note)
    else:
        add(f"{dt} parameters" + (" (shard)" if p_div > 1 else ""), "params", par_tier,
            sb.params * psi / p_div, sb.params / p_div,
            note=shard_note if p_div > 1 else "every rank holds all parameters")

    # ---- gradients
    grad_tier = "hbm"
    if st.offload_optimizer != "none":
        # ZeRO-Offload: gradients go to the host for the CPU optimizer step; with NVMe
        # offload they are staged in DDR, with CXL they live in the CXL tier.
        grad_tier = "cxl" if st.offload_optimizer == "cxl" else "ddr"
    if realistic and stage == 0:
        add("fp32 main gradients", "grads", "hbm", 4 * psi, 4,
            note="Megatron/PyTorch-AMP accumulate gradients in fp32")
    elif realistic and st.is_fsdp:
        add("fp32 gradients (FSDP shard)", "grads", grad_tier, 4 * psi / g_div, 4 / g_div,
            note=shard_note)
    elif realistic and grad_tier != "hbm":
        add("fp32 gradient partition (host)", "grads", grad_tier, 4 * psi / g_div, 4 / g_div,
            note="DeepSpeed copies reduced gradients to pinned host memory as fp32")
    else:
        add(f"{dt} gradients" + (" (shard)" if g_div > 1 else ""), "grads", grad_tier,
            sb.grads * psi / g_div, sb.grads / g_div,
            note=shard_note if g_div > 1 else "full gradients on every rank")

    # ---- optimizer: master weights and moments
    if sb.master_weights and not (realistic and st.is_fsdp):
        add("fp32 master weights" + (" (shard)" if o_div > 1 else ""), "optimizer", opt_tier,
            sb.master_weights * psi / o_div, sb.master_weights / o_div,
            note=shard_note if o_div > 1 else "")
    if sb.optimizer_states:
        add(f"{tr.optimizer} optimizer states" + (" (shard)" if o_div > 1 else ""),
            "optimizer", opt_tier, sb.optimizer_states * psi / o_div,
            sb.optimizer_states / o_div, note=shard_note if o_div > 1 else "")

    # ---- activations
    act = _stage_activations(sc.model, tr, lay.grad_accumulation_steps, realistic)
    note = f"{act.per_layer_bytes / 1e6:.1f} MB per layer ({act.source})"
    if st.offload_activations == "cpu" and act.layers_held > 2:
        # Activation checkpoints live in DDR; HBM keeps the layer being computed and the
        # one in flight to or from the host (ZeRO-R's Pa+cpu, ZeRO Sec. 6.1).
        on_hbm = act.layers_bytes * 2 / act.layers_held
        add("activations (2 layers in HBM, the rest offloaded)", "activations", "hbm", on_hbm,
            phase="fwd_bwd", note=note)
        add(f"offloaded activations ({act.layers_held - 2:g} layers)", "activations", "ddr",
            act.layers_bytes - on_hbm, note="pinned host copies of activation checkpoints")
    else:
        add(f"activations ({act.layers_held:g} layers x {tr.recompute} recompute)",
            "activations", "hbm", act.layers_bytes, phase="fwd_bwd", note=note)
    if realistic:
        add("embedding and output-layer activations", "activations", "hbm", act.extras_bytes,
            phase="fwd_bwd", note="logits in fp32 for the loss (Korthikanti Sec. 4.3)")

    # ---- working buffers (realistic only)
    if realistic:
        _buffers(add, sc, pc, lay, sb, psi)
    return parts


def _activations(m: ModelSpec, tr: TrainingSpec, grad_accumulation_steps: int,
                 realistic: bool) -> StageActivations:
    """The first pipeline stage's activations (the realistic convention adds the
    embedding and output-layer ones, which need the vocabulary)."""
    heads = m.num_attention_heads or max(1, m.hidden_size // 128)
    shape = ActivationShape(
        seq_len=tr.seq_len, micro_batch=tr.micro_batch_size, hidden=m.hidden_size,
        heads=heads, kv_heads=m.num_kv_heads, ffn=m.ffn_hidden_size, gated_mlp=m.gated_mlp,
        top_k=m.moe_top_k if m.num_experts > 1 else 1, dropout=m.dropout,
        flash_attention=tr.flash_attention, tensor_parallel=tr.tensor_parallel,
        sequence_parallel=tr.sequence_parallel, recompute=tr.recompute,
        framework=tr.framework, attention_dropout=m.attention_dropout,
        hidden_dropout=m.hidden_dropout, fused_mlp_activation=tr.fused_mlp_activation,
        num_experts=m.num_experts, norm=m.norm)
    return first_stage(shape, m.num_layers, tr.pipeline_parallel, grad_accumulation_steps,
                       tr.interleave_stages, m.vocab_size if realistic else None)


_stage_activations = ByIdentity(_activations)


def _buffers(add, sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes, psi: float):
    st = sc.strategy
    d, stage = lay.shard_degree, st.zero_stage
    unit = pc.per_layer / lay.tensor_parallel     # one transformer block = one FSDP unit
    k_fp32 = sb.master_weights + sb.optimizer_states

    if stage in (1, 2):
        bucket = min(DS_BUCKET_ELEMENTS, psi)
        add("reduce bucket (DeepSpeed reduce_bucket_size)", "buffers", "hbm",
            bucket * sb.grads, phase="fwd_bwd", note="5e8 elements")
        add("all-gather bucket (DeepSpeed allgather_bucket_size)", "buffers", "hbm",
            bucket * sb.params, phase="step", note="5e8 elements")
        if st.offload_optimizer == "none":
            add("fp32 gradient partition for the optimizer step", "buffers", "hbm",
                4 * psi / d, 4 / d, phase="step", note="DeepSpeed converts grads to fp32")
    if stage == 3 and st.is_fsdp:
        add(f"unsharded parameters ({1 + st.prefetch_depth} FSDP units)", "buffers", "hbm",
            (1 + st.prefetch_depth) * unit * sb.params, phase="fwd_bwd",
            note="current unit + prefetched units, all-gathered")
        add("unsharded gradients (1 FSDP unit)", "buffers", "hbm", unit * sb.grads,
            phase="fwd_bwd", note="before reduce-scatter")
    elif stage == 3:
        live = min((1 + st.prefetch_depth) * unit, max(DS_MAX_LIVE_PARAMETERS, unit))
        add(f"gathered parameters ({1 + st.prefetch_depth} layers)", "buffers", "hbm",
            live * sb.params, phase="fwd_bwd",
            note="bounded by stage3_max_live_parameters (1e9)")
        add("reduce bucket (DeepSpeed reduce_bucket_size)", "buffers", "hbm",
            min(DS_BUCKET_ELEMENTS, psi) * sb.grads, phase="fwd_bwd", note="5e8 elements")
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
        add("pinned optimizer swap buffer (one sub-group)", "buffers", "ddr",
            min(DS_SUB_GROUP_ELEMENTS, psi / d) * k_fp32,
            note="fp32 master + moments of one sub_group (1e9 elements) per rank")

    add("CUDA context, cuBLAS workspace, NCCL buffers", "buffers", "hbm",
        sc.runtime.runtime_bytes, note="runtime.runtime_bytes")


def fragmentation_part(parts: list[dict], fraction: float) -> dict | None:
    """Allocator reserve on HBM: ``fraction`` of the dynamic allocations of the peak phase."""
    if fraction <= 0:
        return None
    fwd_bwd = step = 0
    for p in parts:
        if p["tier"] == "hbm":
            if p["phase"] == "fwd_bwd":
                fwd_bwd += p["bytes"]
            elif p["phase"] == "step":
                step += p["bytes"]
    peak_phase, dyn = ("step", step) if step > fwd_bwd else ("fwd_bwd", fwd_bwd)
    extra = fraction * dyn
    if extra <= 0:
        return None
    return part("allocator fragmentation and reserve", "buffers", "hbm", extra, peak_phase,
                note=f"{fraction:.0%} of activations and working buffers "
                     "(runtime.fragmentation_fraction)")


def tier_summary(parts: list[dict], tier: str, capacity: float, present: bool) -> dict:
    """Category totals of one tier at its peak phase, with capacity and the parts."""
    return _summary([p for p in parts if p["tier"] == tier], capacity, present)


def tier_summaries(parts: list[dict], hbm_capacity_bytes: float, node_tiers: dict) -> tuple[dict, dict]:
    """``(per_gpu, per_node)``: :func:`tier_summary` of HBM and of each of ``NODE_TIERS``
    (``node_tiers`` maps a tier to its spec with ``capacity_bytes``; absent: none)."""
    mine: dict = {"hbm": [], "ddr": [], "nvme": [], "cxl": []}
    for p in parts:
        held = mine.get(p["tier"])
        if held is not None:
            held.append(p)
    per_node = {}
    for t in NODE_TIERS:
        spec = node_tiers.get(t)
        per_node[t] = _summary(mine[t], spec.capacity_bytes if spec else 0.0, spec is not None)
    return {"hbm": _summary(mine["hbm"], hbm_capacity_bytes, True)}, per_node


_NO_BYTES = dict.fromkeys(_CATEGORY_KEYS.values(), 0)


def _summary(mine: list[dict], capacity: float, present: bool) -> dict:
    fwd_bwd = step = 0
    dynamic = False
    for p in mine:
        phase = p["phase"]
        if phase == "fwd_bwd":
            fwd_bwd += p["bytes"]
            dynamic = True
        elif phase == "step":
            step += p["bytes"]
            dynamic = True
    peak = "step" if step > fwd_bwd else "fwd_bwd"
    out = _NO_BYTES.copy()
    for p in mine:                    # in order, as sum() would add them
        phase = p["phase"]
        if phase == "persistent" or phase == peak:
            out[_CATEGORY_KEYS[p["category"]]] += p["bytes"]
    total = sum(out.values())
    out.update(total_bytes=total, capacity_bytes=capacity, free_bytes=capacity - total,
               utilization=(total / capacity) if capacity else None, present=present,
               peak_phase=peak if dynamic else "persistent", parts=mine)
    return out
