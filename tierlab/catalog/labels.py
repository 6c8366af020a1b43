"""Display names of a scenario's ids, for pages a person reads: the catalog's model and node
``name`` ("Llama-2-70B", "NVIDIA DGX H100") and the strategies as their projects spell them
("ZeRO-3", "FSDP HYBRID_SHARD"). The API, the scenario JSON and the forms keep the ids.

``model_label``, ``nodes_label`` and ``strategy_label`` take a scenario's JSON as the user
gave it (presets unexpanded, possibly partial or hand-written) and never raise.
"""

from __future__ import annotations

STRATEGY_NAMES = {
    "ddp": "DDP",
    "zero1": "ZeRO-1",
    "zero2": "ZeRO-2",
    "zero3": "ZeRO-3",
    "fsdp_full_shard": "FSDP FULL_SHARD",
    "fsdp_hybrid_shard": "FSDP HYBRID_SHARD",
    "zero_offload": "ZeRO-Offload",
    "zero_infinity": "ZeRO-Infinity",
    "megatron_dist_opt": "Megatron distributed optimizer",
}


# The planner's objectives (simulation.planner.OBJECTIVES), each as two readings: what it
# measures, with its unit (a table's cell, the plan list's objective column), and as the
# choice to rank by (the plan form, the plan page's "Ranked by ..."). Units: the planner's
# (its module docstring): step and time to train in s, costs in USD at the node's hourly
# price (cluster.price_usd_per_node_hour).
OBJECTIVE_LABELS = {
    "step_time": "Step time (s)",
    "cost_per_million_tokens": "Cost (USD per million tokens)",
    "time_to_train": "Time to train the total tokens (s)",
    "cost_to_train": "Cost to train the total tokens (USD)",
}
OBJECTIVE_CHOICES = {
    "step_time": "Shortest step time",
    "cost_per_million_tokens": "Lowest cost per million tokens",
    "time_to_train": "Shortest time to train the total tokens (checkpoints and failures included)",
    "cost_to_train": "Lowest cost to train the total tokens",
}
DEFAULT_OBJECTIVE = "step_time"      # simulation.planner.parse_spec's default


def objective_label(objective) -> str:
    """``"step_time"`` -> ``"Step time (s)"`` (None: the planner's default, step time); an
    unknown objective as it is."""
    key = DEFAULT_OBJECTIVE if objective is None else objective
    return OBJECTIVE_LABELS.get(key, str(key)) if isinstance(key, str) else str(key)


def strategy_name(kind) -> str:
    """``"zero3"`` -> ``"ZeRO-3"``; an unknown kind as it is."""
    return STRATEGY_NAMES.get(kind, str(kind))


def _tables() -> dict:
    """The preset tables the engine resolves with: the catalog's, else its built-ins."""
    from django.db import DatabaseError

    from simulation import presets
    from simulation.recsys.spec import PRESETS as RECSYS_PRESETS
    # imported here: the catalog's models, which lookups imports, may import this module
    from tierlab.catalog.lookups import catalog_lookups

    try:
        tables = catalog_lookups()
    except DatabaseError:                     # no catalog table yet (before migrating): the built-ins
        tables = {}
    return {"models": tables.get("models") or presets.MODELS, "nodes": tables.get("nodes") or presets.NODES,
            "recsys": RECSYS_PRESETS}


def preset_name(table: str, slug) -> str:
    """The ``name`` of preset ``slug`` in ``table`` ("models", "nodes", "recsys"); the slug if unknown."""
    entry = _tables()[table].get(slug) if isinstance(slug, str) else None
    name = entry.get("name") if isinstance(entry, dict) else None
    return str(name) if name else str(slug)


def _section(spec, key) -> dict:
    value = spec.get(key) if isinstance(spec, dict) else None
    return value if isinstance(value, dict) else {}


