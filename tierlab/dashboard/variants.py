"""Questions one comparison away: copies of a scenario that differ in one choice, compared.

- sharding: ZeRO-2 vs ZeRO-3 vs FSDP HYBRID_SHARD (shard groups of one node)
- offload: optimizer states (and, with ZeRO-Infinity, parameters) in CPU DDR vs NVMe vs CXL
- checkpoint: checkpoints to local NVMe vs remote DRAM (RDMA) vs the parallel file system

On a node without a CXL tier the CXL variant gets the catalog's example expander build
(``dgx-h100-cxl``'s CXL tier, named in the variant's label), so the comparison answers
"CXL or NVMe for this workload" instead of reporting a tier that is not there. Any other
variant the node cannot hold is still compared: the engine says which tier overflows.
"""

from __future__ import annotations

import copy

from django.db import transaction

from simulation import ScenarioError, presets
from tierlab.catalog.labels import strategy_name
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
    nodes = services.catalog_lookups().get("nodes") or {}
    template = nodes.get(CXL_EXAMPLE_NODE) or presets.NODES[CXL_EXAMPLE_NODE]
    return copy.deepcopy(template["tiers"]["cxl"])


def _strategy(spec: dict) -> dict:
    s = spec.get("strategy")
    return s if isinstance(s, dict) else {}


def variants(spec: dict, question: str) -> list[tuple[str, dict]]:
    """``[(label, scenario JSON), ...]`` for ``question``. Raises InputError, ScenarioError."""
    if question not in QUESTIONS:
        raise InputError("question", f"must be one of {', '.join(QUESTIONS)}")
    base = copy.deepcopy(spec)
    out: list[tuple[str, dict]] = []

    def with_(label: str, **sections) -> None:
        v = copy.deepcopy(base)
        v.update(sections)
        out.append((label, v))

    kept = {k: v for k, v in _strategy(base).items() if k in _KEEP}
    if question == "sharding":
        gpus = services.resolve(base)["cluster"]["gpus_per_node"]
        with_("ZeRO-2", strategy=dict(kept, kind="zero2"))
        with_("ZeRO-3", strategy=dict(kept, kind="zero3"))
        with_("FSDP hybrid", strategy=dict(kept, kind="fsdp_hybrid_shard", shard_group_size=gpus))
    elif question == "offload":
        kind = _strategy(base).get("kind")
        kind = kind if kind in ("zero_offload", "zero_infinity") else "zero_infinity"
        has_cxl = "cxl" in (services.resolve(base)["cluster"].get("tiers") or {})
        for target, label in (("cpu", "CPU DDR"), ("nvme", "NVMe"), ("cxl", "CXL")):
            strategy = dict(kept, kind=kind, offload_optimizer=target)
            if kind == "zero_infinity":
                strategy["offload_params"] = target
            if target == "cxl" and not has_cxl:
                cluster = copy.deepcopy(base.get("cluster") or {})
                expander = cxl_expander()
                cluster["tiers"] = dict(cluster.get("tiers") or {}, cxl=expander)
                gib = (expander.get("capacity_bytes") or 0) / 2**30
                with_(f"{strategy_name(kind)} offload to CXL (+ {gib:,.0f} GiB CXL expander)",
                      strategy=strategy, cluster=cluster)
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
    try:
        made = variants(base.spec, question)
    except ScenarioError as exc:
        raise InputError("scenario", f"cannot run: {exc.field}: {exc.message}") from None
    copies = [Scenario.objects.create(owner=owner, name=f"{base.name} · {label}"[:200], spec=spec)
              for label, spec in made]
    return comparisons.create_comparison(owner, [c.pk for c in copies], f"{base.name}: {QUESTIONS[question]}")
