"""Calibration: a cluster's efficiency figures fitted to what its users measured on it.

A *cluster profile* is a small JSON object of fitted figures::

    {"name": "selene", "accelerator": "a100-sxm4-80gb",       # what it was fitted on
     "gemm_flops": 2.47e14, "sm_count": 108,                   # accelerator (work model)
     "network_efficiency": 0.86,        # training.network_efficiency
     "compute_efficiency": 0.61,        # training.compute_efficiency (constant model only)
     "checkpoint_targets": {"parallel_fs": {"write_bytes_per_s": 6.1e10,
                                            "read_bytes_per_s": 9.0e10}}}

A scenario names it in ``cluster.profile``; :func:`apply_to_sections` and
:func:`apply_to_cluster` (called by :func:`simulation.scenario.resolve` and
``Scenario.from_dict``) write its figures into the scenario wherever the scenario does
not set them itself, and the profile stays in the resolved cluster section: the hash that
result reuse keys on covers the figures, so a refitted profile never replays a stale result.

:func:`fit_profile` makes the profile from measurements (SI units throughout)::

    {"cluster": {"node": "dgx-a100-80gb"},     # the cluster measured (a cluster section)
     "gemm": {"flops_per_s": 2.65e14},          # dense 16-bit GEMM, large shapes
     "collectives": [{"collective": "all_reduce", "size_bytes": 1073741824,
                      "ranks": 16, "bus_bytes_per_s": 1.7e11}],       # nccl-tests busbw
     "checkpoints": [{"target": "parallel_fs", "size_bytes": 2.3e12, "num_nodes": 48,
                      "write_s": 40.0, "restart_s": 55.0}],
     "steps": [{"scenario": {...}, "step_s": 54.1}]}                   # a measured step

Each fit inverts the engine's own model of the thing measured, so the fitted figure
makes the engine reproduce the measurement (see each ``fit_*``). A measured step is fitted
on the compute model its scenario runs (:func:`fit_step`): on the work model (the
default) it gives the accelerator's ``gemm_flops``, so scenarios that pick the profile
stay on the work model; only a step whose scenario chose the constant model gives a
``compute_efficiency`` (which moves every scenario that picks the profile and sets no
compute figure of its own onto the constant model, :func:`apply_to_sections`). Where a
GEMM benchmark and a work-model step are both measured, the step's rate is the profile's
``gemm_flops``: it is the rate the training workload reached, which the benchmark's large
square shapes bound from above; the benchmark's figure stays in ``fits``. The fits are pure
functions and their work is bounded (:data:`MAX_STEP_EVALUATIONS` engine evaluations per
measured step, at most :data:`MAX_MEASUREMENTS` of each kind).
"""

from __future__ import annotations

import math

from . import collectives as nccl
from .checkpoint import TARGET_DEFAULTS, TARGET_KINDS
from .errors import Collect, ScenarioError, ScenarioErrors
from .fields import (finite, int_field as _int, name_field as _name, no_unknown as _no_unknown, num_field as _num,
                     show as _show, str_field as _str)

MAX_MEASUREMENTS = 8                # of each kind, per profile
MAX_STEP_EVALUATIONS = 40           # engine evaluations per measured step (bracket + solve)
STEP_TOLERANCE = 1e-4               # relative: the fitted step within 0.01 % of the measured
MIN_COMPUTE_EFFICIENCY = 0.02       # the bracket of the step fit: 2 % .. 100 % of peak
MAX_BYTES = 1e18                    # caps that keep every figure finite (an exabyte,
MAX_BYTES_PER_S = 1e15              # a petabyte per second, ~30 years)
MAX_SECONDS = 1e9
COLLECTIVE_KINDS = {"all_reduce": "allreduce", "all_gather": "allgather",
                    "reduce_scatter": "reduce_scatter"}
PROFILE_FIELDS = ("name", "id", "accelerator", "compute_efficiency", "network_efficiency",
                  "gemm_flops", "sm_count", "checkpoint_targets")
MEASUREMENT_SECTIONS = ("cluster", "gemm", "collectives", "checkpoints", "steps")
MEASURED_SECTIONS = MEASUREMENT_SECTIONS[1:]      # the kinds of measurement; a profile needs one


