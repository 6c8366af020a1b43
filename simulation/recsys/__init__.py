"""Recommendation models: hybrid embedding tiers, and parameter server versus collectives.

:class:`RecModelSpec` is the scenario's ``recsys`` section (:mod:`.spec`);
:func:`evaluate_recsys` answers, JSON-ready::

    embedding.tiers[*].{tier, rows, bytes, hit_rate, lookup_s, cost_usd, ...}
    embedding.{lookup_s_per_step, exposed_s, hidden_s, cost_usd, tables[*], sample_check}
    ps.designs[*].{design, step_time_s, bytes_on_wire, traffic_bytes, links[*]}
    ps.{faster, speedup, notes}
    dense.{params, flops_per_step, step_s, source}
    kernels.{groups, gpu_busy_s, lookups_per_gpu, distinct_rows, distinct_rows_per_gpu, ...}

Modules: :mod:`.zipf` (harmonic numbers, hit rates, distinct rows, sampler),
:mod:`.tiers` (placement, lookup cost, money), :mod:`.step` (the GPU's kernels of a
DLRM step), :mod:`.ps` (the step graphs).
"""

from __future__ import annotations

from .ps import embedding_designs, moe_designs
from .spec import PRESETS, TIER_DEFAULTS, RecModelSpec, TableSpec, TierOption, resolve_tiers
from .step import dense_seconds, distinct_rows_many, step_kernels
from .tiers import evaluate_embedding

__all__ = ["PRESETS", "TIER_DEFAULTS", "RecModelSpec", "TableSpec", "TierOption",
           "dense_flops_per_step", "embedding_designs", "evaluate_embedding",
           "evaluate_recsys", "hbm_left_for_embeddings", "moe_designs", "resolve_tiers"]


def hbm_left_for_embeddings(spec: RecModelSpec, *, hbm_capacity_bytes: float,
                            runtime_bytes: float = 0.0, bytes_per_dense_param: float = 16.0) -> float:
    """HBM per GPU left for embedding rows: capacity - runtime - the dense part's states.

    The dense MLPs are data parallel, so every GPU holds all their states
    (``bytes_per_dense_param``: 16 for mixed-precision Adam, ZeRO Sec. 3.1; 8 for fp32
    SGD). Activations of the MLPs (batch / GPUs x layer widths) are not subtracted.
    """
    return max(0.0, hbm_capacity_bytes - runtime_bytes
               - spec.dense_params["total"] * bytes_per_dense_param)


def dense_flops_per_step(spec: RecModelSpec) -> float:
    """FLOPs of the dense part for one global batch, forward + backward.

    Matrix layers: 2 FLOPs per weight per sample forward, 4 backward (6 in all; Kaplan
    et al. 2020 Sec. 2.1). DLRM's dot interaction: a batched F x d by d x F product,
    2 F^2 d forward per sample, times 3 with backward.
    """
    f, d = len(spec.tables) + 1, spec.bottom_mlp[-1]
    inter = 3 * 2 * f * f * d if spec.interaction == "dot" else 0
    return spec.batch_size * (6 * spec.dense_params["total"] + inter)


def evaluate_recsys(spec: RecModelSpec, *, num_gpus: int, gpus_per_node: int,
                    hbm_free_bytes_per_gpu: float | None, hbm_bytes_per_s: float,
                    host_link_bytes_per_s: float | None, nic_bytes_per_s: float | None,
                    scaleup_bytes_per_s: float, flops_per_s: float | None = None,
                    network_efficiency: float = 0.8, node_tiers: dict | None = None,
                    gpu=None) -> dict:
    """Placement, lookup cost, money and PS-versus-all-to-all for ``spec`` on a cluster.

    ``hbm_free_bytes_per_gpu``: HBM left per GPU for embeddings after the dense part.
    ``gpu``: the accelerator's GEMM figures (:class:`simulation.compute.GpuFigures`): the
    dense kernels run as GEMMs at its achievable matmul rate (:mod:`.step`); without them
    at ``flops_per_s``, sustained FLOP/s per GPU (peak x compute efficiency), unless
    ``spec.dense_step_s`` is given. ``node_tiers``: the node's tiers as
    ``cluster.tiers`` (name -> {capacity_bytes, read_bytes_per_s, latency_s, devices}).
    """
    tiers = resolve_tiers(spec, hbm_free_bytes_per_gpu=hbm_free_bytes_per_gpu,
                          hbm_bytes_per_s=hbm_bytes_per_s, node_tiers=node_tiers)
    flops = dense_flops_per_step(spec)
    # distinct rows of the global batch (the embedding update) and, for the parameter
    # server, of one worker's share: one pass over each table's rows
    per_step, per_worker = (distinct_rows_many(spec, [spec.batch_size, spec.batch_size / num_gpus])
                            if nic_bytes_per_s else (distinct_rows_many(spec, [spec.batch_size])[0], None))
    kernels, counts = step_kernels(spec, num_gpus=num_gpus, hbm_bytes_per_s=hbm_bytes_per_s,
                                   gpu=gpu, flops_per_s=flops_per_s, distinct=per_step)
    dense_s = dense_seconds(kernels)
    emb = evaluate_embedding(spec, tiers, num_gpus=num_gpus, gpus_per_node=gpus_per_node,
                             host_link_bytes_per_s=host_link_bytes_per_s, dense_step_s=dense_s)
    ps = embedding_designs(spec, num_gpus=num_gpus, gpus_per_node=gpus_per_node,
                           nic_bytes_per_s=nic_bytes_per_s, scaleup_bytes_per_s=scaleup_bytes_per_s,
                           dense_step_s=dense_s, lookup_s=emb["lookup_s_per_step"],
                           network_efficiency=network_efficiency, kernels=kernels,
                           prefetch_s=emb["below_hbm_lookup_s"], touched=per_worker)
    source = ("given" if spec.dense_step_s is not None else
              "GEMMs at the achievable matmul rate (simulation.compute)" if gpu is not None else
              "flops / (GPUs x FLOP/s)")
    return dict(embedding=emb, ps=ps,
                dense=dict(params=spec.dense_params, flops_per_step=flops, step_s=dense_s, source=source),
                kernels=dict(groups={k: [x.to_dict() for x in v] for k, v in kernels.items()},
                             gpu_busy_s=sum(x.seconds for v in kernels.values() for x in v), **counts),
                notes=emb["notes"] + ps["notes"], spec=spec.to_dict())
