"""Context parallelism (CP): the keys and values each attention layer passes around its ring.

With ``training.context_parallel`` = cp each rank holds seq_len / cp tokens of every
sequence (two chunks of seq_len / 2cp: rank r the r-th and the (2cp - 1 - r)-th, so that
causal attention costs every rank the same; Megatron-LM ``get_batch_on_this_cp_rank``).
Everything but attention is local to the rank's tokens; attention needs every earlier
token's keys and values, which Transformer Engine passes around the CP ring
(transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py,
``AttnFuncWithCPAndKVP2P``, TE main of 2026-08, the default ``--cp-comm-type p2p`` of
Megatron-LM):

* forward: cp steps; at step i < cp - 1 the rank sends the K/V chunk it holds to the next
  CP rank and receives the previous rank's (``flash_attn_p2p_communicate``, isend/irecv)
  while it computes step i's attention block on a second stream; the next step waits for
  the chunk. So cp - 1 transfers of one K/V chunk, each beside one block's attention.
* backward: cp steps again; step 0 sends the K/V chunk, steps 1 .. cp - 2 send the K/V
  chunk and the dK/dV accumulated so far in one buffer (``p2p_comm_buffers`` of shape
  ``(2, *kv.shape)``), the last step dK/dV alone: 2 (cp - 1) chunk transfers, each step's
  beside that step's attention backward, waited for before the dK/dV update.
* a recomputed forward (full recomputation, or selective recomputation of the attention
  core) runs the forward ring again inside the backward.

One K/V chunk: b x (seq_len / cp) x (kv_heads / t) x head_dim x 2 (K and V) in the
activation dtype (grouped-query attention sends the KV heads, not the expanded ones). The
forward keeps every received chunk until the layer's forward returns (the list
``p2p_comm_buffers`` holds all cp of them); the backward holds two send/receive buffers
of K/V plus dK/dV (4 chunks) and a dQ buffer (``ring_buffer_bytes``).

Exposed time: each transfer hides behind its block's attention; only what it takes
longer shows (``exchange``). A block is a cp-th of the rank's attention: with the
load-balanced causal split every step does the same work (TE runs the diagonal step
causally on both chunks and every other step on half of the keys or half of the queries).

``training.context_parallel_comm`` "all_gather" (Megatron ``--cp-comm-type all_gather``,
TE ``AttnFuncWithCPAndKVAllGather``, the method of Llama 3, Dubey et al. 2024 Sec. 3.3.2):
the forward all-gathers K and V over the CP group (two all-gathers of the sequence's K or
V, each rank receiving cp - 1 chunks) before any attention runs, and the backward
all-gathers them again and reduce-scatters dK and dV after it: four collectives, all on
the critical path (TE: "KV all-gather between CP ranks is exposed"). It holds the gathered
sequence: forward the all-gather's output and its reordered copy (``torch.index_select``
into causal chunk order), 2 cp chunks; backward the gathered K/V, the sequence's dK/dV and
its reordered copy, 3 cp chunks, and dQ.

Where the ring runs: the CP group's ranks are ``tensor_parallel`` apart (Megatron rank
order "tp-cp-ep-dp-pp"), so a node holds G / t of them; when t x cp exceeds a node the ring
crosses the network and every step waits for the chunk that crosses a NIC.
"""

from __future__ import annotations

from . import collectives as nccl
from .states import DTYPE_BYTES

SOURCE = ("Transformer Engine AttnFuncWithCPAndKVP2P (context_parallel.py): cp - 1 K/V "
          "transfers forward, 2 (cp - 1) K/V and dK/dV transfers backward, each beside one "
          "attention block")


SOURCE_ALL_GATHER = ("Transformer Engine AttnFuncWithCPAndKVAllGather (context_parallel.py): K "
                     "and V all-gathered before attention, dK and dV reduce-scattered after it, "
                     "exposed (Llama 3, Dubey et al. 2024 Sec. 3.3.2)")


def _act_bytes(tr) -> int:
    return DTYPE_BYTES["fp32"] if tr.precision == "fp32" else 2