# ------------------------------------------------------------------ the profile in a scenario
def profile_from_dict(d, path: str = "cluster.profile") -> dict:
    """The profile's figures, checked: a dict with only :data:`PROFILE_FIELDS`, each in
    range (efficiencies in (0, 1], rates > 0). Raises ScenarioError naming the field.
    A profile given by id or name (the web side's) must be replaced by its figures first."""
    if not isinstance(d, dict):
        raise ScenarioError(path, f"must be a cluster profile's figures (an object) or its id, got {_show(d)}")
    _no_unknown(d, set(PROFILE_FIELDS), path)
    out = {"name": _name(d, "name", path), "id": _int(d, "id", path),
           "accelerator": _str(d, "accelerator", path),
           "compute_efficiency": _num(d, "compute_efficiency", path, strict=True, maximum=1.0),
           "network_efficiency": _num(d, "network_efficiency", path, strict=True, maximum=1.0),
           "gemm_flops": _num(d, "gemm_flops", path, strict=True),
           "sm_count": _int(d, "sm_count", path, maximum=100_000)}
    if (out["gemm_flops"] is None) != (out["sm_count"] is None):
        missing = "sm_count" if out["sm_count"] is None else "gemm_flops"
        raise ScenarioError(f"{path}.{missing}", "is required with "
                            + ("gemm_flops" if missing == "sm_count" else "sm_count"))
    targets = d.get("checkpoint_targets")
    if targets is not None:
        if not isinstance(targets, dict):
            raise ScenarioError(f"{path}.checkpoint_targets", "must be an object: target -> rates")
        checked = {}
        for kind, rates in targets.items():
            where = f"{path}.checkpoint_targets.{kind}"
            if kind not in TARGET_KINDS:
                raise ScenarioError(where, f"unknown target; known: {', '.join(TARGET_KINDS)}")
            if not isinstance(rates, dict):
                raise ScenarioError(where, "must be an object")
            _no_unknown(rates, {"write_bytes_per_s", "read_bytes_per_s"}, where)
            checked[kind] = {k: v for k, v in (
                ("write_bytes_per_s", _num(rates, "write_bytes_per_s", where, strict=True)),
                ("read_bytes_per_s", _num(rates, "read_bytes_per_s", where, strict=True)))
                if v is not None}
        out["checkpoint_targets"] = checked
    return {k: v for k, v in out.items() if v is not None}


def with_profile_figures(d: dict, profiles: dict | None) -> dict:
    """``d`` with a ``cluster.profile`` given by key (a profile's id, as the web side stores
    it) replaced by its figures from ``profiles`` (key -> figures; a new dict). Figures
    already given (a dict) are kept. Raises ScenarioError (``cluster.profile``) for an
    unknown key."""
    ref = d["cluster"]["profile"]
    if isinstance(ref, dict):
        return d
    table = profiles or {}
    key = ref if ref in table else str(ref) if str(ref) in table else None
    if isinstance(ref, bool) or key is None or not isinstance(ref, (int, str)):
        raise ScenarioError("cluster.profile", f"unknown cluster profile {_show(ref)}; give the id "
                                               "of a profile you can see (GET /api/v1/cluster-profiles/)")
    return {**d, "cluster": {**d["cluster"], "profile": dict(table[key])}}


def apply_to_sections(d: dict) -> dict:
    """``d`` (a scenario dict whose ``cluster.profile`` is a profile's figures) with the
    profile's training and checkpoint figures written in where ``d`` does not set them:
    ``training.compute_efficiency`` (not with ``compute_model`` "work", which takes the
    profile's ``gemm_flops`` instead), ``training.network_efficiency``, and the checkpoint
    target's ``target_write_bytes_per_s`` / ``target_read_bytes_per_s`` for the scenario's
    target (``checkpoint.target``, default parallel_fs). A new dict; ``d`` is unchanged.
    Idempotent: the result applied again is the same."""
    cluster = d.get("cluster")
    if not isinstance(cluster, dict) or cluster.get("profile") is None:
        return d
    prof = profile_from_dict(cluster["profile"])
    out = dict(d)
    training = dict(d.get("training") or {}) if isinstance(d.get("training") or {}, dict) else None
    if training is not None:
        if ("compute_efficiency" in prof and training.get("compute_efficiency") is None
                and training.get("compute_model") != "work"):
            training["compute_efficiency"] = prof["compute_efficiency"]
        if "network_efficiency" in prof and training.get("network_efficiency") is None:
            training["network_efficiency"] = prof["network_efficiency"]
        out["training"] = training
    ck = d.get("checkpoint") or {}
    if isinstance(ck, dict):
        rates = prof.get("checkpoint_targets", {}).get(ck.get("target") or "parallel_fs")
        if rates:
            ck = dict(ck)
            for mine, key in (("write_bytes_per_s", "target_write_bytes_per_s"),
                              ("read_bytes_per_s", "target_read_bytes_per_s")):
                if mine in rates and ck.get(key) is None:
                    ck[key] = rates[mine]
            out["checkpoint"] = ck
    return out


def apply_to_cluster(cluster: dict) -> None:
    """Write the profile's accelerator figures into a resolved cluster section (in place):
    ``gemm_flops`` and ``sm_count`` where the accelerator does not give them. Raises
    ScenarioError (``cluster.profile``) when the profile was fitted on another accelerator
    than the scenario's (its figures would not describe this hardware)."""
    prof = profile_from_dict(cluster["profile"])
    cluster["profile"] = prof
    acc = cluster.get("accelerator")
    if not isinstance(acc, dict):
        return
    fitted_on, here = prof.get("accelerator"), acc.get("preset")
    if fitted_on and here and fitted_on != here:
        raise ScenarioError("cluster.profile", f"was fitted on {fitted_on}, but this scenario's "
                                               f"accelerator is {here}; pick a profile of this cluster")
    if "gemm_flops" in prof and acc.get("gemm_flops") is None:
        peak = acc.get("peak_flops_bf16")
        if isinstance(peak, (int, float)) and prof["gemm_flops"] > peak:
            raise ScenarioError("cluster.profile.gemm_flops",
                                f"{prof['gemm_flops']:.4g} FLOP/s is above this accelerator's "
                                f"peak_flops_bf16 {peak:.4g}")
        cluster["accelerator"] = {**acc, "gemm_flops": prof["gemm_flops"], "sm_count": prof["sm_count"]}


