"""Expert parallelism (EP) of a mixture of experts: placement, memory terms, all-to-all.

Megatron-Core's layout (megatron/core/parallel_state.py ``initialize_model_parallel``,
core 0.20): the MoE layers' experts live on a grid of their own over the same ranks,
ETP x EP x EDP x PP (order tp-ep-dp-pp). Each of the EP ranks of an expert-parallel group
holds ``num_experts / EP`` experts, each expert split over ETP ranks
(``--expert-tensor-parallel-size``, default the tensor-parallel degree); the
expert-data-parallel group EDP = TP x DP / (ETP x EP) replicates them. Attention, norms,
router, embedding and head (the *dense* part) keep the TP x DP grid.

Per rank of a pipeline stage, with ``E`` the routed-expert parameters of the whole model
(:func:`routed_expert_params_per_layer` x MoE layers) and ``D`` the rest:

* parameters held (unsharded): ``D / (TP x PP) + E / (ETP x EP x PP)``;
* sharded states (ZeRO, Megatron's distributed optimizer, FSDP) split the dense part over
  the shard group (``d`` ranks) and the experts over its expert-data-parallel ranks
  (``d x TP / (ETP x EP)``, :func:`simulation.parallel.layout`): per rank
  ``D / (TP x PP x d) + E / (TP x PP x d)``, the same as without EP, since EP is carved
  out of the data-parallel ranks (Megatron ``DistributedOptimizer`` shards each expert
  buffer over ``expert_data_parallel_group``, ``distributed/param_and_grad_buffer.py``).

Token dispatch (Megatron-Core ``moe/token_dispatcher.py`` ``MoEAlltoAllTokenDispatcher``:
permute, all-to-all over EP, all-gather over ETP; combine: reduce-scatter over ETP,
all-to-all over EP, unpermute): per MoE layer and micro-batch each rank sends its
``b x s / TP`` tokens (sequence parallel) ``top_k`` times, ``h`` wide in the activation
dtype, ``(EP - 1) / EP`` of them to other ranks: once in the dispatch and once in the
combine in forward, and the two gradients in backward (again in the re-run forward of
full recomputation). The busiest rank receives :func:`token_factor` times the mean:

* dropless (``moe_capacity_factor`` None): ``moe_routing_imbalance`` (r, default 1.0:
  balanced routing, what the auxiliary load-balancing loss drives to; the busiest
  rank's figure is the user's, e.g. from a routing trace);
* capacity-limited: each expert takes at most ``ceil(tokens x top_k / experts x c)``
  tokens of each sender (``moe_utils.get_capacity``, applied to the sender's local
  tokens), so a rank receives ``min(r, c)`` times the mean, exactly ``c`` with
  ``moe_pad_to_capacity`` (``--moe-pad-expert-input-to-capacity``).

Node-limited routing (``moe_router_group_topk`` M, Megatron-Core's group-limited routing
with the groups the EP group's nodes; DeepSeek-V3 report Sec. 2.1.2 and 3.2.2): each token
goes to experts on at most M nodes, and crosses the network once per destination node,
where the GPU of its own index forwards it over NVLink to the node's GPUs holding its
experts (and reduces their outputs before the one network send back in the combine). Of
the ``top_k`` copies a token makes, ``min(top_k, M)`` cross the network instead of ``top_k``
(:func:`alltoall_split`); the NVLink bytes gain the forwarding hop. Without it, as
Megatron's alltoall dispatcher sends them, every copy for another node crosses the network.

The busiest rank paces the layer: every all-to-all waits for it, and its expert GEMMs
run ``token_factor`` times the mean tokens (:func:`simulation.compute.layer_times`).
Without EP the experts are all local: no all-to-all and no rank imbalance (r = 1; a
capacity factor under 1 still drops tokens).

Left as approximations: the experts' gradients are reduced with the dense ones over the
data-parallel group (Megatron reduces them over the smaller expert-data-parallel group:
the bytes per rank are the rank's, the ring's (n - 1) / n is the DP group's); the
all-to-all runs beside nothing else on the links (it is not a task of the step graph but
a serial term per micro-batch, like the pipeline's point-to-point transfers); a capacity
factor under 1 does not shrink the stored activations (an upper bound).
"""

