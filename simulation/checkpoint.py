"""Checkpoint cost and goodput: size, stall, best interval, failures, restarts.

Pure functions of plain numbers plus one policy, :class:`CheckpointSpec` (the scenario's
``checkpoint`` section). :func:`evaluate_checkpoint` ties them together into a JSON-ready
dict. Times are seconds, sizes bytes, bandwidths bytes/s.

The model, step by step:

size      A checkpoint holds the model states a restart needs: the training-dtype
          parameters, the fp32 master weights and the optimizer states; not the
          gradients (DeepSpeed writes ``*_model_states.pt`` + ``*_optim_states.pt``;
          PyTorch DCP saves ``model.state_dict()`` + ``optimizer.state_dict()``). Mixed
          precision Adam: 2 + 4 + 8 = 14 B/param. ``differential_fraction`` keeps the
          changed share only and ``quantize_bits`` stores fp32 states in 8 or 4 bits
          (Check-N-Run, Eisenman et al., NSDI'22).
stall     Snapshot = each state leaving the tier it lives in: a state in HBM crosses the
          GPU's host link (PCIe); one offloaded to host DRAM, a CXL expander or NVMe
          (ZeRO-Offload / ZeRO-Infinity) is read from there at that tier's rate, shared
          by the node's GPUs (DeepSpeed copies NVMe-swapped states from their swap files,
          ``runtime/engine.py`` ``save_checkpoint``). Blocking:
          snapshot + write; async: snapshot only, the write runs in background (PyTorch
          DCP ``async_save``); in-memory: snapshot + RDMA copy into a peer node's DRAM
          (Gemini, Wang et al., SOSP'23), flushed to ``target`` every ``flush_every``-th
          time. GPUDirect Storage writes from HBM with no host copy, so its stall is the
          write itself whatever the method.
failures  Exponential, at a per-GPU rate (default from Llama 3: 419 unexpected
          interruptions in 54 days on 16,384 GPUs); MTBF = 1 / (rate x GPUs).
restart   R = detect + reload (read the full checkpoint back, then host-to-device) + warm-up.
interval  Young (1974) sqrt(2CM); Daly (2006) higher-order estimate.
goodput   Daly's (2006) expected wall time for exponential failures gives
          goodput = tau / (M e^{R/M} (e^{(tau+C)/M} - 1)); waste = 1 - goodput, split into
          checkpoint / rework / restart shares by the first-order terms C/tau,
          (tau+C)/(2M) and R/M. A write still in flight when a failure hits is lost, so
          async adds its write time to the rework per failure. A seeded Monte-Carlo run
          checks the closed form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import ScenarioError
from .fields import (choice_field as _choice, field_names, frozen_new, given, int_field as _int,
                     num_field as _num, plain)

CONTENTS = ("model_states", "weights_only")
METHODS = ("blocking", "async", "in_memory_then_flush")
TARGET_KINDS = ("local_nvme", "remote_dram", "cxl_pool", "parallel_fs", "object_store", "gds_nvme")
QUANTIZE_BITS = (None, 8, 4)
GIB = 2**30
DAY_S = 86400.0

# Llama 3 (Grattafiori et al., arXiv 2407.21783, Sec. 3.3.4, Table 5): 419 unexpected
# interruptions in 54 days of 405B pre-training on 16,384 H100 GPUs. Job interruptions
# of any cause (GPU, network, software) per GPU-hour: 1.973e-5 (per-GPU MTBF ~50,677 h).
LLAMA3_UNEXPECTED_INTERRUPTIONS = 419
LLAMA3_PERIOD_S = 54 * DAY_S
LLAMA3_GPUS = 16384
LLAMA3_GPU_FAILURE_RATE_PER_HOUR = LLAMA3_UNEXPECTED_INTERRUPTIONS / (
    LLAMA3_PERIOD_S / 3600 * LLAMA3_GPUS)
# Meta's Tectonic store behind Llama 3: 2 TB/s sustained, 7 TB/s peak (same paper,
# Sec. 3.3.1). Pass it as target_write_bytes_per_s for a Meta-scale parallel FS.
TECTONIC_SUSTAINED_BYTES_PER_S = 2e12
# BLOOM's 176B run, whose checkpoint writes give the default parallel FS rate: 48 nodes of
# 8 A100s (bigscience tr11-176B-ml README)
JEANZAY_NODES = 48
# Monte-Carlo runs per evaluation: 50x the default 200 (its standard error is then ~7x
# smaller); each run draws at least 16 failure times (see ``monte_carlo``).
MAX_MONTE_CARLO_RUNS = 10_000


# ------------------------------------------------------------------ targets
@dataclass(frozen=True)
class Target:
    """Where checkpoints go. ``scope``: ``node`` = rates per node, ``cluster`` = one
    aggregate rate shared by every writing node. ``network``: the traffic crosses the
    node's NIC. ``via_host``: data is staged in host DRAM first (all but GDS)."""
    kind: str
    scope: str = "node"
    write_bytes_per_s: float | None = None       # None in the table: from the caller's node
    read_bytes_per_s: float | None = None
    capacity_bytes: float | None = None
    latency_s: float = 0.0
    persistent: bool = True
    network: bool = False
    via_host: bool = True
    source: str = ""

    def to_dict(self) -> dict:
        return plain(self)