# ------------------------------------------------------------------ the fits
def fit_gemm(flops_per_s: float, accelerator, path: str = "measurements.gemm") -> dict:
    """``{"gemm_flops", "sm_count"}`` from a measured dense 16-bit GEMM rate (FLOP/s, large
    shapes: the maximum achievable matmul FLOP/s that :mod:`simulation.compute` scales by
    tile waves). The figure is the measurement itself; the SM count comes from the
    accelerator (its ``sm_count`` or the engine's table). ``accelerator``: an
    :class:`~simulation.scenario.AcceleratorSpec`. Raises ScenarioError when the rate is
    above the accelerator's ``peak_flops_bf16`` (not a 16-bit dense GEMM on this GPU)."""
    from .compute import GPU_FIGURES

    if flops_per_s > accelerator.peak_flops_bf16:
        raise ScenarioError(f"{path}.flops_per_s",
                            f"{flops_per_s / 1e12:.1f} TFLOP/s is above the {accelerator.name}'s "
                            f"16-bit peak of {accelerator.peak_flops_bf16 / 1e12:.1f} TFLOP/s")
    sms = accelerator.sm_count or getattr(GPU_FIGURES.get(accelerator.preset), "sms", None)
    if not sms:
        raise ScenarioError(f"{path}.flops_per_s", "the accelerator has no SM count "
                            "(cluster.accelerator.sm_count): give it to use a GEMM figure")
    return {"gemm_flops": float(flops_per_s), "sm_count": int(sms)}


def fit_collective(m: dict, cluster, path: str) -> dict:
    """The network efficiency e that makes the engine's time of one nccl-tests collective
    equal the measured one.

    nccl-tests reports bus bandwidth busbw = (S / t) x f with f = 2(n-1)/n for
    all-reduce and (n-1)/n for all-gather and reduce-scatter (nccl-tests
    doc/PERFORMANCE.md), so the measured time is t = f S / busbw. The engine times it as
    t = alpha + V / (e x B) (:func:`simulation.collectives.collective_time_s`: alpha from
    NCCL's tuning model, V the bytes a rank moves, B the ring's bus bandwidth on the
    cluster's NVLink and NIC, :func:`~simulation.collectives.bus_bandwidth`), hence

        e = V / (B (t - alpha))

    (solved again if NCCL's ring/tree choice changes with e). Ranks fill NVLink
    domains of ``cluster.nvlink_domain_gpus`` GPUs (by default a node's
    ``gpus_per_node``). Raises ScenarioError (``<path>.bus_bytes_per_s``)
    when the measurement is faster than the links allow (e > 1) or than NCCL's latency.
    Returns ``{"network_efficiency", "link", "model_bus_bytes_per_s"}``. Every bad or
    missing field of the measurement is named at once (:class:`ScenarioErrors`).
    """
    bad = Collect()
    _unknown_each(bad, m, {"collective", "size_bytes", "ranks", "bus_bytes_per_s"}, path)
    name = m.get("collective", "all_reduce")
    if name not in COLLECTIVE_KINDS:
        bad.add(f"{path}.collective", f"must be one of {', '.join(COLLECTIVE_KINDS)}, got {_show(name)}")
    size = bad(_num, m, "size_bytes", path, strict=True, maximum=MAX_BYTES)
    ranks = bad(_int, m, "ranks", path, minimum=2, maximum=1_000_000)
    busbw = bad(_num, m, "bus_bytes_per_s", path, strict=True, maximum=MAX_BYTES_PER_S)
    for key, v in (("size_bytes", size), ("ranks", ranks), ("bus_bytes_per_s", busbw)):
        if v is None and not bad.named(f"{path}.{key}"):
            bad.add(f"{path}.{key}", "is required")
    bad.check()
    kind = COLLECTIVE_KINDS[name]
    g = cluster.gpus_per_node
    # ranks fill NVLink domains (a host on HGX/DGX; collectives.group_span), NICs are per host
    domain = getattr(cluster, "nvlink_domain_gpus", None) or g
    per_node = min(ranks, domain)
    n_nodes = nccl.nodes_spanned(ranks, per_node)
    if n_nodes > 1 and not cluster.nic_bytes_per_s:
        raise ScenarioError(f"{path}.ranks", "spans nodes, but the cluster has no "
                                             "cluster.nic_bytes_per_s")
    nic = (cluster.nic_bytes_per_s or 0.0) / g
    link_bw = nccl.bus_bandwidth(per_node, n_nodes > 1, cluster.accelerator.scaleup_bytes_per_s, nic)
    t = nccl.ring_volume_factor(kind, ranks) * size / busbw
    eff = 1.0
    for _ in range(4):          # the ring/tree choice depends on the bandwidth: a fixed point
        if kind == "allreduce":
            _, alpha, vol = nccl.all_reduce_choice(size, ranks, n_nodes, eff * link_bw)
        else:
            alpha, vol = nccl.ring_latency_s(kind, ranks, n_nodes), nccl.ring_volume_factor(kind, ranks) * size
        if t <= alpha:
            raise ScenarioError(f"{path}.bus_bytes_per_s",
                                f"{busbw / 1e9:.1f} GB/s for {size:.4g} B takes {t * 1e6:.1f} us, "
                                f"under NCCL's latency of {alpha * 1e6:.1f} us alone; use a "
                                "larger message (bandwidth-bound, e.g. 1 GiB)")
        new = vol / (link_bw * (t - alpha))
        if abs(new - eff) <= 1e-12:
            break
        eff = new
    if eff > 1.0 + 1e-9:
        link = "NVLink" if n_nodes == 1 else "NVLink and NIC"
        raise ScenarioError(f"{path}.bus_bytes_per_s",
                            f"{busbw / 1e9:.1f} GB/s bus bandwidth needs {eff:.2f}x what the "
                            f"cluster's {link} allow ({link_bw / 1e9:.1f} GB/s per GPU); check "
                            "the ranks and the cluster's scaleup_bytes_per_s and nic_bytes_per_s")
    return {"network_efficiency": min(eff, 1.0), "link": "nvlink" if n_nodes == 1 else "network",
            "model_bus_bytes_per_s": link_bw, "nodes": n_nodes}


