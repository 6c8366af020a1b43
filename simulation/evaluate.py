"""``evaluate(scenario) -> Report``: pure, deterministic, no I/O."""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

from . import bandwidth
from .checkpoint import evaluate_checkpoint
from .errormodel import step_band
from .estimators import deepspeed_estimate
from .fit import fit_state, memory_band, scenario_kind, tier_state
from .memo import ByIdentity
from .memory import (MOMENTS, add_fragmentation, adapter_checkpoint_bytes, adapter_regime, build_parts,
                     checkpoint_state_bytes, checkpoint_state_tiers,
                     counted_bytes_per_param, hbm_figures, hbm_summary, in_flight_variant,
                     stage_figures, stage_plans_for, tier_summaries, trained_params)
from .params import model_params
from .parallel import layout
from . import experts
from .recsys import moe_designs
from .recsys_report import recsys_memory, recsys_sections
from .report import Report, Violation
from .scenario import Scenario, checkpoint_target, node_figures
from .states import StateBytes, state_bytes
from .step import (achieved_flops, background_slowdown, links_for, peak_flops, step_report,
                   unfit_verdict)
from .units import fmt_bytes
from .version import ENGINE_VERSION

_CONVENTIONS = {
    "realistic": ("What DeepSpeed, PyTorch FSDP and Megatron really allocate: fp32 gradient "
                  "partitions and buckets, gathered layers, swap buffers, CUDA context and "
                  "allocator fragmentation. Use this to decide whether it fits."),
    "zero_paper": ("The ZeRO paper's textbook accounting (SC'20 Table 1): 2 + 2 + K bytes "
                   "per parameter, sharded by stage, plus activations; no buffers."),
}
_TIER_LABEL = {"hbm": "HBM per GPU", "ddr": "DDR per node", "nvme": "NVMe per node",
               "cxl": "CXL per node", "pmem": "PMEM per node"}