# Defaults per kind, copied from the project's hardware catalog with their sources.
TARGET_DEFAULTS: dict[str, Target] = {t.kind: t for t in (
    Target("local_nvme", latency_s=11e-6,
           source="the node's NVMe tier (cluster.tiers.nvme); open() 11 us on local NVMe "
                  "(stas00/ml-engineering storage/README.md)"),
    Target("remote_dram", persistent=False, network=True,
           source="peer node's DRAM over RDMA at the node's NIC rate (Gemini, Wang et al., "
                  "SOSP'23); NDR 400 Gb/s reaches 46-48 GB/s per NIC (nvidia/nccl-tests#290)"),
    Target("cxl_pool", write_bytes_per_s=36e9, read_bytes_per_s=36e9, capacity_bytes=256 * GIB,
           latency_s=250e-9, persistent=False,
           source="one Micron CZ120 256 GB CXL 2.0 module, 36 GB/s (MLC 2:1), unless the node "
                  "has a CXL tier"),
    Target("parallel_fs", scope="cluster", write_bytes_per_s=57.5e9, read_bytes_per_s=57.5e9,
           latency_s=2.3e-3, network=True,
           source="GPFS on NVMe at JeanZay: BLOOM's 2.3 TB checkpoint in 40 s = 57.5 GB/s "
                  "aggregate (stas00/ml-engineering storage/README.md); Lustre open() 2.3 ms"),
    Target("object_store", write_bytes_per_s=8e9, read_bytes_per_s=8e9, network=True,
           source="Amazon S3: 8,003 MB/s max measured from one instance (dvassallo/s3-benchmark, "
                  "2019, c5n.18xlarge 100 Gb/s)"),
    Target("gds_nvme", latency_s=11e-6, via_host=False,
           source="GPUDirect Storage to the node's NVMe: bounded by the drives and by each "
                  "GPU's PCIe link (gdsio: 4x PS1010 wrote 39.5 GiB/s into 4 GPUs, "
                  "gds-report.pages.dev)"),
)}


# ------------------------------------------------------------------ the policy
@dataclass(frozen=True)
class CheckpointSpec:
    """A checkpoint policy. ``None`` means derived: ``interval_s`` = Daly's optimum,
    ``mtbf_s`` from ``gpu_failure_rate_per_hour`` (default Llama 3's), target rates from
    the node or :data:`TARGET_DEFAULTS`."""
    content: str = "model_states"
    sharded: bool = True
    differential_fraction: float = 1.0
    quantize_bits: int | None = None
    target: str = "parallel_fs"
    method: str = "blocking"
    flush_every: int | None = None          # in_memory_then_flush only; default 10
    interval_s: float | None = None
    mtbf_s: float | None = None
    gpu_failure_rate_per_hour: float | None = None
    detect_s: float = 120.0
    warmup_s: float = 300.0
    run_length_s: float = 30 * DAY_S
    monte_carlo_runs: int = 200
    seed: int = 0
    target_write_bytes_per_s: float | None = None
    target_read_bytes_per_s: float | None = None
    target_capacity_bytes: float | None = None

    @classmethod
    def from_dict(cls, d: dict | None, path: str = "checkpoint") -> "CheckpointSpec":
        d = {} if d is None else d
        if not isinstance(d, dict):
            raise ScenarioError(path, f"must be an object, got {type(d).__name__}")
        known = field_names(cls)
        for k in d:
            if k not in known:
                raise ScenarioError(f"{path}.{k}", f"unknown field; known fields: {', '.join(sorted(known))}")
        sharded = d.get("sharded", True)
        if not isinstance(sharded, bool):
            raise ScenarioError(f"{path}.sharded", f"must be true or false, got {sharded!r}")
        method = _choice(d, "method", path, METHODS, "blocking")
        s = frozen_new(cls, dict(
            content=_choice(d, "content", path, CONTENTS, "model_states"), sharded=sharded,
            differential_fraction=_num(d, "differential_fraction", path, 1.0, strict=True, maximum=1.0),
            quantize_bits=_choice({"quantize_bits": _int(d, "quantize_bits", path)},
                                  "quantize_bits", path, QUANTIZE_BITS, None),
            target=_choice(d, "target", path, TARGET_KINDS, "parallel_fs"), method=method,
            flush_every=_int(d, "flush_every", path, 10 if method == "in_memory_then_flush" else None),
            interval_s=_num(d, "interval_s", path, strict=True),
            mtbf_s=_num(d, "mtbf_s", path, strict=True),
            gpu_failure_rate_per_hour=_num(d, "gpu_failure_rate_per_hour", path, strict=True),
            detect_s=_num(d, "detect_s", path, 120.0), warmup_s=_num(d, "warmup_s", path, 300.0),
            run_length_s=_num(d, "run_length_s", path, 30 * DAY_S, strict=True),
            monte_carlo_runs=_int(d, "monte_carlo_runs", path, 200, minimum=0,
                                  maximum=MAX_MONTE_CARLO_RUNS),
            seed=_int(d, "seed", path, 0, minimum=0, maximum=2 ** 64 - 1),
            target_write_bytes_per_s=_num(d, "target_write_bytes_per_s", path, strict=True),
            target_read_bytes_per_s=_num(d, "target_read_bytes_per_s", path, strict=True),
            target_capacity_bytes=_num(d, "target_capacity_bytes", path, strict=True)))
        if s.flush_every is not None and method != "in_memory_then_flush":
            raise ScenarioError(f"{path}.flush_every", "applies to method in_memory_then_flush only")
        if method == "in_memory_then_flush" and s.target == "remote_dram":
            raise ScenarioError(f"{path}.target", "in_memory_then_flush already keeps the copy in "
                                "peer DRAM; choose where it is flushed to (local_nvme, cxl_pool, "
                                "parallel_fs, object_store, gds_nvme)")
        if s.mtbf_s is not None and s.gpu_failure_rate_per_hour is not None:
            raise ScenarioError(f"{path}.mtbf_s", "give mtbf_s or gpu_failure_rate_per_hour, not both")
        return s

    def to_dict(self) -> dict:
        return given(self)


