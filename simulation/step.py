"""Step time: FLOPs, the simulated micro-batch, the pipeline schedule and the verdict.

Compute per layer and micro-batch (Korthikanti et al. 2022, Sec. 5, Eq. 7-8): forward
2 x (matmul parameters) x tokens + 4*b*s^2*h for attention scores and their use;
backward twice the forward; full recomputation adds one forward, selective the
attention-core forward (4*b*s^2*h); the output layer 2*b*s*h*v forward. All divided by
the tensor-parallel degree. Their time comes from the work (``simulation.compute``: each
GEMM's shape against the accelerator's achievable matmul rate, wave quantization and HBM
bandwidth; eager or FlashAttention-2 attention; norms and element-wise kernels as HBM
passes of the software stack), or, with an explicit ``compute_efficiency`` (and for
accelerators without figures, and fp32), every FLOP at peak FLOP/s x that fraction.

A step of m micro-batches on p pipeline stages with v interleaved chunks takes
(m - 1 + (p - 1)/v) x T_micro + T_last (Narayanan et al. 2021, Sec. 2.2: bubble
(p - 1)/v micro-batch times), where T_micro and T_last are simulated by the bandwidth
scheduler (T_last adds gradient synchronisation and the optimizer step) on the slowest
stage, the last: its L/p layers and the output layer with the loss.

Collectives (``simulation.collectives``): each pays NCCL's alpha for its ring (or tree)
over the group's ranks and nodes, then moves its bytes on the links its ring crosses; the
groups sit TP-innermost, so a data-parallel group of a node-filling TP has one rank per
node and all its bytes cross the network. ZeRO-3 issues what each framework issues
(``zero3_granularity``): FSDP one all-gather and one reduce-scatter per block, DeepSpeed
one all-gather per weight tensor and a reduce-scatter per filled bucket, each prefetching
only as far as its defaults let it, and DeepSpeed gathers again in backward what
recomputation released (``deepspeed_regather_fraction``). Gradients are reduced in the
dtype the framework reduces in (``reduce_bytes_per_param``). ``strategy.deepspeed_release``
"v0.3-v0.5" runs ZeRO-3 as DeepSpeed shipped it from March 2021 to January 2022: nothing
prefetched, each fetch synchronous and after the reduce-scatters before it, everything
gathered again in backward, a reduce-scatter per parameter tensor, and PyTorch's list
collectives: their HBM copies, one ``copy_`` kernel a rank each, and DeepSpeed's Python
view a rank before each gather, so their cost grows with the ranks
(``zero3_granularity``, ``list_collective_copy_s``).

Context parallelism (``training.context_parallel``, :mod:`simulation.context_parallel`):
each rank computes its seq_len / cp tokens and a cp-th of the causal attention; each
layer's K/V (and in backward dK/dV) chunks go around the CP ring on NVLink, or on the NIC
where the group leaves a node, each transfer beside one attention block; what it takes
longer than its block is exposed communication of the micro-batch, on the critical path
like the pipeline transfers (``context_parallel_exchange``). Gradients are reduced over
the data-parallel x CP ranks (``Layout.grad_reduce_degree``).

Exposed time is attributed by walking back from each GPU idle gap to the task it was
waiting for: communication (all-gather, reduce-scatter, all-reduce, TP all-reduce),
offload traffic (PCIe, NVMe, CXL, DDR transfers), the CPU optimizer, or a prefetch miss
(stall).
"""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numpy as np

from . import collectives as nccl
from . import compute
from .compute import KERNEL_LAUNCH_S
from . import context_parallel
from . import cpu_adam
from . import experts
from .lora import adapter_gemms, adapter_params
from .memory import OFFLOAD_TIER, unit_param_bytes
from .params import ParamCount
from . import fp8 as fp8_model
from . import pipeline as pipe
from .params import model_params
from .parallel import Layout, layout, pipeline_stage_layers
from .scenario import Scenario
from .scheduler import COMPUTE, path_weights, simulate
from .states import StateBytes
from .stepgraph import LABEL_CODE, LABELS, RankModel, build, c_module, graph_arrays, ring, task_name_plan

CATEGORY = {"allgather": "exposed_comm", "reduce_scatter": "exposed_comm",
            "allreduce": "exposed_comm", "tp_allreduce": "exposed_comm",
            "offload": "exposed_offload", "cpu_optimizer": "cpu_optimizer",
            "fetch_miss": "stall", "optimizer": "compute", "compute": "compute"}
BREAKDOWN_KEYS = ("compute", "exposed_comm", "exposed_offload", "cpu_optimizer", "stall",
                  "pipeline_bubble")
TIMELINE_MAX_TASKS = 4000


def peak_flops(sc: Scenario) -> float:
    acc = sc.cluster.accelerator
    return acc.peak_flops_fp32 if sc.training.precision == "fp32" else acc.peak_flops_bf16


def mfu_peak(sc: Scenario) -> tuple[str, float]:
    """The precision and dense peak (FLOP/s a GPU) that MFU divides by: that of the GEMMs,
    the FP8 peak when ``training.fp8`` is set (the projections' and MLP's GEMMs run there),
    else ``peak_flops``'s (fp32 or 16-bit)."""
    if sc.training.fp8 is not None:
        return "fp8", sc.cluster.accelerator.peak_flops_fp8
    return ("fp32" if sc.training.precision == "fp32" else "16-bit"), peak_flops(sc)


def compute_times(sc: Scenario, pc: ParamCount) -> dict:
    """Seconds of one layer's forward and backward and of the output layer (forward +
    backward) for one micro-batch on one GPU: from the work (``simulation.compute``) by
    default, at peak x ``compute_efficiency`` where it is set (or no figures apply)."""
    if compute.uses_work_model(sc):
        out = compute.layer_times(sc, pc)
    else:
        fl = layer_flops(sc, pc)
        rate = peak_flops(sc) * (sc.training.compute_efficiency or compute.DEFAULT_COMPUTE_EFFICIENCY)
        fwd, bwd = fl["fwd"], fl["bwd"]
        if sc.training.fp8 is not None:
            # the projections' and MLP's GEMMs at the FP8 peak x the same efficiency:
            # their FLOPs count (16-bit peak / FP8 peak) of a 16-bit FLOP
            acc, m = sc.cluster.accelerator, sc.model
            tok = sc.training.sequences_per_micro_batch * sc.training.local_seq_len
            lin = 2 * fp8_model.linear_params_per_layer(m, pc) * tok / sc.training.tensor_parallel
            if m.num_experts > 1:
                lin *= pc.per_layer_active / pc.per_layer
            saved = 1 - acc.peak_flops_bf16 / acc.peak_flops_fp8
            # recomputed FP8 GEMMs (layer_flops' extra): all of them with full recompute,
            # wk, wo and one MLP matmul with selective_ops
            h, f = m.hidden_size, m.ffn_hidden_size or 4 * m.hidden_size
            kv = (m.num_kv_heads or m.num_attention_heads or 1) / (m.num_attention_heads or 1)
            redo = {"full": lin, "selective_ops": 2 * tok * (h * h * kv + h * h + h * f * max(
                m.moe_top_k, 1)) / sc.training.tensor_parallel}.get(sc.training.recompute, 0.0)
            fwd, bwd = fwd - saved * lin, bwd - saved * (2 * lin + redo)
        tr = sc.training
        # QLoRA's dequantisation is memory traffic, not FLOPs: its seconds come on top
        # (compute.dequant_seconds; the forward again under full recomputation)
        dq_f, dq_b = compute.dequant_seconds(sc.model, tr.lora, tr.tensor_parallel,
                                             compute.sustained_hbm_bytes_per_s(sc.cluster.accelerator))
        dq_b += dq_f if tr.recompute == "full" else 0.0
        out = dict(fwd_s=fwd / rate + dq_f, bwd_s=bwd / rate + dq_b,
                   head_s=(fl["head_fwd"] + fl["head_bwd"]) / rate)
    amax = fp8_amax_reduction_s(sc)
    if amax:
        out = dict(out, head_s=out["head_s"] + amax)
    return out


def fp8_amax_reduction_s(sc: Scenario) -> float:
    """Seconds per micro-batch of delayed scaling's amax reductions: after the forward
    and after the backward Transformer Engine all-reduces (MAX) the concatenated amaxes
    over the FP8 group (``quantization.py`` ``reduce_and_update_fp8_tensors``; Megatron's
    amax reduction group spans the data-, tensor- and context-parallel ranks). A few kB:
    two latency-bound ring all-reduces (:func:`simulation.collectives.ring_latency_s`), on
    the critical path (charged with the output layer, once a micro-batch). 0 for the
    other recipes (their scales are local) and for torchao."""
    fp8 = sc.training.fp8
    if fp8 is None or fp8.recipe != "delayed" or fp8_model.uses_torchao(sc.training):
        return 0.0
    lay = layout(sc)
    n = lay.data_parallel * lay.tensor_parallel
    if n <= 1:
        return 0.0
    gpn = sc.cluster.gpus_per_node
    return 2 * nccl.ring_latency_s("allreduce", n, nccl.nodes_spanned(n, min(n, gpn)))


def gathered_param_bytes(sc: Scenario, pc: ParamCount, sb: StateBytes) -> float:
    """Bytes per parameter the parameter all-gathers move (ZeRO-3/FSDP units, Megatron's
    distributed-optimizer gather): the parameter dtype's, or with FP8 primary weights
    (``training.fp8.param``, Megatron ``--fp8-param-gather``: the all-gather moves the FP8
    data) 1 byte for the FP8 GEMM weights and the 16-bit size for the rest."""
    fp8 = sc.training.fp8
    if fp8 is None or not fp8.param:
        return sb.params
    from .memory import fp8_linear_fraction
    lin = fp8_linear_fraction(sc.model, pc)
    return lin * 1 + (1 - lin) * sb.params


def compute_summary(sc: Scenario, pc: ParamCount) -> dict:
    """Which compute model ran and one layer's seconds (forward, backward with
    recomputation, the output layer's forward + backward; the work model adds its forward
    parts: ``gemm_s``, ``attention_s``, ``memory_bound_s``)."""
    ct = compute_times(sc, pc)
    work = compute.uses_work_model(sc)
    out = dict(model="work" if work else "constant", layer_fwd_s=float(ct["fwd_s"]),
               layer_bwd_s=float(ct["bwd_s"]), head_s=float(ct["head_s"]))
    if work:
        parts = ct["parts"]
        out.update(software_stack=compute.software_stack(sc), gemm_s=float(parts["gemm"]),
                   attention_s=float(parts["attention"]),
                   memory_bound_s=float(parts["memory_bound"]))
        if "fp8_cast" in parts:
            out.update(fp8_cast_fwd_s=float(parts["fp8_cast"]),
                       fp8_cast_bwd_s=float(parts["fp8_cast_bwd"]))
        if parts.get("dequant_bwd"):    # QLoRA: the frozen matrices' dequantisation
            out["dequant_s"] = float(parts["dequant"])
            out["dequant_bwd_s"] = float(parts["dequant_bwd"])
    else:
        out["compute_efficiency"] = sc.training.compute_efficiency or compute.DEFAULT_COMPUTE_EFFICIENCY
    fp8 = sc.training.fp8
    if fp8 is not None:
        acc = sc.cluster.accelerator
        g = compute.figures(acc)
        out["fp8"] = dict(
            recipe=fp8.recipe, format=fp8.format,
            implementation="torchao" if fp8_model.uses_torchao(sc.training) else "transformer_engine",
            gemm_flops=float(compute.fp8_gemm_flops(acc, g)) if work else None,
            peak_flops_fp8=float(acc.peak_flops_fp8),
            amax_reduction_s=float(fp8_amax_reduction_s(sc)),
            source="simulation/fp8.py (Transformer Engine 2.20 linear.py, layernorm_mlp.py; "
                   "torchao float8_linear.py)")
    return out


def achieved_flops(sc: Scenario, pc: ParamCount) -> float:
    """FLOP/s a layer's forward and backward reach (hardware FLOPs over compute time)."""
    fl, ct = layer_flops(sc, pc), compute_times(sc, pc)
    busy = ct["fwd_s"] + ct["bwd_s"]
    return (fl["fwd"] + fl["bwd"]) / busy if busy else 0.0


def _trained(sc: Scenario, pc: ParamCount) -> float:
    """Parameters that have gradients and optimizer states: all, or LoRA's adapters."""
    return pc.total if sc.training.lora is None else adapter_params(sc.model, sc.training.lora)["total"]