def evaluate(sc: Scenario, include_step: bool = True,
             progress: Callable[[float], None] | None = None, detail: bool = True,
             every_stage: bool = True) -> Report:
    """Memory per tier and (unless ``include_step`` is false) the simulated step.

    An overflow is a result (``fits`` false), not an exception. The memory-only form is
    the quick estimate the scenario form shows while a user types. ``progress(fraction)``
    is called as the stages finish (memory, step simulation, checkpoint). Without
    ``detail`` (sweeps) the report has every number but no step timeline and no
    checkpoint Monte-Carlo: the same step time, breakdown, goodput and verdict, several
    times faster. Without ``every_stage`` (the planner, sweeps) an even 1F1B pipeline's
    ``memory.per_stage`` has its first and last rank only, one of which is the worst
    (:func:`_stage_parts`): the same verdict and memory, at two ranks' cost.
    """
    tick = progress or (lambda _f: None)
    if sc.model is None:
        return _evaluate_recsys_only(sc, include_step, tick)
    pc = model_params(sc.model)
    lay = layout(sc)
    sb = state_bytes(sc.training.precision, sc.training.optimizer, sc.training.dtypes)
    counted: list = []
    stages = _stage_parts(sc, pc, lay, sb, counted, worst_only=not every_stage)
    worst = worst_stage(stages)
    parts, (per_gpu, per_node) = worst[1], worst[2]

    band = memory_band(scenario_kind(sc.strategy.zero_stage, _offloaded(sc),
                                     lay.pipeline_parallel))
    violations, tight, states = _violations(per_gpu, per_node, band,
                                            _stage_note(worst[3], lay.pipeline_parallel) if len(stages) > 1 else "")
    state = fit_state(states)
    notes = [t["message"] for t in tight]
    notes += _advice(sc, per_gpu["hbm"], lay)
    if sc.training.lora is not None:
        notes.append(lora_note(sc, sb))
        if sc.training.lora.quantised:
            lo = sc.training.lora
            notes.append(QLORA_NOTE.format(dtype="in int8" if lo.base_dtype == "int8" else
                                           f"in 4-bit {lo.base_dtype.upper()}, an absmax per "
                                           f"{lo.quant_block_size} weights"
                                           + (" (double-quantised)" if lo.double_quant else "")))
    if sc.training.preference is not None:
        notes.append(PREFERENCE_NOTE[sc.training.preference.reference])

    model = dict(name=sc.model.name, num_params=pc.total, num_active_params=pc.active,
                 params_per_layer=pc.per_layer, embedding_params=pc.embedding,
                 largest_module_params=pc.largest_module, num_layers=sc.model.num_layers,
                 hidden_size=sc.model.hidden_size, exact_count=pc.exact)
    if sc.training.lora is not None:      # LoRA: the adapters train, the base is frozen
        model["trainable_params"] = trained_params(sc, pc)
        model["lora_implementation"] = sc.training.lora.implementation
    bpp = counted_bytes_per_param(counted)     # what the breakdown counts, before sharding
    convention = dict(name=sc.convention, description=_CONVENTIONS[sc.convention],
                      bytes_per_param=bpp,
                      hbm_model_state_bytes_per_param=_states_per_param(per_gpu["hbm"], pc, lay))
    tick(0.2)
    perf = step_report(sc, pc, lay, sb, detail=detail) if include_step else {}
    tick(0.7)
    if perf.get("step", perf).get("available") is False:
        notes.append(f"Step time not computed: {perf['reason']}.")
        perf = {"step": perf}
    if state == "does_not_fit" and perf.get("verdict"):
        perf["verdict"] = unfit_verdict(perf["verdict"], violations)
    step_s = perf["step"]["time_s"] if perf.get("step", {}).get("available") else None
    if step_s is not None:          # a lookup in the recorded error model
        perf["step"].update(step_band(sc, lay.num_gpus, pc.total, step_s))
    spec = sc.checkpoint
    if not detail and spec.monte_carlo_runs:
        spec = _without_monte_carlo(spec)
    checkpoint = _checkpoint(sc, spec, pc, lay, sb, step_s) if include_step else {}
    if checkpoint and step_s and checkpoint.get("background_s", 0) > 0:
        per_step = background_slowdown(sc, pc, lay, sb, checkpoint["shard_bytes"],
                                       checkpoint["background_s"],
                                       bool(checkpoint["target"].get("network")))
        overlapped = max(1, math.ceil(checkpoint["background_s"] / step_s))
        checkpoint["training_slowdown"] = dict(
            per_step_s=per_step, steps_overlapped=overlapped,
            per_checkpoint_s=per_step * overlapped,
            note="steps that overlap the background write, simulated with its traffic on "
                 "PCIe and the NIC")
    notes += checkpoint.get("notes", [])
    wear = nvme_wear(sc, perf.get("links", ()), step_s) if step_s else None
    if wear is not None and wear["rated_fraction_per_day"] > 1:
        notes.append(wear["message"])
    tick(1.0)
    extra = {}
    if sc.model.num_experts > 1 and sc.model.has_architecture and include_step and perf.get("step", {}).get("available"):
        extra["ps"] = _moe_designs(sc, pc, lay, sb, perf["step"]["breakdown_s"]["compute"])
    if sc.recsys is not None and include_step:
        rs = recsys_sections(sc, sb, peak_flops(sc), per_gpu["hbm"]["free_bytes"])
        extra = dict(embedding=rs["embedding"], ps=rs["ps"])
        notes += rs["notes"]
    memory = dict(per_gpu=per_gpu, per_node=per_node, band=band, tight=tight)
    if len(stages) > 1:
        memory["stage"] = worst[0]
        memory["stage_index"] = worst[3].index        # the worst rank (0: first), the verdict's
        memory["per_stage"] = _per_stage(stages)
    return Report(schema=1, engine_version=ENGINE_VERSION, fits=state != "does_not_fit",
                  fit_state=state,
                  violations=tuple(violations), model=model, parallelism=lay.to_dict(), **extra,
                  convention=convention, memory=memory,
                  cross_checks=_cross_checks(sc, pc, lay, sb), notes=tuple(notes),
                  scenario=sc.to_dict(), step=perf.get("step", {}),
                  throughput=perf.get("throughput", {}), mfu=perf.get("mfu"),
                  links=tuple(perf.get("links", ())), timeline=perf.get("timeline", {}),
                  verdict=perf.get("verdict", {}),
                  offload_bandwidth=_offload_bw(sc, lay) if include_step else {},
                  checkpoint=checkpoint, cost=_cost(sc, lay, perf))


# Enterprise NVMe endurance is rated in full drive writes a day (DWPD) over a 5-year
# warranty; 1 DWPD is the read-intensive class the catalog's Kioxia CM6 3.84 TB drives
# belong to (the catalog's notes: the CM6 line has 1- and 3-DWPD models).
NVME_WARRANTY_YEARS = 5
ASSUMED_DRIVE_WRITES_PER_DAY = 1.0


def nvme_wear(sc: Scenario, links, step_s: float) -> dict | None:
    """What an offload to NVMe writes a day against the drives' rated endurance, per node.

    ``links``: the step's link rows (bytes per GPU per step); ``step_s``: seconds a step.
    Returns ``None`` without NVMe writes, else ``{written_bytes_per_day,
    rated_bytes_per_day, drive_writes_per_day, assumed, rated_fraction_per_day,
    days_to_rated_endurance, message}``: rated = DWPD x the node's NVMe capacity a day of
    continuous training; the rated lifetime's writes are 5 years of that
    (``NVME_WARRANTY_YEARS``)."""
    row = next((r for r in links if r["name"] == "nvme_write"), None)
    tier = sc.cluster.tiers.get("nvme")
    if row is None or not row["bytes"] or tier is None or not tier.capacity_bytes:
        return None
    written = row["bytes"] * sc.cluster.gpus_per_node * 86400.0 / step_s
    dwpd = tier.drive_writes_per_day
    assumed = dwpd is None
    dwpd = ASSUMED_DRIVE_WRITES_PER_DAY if assumed else dwpd
    rated = dwpd * tier.capacity_bytes
    days = rated * 365.25 * NVME_WARRANTY_YEARS / written
    how = (f"{dwpd:g} drive write a day, assumed: set cluster.tiers.nvme.drive_writes_per_day"
           if assumed else f"{dwpd:g} drive writes a day")
    message = (f"NVMe wear: the offload writes {fmt_bytes(written)} a day per node, "
               f"{written / rated:,.0f}x the rated endurance of its {fmt_bytes(tier.capacity_bytes)} "
               f"of drives ({how}; {NVME_WARRANTY_YEARS}-year warranty); at this rate the rated "
               f"endurance is spent in {days:,.0f} days of training.")
    return dict(written_bytes_per_day=written, rated_bytes_per_day=rated, drive_writes_per_day=dwpd,
                assumed=assumed, rated_fraction_per_day=written / rated,
                days_to_rated_endurance=days, message=message)