def resolve_target(spec: CheckpointSpec, *, gpus_per_node: int, host_link_bytes_per_s: float,
                   nic_bytes_per_s: float | None, nvme_write_bytes_per_s: float | None,
                   nvme_read_bytes_per_s: float | None = None, nvme_capacity_bytes: float | None = None,
                   ddr_capacity_bytes: float | None = None, cxl_write_bytes_per_s: float | None = None,
                   cxl_read_bytes_per_s: float | None = None,
                   cxl_capacity_bytes: float | None = None, num_nodes: int = 1) -> Target:
    """The target's rates: the spec's overrides, else the node's, else the table's.
    Raises ScenarioError when the cluster lacks what the policy needs (call it while
    validating a scenario to fail early)."""
    if spec.method == "in_memory_then_flush" and num_nodes > 1 and not nic_bytes_per_s:
        raise ScenarioError("cluster.nic_bytes_per_s", "is required for in_memory_then_flush")
    t = TARGET_DEFAULTS[spec.target]
    kind, source = t.kind, t.source
    write, read, cap = t.write_bytes_per_s, t.read_bytes_per_s, t.capacity_bytes
    if kind in ("local_nvme", "gds_nvme"):
        write, read, cap = nvme_write_bytes_per_s, nvme_read_bytes_per_s, nvme_capacity_bytes
    elif kind == "remote_dram":
        write, cap = nic_bytes_per_s, ddr_capacity_bytes
    elif kind == "cxl_pool" and cxl_write_bytes_per_s:
        write, read, cap = cxl_write_bytes_per_s, cxl_read_bytes_per_s, cxl_capacity_bytes
        source = "the node's CXL tier (cluster.tiers.cxl)"
    if spec.target_write_bytes_per_s:
        write, source = spec.target_write_bytes_per_s, "checkpoint.target_write_bytes_per_s (given)"
    read = spec.target_read_bytes_per_s or read or write
    cap = spec.target_capacity_bytes or cap
    if not write:
        need = "cluster.nic_bytes_per_s" if kind == "remote_dram" else "an NVMe tier (cluster.tiers.nvme)"
        raise ScenarioError("checkpoint.target_write_bytes_per_s",
                            f"is required: target {kind} needs {need} or this override")
    if kind == "gds_nvme":      # HBM -> NVMe directly: each writing GPU's PCIe link bounds it
        lanes = host_link_bytes_per_s * (gpus_per_node if spec.sharded else 1)
        write, read = min(write, lanes), min(read, lanes)
    return frozen_new(Target, dict(t.__dict__, write_bytes_per_s=write, read_bytes_per_s=read,
                                   capacity_bytes=cap, source=source))


