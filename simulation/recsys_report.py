"""Report sections for a recommendation model (the scenario's ``recsys``).

The dense MLPs are data parallel: every GPU holds their states (params + grads +
optimizer, ZeRO Sec. 3.1 bytes per parameter). Embedding rows are placed hottest-first
across HBM, DDR, CXL, PMEM and NVMe (:mod:`simulation.recsys`); each tier's share is
divided over its devices (GPUs for HBM, nodes for the others) to give the per-GPU and
per-node memory the report shows, with the same keys as a transformer's.
"""

from __future__ import annotations

from .compute import DEFAULT_COMPUTE_EFFICIENCY, figures, uses_work_model
from .memory import RUNTIME_PART, part, tier_summary
from .recsys import evaluate_recsys, hbm_left_for_embeddings
from .scenario import Scenario
from .states import StateBytes

RECSYS_NODE_TIERS = ("ddr", "nvme", "cxl", "pmem")


def recsys_sections(sc: Scenario, sb: StateBytes, peak_flops: float,
                    hbm_free_bytes: float | None = None) -> dict:
    """``embedding``, ``ps``, ``dense`` and the memory parts of ``sc.recsys``."""
    c, acc, spec = sc.cluster, sc.cluster.accelerator, sc.recsys
    free = hbm_left_for_embeddings(spec, hbm_capacity_bytes=acc.hbm_capacity_bytes,
                                   runtime_bytes=sc.runtime.runtime_bytes,
                                   bytes_per_dense_param=sb.total)
    if hbm_free_bytes is not None:
        free = min(free, max(hbm_free_bytes, 0.0))
    r = evaluate_recsys(spec, num_gpus=c.num_gpus, gpus_per_node=c.gpus_per_node,
                        hbm_free_bytes_per_gpu=free, hbm_bytes_per_s=acc.hbm_bytes_per_s,
                        host_link_bytes_per_s=acc.host_link_bytes_per_s,
                        nic_bytes_per_s=c.nic_bytes_per_s, scaleup_bytes_per_s=acc.scaleup_bytes_per_s,
                        flops_per_s=peak_flops * (sc.training.compute_efficiency or DEFAULT_COMPUTE_EFFICIENCY),
                        network_efficiency=sc.training.network_efficiency,
                        node_tiers={k: v.to_dict() for k, v in c.tiers.items()},
                        gpu=_gemm_figures(sc))
    parts = []
    for t in r["embedding"]["tiers"]:
        if t["bytes"] <= 0:
            continue
        parts.append(part(f"embedding rows ({t['rows']:,} rows, hit rate {t['hit_rate']:.1%})",
                          "params", t["tier"], t["bytes"] / t["devices"],
                          note="hottest rows first (Zipf); row bytes include the optimizer state"))
    dense = spec.dense_params["total"]
    for name, cat, bpp in (("dense MLP parameters", "params", sb.params),
                           ("dense MLP gradients", "grads", sb.grads),
                           ("dense MLP optimizer states", "optimizer", sb.k)):
        parts.append(part(name, cat, "hbm", dense * bpp, bytes_per_param=bpp,
                          note="data parallel: every GPU holds all of it"))
    return dict(r, parts=parts)


def _gemm_figures(sc: Scenario):
    """The GEMM figures the dense kernels run on with ``training.compute_model`` "work"
    (:func:`simulation.compute.uses_work_model`); None for the constant model (every GEMM
    FLOP at peak x ``compute_efficiency``)."""
    return figures(sc.cluster.accelerator) if uses_work_model(sc) else None


def recsys_memory(sc: Scenario, rs: dict) -> dict:
    """per_gpu.hbm and per_node tiers for a recommendation-only scenario."""
    acc = sc.cluster.accelerator
    parts = rs["parts"] + [part(RUNTIME_PART, "buffers", "hbm",
                                sc.runtime.runtime_bytes, note="runtime.runtime_bytes")]
    # per-device capacity of the tiers the embedding placement used (PMEM may be recsys-only)
    placed = {t["tier"]: (t["capacity_bytes"] or 0.0) / t["devices"]
              for t in rs["embedding"]["tiers"] if t["devices"]}
    per_node = {}
    for t in RECSYS_NODE_TIERS:
        spec = sc.cluster.tiers.get(t)
        if spec is None and t not in placed:
            if t == "pmem":
                continue
        cap = spec.capacity_bytes if spec else placed.get(t, 0.0)
        per_node[t] = tier_summary(parts, t, cap, spec is not None or t in placed)
    return dict(per_gpu={"hbm": tier_summary(parts, "hbm", acc.hbm_capacity_bytes, True)},
                per_node=per_node)