LORA_NOTE = ("LoRA: the base is frozen (no gradients, master weights or optimizer states; "
             "no weight-gradient GEMMs) and the adapters train {adapters}. The frozen base keeps "
             "no projection inputs for backward; {saved}; model FLOPs and MFU keep 6 x "
             "parameters x tokens.")


def lora_note(sc: Scenario, sb: StateBytes) -> str:
    """The LoRA note for the scenario's implementation and adapter dtype (``sb``: its
    :class:`simulation.states.StateBytes`; what
    :func:`simulation.memory.adapter_regime` and :func:`simulation.lora.adapter_activation_bytes`
    count)."""
    lo = sc.training.lora
    regime = adapter_regime(sc, sb)
    if regime == "peft_fp32":
        adapters = "in fp32 under torch AMP, as PEFT keeps them (their own master copy)"
    elif regime == "16bit":
        adapters = (f"in {lo.adapter_dtype or sb.params_dtype}, updated in place (no master copy)"
                    + (", in the base's dtype as AutoModel's LinearLoRA keeps them"
                       if lo.implementation == "automodel" and lo.adapter_dtype is None else ""))
    else:
        adapters = "with the scenario's precision and optimizer"
    if lo.implementation == "automodel":
        saved = ("each adapter's lora_A keeps the tensor the frozen base reads (AutoModel casts "
                 "nothing), once per distinct input")
    else:
        saved = "each adapter keeps its own 16-bit copy of its input (PEFT's cast)"
    if lo.dropout:
        saved += f", and its dropout mask ({'on the output' if lo.dropout_at == 'post' else 'on the input'})"
    return LORA_NOTE.format(adapters=adapters, saved=saved)


QLORA_NOTE = ("QLoRA: the frozen base's matrices are stored {dtype} (bitsandbytes) and "
              "dequantised to 16-bit one at a time for each matmul, forward and backward; "
              "embeddings, head and norms stay unquantised.")


_PREFERENCE_COMMON = (
    "DPO as TRL's DPOTrainer runs it (v1.9.0): each example is a chosen and a rejected "
    "sequence concatenated into one batch, so the policy's activations, logits and compute are "
    "those of twice the micro-batch (tokens per second count both); the policy's log-probs are "
    "counted with the scenario's loss kernel. ")
PREFERENCE_NOTE = {
    "separate": _PREFERENCE_COMMON + (
        "The reference model is a frozen 16-bit copy (sharded like the policy under ZeRO-3 / "
        "FSDP, whole otherwise), run forward only after the policy's forward: its weights, one "
        "layer's working set and its logits are counted; its forward is added to each "
        "micro-batch's time (not drawn in the timeline)."),
    "adapters_off": _PREFERENCE_COMMON + (
        "The reference is the policy's frozen base with the LoRA adapters switched off: no "
        "weights of its own; its forward (one layer's working set, its logits) is counted and "
        "added to each micro-batch's time (not drawn in the timeline)."),
    "precomputed": _PREFERENCE_COMMON + (
        "The reference log-probabilities are precomputed (precompute_ref_log_probs): one "
        "forward pass over the data set before training, not counted in memory or step time."),
}


def _cost(sc: Scenario, lay, perf: dict) -> dict:
    """Cluster price per hour and per million training tokens (when the step is known)."""
    price = sc.cluster.price_usd_per_node_hour
    if price is None:
        return {"available": False, "reason": "no price for this node (cluster.price_usd_per_node_hour)"}
    per_hour = price * sc.cluster.num_nodes
    out = {"available": True, "usd_per_hour": per_hour, "usd_per_gpu_hour": price / sc.cluster.gpus_per_node,
           "source": sc.cluster.price_source}
    tps = perf.get("throughput", {}).get("tokens_per_s")
    if tps:
        out["usd_per_million_tokens"] = per_hour / 3600 / tps * 1e6
    return out