# ------------------------------------------------------------------ size
def checkpoint_size_bytes(num_params: float, state_bytes_per_param: dict, spec: CheckpointSpec,
                          num_ranks: int = 1) -> dict:
    """Bytes of one checkpoint, with its parts.

    ``state_bytes_per_param``: ``params``, ``master_weights``, ``optimizer_states`` (as
    :meth:`simulation.states.StateBytes.to_dict`; other keys are ignored). Parts whose
    bytes per parameter are a multiple of 4 are fp32 values and are stored in
    ``quantize_bits`` bits when set (Check-N-Run); bf16 weights and 8-bit moments stay.
    ``full_bytes`` is before ``differential_fraction`` (what a restart reads back);
    ``shard_bytes`` is what one rank writes: ``size / num_ranks`` when sharded, else the
    whole checkpoint from a single writer.
    """
    keys = ("params",) if spec.content == "weights_only" else ("params", "master_weights", "optimizer_states")
    bpp = {}
    for k in keys:
        b = float(state_bytes_per_param.get(k, 0) or 0)
        if spec.quantize_bits and b % 4 == 0:
            b = b * spec.quantize_bits / 32
        bpp[k] = b
    # whole bytes (a differential fraction or a shard of a size is no fraction of a byte)
    full = float(round(num_params * sum(bpp.values())))
    size = float(round(full * spec.differential_fraction))
    return dict(bytes_per_param=bpp, parts_bytes={k: float(round(num_params * v * spec.differential_fraction))
                                                   for k, v in bpp.items()},
                full_bytes=full, size_bytes=size,
                shard_bytes=float(round(size / num_ranks)) if spec.sharded else size,
                writers=num_ranks if spec.sharded else 1)


# ------------------------------------------------------------------ times
def snapshot_time_s(bytes_per_gpu: float, host_link_bytes_per_s: float) -> float:
    """Device-to-host copy of one GPU's share over its own host link (all GPUs at once)."""
    return bytes_per_gpu / host_link_bytes_per_s


SNAPSHOT_TIERS = ("hbm", "ddr", "cxl", "nvme")


def snapshot_parts(parts_bytes: dict, state_tiers: dict | None, *, num_ranks: int,
                   gpus_per_node: int, sharded: bool, host_link_bytes_per_s: float,
                   tier_read_bytes_per_s: dict | None = None) -> dict:
    """Per state (``parts_bytes``' keys, :func:`checkpoint_size_bytes`), where it is read
    from and how long that takes: ``{state: {tier, bytes_per_gpu, s}}``.

    ``state_tiers`` maps a state to the tier it lives in ("hbm" when absent or None). A
    state in HBM leaves over each GPU's own host link (:func:`snapshot_time_s`, all GPUs
    at once). A state that lives in host DRAM, a CXL expander or on NVMe never crosses
    PCIe to be saved: it is read where it is, at that tier's read rate per node
    (``tier_read_bytes_per_s``), which the node's writing GPUs share (ZeRO-Infinity:
    DeepSpeed ``runtime/engine.py`` ``save_checkpoint`` copies the NVMe swap folder with
    ``shutil.copytree``; host-resident partitions are saved from their pinned tensors).
    A tier without a rate falls back to the host link. The parts' ``s`` add up: the
    reads of one rank run one after the other.
    """
    tiers, rates = state_tiers or {}, tier_read_bytes_per_s or {}
    out = {}
    for k, b in parts_bytes.items():
        per_gpu = b / num_ranks if sharded else b
        tier = tiers.get(k, "hbm")
        rate = rates.get(tier) if tier != "hbm" else None
        if rate:
            # every writing GPU of the node reads its share from the node's tier at once
            s = per_gpu * (gpus_per_node if sharded else 1) / rate
        else:
            s = snapshot_time_s(per_gpu, host_link_bytes_per_s)
        out[k] = dict(tier=tier, bytes_per_gpu=float(per_gpu), s=float(s))
    return out


def write_time_s(size_bytes: float, target: Target, *, num_nodes: int, sharded: bool,
                 nic_bytes_per_s: float | None = None, read: bool = False) -> float:
    """Time to move ``size_bytes`` to (or, ``read``, from) the target.

    Sharded: every node moves its 1/num_nodes share in parallel; otherwise one node moves
    all of it. A cluster-scope rate (parallel FS) is shared by the nodes moving data; a
    network target is also capped by each node's NIC. Plus the target's latency once.
    """
    nodes = num_nodes if sharded else 1
    rate = target.read_bytes_per_s if read else target.write_bytes_per_s
    if target.scope == "cluster":
        rate /= nodes
    if target.network and nic_bytes_per_s:
        rate = min(rate, nic_bytes_per_s)
    return target.latency_s + size_bytes / nodes / rate


