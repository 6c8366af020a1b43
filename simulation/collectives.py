"""Collectives as NCCL runs them: where a group's ranks sit, and each collective's latency.

A collective over n ranks that moves V bytes per rank takes

    T = alpha + V / B_bus

(the alpha-beta model of Hockney 1994, as NCCL's own tuner uses it to choose an algorithm:
``ncclTopoGetAlgoTime`` in src/graph/tuning.cc, ``time = lat + nBytes / (1000 * bw)``).
The bandwidth part is simulated by the scheduler on the links the ring crosses
(``stepgraph.collective``); this module gives alpha and the group's layout.

Latency (NCCL src/graph/tuning.cc, ``ncclTopoTuneModel``, NVIDIA/nccl at commit
5067397c, 2026; the same constants since NCCL 2.12), Simple protocol, which NCCL picks
for the large messages of training:

* ring all-gather / reduce-scatter: nsteps = n - 1 ring steps of which nNodes - 1
  cross the network; all-reduce: 2(n - 1) steps, 2(nNodes - 1) across the network;
  alpha = baseLat + (nsteps - nInter) * intraLat + nInter * interLat, with baseLat
  8.4 us, intraLat 3.4 us over NVLink (5.7 us over PCIe; at least 3 x 1 us network
  post overhead once the ring spans nodes), interLat 14 us. A multi-node ring
  all-reduce has its latency x 1.4 (the "plateau effect of ring", compute capability 8.0
  and later; ``ncclTopoGetAlgoTime``).
* tree all-reduce (double binary tree across nodes, chain inside one): alpha = 8.4 us +
  2 * ((n / nNodes - 1) * 4.0 us + log2(nNodes) * 14 us); bandwidth 0.92 of the ring's
  and NCCL's per-size correction factor (``treeCorrectionFactor``, Simple row); the
  algorithm bandwidth is half the bus bandwidth, so a rank moves 2 S / 0.92 for S bytes.
  NCCL takes whichever of ring and tree is faster for the size (``all_reduce_choice``).

Where a group's ranks sit (``ranks_per_node``): Megatron and torch lay ranks out with
tensor parallelism innermost (ranks t*i .. t*i + t - 1 form a TP group), then data
parallelism, then pipeline (Megatron ``RankGenerator`` order "tp-cp-ep-dp-pp"). A
data-parallel group is strided by the TP degree, so one node holds G / t of its ranks;
when TP fills a node (t = G) each data-parallel group has one rank per node and every
hop of its ring crosses the network.
"""

from __future__ import annotations

import math

US = 1e-6
BASE_LATENCY_S = 8.4 * US                  # baseLat, Ring and Tree, Simple
RING_HOP_LATENCY_S = {"nvlink": 3.4 * US, "pcie": 5.7 * US, "net": 14.0 * US}
TREE_HOP_LATENCY_S = {"nvlink": 4.0 * US, "pcie": 4.0 * US, "net": 14.0 * US}
NET_OVERHEAD_SIMPLE_S = 3 * 1.0 * US       # getNetOverhead (x86 Intel 1 us) x 3 for Simple
RING_ALLREDUCE_PLATEAU = 1.4               # multi-node ring all-reduce, compute capability >= 8.0
TREE_BANDWIDTH_FACTOR = 0.92               # busBw * .92 for tree all-reduce
# treeCorrectionFactor[Simple], indexed by log2(bytes / 64), 64 B .. 256 MB
TREE_CORRECTION_SIMPLE = (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8,
                          .7, .7, .8, .9, .9, .9)