def kv_chunk_bytes(m, tr) -> float:
    """Bytes of one rank's K/V chunk of one layer: b x (s / cp) x (kv heads / t) x head_dim
    x 2 (K and V) x activation bytes."""
    a = m.num_attention_heads or max(1, m.hidden_size // 128)
    kv = m.num_kv_heads or a
    d = m.head_dim or m.hidden_size / a
    t = tr.tensor_parallel
    return (tr.micro_batch_size * tr.local_seq_len * max(kv / t, 1.0) * d * 2
            * _act_bytes(tr))


def q_chunk_bytes(m, tr) -> float:
    """Bytes of one rank's queries (and of the dQ buffer) of one layer."""
    a = m.num_attention_heads or max(1, m.hidden_size // 128)
    d = m.head_dim or m.hidden_size / a
    return tr.micro_batch_size * tr.local_seq_len * a / tr.tensor_parallel * d * _act_bytes(tr)


def ring_buffer_bytes(m, tr) -> dict:
    """HBM the ring holds on top of the stored activations while one layer's attention
    runs: ``forward_bytes`` (the cp K/V chunks the forward keeps until it returns),
    ``backward_bytes`` (2 K/V + 2 dK/dV chunk buffers and the dQ buffer) and
    ``peak_bytes``, the larger. Zero without CP."""
    cp = tr.context_parallel
    if cp <= 1:
        return dict(forward_bytes=0.0, backward_bytes=0.0, peak_bytes=0.0)
    kv = kv_chunk_bytes(m, tr)
    if tr.context_parallel_comm == "all_gather":
        fwd, bwd = 2 * cp * kv, 3 * cp * kv + q_chunk_bytes(m, tr)
    else:
        fwd, bwd = cp * kv, 4 * kv + q_chunk_bytes(m, tr)
    return dict(forward_bytes=fwd, backward_bytes=bwd, peak_bytes=max(fwd, bwd))


def group_nodes(lay, gpus_per_node: int) -> int:
    """Nodes one CP group spans: cp ranks, ``tensor_parallel`` apart."""
    cp = lay.context_parallel
    return nccl.nodes_spanned(cp, nccl.ranks_per_node(cp, lay.tensor_parallel, gpus_per_node))


def recomputes_attention(tr) -> bool:
    """True where the backward re-runs the attention forward (and with it the ring):
    full recomputation, or Megatron's selective recomputation of the attention core."""
    return tr.recompute in ("full", "selective")


def exchange(sc, lay, links: dict, attention_fwd_s: float, attention_bwd_s: float,
             sm_share: float = 0.0) -> dict:
    """The K/V exchange of one layer and one micro-batch on one rank.

    ``attention_fwd_s`` / ``attention_bwd_s``: the rank's attention-core seconds of one
    layer (all cp blocks). Returns ``{}`` without CP, else ``link`` ("nvlink" or "nic"),
    ``kv_chunk_bytes``, ``transfer_s`` (one chunk: one NCCL step's alpha, as a two-rank
    ring step, plus bytes over the link), ``block_fwd_s`` / ``block_bwd_s`` (one block's
    attention), ``fwd_exposed_s`` = (cp - 1) max(0, T1 - block_fwd), ``bwd_exposed_s`` =
    2 max(0, T1 - block_bwd) + (cp - 2) max(0, T2 - block_bwd) with T2 the two-chunk
    transfer of the middle steps (plus the forward's again where the backward recomputes
    attention), ``exposed_s`` their sum, ``bytes`` the chunks sent (forward, backward and
    the recomputed forward), ``hidden_s`` the transfer time that hides.

    ``sm_share``: the share of the SMs NCCL's kernels hold while a transfer runs
    (``collectives.sm_share``): the block beside it runs longer by
    ``collectives.sm_contention_s`` (``contention_s``, compute time of the layer), and only
    what the transfer outlasts the stretched block is exposed.

    ``all_gather``: ``transfer_s`` is one all-gather of the sequence's K (or V) over the CP
    group (``collectives.collective_time_s``: NCCL's ring alpha, the bytes at the group's
    bus bandwidth); forward two of them exposed, backward two all-gathers and two
    reduce-scatters of dK, dV (the same size), plus the forward's again where the backward
    recomputes attention."""
    cp = lay.context_parallel
    if cp <= 1:
        return {}
    m, tr = sc.model, sc.training
    nodes = group_nodes(lay, sc.cluster.domain_gpus)
    cross = nodes > 1
    link = "nic" if cross else "nvlink"
    bw = links[link]
    kv = kv_chunk_bytes(m, tr)
    if tr.context_parallel_comm == "all_gather":
        return _all_gather(tr, lay, links, sc.cluster.domain_gpus, nodes, kv,
                           attention_fwd_s, attention_bwd_s)
    alpha = nccl.ring_latency_s("allgather", 2, 2 if cross else 1)
    t1, t2 = alpha + kv / bw, alpha + 2 * kv / bw
    blk_f, blk_b = attention_fwd_s / cp, attention_bwd_s / cp

    def beside(t, blk):
        """(contention, exposed) of a transfer of t seconds beside a block of blk."""
        c = nccl.sm_contention_s(blk, t, sm_share)
        return c, max(0.0, t - blk - c)
    (cf1, ef1), (cb1, eb1), (cb2, eb2) = beside(t1, blk_f), beside(t1, blk_b), beside(t2, blk_b)
    fwd, fwd_c = (cp - 1) * ef1, (cp - 1) * cf1
    bwd, bwd_c = 2 * eb1 + (cp - 2) * eb2, 2 * cb1 + (cp - 2) * cb2
    fwd_bytes, bwd_bytes = (cp - 1) * kv, 2 * (cp - 1) * kv
    busy = (cp - 1) * t1 + 2 * t1 + (cp - 2) * t2
    if recomputes_attention(tr):
        bwd += fwd
        bwd_c += fwd_c
        bwd_bytes += fwd_bytes
        busy += (cp - 1) * t1
    return dict(degree=cp, comm="p2p", link=link, crosses_network=cross, kv_chunk_bytes=kv,
                transfer_s=t1, block_fwd_s=blk_f, block_bwd_s=blk_b,
                fwd_exposed_s=fwd, bwd_exposed_s=bwd, exposed_s=fwd + bwd,
                contention_s=fwd_c + bwd_c, hidden_s=max(0.0, busy - fwd - bwd),
                bytes=fwd_bytes + bwd_bytes, source=SOURCE)


def _all_gather(tr, lay, links: dict, gpus_per_node: int, nodes: int, kv: float,
                attention_fwd_s: float, attention_bwd_s: float) -> dict:
    """``exchange`` for ``context_parallel_comm`` "all_gather" (see the module doc)."""
    cp = lay.context_parallel
    per_node = nccl.ranks_per_node(cp, lay.tensor_parallel, gpus_per_node)
    bus = nccl.bus_bandwidth(per_node, nodes > 1, links["nvlink"], links["nic"])
    one = nccl.collective_time_s("allgather", cp * kv / 2, cp, nodes, bus)   # K (or V) of the sequence
    fwd, bwd = 2 * one, 4 * one
    fwd_bytes = 2 * nccl.ring_volume_factor("allgather", cp) * cp * kv / 2   # (cp - 1) chunks
    bwd_bytes = 2 * fwd_bytes
    if recomputes_attention(tr):
        bwd += fwd
        bwd_bytes += fwd_bytes
    return dict(degree=cp, comm="all_gather", link="nic" if nodes > 1 else "nvlink",
                crosses_network=nodes > 1, kv_chunk_bytes=kv, transfer_s=one,
                block_fwd_s=attention_fwd_s / cp, block_bwd_s=attention_bwd_s / cp,
                fwd_exposed_s=fwd, bwd_exposed_s=bwd, exposed_s=fwd + bwd, contention_s=0.0,
                hidden_s=0.0,
                bytes=fwd_bytes + bwd_bytes, source=SOURCE_ALL_GATHER)