def read_time_s(size_bytes: float, target: Target, *, num_nodes: int, sharded: bool,
                nic_bytes_per_s: float | None = None) -> float:
    """Time to read a checkpoint back from the target (see :func:`write_time_s`)."""
    return write_time_s(size_bytes, target, num_nodes=num_nodes, sharded=sharded,
                        nic_bytes_per_s=nic_bytes_per_s, read=True)


def stall_s(method: str, snapshot_s: float, write_s: float, replicate_s: float = 0.0,
            via_host: bool = True) -> float:
    """How long training waits per checkpoint.

    blocking: snapshot + write. async: the snapshot only (write in background).
    in_memory_then_flush: snapshot + RDMA copy to the peer's DRAM (its recovery point;
    Gemini hides the copy between training's own transfers, not modelled). Without a
    host copy (GDS) training waits for the write whatever the method.
    """
    if not via_host and method != "in_memory_then_flush":
        return write_s
    return {"blocking": snapshot_s + write_s, "async": snapshot_s,
            "in_memory_then_flush": snapshot_s + replicate_s}[method]


# ------------------------------------------------------------------ failures, intervals
def mtbf_from_rate_s(gpu_failure_rate_per_hour: float, num_gpus: int) -> float:
    """MTBF of the job: 1 / (rate per GPU-second x GPUs); failures are independent."""
    return 3600.0 / (gpu_failure_rate_per_hour * num_gpus)


def young_interval_s(cost_s: float, mtbf_s: float) -> float:
    """Young, CACM 17(9), 1974: tau = sqrt(2 C M)."""
    return math.sqrt(2 * cost_s * mtbf_s)


def daly_interval_s(cost_s: float, mtbf_s: float) -> float:
    """Daly, FGCS 22(3), 2006, Eq. 37: sqrt(2CM)(1 + sqrt(C/2M)/3 + C/(18M)) - C for
    C < 2M, else M (as LLNL/scr scripts/python/scr_ckpt_interval.py)."""
    c, m = cost_s, mtbf_s
    if c >= 2 * m:
        return m
    return math.sqrt(2 * c * m) * (1 + math.sqrt(c / (2 * m)) / 3 + c / (18 * m)) - c


def first_order_waste(interval_s, cost_s, mtbf_s):
    """Young's first-order waste C/tau + tau/(2M), minimised at sqrt(2CM)."""
    return cost_s / interval_s + interval_s / (2 * mtbf_s)


def goodput(interval_s, cost_s, mtbf_s, restart_s=0.0):
    """Useful work / wall time for exponential failures, numpy-friendly.

    Daly (FGCS 2006), exponential failures: a segment of tau work + C checkpoint takes
    in expectation M e^{R/M} (e^{(tau+C)/M} - 1) of wall time (failures may strike
    during the checkpoint and the restart too), so goodput = tau / that.
    """
    tau = np.asarray(interval_s, dtype=float)
    with np.errstate(over="ignore"):
        g = tau / (mtbf_s * np.exp(restart_s / mtbf_s) * np.expm1((tau + cost_s) / mtbf_s))
    g = np.clip(g, 0.0, 1.0)
    return float(g) if g.ndim == 0 else g


def waste_parts(interval_s: float, cost_s: float, mtbf_s: float, restart_s: float = 0.0,
                lag_s: float = 0.0, goodput_value: float | None = None) -> dict:
    """``1 - goodput(tau, C, M, R + lag)`` split in proportion to the first-order terms:
    checkpoint C/tau, rework ((tau + C)/2 + lag)/M and restart R/M. ``goodput_value``:
    that goodput when the caller has it already."""
    terms = dict(checkpoint=cost_s / interval_s,
                 rework=((interval_s + cost_s) / 2 + lag_s) / mtbf_s, restart=restart_s / mtbf_s)
    g = goodput(interval_s, cost_s, mtbf_s, restart_s + lag_s) if goodput_value is None else goodput_value
    total = 1.0 - g
    s = sum(terms.values())
    return {k: (v / s * total if s else 0.0) for k, v in terms.items()}


def goodput_curve(intervals_s, cost_s: float, mtbf_s: float, restart_s: float = 0.0):
    """``(intervals, goodput)`` as numpy arrays, for a chart."""
    x = np.asarray(intervals_s, dtype=float)
    return x, np.atleast_1d(goodput(x, cost_s, mtbf_s, restart_s))


_CURVE_POINTS = 61
_CURVE_STEPS = np.arange(_CURVE_POINTS, dtype=np.float64)


def curve_intervals(lo_s: float, hi_s: float) -> np.ndarray:
    """``np.geomspace(lo_s, hi_s, 61)`` for ``0 < lo_s < hi_s``, bit for bit: the same numpy
    operations as its ``logspace``/``linspace`` (numpy/_core/function_base.py), without
    their argument handling, which costs more than the 61 points on every evaluation."""
    log_lo, log_hi = np.log10(lo_s), np.log10(hi_s)
    y = _CURVE_STEPS * ((log_hi - log_lo) / (_CURVE_POINTS - 1))
    y += log_lo
    y[-1] = log_hi
    out = np.power(10.0, y)
    out[0], out[-1] = lo_s, hi_s
    return out