def layer_flops(sc: Scenario, pc: ParamCount) -> dict:
    """FLOPs of one layer for one micro-batch on one GPU, and of the output layer.

    A trainable matmul's backward is a data-gradient and a weight-gradient GEMM, each as
    large as the forward (backward = 2 x forward). Under LoRA every base matrix is frozen:
    autograd computes only the data gradient (the weight gradient is not asked for, Hu et
    al. 2021 Sec. 4.2), so the base matmuls' backward equals their forward; the adapters'
    two GEMMs per target (``simulation.lora.adapter_gemms``) add 2 r (d_in + d_out) FLOPs
    a token forward and twice that backward. The output head is frozen too.
    """
    m, tr = sc.model, sc.training
    b, s, h, t = tr.sequences_per_micro_batch, tr.local_seq_len, m.hidden_size, tr.tensor_parallel
    norms = m.block_norms * (2 if m.norm == "layernorm" else 1) * h
    if m.uses_mla:                                # kv_a_layernorm, q_a_layernorm
        norms += m.kv_lora_rank + (m.q_lora_rank or 0)
    matmul = max(pc.per_layer_active - norms, 0)
    if m.num_experts > 1 and m.has_architecture and m.num_layers:
        # the busiest expert-parallel rank's experts take token_factor x the mean tokens
        # (in the mean layer: the MoE blocks' share)
        matmul += ((experts.token_factor(tr) - 1) * m.moe_top_k * experts.expert_params(m)
                   * m.moe_layers / m.num_layers)
    # QK^T and PV over heads x head widths; with context parallelism the rank's s / cp
    # queries against the whole sequence, a cp-th of the work (simulation.context_parallel)
    attn = attention_core_flops(m, b, tr.seq_len) / tr.context_parallel
    if tr.flash_attention:                        # FlashAttention skips blocks outside the window
        attn *= compute.window_share(m, tr.seq_len)
    fwd = (2 * matmul * b * s + attn) / t
    kv = (m.num_kv_heads or m.num_attention_heads or 1) / (m.num_attention_heads or 1)
    f = (m.expert_ffn_size if m.num_experts > 1 else m.ffn_hidden_size) or 4 * h
    # selective_ops reruns wk, wo and one MLP matmul of h x f (compute.op_sac_recompute_s)
    ops = 2 * b * s * (h * h * kv + h * h + h * f * max(m.moe_top_k, 1)) / t
    rerun = compute.recompute_fraction(tr, m) if tr.recompute == "full" else 0.0
    mods = (getattr(tr, "recompute_modules", None) or ("core_attn",)
            if tr.recompute == "selective" else ())
    selective = attn / t if "core_attn" in mods else 0.0
    if "mla_up_proj" in mods and m.uses_mla:      # compute.selective_recompute_s
        a = m.num_attention_heads or 1
        selective += 2 * b * s * a * ((m.q_lora_rank or 0) * m.qk_head_dim + m.kv_lora_rank
                                      * (m.qk_head_dim - m.qk_rope_head_dim + m.v_head_dim)) / t
    extra = {"full": fwd * rerun, "selective": selective, "none": 0.0, "selective_ops": ops}[tr.recompute]
    head = 2 * b * s * h * (m.vocab_size or 0) / t
    if tr.lora is not None:
        adapter = sum(2 * M * N * K * c for M, N, K, c in adapter_gemms(m, tr.lora, b * s, t))
        wgrad = 2 * matmul * b * s / t             # the frozen matrices' weight gradients
        extra += adapter * rerun
        return dict(fwd=fwd + adapter, bwd=2 * fwd - wgrad + 2 * adapter + extra,
                    head_fwd=head, head_bwd=head)
    return dict(fwd=fwd, bwd=2 * fwd + extra, head_fwd=head, head_bwd=2 * head)


def attention_times(sc: Scenario, pc: ParamCount) -> tuple:
    """(forward, backward) seconds of one layer's attention core for one micro-batch on
    one GPU: the work model's flash-attention parts, or under the constant model the
    attention FLOPs of ``layer_flops`` (forward; backward twice) at its rate."""
    if compute.uses_work_model(sc):
        parts = compute.layer_times(sc, pc)["parts"]
        return float(parts["attention"]), float(parts["attention_bwd"])
    m, tr = sc.model, sc.training
    attn = 4 * tr.micro_batch_size * tr.local_seq_len * tr.seq_len * m.attention_width / tr.tensor_parallel
    rate = peak_flops(sc) * (tr.compute_efficiency or compute.DEFAULT_COMPUTE_EFFICIENCY)
    return attn / rate, 2 * attn / rate


def context_parallel_exchange(sc: Scenario, pc: ParamCount, lay: Layout, links: dict) -> dict:
    """The CP ring's K/V exchange of one micro-batch on the rank's stage
    (:func:`simulation.context_parallel.exchange` per layer, times the stage's layers):
    the per-layer figures plus ``layers``, ``exposed_s``, ``contention_s`` (the attention
    blocks' slowdown beside the transfers, NCCL holding SMs) and ``bytes`` per micro-batch.
    ``{}`` without context parallelism."""
    if lay.context_parallel <= 1:
        return {}
    fwd_s, bwd_s = attention_times(sc, pc)
    x = context_parallel.exchange(sc, lay, links, fwd_s, bwd_s,
                                  nccl.sm_share(gpu_sms(sc.cluster.accelerator)))
    n = sc.model.num_layers // lay.pipeline_parallel
    return dict(x, layers=n, layer_exposed_s=x["exposed_s"], layer_bytes=x["bytes"],
                layer_contention_s=x["contention_s"], exposed_s=n * x["exposed_s"],
                contention_s=n * x["contention_s"], bytes=n * x["bytes"], hidden_s=n * x["hidden_s"])


# What the report's model_flops (and so MFU) counts, in words beside the number.
MODEL_FLOPS_COUNTED = ("Korthikanti et al. 2022 Eq. 7 (Megatron's count): 6 FLOPs a parameter a "
                       "token (4 for a frozen LoRA base), the full s x s attention scores (no "
                       "causal halving), no recomputation")
# What the timeline shows: one micro-batch's schedule, not the whole step's.
TIMELINE_SPAN = "the step's last micro-batch, with the gradient reduction and optimizer phase"


def model_flops_per_step(sc: Scenario, pc: ParamCount, lay: Layout) -> int:
    """Model FLOPs of one optimizer step (no recomputation), for MFU: Korthikanti Eq. 7.

    Preference tuning: the policy's on twice the sequences (chosen and rejected), and the
    reference model's forward on them (a third: 2 x parameters + one attention pass a
    token) unless its log-probabilities are precomputed. LoRA: a frozen parameter needs no
    weight gradient (4 FLOPs a token, not 6), an adapter 6. A whole number: exact in integer
    arithmetic where the terms are, else rounded (a float above 2^53 would come back from a
    JSON column as another number)."""
    m, tr = sc.model, sc.training
    pref = tr.preference
    tokens = lay.global_batch_size * tr.seq_len * (2 if pref else 1)
    # 3 passes x 4*s*(heads*head_dim) per token (MLA: 2*s*heads*(qk + v)); a sliding
    # window's layers attend to its keys only (compute.window_share)
    core = attention_core_flops(m, 1, tr.seq_len)
    per_layer_attn = 3 * core // tr.seq_len if isinstance(core, int) else 3 * core / tr.seq_len
    share = compute.window_share(m, tr.seq_len)
    if share != 1.0:
        per_layer_attn *= share
    # 2 FLOPs a parameter forward, 2 for the input gradient, 2 for the weight gradient; a
    # frozen base (LoRA) needs no weight gradient: 4 a frozen parameter, 6 an adapter's
    # (the FLOPs the training needs, Korthikanti Sec. 6's MFU, not those of full training)
    if tr.lora is None:
        weights = 6 * pc.active
    else:
        from .lora import adapter_params
        weights = 4 * pc.active + 6 * adapter_params(m, tr.lora)["total"]
    total = weights * tokens + m.num_layers * per_layer_attn * tokens
    if pref is not None and pref.reference != "precomputed":
        total = total * 4 // 3 if isinstance(total, int) else total * 4 / 3
    return total if isinstance(total, int) else int(round(total))


def attention_core_flops(m, b: int, s: int) -> float:
    """Forward FLOPs of one layer's attention core over b sequences of s tokens, every
    s x s pair (Korthikanti et al. 2022 Eq. 2's 4 b s^2 h): 2 b s^2 heads x qk_head_dim
    for QK^T plus 2 b s^2 heads x v_head_dim for PV; both are heads x head_dim without
    latent attention (Gemma: 16 x 256, not hidden 3072)."""
    if m.uses_mla:
        return 2.0 * b * s * s * m.num_attention_heads * (m.qk_head_dim + m.value_head_dim)
    return 4 * b * s * s * m.attention_width


def links_for(sc: Scenario, lay: Layout) -> dict:
    """Each rank's links and its share of the node's (bytes/s).

    NVMe: ``nvme_read`` / ``nvme_write`` are the drives' datasheet rates each way and
    ``nvme`` the drives themselves, shared by reads and writes (capacity the read rate; a
    written byte weighs read / write rate, ``RankModel.nvme_write_weight``). ``cpu_adam``:
    the DDR bytes per second the rank's cores can drive through its CPU optimizer
    (:mod:`simulation.cpu_adam`: DeepSpeed CPU-Adam, or torch's AdamW under FSDP), where
    the node gives its cores. ``pcie_switch_up`` /
    ``pcie_switch_down``: the rank's share of its PCIe switch's uplink each way, where the
    node's topology puts GPUs and drives behind switches (``cluster.pcie_switch_gpus``).
    """
    c, tr = sc.cluster, sc.training
    acc, g = c.accelerator, c.gpus_per_node
    ne = tr.network_efficiency
    links = {"pcie_h2d": acc.host_link_bytes_per_s, "pcie_d2h": acc.host_link_bytes_per_s,
             "nvlink": acc.scaleup_bytes_per_s * ne,
             "nic": (c.nic_bytes_per_s / g if c.nic_bytes_per_s else 25e9) * ne
                    / network_spine_factor(sc, lay)}
    t = c.tiers
    links["ddr"] = (t["ddr"].read_bytes_per_s if "ddr" in t else 100e9) / g
    if "nvme" in t:
        links["nvme_read"] = t["nvme"].read_bytes_per_s / g
        links["nvme_write"] = t["nvme"].write_bytes_per_s / g
        links["nvme"] = t["nvme"].read_bytes_per_s / g
    if "cxl" in t:
        links["cxl"] = t["cxl"].read_bytes_per_s / g
    if c.pcie_switch_gpus and c.pcie_switch_uplink_bytes_per_s:
        # symmetric ranks: each has its share of its switch's uplink, with the drives behind it
        share = c.pcie_switch_uplink_bytes_per_s / min(c.pcie_switch_gpus, g)
        links["pcie_switch_up"] = links["pcie_switch_down"] = share
    adam = cpu_adam.adam_bytes_per_s(c, sc.strategy)
    if adam and sc.strategy.offload_optimizer != "none":
        links["cpu_adam"] = adam
    return links


def network_spine_factor(sc: Scenario, lay: Layout) -> float:
    """``collectives.spine_factor`` of the widest group whose rings cross the network (the
    sharding, data-parallel and replica groups, laid out as ``rank_model`` lays them): the
    rank's NIC carries that group's ring, so its rate is the NIC's over the factor."""
    c, t, gpn = sc.cluster, lay.tensor_parallel, sc.cluster.gpus_per_node
    if c.leaf_switch_ports is None or c.spine_oversubscription == 1.0:
        return 1.0
    shard, dp, reps = lay.shard_degree, lay.grad_reduce_degree, lay.replica_groups
    # the leaves reach hosts (their NICs); a group inside one NVLink domain uses no NIC
    widest = max((nccl.nodes_spanned(g, nccl.ranks_per_node(g, k, gpn))
                  for g, k in ((shard, t), (dp, t), (reps, t * shard))
                  if nccl.group_span(g, k, c)[1] > 1), default=1)
    return nccl.spine_factor(c, widest)


# DeepSpeed ZeRO-3 defaults (deepspeed/runtime/zero/config.py DeepSpeedZeroConfig):
# stage3_prefetch_bucket_size, reduce_bucket_size (elements).
DEEPSPEED_PREFETCH_BUCKET_ELEMENTS = 5e7
DEEPSPEED_REDUCE_BUCKET_ELEMENTS = 5e8
DEEPSPEED_MAX_LIVE_ELEMENTS = 1e9          # stage3_max_live_parameters
DEEPSPEED_MAX_REUSE_ELEMENTS = 1e9         # stage3_max_reuse_distance


