"""The report: what the engine answers, as a dataclass that round-trips JSON.

Keys outside checks rely on (``"schema": 1``)::

    fits                          bool: fit_state is fits or tight
    fit_state                     fits | tight | does_not_fit (simulation.fit)
    violations[*]                 {tier, scope, required_bytes, capacity_bytes, over_bytes, message}
    model.num_params              parameters (elements)
    memory.per_gpu.hbm.{params_bytes, grads_bytes, optimizer_bytes, activations_bytes,
                        buffers_bytes, total_bytes, capacity_bytes, free_bytes, parts[*]}
    memory.per_node.{ddr,nvme,cxl}  the same keys, per node
    convention                    {name, description, bytes_per_param}
    cross_checks                  other estimators' views of the same scenario
    step.{time_s, breakdown_s.{compute, exposed_comm, exposed_offload, cpu_optimizer,
          stall, pipeline_bubble}, time_band_s [lo, hi], band.{kind, label, on, error_rel,
          cases, source}, validated, outside_validation[*]}   (simulation.errormodel)
    throughput.tokens_per_s, mfu, links[*].{name, bytes_per_s, bytes, busy_s, utilization
          (busy_s / step: the share of the step any flow was on it), bandwidth_fraction
          (bytes / (bytes_per_s x step): the share of its capacity used)}  (per GPU)
    timeline.tasks[*].{name, lane, kind, start_s, end_s}, verdict.{bottleneck, message}
    offload_bandwidth             ZeRO-Infinity efficiency-vs-bandwidth curves
    step.cpu_optimizer.{bound, implementation, bytes_per_param, message, ...}  (simulation.cpu_adam)
    checkpoint.{size_bytes, snapshot_s, snapshot.{state: {tier, bytes_per_gpu, s}}, write_s,
                stall_s, interval_s, young_interval_s, daly_interval_s, mtbf_s, restart_s,
                goodput, waste_fraction, curve, monte_carlo}
    cost.{usd_per_hour, usd_per_million_tokens, source}
    embedding.{tiers[*].{tier, rows, bytes, hit_rate, lookup_s, cost_usd}, lookup_s_per_step}
    ps.{designs[*].{design, step_time_s, bytes_on_wire}, faster}    (recommendation models)
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields


@dataclass(slots=True)      # not frozen: a frozen init costs 5x
class Violation:
    tier: str
    scope: str               # per_gpu | per_node
    required_bytes: float
    capacity_bytes: float
    over_bytes: float
    message: str

    def to_dict(self) -> dict:
        return {"tier": self.tier, "scope": self.scope, "required_bytes": self.required_bytes,
                "capacity_bytes": self.capacity_bytes, "over_bytes": self.over_bytes,
                "message": self.message}


@dataclass          # not frozen: a frozen init costs 5x, and a quick estimate is ~0.1 ms
class Report:
    schema: int
    engine_version: str
    fits: bool
    violations: tuple[Violation, ...]
    model: dict
    parallelism: dict
    convention: dict
    memory: dict
    cross_checks: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    scenario: dict = field(default_factory=dict)
    step: dict = field(default_factory=dict)
    throughput: dict = field(default_factory=dict)
    mfu: float | None = None
    links: tuple = ()
    timeline: dict = field(default_factory=dict)
    verdict: dict = field(default_factory=dict)
    offload_bandwidth: dict = field(default_factory=dict)
    checkpoint: dict = field(default_factory=dict)
    cost: dict = field(default_factory=dict)
    embedding: dict = field(default_factory=dict)
    ps: dict = field(default_factory=dict)
    fit_state: str = "fits"

    def to_dict(self) -> dict:
        d = self.__dict__.copy()          # the fields, in order
        d["violations"] = [v.to_dict() for v in self.violations]
        d["notes"] = list(self.notes)
        d["links"] = list(self.links)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Report":
        kw = {f.name: d[f.name] for f in fields(cls) if f.name in d}
        kw["violations"] = tuple(Violation(**v) for v in d.get("violations", ()))
        kw["notes"] = tuple(d.get("notes", ()))
        kw["links"] = tuple(d.get("links", ()))
        return cls(**kw)