def ranks_per_node(group: int, stride: int, gpus_per_node: int) -> int:
    """Ranks of one group on one node: the group's ranks are ``stride`` apart (the product
    of the degrees laid out inside it), so a node of G GPUs holds max(1, G / stride) of
    them, and never more than the group has."""
    return max(1, min(group, gpus_per_node // max(stride, 1)))


def scaleup_gpus(cluster) -> int:
    """GPUs one NVLink (scale-up) domain joins: ``cluster.nvlink_domain_gpus`` where the
    cluster gives it (GB200 NVL72: 72, over 18 hosts of 4), else the host's
    ``gpus_per_node`` (HGX/DGX: the NVSwitch fabric of one host). Never more than the
    cluster's GPUs."""
    d = getattr(cluster, "nvlink_domain_gpus", None) or cluster.gpus_per_node
    return max(1, min(d, cluster.num_gpus))


def group_span(group: int, stride: int, cluster) -> tuple[int, int]:
    """``(ranks in one NVLink domain, NVLink domains spanned)`` of a group of ``group``
    ranks ``stride`` apart (the product of the degrees laid out inside it: 1 for TP, t for
    data parallelism, t x shard for HSDP's replicas, num_gpus / p for pipeline
    neighbours): the one place that decides which link a group's collective crosses.
    Inside one domain (``domains == 1``) every hop is NVLink; across domains a ring makes
    ``ranks`` NVLink hops per domain and one on the NIC (``bus_bandwidth``), and NCCL's
    latency counts the domains as its nodes (``ring_latency_s``). The host
    (``gpus_per_node``) is not the unit here: its DDR, NVMe, CPU cores and NICs are.

    Where ``stride`` or the group does not divide the domain (TP 16 in a domain of 72)
    the domain is taken to hold floor(domain / stride) of the group's ranks, as
    ``ranks_per_node``; a group that straddles two domains is not singled out."""
    k = ranks_per_node(group, stride, scaleup_gpus(cluster))
    return k, nodes_spanned(group, k)


def nodes_spanned(group: int, per_node: int) -> int:
    """Nodes a group of ``group`` ranks, ``per_node`` of them on each node, spans."""
    return max(1, -(-group // max(per_node, 1)))


def ring_latency_s(kind: str, n: int, n_nodes: int, intra: str = "nvlink") -> float:
    """Alpha of a ring collective (``kind`` allgather, reduce_scatter or allreduce) over
    ``n`` ranks on ``n_nodes`` nodes, Simple protocol (NCCL tuning.cc, see module doc)."""
    if n <= 1:
        return 0.0
    ar = kind == "allreduce"
    nsteps = 2 * (n - 1) if ar else n - 1
    n_inter = 0 if n_nodes <= 1 else (2 * (n_nodes - 1) if ar else n_nodes - 1)
    hop = RING_HOP_LATENCY_S[intra]
    if n_nodes > 1:
        hop = max(hop, NET_OVERHEAD_SIMPLE_S)
    lat = BASE_LATENCY_S + (nsteps - n_inter) * hop + n_inter * RING_HOP_LATENCY_S["net"]
    return lat * RING_ALLREDUCE_PLATEAU if ar and n_nodes > 1 else lat


def tree_allreduce_latency_s(n: int, n_nodes: int, intra: str = "nvlink") -> float:
    """Alpha of NCCL's tree all-reduce: 8.4 us + 2((n/nodes - 1) intra + log2(nodes) net)."""
    if n <= 1:
        return 0.0
    log_nodes = int(math.log2(n_nodes)) if n_nodes >= 1 else 0      # log2i: floor
    return BASE_LATENCY_S + 2 * ((n // max(n_nodes, 1) - 1) * TREE_HOP_LATENCY_S[intra]
                                 + log_nodes * TREE_HOP_LATENCY_S["net"])


def tree_correction(nbytes: float) -> float:
    """NCCL's tree all-reduce bandwidth correction for a message of ``nbytes``."""
    if nbytes < 64:
        return 1.0
    k = int(math.log2(nbytes / 64))
    return TREE_CORRECTION_SIMPLE[k] if k < len(TREE_CORRECTION_SIMPLE) - 1 else 1.0


def ring_volume_factor(kind: str, n: int) -> float:
    """Bytes one rank sends per byte of buffer in a ring: (n-1)/n, all-reduce 2(n-1)/n
    (Patarasuk & Yuan 2009)."""
    if n <= 1:
        return 0.0
    return (2 if kind == "allreduce" else 1) * (n - 1) / n


# NVLink SHARP (NVLS: the NVSwitch reduces, NCCL 2.17+ on third-generation NVSwitch, HGX
# H100/H200, B200): an 8-GPU H100 all-reduce reaches "a peak busBw of ~480GB/s", where ring
# (and every non-all-reduce collective) gets the "effective NVLink bandwidth of 370GB/s"
# (S. Jeaugey, NVIDIA/nccl-tests issue #212, 2024): the same bytes at 480/370 the speed.
NVLS_ALLREDUCE_GAIN = 480 / 370


def nvls_allreduce_bytes(nbytes: float, n: int) -> float:
    """Bytes at the ring's bus bandwidth that take as long as an NVLS all-reduce of
    ``nbytes`` over ``n`` ranks of one node: 2(n-1)/n x nbytes x 370/480."""
    return ring_volume_factor("allreduce", n) * nbytes / NVLS_ALLREDUCE_GAIN


def all_reduce_choice(nbytes: float, n: int, n_nodes: int, bus_bytes_per_s: float,
                      nvls: bool = False) -> tuple:
    """(algorithm, alpha_s, bytes one rank moves) of the all-reduce of ``nbytes``: ring or
    tree, whichever NCCL's model finds faster at bus bandwidth ``bus_bytes_per_s``.
    A tree is considered only across nodes (inside one node NCCL's tree is a chain);
    inside a node whose NVSwitches reduce (``nvls``) NCCL runs NVLS, its bytes expressed
    at the ring's bus bandwidth (``nvls_allreduce_bytes``; alpha taken as the ring's)."""
    ring_v = ring_volume_factor("allreduce", n) * nbytes
    ring = ("ring", ring_latency_s("allreduce", n, n_nodes), ring_v)
    if nvls and n > 1 and n_nodes <= 1:
        return ("nvls", ring[1], nvls_allreduce_bytes(nbytes, n))
    if n <= 1 or n_nodes <= 1 or bus_bytes_per_s <= 0:
        return ring
    tree_v = 2 * nbytes / (TREE_BANDWIDTH_FACTOR * tree_correction(nbytes))
    tree = ("tree", tree_allreduce_latency_s(n, n_nodes), tree_v)
    t = lambda c: c[1] + c[2] / bus_bytes_per_s       # noqa: E731
    return tree if t(tree) < t(ring) else ring


def bus_bandwidth(per_node: int, spans_nodes: bool, nvlink_bytes_per_s: float,
                  nic_bytes_per_s: float) -> float:
    """Bytes/s a rank's ring traffic moves at when nothing else runs: inside a node the
    NVLink rate; across nodes the ring's k = ``per_node`` hops per node put (k-1)/k of a
    rank's bytes on NVLink and 1/k on its NIC (one ring per NIC, NCCL channels), so the
    slower of NVLink * k/(k-1) and NIC * k binds (``stepgraph.collective``)."""
    if not spans_nodes:
        return nvlink_bytes_per_s
    if per_node <= 1:
        return nic_bytes_per_s
    return min(nvlink_bytes_per_s * per_node / (per_node - 1), nic_bytes_per_s * per_node)


def collective_time_s(kind: str, nbytes: float, n: int, n_nodes: int,
                      bus_bytes_per_s: float, nvls: bool = False) -> float:
    """alpha + V / B_bus of one collective on an idle network: what nccl-tests times.
    ``nbytes`` is nccl-tests' "size" (the whole buffer: the all-gather output, the
    reduce-scatter input, the all-reduce buffer)."""
    if kind == "allreduce":
        _, lat, vol = all_reduce_choice(nbytes, n, n_nodes, bus_bytes_per_s, nvls)
    else:
        lat, vol = ring_latency_s(kind, n, n_nodes), ring_volume_factor(kind, n) * nbytes
    return lat + vol / bus_bytes_per_s


def nccl_tests_busbw(kind: str, nbytes: float, n: int, seconds: float) -> float:
    """nccl-tests' bus bandwidth: algbw = size / time times (n-1)/n (all-gather,
    reduce-scatter) or 2(n-1)/n (all-reduce) (nccl-tests doc/PERFORMANCE.md)."""
    return ring_volume_factor(kind, n) * nbytes / seconds if seconds > 0 else 0.0


# SMs NCCL's kernels hold while a collective runs: one CTA per channel, and "NCCL CTAs
# won't share an SM with compute kernels"; "If you are on DGX with 8 NICs and a top speed
# of 190 GB/s, then it would use 16 SMs" (S. Jeaugey, NCCL maintainer, NVIDIA/nccl issue
# #689, 2023). The same 16 are assumed for NVLink collectives and for Transformer
# Engine's userbuffers kernels (--tp-comm-overlap), which are also SM-driven.
NCCL_CTAS = 16


def sm_share(sms: int | None) -> float:
    """Share of a GPU's ``sms`` streaming multiprocessors NCCL's CTAs hold while a
    collective runs (``NCCL_CTAS`` / SMs): 16/108 = 0.148 on an A100, 16/132 = 0.121 on
    an H100. 0 when the SM count is unknown (no contention modelled)."""
    if not sms or sms <= NCCL_CTAS:
        return 0.0
    return NCCL_CTAS / sms


def sm_contention_s(compute_s: float, comm_s: float, share: float) -> float:
    """Seconds a compute kernel of ``compute_s`` (alone) runs longer while collectives of
    ``comm_s`` (their idle-network time) overlap it, NCCL holding ``share`` of the SMs.

    While the collective runs the compute proceeds on the other SMs, at 1 - share of its
    rate (work conserving; Matrix Multiplication Background, Sec. 3.2: a GEMM's tiles run
    in waves over the SMs it has): a collective shorter than the stretched compute costs
    comm_s x share, one as long or longer covers all of it, compute_s / (1 - share):
    ``min(compute_s + comm_s * share, compute_s / (1 - share)) - compute_s``.

    Held against Lee et al. 2025 (arXiv 2507.03114, "Characterizing compute-communication
    overlap in GPU-accelerated distributed deep learning", Sec. 5: compute overlapped with
    communication on A100 and H100 runs 18.9 % slower on average, at most 40 %): fully
    overlapped, 1 / (1 - 16/132) = +13.8 % on an H100, 1 / (1 - 16/108) = +17.4 % on an
    A100; the rest of the measured mean is HBM traffic the model leaves out
    (tests/engine/test_collectives.py).
    """
    if share <= 0 or compute_s <= 0 or comm_s <= 0:
        return 0.0
    return min(compute_s + comm_s * share, compute_s / (1 - share)) - compute_s


def nodes_per_leaf(cluster) -> int | None:
    """Nodes one leaf switch reaches: its node-facing ports when the fabric is
    rail-optimised (each of a node's NICs on its own leaf, NIC k of every node on leaf k:
    NVIDIA DGX SuperPOD reference architecture, compute fabric), its ports over the node's
    NICs (one a GPU) otherwise. None: no leaf limit given (one non-blocking fabric)."""
    ports = cluster.leaf_switch_ports
    if not ports:
        return None
    return ports if cluster.rail_optimized else max(1, ports // cluster.gpus_per_node)


def spine_factor(cluster, group_nodes: int) -> float:
    """How much slower a ring whose group spans ``group_nodes`` nodes runs its network hops:
    ``spine_oversubscription`` once the group spans more nodes than a leaf reaches (its
    hops to the next leaf go up through the spine, which has 1/oversubscription of the
    leaf's node-facing bandwidth, and every hop of a ring carries the same bytes at once,
    so the slowest paces it), 1 otherwise. NCCL keeps a ring's traffic on its NIC's rail
    (PXN: the data crosses NVLink to the GPU on the destination's rail first), so on a
    rail-optimised fabric only groups wider than a leaf cross the spine."""
    per_leaf = nodes_per_leaf(cluster)
    if per_leaf is None or group_nodes <= per_leaf:
        return 1.0
    return cluster.spine_oversubscription