def weight_tensors_per_layer(sc: Scenario, block: str = "mean") -> int:
    """Weight matrices of one block, each its own ``nn.Linear``: GPT-style blocks have a
    fused QKV, the output projection and two MLP matrices (4); Llama-style (gated MLP)
    blocks separate q, k, v, o and gate, up, down (7); Phi-3 fuses q/k/v and gate/up
    (``model.fused_projections``: qkv, o, gate_up, down = 4); each expert adds its MLP's,
    the shared experts one MLP more. Multi-head latent attention has q_proj (or q_a_proj
    and q_b_proj), kv_a_proj_with_mqa, kv_b_proj and o_proj (transformers
    ``DeepseekV3Attention``). ``block``: "first" is block 0, "mean" the mean over blocks
    (rounded), which differ where the first blocks are dense (``first_dense_layers``)."""
    return _block_count(sc.model, block, lambda m, moe: _weights(m, moe))


def _weights(m, moe: bool) -> int:
    fused = m.has_fused_projections
    if m.uses_mla:
        attn = (1 if m.q_lora_rank is None else 2) + 3
    else:
        attn = 2 if fused else 4
    mlp = (2 if fused else 3) if m.gated_mlp else 2
    if not moe:
        return attn + mlp
    return attn + m.num_experts * mlp + (mlp if m.num_shared_experts else 0)


def _block_count(m, block: str, per_block) -> int:
    """``per_block(m, moe)`` for block 0 or as the mean over the model's blocks."""
    has_experts = m.num_experts > 1
    n_moe = m.moe_layers if has_experts else 0
    if block == "first":
        return per_block(m, has_experts and n_moe == m.num_layers)
    L = max(m.num_layers or 1, 1)
    if not has_experts or n_moe == L:
        return per_block(m, has_experts)
    return round((n_moe * per_block(m, True) + (L - n_moe) * per_block(m, False)) / L)


def param_tensors_per_layer(sc: Scenario, block: str = "mean") -> int:
    """Parameter tensors of one block, each a ``torch.nn.Parameter`` with its own gradient:
    the weight matrices (``weight_tensors_per_layer``), a bias for each with
    ``linear_bias`` (with ``qkv_bias`` alone: q, k and v's three, as Qwen2), the router of
    a mixture of experts, and the block's norms (``norms_per_block``, default 2; weight,
    and bias for LayerNorm; latent attention adds kv_a_layernorm and, with q compression,
    q_a_layernorm). A GPT-3 block (fused QKV, biases, LayerNorm) has 4 + 4 + 4 = 12; a
    Qwen2 block 7 + 3 + 2 = 12; DeepSeek-V3's first (dense) block 5 + 3 + 4 norms = 12."""
    def per_block(m, moe):
        weights = _weights(m, moe)
        router = 1 if moe else 0
        norms = m.block_norms * (2 if m.norm == "layernorm" else 1)
        if m.uses_mla:
            norms += 1 if m.q_lora_rank is None else 2
        qkv_only = 1 if m.has_fused_projections else 3    # GPT's fused QKV or separate q, k, v
        biases = weights if m.linear_bias else qkv_only if m.has_qkv_bias else 0
        return weights + biases + router + norms
    return _block_count(sc.model, block, per_block)


def is_deepspeed_2021(sc: Scenario) -> bool:
    """DeepSpeed ZeRO-3 as released from v0.3.13 (March 2021) to v0.5.10 (January 2022),
    before the rewrite of v0.6.0 (PR #1453); see ``zero3_granularity``."""
    st = sc.strategy
    return st.zero_stage >= 3 and not st.is_fsdp and st.deepspeed_release == "v0.3-v0.5"


def zero3_granularity(sc: Scenario, pc: ParamCount, t: int) -> tuple:
    """(fetches per layer, units fetched ahead, reduce-scatters per layer) of ZeRO-3.

    FSDP wraps each block as one flat unit: one all-gather and one reduce-scatter per
    block, the next unit prefetched (``prefetch_depth``, default 1: FSDP1
    ``BackwardPrefetch.BACKWARD_PRE`` + ``limit_all_gathers``, FSDP2 implicit prefetch;
    Zhao et al. 2023, Sec. 3.3). DeepSpeed fetches each sub-module's parameters when it
    runs (partitioned_param_coordinator.py ``fetch_sub_module``: one all-gather per
    ``nn.Linear`` weight; tensors under ``stage3_param_persistence_threshold`` 1e5, the
    norms and biases, stay whole on every rank) and prefetches from the recorded trace
    while fewer than ``stage3_prefetch_bucket_size`` (5e7) elements are in flight, so at
    least one tensor: ceil(5e7 / tensor) tensors ahead, but only within
    ``stage3_max_live_parameters`` (1e9) gathered elements: ``max_params_to_prefetch =
    min(max_n_available - n_available, prefetch_bucket_sz)``, so a tensor of 1e9
    elements or more is never prefetched past (no overlap). Gradients collect in the IPG
    bucket (stage3.py, ``reduce_bucket_size`` 5e8 elements) and are reduce-scattered when
    it fills: ceil(layer / 5e8) a layer, at most one a tensor.

    DeepSpeed v0.3.13 - v0.5.10 (``strategy.deepspeed_release`` "v0.3-v0.5", the
    release of Narayanan et al. 2021's ZeRO-3 runs), read at tag v0.3.14:

    * no prefetch at all: the hook that resets the trace step runs after the root module's
      own pre-forward hook has counted it (stage3.py ``setup_zero_stage3_hooks`` registers
      ``_pre_forward_hook`` after ``_register_hooks_recursively``), so every later
      sub-module is compared with the trace entry before its own and
      ``PrefetchCoordinator.get_params_to_prefetch`` returns nothing ("Tracing failed.
      Prefetching is disabled"; the off-by-one named in DeepSpeed PR #1170). Each fetch
      is synchronous: ``_allgather_param`` calls ``torch.cuda.synchronize()`` before the
      all-gather and ``fetch_sub_module`` waits for it with another
      (``_synchronize_communication``), so the gather neither overlaps the previous
      sub-module's compute nor the reduce-scatters still running ("the async version is
      not async at all, because each all_gather calls torch.cuda.synchronize()",
      DeepSpeed PR #1188).
    * one reduce-scatter per parameter tensor, the small persistent ones included
      (partition_parameters.py ``_reduce_scatter_gradients`` loops over the bucket's
      parameters, one ``torch.distributed.reduce_scatter`` each): ``param_tensors_per_layer``.
    """
    st = sc.strategy
    if st.zero_stage < 3 or st.is_fsdp:
        return 1, st.prefetch_depth, 1
    n = weight_tensors_per_layer(sc)
    if is_deepspeed_2021(sc):
        return n, 0, param_tensors_per_layer(sc)
    layer = pc.per_layer / t
    tensor = layer / n
    ahead = (math.ceil(DEEPSPEED_PREFETCH_BUCKET_ELEMENTS / tensor)
             if st.prefetch_depth and tensor < DEEPSPEED_MAX_LIVE_ELEMENTS else 0)
    return n, ahead, min(n, max(1, math.ceil(layer / DEEPSPEED_REDUCE_BUCKET_ELEMENTS)))


# Seconds the CPU takes to issue one tiny kernel back to back on a stream, each launch
# waiting for none: 3.8 us a kernel of 2.9 us (NVIDIA Technical Blog, A. Gray, "Getting
# Started with CUDA Graphs", 2019: 20 short kernels launched without a sync in between,
# "3.8 us per kernel"). The floor of each of the world-size ``copy_`` kernels PyTorch's
# list collectives launch one after another on the NCCL stream (compute.KERNEL_LAUNCH_S).
# Seconds one eager view op called from Python takes, no kernel launched: torch.split of
# an 8 x 8 tensor into 2 parts (two narrows), 2.261 us in PyTorch's operator
# micro-benchmark after pytorch/pytorch PR #32194 (2020; 3.3 us before it, CPU and CUDA
# tensors alike). The cost of each ``flat_tensor.narrow`` of DeepSpeed's world-size loop.
PYTHON_VIEW_OP_S = 2.261e-6


def list_collective_copy_s(sc: Scenario, nbytes: float, kind: str, ranks: int = 1,
                           collectives: int = 1) -> float:
    """Seconds DeepSpeed v0.3-v0.5 adds to ``collectives`` collectives over ``ranks``
    ranks that together move ``nbytes`` (the whole gathered tensors or unsharded
    gradients) on the communicator's stream: it calls the list forms of
    ``torch.distributed.all_gather`` / ``reduce_scatter`` (one view per rank), which
    ProcessGroupNCCL runs on a flat buffer of its own and copies out of (all-gather) or
    into (reduce-scatter) on its NCCL stream with one ``copy_`` per rank
    (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp ``allgather``: ``for j in
    outputTensors[i]: outputTensors[i][j].copy_(outputFlattened[i][j], true)`` after the
    collective, ``reduce_scatter`` the same into ``inputFlattened`` before it; pytorch/pytorch
    PR #33924: "the rank inputs are collected into a flattened tensor and then copied from
    there to the output tensors"; DeepSpeed PR #1188: "the torch.distributed.all_gather
    will do implicit memcpy at the end of each ncclAllgather"). Those copies read and
    write the tensor, 2 x nbytes of HBM traffic, but they are ``ranks`` kernels a
    collective, each at least one launch (``KERNEL_LAUNCH_S``): a tensor's shard is
    nbytes / ranks, 0.4-1.1 MB at 1536-2240 ranks, which the HBM copies in well under a
    launch, so the copies take max(2 nbytes / HBM, collectives x ranks x launch). The
    all-gather's output is also zero-filled first (partition_parameters.py
    ``_allgather_param``: ``torch.zeros``): one more write, one kernel.

    Before each all-gather DeepSpeed builds the world-size list in Python
    (partition_parameters.py ``_allgather_param``, v0.3.14 and v0.5.0: ``for i in
    range(self.world_size): partitions.append(flat_tensor.narrow(0, partition_size * i,
    partition_size))``) after ``torch.cuda.synchronize()``, so the GPU waits for it:
    ``ranks`` x ``PYTHON_VIEW_OP_S`` a gather. The reduce-scatter's loop of the same
    shape (``_reduce_scatter_gradient``: ``param.grad.view(-1).narrow`` a rank) runs in
    the gradient hook while the sub-module's backward kernels are still queued: not added.
    Also not counted: the ``torch.distributed.get_rank(group=...)`` call in each
    iteration of the gather loop.

    Taken over the layer's collectives at once (max of sums, not the sum of each tensor's
    max: the same while every tensor is launch-bound or every one HBM-bound). Current
    DeepSpeed uses the flat ``*_base`` / ``*_into_tensor`` forms (PR #1453): 0."""
    if not is_deepspeed_2021(sc):
        return 0.0
    hbm = sc.cluster.accelerator.hbm_bytes_per_s
    gather = kind == "allgather"
    fill_s = nbytes / hbm if gather else 0.0
    views_s = collectives * ranks * PYTHON_VIEW_OP_S if gather else 0.0
    return views_s + fill_s + max(2 * nbytes / hbm, collectives * ranks * KERNEL_LAUNCH_S)


def repeat_kv_s(sc: Scenario) -> dict:
    """Seconds of HBM traffic of GQA's materialised K/V repeat in one block's forward
    (``fwd_s``) and backward (``bwd_s``) per micro-batch (``training.repeat_kv``).

    torchtitan (torchtitan/models/llama/model.py at 9dec370, ``Attention.forward``) and
    Hugging Face's eager / SDPA attention (modeling_llama.py ``repeat_kv``) repeat each K/V
    head ``n_rep = heads / kv_heads`` times with ``expand`` + ``reshape`` before
    ``F.scaled_dot_product_attention`` (no ``enable_gqa``): the reshape of an expanded view
    copies, reading the K and V of ``kv`` heads and writing them at ``heads``; its backward
    sums the repeated gradients back (read ``heads``, write ``kv``). Bytes per block:
    ``2 T d (kv + heads) b_a`` each way (K and V; ``T`` this rank's tokens, ``d`` head dim,
    heads over TP, ``b_a`` the activation bytes), plus the forward's again in backward
    where it is recomputed (``full``: the checkpointed share; ``selective_ops``: torchtitan's
    op policy saves only ``_save_list``'s mm / SDPA outputs, so SDPA's repeated inputs are
    rerun). 0 without GQA (``n_rep == 1`` returns x) or with ``repeat_kv`` off. Over the
    sustained HBM bandwidth (``compute.sustained_hbm_bytes_per_s``)."""
    m, tr = sc.model, sc.training
    heads = m.num_attention_heads or 1
    kv = m.num_kv_heads or heads
    if not tr.repeat_kv or kv >= heads:
        return dict(fwd_s=0.0, bwd_s=0.0)
    d = m.hidden_size / heads
    tok = tr.sequences_per_micro_batch * tr.local_seq_len
    b_a = 4 if tr.precision == "fp32" else 2
    once = 2 * tok * d * (kv + heads) / tr.tensor_parallel * b_a / compute.sustained_hbm_bytes_per_s(
        sc.cluster.accelerator)
    rerun = {"full": compute.recompute_fraction(tr, m), "selective_ops": 1.0}.get(tr.recompute, 0.0)
    return dict(fwd_s=once, bwd_s=once * (1 + rerun))


