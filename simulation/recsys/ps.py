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
all_to_all  model-parallel tables (DLRM / TorchRec): pooled embeddings B x sum(dim) x
            bytes go to the samples' owners, (W - 1) / W of them leave each GPU, over
            NVLink to the node's peers and the NIC to the rest; the same back in backward.
both        the dense part's gradients all-reduced over all W GPUs (ring, 2 (W-1)/W of
            the buffer per rank; Patarasuk & Yuan 2009), after the dense compute. Row
            reads from the memory tiers are the same in both and are prefetched a batch
            ahead (a task on its own stream). Row ids (8 B per lookup) are not counted.

MoE experts per layer (T tokens, top-k routing over E experts of P parameters):

ps          each worker pulls the experts its T k / W routed tokens touch (E[distinct
            experts], uniform or Zipf routing) and pushes their gradients; the pulls are
            prefetched layer by layer, the pushes follow each layer's backward.
all_to_all  expert parallelism (GShard, Lepikhin et al. 2020): tokens go to their
            experts and back, in forward and again in backward: 4 all-to-alls of
            T k h bytes / W per rank, (W - 1) / W of it remote.
"""

from __future__ import annotations

from ..scheduler import TaskGraph, simulate
from . import zipf
from .spec import DTYPE_BYTES, RecModelSpec

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


def _a2a(g, name, per_rank_bytes, num_gpus, gpus_per_node, deps, label="all_to_all"):
    """An all-to-all's share for one rank: (G-1)/(W-1) of it to node peers over NVLink,
    the rest over the NIC."""
    if num_gpus <= 1 or per_rank_bytes <= 0:
        return []
    local = per_rank_bytes * (gpus_per_node - 1) / (num_gpus - 1)
    return [t for t in (_send(g, f"{name} (NVLink)", local, ["nvlink"], deps, label),
                        _send(g, f"{name} (NIC)", per_rank_bytes - local, ["nic_out", "nic_in"],
                              deps, label)) if t is not None]


def _allreduce(g, nbytes, num_gpus, gpus_per_node, deps):
    path = ["nic_out", "nic_in"] if num_gpus > gpus_per_node else ["nvlink"]
    return _send(g, "dense all-reduce", ring_allreduce_bytes(nbytes, num_gpus), path, deps,
                 "allreduce")


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
    k = spec.batch_size / num_gpus
    return [zipf.expected_distinct(k * t.lookups_per_sample, t.rows, spec.alpha(t))
            for t in spec.tables]


def embedding_designs(spec: RecModelSpec, *, num_gpus: int, gpus_per_node: int,
                      nic_bytes_per_s: float | None, scaleup_bytes_per_s: float,
                      dense_step_s: float, lookup_s: float = 0.0,
                      network_efficiency: float = 0.8) -> dict:
    """Step time and traffic of a parameter server and of model-parallel all-to-all."""
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
    touched = touched_rows_per_worker(spec, w)
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
    if lookup_s:
        g.compute("row reads (next batch, prefetched)", "lookup", lookup_s)
    fwd = _a2a(g, "pooled embeddings all-to-all", a2a, w, gpn, [])
    c = g.compute("dense forward + backward", "gpu", dense_step_s, deps=fwd)
    _a2a(g, "embedding gradients all-to-all", a2a, w, gpn, [c])
    _allreduce(g, dense_bytes, w, gpn, [c])
    remote = (w - gpn) / (w - 1) if w > 1 else 0.0
    traffic = dict(forward_all_to_all=w * a2a, backward_all_to_all=w * a2a,
                   dense_allreduce=allreduce_total)
    d_a2a = _result("all_to_all", g, traffic, 2 * w * a2a * remote + net(
        ring_allreduce_bytes(dense_bytes, w)))

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
