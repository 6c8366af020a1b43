"""Parallel layout: data-parallel degree, shard degree, gradient accumulation.

Degrees as Megatron-LM checks them (megatron/core/parallel_state.py
``initialize_model_parallel``, megatron/training/arguments.py ``validate_args``): the world
size is a multiple of tensor x context x pipeline parallel, the data-parallel degree is
the quotient, and ranks are laid out "tp-cp-ep-dp-pp" (TP innermost). Gradients are
reduced, and the distributed optimizer's states sharded, over the data-parallel group
*with* context parallelism (``get_data_parallel_group(with_context_parallel=True)``:
dp x cp ranks, contiguous after TP); torchtitan's FSDP shards over the same dp_shard x cp
mesh ("dp_shard_cp", torchtitan/distributed/parallel_dims.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from .fields import frozen_new, made_once, plain

from .errors import ScenarioError, add_reads
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
    context_parallel: int = 1       # CP degree: ranks one sequence is split over

    @property
    def grad_reduce_degree(self) -> int:
        """Ranks the gradients are reduced over: data parallel x context parallel."""
        return self.data_parallel * self.context_parallel
    # Expert parallelism (simulation/experts.py): the MoE layers' experts spread over EP
    # ranks, each expert split over ETP ranks; the expert-data-parallel group (EDP) is
    # what is left of tp x dp for them (Megatron-Core parallel_state.py: world / (ETP x EP
    # x PP)); ``expert_shard_degree``: ranks the experts' sharded states are split over.
    expert_parallel: int = 1
    expert_tensor_parallel: int = 1
    expert_data_parallel: int = 1
    expert_shard_degree: int = 1

    def to_dict(self) -> dict:
        return made_once(self, _plain)         # layouts are frozen and shared


_EXPERT_KEYS = ("expert_parallel", "expert_tensor_parallel", "expert_data_parallel",
                "expert_shard_degree")


def _plain(lay: Layout) -> dict:
    """The layout as JSON; without expert parallelism its expert degrees are left out (the
    report's ``parallelism`` as before EP existed)."""
    d = plain(lay)
    if lay.expert_parallel == 1 and lay.expert_tensor_parallel == lay.tensor_parallel:
        for k in _EXPERT_KEYS:
            del d[k]
    return d


def layout(sc: Scenario) -> Layout:
    """Derive the layout; raises ScenarioError when degrees or batches do not divide.
    Remembered per identity of the four sections it reads (see :mod:`simulation.memo`)."""
    return _layout(sc.model, sc.cluster, sc.training, sc.strategy)


# The fields each of the layout's cross-field checks reads (errors.add_reads): an error of a
# check is not reported beside an error of a field it read (that field then took its default).
_GPUS = ("cluster.num_nodes", "cluster.gpus_per_node", "cluster.node")
_GRID = _GPUS + ("training.tensor_parallel", "training.pipeline_parallel",
                 "training.context_parallel")
_SPLIT = ("model.num_layers", "training.pipeline_parallel", "training.interleave_stages",
          "training.pipeline_layers", "training.first_pipeline_layers",
          "training.last_pipeline_layers")
_BATCH = _GRID + ("training.micro_batch_size", "training.global_batch_size")
_SHARD = _GRID + ("strategy.kind", "strategy.shard_group_size")
_EXPERTS = _SHARD + ("model.num_experts", "training.expert_parallel",
                     "training.expert_tensor_parallel")
_SCHEDULE = _BATCH + ("training.interleave_stages",)


def _derive(model: ModelSpec, c: ClusterSpec, t: TrainingSpec, s: StrategySpec) -> Layout:
    try:
        return _derive_checked(model, c, t, s)
    except ScenarioError as exc:
        raise add_reads(exc, _GRID)


def _derive_checked(model: ModelSpec, c: ClusterSpec, t: TrainingSpec, s: StrategySpec) -> Layout:
    n = c.num_gpus
    cp = t.context_parallel
    mp = t.tensor_parallel * t.pipeline_parallel * cp
    if cp > 1 and n % mp:
        raise ScenarioError("training.context_parallel",
                            f"tensor_parallel x context_parallel x pipeline_parallel = "
                            f"{t.tensor_parallel} x {cp} x {t.pipeline_parallel} = {mp} must divide "
                            f"the {plural(n, 'GPU')} ({plural(c.num_nodes, 'node')} x "
                            f"{c.gpus_per_node})")
    if n % mp:
        # name the degree that does not divide (the pipeline one when both do on their own)
        bad = "tensor_parallel" if n % t.tensor_parallel or t.pipeline_parallel == 1 else "pipeline_parallel"
        nodes = plural(c.num_nodes, "node")
        raise ScenarioError(f"training.{bad}",
                            f"tensor_parallel x pipeline_parallel = {t.tensor_parallel} x "
                            f"{t.pipeline_parallel} = {mp} must divide the {plural(n, 'GPU')} "
                            f"({nodes} x {c.gpus_per_node})")
    dp = n // mp
    try:
        _stage_layers(model, t)       # raises naming the field when the split is not built
    except ScenarioError as exc:
        raise add_reads(exc, _SPLIT)
    if model.num_attention_heads and model.num_attention_heads % t.tensor_parallel:
        raise ScenarioError("training.tensor_parallel",
                            f"must divide the {model.num_attention_heads} attention heads, "
                            f"got {t.tensor_parallel}",
                            depends_on=("model.num_attention_heads", "training.tensor_parallel"))
    per_step = t.micro_batch_size * dp
    gbs = t.global_batch_size if t.global_batch_size is not None else per_step
    if gbs % per_step:
        raise ScenarioError("training.global_batch_size",
                            f"must be a multiple of micro_batch_size x data-parallel degree = "
                            f"{t.micro_batch_size} x {dp} = {per_step}, got {gbs}",
                            depends_on=_BATCH)
    dcp = dp * cp                   # the gradient-reduction / sharding group
    if s.zero_stage == 0:
        shard = 1
    elif s.kind == "fsdp_hybrid_shard":
        if dcp % s.shard_group_size:
            what = "data-parallel degree" if cp == 1 else "data-parallel x context-parallel degree"
            raise ScenarioError("strategy.shard_group_size",
                                f"must divide the {what} {dcp}, got {s.shard_group_size}",
                                depends_on=_SHARD)
        shard = s.shard_group_size
    else:
        shard = dcp
    try:
        ep, etp, edp, eshard = _expert_degrees(model, t, s, dp, shard)
    except ScenarioError as exc:
        raise add_reads(exc, _EXPERTS)
    gas = (t.global_batch_size if t.global_batch_size is not None else per_step) // per_step
    try:
        check_schedule(t.pipeline_schedule, t.pipeline_parallel, t.interleave_stages or 1, gas)
    except ScenarioError as exc:
        raise add_reads(exc, _SCHEDULE)
    return frozen_new(Layout, dict(
        num_gpus=n, data_parallel=dp, tensor_parallel=t.tensor_parallel,
        pipeline_parallel=t.pipeline_parallel, shard_degree=shard,
        replica_groups=dcp // shard, micro_batch_size=t.micro_batch_size,
        global_batch_size=gbs, grad_accumulation_steps=gbs // per_step,
        context_parallel=cp,
        expert_parallel=ep, expert_tensor_parallel=etp, expert_data_parallel=edp,
        expert_shard_degree=eshard))


def _expert_degrees(model: ModelSpec, t: TrainingSpec, s: StrategySpec, dp: int,
                    shard: int) -> tuple[int, int, int, int]:
    """``(EP, ETP, EDP, expert shard degree)``, checked as Megatron-Core checks them.

    Megatron-Core (megatron/core/parallel_state.py ``initialize_model_parallel``, core
    0.20) lays the experts out on a second grid of the same ranks, ETP x EP x EDP x PP
    (order tp-ep-dp-pp): world % (ETP x EP x PP) must be 0 and EDP = world / (ETP x EP x
    PP), i.e. ETP x EP must divide TP x DP. The sharded states of the experts (ZeRO, the
    distributed optimizer, FSDP) are split over the expert-data-parallel ranks of the
    shard group: shard x TP / (ETP x EP) of them (at least 1).
    """
    ep = t.expert_parallel
    etp = t.expert_tp if model.num_experts > 1 else t.tensor_parallel
    if ep == 1 and etp == t.tensor_parallel:
        return 1, etp, dp, shard
    # the dense grid's ranks of one pipeline stage: TP x CP x DP (CP where the scenario has it)
    group = t.tensor_parallel * (getattr(t, "context_parallel", 1) or 1) * dp
    if group % (ep * etp):
        bad = "expert_parallel" if group % ep else "expert_tensor_parallel"
        raise ScenarioError(f"training.{bad}",
                            f"expert_tensor_parallel x expert_parallel = {etp} x {ep} = {ep * etp} "
                            f"must divide tensor_parallel x data-parallel degree = "
                            f"{t.tensor_parallel} x {dp} = {group} (Megatron-Core: world size "
                            "divisible by ETP x EP x PP)")
    eshard = max(1, shard * t.tensor_parallel // (ep * etp)) if shard > 1 else 1
    if shard > 1 and (shard * t.tensor_parallel) % (ep * etp) and eshard > 1:
        raise ScenarioError("strategy.shard_group_size",
                            f"shard group x tensor_parallel = {shard} x {t.tensor_parallel} must be "
                            f"a multiple of expert_tensor_parallel x expert_parallel = {ep * etp}")
    return ep, etp, group // (ep * etp), eshard


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