def fit_checkpoint(m: dict, cluster, path: str) -> dict:
    """A checkpoint target's write and read rates (bytes/s) from a timed save and restart.

    The engine moves ``size_bytes`` in ``latency + size / nodes / rate`` with ``rate`` per
    node for node-scope targets (local NVMe) and ``rate / nodes`` each for a shared
    (cluster-scope) one, a parallel FS (:func:`simulation.checkpoint.write_time_s`; a
    sharded checkpoint, every node writing its share). Solving for the rate:

        node scope:    rate = size / nodes / (write_s - latency)
        cluster scope: rate = size / (write_s - latency)

    ``restart_s`` is the time to load the checkpoint back (read + copy into the GPUs, the
    engine's ``restart.reload_s``, without failure detection and warm-up): the read rate
    is solved the same way after the host-to-device copy of each GPU's shard,
    size / GPUs / ``accelerator.host_link_bytes_per_s``, is taken off (GPUDirect Storage
    has none). ``num_nodes`` defaults to the cluster's. Returns ``{target:
    {"write_bytes_per_s", "read_bytes_per_s"}}`` (a rate only for the times given). Every
    bad or missing field of the measurement is named at once (:class:`ScenarioErrors`).
    """
    bad = Collect()
    _unknown_each(bad, m, {"target", "size_bytes", "num_nodes", "write_s", "restart_s"}, path)
    kind = m.get("target", "parallel_fs")
    if kind not in TARGET_KINDS:
        bad.add(f"{path}.target", f"must be one of {', '.join(TARGET_KINDS)}, got {_show(kind)}")
    size = bad(_num, m, "size_bytes", path, strict=True, maximum=MAX_BYTES)
    if size is None and not bad.named(f"{path}.size_bytes"):
        bad.add(f"{path}.size_bytes", "is required")
    nodes = bad(_int, m, "num_nodes", path, cluster.num_nodes, maximum=1_000_000)
    write_s = bad(_num, m, "write_s", path, strict=True, maximum=MAX_SECONDS)
    restart_s = bad(_num, m, "restart_s", path, strict=True, maximum=MAX_SECONDS)
    if write_s is None and restart_s is None and not (bad.named(f"{path}.write_s")
                                                      or bad.named(f"{path}.restart_s")):
        bad.add(f"{path}.write_s", "is required (or restart_s)")
    bad.check()
    tgt = TARGET_DEFAULTS[kind]
    share = size if tgt.scope == "cluster" else size / nodes
    rates = {}
    if write_s is not None:
        if write_s <= tgt.latency_s:
            bad.add(f"{path}.write_s", f"must exceed the target's latency {tgt.latency_s:g} s")
        else:
            rates["write_bytes_per_s"] = share / (write_s - tgt.latency_s)
    if restart_s is not None:
        h2d = size / (nodes * cluster.gpus_per_node) / cluster.accelerator.host_link_bytes_per_s \
            if tgt.via_host else 0.0
        left = restart_s - tgt.latency_s - h2d
        if left <= 0:
            bad.add(f"{path}.restart_s",
                    f"must exceed the copy of each GPU's shard into HBM ({h2d:.3g} s "
                    f"over the {cluster.accelerator.host_link_bytes_per_s / 1e9:g} GB/s "
                    "host link) plus the target's latency")
        else:
            rates["read_bytes_per_s"] = share / left
    bad.check()
    return {kind: rates}


