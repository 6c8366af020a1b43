"""Questions one comparison away: copies of a scenario that differ in one choice, compared.

- sharding: ZeRO-2 vs ZeRO-3 vs FSDP HYBRID_SHARD: shard groups of the largest divisor of the
  data-parallel (x context-parallel) degree whose GPUs fit in one node (each rank of the group
  holds tensor_parallel GPUs of one pipeline stage) and that leaves at least 2 replicas; left
  out, with a note saying why, where no group of 2 or more ranks leaves 2 replicas (a
  data-parallel degree of 1 or 2 and other layouts with nothing to shard and replicate)
- offload: optimizer states (and, with ZeRO-Infinity, parameters) in CPU DDR vs NVMe vs CXL
- checkpoint: checkpoints to local NVMe vs remote DRAM (RDMA) vs the parallel file system

On a node without a CXL tier the CXL variant gets an expander built from the catalog's
example (``dgx-h100-cxl``'s modules) with as many modules as the workload needs: the
engine's memory estimate of the variant says how much its CXL tier holds (the state the
engine's host model places there), and the expander gets enough modules for that below the
fit band, their bandwidth added up (each module has its own PCIe link). The label names
the build and the size the workload needs, so the comparison answers "CXL or NVMe for
this workload" instead of reporting a tier that is not there or one too small. Any other
variant the node cannot hold is still compared: the engine says which tier overflows.
"""

from __future__ import annotations

import copy
import math
import re

from django.db import transaction

from simulation import ScenarioError, presets
from simulation.scenario import MAX_TIER_BYTES
from tierlab.catalog.labels import strategy_name
from tierlab.catalog.lookups import catalog_lookups
from tierlab.dashboard import comparisons
from tierlab.dashboard.comparisons import InputError, parse_id
from tierlab.dashboard.models import Comparison
from tierlab.scenarios import services
from tierlab.scenarios.models import Scenario

QUESTIONS = {
    "sharding": "ZeRO-2 vs ZeRO-3 vs FSDP hybrid",
    "offload": "CPU vs NVMe vs CXL offload",
    "checkpoint": "Checkpoint to NVMe vs remote DRAM vs parallel FS",
}

_KEEP = ("prefetch_depth", "prefetch_miss_rate", "offload_activations")
CXL_EXAMPLE_NODE = "dgx-h100-cxl"


def cxl_expander() -> dict:
    """The CXL tier of the catalog's example CXL build (the engine's built-in if absent)."""
    nodes = catalog_lookups().get("nodes") or {}
    template = nodes.get(CXL_EXAMPLE_NODE) or presets.NODES[CXL_EXAMPLE_NODE]
    return copy.deepcopy(template["tiers"]["cxl"])


# an expander no workload fills, to measure what it holds: the largest tier the engine takes
_PROBE_CAPACITY_BYTES = MAX_TIER_BYTES


def sized_cxl_expander(spec: dict) -> tuple[dict, float | None]:
    """``(expander, needed_bytes)``: the example CXL build with as many of its modules as
    ``spec`` (a scenario offloading to CXL) needs per node, at least one; ``needed_bytes``
    is the CXL tier's peak from the engine's memory estimate, or None (and the example
    build as it is) when that estimate is refused (more work than a request may do)."""
    template = cxl_expander()
    modules = max(1, int(template.get("devices") or 1))
    per_module = {k: template[k] / modules for k in ("capacity_bytes", "read_bytes_per_s",
                                                     "write_bytes_per_s") if template.get(k)}
    probe = copy.deepcopy(spec)
    probe["cluster"]["tiers"]["cxl"] = dict(template, capacity_bytes=_PROBE_CAPACITY_BYTES)
    try:
        memory = services.estimate(probe)["memory"]
    except (ScenarioError, services.TooMuchWork):
        return template, None
    needed = memory["per_node"]["cxl"]["total_bytes"]
    usable = per_module["capacity_bytes"] * (1 - memory.get("band", 0.0))   # "fits", not "tight"
    n = max(1, math.ceil(needed / usable))
    sized = dict(template, devices=n, **{k: v * n for k, v in per_module.items()})
    if isinstance(template.get("device"), str):
        sized["device"] = re.sub(r"^\d+\s*x\s*", f"{n}x ", template["device"])
    return sized, needed


def _gib(b: float) -> str:
    return f"{b / 2**40:,.2f} TiB" if b >= 2**40 else f"{b / 2**30:,.0f} GiB"


def _strategy(spec: dict) -> dict:
    s = spec.get("strategy")
    return s if isinstance(s, dict) else {}


