"""Build the task graph of one micro-batch on one representative rank.

Ranks are symmetric, so one rank's graph with its share of every shared resource stands
for all: per-GPU links (PCIe each way, NVLink, its NIC) and the GPU's share of the
node's DDR, NVMe and CXL bandwidth (node figure / GPUs per node).

Per layer of the rank's pipeline stage, forward then backward:

* ZeRO-3 / FSDP: all-gather of each fetch unit's parameters before forward and again
  before backward, issued in order and bounded by a pool of ``1 + prefetch_depth``
  buffers (the unit i+k fetch runs while unit i computes); ``units_per_layer`` units a
  layer (FSDP: the block is one flat unit; DeepSpeed: one per weight tensor, see
  ``step.zero3_granularity``), each computing its share of the layer; ``rs_per_layer``
  reduce-scatters of the layer's gradients after its backward. A prefetch *miss*
  (``prefetch_miss_rate``) issues the fetch only after the previous layer's compute: a
  synchronous fetch that stalls the GPU. ``bwd_fetch_factor`` scales the backward fetch
  (DeepSpeed gathers again what recomputation released). ``sync_fetch``: each fetch
  also waits for the reduce-scatters (and all-reduce across replicas) issued before it,
  as a device-wide synchronize before the all-gather makes it (DeepSpeed v0.3-v0.5,
  ``step.zero3_granularity``).
* Parameters offloaded to DDR/NVMe/CXL: each rank first fetches its shard over PCIe (and
  from NVMe or CXL into DDR on the way), then all-gathers (ZeRO-Infinity).
* Tensor parallelism: Megatron's two all-reduces of s*b*h activations per layer in
  forward and two in backward (four with full recomputation, which reruns the
  forward), on the critical path; with ``tp_comm_overlap`` (Megatron-Core
  --tp-comm-overlap) each beside its share of the layer's compute, the next share
  waiting for both.
* SM contention: a compute unit overlapped by collectives runs longer by
  ``fwd_contention_s`` / ``bwd_contention_s`` (their ``_last_s`` in the last
  micro-batch), NCCL's CTAs holding SMs while they run (``step.sm_contention_s``).
* DDP / ZeRO-1: bucketed all-reduce of gradients after each layer's backward, on the
  last micro-batch only (``overlap_grad_reduce``; without it, as Megatron-LM's own DDP
  by default, every layer's all-reduce waits for the whole backward); ZeRO-2:
  reduce-scatter every micro-batch.
* Optimizer states on NVMe (ZeRO-Infinity): each layer's reduced gradients, in fp32,
  also go from DDR to the drives, and come back with the states of their sub-group
  (``_grads_to_nvme``).
* Activation offload: each layer's checkpoint (2*s*b*h bytes) to DDR after forward and
  back before backward.
* Last micro-batch: the optimizer step (on the GPU at HBM speed, or on the CPU: CPU-Adam
  moves its bytes over the DDR share and, where the node gives its cores, over
  ``cpu_adam``, the rate its cores run the update at, so whichever is lower binds; with
  NVMe/CXL reads and write-backs per 1e9-element sub-group), then the updated parameters
  back to the GPU and, for ZeRO-1/2, their all-gather (with ``overlap_param_gather``,
  Megatron's ``--overlap-param-gather``, instead a layer's share of it ahead of each
  layer's forward, the first share exposed).
* PCIe switches: where the node's topology puts GPUs and drives behind a switch (DGX
  A100), every host-link or drive transfer also crosses the switch's uplink that way
  (``StepGraph``), the rank's share of it being uplink / GPUs behind the switch.
* NVMe: a transfer crosses its direction's link (``nvme_read`` / ``nvme_write``, the
  drives' datasheet rate that way) and ``nvme``, the drives themselves, which reads and
  writes share: capacity the read rate, a written byte weighing read / write rate
  (``nvme_write_weight``), so read_bytes / R + write_bytes / W is the drives' busy time.

Collective volumes per rank are those of a ring: all-gather and reduce-scatter move
(n-1)/n of the buffer, all-reduce 2(n-1)/n (Patarasuk & Yuan 2009; ZeRO Sec. 7), or the
tree's 2/0.92 when NCCL would pick a tree (``dp_allreduce_factor``). Each collective
first waits its alpha (NCCL's latency model, ``simulation.collectives``) on its
communicator's stream ("nccl" for the data-parallel groups, "tp nccl" for tensor
parallelism). A ring that spans nodes is split into its NVLink hops and its inter-node
hop by the group's ranks per node; a strided group (one rank per node) is all network
(``collective``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .scheduler import TaskGraph

# A PCIe switch's uplink to the CPU, each way, where the node's topology puts GPUs and
# drives behind switches: traffic towards the host (GPU -> host, drive -> host) crosses
# "pcie_switch_up", traffic from it (host -> GPU, host -> drive) "pcie_switch_down".
_UP = ("pcie_d2h", "nvme_read")
_DOWN = ("pcie_h2d", "nvme_write")


class StepGraph(TaskGraph):
    """The step's graph: a transfer over the host link or the drives also crosses its PCIe
    switch's uplink (``pcie_switch_up`` / ``pcie_switch_down``, weight 1, appended in that
    order) when the links include it."""

    def transfer(self, name, size_bytes, path, deps=(), acquire=None, release=None,
                 label="transfer", weights=None) -> int:
        extra = [sw for sw, via in (("pcie_switch_up", _UP), ("pcie_switch_down", _DOWN))
                 if sw in self.links and any(p in via for p in path)]
        if extra:
            weights = (list(weights) if weights is not None else [1.0] * len(path)) + [1.0] * len(extra)
            path = list(path) + extra
        return super().transfer(name, size_bytes, path, deps, acquire, release, label, weights)

# Task labels; the C builder emits their index (``label`` array), in this order.
LABELS = ("compute", "allgather", "fetch_miss", "offload", "tp_allreduce", "reduce_scatter",
          "allreduce", "optimizer", "cpu_optimizer", "checkpoint", "transfer")
LABEL_CODE = {name: k for k, name in enumerate(LABELS)}
# Links the builder may use, in the order the C builder takes their indices.
LINK_NAMES = ("nvlink", "nic", "pcie_h2d", "pcie_d2h", "ddr", "nvme_read", "nvme_write", "cxl",
              "nvme", "cpu_adam", "pcie_switch_up", "pcie_switch_down")
TIERS = ("none", "cpu", "nvme", "cxl")

# Adam step traffic per parameter: read grad (4) + master, m, v (12); write master, m,
# v (12) and the low-precision copy (2).
ADAM_BYTES_PER_PARAM = 30.0
SUB_GROUP_ELEMENTS = 1e9


@dataclass(frozen=True)
class RankModel:
    """Plain numbers the graph needs (all per rank)."""
    layers: int
    fwd_s: float                 # one layer's forward compute
    bwd_s: float                 # backward (+ recomputation)
    head_s: float                # embedding/logits forward + backward (last stage)
    unit_params: float           # parameters of one layer on this rank (after TP)
    params_per_rank: float       # Psi / (tp * pp)
    param_bytes: int
    grad_bytes: int
    optimizer_state_bytes: int   # master + moments per parameter (K)
    shard: int                   # ranks the states are sharded over
    shard_link: str              # "nvlink" or "nic"
    replicas: int                # HSDP replica groups (1 otherwise)
    dp: int
    dp_link: str
    gpus_per_node: int           # GPUs of one NVLink domain (a host on HGX/DGX, the rack on
                                 # GB200 NVL72: collectives.scaleup_gpus): a ring's hops per "node"
    stage: int                   # ZeRO stage equivalent
    tp: int
    tp_bytes: float              # one TP all-reduce buffer (s*b*h*2)
    bwd_allreduces: int          # 2, or 4 when full recomputation reruns the forward
    act_ckpt_bytes: float        # one layer's activation checkpoint
    offload_params: str          # none | cpu | nvme | cxl
    offload_optimizer: str
    offload_activations: str
    prefetch_depth: int
    miss_rate: float
    hbm_bytes_per_s: float
    # Collectives as NCCL runs them (simulation.collectives). The defaults are the model
    # without latency: groups as wide as a node, one fetch and one reduce-scatter a layer.
    shard_per_node: int = 0      # shard-group ranks in one NVLink domain (0: gpus_per_node)
    dp_per_node: int = 0         # data-parallel-group ranks in one NVLink domain (0: gpus_per_node)
    replica_link: str = "nic"    # HSDP's all-reduce across replicas: "nic" once the replicas
    replica_per_node: int = 1    # span NVLink domains; its ranks in one domain (0: gpus_per_node)
    units_per_layer: int = 1     # ZeRO-3 fetches per layer (step.rank_model folds DeepSpeed's
                                 # per-tensor fetches into one a layer, see there)
    rs_per_layer: int = 1        # ZeRO-3 gradient reduce-scatters per layer
    gather_latency_s: float = 0.0        # alpha of one parameter all-gather (shard group), and
                                         # any fixed work on its stream (step.list_collective_copy_s)
    reduce_latency_s: float = 0.0        # the same for one gradient reduce-scatter (shard group)
    dp_allreduce_latency_s: float = 0.0  # alpha of one gradient all-reduce (data-parallel group)
    dp_allreduce_factor: float = 0.0     # bytes a rank moves per gradient byte (0: ring 2(n-1)/n)
    dp_gather_latency_s: float = 0.0     # alpha of ZeRO-1/2's parameter all-gather
    replica_latency_s: float = 0.0       # alpha of HSDP's all-reduce across replicas
    tp_latency_s: float = 0.0            # alpha of one tensor-parallel all-reduce
    bwd_fetch_factor: float = 1.0        # backward fetch (bytes and alphas) over forward's:
                                         # DeepSpeed re-gathers what recomputation released
    sync_fetch: bool = False             # a fetch waits for the gradient reduction issued before
                                         # it (DeepSpeed v0.3-v0.5: torch.cuda.synchronize())
    nvme_write_weight: float = 1.0       # a written byte's share of the drives: read / write rate
    overlap_grad_reduce: int = 1         # 0: DDP / ZeRO-1 gradient sync after the backward
    overlap_param_gather: int = 0        # 1: ZeRO-1/2's parameter all-gather in the forward, a
                                         # layer's share before it (Megatron --overlap-param-gather)
    tp_comm_overlap: int = 0             # 1: each TP collective beside its compute chunk
                                         # (Megatron-Core --tp-comm-overlap), not after it
    # Seconds one compute unit (a layer's forward or backward share) takes longer because
    # the collectives that overlap it hold SMs (step.sm_contention_s); the last
    # micro-batch's own (its gradient reduction, the next step's parameter gather).
    tp_allreduce_factor: float = 0.0     # bytes a rank moves per TP all-reduce byte (0: ring
                                         # 2(t-1)/t; NVLS: step.tp_allreduce_factor)
    fwd_contention_s: float = 0.0
    bwd_contention_s: float = 0.0
    fwd_contention_last_s: float = 0.0
    bwd_contention_last_s: float = 0.0
    # the data-parallel gradient collective is a reduce-scatter (Megatron's distributed
    # optimizer): its name only; its bytes are dp_allreduce_factor's
    dp_reduce_scatter: bool = False
    # DDR bytes a parameter's CPU optimizer update moves (simulation.cpu_adam.bytes_per_param:
    # DeepSpeed CPU-Adam 30, torch's for-loop AdamW under FSDP's CPU offload 80) and the
    # name its tasks carry
    cpu_optimizer_bytes_per_param: float = ADAM_BYTES_PER_PARAM
    cpu_optimizer_name: str = "CPU Adam"


def _dp_grad_name(r: "RankModel") -> str:
    return "gradient reduce-scatter" if r.dp_reduce_scatter else "gradient all-reduce"


def ring(kind: str, nbytes: float, n: int) -> float:
    """Bytes one rank sends in a ring collective over n ranks."""
    if n <= 1:
        return 0.0
    return (2 if kind == "allreduce" else 1) * (n - 1) / n * nbytes


def collective(g: TaskGraph, r: "RankModel", name: str, volume: float, link: str, deps,
               label: str, acquire=None, per_node: int = 0, latency_s: float = 0.0,
               stream: str = "nccl") -> int:
    """One rank's part of a ring collective moving ``volume`` bytes; returns its last task.

    alpha-beta (``simulation.collectives``): a ``latency_s`` task on the communicator's
    stream (its collectives start one after another), then the bytes on the links.
    Within a node the ring runs over NVLink. Across nodes NCCL runs one ring per NIC
    (channels): of the k = ``per_node`` hops a ring makes in each node one leaves it, so
    a rank's NIC carries volume / k while NVLink carries the rest, in parallel; a group
    with one rank per node (strided, k = 1) sends everything over the network.
    """
    start = None
    if latency_s > 0:        # the latency task also starts the split below
        start = g.compute(f"{name} (latency)", stream, latency_s, deps=deps, acquire=acquire,
                          label=label)
        deps, acquire = [start], None
    k = per_node or r.gpus_per_node
    if link != "nic" or k <= 1:
        return g.transfer(name, volume, [link], deps=deps, acquire=acquire, label=label)
    if start is None:
        start = g.compute(f"{name} (start)", "sync", 0.0, deps=deps, acquire=acquire, label=label)
    a = g.transfer(f"{name} (NVLink hops)", volume * (k - 1) / k, ["nvlink"], deps=[start],
                   label=label)
    b = g.transfer(f"{name} (inter-node hop)", volume / k, ["nic"], deps=[start], label=label)
    return g.compute(f"{name} (done)", "sync", 0.0, deps=[a, b], label=label)


def _tier_path(tier: str, direction: str, r: "RankModel | None" = None) -> tuple:
    """Links a transfer between HBM and an offload tier crosses, and its weight on each."""
    pcie = "pcie_h2d" if direction == "in" else "pcie_d2h"
    if tier == "nvme":
        if direction == "in":
            return ["nvme_read", "nvme", pcie], [1.0, 1.0, 1.0]
        return ["nvme_write", "nvme", pcie], [1.0, r.nvme_write_weight, 1.0]
    if tier == "cxl":
        return ["cxl", pcie], None
    return ["ddr", pcie], None


def _nvme(r: "RankModel", direction: str) -> tuple:
    """(path, weights) of a transfer between DDR and the NVMe drives."""
    if direction == "in":
        return ["nvme_read", "nvme"], [1.0, 1.0]
    return ["nvme_write", "nvme"], [1.0, r.nvme_write_weight]


def is_miss(i: int, rate: float) -> bool:
    """Deterministic misses: layer i misses when floor((i+1)*rate) > floor(i*rate)."""
    return rate > 0 and math.floor((i + 1) * rate + 1e-12) > math.floor(i * rate + 1e-12)


def build(r: RankModel, links: dict, last: bool) -> TaskGraph:
    """The graph of one micro-batch; ``last`` adds gradient sync and the optimizer step."""
    g = StepGraph()
    for name, bw in links.items():
        g.add_link(name, bw)
    zero3 = r.stage >= 3
    if zero3:
        g.add_pool("gather", 1 + r.prefetch_depth)
    n_units = r.units_per_layer if zero3 else 1
    fetch_params = r.unit_params / n_units
    shard_param_bytes = fetch_params * r.param_bytes / r.shard
    full_param_bytes = fetch_params * r.param_bytes
    grad_bytes = r.unit_params * r.grad_bytes
    state = dict(prev_c=None, prev_fetch=None, last_rs=None)
    syncs, act_out = [], {}
    # --overlap-param-gather: the all-gather of the parameters the optimizer updated runs
    # in the next step's forward, one layer's share ahead of that layer; in the steady state
    # the graph of the step's last micro-batch stands for that forward.
    gathers = []
    if last and r.overlap_param_gather and r.stage in (1, 2) and r.dp > 1:
        share = ring("allgather", r.params_per_rank * r.param_bytes / max(r.layers, 1), r.dp)
        for i in range(r.layers):
            gathers.append(collective(g, r, f"L{i} parameters all-gather (next step's)", share,
                                      r.dp_link, [gathers[-1] if gathers else None], "allgather",
                                      per_node=r.dp_per_node, latency_s=r.dp_gather_latency_s))

    def fetch(tag, i, u):
        deps = [state["prev_fetch"]]
        label = "allgather"
        if is_miss(i * n_units + u, r.miss_rate):
            deps.append(state["prev_c"])
            label = "fetch_miss"
        if r.sync_fetch and state["last_rs"] is not None:
            deps.append(state["last_rs"])
        unit = f"L{i}" if n_units == 1 else f"L{i}.{u}"
        f = r.bwd_fetch_factor if tag == "bwd" else 1.0
        ag = dict(per_node=r.shard_per_node, latency_s=r.gather_latency_s * f)
        volume = ring("allgather", full_param_bytes, r.shard) * f
        if r.offload_params != "none":
            path, w = _tier_path(r.offload_params, "in", r)
            up = g.transfer(f"{tag} {unit} shard from {r.offload_params}", shard_param_bytes * f,
                            path, deps=deps, acquire="gather",
                            label="fetch_miss" if label == "fetch_miss" else "offload", weights=w)
            t = collective(g, r, f"{tag} {unit} all-gather", volume, r.shard_link, [up], label, **ag)
        else:
            t = collective(g, r, f"{tag} {unit} all-gather", volume, r.shard_link, deps, label,
                           acquire="gather", **ag)
        state["prev_fetch"] = t
        return t

    def layer_compute(name, seconds, deps, release, n_allreduce):
        if r.tp > 1 and n_allreduce:
            # Megatron: all-reduces inside the layer, on the critical path; with
            # tp_comm_overlap each runs beside its compute chunk (same start) and the next
            # chunk waits for both, a last task joining the layer's end
            prev, comm = None, None
            for k in range(n_allreduce):
                d = deps if k == 0 else ([prev, comm] if r.tp_comm_overlap else [prev])
                c = g.compute(f"{name} ({k + 1}/{n_allreduce})", "gpu", seconds / n_allreduce,
                              deps=d, release=release if k == n_allreduce - 1 else None)
                volume = (r.tp_allreduce_factor * r.tp_bytes if r.tp_allreduce_factor > 0
                          else ring("allreduce", r.tp_bytes, r.tp))
                comm = collective(g, r, f"{name} TP all-reduce {k + 1}", volume, "nvlink", d if r.tp_comm_overlap else [c], "tp_allreduce",
                                  latency_s=r.tp_latency_s, stream="tp nccl")
                prev = c if r.tp_comm_overlap else comm
            if r.tp_comm_overlap:
                return g.compute(f"{name} done", "sync", 0.0, deps=[prev, comm])
            return prev
        return g.compute(name, "gpu", seconds, deps=deps, release=release)

    def unit_name(tag, i, u):
        return f"{tag} L{i}" if n_units == 1 else f"{tag} L{i}.{u}"

    release = "gather" if zero3 else None
    fwd_x = r.fwd_contention_last_s if last else r.fwd_contention_s
    bwd_x = r.bwd_contention_last_s if last else r.bwd_contention_s
    for i in range(r.layers):
        for u in range(n_units):     # the layer's TP all-reduces come with its last unit
            deps = [state["prev_c"]] + ([fetch("fwd", i, u)] if zero3 else [])
            if gathers and u == 0:
                deps.append(gathers[i])
            state["prev_c"] = layer_compute(unit_name("forward", i, u), r.fwd_s / n_units + fwd_x,
                                            deps, release, 2 if u == n_units - 1 else 0)
        if r.offload_activations != "none" and i < r.layers - 1:
            # the last layer's checkpoint stays on the GPU: its backward comes first, before
            # a copy out and back could finish (DeepSpeed 0.19.6 activation_checkpointing/
            # offload_activations.py _ActivationOffloadEngine, keep_last_count=1)
            act_out[i] = g.transfer(f"L{i} activations to DDR", r.act_ckpt_bytes,
                                    ["ddr", "pcie_d2h"], deps=[state["prev_c"]], label="offload")
    if r.head_s:
        state["prev_c"] = g.compute("embedding + logits", "gpu", r.head_s, deps=[state["prev_c"]])
    prev_act = None
    deferred = not r.overlap_grad_reduce and r.stage < 2
    # Two activation slots in HBM (memory.build_parts: the layer in backward and the one
    # coming back): layer i's copy back starts once layer i+2's backward is done, i.e.
    # while layer i+1's runs (DeepSpeed 0.19.6 restores each checkpoint as its backward
    # is issued, on a side stream, while the GPU still works on the layer before).
    done = [state["prev_c"], state["prev_c"]]      # backward of layers i+1 and i+2 done
    for i in reversed(range(r.layers)):
        for u in reversed(range(n_units)):
            deps = [state["prev_c"]] + ([fetch("bwd", i, u)] if zero3 else [])
            if i in act_out and u == n_units - 1:
                prev_act = g.transfer(f"L{i} activations from DDR", r.act_ckpt_bytes,
                                      ["ddr", "pcie_h2d"], deps=[act_out[i], prev_act, done[1]],
                                      label="offload")
                deps.append(prev_act)
            state["prev_c"] = layer_compute(unit_name("backward", i, u), r.bwd_s / n_units + bwd_x,
                                            deps, release, r.bwd_allreduces if u == 0 else 0)
        done = [state["prev_c"], done[0]]
        if deferred:
            continue
        syncs += _grad_sync(g, r, i, state["prev_c"], grad_bytes, last, state)
    if deferred:        # every layer's sync after the last backward (no overlap)
        for i in reversed(range(r.layers)):
            syncs += _grad_sync(g, r, i, state["prev_c"], grad_bytes, last, state)
    if last:
        _optimizer(g, r, syncs, state["prev_c"])
    return g


def _grad_sync(g, r: RankModel, i, c, grad_bytes, last, state=None) -> list:
    """The gradient synchronisation of layer i after its backward ``c``; the tasks the
    optimizer step waits for. ``state["last_rs"]``: the last reduction of the chain."""
    out = []
    if r.stage >= 2:
        n_rs = r.rs_per_layer if r.stage >= 3 else 1
        for q in range(n_rs):
            rs = collective(g, r, f"L{i} reduce-scatter" + (f" {q + 1}/{n_rs}" if n_rs > 1 else ""),
                            ring("reduce_scatter", grad_bytes / n_rs, r.shard), r.shard_link, [c],
                            "reduce_scatter", per_node=r.shard_per_node, latency_s=r.reduce_latency_s)
            out.append(rs)
        if last and r.replicas > 1:
            out.append(collective(g, r, f"L{i} all-reduce across replicas",
                                  ring("allreduce", grad_bytes / r.shard, r.replicas), r.replica_link,
                                  [rs], "allreduce", per_node=r.replica_per_node,
                                  latency_s=r.replica_latency_s))
        if state is not None:
            state["last_rs"] = out[-1]
        if last and r.offload_optimizer != "none":
            tier = "cxl" if r.offload_optimizer == "cxl" else "cpu"
            out.append(g.transfer(f"L{i} gradients to host", grad_bytes / r.shard,
                                  _tier_path(tier, "out")[0], deps=[out[-1]], label="offload"))
            out += _grads_to_nvme(g, r, i, out[-1])
    elif last and r.dp > 1:
        volume = (r.dp_allreduce_factor * grad_bytes if r.dp_allreduce_factor > 0
                  else ring("allreduce", grad_bytes, r.dp))
        out.append(collective(g, r, f"L{i} {_dp_grad_name(r)}", volume, r.dp_link, [c], "allreduce",
                              per_node=r.dp_per_node, latency_s=r.dp_allreduce_latency_s))
    elif last and r.offload_optimizer != "none":
        out.append(g.transfer(f"L{i} gradients to host", grad_bytes / r.shard,
                              _tier_path("cpu", "out")[0], deps=[c], label="offload"))
        out += _grads_to_nvme(g, r, i, out[-1])
    return out


# fp32 gradient bytes per parameter DeepSpeed swaps to NVMe with the optimizer states
FP32_GRAD_BYTES = 4.0


def _grads_to_nvme(g, r: RankModel, i, dep) -> list:
    """With the optimizer states on NVMe, DeepSpeed ZeRO-3 writes each reduced gradient
    partition, cast to fp32, from DDR to the drives (stage3.py ``partition_grads``:
    ``grad_buffer.float()`` then ``optimizer_swapper.swap_out_gradients``) and reads it
    back with the states before the sub-group's step (partitioned_optimizer_swapper.py
    ``swap_in_optimizer_state`` -> ``_swap_in_gradients``; ``_optimizer``)."""
    if r.offload_optimizer != "nvme":
        return []
    path, w = _nvme(r, "out")
    return [g.transfer(f"L{i} fp32 gradients to NVMe", FP32_GRAD_BYTES * r.unit_params / r.shard,
                       path, deps=[dep], label="offload", weights=w)]


def _optimizer(g, r: RankModel, syncs, last_c):
    deps = syncs + [last_c]
    n = r.params_per_rank / r.shard                  # parameters this rank updates
    where = r.offload_optimizer
    if where == "none":
        done = g.compute("optimizer step (GPU)", "gpu", n * ADAM_BYTES_PER_PARAM / r.hbm_bytes_per_s,
                         deps=deps, label="optimizer")
    else:
        # One sub-group at a time: read states, CPU Adam (its DDR traffic at the lower of
        # the DDR share and what the rank's cores update: link "cpu_adam" when the node
        # gives its cores), write back; the reads of group j+1 overlap the update of group j.
        chunks = max(1, math.ceil(n / SUB_GROUP_ELEMENTS))
        per = n / chunks
        prev_read = prev_cpu = None
        tail = []
        adam_path = ["ddr"] + (["cpu_adam"] if "cpu_adam" in g.links else [])
        for j in range(chunks):
            if where in ("nvme", "cxl"):
                path, w = _nvme(r, "in") if where == "nvme" else (["cxl"], None)
                # from NVMe the sub-group's fp32 gradients come in with its states (_grads_to_nvme)
                per_bytes = r.optimizer_state_bytes + (FP32_GRAD_BYTES if where == "nvme" else 0.0)
                prev_read = g.transfer(f"optimizer states in ({j + 1}/{chunks})",
                                       per * per_bytes, path,
                                       deps=deps + [prev_read], label="offload", weights=w)
                cdeps = [prev_read, prev_cpu]
            else:
                cdeps = deps + [prev_cpu]
            prev_cpu = g.transfer(f"{r.cpu_optimizer_name} ({j + 1}/{chunks})",
                                  per * r.cpu_optimizer_bytes_per_param,
                                  adam_path, deps=cdeps, label="cpu_optimizer")
            if where in ("nvme", "cxl"):
                path, w = _nvme(r, "out") if where == "nvme" else (["cxl"], None)
                tail.append(g.transfer(f"optimizer states out ({j + 1}/{chunks})",
                                       per * r.optimizer_state_bytes, path, deps=[prev_cpu],
                                       label="offload", weights=w))
        done = prev_cpu
        if r.offload_params == "none":
            # updated low-precision parameters back to the GPU
            done = g.transfer("updated parameters to GPU", n * r.param_bytes,
                              ["pcie_h2d"], deps=[prev_cpu], label="offload")
        elif r.offload_params == "nvme":
            path, w = _nvme(r, "out")
            tail.append(g.transfer("updated parameters to NVMe", n * r.param_bytes,
                                   path, deps=[prev_cpu], label="offload", weights=w))
        if tail:
            done = g.compute("optimizer step done", "gpu", 0.0, deps=tail + [done])
    if r.stage in (1, 2) and r.dp > 1 and not r.overlap_param_gather:
        collective(g, r, "updated parameters all-gather",
                   ring("allgather", r.params_per_rank * r.param_bytes, r.dp), r.dp_link,
                   [done], "allgather", per_node=r.dp_per_node, latency_s=r.dp_gather_latency_s)


def c_module():
    """``simulation._cstepgraph`` when it is built, else None."""
    return _C_MODULE


try:                  # looked up once: an import statement per evaluation costs more than it seems
    from . import _cstepgraph as _C_MODULE
except ImportError:
    _C_MODULE = None


def graph_arrays(r: RankModel, links: dict, last: bool, engine: str = "auto") -> dict:
    """``build(r, links, last).arrays()`` plus ``label`` (codes of LABELS), ``links``
    (names in index order) and ``gpu_stream`` (-1 when there is none).

    With ``engine`` "auto" or "c" the C extension emits the same arrays without building
    Python objects per task (some 50x faster); "python" runs ``build``, the specification.
    Raises GraphError when the graph needs a link ``links`` lacks.
    """
    c = c_module() if engine in ("auto", "c") else None
    if c is None:
        if engine == "c":
            raise ImportError("simulation._cstepgraph is not built")
        g = build(r, links, last)
        a = g.arrays()
        a.update(label=np.array([LABEL_CODE[x] for x in g.labels], dtype=np.int32),
                 links=list(g.links), gpu_stream=g.streams.get("gpu", -1))
        return a
    index = {name: k for k, name in enumerate(links)}
    ints = (r.layers, r.shard, r.replicas, r.dp, r.gpus_per_node, r.stage, r.tp,
            r.bwd_allreduces, r.prefetch_depth, TIERS.index(r.offload_params),
            TIERS.index(r.offload_optimizer), TIERS.index(r.offload_activations),
            int(r.shard_link == "nic"), int(r.dp_link == "nic"), r.shard_per_node, r.dp_per_node,
            r.units_per_layer, r.rs_per_layer, int(r.sync_fetch),
            int(bool(r.overlap_grad_reduce)), int(bool(r.overlap_param_gather)),
            int(bool(r.tp_comm_overlap)), int(r.replica_link == "nic"), r.replica_per_node)
    floats = (r.fwd_s, r.bwd_s, r.head_s, r.unit_params, r.params_per_rank, r.param_bytes,
              r.grad_bytes, r.optimizer_state_bytes, r.tp_bytes, r.act_ckpt_bytes, r.miss_rate,
              r.hbm_bytes_per_s, r.gather_latency_s, r.reduce_latency_s, r.dp_allreduce_latency_s,
              r.dp_allreduce_factor, r.dp_gather_latency_s, r.replica_latency_s, r.tp_latency_s,
              r.bwd_fetch_factor, r.nvme_write_weight, r.fwd_contention_s, r.bwd_contention_s,
              r.fwd_contention_last_s, r.bwd_contention_last_s, r.tp_allreduce_factor,
              r.cpu_optimizer_bytes_per_param)
    (n_streams, gpu, _n_pools, pool_cap, kind, stream, duration, size, path_ptr, path_links,
     dep_ptr, dep_idx, acquire, release, label, path_weight) = c.build(
        ints, floats, [index.get(name, -1) for name in LINK_NAMES], last)
    fb, i, f = np.frombuffer, np.int32, np.float64
    i32 = lambda b: fb(b, i)          # noqa: E731
    f64 = lambda b: fb(b, f)          # noqa: E731
    return dict(link_bw=np.array(list(links.values()), dtype=np.float64), n_streams=n_streams,
                pool_cap=i32(pool_cap), kind=i32(kind), stream=i32(stream),
                duration=f64(duration), size=f64(size), path_ptr=i32(path_ptr),
                path_links=i32(path_links), path_weight=f64(path_weight),
                dep_ptr=i32(dep_ptr), dep_idx=i32(dep_idx),
                acquire=i32(acquire), release=i32(release), label=i32(label),
                links=list(links), gpu_stream=gpu)


_LAYER = "\x00"       # task_names: where a layer's index goes in its tasks' names


def task_names(r: RankModel, last: bool) -> tuple[list, list]:
    """``(names, streams)`` of ``build(r, links, last)`` without building the graph: its
    tasks' names in task order and its streams' names in index order (``list(g.names)``,
    ``list(g.streams)``), from ``task_name_plan``."""
    plan, streams = task_name_plan(r, last)
    return [x if si is None else x.replace(_LAYER, si) for si, t in plan for x in t], streams


def task_name_plan(r: RankModel, last: bool) -> tuple[list, list]:
    """``(plan, streams)``: ``build(r, links, last)``'s task names as ``[(layer, names)]``
    in task order, where ``layer`` (a layer's index as a string) replaces ``_LAYER`` in
    each of ``names``, or is None (names as they are), and its streams' names in index
    order. A layer's names are the same list object each time (a template).

    The C builder emits no names; the timeline takes them from here, many times faster
    than ``build``. ``build`` stays the specification: this walks the same loops in the
    same order and makes only the names, each layer's from the tasks of one layer with
    its index left open (tests hold it equal to ``build`` on generated rank models;
    ``step.step_timeline`` falls back to ``build`` where the count of tasks or streams
    differs from the C graph's). The labels are the arguments ``build`` gets, unused.
    """
    plan, streams = [], {}
    out = [None]                   # where comp / xfer write: a template, or direct()'s list

    def comp(name, stream, label="compute"):
        out[0].append(name)
        streams.setdefault(stream)     # in the order of first use, as TaskGraph.add_stream

    def xfer(name, label):
        out[0].append(name)

    def coll(name, link, label, per_node=0, latency_s=0.0, stream="nccl"):
        """``collective``'s tasks."""
        started = latency_s > 0
        if started:
            comp(f"{name} (latency)", stream, label)
        k = per_node or r.gpus_per_node
        if link != "nic" or k <= 1:
            xfer(name, label)
            return
        if not started:
            comp(f"{name} (start)", "sync", label)
        xfer(f"{name} (NVLink hops)", label)
        xfer(f"{name} (inter-node hop)", label)
        comp(f"{name} (done)", "sync", label)

    templates = {}
    index = [str(i) for i in range(r.layers)]

    def template(key, emit, *args):
        """The names of the tasks ``emit(_LAYER, *args)`` makes (made once per ``key``,
        where its first layer's tasks come: the streams keep their order of first use)."""
        t = templates.get(key)
        if t is None:
            t = templates[key] = []
            out[0] = t
            emit(_LAYER, *args)
        return t

    def direct():
        """Tasks named as they are come next."""
        out[0] = []
        plan.append((None, out[0]))

    zero3 = r.stage >= 3
    n_units = r.units_per_layer if zero3 else 1
    offload_act = r.offload_activations != "none"

    def param_gather(i):
        coll(f"L{i} parameters all-gather (next step's)", r.dp_link, "allgather",
             r.dp_per_node, r.dp_gather_latency_s)

    def fetch(tag, i, u, miss):
        label = "fetch_miss" if miss else "allgather"
        unit = f"L{i}" if n_units == 1 else f"L{i}.{u}"
        f = r.bwd_fetch_factor if tag == "bwd" else 1.0
        if r.offload_params != "none":
            xfer(f"{tag} {unit} shard from {r.offload_params}", "fetch_miss" if miss else "offload")
        coll(f"{tag} {unit} all-gather", r.shard_link, label, r.shard_per_node,
             r.gather_latency_s * f)

    def layer_compute(name, n_allreduce):
        if r.tp > 1 and n_allreduce:
            for k in range(n_allreduce):
                comp(f"{name} ({k + 1}/{n_allreduce})", "gpu")
                coll(f"{name} TP all-reduce {k + 1}", "nvlink", "tp_allreduce",
                     latency_s=r.tp_latency_s, stream="tp nccl")
            if r.tp_comm_overlap:
                comp(f"{name} done", "sync")
        else:
            comp(name, "gpu")

    def unit_name(tag, i, u):
        return f"{tag} L{i}" if n_units == 1 else f"{tag} L{i}.{u}"

    def forward(i, u, miss, kept=False):
        if zero3:
            fetch("fwd", i, u, miss)
        layer_compute(unit_name("forward", i, u), 2 if u == n_units - 1 else 0)
        if offload_act and u == n_units - 1 and not kept:
            xfer(f"L{i} activations to DDR", "offload")

    def backward(i, u, miss, kept=False):
        if zero3:
            fetch("bwd", i, u, miss)
        if offload_act and u == n_units - 1 and not kept:
            xfer(f"L{i} activations from DDR", "offload")
        layer_compute(unit_name("backward", i, u), r.bwd_allreduces if u == 0 else 0)

    def grad_sync(i):
        _grad_sync_names(r, i, last, coll, xfer)

    rate, n, units = (r.miss_rate if zero3 else 0.0), r.layers, range(n_units)
    if n and last and r.overlap_param_gather and r.stage in (1, 2) and r.dp > 1:
        t = template("gather", param_gather)
        plan += [(s, t) for s in index]
    deferred = not r.overlap_grad_reduce and r.stage < 2
    # the last layer's activations are not offloaded (build: they stay on the GPU)
    kept = [offload_act and i == n - 1 for i in range(n)]
    if n and rate > 0:      # prefetch misses: each unit's fetch by itself
        for i in range(n):
            for u in units:
                miss = is_miss(i * n_units + u, rate)
                plan.append((index[i], template(("fwd", u, miss, kept[i]), forward, u, miss, kept[i])))
    elif n:
        fwd = [template(("fwd", u, False, False), forward, u, False) for u in units]
        plan += [(s, t) for s in index[:n - 1] for t in fwd]
        fwd = [template(("fwd", u, False, kept[-1]), forward, u, False, kept[-1]) for u in units]
        plan += [(index[n - 1], t) for t in fwd]
    direct()
    if r.head_s:
        comp("embedding + logits", "gpu")
    if n and rate > 0:
        for i in reversed(range(n)):
            for u in reversed(units):
                miss = is_miss(i * n_units + u, rate)
                plan.append((index[i], template(("bwd", u, miss, kept[i]), backward, u, miss, kept[i])))
            if not deferred:
                plan.append((index[i], template("sync", grad_sync)))
    elif n:
        first = [template(("bwd", u, False, kept[-1]), backward, u, False, kept[-1])
                 for u in reversed(units)]
        bwd = [template(("bwd", u, False, False), backward, u, False) for u in reversed(units)]
        if not deferred:
            first.append(template("sync", grad_sync))
            bwd.append(template("sync", grad_sync))
        plan += [(index[n - 1], t) for t in first]
        plan += [(s, t) for s in reversed(index[:n - 1]) for t in bwd]
    if n and deferred:      # every layer's sync after the last backward
        t = template("sync", grad_sync)
        plan += [(s, t) for s in reversed(index)]
    direct()
    if last:
        _optimizer_names(r, comp, xfer, coll)
    return plan, list(streams)


def _grad_sync_names(r: RankModel, i: int, last: bool, coll, xfer) -> None:
    """``_grad_sync``'s tasks, named (``task_names``)."""
    if r.stage >= 2:
        n_rs = r.rs_per_layer if r.stage >= 3 else 1
        for q in range(n_rs):
            coll(f"L{i} reduce-scatter" + (f" {q + 1}/{n_rs}" if n_rs > 1 else ""), r.shard_link,
                 "reduce_scatter", r.shard_per_node, r.reduce_latency_s)
        if last and r.replicas > 1:
            coll(f"L{i} all-reduce across replicas", r.replica_link, "allreduce", r.replica_per_node,
                 r.replica_latency_s)
        if last and r.offload_optimizer != "none":
            xfer(f"L{i} gradients to host", "offload")
            if r.offload_optimizer == "nvme":
                xfer(f"L{i} fp32 gradients to NVMe", "offload")
    elif last and r.dp > 1:
        coll(f"L{i} {_dp_grad_name(r)}", r.dp_link, "allreduce", r.dp_per_node,
             r.dp_allreduce_latency_s)
    elif last and r.offload_optimizer != "none":
        xfer(f"L{i} gradients to host", "offload")
        if r.offload_optimizer == "nvme":
            xfer(f"L{i} fp32 gradients to NVMe", "offload")


def _optimizer_names(r: RankModel, comp, xfer, coll) -> None:
    """``_optimizer``'s tasks, named (``task_names``)."""
    n = r.params_per_rank / r.shard
    where = r.offload_optimizer
    if where == "none":
        comp("optimizer step (GPU)", "gpu", "optimizer")
    else:
        chunks = max(1, math.ceil(n / SUB_GROUP_ELEMENTS))
        staged = where in ("nvme", "cxl")
        tail = False
        for j in range(chunks):
            if staged:
                xfer(f"optimizer states in ({j + 1}/{chunks})", "offload")
            xfer(f"{r.cpu_optimizer_name} ({j + 1}/{chunks})", "cpu_optimizer")
            if staged:
                xfer(f"optimizer states out ({j + 1}/{chunks})", "offload")
                tail = True
        if r.offload_params == "none":
            xfer("updated parameters to GPU", "offload")
        elif r.offload_params == "nvme":
            xfer("updated parameters to NVMe", "offload")
            tail = True
        if tail:
            comp("optimizer step done", "gpu")
    if r.stage in (1, 2) and r.dp > 1 and not r.overlap_param_gather:
        coll("updated parameters all-gather", r.dp_link, "allgather", r.dp_per_node,
             r.dp_gather_latency_s)