def step_time_s(spec: dict, compute_efficiency: float, lookups: dict) -> float:
    """The engine's step time (s) of ``spec`` at ``compute_efficiency`` (constant model)."""
    training = {k: v for k, v in (spec.get("training") or {}).items() if k != "compute_model"}
    training["compute_efficiency"] = compute_efficiency
    return _evaluated_step_s({**spec, "training": training}, lookups)


def step_time_work_s(spec: dict, gemm_flops: float, sm_count: int, lookups: dict) -> float:
    """The engine's step time (s) of ``spec`` on the work compute model with the
    accelerator's achievable GEMM rate ``gemm_flops`` (FLOP/s) over ``sm_count`` SMs,
    given as the profile's figures (``cluster.profile``, applied by
    :func:`apply_to_cluster`, as a fitted profile will be)."""
    cluster = dict(spec["cluster"])
    cluster["profile"] = {**(cluster.get("profile") or {}), "gemm_flops": gemm_flops, "sm_count": sm_count}
    return _evaluated_step_s({**spec, "cluster": cluster}, lookups)


def _evaluated_step_s(spec: dict, lookups: dict) -> float:
    from .evaluate import evaluate
    from .scenario import Scenario

    sc = Scenario.from_dict(spec, **lookups)
    step = evaluate(sc, include_step=True, detail=False).step or {}
    if not isinstance(step.get("time_s"), (int, float)) or not finite(step["time_s"]):
        raise ScenarioError("scenario", "the engine gives no step time for this scenario")
    return float(step["time_s"])


def step_compute_model(spec: dict, lookups: dict | None = None) -> str:
    """The compute model the engine runs ``spec`` (a scenario dict) on: "constant" where
    its training section says so (``compute_model`` "constant" or a
    ``compute_efficiency``) or the work model cannot run it (fp32, an accelerator without
    GEMM figures: :func:`simulation.compute.uses_work_model`), else "work"."""
    from .compute import uses_work_model
    from .scenario import Scenario

    training = spec.get("training") or {}
    if isinstance(training, dict) and (training.get("compute_model") == "constant"
                                       or training.get("compute_efficiency") is not None):
        return "constant"
    return "work" if uses_work_model(Scenario.from_dict(spec, **(lookups or {}))) else "constant"


def fit_step(spec: dict, measured_s: float, lookups: dict | None = None,
             path: str = "measurements.steps[0]") -> dict:
    """The compute figure at which the engine's step of ``spec`` equals ``measured_s``
    (seconds), on the compute model the scenario runs (:func:`step_compute_model`):

    * **work** (the default): the accelerator's achievable dense 16-bit GEMM rate g
      (FLOP/s, ``gemm_flops``; :mod:`simulation.compute` divides each GEMM's 2MNK FLOPs
      by g times its wave efficiency over ``sm_count`` SMs), bracketed between
      :data:`MIN_COMPUTE_EFFICIENCY` x ``peak_flops_bf16`` and ``peak_flops_bf16``. The
      SM count is the accelerator's (its ``sm_count``, else the engine's table,
      :data:`simulation.compute.GPU_FIGURES`). Solved as the rate the whole workload
      reached, so it also absorbs what the engine's GEMM shapes miss (kernel launch
      gaps, clocks under load); memory-bound kernels keep their HBM rate.
    * **constant** (``compute_model`` "constant" or a ``compute_efficiency`` in the
      scenario, fp32, an accelerator without GEMM figures): the compute efficiency e,
      every FLOP at e x peak; the scenario's own ``compute_efficiency`` is ignored.

    The step falls as the figure rises and its compute part goes as 1 / figure, so the
    step is nearly linear in x = peak / g (work) or x = 1 / e (constant): the root is
    found by regula falsi on x (Illinois variant, which keeps the bracket) over
    x in [1, 1 / :data:`MIN_COMPUTE_EFFICIENCY`], to :data:`STEP_TOLERANCE`, in at most
    :data:`MAX_STEP_EVALUATIONS` evaluations. ``spec`` is a scenario dict (profile
    figures already applied). Raises ScenarioError (``<path>.step_s``) when the measured
    step is outside what any figure in the bracket gives (faster than at 100 % of peak:
    communication, memory-bound kernels or offload the engine sees cannot hide, or the
    scenario is not the configuration measured), and (``<path>.scenario.cluster.
    accelerator.gemm_flops``) on the work model when the scenario sets the accelerator's
    ``gemm_flops`` itself (the figure this fit solves for).

    Returns ``{"compute_model", "model_step_s", "evaluations"}`` and, on the work model,
    ``"gemm_flops"`` (FLOP/s) and ``"sm_count"``, on the constant model
    ``"compute_efficiency"`` (a fraction of peak).
    """
    lookups = lookups or {}
    scope = f"{path}.scenario"
    model = _scoped(lambda: step_compute_model(spec, lookups), scope)
    if model == "work":
        from .compute import figures
        from .scenario import Scenario

        own = {k: v for k, v in spec["cluster"].items() if k != "profile"}
        acc_own = _scoped(lambda: Scenario.from_dict({**spec, "cluster": own}, **lookups), scope).cluster.accelerator
        if acc_own.gemm_flops is not None:
            raise ScenarioError(f"{scope}.cluster.accelerator.gemm_flops",
                                "is the figure a measured step fits: leave it (and sm_count) out")
        acc = _scoped(lambda: Scenario.from_dict(spec, **lookups), scope).cluster.accelerator
        peak, sms = acc.peak_flops_bf16, figures(acc).sms
        step_at = lambda x: step_time_work_s(spec, peak / x, sms, lookups)  # noqa: E731
        what = "with every GEMM at the 16-bit peak (100 % of peak FLOP/s)"
    else:
        step_at = lambda x: step_time_s(spec, 1.0 / x, lookups)  # noqa: E731
        what = "at 100 % of peak FLOP/s"
    f = lambda x: _scoped(lambda: step_at(x), scope) - measured_s  # noqa: E731
    lo_x, hi_x = 1.0, 1.0 / MIN_COMPUTE_EFFICIENCY
    f_lo, f_hi = f(lo_x), f(hi_x)
    evaluations = 2
    if f_lo > STEP_TOLERANCE * measured_s:
        raise ScenarioError(f"{path}.step_s",
                            f"{measured_s:.4g} s is faster than the engine's step {what} "
                            f"({f_lo + measured_s:.4g} s): check that the scenario is the "
                            "configuration measured (batch, parallelism, recomputation)")
    if f_hi < -STEP_TOLERANCE * measured_s:
        raise ScenarioError(f"{path}.step_s",
                            f"{measured_s:.4g} s is slower than the engine's step at "
                            f"{MIN_COMPUTE_EFFICIENCY:.0%} of peak ({f_hi + measured_s:.4g} s)")
    x, fx, side = lo_x, f_lo, 0
    while evaluations < MAX_STEP_EVALUATIONS and abs(fx) > STEP_TOLERANCE * measured_s:
        x = hi_x - f_hi * (hi_x - lo_x) / (f_hi - f_lo) if f_hi != f_lo else 0.5 * (lo_x + hi_x)
        fx = f(x)
        evaluations += 1
        if fx > 0:
            hi_x, f_hi = x, fx
            if side == 1:
                f_lo *= 0.5
            side = 1
        else:
            lo_x, f_lo = x, fx
            if side == -1:
                f_hi *= 0.5
            side = -1
    out = {"compute_model": model, "model_step_s": fx + measured_s, "evaluations": evaluations}
    if model == "work":
        out.update(gemm_flops=peak / x, sm_count=int(sms))
    else:
        out["compute_efficiency"] = 1.0 / x
    return out