def _moe_designs(sc: Scenario, pc, lay, sb, compute_s: float) -> dict:
    """MoE experts: an expert parameter server against expert-parallel all-to-all."""
    m = sc.model
    expert = (3 if m.gated_mlp else 2) * m.hidden_size * m.expert_ffn_size   # one routed expert
    tokens = lay.global_batch_size * sc.training.seq_len / lay.grad_accumulation_steps
    c = sc.cluster
    return moe_designs(experts=m.num_experts, expert_params=expert, tokens=tokens, top_k=m.moe_top_k,
                       hidden=m.hidden_size, num_gpus=c.num_gpus, gpus_per_node=c.gpus_per_node,
                       nic_bytes_per_s=c.nic_bytes_per_s, scaleup_bytes_per_s=c.accelerator.scaleup_bytes_per_s,
                       layers=m.num_layers, compute_s=compute_s / lay.grad_accumulation_steps,
                       param_bytes=sb.params, grad_bytes=sb.grads,
                       network_efficiency=sc.training.network_efficiency)


def _checkpoint(sc: Scenario, spec, pc, lay, sb, step_s) -> dict:
    """Checkpoint size, stall, best interval and goodput of ``spec`` (the scenario's
    checkpoint section, or it without the Monte-Carlo) on this cluster's tiers."""
    # LoRA: a checkpoint holds the adapters and their optimizer states (PEFT
    # save_pretrained writes adapter_model.safetensors; the frozen base is not saved)
    states = (checkpoint_state_bytes(sc, sb) if sc.training.lora is None
              else adapter_checkpoint_bytes(sc, sb))
    # each state is read from where it lives (HBM over PCIe, or an offload tier)
    return evaluate_checkpoint(spec, num_params=trained_params(sc, pc), num_gpus=lay.num_gpus,
                               state_bytes_per_param=states, step_time_s=step_s,
                               target=checkpoint_target(sc), state_tiers=checkpoint_state_tiers(sc.strategy),
                               tier_read_bytes_per_s=_tier_read_rates(sc.cluster), **node_figures(sc))


def _tier_read_rates(cluster) -> dict:
    """Read bytes per second of each of the node's tiers (per node), by tier name."""
    return {name: t.read_bytes_per_s for name, t in cluster.tiers.items() if t.read_bytes_per_s}


# A sweep's checkpoint section without the Monte-Carlo: one copy per section object.
_without_monte_carlo = ByIdentity(lambda spec: dataclasses.replace(spec, monte_carlo_runs=0))


def _offload_bw(sc: Scenario, lay) -> dict:
    """ZeRO-Infinity's efficiency-vs-bandwidth curves with this node's tiers marked."""
    links = links_for(sc, lay)
    tiers = {"ddr": links["ddr"]}
    if "cxl" in links:
        tiers["cxl"] = links["cxl"]
    if "nvme_read" in links:
        tiers["nvme"] = links["nvme_read"]
    rate = achieved_flops(sc, model_params(sc.model))
    return bandwidth.analysis(sc.training.local_seq_len, sc.training.micro_batch_size,
                              sc.model.hidden_size, rate, tiers, gas=lay.grad_accumulation_steps)


def find_violations(per_gpu: dict, per_node: dict, band: float = 0.0) -> tuple[list, list]:
    """``(violations, tight)``: a Violation per tier above ``capacity x (1 + band)``, and a
    ``{tier, scope, required_bytes, capacity_bytes, peak_phase, largest_part, message}``
    per tier inside the tight band (see :mod:`simulation.fit`)."""
    return _violations(per_gpu, per_node, band)[:2]


def _violations(per_gpu: dict, per_node: dict, band: float = 0.0,
                stage_note: str = "") -> tuple[list, list, list]:
    """:func:`find_violations`' two lists and every tier's state (HBM first, then the node
    tiers in order), each tier's state made once. ``stage_note`` (a pipeline's worst
    rank, :func:`_stage_note`) ends the per-GPU messages."""
    out, tight, states = [], [], []
    for scope, tiers in (("per_gpu", per_gpu), ("per_node", per_node)):
        for t, s in tiers.items():
            state = tier_state(s["total_bytes"], s["capacity_bytes"], band)
            states.append(state)
            label = _TIER_LABEL.get(t, t.upper())
            if state == "tight":
                term = _largest_dynamic_part(s)
                tight.append(dict(
                    tier=t, scope=scope, required_bytes=s["total_bytes"],
                    capacity_bytes=s["capacity_bytes"], peak_phase=s["peak_phase"],
                    largest_part=term,
                    message=f"Tight: {label} needs {fmt_bytes(s['total_bytes'])} of "
                            f"{fmt_bytes(s['capacity_bytes'])}, within the engine's +-{band:.0%} "
                            f"memory error; the peak is at {s['peak_phase']}"
                            + (f", where the largest term is {term}" if term else "")
                            + (stage_note if scope == "per_gpu" else "") + "."))
                continue
            if state == "fits":
                continue
            over = s["total_bytes"] - s["capacity_bytes"]
            where = "" if s["present"] else f" (this node has no {t.upper()} tier: add cluster.tiers.{t})"
            out.append(Violation(
                tier=t, scope=scope, required_bytes=s["total_bytes"],
                capacity_bytes=s["capacity_bytes"], over_bytes=over,
                message=f"{label} needs {fmt_bytes(s['total_bytes'])} "
                        f"but has {fmt_bytes(s['capacity_bytes'])} (over by {fmt_bytes(over)})"
                        + (f" at {s['peak_phase']}" if s["peak_phase"] != "persistent" else "")
                        + where + (stage_note if scope == "per_gpu" else "")))
    return out, tight, states