from __future__ import annotations

import math

from . import collectives as nccl
from .scenario import ModelSpec, TrainingSpec

A2A_PART = "expert-parallel all-to-all buffers (dispatch and combine, 1 layer)"
IMBALANCE_PART = "routed tokens beyond the mean on the busiest EP rank"


def expert_params(m: ModelSpec) -> int:
    """Parameters of one routed expert's MLP (elements): two h x f matrices, three when
    gated, plus their biases with ``linear_bias`` (:func:`simulation.params.mlp_params`),
    f the routed expert's own width (``ModelSpec.expert_ffn_size``)."""
    from .params import mlp_params
    return mlp_params(m, m.expert_ffn_size)


def routed_expert_params_per_layer(m: ModelSpec) -> int:
    """Routed-expert parameters of one MoE layer (elements): ``num_experts`` experts, 0 for
    a dense model or one given by ``num_params`` alone. The router stays with the dense part."""
    if m.num_experts <= 1 or not m.has_architecture:
        return 0
    return m.num_experts * expert_params(m)


def moe_layers(m: ModelSpec) -> int:
    """Layers with routed experts: every layer of a Mixtral-style model, all but the
    ``first_dense_layers`` of DeepSeek's (``ModelSpec.moe_layers``)."""
    return m.moe_layers if routed_expert_params_per_layer(m) else 0


def expert_params_total(m: ModelSpec) -> int:
    """Routed-expert parameters of the whole model (elements)."""
    return moe_layers(m) * routed_expert_params_per_layer(m)


def rank_params(m: ModelSpec, total: float, lay) -> float:
    """Parameters one rank holds unsharded (elements): ``D / (TP x PP) + E / (ETP x EP x
    PP)``, with ``total`` the model's (D + E); ``total / (TP x PP)`` without EP."""
    mp = lay.tensor_parallel * lay.pipeline_parallel
    e = expert_params_total(m) if lay.expert_parallel > 1 or lay.expert_tensor_parallel != lay.tensor_parallel else 0
    if not e:
        return total / mp
    return (total - e) / mp + e / (lay.expert_tensor_parallel * lay.expert_parallel * lay.pipeline_parallel)


def layer_params_per_rank(m: ModelSpec, per_layer: float, lay, mean: bool = False) -> float:
    """One block's parameters on one rank (elements): its dense part over TP, its experts
    over ETP x EP (``per_layer / TP`` without EP). ``per_layer`` is an MoE block's count,
    or with ``mean`` the mean over the model's blocks (``ParamCount.per_layer``: dense first
    layers included), whose routed experts are the MoE blocks' share of them."""
    e = routed_expert_params_per_layer(m) if lay.expert_parallel > 1 or lay.expert_tensor_parallel != lay.tensor_parallel else 0
    if not e:
        return per_layer / lay.tensor_parallel
    if mean and m.num_layers:
        e *= moe_layers(m) / m.num_layers
    return (per_layer - e) / lay.tensor_parallel + e / (lay.expert_tensor_parallel * lay.expert_parallel)


def floor_params(m: ModelSpec, total: float, tr: TrainingSpec) -> float:
    """A parameter count ``n`` with ``n / (TP x PP)`` at most what a rank holds under any
    TP (:func:`rank_params`), for the planner's HBM lower bound: ``D + E / EP`` when the
    experts follow TP (ETP unset: ``E / (TP x EP x PP)``), ``D + E / (ETP x EP)`` with an
    explicit ETP (``E / (ETP x EP x PP)`` is at least that over TP x PP for TP >= 1);
    ``total`` without EP. Sharded states come out smaller than the memory model's, which
    keeps the bound a bound."""
    e = expert_params_total(m)
    if not e or (tr.expert_parallel == 1 and tr.expert_tensor_parallel is None):
        return total
    etp = 1 if tr.expert_tensor_parallel is None else tr.expert_tensor_parallel
    return (total - e) + e / (tr.expert_parallel * etp)


