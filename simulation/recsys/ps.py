"""Parameter server versus collectives, for embedding tables and for MoE experts.

Each design's step is a small task graph on one representative worker GPU (ranks are
symmetric, as in :mod:`simulation.stepgraph`), run by the bandwidth scheduler so that
transfers sharing a link share its bandwidth. Per-GPU links: ``nvlink`` (scale-up),
``nic_out`` / ``nic_in`` (the node's NIC / GPUs per node, each way) and, for a parameter
server, ``server_out`` / ``server_in``: the S servers' NICs shared by the W workers
(S x server NIC / W each; keys hash evenly over shards). Every link runs at
``network_efficiency`` of its figure.

Embeddings (batch B global, W workers, table t with L_t lookups per sample):

ps          pull the rows this worker's batch touches, E[distinct rows in B L_t / W
            Zipf draws] (:func:`.zipf.expected_distinct`), dense compute, push their
            gradients (the same bytes), servers forward each push to replication - 1
            backups. Bytes on wire = touched rows x row bytes x 2 (+ replication).
            Synchronous: a pull waits for the previous push.
all_to_all  model-parallel tables (DLRM / TorchRec / HugeCTR): pooled embeddings
            B x sum(dim) x bytes go to the samples' owners, (W - 1) / W of them leave each
            GPU, over NVLink to the node's peers and the NIC to the rest; the same back in
            backward. With the step's kernels (:mod:`.step`, ``kernels``) the GPU runs, one
            at a time: embedding gather, bottom MLP, (forward all-to-all) interaction and
            top MLP forward and backward, bottom MLP backward, (backward all-to-all)
            embedding backward and update, (dense all-reduce) dense optimizer; the
            collectives overlap whatever kernels do not wait for them. Each all-to-all
            pays one NCCL latency, base + one hop (NCCL sends to all peers at once;
            :mod:`simulation.collectives`), the all-reduce NCCL's ring or tree alpha; the
            latencies queue on one ``nccl`` stream, as NCCL calls on one communicator do.
both        the dense part's gradients all-reduced over all W GPUs (ring, 2 (W-1)/W of
            the buffer per rank; Patarasuk & Yuan 2009), after the dense compute. Row
            reads from the tiers below HBM are prefetched a batch ahead (a task on its own
            stream). Row ids (8 B per lookup) are not counted.

MoE experts per layer (T tokens, top-k routing over E experts of P parameters):

ps          each worker pulls the experts its T k / W routed tokens touch (E[distinct
            experts], uniform or Zipf routing) and pushes their gradients; the pulls are
            prefetched layer by layer, the pushes follow each layer's backward.
all_to_all  expert parallelism (GShard, Lepikhin et al. 2020): tokens go to their
            experts and back, in forward and again in backward: 4 all-to-alls of
            T k h bytes / W per rank, (W - 1) / W of it remote.
"""

from __future__ import annotations

from ..collectives import (BASE_LATENCY_S, RING_HOP_LATENCY_S, all_reduce_choice,
                           nodes_spanned)
from ..scheduler import TaskGraph, simulate
from . import zipf
from .spec import DTYPE_BYTES, RecModelSpec
from .step import distinct_rows

GRAD_BYTES = 4                 # fp32 gradients of the dense part (mixed-precision training)


def ring_allreduce_bytes(nbytes: float, n: int) -> float:
    """Bytes one rank sends in a ring all-reduce over n ranks."""
    return 2 * (n - 1) / n * nbytes if n > 1 else 0.0


def _graph(num_gpus, gpus_per_node, nic_bytes_per_s, scaleup_bytes_per_s, servers,
           server_nic_bytes_per_s, eff) -> TaskGraph:
    g = TaskGraph()
    g.add_link("nvlink", scaleup_bytes_per_s * eff)
    if nic_bytes_per_s:
        g.add_link("nic_out", nic_bytes_per_s / gpus_per_node * eff)
        g.add_link("nic_in", nic_bytes_per_s / gpus_per_node * eff)
    if servers:
        share = servers * server_nic_bytes_per_s * eff / num_gpus
        g.add_link("server_out", share)
        g.add_link("server_in", share)
    return g