def _unknown_each(bad: Collect, d: dict, allowed, path: str) -> None:
    """Record every key of ``d`` outside ``allowed`` in ``bad`` (``fields.no_unknown`` names
    the first only)."""
    for k in d:
        if k not in allowed:
            bad.add(f"{path}.{k}", f"unknown field; known fields: {', '.join(sorted(allowed))}")


def _list(measurements: dict, key: str, bad: Collect) -> list[tuple[int, dict]]:
    """``[(index, measurement)]`` of ``measurements[key]``; what is wrong with the list, or
    with each item that is not an object, recorded in ``bad`` (those items left out)."""
    v = measurements.get(key) or []
    if not isinstance(v, list):
        bad.add(f"measurements.{key}", "must be a list")
        return []
    if len(v) > MAX_MEASUREMENTS:
        bad.add(f"measurements.{key}", f"at most {MAX_MEASUREMENTS} per profile, got {len(v)}")
        return []
    items = []
    for i, item in enumerate(v):
        if isinstance(item, dict):
            items.append((i, item))
        else:
            bad.add(f"measurements.{key}[{i}]", "must be an object")
    return items


def _resolved_cluster(cluster_in, lookups: dict):
    from .scenario import ClusterSpec, resolve_cluster

    return ClusterSpec.from_dict(resolve_cluster(cluster_in, lookups.get("nodes"),
                                                 lookups.get("accelerators"), "measurements.cluster"),
                                 "measurements.cluster")