def _largest_dynamic_part(summary: dict) -> str | None:
    live = MOMENTS.get(summary["peak_phase"], ())
    cands = [p for p in summary["parts"] if p["phase"] in live]
    return max(cands, key=lambda p: p["bytes"])["name"] if cands else None


def _offloaded(sc: Scenario) -> bool:
    s = sc.strategy
    return "none" != s.offload_optimizer or "none" != s.offload_params or s.offload_activations != "none"


def _stage_parts(sc: Scenario, pc, lay, sb, counted: list | None = None,
                 worst_only: bool = False) -> list[tuple]:
    """``[(stage, parts, (per_gpu, per_node), plan, figures)]``: one entry without a
    pipeline, else one per pipeline rank (:func:`simulation.memory.stage_plans_for`): the
    first (embedding, the most micro-batches in flight: ``p - i`` on rank i under 1F1B),
    the middle ones (their layers) and the last (head, loss and logits). Ranks whose plans
    are equal share one breakdown. ``counted`` gets the model states' rows of the first
    (bytes per parameter: the same on every stage).

    ``figures`` (None without a pipeline): the rank's HBM ``(total_bytes,
    model_state_bytes, stored_activation_bytes, peak_phase)``, fragmentation included
    (:func:`simulation.memory.hbm_figures`). Ranks of one role (name, layers, embedding,
    head; rank 0 apart) differ only in the micro-batches in flight: the first of each is
    built and summed (:func:`simulation.memory.build_parts`, ``tier_summaries``), the
    others' parts are made from it (:func:`simulation.memory.in_flight_variant`) and only
    their figures taken, unless one is the worst (:func:`worst_stage`): its breakdown is
    then made too. Entries without a breakdown have ``parts`` and the tiers None.
    ``tests/engine/test_stage_parts_fast.py`` holds all of it to building every rank.

    ``worst_only`` (the planner): with an even 1F1B split only the first and the last
    rank, one of which is the worst: a middle rank holds the first's layers without the
    embedding and fewer micro-batches in flight, so no term of it is larger."""
    plans = stage_plans_for(sc, lay)
    if worst_only and len(plans) > 2 and sc.training.pipeline_schedule == "1f1b" and \
            len({pl.layers for pl in plans}) == 1:
        plans = (plans[0], plans[-1])
    cap, node_tiers = sc.cluster.accelerator.hbm_capacity_bytes, sc.cluster.tiers
    frag = sc.runtime.fragmentation_for(sc.strategy.zero_stage) if sc.convention == "realistic" else None
    if len(plans) == 1:
        parts = build_parts(sc, pc, lay, sb, plans[0], counted)
        tiers = tier_summaries(parts, cap, node_tiers)
        if frag is not None:
            add_fragmentation(parts, tiers[0]["hbm"], frag)
        return [(plans[0].name, parts, tiers, plans[0], None)]
    made, roles, keys = {}, {}, []
    for i, plan in enumerate(plans):
        key = (plan.name, plan.layers, plan.activation_layers, plan.embedding, plan.head,
               plan.dense_activation_layers)
        keys.append(key)
        if key in made:
            continue
        # the dense blocks' share of the stored activations (first_dense_layers) enters the
        # rank's other parts too (memory._dense_share): a role holds ranks alike in it
        dense = plan.dense_activation_layers / plan.activation_layers if plan.activation_layers else 0.0
        role = (plan.name, plan.layers, plan.embedding, plan.head, plan.index == 0, dense)
        like = roles.get(role)
        if like is None:
            spans: list = []
            parts = build_parts(sc, pc, lay, sb, plan, counted if i == 0 else None, spans)
            tiers = tier_summaries(parts, cap, node_tiers)
            roles[role] = (parts.copy(), spans, tiers[1])
            if frag is not None:
                add_fragmentation(parts, tiers[0]["hbm"], frag)
            made[key] = (parts, tiers, stage_figures(tiers[0]["hbm"]))
        else:
            parts, hbm_only = in_flight_variant(like[0], like[1], sc, lay, plan)
            made[key] = (None, None, hbm_figures(parts, frag), parts, hbm_only, like[2])
    worst = max(range(len(plans)), key=lambda j: made[keys[j]][2][0])
    m = made[keys[worst]]
    if m[0] is None:                     # the worst is a rank made from its role's first
        parts, hbm_only, node = m[3], m[4], m[5]
        # only HBM parts changed: the node tiers are the first rank's of the role
        tiers = (hbm_summary(parts, cap), node) if hbm_only else tier_summaries(parts, cap, node_tiers)
        if frag is not None:
            add_fragmentation(parts, tiers[0]["hbm"], frag)
        made[keys[worst]] = (parts, tiers, m[2])
    return [(plan.name, *made[key][:2], plan, made[key][2]) for plan, key in zip(plans, keys)]