def _send(g, name, nbytes, path, deps=(), label="transfer"):
    """A transfer, or nothing when there is nothing to send (returns None)."""
    if nbytes <= 0:
        return None
    return g.transfer(name, nbytes, path, deps=[d for d in deps if d is not None], label=label)


def all_to_all_latency_s(num_gpus: int, gpus_per_node: int) -> float:
    """Alpha of one all-to-all: NCCL's base latency plus one hop, over the network once
    the group spans nodes (every peer is sent to at once, so the hops do not add up)."""
    if num_gpus <= 1:
        return 0.0
    hop = "net" if num_gpus > gpus_per_node else "nvlink"
    return BASE_LATENCY_S + RING_HOP_LATENCY_S[hop]


def _a2a(g, name, per_rank_bytes, num_gpus, gpus_per_node, deps, label="all_to_all",
         latency=False):
    """An all-to-all's share for one rank: (G-1)/(W-1) of it to node peers over NVLink,
    the rest over the NIC; with ``latency``, after its alpha (a task on the ``nccl``
    stream)."""
    if num_gpus <= 1 or per_rank_bytes <= 0:
        return []
    if latency:
        deps = [g.compute(f"{name} latency", "nccl", all_to_all_latency_s(num_gpus, gpus_per_node),
                          deps=[d for d in deps if d is not None], label=label)]
    local = per_rank_bytes * (gpus_per_node - 1) / (num_gpus - 1)
    return [t for t in (_send(g, f"{name} (NVLink)", local, ["nvlink"], deps, label),
                        _send(g, f"{name} (NIC)", per_rank_bytes - local, ["nic_out", "nic_in"],
                              deps, label)) if t is not None]


def _allreduce(g, nbytes, num_gpus, gpus_per_node, deps, latency=False):
    """The dense gradients' ring all-reduce. Without ``latency`` (the graphs without
    kernels) a multi-node ring sends all its bytes over the NIC. With it, as NCCL's rings
    run (one per NIC, :func:`simulation.collectives.bus_bandwidth`): of a rank's bytes,
    (k - 1) / k go to a node peer over NVLink and 1 / k over its NIC (k = GPUs per
    node), after NCCL's ring or tree alpha."""
    if not latency or num_gpus <= gpus_per_node or gpus_per_node <= 1:
        path = ["nic_out", "nic_in"] if num_gpus > gpus_per_node else ["nvlink"]
        parts = [("", ring_allreduce_bytes(nbytes, num_gpus), path)]
    else:
        v, k = ring_allreduce_bytes(nbytes, num_gpus), gpus_per_node
        parts = [(" (NVLink)", v * (k - 1) / k, ["nvlink"]), (" (NIC)", v / k, ["nic_out", "nic_in"])]
    if latency and num_gpus > 1:
        bw = min(g.link_bw[g.links[p]] for _, _, path in parts for p in path)
        if len(parts) > 1:
            bw *= gpus_per_node          # the NIC carries 1/k of a rank's bytes
        _, alpha, _ = all_reduce_choice(nbytes, num_gpus, nodes_spanned(num_gpus, gpus_per_node), bw)
        deps = [g.compute("dense all-reduce latency", "nccl", alpha,
                          deps=[d for d in deps if d is not None], label="allreduce")]
    sent = [_send(g, f"dense all-reduce{name}", b, path, deps, "allreduce") for name, b, path in parts]
    return [t for t in sent if t is not None]


def _result(design, g, traffic, network_bytes) -> dict:
    """Simulate; ``demand_s`` of a link = its bytes / its bandwidth (the least time it needs)."""
    s = simulate(g.arrays())
    links = [dict(name=n, bytes=float(s.link_bytes[i]), busy_s=float(s.link_busy_s[i]),
                  demand_s=float(s.link_bytes[i]) / g.link_bw[i]) for n, i in g.links.items()]
    traffic = {k: float(v) for k, v in traffic.items()}
    return dict(design=design, step_time_s=float(s.makespan_s), bytes_on_wire=sum(traffic.values()),
                network_bytes=float(network_bytes), traffic_bytes=traffic, links=links)