def sharded_divisor(m: ModelSpec, total: float, lay, d: int) -> float:
    """The divisor that turns :func:`rank_params` into the per-rank sharded count: with
    the dense part over ``d`` ranks and the experts over ``lay.expert_shard_degree``,
    ``rank_params / (D / (TP PP d) + E / (ETP EP PP d_e))``; ``d`` itself without EP or
    when nothing is sharded (``d`` = 1)."""
    if d <= 1 or (lay.expert_parallel == 1 and lay.expert_tensor_parallel == lay.tensor_parallel):
        return d                  # rank_params is total / (TP x PP) then
    held = rank_params(m, total, lay)
    if held == total / (lay.tensor_parallel * lay.pipeline_parallel):
        return d
    e = expert_params_total(m)
    mp = lay.tensor_parallel * lay.pipeline_parallel
    sharded = ((total - e) / (mp * d)
               + e / (lay.expert_tensor_parallel * lay.expert_parallel * lay.pipeline_parallel
                      * lay.expert_shard_degree))
    return held / sharded


def token_factor(tr: TrainingSpec) -> float:
    """Tokens the busiest expert-parallel rank's experts take over the mean (see the
    module doc): dropless ``r`` (1 without EP), capacity-limited ``min(r, c)``, padded
    ``c``."""
    r = tr.moe_routing_imbalance if tr.expert_parallel > 1 else 1.0
    c = tr.moe_capacity_factor
    if c is None:
        return r
    return c if tr.moe_pad_to_capacity else min(r, c)


def a2a_per_micro_batch(tr: TrainingSpec) -> int:
    """All-to-alls per MoE layer and micro-batch: dispatch and combine in forward, their
    gradients in backward, and the forward's again when full recomputation re-runs it."""
    return 6 if tr.recompute == "full" else 4


def dispatch_bytes(m: ModelSpec, tr: TrainingSpec) -> float:
    """Bytes one rank's tokens make in one dispatch (the all-to-all's input, busiest
    rank): ``b x s / TP`` local tokens x top_k x h x activation bytes x :func:`token_factor`."""
    act = 4 if tr.precision == "fp32" else 2
    cp = getattr(tr, "context_parallel", 1) or 1       # a CP rank routes its share of the sequence
    tokens = tr.micro_batch_size * tr.seq_len / (tr.tensor_parallel * cp)
    return tokens * m.moe_top_k * m.hidden_size * act * token_factor(tr)


def alltoall_split(nbytes: float, ep: int, per_node: int, top_k: int = 1,
                   group_topk: int | None = None) -> tuple[float, float]:
    """``(NVLink bytes, network bytes)`` one rank sends in an all-to-all of ``nbytes`` over
    ``ep`` ranks, ``per_node`` of them on its node: an ``1/ep`` share to each peer, the
    ``per_node - 1`` on its node over NVLink, the ``ep - per_node`` others over its NIC.

    With node-limited routing (``group_topk`` M, ``nbytes`` the ``top_k`` copies of the
    rank's tokens) a token crosses the network once per destination node: the network
    bytes are ``min(top_k, M) / top_k`` of the copies for other nodes, and each of those
    copies not for the receiving GPU itself (``(per_node - 1) / per_node`` of them) takes
    an NVLink hop on its node (DeepSeek-V3 report Sec. 3.2.2). All in bytes."""
    if ep <= 1:
        return 0.0, 0.0
    k = min(per_node, ep)
    nv, net = nbytes * (k - 1) / ep, nbytes * (ep - k) / ep
    if group_topk is None or ep <= k:
        return nv, net
    return nv + net * (k - 1) / k, net * min(top_k, group_topk) / top_k


# SMs DeepEP's high-throughput dispatch/combine kernels hold (deepseek-ai/DeepEP
# deep_ep/buffer.py: ``Buffer.num_sms: int = 20``, changed with ``Buffer.set_num_sms``);
# DeepSeek-V3 report Sec. 3.2.2: "only 20 SMs are sufficient to fully utilize the
# bandwidths of IB and NVLink" (of the H800's 132). Node-limited routing's forwarding
# (network once per node, then NVLink) is DeepEP's internode dispatch, so it takes these;
# Megatron's alltoall dispatcher (NCCL send/recv) takes ``collectives.NCCL_CTAS``.
DEEPEP_SMS = 20


