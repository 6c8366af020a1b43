"""Parallel layout: data-parallel degree, shard degree, gradient accumulation."""

from __future__ import annotations

from dataclasses import dataclass

from .fields import made_once, plain

from .errors import ScenarioError
from .pipeline import check_schedule, stage_layers
from .memo import ByIdentity
from .units import plural
from .scenario import ClusterSpec, ModelSpec, Scenario, StrategySpec, TrainingSpec


@dataclass(frozen=True)
class Layout:
    num_gpus: int
    data_parallel: int
    tensor_parallel: int
    pipeline_parallel: int
    shard_degree: int               # ranks the sharded states are split over (1 = none)
    replica_groups: int             # HSDP: data-parallel replicas of one shard group
    micro_batch_size: int
    global_batch_size: int
    grad_accumulation_steps: int

    def to_dict(self) -> dict:
        return made_once(self, plain)          # layouts are frozen and shared


def layout(sc: Scenario) -> Layout:
    """Derive the layout; raises ScenarioError when degrees or batches do not divide.
    Remembered per identity of the four sections it reads (see :mod:`simulation.memo`)."""
    return _layout(sc.model, sc.cluster, sc.training, sc.strategy)


def _derive(model: ModelSpec, c: ClusterSpec, t: TrainingSpec, s: StrategySpec) -> Layout:
    n = c.num_gpus
    mp = t.tensor_parallel * t.pipeline_parallel
    if n % mp:
        # name the degree that does not divide (the pipeline one when both do on their own)
        bad = "tensor_parallel" if n % t.tensor_parallel or t.pipeline_parallel == 1 else "pipeline_parallel"
        nodes = plural(c.num_nodes, "node")
        raise ScenarioError(f"training.{bad}",
                            f"tensor_parallel x pipeline_parallel = {t.tensor_parallel} x "
                            f"{t.pipeline_parallel} = {mp} must divide the {plural(n, 'GPU')} "
                            f"({nodes} x {c.gpus_per_node})")
    dp = n // mp
    _stage_layers(model, t)           # raises naming the field when the split is not built
    if model.num_attention_heads and model.num_attention_heads % t.tensor_parallel:
        raise ScenarioError("training.tensor_parallel",
                            f"must divide the {model.num_attention_heads} attention heads, "
                            f"got {t.tensor_parallel}")
    per_step = t.micro_batch_size * dp
    gbs = t.global_batch_size if t.global_batch_size is not None else per_step
    if gbs % per_step:
        raise ScenarioError("training.global_batch_size",
                            f"must be a multiple of micro_batch_size x data-parallel degree = "
                            f"{t.micro_batch_size} x {dp} = {per_step}, got {gbs}")
    if s.zero_stage == 0:
        shard = 1
    elif s.kind == "fsdp_hybrid_shard":
        if dp % s.shard_group_size:
            raise ScenarioError("strategy.shard_group_size",
                                f"must divide the data-parallel degree {dp}, got {s.shard_group_size}")
        shard = s.shard_group_size
    else:
        shard = dp
    gas = (t.global_batch_size if t.global_batch_size is not None else per_step) // per_step
    check_schedule(t.pipeline_schedule, t.pipeline_parallel, t.interleave_stages or 1, gas)
    return Layout(num_gpus=n, data_parallel=dp, tensor_parallel=t.tensor_parallel,
                  pipeline_parallel=t.pipeline_parallel, shard_degree=shard,
                  replica_groups=dp // shard, micro_batch_size=t.micro_batch_size,
                  global_batch_size=gbs, grad_accumulation_steps=gbs // per_step)


_layout = ByIdentity(_derive)


def _split(model: ModelSpec, t: TrainingSpec) -> tuple[int, ...]:
    return stage_layers(model.num_layers, t.pipeline_parallel, t.interleave_stages or 1,
                        t.first_pipeline_layers, t.last_pipeline_layers, t.pipeline_layers)


_stage_layers = ByIdentity(_split)


def split_of(model: ModelSpec, training: TrainingSpec) -> tuple[int, ...]:
    """:func:`pipeline_stage_layers` of the two sections (remembered per identity)."""
    return _stage_layers(model, training)


def pipeline_stage_layers(sc: Scenario) -> tuple[int, ...]:
    """Transformer layers on each pipeline stage (:func:`simulation.pipeline.stage_layers`;
    ``(num_layers,)`` without a pipeline), remembered per (model, training) section."""
    return _stage_layers(sc.model, sc.training)


def is_uneven(sc: Scenario) -> bool:
    """Whether the pipeline stages hold different numbers of layers."""
    split = pipeline_stage_layers(sc)
    return len(set(split)) > 1