def _t(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def _compare(designs: list, what: str) -> dict:
    fast, slow = sorted(designs, key=lambda d: d["step_time_s"])
    speedup = slow["step_time_s"] / fast["step_time_s"] if fast["step_time_s"] > 0 else 1.0
    neck = max(slow["links"], key=lambda x: x["demand_s"], default=None)
    why = (f"; {slow['design']}'s busiest link is {neck['name']} ({_t(neck['demand_s'])} of "
           "transfers)" if neck and neck["demand_s"] > 0 else "")
    note = (f"{what}: {fast['design']} is {speedup:.2f}x faster than {slow['design']} "
            f"({_t(fast['step_time_s'])} vs {_t(slow['step_time_s'])} per step, "
            f"{fast['bytes_on_wire'] / 1e9:.3g} vs {slow['bytes_on_wire'] / 1e9:.3g} GB moved){why}.")
    return dict(available=True, designs=designs, faster=fast["design"], speedup=speedup, notes=[note])


# ------------------------------------------------------------------ embeddings
def touched_rows_per_worker(spec: RecModelSpec, num_gpus: int) -> list:
    """Expected distinct rows of each table one worker's share of the batch touches."""
    return distinct_rows(spec, spec.batch_size / num_gpus)


def embedding_designs(spec: RecModelSpec, *, num_gpus: int, gpus_per_node: int,
                      nic_bytes_per_s: float | None, scaleup_bytes_per_s: float,
                      dense_step_s: float, lookup_s: float = 0.0,
                      network_efficiency: float = 0.8, kernels: dict | None = None,
                      prefetch_s: float | None = None, touched: list | None = None) -> dict:
    """Step time and traffic of a parameter server and of model-parallel all-to-all.

    ``kernels``: the GPU's kernels of one step (:func:`.step.step_kernels`); without them
    the all-to-all design's GPU runs only ``dense_step_s`` and its collectives have no
    latency. ``prefetch_s``: the all-to-all design's row reads from the tiers below HBM
    (the HBM gather is a kernel); None: ``lookup_s``. ``touched``: the distinct rows per
    table of one worker's share of the batch, when already known."""
    w, gpn = num_gpus, min(gpus_per_node, num_gpus)
    if not nic_bytes_per_s:
        return dict(available=False, designs=[], notes=[
            "Parameter server not compared: it needs the NIC bandwidth (cluster.nic_bytes_per_s)."])
    nodes = max(1, w // gpn)
    ps = spec.ps
    servers = ps.servers or nodes
    dense_bytes = spec.dense_params["total"] * GRAD_BYTES
    allreduce_total = w * ring_allreduce_bytes(dense_bytes, w)
    net = lambda per_rank: w * per_rank if w > gpn else 0.0    # noqa: E731
    args = (w, gpn, nic_bytes_per_s, scaleup_bytes_per_s)

    # parameter server
    touched = touched_rows_per_worker(spec, w) if touched is None else touched
    pull = sum(n * t.value_bytes for n, t in zip(touched, spec.tables))
    g = _graph(*args, servers, ps.server_nic_bytes_per_s, network_efficiency)
    if lookup_s:
        g.compute("row reads (next batch, prefetched)", "lookup", lookup_s)
    p = _send(g, "pull touched rows", pull, ["server_out", "nic_in"], label="ps_pull")
    c = g.compute("dense forward + backward", "gpu", dense_step_s, deps=[p])
    q = _send(g, "push row gradients", pull, ["nic_out", "server_in"], [c], "ps_push")
    _send(g, "replicate pushes", (ps.replication - 1) * pull, ["server_out", "server_in"], [q],
          "ps_replication")
    _allreduce(g, dense_bytes, *args[:2], [c])
    traffic = dict(pull=w * pull, push=w * pull, replication=w * (ps.replication - 1) * pull,
                   dense_allreduce=allreduce_total, heartbeat=0.0)
    d_ps = _result("parameter_server", g, traffic, 0.0)
    beats = (nodes + servers) * ps.heartbeat_bytes * d_ps["step_time_s"] / ps.heartbeat_interval_s
    d_ps["traffic_bytes"]["heartbeat"] = beats
    d_ps["bytes_on_wire"] += beats
    d_ps["network_bytes"] = d_ps["bytes_on_wire"] - (0.0 if w > gpn else allreduce_total)
    d_ps.update(servers=servers, replication=ps.replication,
                touched_rows_per_worker=sum(touched),
                lookups_per_worker=spec.batch_size / w * sum(t.lookups_per_sample for t in spec.tables))

    # model-parallel embeddings, all-to-all of pooled embeddings
    pooled = spec.batch_size * sum(t.dim for t in spec.tables) * DTYPE_BYTES[spec.comm_dtype]
    a2a = pooled / w * (w - 1) / w                      # what one rank sends, each way
    g = _graph(*args, None, 0, network_efficiency)
    pre = lookup_s if prefetch_s is None else prefetch_s
    if pre:
        g.compute("row reads (next batch, prefetched)", "lookup", pre)
    if kernels is None:
        fwd = _a2a(g, "pooled embeddings all-to-all", a2a, w, gpn, [])
        c = g.compute("dense forward + backward", "gpu", dense_step_s, deps=fwd)
        _a2a(g, "embedding gradients all-to-all", a2a, w, gpn, [c])
        _allreduce(g, dense_bytes, w, gpn, [c])
    else:
        run = lambda name, ks, deps=(): g.compute(          # noqa: E731
            name, "gpu", sum(k.seconds for k in ks), deps=[d for d in deps if d is not None])
        e_f = run("embedding forward", kernels["embedding_forward"])
        b_f = run("bottom MLP forward", kernels["bottom_forward"])
        fwd = _a2a(g, "pooled embeddings all-to-all", a2a, w, gpn, [e_f], latency=True) or [e_f]
        top = run("interaction + top MLP forward and backward",
                  kernels["top_forward"] + kernels["top_backward"], fwd + [b_f])
        bwd = _a2a(g, "embedding gradients all-to-all", a2a, w, gpn, [top], latency=True) or [top]
        b_b = run("bottom MLP backward", kernels["bottom_backward"], [top])
        run("embedding backward + update", kernels["embedding_backward"], bwd)
        ar = _allreduce(g, dense_bytes, w, gpn, [b_b], latency=True)
        run("dense optimizer", kernels["dense_optimizer"], ar + [b_b])
    remote = (w - gpn) / (w - 1) if w > 1 else 0.0
    traffic = dict(forward_all_to_all=w * a2a, backward_all_to_all=w * a2a,
                   dense_allreduce=allreduce_total)
    d_a2a = _result("all_to_all", g, traffic, 2 * w * a2a * remote + net(
        ring_allreduce_bytes(dense_bytes, w)))
    if kernels is not None:
        d_a2a["gpu_kernels_s"] = {g: sum(k.seconds for k in ks) for g, ks in kernels.items()}
        d_a2a["gpu_busy_s"] = sum(d_a2a["gpu_kernels_s"].values())

    out = _compare([d_ps, d_a2a], "Embeddings")
    out["notes"] += [
        f"Each worker touches {sum(touched):,.0f} distinct rows for "
        f"{d_ps['lookups_per_worker']:,.0f} lookups per step (Zipf skew dedups them); the "
        f"parameter server moves those rows, all-to-all moves {a2a / 1e6:.3g} MB of pooled "
        "embeddings per GPU each way.",
        f"{servers} PS shard(s) at {ps.server_nic_bytes_per_s / 1e9:g} GB/s each serve {w} "
        "workers; more shards raise the PS's bandwidth. A synchronous PS is modelled: an "
        "asynchronous one hides the pull behind compute at the cost of stale rows."]
    return out


# ------------------------------------------------------------------ MoE experts
def moe_designs(*, experts: int, expert_params: float, tokens: float, top_k: int, hidden: int,
                num_gpus: int, gpus_per_node: int, nic_bytes_per_s: float | None,
                scaleup_bytes_per_s: float, layers: int = 1, compute_s: float = 0.0,
                param_bytes: float = 2, grad_bytes: float | None = None, act_bytes: float = 2,
                servers: int | None = None, server_nic_bytes_per_s: float = 50e9,
                routing_alpha: float = 0.0, network_efficiency: float = 0.8) -> dict:
    """Expert parameter server (pull expert weights) versus expert-parallel all-to-all
    of tokens, for ``layers`` MoE layers; ``tokens`` per step over all GPUs,
    ``compute_s`` the step's compute (1/3 forward, 2/3 backward)."""
    w, gpn = num_gpus, min(gpus_per_node, num_gpus)
    if not nic_bytes_per_s:
        return dict(available=False, designs=[], notes=[
            "Expert parameter server not compared: it needs the NIC bandwidth."])
    grad_bytes = param_bytes if grad_bytes is None else grad_bytes
    servers = servers or max(1, w // gpn)
    fwd_s, bwd_s = compute_s / 3 / layers, 2 * compute_s / 3 / layers
    args = (w, gpn, nic_bytes_per_s, scaleup_bytes_per_s)

    touched = zipf.expected_distinct(tokens / w * top_k, experts, routing_alpha)
    pull, push = touched * expert_params * param_bytes, touched * expert_params * grad_bytes
    g = _graph(*args, servers, server_nic_bytes_per_s, network_efficiency)
    prev_pull = prev_c = None
    for i in range(layers):
        prev_pull = _send(g, f"L{i} pull experts", pull, ["server_out", "nic_in"], [prev_pull], "ps_pull")
        prev_c = g.compute(f"L{i} forward", "gpu", fwd_s, deps=[prev_c, prev_pull])
    for i in reversed(range(layers)):
        prev_c = g.compute(f"L{i} backward", "gpu", bwd_s, deps=[prev_c])
        _send(g, f"L{i} push expert gradients", push, ["nic_out", "server_in"], [prev_c], "ps_push")
    d_ps = _result("expert_parameter_server", g,
                   dict(pull=w * layers * pull, push=w * layers * push), w * layers * (pull + push))
    d_ps["experts_touched_per_worker"] = touched

    a2a = tokens / w * top_k * hidden * act_bytes * (w - 1) / w     # per rank, one direction
    g = _graph(*args, None, 0, network_efficiency)
    prev = []
    for i in range(layers):
        prev = _a2a(g, f"L{i} dispatch", a2a, w, gpn, prev)
        c = g.compute(f"L{i} forward", "gpu", fwd_s, deps=prev)
        prev = _a2a(g, f"L{i} combine", a2a, w, gpn, [c]) or [c]
    for i in reversed(range(layers)):
        prev = _a2a(g, f"L{i} combine gradients", a2a, w, gpn, prev) or prev
        c = g.compute(f"L{i} backward", "gpu", bwd_s, deps=prev)
        prev = _a2a(g, f"L{i} dispatch gradients", a2a, w, gpn, [c]) or [c]
    remote = (w - gpn) / (w - 1) if w > 1 else 0.0
    d_a2a = _result("expert_all_to_all", g, dict(all_to_all=4 * layers * w * a2a),
                    4 * layers * w * a2a * remote)
    out = _compare([d_ps, d_a2a], "MoE experts")
    out["notes"].append(
        f"Each worker's {tokens / w * top_k:,.0f} routed tokens per layer touch "
        f"{touched:.3g} of {experts} experts ({touched * expert_params * param_bytes / 1e9:.3g} GB "
        "to pull); all-to-all moves the tokens instead. Non-expert parameters are all-reduced "
        "in both designs (not counted).")
    return out