def fit_profile(measurements: dict, lookups: dict | None = None, name: str | None = None,
                max_work_units: float | None = None) -> dict:
    """Fit a cluster profile to ``measurements`` (shape in the module docstring).

    Order: the GEMM rate and the collectives and checkpoints first (closed forms), then
    each measured step with those figures applied, solving for the compute figure of the
    compute model its scenario runs (:func:`fit_step`): ``gemm_flops`` and ``sm_count``
    on the work model, replacing a GEMM measurement's (which stays in ``fits``), or
    ``compute_efficiency`` on the constant model. Several measurements of one kind give
    one figure, their median (steps: per compute model).
    ``lookups``: the preset tables (``models``, ``nodes``, ``accelerators``) as
    :meth:`Scenario.from_dict` takes them. Raises ScenarioError naming the field
    (``measurements.<kind>[i].<field>``; a step's scenario errors under
    ``measurements.steps[i].scenario``), also when the steps' fits together could take
    more than ``max_work_units`` (:func:`simulation.cost_bound` of one evaluation times
    :data:`MAX_STEP_EVALUATIONS` + 1 each), checked before any is simulated. Every bad
    field is named at once (:class:`ScenarioErrors`): each measurement is read, and the
    steps are fitted only when all of them read well; a cluster that cannot be read is
    reported with unknown sections only (every measurement is read on it).

    Returns ``{"profile": {...figures...}, "fits": [...]}``: per measurement what it gave
    and the engine's figure with the default and with the fitted profile.
    """
    import statistics        # here: the module loads with every evaluation, this rarely
    from .scenario import ClusterSpec  # noqa: F401  (scenario imports this module)

    lookups = dict(lookups or {})
    if not isinstance(measurements, dict):
        raise ScenarioError("measurements", "must be an object")
    bad = Collect()                  # every bad field at once
    _unknown_each(bad, measurements, set(MEASUREMENT_SECTIONS), "measurements")
    cluster_in = measurements.get("cluster")
    if not isinstance(cluster_in, dict):
        bad.add("measurements.cluster", "is required: the cluster measured "
                                        '(e.g. {"node": "dgx-a100-80gb"})')
        cluster = None
    else:
        cluster = bad(_resolved_cluster, cluster_in, lookups)
    if not any(measurements.get(k) not in (None, [], {}) for k in MEASURED_SECTIONS):
        bad.add("measurements", "needs at least one measurement besides the cluster: a GEMM rate "
                                '("gemm": {"flops_per_s"}), an nccl-tests bus bandwidth ("collectives"), '
                                'a checkpoint write or restart time ("checkpoints") or a measured '
                                'step of a scenario ("steps"); without one there is nothing to fit')
    if cluster is None:
        bad.check()
    profile: dict = {"name": name} if name else {}
    if cluster.accelerator.preset:
        profile["accelerator"] = cluster.accelerator.preset
    fits: list[dict] = []

    gemm = measurements.get("gemm")
    if gemm is not None:
        if not isinstance(gemm, dict):
            bad.add("measurements.gemm", "must be an object")
        else:
            _unknown_each(bad, gemm, {"flops_per_s"}, "measurements.gemm")
            rate = bad(_num, gemm, "flops_per_s", "measurements.gemm", strict=True, maximum=1e18)
            if rate is None and not bad.named("measurements.gemm.flops_per_s"):
                bad.add("measurements.gemm.flops_per_s", "is required")
            figures = bad(fit_gemm, rate, cluster.accelerator) if rate is not None else None
            if figures is not None:
                profile.update(figures)
                fits.append({"kind": "gemm", "measured_flops_per_s": rate, "gemm_flops": rate})

    effs = []
    for i, m in _list(measurements, "collectives", bad):
        r = bad(fit_collective, m, cluster, f"measurements.collectives[{i}]")
        if r is None:
            continue
        effs.append(r["network_efficiency"])
        fits.append({"kind": "collective", **{k: m.get(k) for k in ("collective", "size_bytes", "ranks")},
                     "measured_bus_bytes_per_s": m["bus_bytes_per_s"], **r})
    if effs:
        profile["network_efficiency"] = statistics.median(effs)

    per_target: dict = {}
    for i, m in _list(measurements, "checkpoints", bad):
        for kind, rates in (bad(fit_checkpoint, m, cluster, f"measurements.checkpoints[{i}]") or {}).items():
            fits.append({"kind": "checkpoint", "target": kind, **rates})
            for k, v in rates.items():
                per_target.setdefault(kind, {}).setdefault(k, []).append(v)
    if per_target:
        profile["checkpoint_targets"] = {kind: {k: statistics.median(v) for k, v in rates.items()}
                                         for kind, rates in per_target.items()}

    step_fits, specs, units_total = [], [], 0.0
    for i, m in _list(measurements, "steps", bad):
        path = f"measurements.steps[{i}]"
        _unknown_each(bad, m, {"scenario", "step_s"}, path)
        measured = bad(_num, m, "step_s", path, strict=True, maximum=MAX_SECONDS)
        if measured is None and not bad.named(f"{path}.step_s"):
            bad.add(f"{path}.step_s", "is required")
        read = bad(_step_spec, m.get("scenario"), cluster_in, profile, f"{path}.scenario", lookups)
        if read is None:
            continue
        spec, units = read
        units_total += units * (MAX_STEP_EVALUATIONS + 1)
        if max_work_units is not None and units_total > max_work_units:
            bad.add(f"{path}.scenario",
                    f"fitting the measured steps could take about {units_total:,.0f} work units "
                    f"({MAX_STEP_EVALUATIONS + 1} evaluations each); at most "
                    f"{max_work_units:,.0f} are allowed per request: fit a smaller "
                    "configuration or fewer steps")
            break
        if measured is not None:
            specs.append((i, spec, measured))
    bad.check()                      # before any step is simulated
    for i, spec, measured in specs:
        r = bad(fit_step, spec, measured, lookups, f"measurements.steps[{i}]")
        if r is not None:
            step_fits.append((i, spec, measured, r))
    bad.check()
    work = [r for *_, r in step_fits if r["compute_model"] == "work"]
    constant = [r for *_, r in step_fits if r["compute_model"] == "constant"]
    if work:        # the rate the workload reached wins over a GEMM benchmark's (kept in fits)
        profile["gemm_flops"] = statistics.median(r["gemm_flops"] for r in work)
        profile["sm_count"] = work[0]["sm_count"]
    if constant:
        profile["compute_efficiency"] = statistics.median(r["compute_efficiency"] for r in constant)
    for i, spec, measured, r in step_fits:
        where = f"measurements.steps[{i}].scenario"
        default_s = _scoped(lambda: _default_step_s(spec, lookups), where)
        alone = len(work if r["compute_model"] == "work" else constant) == 1
        if alone:
            fitted_s = r["model_step_s"]
        elif r["compute_model"] == "work":
            fitted_s = _scoped(lambda: step_time_work_s(spec, profile["gemm_flops"], profile["sm_count"],
                                                        lookups), where)
        else:
            fitted_s = _scoped(lambda: step_time_s(spec, profile["compute_efficiency"], lookups), where)
        figure = ({"gemm_flops": r["gemm_flops"], "sm_count": r["sm_count"]} if r["compute_model"] == "work"
                  else {"compute_efficiency": r["compute_efficiency"]})
        fits.append({"kind": "step", "compute_model": r["compute_model"], "measured_step_s": measured,
                     "default_step_s": default_s, "fitted_step_s": fitted_s, **figure,
                     "evaluations": r["evaluations"]})
    profile = profile_from_dict(profile, "profile")
    return {"profile": profile, "fits": fits}