def alltoall_sms(tr) -> int:
    """SMs the expert all-to-all's kernels hold while they run: DeepEP's
    ``DEEPEP_SMS`` with node-limited routing (``moe_router_group_topk``, DeepEP-style
    forwarding), NCCL's ``collectives.NCCL_CTAS`` otherwise."""
    return DEEPEP_SMS if tr.moe_router_group_topk is not None else nccl.NCCL_CTAS


def alltoall_sm_share(tr, sms: int | None) -> float:
    """Share of a GPU's ``sms`` the all-to-all kernels hold (:func:`alltoall_sms` / SMs);
    0 when the SM count is unknown or not above theirs (no contention modelled)."""
    held = alltoall_sms(tr)
    if not sms or sms <= held:
        return 0.0
    return held / sms


def alltoall(sc, lay, links: dict, compute_s: float = 0.0, sms: int | None = None) -> dict:
    """The expert-parallel traffic of one micro-batch on one rank (the busiest).

    ``links``: :func:`simulation.step.links_for`'s (NVLink and NIC rates after the network
    efficiency). ``compute_s``: the micro-batch's forward + backward compute of the rank's
    layers, what ``moe_a2a_overlap`` may hide the all-to-alls behind. Returns ``{}``
    without EP, else ``time_s`` (all-to-alls and ETP gathers, as they sit on the critical
    path), ``exposed_s`` (after overlap), ``bytes`` per link, and the parts: ``per_a2a_s``,
    ``count`` (per micro-batch), ``ranks_per_node``, ``nodes``, ``dispatch_bytes``,
    ``nic_bytes`` and ``nvlink_bytes`` (one all-to-all's, :func:`alltoall_split`).

    One all-to-all takes NCCL's one-step alpha (``collectives.ring_latency_s`` of two
    ranks on one or two nodes: the peers are sent to at once, grouped send/recv) plus the
    slower of its NVLink bytes over NVLink and its network bytes over the NIC. With ETP >
    1 the dispatch adds an all-gather over the ETP ranks (and the combine a
    reduce-scatter) of the tokens received (``collectives.collective_time_s``).

    Overlapped (``moe_a2a_overlap`` or DualPipe), the all-to-all kernels hold
    :func:`alltoall_sm_share` of the GPU's ``sms`` while they are in flight, and the
    compute beside them runs on the rest (``collectives.sm_contention_s``: only the
    share of the compute the all-to-alls overlap slows): ``contention_s`` is that
    slowdown, on the critical path as compute, and ``exposed_s`` is what the all-to-alls
    still stick out past the stretched compute, ``max(0, time - compute - contention)``
    (together ``max(time, compute + contention) - compute``). Not overlapped: no
    contention (the compute waits for the all-to-all).
    """
    tr, m, c = sc.training, sc.model, sc.cluster
    ep, etp = lay.expert_parallel, lay.expert_tensor_parallel
    if ep <= 1 or not moe_layers(m):
        return {}
    gpn = c.domain_gpus          # NVLink domain (GB200 NVL72: 72 GPUs over 18 hosts)
    k = nccl.ranks_per_node(ep, etp, gpn)
    nodes = nccl.nodes_spanned(ep, k)
    nbytes = dispatch_bytes(m, tr)
    nv, net = alltoall_split(nbytes, ep, k, m.moe_top_k, tr.moe_router_group_topk)
    alpha = nccl.ring_latency_s("allgather", 2, 2 if nodes > 1 else 1)
    per_a2a = alpha + max(nv / links["nvlink"], net / links["nic"] if net else 0.0)
    etp_s = 0.0
    etp_nv = 0.0
    if etp > 1:
        etp_nodes = nccl.nodes_spanned(etp, min(etp, gpn))
        bus = links["nvlink"] if etp_nodes == 1 else links["nic"]
        # the all-gather's output: what the ETP ranks received, together
        etp_s = nccl.collective_time_s("allgather", nbytes * etp, etp, etp_nodes, bus)
        etp_nv = nbytes * (etp - 1)
    count = a2a_per_micro_batch(tr)
    layers = moe_layers(m) / lay.pipeline_parallel
    time_s = layers * count * (per_a2a + etp_s)
    exposed = time_s
    share = contention = 0.0
    # Megatron's --overlap-moe-expert-parallel-comm, or DualPipe, whose rank runs a forward
    # and a backward chunk side by side so that each one's all-to-alls hide behind the
    # other's computation (DeepSeek-V3 report Sec. 3.2.1, Figure 4: "both all-to-all and PP
    # communication can be fully hidden"): hidden up to the compute
    if tr.moe_a2a_overlap or getattr(tr, "pipeline_schedule", "1f1b") == "dualpipe":
        share = alltoall_sm_share(tr, sms)
        contention = nccl.sm_contention_s(compute_s, time_s, share)
        exposed = max(0.0, time_s - compute_s - contention)
    return dict(time_s=time_s, exposed_s=exposed, contention_s=contention, sm_share=share,
                per_a2a_s=per_a2a, etp_collective_s=etp_s,
                count=count, layers=layers, ranks_per_node=k, nodes=nodes,
                dispatch_bytes=nbytes, nic_bytes=net, nvlink_bytes=nv,
                bytes={"nvlink": layers * count * (nv + etp_nv), "nic": layers * count * net})