def model_label(spec) -> str:
    """The model's display name: its preset's catalog name, its own ``name``, or "custom"."""
    model = spec.get("model") if isinstance(spec, dict) else None
    if isinstance(model, str):
        return preset_name("models", model)
    if model is None and _section(spec, "recsys"):
        recsys = _section(spec, "recsys")
        if recsys.get("preset"):
            return preset_name("recsys", recsys["preset"])
        return str(recsys.get("name") or "custom recommendation model")
    model = model if isinstance(model, dict) else {}
    if model.get("preset"):
        return preset_name("models", model["preset"])
    return str(model.get("name") or "custom")


def nodes_label(spec) -> str:
    """"2× NVIDIA DGX H100", with "(4 GPU/node)" when the scenario's GPUs per node differ
    from the node template's (or there is no template)."""
    cluster = _section(spec, "cluster")
    node = cluster.get("node")
    label = f"{cluster.get('num_nodes', 1)}× {preset_name('nodes', node) if node else 'custom node'}"
    gpus = cluster.get("gpus_per_node")
    template = _tables()["nodes"].get(node) if isinstance(node, str) else None
    if gpus and not (isinstance(template, dict) and template.get("gpus_per_node") == gpus):
        label += f" ({gpus} GPU/node)"
    return label


def strategy_label(spec) -> str:
    """The strategy's display name ("ZeRO-3", the engine's default when none is given)."""
    if isinstance(spec, dict) and spec.get("model") is None and _section(spec, "recsys") \
            and not _section(spec, "strategy"):
        return "embeddings: parameter server vs all-to-all"
    return strategy_name(_section(spec, "strategy").get("kind", "zero3"))


_PRESET_AXES = {"cluster.node": "nodes", "model.preset": "models", "model": "models"}

_OFFLOAD_NAMES = {"none": "none (GPU HBM)", "cpu": "CPU DDR", "nvme": "NVMe", "cxl": "CXL memory"}
# Choices as a heatmap's rows and columns say them (short: a cell is narrow)
CHOICE_NAMES: dict[str, dict[str, str]] = {
    "strategy.offload_optimizer": _OFFLOAD_NAMES,
    "strategy.offload_params": _OFFLOAD_NAMES,
    "strategy.offload_activations": {"none": "none (GPU HBM)", "cpu": "CPU DDR"},
    "training.optimizer": {"adam": "Adam", "adamw": "AdamW", "adam_8bit": "8-bit Adam",
                           "sgd_momentum": "SGD + momentum", "adafactor": "Adafactor",
                           "paged_adamw": "paged AdamW (bitsandbytes)",
                           "paged_adamw_8bit": "paged 8-bit AdamW (bitsandbytes)"},
    "checkpoint.target": {"parallel_fs": "parallel file system", "local_nvme": "local NVMe",
                          "gds_nvme": "GPUDirect to local NVMe", "remote_dram": "peer node DRAM",
                          "cxl_pool": "CXL memory pool", "object_store": "object store"},
    "checkpoint.method": {"in_memory_then_flush": "in-memory copy, then flush"},
}


def axis_value_labels(path: str, values: list) -> list:
    """How each value of a sweep axis reads where it differs from the value itself: a
    preset's catalog name ("NVIDIA DGX H100"), a strategy as its project spells it
    ("FSDP HYBRID_SHARD"), a choice in words ("CPU DDR" for cpu); None for a value that
    reads as itself (4, "full")."""
    def one(value):
        if not isinstance(value, str):
            return None
        if path == "strategy.kind":
            name = strategy_name(value)
        elif path in CHOICE_NAMES:
            name = CHOICE_NAMES[path].get(value, value)
        elif path in _PRESET_AXES:
            name = preset_name(_PRESET_AXES[path], value)
        else:
            return None
        return name if name != value else None
    return [one(v) for v in values]