def _scoped(fn, path: str):
    """Run ``fn``; a ScenarioError it raises names its field under ``path`` (each of a
    :class:`ScenarioErrors`)."""
    try:
        return fn()
    except ScenarioError as exc:
        errors = [ScenarioError(f"{path}.{e.field}" if e.field else path, e.message)
                  for e in getattr(exc, "errors", None) or [exc]]
        raise (errors[0] if len(errors) == 1 else ScenarioErrors(errors)) from None


def _step_spec(spec, cluster_in: dict, profile: dict, path: str, lookups: dict) -> dict:
    """``(spec, work units of one evaluation)``: the measured step's scenario with the
    profile so far applied (its cluster defaults to the measured cluster's), validated
    like any scenario."""
    from .cost import cost_bound, validate
    from .scenario import Scenario

    if not isinstance(spec, dict):
        raise ScenarioError(path, "is required: the scenario of the configuration measured")
    spec = dict(spec)
    cluster = dict(spec.get("cluster") or cluster_in) if isinstance(spec.get("cluster") or {}, dict) else None
    if cluster is None:
        raise ScenarioError(f"{path}.cluster", "must be an object")
    if spec.get("cluster") and profile.get("accelerator"):
        _same_accelerator(cluster, profile["accelerator"], f"{path}.cluster", lookups)
    cluster["profile"] = {k: v for k, v in profile.items() if k != "compute_efficiency"}
    spec["cluster"] = cluster
    training = spec.get("training") or {}
    if isinstance(training, dict) and training.get("compute_efficiency") is not None:
        # the constant model the scenario chose stays; the figure is what the fit solves for
        spec["training"] = {**{k: v for k, v in training.items() if k != "compute_efficiency"},
                            "compute_model": "constant"}
    sc = _scoped(lambda: Scenario.from_dict(spec, **lookups), path)
    _scoped(lambda: validate(sc), path)
    return spec, cost_bound(sc, include_step=True, detail=False).work_units


def _same_accelerator(cluster: dict, measured_on: str, path: str, lookups: dict) -> None:
    """Raise ScenarioError naming the measured step's own ``cluster.node`` (or
    ``cluster.accelerator``, or ``cluster``) when it is another accelerator than the cluster
    measured (``measurements.cluster``): the profile's figures describe that hardware only."""
    from .scenario import resolve_cluster

    probe = {k: v for k, v in cluster.items() if k != "profile"}
    try:
        resolved = resolve_cluster(probe, lookups.get("nodes"), lookups.get("accelerators"), path)
    except ScenarioError:
        return               # the step's scenario reports it, validated as any scenario
    acc = resolved.get("accelerator")
    here = acc.get("preset") if isinstance(acc, dict) else None
    if here and here != measured_on:
        field = next((k for k in ("accelerator", "node") if cluster.get(k) is not None), None)
        raise ScenarioError(f"{path}.{field}" if field else path,
                            f"is {here}, but the cluster measured (measurements.cluster) has {measured_on}: "
                            "a measured step must be of the cluster measured. Give the step's node "
                            "there, or leave out the step's cluster (it then is measurements.cluster)")


def _default_step_s(spec: dict, lookups: dict) -> float:
    """The engine's step of ``spec`` with no profile at all (the defaults)."""
    from .evaluate import evaluate
    from .scenario import Scenario

    cluster = {k: v for k, v in spec["cluster"].items() if k != "profile"}
    return evaluate(Scenario.from_dict({**spec, "cluster": cluster}, **lookups),
                    include_step=True, detail=False).step["time_s"]


def relative_error(predicted: float, measured: float) -> float:
    """|predicted - measured| / measured."""
    return abs(predicted - measured) / measured if measured else math.inf