def worst_stage(stages: list[tuple]) -> tuple:
    """The entry of :func:`_stage_parts` with the most HBM (the first of equals), the one
    the verdict and the report's memory come from."""
    if len(stages) == 1:
        return stages[0]
    return max(stages, key=lambda st: st[4][0])


def _stage_note(plan, num_stages: int) -> str:
    """``", on pipeline stage 1 (middle: 8 layers, 15 micro-batches in flight), the worst of
    16"``: where a per-GPU verdict comes from."""
    inflight = f"{plan.in_flight:g} micro-batch{'es' if plan.in_flight != 1 else ''} in flight"
    return (f", on pipeline stage {plan.index} ({plan.name}: {plan.layers} layers, {inflight}), "
            f"the worst of {num_stages}")


def _per_stage(stages: list[tuple]) -> list[dict]:
    """The report's ``memory.per_stage``: consecutive pipeline ranks with the same role,
    layers and HBM peak grouped into one row (``stages``: ``"2-15"``, ``num_stages``),
    each row with its layers, the micro-batches in flight (the group's first rank's, the
    most), the HBM peak (bytes) and its phase, the model states (bytes) and the stored
    activations (bytes: the forward/backward activation parts, whatever the peak phase)."""
    rows: list[dict] = []
    for name, _parts, _tiers, plan, (total, states, stored, peak) in stages:
        row = dict(stage=name, first_index=plan.index, last_index=plan.index, layers=plan.layers,
                   micro_batches_in_flight=plan.in_flight, hbm_total_bytes=total,
                   hbm_model_state_bytes=states, hbm_activation_bytes=stored, hbm_peak_phase=peak)
        prev = rows[-1] if rows else None
        if prev and prev["stage"] == name and prev["layers"] == plan.layers and \
                prev["hbm_total_bytes"] == row["hbm_total_bytes"]:
            prev["last_index"] = plan.index
            continue
        rows.append(row)
    for r in rows:
        a, b = r.pop("first_index"), r.pop("last_index")
        r["stages"] = str(a) if a == b else f"{a}-{b}"
        r["num_stages"] = b - a + 1
    return rows


def evaluate_dict(d: dict, include_step: bool = True, detail: bool = True, **lookups) -> dict:
    """Validate and evaluate a scenario given as JSON-like dict; returns the report dict."""
    return evaluate(Scenario.from_dict(d, **lookups), include_step=include_step,
                    detail=detail).to_dict()


def estimate_dict(d: dict, **lookups) -> dict:
    """Memory only (no step simulation): the fast live estimate."""
    return evaluate_dict(d, include_step=False, **lookups)


def _states_per_param(hbm: dict, pc, lay) -> float:
    """Model-state bytes on one GPU per parameter of the whole model (shows the sharding)."""
    states = hbm["params_bytes"] + hbm["grads_bytes"] + hbm["optimizer_bytes"]
    return states / pc.total if pc.total else 0.0


def _cross_checks(sc: Scenario, pc, lay, sb) -> dict:
    out = {}
    psi = experts.rank_params(sc.model, pc.total, lay)
    d, stage = experts.sharded_divisor(sc.model, pc.total, lay, lay.shard_degree), sc.strategy.zero_stage
    p_div, g_div, o_div = (d if stage >= 3 else 1), (d if stage >= 2 else 1), (d if stage >= 1 else 1)
    out["zero_paper_model_states_per_gpu_bytes"] = float(round(
        sb.params * psi / p_div + sb.grads * psi / g_div + sb.k * psi / o_div))
    s = sc.strategy
    offload_opt, offload_par = s.offload_optimizer == "cpu", s.offload_params == "cpu"
    if stage >= 1 and s.offload_optimizer in ("none", "cpu") and s.offload_params in ("none", "cpu") \
            and lay.tensor_parallel == lay.pipeline_parallel == 1 and not s.is_fsdp:
        ds = deepspeed_estimate(stage, pc.total, pc.largest_module, sc.cluster.gpus_per_node,
                                sc.cluster.num_nodes, offload_opt, offload_par)
        ds["view"] = ("DeepSpeed 0.19.8 estimate_zero%d_model_states_mem_needs: model states "
                      "only, no activations; cpu_bytes per node includes its 1.5x buffer factor"
                      % (3 if stage == 3 else 2))
        out["deepspeed_estimator"] = ds
    return out