def percentiles(x: np.ndarray, qs) -> list[float]:
    """``np.percentile(x, qs)`` (method "linear") of a 1-D float array, bit for bit: the
    same operations as numpy's ``_quantile`` (numpy/lib/_function_base_impl.py: virtual
    index ``(n - 1) * q / 100``, ``_get_indexes``, ``_get_gamma``, ``_lerp``) on the
    sorted values, without its argument handling (some 60 us per call, for 200 values).
    A NaN anywhere gives NaN, as there. ``x`` non-empty; ``qs`` in [0, 100]."""
    s = np.sort(x)
    n = len(s)
    if math.isnan(s[-1]):
        return [math.nan] * len(qs)
    out = []
    for q in qs:
        v = (n - 1) * (q / 100)
        prev = math.floor(v)
        if v >= n - 1:
            prev = nxt = -1
        else:
            nxt = prev + 1
        a, b, t = float(s[prev]), float(s[nxt]), v - prev
        diff = b - a
        out.append(b - diff * (1 - t) if t >= 0.5 else a + diff * t)
    return out


def monte_carlo(interval_s: float, cost_s: float, mtbf_s: float, restart_s: float = 0.0, *,
                lag_s: float = 0.0, run_length_s: float = 30 * DAY_S, runs: int = 200,
                seed: int = 0) -> dict:
    """Simulate ``runs`` runs of ``run_length_s`` wall time with exponential failures.

    Work tau, then stall C, repeated; a checkpoint becomes the recovery point ``lag_s``
    after its stall ends (async: the background write). A failure loses everything since
    the last recovery point and costs a restart R (a failure during R restarts it). The
    span between failures is memoryless, so each span is computed at once (vectorised).
    The simulated length is cut so that about 1e6 failures are drawn at most.
    """
    rng = np.random.default_rng(seed)
    period = interval_s + cost_s
    horizon = min(run_length_s, 1e6 / max(runs, 1) * mtbf_s)   # at most ~1e6 failures drawn
    expect = horizon / mtbf_s
    k = int(expect + 6 * math.sqrt(expect) + 16)
    out = []
    chunk = max(1, int(2e6 // k))
    # In place where it can be: on some 200 x 20 draws numpy's calls, not the numbers, cost.
    for lo in range(0, runs, chunk):
        n = min(chunk, runs - lo)
        f = np.cumsum(rng.exponential(mtbf_s, (n, k)), axis=1)
        while (f[:, -1] < horizon).any():
            f = np.hstack([f, f[:, -1:] + np.cumsum(rng.exponential(mtbf_s, (n, k)), axis=1)])
        # time training in span i: min(f_i, horizon) - f_(i-1) - R (span 0 starts at 0, fresh)
        x = np.minimum(f, horizon)
        x[:, 1:] -= f[:, :-1]
        x[:, 1:] -= restart_s
        np.maximum(x, 0.0, out=x)
        kept = x - lag_s
        np.maximum(kept, 0.0, out=kept)
        kept /= period
        np.floor(kept, out=kept)
        kept *= interval_s
        whole = x / period
        np.floor(whole, out=whole)
        partial = whole * period
        np.subtract(x, partial, out=partial)
        np.minimum(partial, interval_s, out=partial)
        whole *= interval_s
        partial += whole
        np.copyto(partial, kept, where=f <= horizon)          # the last span is not lost
        out.append(partial.sum(axis=1) / horizon)
    g = np.concatenate(out) if len(out) > 1 else out[0]
    p5, p50, p95 = percentiles(g, (5, 50, 95))
    mean = g.sum() / len(g)                   # g.mean(), g.std(): numpy's sums, in its order
    dev = g - mean
    dev *= dev
    return dict(mean_goodput=float(mean), std_goodput=math.sqrt(dev.sum() / len(g)), p5=p5,
                p50=p50, p95=p95, runs=runs, seed=seed, run_length_s=horizon,
                expected_failures_per_run=expect)


# ------------------------------------------------------------------ all together
def evaluate_checkpoint(spec: CheckpointSpec, *, num_params: float, num_gpus: int,
                        gpus_per_node: int, num_nodes: int, state_bytes_per_param: dict,
                        host_link_bytes_per_s: float, nic_bytes_per_s: float | None,
                        nvme_write_bytes_per_s: float | None, step_time_s: float | None = None,
                        target: Target | None = None, state_tiers: dict | None = None,
                        tier_read_bytes_per_s: dict | None = None, **node_tiers) -> dict:
    """Cost, interval and goodput of ``spec`` on a cluster; JSON-ready.

    ``node_tiers`` (optional, per node): ``nvme_read_bytes_per_s``, ``nvme_capacity_bytes``,
    ``ddr_capacity_bytes``, ``cxl_write_bytes_per_s``, ``cxl_read_bytes_per_s``,
    ``cxl_capacity_bytes``. With ``step_time_s`` the interval is a whole number of steps.
    ``target``: ``resolve_target`` of ``spec`` on this node, when the caller has it.
    ``state_tiers`` / ``tier_read_bytes_per_s``: where each state lives and each node
    tier's read rate (:func:`snapshot_parts`); without them every state is in HBM.
    """
    if not num_params > 0:
        raise ScenarioError("model.num_params", f"must be > 0, got {num_params!r}")
    tgt = target or resolve_target(
        spec, gpus_per_node=gpus_per_node, host_link_bytes_per_s=host_link_bytes_per_s,
        nic_bytes_per_s=nic_bytes_per_s, nvme_write_bytes_per_s=nvme_write_bytes_per_s,
        num_nodes=num_nodes, **node_tiers)
    in_mem, peer = spec.method == "in_memory_then_flush", num_nodes > 1
    sz = checkpoint_size_bytes(num_params, state_bytes_per_param, spec, num_gpus)
    size, shard, full = sz["size_bytes"], sz["shard_bytes"], sz["full_bytes"]
    per_node = (lambda b: b / num_nodes) if spec.sharded else (lambda b: b)
    node_bytes = per_node(size)
    io = dict(num_nodes=num_nodes, sharded=spec.sharded, nic_bytes_per_s=nic_bytes_per_s)
    via_host = tgt.via_host or in_mem         # the in-memory copy always sits in host DRAM

    snap_parts = snapshot_parts(sz["parts_bytes"], state_tiers, num_ranks=num_gpus,
                                gpus_per_node=gpus_per_node, sharded=spec.sharded,
                                host_link_bytes_per_s=host_link_bytes_per_s,
                                tier_read_bytes_per_s=tier_read_bytes_per_s) if via_host else {}
    snap = sum(p["s"] for p in snap_parts.values())
    # what crosses each GPU's host link: the states that live in HBM
    pcie_bytes = sum(p["bytes_per_gpu"] for p in snap_parts.values() if p["tier"] == "hbm")
    write = write_time_s(size, tgt, **io)
    replicate = node_bytes / nic_bytes_per_s if in_mem and peer else 0.0
    stall = stall_s(spec.method, snap, write, replicate, tgt.via_host)
    # A checkpoint is the recovery point once durable: async's write runs after the stall.
    lag = write if spec.method == "async" and tgt.via_host else 0.0
    background = {"async": lag, "in_memory_then_flush": write / (spec.flush_every or 1)}.get(spec.method, 0.0)
    floor = max(background - (stall if in_mem else 0.0), 0.0)   # the next may start after it

    # Restart: detect + reload the full state (from the peer's DRAM when in memory) + warm-up.
    if in_mem:
        fetch = per_node(full) / nic_bytes_per_s if peer else 0.0
    else:
        fetch = read_time_s(full, tgt, **io)
    reload = fetch + ((full / num_gpus if spec.sharded else full) / host_link_bytes_per_s
                      if via_host else 0.0)
    restart = spec.detect_s + reload + spec.warmup_s

    rate = spec.gpu_failure_rate_per_hour or LLAMA3_GPU_FAILURE_RATE_PER_HOUR
    mtbf = spec.mtbf_s or mtbf_from_rate_s(rate, num_gpus)
    young, daly = young_interval_s(stall, mtbf), daly_interval_s(stall, mtbf)
    notes = []
    interval = spec.interval_s or daly
    if interval < floor:
        notes.append(f"Interval raised from {interval:.0f} s to {floor:.0f} s: the background "
                     "write must finish before the next checkpoint starts.")
        interval = floor
    steps = None
    if step_time_s:
        steps = max(1, round(interval / step_time_s), math.ceil(floor / step_time_s - 1e-9))
        interval = steps * step_time_s
    r_eff = restart + lag              # a write in flight at a failure is lost: more rework
    lo = max(floor, daly / 30, 1e-3)
    xs = curve_intervals(lo, max(daly * 30, lo * 100))
    # The chosen interval and the chart's in one numpy call (element-wise: the same values).
    gs = goodput(np.concatenate(((interval,), xs)), stall, mtbf, r_eff)
    g, ys = float(gs[0]), gs[1:]
    mc = None
    if spec.monte_carlo_runs:
        mc = monte_carlo(interval, stall, mtbf, restart, lag_s=lag, run_length_s=spec.run_length_s,
                         runs=spec.monte_carlo_runs, seed=spec.seed)

    host_buffer = node_bytes * (2 if in_mem and peer else 1)     # own snapshot + peer's copy
    stored = node_bytes if tgt.scope == "node" else size
    fits = None if tgt.capacity_bytes is None else stored <= tgt.capacity_bytes
    # Bytes each node sends over its NIC per checkpoint: the peer copy, then the write
    # (in-memory flushes one checkpoint in flush_every); training's collectives share it.
    nic_bytes = (node_bytes if in_mem and peer else 0.0) + (
        node_bytes / (spec.flush_every if in_mem else 1) if tgt.network else 0.0)
    notes += _notes(spec, tgt, fits, stored, host_buffer, node_tiers.get("ddr_capacity_bytes"),
                    peer, interval, mtbf, num_nodes)
    return dict(
        size_bytes=size, full_size_bytes=full, shard_bytes=shard, size=sz,
        snapshot_s=snap, snapshot=snap_parts, write_s=write, replicate_s=replicate, stall_s=stall,
        background_s=background, durable_lag_s=lag,
        interval_s=interval, interval_source="given" if spec.interval_s else "daly",
        interval_steps=steps, young_interval_s=young, daly_interval_s=daly,
        mtbf_s=mtbf, gpu_failure_rate_per_hour=None if spec.mtbf_s else rate,
        restart_s=restart, restart=dict(detect_s=spec.detect_s, reload_s=reload, warmup_s=spec.warmup_s),
        goodput=g, waste_fraction=1.0 - g, waste_parts=waste_parts(interval, stall, mtbf, restart, lag, g),
        target=dict(tgt.to_dict(), stored_bytes=stored, fits=fits),
        traffic=dict(host_link_bytes_per_gpu=pcie_bytes,
                     nic_bytes_per_node=nic_bytes, host_buffer_bytes_per_node=host_buffer,
                     mean_nic_bytes_per_s=nic_bytes / (interval + stall)),
        curve=dict(interval_s=xs.tolist(), goodput=ys.tolist()),
        monte_carlo=mc, notes=notes, spec=spec.to_dict())


def _notes(spec, tgt, fits, stored, host_buffer, ddr, peer, interval, mtbf, num_nodes) -> list[str]:
    notes = []
    if fits is False:
        notes.append(f"The target holds {tgt.capacity_bytes / 1e9:.1f} GB but one checkpoint needs "
                     f"{stored / 1e9:.1f} GB there.")
    if ddr and host_buffer > ddr and (spec.method != "blocking" or tgt.kind == "remote_dram"):
        notes.append(f"Host DRAM for snapshots ({host_buffer / 1e9:.1f} GB per node) exceeds the "
                     f"node's {ddr / 1e9:.1f} GB.")
    if spec.method == "async":
        notes.append("GPUDirect Storage writes straight from HBM: without a host copy, async "
                     "stalls as long as blocking." if not tgt.via_host else
                     "Async: a failure during the background write loses that checkpoint; "
                     "its write time is added to the rework per failure.")
    if spec.method == "in_memory_then_flush":
        notes.append(f"Recovery from peer DRAM; every {spec.flush_every}th checkpoint is flushed to "
                     f"{tgt.kind}. Losing a node and its peer together (not modelled) falls back "
                     "to the last flush." if peer else
                     "One node: the in-memory copy stays in local DRAM and does not survive a "
                     "node failure.")
    elif not tgt.persistent:
        notes.append(f"{tgt.kind} is volatile: a power loss or whole-job failure loses the checkpoint.")
    if tgt.kind == "local_nvme":
        notes.append("A failed node takes its local shard with it: pair local NVMe with a "
                     "replica or a periodic copy to shared storage.")
    if spec.content == "weights_only":
        notes.append("Weights only: optimizer states are not saved, so a restart cannot resume "
                     "training exactly.")
    if spec.quantize_bits:
        notes.append(f"Quantized to {spec.quantize_bits} bits: lossy (Check-N-Run); scale factors "
                     "not counted.")
    if interval > mtbf:
        notes.append("The interval exceeds the MTBF: most intervals end in a failure.")
    if (tgt.kind == "parallel_fs" and spec.target_write_bytes_per_s is None
            and num_nodes > JEANZAY_NODES):
        notes.append(f"The parallel file system is the default one store of "
                     f"{tgt.write_bytes_per_s / 1e9:.1f} GB/s (BLOOM's GPFS at JeanZay, measured "
                     f"from {JEANZAY_NODES} nodes) shared by all {num_nodes:,} nodes: a cluster this "
                     "size usually has a faster one (Llama 3's Tectonic sustained 2 TB/s): set "
                     "checkpoint.target_write_bytes_per_s and target_read_bytes_per_s to yours.")
    return notes