def hybrid_shard_group(resolved: dict) -> tuple[int | None, str]:
    """``(shard_group_size, why)`` for an FSDP hybrid variant of a resolved scenario: the
    largest divisor g of the data-parallel x context-parallel degree D (the group the engine
    shards over, :func:`simulation.parallel.layout`) with g x tensor_parallel GPUs in one node
    and D / g >= 2 replicas, g >= 2; ``(None, why)`` where there is none (hybrid would shard
    nothing or replicate nothing)."""
    cluster, training = resolved["cluster"], resolved.get("training") or {}
    tp = int(training.get("tensor_parallel") or 1)
    pp = int(training.get("pipeline_parallel") or 1)
    cp = int(training.get("context_parallel") or 1)
    gpus = int(cluster["gpus_per_node"]) * int(cluster.get("num_nodes") or 1)
    dcp = gpus // (tp * pp * cp) * cp if gpus % (tp * pp * cp) == 0 else 0
    what = "data-parallel degree" if cp == 1 else "data-parallel x context-parallel degree"
    fits = max(1, int(cluster["gpus_per_node"]) // tp)
    best = max((g for g in range(2, dcp // 2 + 1) if dcp % g == 0 and g <= fits), default=None)
    if best is None:
        return None, (f"FSDP hybrid left out: the {what} is {dcp} (tensor_parallel {tp} x "
                      f"pipeline_parallel {pp} on {gpus} GPUs), so no shard group of 2 or more ranks "
                      f"in one node leaves 2 or more replicas: hybrid shard would shard nothing or "
                      f"be full shard")
    return best, ""


def variants(spec: dict, question: str, notes: list[str] | None = None) -> list[tuple[str, dict]]:
    """``[(label, scenario JSON), ...]`` for ``question``; a variant left out is said in
    ``notes`` (appended to). Raises InputError, ScenarioError."""
    if question not in QUESTIONS:
        raise InputError("question", f"must be one of {', '.join(QUESTIONS)}")
    base = copy.deepcopy(spec)
    out: list[tuple[str, dict]] = []
    notes = notes if notes is not None else []

    def with_(label: str, **sections) -> None:
        v = copy.deepcopy(base)
        v.update(sections)
        out.append((label, v))

    kept = {k: v for k, v in _strategy(base).items() if k in _KEEP}
    pp = int((services.resolve(base).get("training") or {}).get("pipeline_parallel") or 1)
    no_pipeline = (f"DeepSpeed's pipeline engine runs ZeRO stage 0 or 1 only, and this scenario "
                   f"has pipeline_parallel {pp}")
    if question == "sharding":
        group, why = hybrid_shard_group(services.resolve(base))
        if pp > 1:
            notes.append(f"ZeRO-2 and ZeRO-3 left out: {no_pipeline}; ZeRO-1 and FSDP full shard instead.")
            with_("ZeRO-1", strategy=dict(kept, kind="zero1"))
            with_("FSDP full shard", strategy=dict(kept, kind="fsdp_full_shard"))
        else:
            with_("ZeRO-2", strategy=dict(kept, kind="zero2"))
            with_("ZeRO-3", strategy=dict(kept, kind="zero3"))
        if group is None:
            notes.append(why)
        else:
            with_("FSDP hybrid", strategy=dict(kept, kind="fsdp_hybrid_shard", shard_group_size=group))
    elif question == "offload":
        base_kind = _strategy(base).get("kind")
        base_kind = base_kind if base_kind in ("zero_offload", "zero_infinity") else "zero_infinity"
        if pp > 1:
            # ZeRO-1 offloads the optimizer to host memory with a pipeline (BLOOM's setup)
            base_kind = "zero1"
            notes.append(f"ZeRO-Offload (stage 2) and ZeRO-Infinity (stage 3) left out: {no_pipeline}; "
                         "ZeRO-1 with the optimizer offloaded instead, which cannot use NVMe.")
        has_cxl = "cxl" in (services.resolve(base)["cluster"].get("tiers") or {})
        for target, label in (("cpu", "CPU DDR"), ("nvme", "NVMe"), ("cxl", "CXL")):
            # NVMe swapping is ZeRO-3's: ZeRO-Offload's NVMe variant is ZeRO-Infinity's
            kind = "zero_infinity" if target == "nvme" and base_kind == "zero_offload" else base_kind
            if target == "nvme" and kind == "zero1":
                continue
            strategy = dict(kept, kind=kind, offload_optimizer=target)
            if kind == "zero_infinity":
                strategy["offload_params"] = target if base_kind == "zero_infinity" else "none"
            if target == "cxl" and not has_cxl:
                cluster = copy.deepcopy(base.get("cluster") or {})
                cluster["tiers"] = dict(cluster.get("tiers") or {})
                expander, needed = sized_cxl_expander(dict(copy.deepcopy(base), strategy=strategy,
                                                           cluster=cluster))
                cluster["tiers"]["cxl"] = expander
                size = _gib(expander.get("capacity_bytes") or 0)
                n = expander.get("devices", 1)
                need = f" for the {_gib(needed)} it needs" if needed is not None else ", not sized"
                with_(f"{strategy_name(kind)} offload to CXL (+ {size} CXL expander, "
                      f"{n} module{'s' if n != 1 else ''}{need})", strategy=strategy, cluster=cluster)
            else:
                with_(f"{strategy_name(kind)} offload to {label}", strategy=strategy)
    else:
        checkpoint = base.get("checkpoint") if isinstance(base.get("checkpoint"), dict) else {}
        for target, label in (("local_nvme", "local NVMe"), ("remote_dram", "remote DRAM"),
                              ("parallel_fs", "parallel FS")):
            with_(f"checkpoint to {label}", checkpoint=dict(checkpoint, target=target))
    return out


@transaction.atomic
def compare_variants(owner, scenario_id, question: str) -> Comparison:
    """New scenarios of ``owner``, one per variant of a scenario they can see (theirs or their
    team's), and their comparison.

    Raises InputError naming ``scenario``, ``question`` or the variant that cannot run.
    """
    try:
        base = Scenario.objects.visible_to(owner).get(pk=parse_id(scenario_id, "scenario"))
    except Scenario.DoesNotExist:
        raise InputError("scenario", f"you have no scenario {scenario_id!r}") from None
    if not base.has_transformer:
        raise InputError("question", "a recommendation model's scenario has no variants to compare: "
                                     "its sharding, offload and checkpoint choices change nothing the "
                                     "engine reports for it")
    notes: list[str] = []
    try:
        made = variants(base.spec, question, notes)
    except ScenarioError as exc:
        raise InputError("scenario", f"cannot run: {exc.field}: {exc.message}") from None
    copies = [Scenario.objects.create(owner=owner, name=f"{base.name} · {label}"[:200], spec=spec)
              for label, spec in made]
    return comparisons.create_comparison(owner, [c.pk for c in copies], f"{base.name}: {QUESTIONS[question]}",
                                         notes=notes)