def _advice(sc: Scenario, hbm: dict, lay) -> list[str]:
    notes = []
    tr = sc.training
    if hbm["free_bytes"] < 0 and hbm["activations_bytes"] > 0.25 * hbm["total_bytes"]:
        levers = _activation_levers(tr)
        if levers:
            notes.append(f"Activations take {fmt_bytes(hbm['activations_bytes'])} of HBM: try "
                         + ", ".join(levers[:-1]) + (" or " if len(levers) > 1 else "")
                         + levers[-1] + ".")
    states = hbm["params_bytes"] + hbm["grads_bytes"] + hbm["optimizer_bytes"]
    if hbm["free_bytes"] < 0 and sc.strategy.zero_stage < 3 and hbm["capacity_bytes"] \
            and states >= 0.5 * hbm["capacity_bytes"]:
        notes.append(_model_state_advice(sc.strategy, states, hbm["capacity_bytes"]))
    m, c = sc.model, sc.cluster
    if m.max_seq_len and sc.training.seq_len > m.max_seq_len:
        notes.append(f"training.seq_len {sc.training.seq_len:,} is longer than {m.name}'s "
                     f"{m.max_seq_len:,}-token context (model.max_seq_len): the memory is "
                     "counted, but the model was not trained for it.")
    if c.template_gpus_per_node and c.gpus_per_node > c.template_gpus_per_node:
        notes.append(f"cluster.gpus_per_node is {c.gpus_per_node}, more than the {c.node_name or c.node} "
                     f"template's {c.template_gpus_per_node}: its DDR, NVMe and NIC are the template's, "
                     "shared by more GPUs (set cluster.tiers and nic_bytes_per_s for such a node; the "
                     "price is scaled by the GPU count).")
    if c.template_gpus_per_node and c.gpus_per_node < c.template_gpus_per_node:
        notes.append(f"{c.gpus_per_node} of the {c.node_name or c.node} template's "
                     f"{c.template_gpus_per_node} GPUs: "
                     + ("the node's DDR, NVMe, CXL and NIC are scaled to that share, as on a "
                        "cloud VM (cluster.host_share: whole for the whole host)."
                        if c.host_share == "proportional" else
                        "the whole host's DDR, NVMe, CXL and NIC are available "
                        "(cluster.host_share: whole)."))
    if sc.training.tensor_parallel > c.domain_gpus:
        notes.append("tensor_parallel exceeds the GPUs of one NVLink domain "
                     f"({c.domain_gpus}): its all-reduces cross the network.")
    if c.domain_gpus > c.gpus_per_node:
        notes.append(f"One NVLink domain of {c.domain_gpus} GPUs joins "
                     f"{c.domain_gpus // c.gpus_per_node} hosts of {c.gpus_per_node} "
                     "(cluster.nvlink_domain_gpus): collectives inside it run at NVLink "
                     "bandwidth; DDR, NVMe, CPU cores, NICs and the price are per host "
                     "(cluster.num_nodes counts hosts).")
        t = sc.training.tensor_parallel
        if c.num_gpus > c.domain_gpus and c.domain_gpus % t:
            notes.append(f"tensor_parallel {t} does not divide the {c.domain_gpus}-GPU NVLink domain: "
                         "some tensor-parallel groups straddle two domains and cross the network; "
                         "the step model counts every group inside one (collectives.group_span).")
    cp = sc.training.context_parallel
    if cp > 1 and sc.training.tensor_parallel * cp > c.domain_gpus:
        notes.append(f"tensor_parallel x context_parallel = {sc.training.tensor_parallel * cp} exceeds "
                     f"the {c.domain_gpus} GPUs of one NVLink domain: the context-parallel K/V ring "
                     "crosses the network (step.context_parallel shows what of it hides behind attention).")
    if sc.model.num_experts > 1:
        notes.append(_moe_note(sc, lay))
    if not sc.model.has_architecture:
        notes.append("Only num_params given: per-layer sizes are assumed uniform.")
    if lay.grad_accumulation_steps > 1:
        notes.append(f"{lay.grad_accumulation_steps} gradient-accumulation steps per optimizer step.")
    return notes


def _moe_note(sc: Scenario, lay) -> str:
    """What the report assumes of a mixture of experts (simulation/experts.py)."""
    m, tr = sc.model, sc.training
    if lay.expert_parallel == 1:
        return ("MoE: every rank holds all experts (training.expert_parallel 1), sharded by the "
                "chosen strategy; no all-to-all.")
    routing = ("dropless" if tr.moe_capacity_factor is None
               else f"capacity factor {tr.moe_capacity_factor:g}"
               + (" (padded)" if tr.moe_pad_to_capacity else ""))
    return (f"MoE: expert parallelism {lay.expert_parallel} ({m.num_experts // lay.expert_parallel} "
            f"experts per rank, expert tensor parallel {lay.expert_tensor_parallel}, "
            f"{lay.expert_data_parallel} expert-data-parallel replicas), {routing}, the busiest "
            f"rank at x{experts.token_factor(tr):g} the mean tokens"
            + (f", each token routed to at most {tr.moe_router_group_topk} node(s) "
               "(moe_router_group_topk: once over the network per node, then NVLink)"
               if tr.moe_router_group_topk is not None else "")
            + "; each MoE layer's dispatch "
            "and combine all-to-alls are in the step "
            + ("beside the compute (moe_a2a_overlap)." if tr.moe_a2a_overlap else "on the critical path."))


def _activation_levers(tr) -> list[str]:
    """What cuts activation memory that ``tr`` (a TrainingSpec) does not use yet: full
    recomputation (one layer input kept a layer); selective recomputation only without
    FlashAttention, since it drops just the attention core's s x s tensors (Korthikanti et
    al. 2022, Sec. 4.2), which FlashAttention never keeps; FlashAttention; a smaller micro
    batch above 1."""
    levers = []
    if tr.recompute != "full":
        levers.append("training.recompute = full"
                      + (" (or selective)" if not tr.flash_attention and tr.recompute == "none" else ""))
    if not tr.flash_attention:
        levers.append("flash_attention")
    if tr.micro_batch_size > 1:
        levers.append("a smaller micro batch")
    return levers