def summary(sc, lay, a2a: dict, expert_gemm_s: float) -> dict:
    """The report's ``step.expert_parallel``: degrees, experts per rank, the busiest rank's
    token factor, the all-to-all figures per micro-batch and what the imbalance adds to
    compute (``imbalance_compute_s``: the expert GEMMs' forward + backward x (1 - 1/factor),
    per micro-batch), each with its source."""
    tr, m = sc.training, sc.model
    f = token_factor(tr)
    out = dict(expert_parallel=lay.expert_parallel, expert_tensor_parallel=lay.expert_tensor_parallel,
               expert_data_parallel=lay.expert_data_parallel,
               experts_per_rank=m.num_experts // lay.expert_parallel,
               capacity_factor=tr.moe_capacity_factor, dropless=tr.moe_capacity_factor is None,
               pad_to_capacity=tr.moe_pad_to_capacity, routing_imbalance=tr.moe_routing_imbalance,
               token_factor=f, a2a_overlap=tr.moe_a2a_overlap,
               router_group_topk=tr.moe_router_group_topk,
               imbalance_compute_s=expert_gemm_s * (1 - 1 / f) if f > 0 else 0.0,
               source="Megatron-Core 0.20 MoEAlltoAllTokenDispatcher (moe/token_dispatcher.py); "
                      "capacity: moe_utils.get_capacity")
    if a2a:
        out.update(alltoall_s=a2a["time_s"], alltoall_exposed_s=a2a["exposed_s"],
                   alltoall_contention_s=a2a["contention_s"], alltoall_sm_share=a2a["sm_share"],
                   per_alltoall_s=a2a["per_a2a_s"], alltoalls_per_layer=a2a["count"],
                   etp_collective_s=a2a["etp_collective_s"], dispatch_bytes=a2a["dispatch_bytes"],
                   alltoall_nic_bytes=a2a["nic_bytes"], alltoall_nvlink_bytes=a2a["nvlink_bytes"],
                   ep_ranks_per_node=a2a["ranks_per_node"], ep_nodes=a2a["nodes"],
                   link="nic" if a2a["nodes"] > 1 else "nvlink")
    return out


def capacity_tokens(m: ModelSpec, tr: TrainingSpec) -> int | None:
    """Megatron's per-expert capacity for one sender's tokens (``moe_utils.get_capacity``:
    ``ceil(tokens x top_k / experts x factor)``, tokens the rank's ``b x s / TP``), or None
    when dropless."""
    if tr.moe_capacity_factor is None:
        return None
    tokens = tr.micro_batch_size * tr.seq_len // tr.tensor_parallel
    return math.ceil(tokens * m.moe_top_k / m.num_experts * tr.moe_capacity_factor)