# ------------------------------------------------------------------ units of input fields
# The unit of a scenario field (the comparison CSV's input rows), by its last name or its
# name's ending: SI as the engine keeps them (simulation/units.py: reports stay in SI base
# units). Bytes and bytes/s are decimal SI; FLOP/s dense peak per GPU; money in USD.
FIELD_UNITS = {
    # model architecture
    "num_layers": "layers", "first_dense_layers": "layers", "recompute_layers": "layers",
    "recompute_every": "layers",
    "hidden_size": "elements", "ffn_hidden_size": "elements", "moe_ffn_hidden_size": "elements",
    "head_dim": "elements", "qk_nope_head_dim": "elements", "qk_rope_head_dim": "elements",
    "v_head_dim": "elements", "kv_lora_rank": "elements", "q_lora_rank": "elements",
    "rank": "elements (LoRA rank)",
    "num_attention_heads": "heads", "num_kv_heads": "heads",
    "num_experts": "experts", "num_shared_experts": "experts", "moe_top_k": "experts per token",
    "moe_router_group_topk": "nodes per token",
    "vocab_size": "tokens", "max_seq_len": "tokens", "seq_len": "tokens", "sliding_window": "tokens",
    "num_params": "parameters",
    "norms_per_block": "norms", "attn_logit_softcapping": "logit cap", "final_logit_softcapping": "logit cap",
    "alpha": "scale (LoRA alpha)", "dropout": "fraction (0..1)",
    # batch and parallel layout
    "micro_batch_size": "sequences", "global_batch_size": "sequences", "min_global_batch_size": "sequences",
    "tensor_parallel": "GPUs", "pipeline_parallel": "GPUs (stages)", "context_parallel": "GPUs",
    "expert_parallel": "GPUs", "expert_tensor_parallel": "GPUs", "shard_group_size": "GPUs",
    "interleave_stages": "virtual stages per GPU", "first_pipeline_layers": "layers",
    "last_pipeline_layers": "layers",
    "moe_capacity_factor": "ratio", "moe_routing_imbalance": "ratio (max / mean)",
    # hardware
    "num_nodes": "nodes", "gpus_per_node": "GPUs", "nvlink_domain_gpus": "GPUs",
    "pcie_switch_gpus": "GPUs", "devices": "devices", "cpu_cores": "cores",
    "cpu_optimizer_cores_per_gpu": "cores per GPU",
    # strategy, checkpoint
    "prefetch_depth": "blocks ahead", "quantize_bits": "bits", "amax_history_len": "steps",
    "quant_block_size": "elements",
    "monte_carlo_runs": "runs", "seed": "seed (integer)", "schema": "version",
    "gpu_failure_rate_per_hour": "failures per GPU-hour",
}
_FIELD_SUFFIX_UNITS = (           # (ending, unit): the first that matches, longest first
    ("_bytes_per_s", "bytes/s"), ("_bytes", "bytes"), ("_usd_per_node_hour", "USD per node-hour"),
    ("_usd_per_hour", "USD/h"), ("_flops_per_s", "FLOP/s"), ("_s", "s"),
    ("_efficiency", "fraction (0..1)"), ("_fraction", "fraction (0..1)"), ("_rate", "fraction (0..1)"),
)


def field_unit(key: str) -> str:
    """The unit of a scenario field by its dotted key (``cluster.accelerator.peak_flops_bf16``
    -> ``FLOP/s``, ``training.seq_len`` -> ``tokens``); empty for a name it does not know
    (text, booleans)."""
    last = key.rsplit(".", 1)[-1]
    if last in FIELD_UNITS:
        return FIELD_UNITS[last]
    if last.startswith("peak_flops") or last.endswith("_flops"):
        return "FLOP/s"           # dense peak per GPU (simulation/presets.py accelerators)
    if last.startswith("price_usd_per_node_hour"):
        return "USD per node-hour"
    for ending, unit in _FIELD_SUFFIX_UNITS:
        if last.endswith(ending):
            return unit
    return ""