def _model_state_advice(s, states_bytes: float, capacity_bytes: float) -> str:
    """The next steps for model states (``states_bytes`` of ``capacity_bytes``, at least half
    of it) that leave HBM short under ZeRO stage 0-2, never one
    the strategy ``s`` already takes (a StrategySpec; returns one sentence).

    ZeRO-3 shards the 16-bit parameters too (Rajbhandari et al., ZeRO, SC20, section 5.3:
    P_os+g+p); an optimizer still on the GPU can go to the host (ZeRO-Offload, Ren et al.,
    ATC'21); one already there leaves the parameters, which ZeRO-3's offload_param
    (ZeRO-Infinity, Rajbhandari et al., SC21) moves off the GPU; from stage 1 on, more
    data-parallel GPUs make each GPU's shard smaller (DDP replicates every state, so more
    GPUs do not help it).
    """
    steps = []
    if s.offload_optimizer == "none":
        steps.append("a higher ZeRO stage (zero3 / FSDP FULL_SHARD) shards parameters too")
        steps.append("offload the optimizer to CPU/NVMe/CXL"
                     + (" (ZeRO-1 or higher: DDP keeps it on the GPU)" if s.zero_stage == 0 else ""))
    else:
        steps.append(f"with the optimizer already offloaded to {s.offload_optimizer.upper()}, "
                     "ZeRO-3 (zero3 with offload_optimizer) shards the parameters too, and "
                     "zero_infinity (offload_params) moves them off the GPU")
    if s.zero_stage >= 1:
        steps.append("more data-parallel GPUs make each GPU's shard smaller")
    return (f"Model states take {fmt_bytes(states_bytes)} of the GPU's {fmt_bytes(capacity_bytes)}: "
            + "; ".join(steps[:-1]) + ", or " + steps[-1] + ".")


def _evaluate_recsys_only(sc: Scenario, include_step: bool, tick) -> Report:
    """A recommendation model without a transformer: embedding tiers, PS vs all-to-all."""
    sb = state_bytes(sc.training.precision, sc.training.optimizer, sc.training.dtypes)
    if not include_step:     # the quick estimate skips the seeded check of the hit rates
        sc = dataclasses.replace(sc, recsys=dataclasses.replace(sc.recsys, sample_lookups=0))
    rs = recsys_sections(sc, sb, peak_flops(sc))
    tick(0.5)
    memory = recsys_memory(sc, rs)
    violations, tight = find_violations(memory["per_gpu"], memory["per_node"])
    spec = sc.recsys
    emb_params = sum(t["rows"] * t["dim"] for t in rs["embedding"]["tables"])
    dense = spec.dense_params["total"]
    label = spec.name if spec.name and spec.name != "custom" else spec.preset
    model = dict(name=f"{label} · recommendation model" if label else "recommendation model",
                 num_params=emb_params + dense, num_active_params=None, embedding_params=emb_params,
                 dense_params=dense, num_layers=None, hidden_size=None, exact_count=True)
    faster = min(rs["ps"]["designs"], key=lambda d: d["step_time_s"]) if rs["ps"].get("designs") else None
    step, throughput, perf = {"available": False, "reason": "no parameter-server comparison"}, {}, {}
    if faster:
        t, dense_s = faster["step_time_s"], rs["dense"]["step_s"]
        compute = min(faster.get("gpu_busy_s", dense_s), t)
        offload = min(rs["embedding"].get("exposed_s", 0.0), t - compute)
        step = dict(available=True, time_s=t, design=faster["design"],
                    breakdown_s=dict(compute=compute, exposed_comm=t - compute - offload,
                                     exposed_offload=offload, cpu_optimizer=0.0, stall=0.0,
                                     pipeline_bubble=0.0),
                    **step_band(sc, sc.cluster.num_gpus, emb_params + dense, t))
        throughput = {"samples_per_s": spec.batch_size / t if t else 0.0}
        perf = {"throughput": {"tokens_per_s": None}}
    convention = dict(name=sc.convention, description=_CONVENTIONS[sc.convention],
                      bytes_per_param=sb.to_dict())
    notes = list(rs["notes"]) + ["Checkpoint cost is not modelled for recommendation models yet."]
    tick(1.0)
    return Report(schema=1, engine_version=ENGINE_VERSION, fits=not violations,
                  fit_state="does_not_fit" if violations else "fits",
                  violations=tuple(violations), model=model,
                  parallelism=dict(num_gpus=sc.cluster.num_gpus, data_parallel=sc.cluster.num_gpus,
                                   tensor_parallel=1, pipeline_parallel=1,
                                   global_batch_size=spec.batch_size),
                  convention=convention, memory=memory, notes=tuple(notes), scenario=sc.to_dict(),
                  step=step, throughput=throughput, embedding=rs["embedding"], ps=rs["ps"],
                  cost=_cost(sc, None, perf))