def fsdp2_copy_s(sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes) -> dict:
    """Seconds of HBM traffic FSDP2 (``strategy.fsdp_version`` 2, ``fully_shard``) adds to
    one block's forward (``fwd_s``) and backward (``bwd_s``) and to the output layer
    (``head_s``: the embedding and output units) per micro-batch, on the compute stream.

    FSDP2 all-gathers a unit's per-parameter shards into one flat buffer and copies them out
    into each parameter's own unsharded tensor (torch/distributed/fsdp/_fully_shard/
    _fsdp_collectives.py ``foreach_all_gather_copy_out``: ``current_stream().wait_event(
    all_gather_event)``, then ``torch.ops.fsdp.split_with_sizes_copy`` on the current
    stream): a read and a write of the unit in its all-gather dtype, exposed, once in forward
    and once in backward (``reshard_after_forward=True``, the default, gathers it again).
    Before each reduce-scatter ``foreach_reduce`` packs the unsharded gradients into the
    reduce-scatter input (``foreach_reduce_scatter_copy_in``: ``torch._chunk_cat`` into a
    buffer of ``reduce_dtype``, on ``current_stream`` before ``reduce_scatter_stream.
    wait_stream(current_stream)``): a read of the gradients in the parameter dtype and a
    write in the reduce dtype (``reduce_bytes_per_param``), exposed, in backward. The
    all-gather copy-in (``all_gather_copy_in``) copies only this rank's shard on its own
    ``all_gather_copy_in_stream``, beside compute: not counted. FSDP1
    (``FullyShardedDataParallel``) gathers straight into the flat parameter its views
    read (``_flat_param.py``): 0, as for every other strategy.

    Bytes: ``2 u b_p`` per copy-out and ``u_g (b_p + b_r)`` per copy-in, with ``u`` the
    unit's parameters on this rank (a block over TP / ETP x EP, ``experts.
    layer_params_per_rank``), ``b_p`` its all-gather bytes per parameter, ``u_g`` those
    with gradients (LoRA: the adapters), ``b_r`` the reduce bytes; the embedding and output
    layer in the root unit, gathered once (the root is not resharded after forward:
    _fsdp_state.py ``post_forward_mesh_info = None``); over the sustained HBM
    bandwidth (``compute.sustained_hbm_bytes_per_s``)."""
    st = sc.strategy
    if not st.is_fsdp or st.fsdp_version != 2:
        return dict(fwd_s=0.0, bwd_s=0.0, head_s=0.0)
    m, tr, t = sc.model, sc.training, lay.tensor_parallel
    b_p = min(gathered_param_bytes(sc, pc, sb), unit_param_bytes(sc, pc, sb))
    b_r = reduce_bytes_per_param(sc, sb)
    unit = experts.layer_params_per_rank(m, pc.per_layer, lay, mean=True)
    head = (pc.embedding + pc.output_head) / t
    if tr.lora is not None:
        ad = adapter_params(m, tr.lora)
        unit_g, head_g = ad["per_layer"] / t, 0.0
    else:
        unit_g, head_g = unit, head
    hbm = compute.sustained_hbm_bytes_per_s(sc.cluster.accelerator)
    out = 2 * unit * b_p / hbm
    return dict(fwd_s=out, bwd_s=out + unit_g * (b_p + b_r) / hbm,
                head_s=(2 * head * b_p + head_g * (b_p + b_r)) / hbm)


def deepspeed_regather_fraction(sc: Scenario, pc: ParamCount, t: int) -> float:
    """Share of a layer's tensors DeepSpeed all-gathers a third time with full recomputation.

    In backward the checkpointed block runs its forward again (tensors 0..n-1) and then its
    backward (n-1..0). After each sub-module DeepSpeed releases its parameters unless they
    recur within ``stage3_max_reuse_distance`` (1e9) elements of the upcoming trace
    (partitioned_param_coordinator.py ``__params_to_release``): the trace is walked module
    by module and stops once 1e9 elements were passed. Tensor j of n (each ``layer / n``)
    recurs after 2 (n - 1 - j) tensors, so it is released and gathered again for its
    backward when 2 (n - 1 - j) x tensor >= 1e9. FSDP keeps the unit gathered through
    the unit's recompute and backward: 0. DeepSpeed v0.3-v0.5 keeps nothing: its reuse
    distance fails the same trace check as its prefetch (stage3.py
    ``get_reuse_distance_in_numel`` returns 1e12 on a mismatch, ``_keep_for_later`` is
    false), so every tensor is gathered again: 1.
    """
    st = sc.strategy
    if st.zero_stage < 3 or st.is_fsdp or sc.training.recompute != "full":
        return 0.0
    n = weight_tensors_per_layer(sc)
    tensor = pc.per_layer / t / n
    frac = compute.recompute_fraction(sc.training, sc.model)    # only checkpointed layers rerun
    if is_deepspeed_2021(sc):
        return frac
    return frac * sum(2 * (n - 1 - j) * tensor >= DEEPSPEED_MAX_REUSE_ELEMENTS for j in range(n)) / n


def reduce_bytes_per_param(sc: Scenario, sb: StateBytes) -> int:
    """Bytes per parameter of the gradients a framework reduces.

    DeepSpeed ZeRO reduces in the model's 16-bit dtype unless ``grad_accum_dtype`` /
    ``communication_data_type`` are set (engine.py ``get_data_types``; stage3.py
    accumulates into a buffer of ``gradient_accumulation_dtype``); FSDP's
    ``MixedPrecision(reduce_dtype=None)`` reduces in ``param_dtype`` (PyTorch docs).
    Data parallelism without sharding with bf16 reduces fp32 gradients: Megatron forces
    ``accumulate_allreduce_grads_in_fp32`` for ``--bf16`` (megatron/training/arguments.py,
    grads in an fp32 ``main_grad`` buffer), and torch DDP under bf16 autocast holds fp32
    parameters and gradients. Megatron's distributed optimizer reduce-scatters the same
    fp32 ``main_grad`` buffer (``DistributedDataParallelConfig.grad_reduce_in_fp32 =
    args.accumulate_allreduce_grads_in_fp32``, megatron/training/training.py, core_r0.8.0).
    fp16 and fp32 keep the state's gradient bytes.
    """
    if sc.training.precision == "bf16" and (sc.strategy.zero_stage == 0
                                            or sc.strategy.kind == "megatron_dist_opt"):
        return 4
    return sb.grads


def gradient_reduction(sc: Scenario, nbytes: float, n: int, n_nodes: int,
                       bus_bytes_per_s: float) -> tuple:
    """(algorithm, alpha_s, bytes one rank moves) of the data-parallel gradient reduction
    of ``nbytes`` over ``n`` ranks on ``n_nodes`` nodes, without sharded gradients
    (ZeRO stage 0/1).

    Megatron's distributed optimizer reduce-scatters the gradient buffer, each rank
    keeping the shard its optimizer updates (Megatron-LM core_r0.8.0
    megatron/core/distributed/param_and_grad_buffer.py ``Bucket.start_grad_sync``:
    ``torch.distributed._reduce_scatter_base`` when ``use_distributed_optimizer``, else
    ``all_reduce``): a ring reduce-scatter, (n-1)/n of the buffer a rank (nccl-tests
    PERFORMANCE.md), half an all-reduce's 2(n-1)/n; the updated parameters are
    all-gathered after the optimizer (or in the next forward, ``overlap_param_gather``).
    Everything else all-reduces: ring or tree, whichever NCCL picks
    (``collectives.all_reduce_choice``).
    """
    if sc.strategy.kind == "megatron_dist_opt":
        return ("ring", nccl.ring_latency_s("reduce_scatter", n, n_nodes),
                nccl.ring_volume_factor("reduce_scatter", n) * nbytes)
    return nccl.all_reduce_choice(nbytes, n, n_nodes, bus_bytes_per_s, sc.cluster.nvls)


def tp_allreduce_factor(sc: Scenario, t: int, tp_nodes: int) -> float:
    """Bytes one rank moves per byte of a tensor-parallel all-reduce buffer, at the NVLink
    rate (``RankModel.tp_allreduce_factor``; 0: the ring's 2(t-1)/t). Without sequence
    parallelism Megatron all-reduces the layer's activations (mappings.py
    ``_reduce``: ``torch.distributed.all_reduce``), which NCCL runs as NVLS inside a node
    whose NVSwitches reduce (``cluster.nvls``, collectives.nvls_allreduce_bytes); sequence
    parallelism's all-gathers and reduce-scatters stay rings."""
    if sc.cluster.nvls and not sc.training.sequence_parallel and t > 1 and tp_nodes <= 1:
        return nccl.nvls_allreduce_bytes(1.0, t)
    return 0.0


def rank_model(sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes) -> RankModel:
    m, tr, st, c = sc.model, sc.training, sc.strategy, sc.cluster
    ct = compute_times(sc, pc)
    fc = fsdp2_copy_s(sc, pc, lay, sb)      # FSDP2's copy-out / copy-in, on the compute stream
    if fc["fwd_s"]:
        ct = dict(ct, **{k: ct[k] + fc[k] for k in ("fwd_s", "bwd_s", "head_s")})
    rk = repeat_kv_s(sc)                    # GQA's materialised K/V repeat (torchtitan, HF)
    if rk["fwd_s"]:
        ct = dict(ct, fwd_s=ct["fwd_s"] + rk["fwd_s"], bwd_s=ct["bwd_s"] + rk["bwd_s"])
    t, p = lay.tensor_parallel, lay.pipeline_parallel
    sbh = tr.sequences_per_micro_batch * tr.local_seq_len * m.hidden_size      # this CP rank's tokens
    links = links_for(sc, lay)
    # Where each group's ranks sit (TP innermost, then context and data parallel, whose
    # ranks reduce the gradients together; collectives module)
    # ("nodes" here are NVLink domains: collectives.group_span)
    shard, dp, reps = lay.shard_degree, lay.grad_reduce_degree, lay.replica_groups
    shard_k, shard_nodes = nccl.group_span(shard, t, c)
    dp_k, dp_nodes = nccl.group_span(dp, t, c)
    rep_k, rep_nodes = nccl.group_span(reps, t * shard, c)
    tp_nodes = nccl.group_span(t, 1, c)[1]
    # The graph fetches a layer at a time with the alphas of all its collectives: for
    # tensors of equal size, one tensor ahead and a layer ahead take the same time in the
    # steady state (sum over the U tensors of max(compute/U, fetch/U) = max(compute,
    # fetch)), at a U-th of the tasks; no prefetch stays no prefetch.
    units, ahead, n_rs = zero3_granularity(sc, pc, t)
    layers_ahead = max(1, ahead // units) if ahead else 0
    grad_bytes = reduce_bytes_per_param(sc, sb)
    trained = pc.total
    if tr.lora is not None:
        # LoRA: only the adapters have gradients to reduce and states to update
        # (simulation/lora.py); the frozen base is still gathered under ZeRO-3 (unit_params).
        # grad_bytes becomes bytes of adapter gradient per base parameter of a layer.
        ad = adapter_params(m, tr.lora)
        grad_bytes = grad_bytes * ad["per_layer"] / pc.per_layer
        trained = ad["total"]
    grad_layer_bytes = experts.layer_params_per_rank(m, pc.per_layer, lay, mean=True) * grad_bytes
    dp_bus = nccl.bus_bandwidth(dp_k, dp_nodes > 1, links["nvlink"], links["nic"])
    _, dp_ar_lat, dp_ar_bytes = gradient_reduction(sc, grad_layer_bytes, dp, dp_nodes, dp_bus)
    slow = pipeline_stage_times(sc, lay, ct) if len(set(pipeline_stage_layers(sc))) > 1 else dict(
        layers=m.num_layers // p, head=True)           # an even split: the last stage
    kw = dict(
        layers=slow["layers"], fwd_s=ct["fwd_s"], bwd_s=ct["bwd_s"],
        # The last pipeline stage also runs the output layer and the loss (Megatron-LM
        # get_model: post_process on is_pipeline_last_stage; gpt_model.py
        # post_language_model_processing), and the slowest stage paces 1F1B: the rank
        # stands for that stage (pipeline_stage_times), with the head when it is the last.
        head_s=ct["head_s"] if slow["head"] else 0.0,
        # with expert parallelism a block's experts are over ETP x EP (experts.py); the
        # states a rank updates stay trained / (t p shard) when sharded (EP is carved out
        # of the data-parallel ranks), its own experts' count when not; DualPipe: two
        # stages' states on each rank
        unit_params=experts.layer_params_per_rank(m, pc.per_layer, lay, mean=True),
        params_per_rank=(experts.rank_params(m, trained, lay)
                         if st.zero_stage == 0 and tr.lora is None else trained / (t * p))
        * (2 if sc.training.pipeline_schedule == "dualpipe" else 1),
        # FP8 primary weights gathered as 1 B (gathered_param_bytes); ZeRO-3 / FSDP gather a
        # quantised base (QLoRA) as its packed storage (memory.unit_param_bytes)
        param_bytes=min(gathered_param_bytes(sc, pc, sb),
                        unit_param_bytes(sc, pc, sb) if st.zero_stage == 3 else sb.params),
        grad_bytes=grad_bytes,
        optimizer_state_bytes=sb.master_weights + sb.optimizer_states,
        # the CPU optimizer the offload runs (DeepSpeed CPU-Adam, or torch's AdamW under FSDP)
        cpu_optimizer_bytes_per_param=cpu_adam.bytes_per_param(cpu_adam.implementation(st)),
        cpu_optimizer_name=_CPU_OPTIMIZER_TASK[cpu_adam.implementation(st)],
        shard=shard, shard_link="nic" if shard_nodes > 1 else "nvlink",
        replicas=reps, dp=dp, dp_link="nic" if dp_nodes > 1 else "nvlink",
        replica_link="nic" if rep_nodes > 1 else "nvlink", replica_per_node=rep_k,
        gpus_per_node=nccl.scaleup_gpus(c),      # the NVLink domain: a ring's hops per "node"
        stage=st.zero_stage, tp=t, tp_bytes=2.0 * sbh,
        # a checkpointed layer's rerun forward has its 2 TP all-reduces again: the mean
        # over the stage's layers, to the nearest whole (the graph's layers are alike)
        bwd_allreduces=2 + round(2 * compute.recompute_fraction(tr, m)) if tr.recompute == "full" else 2,
        act_ckpt_bytes=2.0 * sbh / t, offload_params=st.offload_params,
        offload_optimizer=st.offload_optimizer, offload_activations=st.offload_activations,
        prefetch_depth=layers_ahead, miss_rate=st.prefetch_miss_rate,
        hbm_bytes_per_s=compute.sustained_hbm_bytes_per_s(c.accelerator),
        shard_per_node=shard_k, dp_per_node=dp_k,
        gather_latency_s=(units * nccl.ring_latency_s("allgather", shard, shard_nodes)
                          + list_collective_copy_s(sc, pc.per_layer / t * unit_param_bytes(sc, pc, sb),
                                                   "allgather", shard, units)),
        reduce_latency_s=(n_rs * nccl.ring_latency_s("reduce_scatter", shard, shard_nodes)
                          + list_collective_copy_s(sc, grad_layer_bytes, "reduce_scatter", shard, n_rs)),
        dp_allreduce_latency_s=dp_ar_lat,
        dp_allreduce_factor=dp_ar_bytes / grad_layer_bytes if grad_layer_bytes else 0.0,
        dp_reduce_scatter=st.kind == "megatron_dist_opt",
        dp_gather_latency_s=nccl.ring_latency_s("allgather", dp, dp_nodes),
        replica_latency_s=nccl.ring_latency_s("allreduce", reps, rep_nodes),
        tp_latency_s=nccl.ring_latency_s("allreduce", t, tp_nodes),
        bwd_fetch_factor=1.0 + deepspeed_regather_fraction(sc, pc, t),
        sync_fetch=is_deepspeed_2021(sc),
        nvme_write_weight=(c.tiers["nvme"].read_bytes_per_s / c.tiers["nvme"].write_bytes_per_s
                           if "nvme" in c.tiers else 1.0),
        overlap_grad_reduce=int(tr.overlap_grad_reduce),
        overlap_param_gather=int(tr.overlap_param_gather),
        tp_comm_overlap=int(tr.tp_comm_overlap and t > 1),
        tp_allreduce_factor=tp_allreduce_factor(sc, t, tp_nodes))
    # the contention terms read the other fields: a plain namespace of them (no second
    # dataclass built per evaluation)
    probe = SimpleNamespace(**{**_RANK_DEFAULTS, **kw})
    return RankModel(**kw, **contention_fields(probe, links, nccl.sm_share(gpu_sms(c.accelerator))))


_RANK_DEFAULTS = {f.name: f.default for f in dataclasses.fields(RankModel)
                  if f.default is not dataclasses.MISSING}


def gpu_sms(acc) -> int | None:
    """The accelerator's SMs (compute units): its own ``sm_count``, else its preset's figures."""
    if acc.sm_count:
        return acc.sm_count
    g = compute.figures(acc)
    return g.sms if g else None


def contention_fields(r: RankModel, links: dict, share: float) -> dict:
    """``RankModel``'s ``*_contention_s``: how much longer one compute unit of the graph
    (``stepgraph.build``) runs because the collectives issued beside it hold ``share`` of
    the SMs (``collectives.sm_contention_s``), each collective at its idle-network time
    (alpha + V / bus bandwidth, ``collectives.bus_bandwidth``):

    * forward, every micro-batch: ZeRO-3's prefetched all-gather of the next unit (none
      without prefetch: the fetch then runs before the compute, not beside it) and, with
      ``tp_comm_overlap``, the layer's two TP collectives;
    * backward, every micro-batch: the backward fetch, ZeRO-2/3's reduce-scatters of the
      layer's gradients and the TP collectives;
    * the last micro-batch adds its gradient reduction (the bucketed data-parallel
      all-reduce / reduce-scatter with ``overlap_grad_reduce``, HSDP's all-reduce across
      replicas) to the backward and ``overlap_param_gather``'s share to the forward.

    Offload copies (copy engines) hold no SMs. Units: seconds per unit."""
    zero3 = r.stage >= 3
    n = r.units_per_layer if zero3 else 1

    def t(volume, link, per_node, latency_s):
        if volume <= 0:
            return 0.0
        bus = nccl.bus_bandwidth(per_node or r.gpus_per_node, link == "nic", links["nvlink"], links["nic"])
        return latency_s + volume / bus

    tp_f = tp_b = 0.0
    if r.tp > 1 and r.tp_comm_overlap:
        volume = (r.tp_allreduce_factor * r.tp_bytes if r.tp_allreduce_factor > 0
                  else ring("allreduce", r.tp_bytes, r.tp))
        one = t(volume, "nvlink", 0, r.tp_latency_s)
        tp_f, tp_b = 2 * one / n, r.bwd_allreduces * one / n
    fetch_f = fetch_b = 0.0
    if zero3 and r.prefetch_depth > 0:
        fetch_f = t(ring("allgather", r.unit_params / n * r.param_bytes, r.shard), r.shard_link,
                    r.shard_per_node, r.gather_latency_s)
        fetch_b = fetch_f * r.bwd_fetch_factor
    grad_bytes = r.unit_params * r.grad_bytes
    rs = last_b = last_f = 0.0
    if r.stage >= 2:
        n_rs = r.rs_per_layer if zero3 else 1
        rs = n_rs * t(ring("reduce_scatter", grad_bytes / n_rs, r.shard), r.shard_link,
                      r.shard_per_node, r.reduce_latency_s) / n
        if r.replicas > 1:
            last_b = t(ring("allreduce", grad_bytes / r.shard, r.replicas), r.replica_link,
                       r.replica_per_node, r.replica_latency_s) / n
    elif r.dp > 1 and r.overlap_grad_reduce:
        volume = (r.dp_allreduce_factor * grad_bytes if r.dp_allreduce_factor > 0
                  else ring("allreduce", grad_bytes, r.dp))
        last_b = t(volume, r.dp_link, r.dp_per_node, r.dp_allreduce_latency_s)
    if r.overlap_param_gather and r.stage in (1, 2) and r.dp > 1:
        last_f = t(ring("allgather", r.params_per_rank * r.param_bytes / max(r.layers, 1), r.dp),
                   r.dp_link, r.dp_per_node, r.dp_gather_latency_s)
    fwd_u, bwd_u = r.fwd_s / n, r.bwd_s / n
    c = nccl.sm_contention_s
    return dict(fwd_contention_s=c(fwd_u, tp_f + fetch_f, share),
                bwd_contention_s=c(bwd_u, tp_b + fetch_b + rs, share),
                fwd_contention_last_s=c(fwd_u, tp_f + fetch_f + last_f, share),
                bwd_contention_last_s=c(bwd_u, tp_b + fetch_b + rs + last_b, share))


_CATEGORY_OF_LABEL = np.array([BREAKDOWN_KEYS.index(CATEGORY.get(label, "exposed_comm"))
                               for label in LABELS], dtype=np.int32)
_STALL = BREAKDOWN_KEYS.index("stall")


def attribute_reference(a: dict, sched) -> dict:
    """Split the makespan into GPU compute and the causes of each GPU idle gap.

    ``a`` is a graph from ``stepgraph.graph_arrays``. The GPU's tasks are taken in start
    order; the idle gap before each, since the GPU last worked, is split along the chain
    of what it waited for: its latest-ending dependency (ties: higher id), that task's
    latest-ending dependency, and so on back. Each task on the chain is charged, to its
    label's category (``CATEGORY``), the part of the gap from its own latest dependency's
    end to where the later part begins: its run time and its wait to start. So a
    parameter copy that waited for CPU Adam that waited for the gradient copy charges
    offload, CPU optimizer and offload in turn, and a zero-length sync point charges
    nothing. Plain compute on the chain hands its part to the next task behind it; a part
    with nothing behind it is a stall. Idle time after the GPU's last task is split the
    same way from whatever ended last. The specification of the C version
    (``attribute``); the categories sum to the makespan.
    """
    out = dict.fromkeys(BREAKDOWN_KEYS, 0.0)
    kind, label, stream = a["kind"], a["label"], a["stream"]
    ptr, idx = a["dep_ptr"], a["dep_idx"]
    start, end = sched.start_s, sched.end_s
    deps = [idx[ptr[i]:ptr[i + 1]].tolist() for i in range(len(kind))]
    comp = sorted((i for i in range(len(kind)) if kind[i] == COMPUTE and stream[i] == a["gpu_stream"]),
                  key=lambda i: (start[i], i))
    plain = LABEL_CODE["compute"]

    def latest(i):
        return max(deps[i], key=lambda d: (end[d], d))

    def charge(c, lo, hi):
        """Split the idle interval [lo, hi] along the chain from ``c`` back."""
        owed = 0.0
        for _ in range(10_000):
            seg_lo = max(lo, end[latest(c)]) if deps[c] else lo
            part = hi - seg_lo if hi > seg_lo else 0.0
            if kind[c] != COMPUTE or label[c] != plain:
                out[BREAKDOWN_KEYS[_CATEGORY_OF_LABEL[label[c]]]] += owed + part
                owed = 0.0
            else:
                owed += part
            hi = seg_lo
            if hi <= lo or not deps[c]:
                break
            c = latest(c)
        out["stall"] += owed + (hi - lo if hi > lo else 0.0)

    t = 0.0
    for i in comp:
        if start[i] - t > 1e-15 and deps[i]:
            charge(latest(i), t, start[i])
        out[BREAKDOWN_KEYS[_CATEGORY_OF_LABEL[label[i]]]] += end[i] - start[i]
        t = max(t, end[i])
    if sched.makespan_s - t > 1e-15 and len(kind):
        charge(int(np.argmax(end)), t, sched.makespan_s)
    return {k: float(v) for k, v in out.items()}


def attribute(a: dict, sched, engine: str = "auto") -> dict:
    """``attribute_reference`` in C when the extension is built (same result)."""
    c = c_module()
    if engine == "python" or c is None:
        return attribute_reference(a, sched)
    seconds = c.attribute(a["kind"], a["stream"], a["label"], a["dep_ptr"], a["dep_idx"],
                                    sched.start_s, sched.end_s, float(sched.makespan_s),
                                    a["gpu_stream"], _CATEGORY_OF_LABEL, len(BREAKDOWN_KEYS), _STALL)
    return dict(zip(BREAKDOWN_KEYS, seconds))


def pipeline_p2p_s(sc: Scenario, lay: Layout, links: dict) -> float:
    """Seconds per micro-batch a pipeline stage spends on point-to-point transfers.

    Megatron-LM sends each micro-batch's output activation ``[s, b, h]`` (16-bit) to the
    next stage in forward and its gradient back in backward, once per chunk boundary:
    ``2 v`` transfers a micro-batch with ``v`` interleaved chunks (Narayanan et al. 2021,
    Sec. 2.2.2: interleaving multiplies the communication by v). Each waits for its
    transfer (p2p_communication.py ``_communicate``: ``batch_isend_irecv``, ``wait``, then
    ``torch.cuda.synchronize``), so it is on the critical path. With the scatter/gather
    optimisation (Sec. 4.1, on by default) each of the t tensor-parallel ranks sends a t-th
    over its own link and the receivers all-gather it over NVLink; with sequence
    parallelism the tensor is already split t ways. Ranks are ordered TP, then DP, then
    PP (megatron/mpu/initialize.py), so neighbouring stages are ``num_gpus / p`` ranks
    apart: in another NVLink domain once that reaches a domain (a host on DGX, the 72-GPU
    rack on GB200 NVL72: ``pipeline_crosses_domains``), and the slice crosses the rank's NIC.
    Each transfer pays one NCCL step's alpha (``collectives.ring_latency_s`` of two ranks).
    """
    p = lay.pipeline_parallel
    if p <= 1:
        return 0.0
    m, tr, c = sc.model, sc.training, sc.cluster
    t, v = lay.tensor_parallel, tr.interleave_stages or 1
    act_bytes = 2.0 * tr.sequences_per_micro_batch * tr.local_seq_len * m.hidden_size
    cross = pipeline_crosses_domains(sc, lay)
    send_s = (nccl.ring_latency_s("allgather", 2, 2 if cross else 1)
              + act_bytes / t / links["nic" if cross else "nvlink"])
    gather_s = 0.0
    if t > 1 and not tr.sequence_parallel:
        gather_s = (nccl.ring_latency_s("allgather", t, nccl.group_span(t, 1, c)[1])
                    + (t - 1) / t * act_bytes / links["nvlink"])
    return 2 * v * (send_s + gather_s)


def pipeline_crosses_domains(sc: Scenario, lay: Layout) -> bool:
    """Whether neighbouring pipeline stages, ``num_gpus / p`` ranks apart, sit in different
    NVLink domains (``collectives.scaleup_gpus``): once a stage fills one, which on DGX is
    once it fills a host and on GB200 NVL72 once it fills the 72-GPU rack. (A stage that
    does not divide the domain puts only some neighbours across it; counted as inside.)"""
    return lay.num_gpus // lay.pipeline_parallel >= nccl.scaleup_gpus(sc.cluster)


def pipeline_p2p_bytes(sc: Scenario, lay: Layout) -> dict:
    """Bytes per micro-batch a rank's pipeline transfers put on each link (``pipeline_p2p_s``):
    its slices over the link between stages, the all-gathered rest over NVLink."""
    p = lay.pipeline_parallel
    if p <= 1:
        return {}
    m, tr, c = sc.model, sc.training, sc.cluster
    t, v = lay.tensor_parallel, tr.interleave_stages or 1
    act_bytes = 2.0 * tr.sequences_per_micro_batch * tr.local_seq_len * m.hidden_size
    out = {"nic" if pipeline_crosses_domains(sc, lay) else "nvlink": 2 * v * act_bytes / t}
    if t > 1 and not tr.sequence_parallel:
        out["nvlink"] = out.get("nvlink", 0.0) + 2 * v * (t - 1) / t * act_bytes
    return out


def grad_accumulation_s(sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes) -> float:
    """Seconds one micro-batch after the first spends adding its gradients to the buffer.

    DDP and ZeRO-1 keep every gradient of the rank's stage: without gradient-accumulation
    fusion each parameter's new gradient (parameter dtype) is read and added to the buffer
    (``reduce_bytes_per_param``: read and written), a memory-bound pass at the sustained
    HBM bandwidth (``compute.sustained_hbm_bytes_per_s``)
    (PyTorch autograd AccumulateGrad ``grad += new``; Megatron-LM 2021
    ``param.main_grad.add_(param.grad.data)`` in megatron/model/distributed.py). ZeRO-2/3
    reduce-scatter each micro-batch's gradients instead (not counted here).
    """
    if sc.training.gradient_accumulation_fusion or sc.strategy.zero_stage >= 2:
        return 0.0
    params = _trained(sc, pc) / (lay.tensor_parallel * lay.pipeline_parallel)
    per_param = sb.params + 2 * reduce_bytes_per_param(sc, sb)
    return params * per_param / compute.sustained_hbm_bytes_per_s(sc.cluster.accelerator)


def ddp_bucket_copy_s(sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes) -> float:
    """Seconds torch DDP spends copying gradients into its all-reduce buckets and back.

    With ``gradient_as_bucket_view=False`` (its default) DDP's reducer copies each ready
    gradient into its bucket and the reduced bucket back into the gradient (PyTorch
    DistributedDataParallel docs: the option "avoids the overhead of copying between
    gradients and allreduce communication buckets"): read and write of the gradients
    twice, once a step (the synchronised micro-batch), at the sustained HBM bandwidth.
    Data parallelism with bucketed overlap only (``overlap_grad_reduce``, stage 0, DP > 1).
    """
    tr = sc.training
    if sc.strategy.zero_stage != 0 or lay.grad_reduce_degree <= 1 or not tr.overlap_grad_reduce:
        return 0.0
    params = _trained(sc, pc) / (lay.tensor_parallel * lay.pipeline_parallel)
    return params * 4 * reduce_bytes_per_param(sc, sb) / compute.sustained_hbm_bytes_per_s(sc.cluster.accelerator)


def optimizer_extra_s(sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes) -> float:
    """Seconds of Megatron's mixed-precision optimizer passes besides the Adam update.

    The step graph counts the fused Adam update (``stepgraph.ADAM_BYTES_PER_PARAM``: read
    gradient, master, moments; write them and the 16-bit copy). Megatron-LM's
    Float16OptimizerWithFloat16Params.step (megatron/optimizer/optimizer.py) also, per
    parameter of the rank: with fp16, copies the 16-bit gradients to fp32 main gradients
    (read 2 B, write 4: ``_copy_model_grads_to_main_grads``) and unscales them with the
    inf check (read 4, write 4: ``_amp_foreach_non_finite_check_and_unscale_``); with bf16
    the fp32 ``main_grad`` buffer is used as it is and zeroed at the next step (write 4);
    both take the gradient norm for clipping (read 4: ``multi_tensor_l2norm``) and read the
    fp32 master weights again to copy them to the model (read 4:
    ``_copy_main_params_to_model_params``). At the sustained HBM bandwidth; other
    frameworks: 0.
    """
    tr = sc.training
    if tr.framework != "megatron" or tr.precision not in ("fp16", "bf16") or sc.strategy.offload_optimizer != "none":
        return 0.0
    per_param = (6 + 8 if tr.precision == "fp16" else 4) + 4 + 4
    params = _trained(sc, pc) / (lay.tensor_parallel * lay.pipeline_parallel * lay.shard_degree)
    return params * per_param / compute.sustained_hbm_bytes_per_s(sc.cluster.accelerator)


def embedding_tp_allreduce_s(sc: Scenario, lay: Layout, links: dict) -> float:
    """Seconds per micro-batch of the tensor-parallel all-reduces around the vocabulary.

    Megatron's vocabulary-parallel embedding sums its partial lookups over the TP group in
    forward (megatron/model/language_model.py Embedding: VocabParallelEmbedding ends in
    ``reduce_from_tensor_model_parallel_region``), and the output layer's input enters
    the TP region through ``copy_to_tensor_model_parallel_region``, whose backward
    all-reduces its gradient (``parallel_lm_logits``): one all-reduce of ``2 b s h``
    bytes each, on the critical path like the layers' (with sequence parallelism an
    all-gather and a reduce-scatter of the same volume). The rank stands for the last
    stage: the output layer's one, and with a single stage the embedding's too.
    """
    t = lay.tensor_parallel
    if t <= 1 or not sc.model.vocab_size:
        return 0.0
    m, tr, c = sc.model, sc.training, sc.cluster
    n = 2 if lay.pipeline_parallel == 1 else 1
    nodes = nccl.group_span(t, 1, c)[1]
    bus = links["nvlink"] if nodes == 1 else links["nic"]
    nbytes = 2.0 * tr.sequences_per_micro_batch * tr.local_seq_len * m.hidden_size
    return n * nccl.collective_time_s("allreduce", nbytes, t, nodes, bus)


def reference_forward_s(sc: Scenario, pc: ParamCount, lay: Layout, links: dict) -> dict:
    """Seconds of one micro-batch's reference-model forward under preference tuning
    (``training.preference``), and the part of them that is communication.

    TRL's ``DPOTrainer._compute_loss`` (v1.9.0) runs the reference after the policy's
    forward, under ``torch.no_grad``, on the same concatenated batch (chosen + rejected:
    ``sequences_per_micro_batch``): forward FLOPs only. Per layer the policy's forward
    seconds ``fwd_s`` (the same shapes; the adapters' small GEMMs are not taken off for
    ``adapters_off``), plus with tensor parallelism the layer's 2 TP all-reduces of ``A
    tok h`` bytes each; under ZeRO-3 / FSDP each layer is all-gathered first (``A`` bytes a
    parameter over the shard group; prefetched one layer ahead, so a layer takes
    max(compute, gather) and the first gather is exposed). The output layer's forward is
    its forward share of ``head_s`` (``layer_flops``: head_fwd / (head_fwd + head_bwd)).
    ``precomputed``: 0 (one forward over the data set before training, not per step).
    Returns ``{"total_s", "comm_s"}``; the step graph does not hold these tasks (the
    timeline shows the policy's micro-batch), the step time adds them per micro-batch.
    """
    tr, m, c = sc.training, sc.model, sc.cluster
    pref = tr.preference
    if pref is None or pref.reference == "precomputed":
        return {"total_s": 0.0, "comm_s": 0.0}
    ct = compute_times(sc, pc)
    fl = layer_flops(sc, pc)
    A = 4 if tr.precision == "fp32" else 2
    t = lay.tensor_parallel
    tok = tr.sequences_per_micro_batch * tr.seq_len
    layer_s, comm = ct["fwd_s"], 0.0
    if t > 1:
        tp_nodes = nccl.nodes_spanned(t, min(t, c.gpus_per_node))
        bus = links["nvlink"] if tp_nodes == 1 else links["nic"]
        tp = 2 * nccl.collective_time_s("allreduce", A * tok * m.hidden_size, t, tp_nodes, bus)
        layer_s += tp
        comm += tp * m.num_layers
    gather = 0.0
    shard = lay.shard_degree
    if sc.strategy.zero_stage >= 3 and shard > 1:
        k = nccl.ranks_per_node(shard, t, c.gpus_per_node)
        nodes = nccl.nodes_spanned(shard, k)
        bus = nccl.bus_bandwidth(k, nodes > 1, links["nvlink"], links["nic"])
        gather = nccl.collective_time_s("allgather", A * pc.per_layer / t, shard, nodes, bus)
    per_layer = max(layer_s, gather)
    comm += (per_layer - layer_s) * m.num_layers + gather
    head_share = fl["head_fwd"] / (fl["head_fwd"] + fl["head_bwd"]) if fl["head_fwd"] else 0.0
    total = gather + per_layer * m.num_layers + ct["head_s"] * head_share
    return {"total_s": float(total), "comm_s": float(comm)}


HEAD_FWD_SHARE = 1 / 3       # the output layer's forward of its forward + backward (2 GEMMs back)


def pipeline_stage_times(sc: Scenario, lay: Layout, ct: dict | None = None) -> dict:
    """Per pipeline stage, compute seconds of one micro-batch, and the slowest stage.

    Stage i runs its ``layers[i]`` (:func:`simulation.parallel.pipeline_stage_layers`) at
    ``fwd_s`` + ``bwd_s`` each, the last also the output layer and loss (``head_s``, a
    third of it forward). Returns ``{"fwd_s": [...], "bwd_s": [...], "slowest": k,
    "layers": layers[k], "head": k is the last}``. Under DualPipe a rank alternates its
    two stages i and p-1-i, so the pair's mean paces it; the slowest single stage taken
    here is an upper bound on that (equal to it for a split symmetric about the middle,
    as Llama 3's 7 + 14 x 8 + 7).
    """
    ct = ct or compute_times(sc, model_params(sc.model))
    layers = pipeline_stage_layers(sc)
    p = len(layers)
    f = [n * ct["fwd_s"] + (ct["head_s"] * HEAD_FWD_SHARE if i == p - 1 else 0.0)
         for i, n in enumerate(layers)]
    b = [n * ct["bwd_s"] + (ct["head_s"] * (1 - HEAD_FWD_SHARE) if i == p - 1 else 0.0)
         for i, n in enumerate(layers)]
    # the last among equals: an even split keeps the rank that also runs the head
    k = max(range(p), key=lambda i: (f[i] + b[i], i))
    return dict(fwd_s=f, bwd_s=b, slowest=k, layers=layers[k], head=k == p - 1)


def pipeline_bubble_mb(sc: Scenario, lay: Layout, ct: dict | None = None) -> float:
    """The pipeline bubble in micro-batches of the slowest stage (its ``f + b``).

    * 1F1B, an even split of the layers: ``p - 1`` (Narayanan et al. 2021 Sec. 2.2.1);
      interleaved with ``v`` chunks per rank ``(p - 1) / v`` (Sec. 2.2.2). Every stage
      is taken as long as the simulated rank, the last, which also runs the head (the
      figures validated against Narayanan Table 1 and Korthikanti Table 5 use this; the
      head's share of a stage bounds what it over-counts).
    * 1F1B, an uneven split: the exact makespan of the schedule with each stage's time
      (its layers, the head on the last) minus the slowest stage's ``m (f + b)``
      (:func:`simulation.pipeline.bubble_stage_times`, derivation there); divided by
      ``v`` when interleaved, as for equal stages.
    * DualPipe: ``(PP/2 - 1)(F&B + B - 3W)`` (:func:`simulation.pipeline.dualpipe_bubble_s`)
      with F, B the slowest chunk's forward and backward, F&B = F + B (two chunks'
      computation in sequence; what overlaps is their communication) and W its
      weight-gradient part: as many FLOPs as the forward's GEMMs (each forward GEMM has
      one input-gradient and one weight-gradient GEMM of its size in backward), W = F,
      with or without recomputation (which adds to B, not to W).
    """
    p = lay.pipeline_parallel
    if p <= 1:
        return 0.0
    dual = sc.training.pipeline_schedule == "dualpipe"
    v = sc.training.interleave_stages or 1
    layers = pipeline_stage_layers(sc)
    chunks = pipe.chunk_layers(layers, v, sc.training.pipeline_layers)
    if not dual and len(set(chunks)) == 1:
        return (p - 1) / v
    st = pipeline_stage_times(sc, lay, ct)
    m = lay.grad_accumulation_steps
    if not dual and v > 1 and m % p == 0:
        return interleaved_bubble_mb(chunks, p, v, m, ct or compute_times(sc, model_params(sc.model)), st)
    k = st["slowest"]
    F, B = st["fwd_s"][k], st["bwd_s"][k]
    if not F + B:
        return 0.0
    if dual:
        return pipe.dualpipe_bubble_s(p, F, B, F) / (F + B)
    return pipe.bubble_stage_times(st["fwd_s"], st["bwd_s"], lay.grad_accumulation_steps,
                                   sc.training.interleave_stages or 1)


def interleaved_bubble_mb(chunks: tuple[int, ...], p: int, v: int, m: int, ct: dict,
                          st: dict) -> float:
    """The interleaved schedule's bubble in micro-batches of the slowest rank (its
    ``f + b``, ``st`` of :func:`pipeline_stage_times`): the exact makespan of Megatron-LM's
    interleaved 1F1B (:func:`simulation.pipeline.interleaved_makespan_s`) with each of the
    ``p v`` virtual stages at its layers' ``fwd_s`` / ``bwd_s`` (the head on the last
    virtual stage), minus the ``m (f + b)`` the slowest rank works. Equal chunks give
    ``(p - 1) / v`` (Narayanan et al. 2021 Sec. 2.2.2); uneven ones (Llama 3's first and
    last chunk one layer short, Sec. 3.3.2) the schedule's own figure. At most
    :func:`simulation.pipeline.bubble_micro_batch_cap` micro-batches (rounded down to a
    multiple of ``p``) are simulated."""
    last = p * v - 1
    f = [n * ct["fwd_s"] + (ct["head_s"] * HEAD_FWD_SHARE if s == last else 0.0)
         for s, n in enumerate(chunks)]
    b = [n * ct["bwd_s"] + (ct["head_s"] * (1 - HEAD_FWD_SHARE) if s == last else 0.0)
         for s, n in enumerate(chunks)]
    k = st["slowest"]
    top = st["fwd_s"][k] + st["bwd_s"][k]
    if not top:
        return 0.0
    mm = min(m, max(p, pipe.bubble_micro_batch_cap(p) // p * p))
    return max(0.0, (pipe.interleaved_makespan_s(f, b, p, v, mm) - mm * top) / top)


def pipeline_summary(sc: Scenario, lay: Layout, bubble_mb: float) -> dict:
    """The step's pipeline: ``schedule`` (1f1b | interleaved | dualpipe), ``stage_layers``
    (layers per stage), ``slowest_stage`` (the rank the step graph simulates: it paces the
    steady state) and ``bubble_micro_batches`` (the bubble in that stage's micro-batches,
    :func:`pipeline_bubble_mb`)."""
    tr = sc.training
    schedule = tr.pipeline_schedule if (tr.interleave_stages or 1) == 1 else "interleaved"
    layers = pipeline_stage_layers(sc)
    slowest = lay.pipeline_parallel - 1 if len(set(layers)) == 1 else pipeline_stage_times(sc, lay)["slowest"]
    return dict(schedule=schedule, stage_layers=list(layers), slowest_stage=slowest,
                bubble_micro_batches=float(bubble_mb))


def step_report(sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes,
                engine: str = "auto", detail: bool = True) -> dict:
    """Step time, its breakdown, throughput, MFU, link use, the verdict and (``detail``)
    the timeline of the last micro-batch with its critical path.

    Without ``detail`` (sweeps, the quick API) the graphs are built, simulated and
    attributed in C and no per-task Python object is made.
    """
    missing = [t for t in (OFFLOAD_TIER.get(sc.strategy.offload_optimizer),
                           OFFLOAD_TIER.get(sc.strategy.offload_params))
               if t and t != "ddr" and t not in sc.cluster.tiers]
    if missing:
        return {"available": False,
                "reason": f"the node has no {missing[0].upper()} tier to offload to"}
    r = rank_model(sc, pc, lay, sb)
    links = links_for(sc, lay)
    a_last = graph_arrays(r, links, True, engine)
    s_last = simulate(a_last, engine)
    m = lay.grad_accumulation_steps
    p = lay.pipeline_parallel
    bubble_mb = pipeline_bubble_mb(sc, lay)
    parts = attribute(a_last, s_last, engine)
    link_busy = dict(zip(a_last["links"], s_last.link_busy_s))
    link_bytes = dict(zip(a_last["links"], s_last.link_bytes))
    t_mb = 0.0
    if m > 1 or p > 1:
        a_mb = graph_arrays(r, links, False, engine)
        s_mb = simulate(a_mb, engine)
        t_mb = s_mb.makespan_s
        pm = attribute(a_mb, s_mb, engine)
        for k in BREAKDOWN_KEYS:
            parts[k] += (m - 1) * pm[k]
        for name, busy, nbytes in zip(a_mb["links"], s_mb.link_busy_s, s_mb.link_bytes):
            link_busy[name] += (m - 1) * busy
            link_bytes[name] += (m - 1) * nbytes
    # DualPipe overlaps each chunk pair's pipeline sends with the other chunk's computation
    # (DeepSeek-V3 Sec. 3.2.1): their bytes stay on the links, their time leaves the path.
    hidden = sc.training.pipeline_schedule == "dualpipe"
    cpx = context_parallel_exchange(sc, pc, lay, links)
    cp_slow_s = cpx.get("contention_s", 0.0)        # compute, on the critical path
    p2p_s = ((0.0 if hidden else pipeline_p2p_s(sc, lay, links)) + embedding_tp_allreduce_s(sc, lay, links)
             + cpx.get("exposed_s", 0.0) + cp_slow_s)
    extra_bytes = pipeline_p2p_bytes(sc, lay)
    if cpx:
        extra_bytes[cpx["link"]] = extra_bytes.get(cpx["link"], 0.0) + cpx["bytes"]
    for name, nbytes in extra_bytes.items():
        if name in link_bytes:
            link_bytes[name] += m * nbytes
            link_busy[name] += m * nbytes / links[name]
    # expert parallelism: each MoE layer's all-to-alls, on the critical path of every
    # micro-batch (hidden behind compute up to it with moe_a2a_overlap; experts.alltoall)
    ct = compute_times(sc, pc)
    a2a = experts.alltoall(sc, lay, links, r.layers * (ct["fwd_s"] + ct["bwd_s"]),
                           gpu_sms(sc.cluster.accelerator))
    if a2a:
        # the overlapped compute's slowdown (the all-to-all kernels' SMs) is compute
        p2p_s += a2a["exposed_s"] + a2a["contention_s"]
        cp_slow_s += a2a["contention_s"]
        for name, nbytes in a2a["bytes"].items():
            if name in link_bytes and nbytes:
                link_bytes[name] += m * nbytes
                link_busy[name] += m * nbytes / links[name]
    t_mb += p2p_s if t_mb else 0.0
    parts["pipeline_bubble"] += bubble_mb * t_mb
    parts["exposed_comm"] += m * (p2p_s - cp_slow_s)
    parts["compute"] += m * cp_slow_s
    acc_s = ((m - 1) * grad_accumulation_s(sc, pc, lay, sb) + ddp_bucket_copy_s(sc, pc, lay, sb)
             + optimizer_extra_s(sc, pc, lay, sb))
    parts["compute"] += acc_s
    ref = reference_forward_s(sc, pc, lay, links)
    parts["compute"] += m * (ref["total_s"] - ref["comm_s"])
    parts["exposed_comm"] += m * ref["comm_s"]
    step_s = float((m - 1 + bubble_mb) * t_mb + s_last.makespan_s + p2p_s + acc_s
                   + m * ref["total_s"])
    # sequences, not examples: a preference example is two (chosen, rejected)
    tokens = lay.global_batch_size * sc.training.seq_len * (2 if sc.training.preference else 1)
    mflops = model_flops_per_step(sc, pc, lay)
    mfu_precision, mfu_peak_flops = mfu_peak(sc)
    mfu = mflops / (step_s * lay.num_gpus * mfu_peak_flops) if step_s else 0.0
    link_rows = [dict(name=n, bytes_per_s=float(links[n]), busy_s=float(link_busy[n]),
                      bytes=float(round(link_bytes[n])),      # whole bytes
                      utilization=float(link_busy[n] / step_s) if step_s else 0.0,
                      # what it moved over what it could have moved in the step; below the
                      # busy share when its flows were held back by another link on their path
                      bandwidth_fraction=(float(link_bytes[n] / (links[n] * step_s))
                                          if step_s and links[n] else 0.0))
                 for n in a_last["links"]]
    parts = {k: float(v) for k, v in parts.items()}
    report = dict(
        available=True, time_s=step_s, breakdown_s=parts,
        micro_batch_s=float(t_mb or s_last.makespan_s), last_micro_batch_s=float(s_last.makespan_s),
        optimizer_phase_s=optimizer_phase_s(a_last, s_last), micro_batches=m, model_flops=mflops,
        model_flops_counted=MODEL_FLOPS_COUNTED, gpu_idle_s=float(step_s - parts["compute"]),
        compute=compute_summary(sc, pc),
        mfu_peak=dict(precision=mfu_precision, flops_per_s=float(mfu_peak_flops)))
    if sc.training.fp8 is not None:
        # the same model FLOPs over the 16-bit peak, to set beside 16-bit runs' MFU
        report["mfu_peak"]["mfu_16bit_peak"] = (
            float(mflops / (step_s * lay.num_gpus * peak_flops(sc))) if step_s else 0.0)
    if sc.training.preference is not None:
        report["reference_forward_s"] = m * ref["total_s"]
    if sc.strategy.offload_optimizer != "none":
        report["cpu_optimizer"] = cpu_optimizer_summary(sc, r, links)
    if cpx:
        # per step: every micro-batch's (m of them; part of exposed_comm)
        report["context_parallel"] = dict(cpx, micro_batches=m, exposed_per_step_s=m * cpx["exposed_s"])
    if lay.expert_parallel > 1 or (sc.model.num_experts > 1 and sc.training.moe_capacity_factor is not None):
        gemm = ct.get("parts", {}).get("expert_gemm", 0.0) * r.layers
        report["expert_parallel"] = experts.summary(sc, lay, a2a, gemm)
    if p > 1:
        report["pipeline"] = pipeline_summary(sc, lay, bubble_mb)
    out = dict(step=report, throughput={"tokens_per_s": tokens / step_s if step_s else 0.0,
                                        "samples_per_s": lay.global_batch_size / step_s if step_s else 0.0},
               mfu=float(mfu), links=link_rows,
               verdict=verdict(sc, parts, step_s, link_rows, report.get("cpu_optimizer")))
    if detail:
        out["timeline"] = step_timeline(r, links, a_last, s_last, engine)
    return out


# The CPU optimizer's tasks in the timeline, by implementation (simulation.cpu_adam)
_CPU_OPTIMIZER_TASK = {"deepspeed_cpu_adam": "CPU Adam", "torch_adamw": "CPU AdamW (torch for-loop)"}


def cpu_optimizer_summary(sc: Scenario, r: RankModel, links: dict) -> dict:
    """What bounds one rank's CPU optimizer step (:func:`simulation.cpu_adam.summary`):
    the parameters it updates, the cores' and the DDR share's rates, which is lower
    (``bound``: ``cpu_adam`` or ``ddr``) and that in words (``message``)."""
    s = cpu_adam.summary(sc.cluster, sc.strategy, links["ddr"], r.params_per_rank / r.shard)
    s["message"] = cpu_adam.bound_words(s)
    return s


_COMPUTE_LABEL = LABELS.index("compute")


def optimizer_phase_s(a: dict, sched) -> float:
    """Seconds of the step after the last micro-batch's last forward/backward compute
    (``a``: the last micro-batch's graph, ``sched`` its schedule): the gradient
    reduction left exposed, the optimizer step and its offload traffic. 0 for a graph
    without compute tasks."""
    # zero-length compute tasks are joins ("optimizer step done"), not work
    is_compute = (a["label"] == _COMPUTE_LABEL) & (a["duration"] > 0)
    if not is_compute.any():
        return 0.0
    return max(0.0, float(sched.makespan_s - sched.end_s[is_compute].max()))


def critical_path(g, sched) -> list[int]:
    """Tasks on the critical path, first to last.

    From the last task to end, step back to whichever finished last just before it
    started: a dependency, or the previous task on its stream (it waited for the GPU).
    """
    n = len(g.names)
    if not n:
        return []
    start, end = sched.start_s, sched.end_s
    prev_on_stream = {}
    by_stream: dict = {}
    for i in range(n):
        if g.kind[i] == COMPUTE:
            by_stream.setdefault(g.stream[i], []).append(i)
    for tasks in by_stream.values():
        tasks.sort(key=lambda i: (start[i], i))
        for a, b in zip(tasks, tasks[1:]):
            prev_on_stream[b] = a
    i = int(np.argmax(end))
    path = [i]
    while len(path) <= n:
        tol = 1e-9 * max(1.0, start[i])
        cands = [c for c in g.deps[i] + ([prev_on_stream[i]] if i in prev_on_stream else [])
                 if end[c] <= start[i] + tol]
        if not cands:
            break
        i = max(cands, key=lambda c: (end[c], c))
        path.append(i)
    return path[::-1]


def timeline(g, sched) -> dict:
    """Tasks of the last micro-batch (with the optimizer step) for a Gantt chart."""
    names = list(g.links)
    streams = list(g.streams)
    critical = set(critical_path(g, sched))
    rows = []
    for i in range(min(len(g.names), TIMELINE_MAX_TASKS)):
        if g.kind[i] == COMPUTE:
            lane = streams[g.stream[i]]
        else:
            lane = names[g.paths[i][0]] if len(g.paths[i]) == 1 else " > ".join(names[k] for k in g.paths[i])
        if sched.end_s[i] - sched.start_s[i] <= 0:
            continue
        rows.append(dict(name=g.names[i], lane=lane, kind=g.labels[i],
                         start_s=float(sched.start_s[i]), end_s=float(sched.end_s[i]),
                         critical=i in critical))
    return dict(tasks=rows, makespan_s=float(sched.makespan_s), span=TIMELINE_SPAN,
                truncated=len(g.names) > TIMELINE_MAX_TASKS)


def step_timeline(r: RankModel, links: dict, a: dict, sched, engine: str = "auto") -> dict:
    """``timeline(build(r, links, last=True), sched)`` from the C graph ``a`` of the same
    rank model (``graph_arrays(r, links, True)``) and its schedule, without building the
    Python graph: the names from ``stepgraph.task_name_plan``, the critical path and the
    rows in C (``_cstepgraph.timeline_rows``): the same dict, several times faster.
    Builds the graph (``timeline``, the specification) with ``engine`` "python", without
    the C extension, or where ``task_name_plan`` does not give as many tasks and streams as
    the C graph has (a builder changed without it)."""
    c = c_module()
    if engine == "python" or c is None:
        return timeline(build(r, links, last=True), sched)
    plan, streams = task_name_plan(r, True)
    rows = (c.timeline_rows(plan, streams, LABELS, a["links"], a["kind"], a["stream"],
                            a["dep_ptr"], a["dep_idx"], sched.start_s, sched.end_s, a["label"],
                            a["path_ptr"], a["path_links"], TIMELINE_MAX_TASKS)
            if len(streams) == a["n_streams"] else None)
    if rows is None:
        return timeline(build(r, links, last=True), sched)
    return dict(tasks=rows, makespan_s=float(sched.makespan_s), span=TIMELINE_SPAN,
                truncated=len(a["kind"]) > TIMELINE_MAX_TASKS)


_LABEL = {"exposed_comm": "Exposed communication", "exposed_offload": "Exposed offload I/O",
          "cpu_optimizer": "The CPU optimizer step", "stall": "Prefetch-miss stalls",
          "pipeline_bubble": "The pipeline bubble"}
_WORDS = {"exposed_comm": "communication that does not hide behind compute",
          "exposed_offload": "offload traffic (PCIe/NVMe/CXL/DDR) that does not hide behind compute",
          "cpu_optimizer": "the optimizer step on the host CPU while the GPU waits",
          "stall": "synchronous fetches after prefetch misses",
          "pipeline_bubble": "the pipeline bubble"}


_YEAR_S = 365.25 * 86400.0       # a Julian year


def duration_text(seconds: float) -> str:
    """A duration in words with the unit that suits it, as the front end's ``formatSeconds``
    (frontend/src/units.ts) shows it: 3 significant digits below a minute ("0.0123 s",
    "4.2 s"), then one decimal of min / h (below 2 days) / days / years (365.25 days):
    1.63e8 s -> "5.2 years", never "1.63e+08 s"."""
    a = abs(seconds)
    if a < 60:
        return f"{seconds:.3g} s"
    for limit, size, unit in ((3600, 60, "min"), (2 * 86400, 3600, "h"), (_YEAR_S, 86400, "days")):
        if a < limit:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds / _YEAR_S:,.1f} years"


def verdict(sc: Scenario, parts: dict, step_s: float, link_rows: list,
            cpu_opt: dict | None = None) -> dict:
    """The bottleneck in words and the link to buy more of; a CPU optimizer bottleneck
    says which bound it (``cpu_optimizer_bound``: ``cpu_adam`` or ``ddr``)."""
    if not step_s:
        return {"bottleneck": "none", "message": "empty step"}
    waste = {k: v for k, v in parts.items() if k != "compute" and v > 0}
    if not waste or max(waste.values()) < 0.02 * step_s:
        msg = (f"Compute-bound: {parts['compute'] / step_s:.0%} of the step is GPU compute; "
               "communication and offload hide behind it.")
        return {"bottleneck": "compute", "message": msg, "buy_more_of": None}
    worst = max(waste, key=waste.get)
    busiest = max(link_rows, key=lambda l: l["utilization"]) if link_rows else None
    msg = (f"{_LABEL[worst]} costs {duration_text(waste[worst])} of a {duration_text(step_s)} step "
           f"({waste[worst] / step_s:.0%}): {_WORDS[worst]}.")
    if worst == "exposed_offload":
        msg += " Offloading makes this step slower than keeping the states in HBM would."
        msg += _nvme_wall(sc, link_rows)
    if worst == "cpu_optimizer" and cpu_opt:
        # the optimizer's flow crosses both ddr and cpu_adam, so both look busy: name the
        # one that binds instead of the busiest
        more = "more cores per GPU" if cpu_opt["bound"] == "cpu_adam" else "more DDR bandwidth"
        msg += f" It is {cpu_opt['message']}: {more} shortens it."
        return {"bottleneck": worst, "message": msg, "cpu_optimizer_bound": cpu_opt["bound"],
                "buy_more_of": "cpu_adam" if cpu_opt["bound"] == "cpu_adam" else "ddr"}
    if busiest and busiest["utilization"] > 0.5:
        msg += (f" The busiest link is {busiest['name']} ({busiest['utilization']:.0%} busy at "
                f"{busiest['bytes_per_s'] / 1e9:.1f} GB/s per GPU): more of it shortens the step.")
    return {"bottleneck": worst, "message": msg,
            "buy_more_of": busiest["name"] if busiest and busiest["utilization"] > 0.5 else None}


def unfit_verdict(verdict: dict, violations) -> dict:
    """The verdict of a scenario that does not fit (``violations``: the report's, each with
    a ``message``): its message leads with that and the first tier over, then says what
    the step would be bound by were the memory there ("Compute-bound: 100% of the step is
    GPU compute" alone read as if the plan ran). The bottleneck is the step's, as before."""
    if not violations or not verdict:
        return verdict
    first = violations[0].message
    more = len(violations) - 1
    step = verdict.get("message", "")
    lead = (f"Does not fit: {first}" + (f" (and {more} more tier{'s' if more > 1 else ''} over)"
                                          if more else "") + ".")
    if step:
        lead += f" Were the memory there, the step would be: {step[0].lower()}{step[1:]}"
    return {**verdict, "message": lead}


def background_slowdown(sc: Scenario, pc: ParamCount, lay: Layout, sb: StateBytes,
                        bytes_per_rank: float, write_s: float, network: bool,
                        engine: str = "auto") -> float:
    """Extra seconds one step takes while a background checkpoint write shares its links.

    The last micro-batch is simulated again with one more flow: the rank's checkpoint
    shard leaving over PCIe (and the NIC for network targets) to the target at the rate
    the checkpoint model gives it (``bytes_per_rank / write_s``). Max-min sharing then
    takes bandwidth from training's transfers where they meet.
    """
    if bytes_per_rank <= 0 or write_s <= 0:
        return 0.0
    r = rank_model(sc, pc, lay, sb)
    links = dict(links_for(sc, lay), checkpoint_target=bytes_per_rank / write_s)
    a = graph_arrays(r, links, True, engine)
    n_train = len(a["kind"])
    base = simulate(a, engine).makespan_s
    names = a["links"]
    path = (["pcie_d2h"] + (["pcie_switch_up"] if "pcie_switch_up" in names else [])
            + (["nic"] if network else []) + ["checkpoint_target"])
    s = simulate(add_transfer(a, bytes_per_rank, [names.index(x) for x in path]), engine)
    return max(float(np.max(s.end_s[:n_train])) - base, 0.0) if n_train else 0.0


def add_transfer(a: dict, size_bytes: float, path: list) -> dict:
    """A copy of graph ``a`` with one more transfer (no dependencies) over link indices ``path``."""
    n = len(a["kind"])
    cat = np.concatenate
    i32 = lambda *v: np.array(v, dtype=np.int32)       # noqa: E731
    return dict(a, kind=cat([a["kind"], i32(1)]), stream=cat([a["stream"], i32(-1)]),
                duration=cat([a["duration"], [0.0]]), size=cat([a["size"], [float(size_bytes)]]),
                path_ptr=cat([a["path_ptr"], i32(a["path_ptr"][n] + len(path))]),
                path_links=cat([a["path_links"], np.array(path, dtype=np.int32)]),
                path_weight=cat([path_weights(a), np.ones(len(path))]),
                dep_ptr=cat([a["dep_ptr"], i32(a["dep_ptr"][n])]),
                acquire=cat([a["acquire"], i32(-1)]), release=cat([a["release"], i32(-1)]),
                label=cat([a["label"], i32(LABEL_CODE["checkpoint"])]))


def _nvme_wall(sc: Scenario, link_rows: list) -> str:
    """"Each node moves X TB through NVMe at Y GB/s: at least Z s per step"."""
    nvme = sc.cluster.tiers.get("nvme")
    rows = {r["name"]: r for r in link_rows}
    if not nvme or "nvme_read" not in rows:
        return ""
    g = sc.cluster.gpus_per_node
    read_b, write_b = rows["nvme_read"]["bytes"] * g, rows["nvme_write"]["bytes"] * g
    if read_b + write_b <= 0:
        return ""
    # reads and writes share each drive: their times add
    floor_s = read_b / nvme.read_bytes_per_s + write_b / nvme.write_bytes_per_s
    return (f" NVMe bandwidth wall: each node reads {read_b / 1e12:,.2f} TB at "
            f"{nvme.read_bytes_per_s / 1e9:.1f} GB/s and writes {write_b / 1e12:,.2f} TB at "
            f"{nvme.write_bytes_per_s / 1e9:.1f} GB/s per step: at least {floor_s:.3g} s.")
