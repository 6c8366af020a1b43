"""The comparison table: which inputs differ, and each output with its best value marked.

Every number is read from the engine's report as it is (SI units, named in ``unit``); the
only thing decided here is which column is best. The page and the CSV export both use
these rows, so they always agree.
"""

from __future__ import annotations

import dataclasses
import json
import typing

from dataclasses import dataclass
from functools import lru_cache

from simulation.scenario import Scenario
from tierlab.catalog.labels import axis_value_labels

# Leaves of the resolved scenario that describe rather than configure (sources, names of
# devices): shown nowhere in the table, they would only make every column differ.
_SKIP_LEAVES = {"source", "price_source", "device", "node_name", "schema",
                "template_gpus_per_node"}     # the gpus_per_node row shows the difference


@dataclass(frozen=True)
class Output:
    key: str          # dotted path in the report
    label: str
    unit: str         # bytes | s | fraction | tokens_per_s | usd_per_hour | usd_per_mtok | count | bool | text | fit_state
    better: str = ""  # "min" | "max" | "" (no best)


OUTPUTS: tuple[Output, ...] = (
    # the three-state verdict (simulation/fit.py): a "tight" run is within the engine's memory
    # error of a capacity and may not fit, so it is never shown as a plain yes
    Output("fit_state", "Memory verdict (fits / tight / does not fit)", "fit_state", "max"),
    Output("memory.per_gpu.hbm.total_bytes", "HBM used per GPU", "bytes", "min"),
    Output("memory.per_gpu.hbm.capacity_bytes", "HBM capacity per GPU", "bytes"),
    # with a pipeline: the rank whose HBM is the verdict's (0 = the first stage)
    Output("memory.stage_index", "Worst pipeline stage (HBM per GPU is its)", "count"),
    # with a pipeline: the first stage (embedding, most micro-batches in flight) and the last
    # (head, logits), side by side with the worst above (memory.per_stage, simulation/memory.py)
    Output("memory.per_stage.0.hbm_total_bytes", "HBM per GPU, first pipeline stage", "bytes", "min"),
    Output("memory.per_stage.-1.hbm_total_bytes", "HBM per GPU, last pipeline stage", "bytes", "min"),
    # the worst stage's HBM by part (simulation/memory.py CATEGORIES)
    Output("memory.per_gpu.hbm.params_bytes", "HBM per GPU: parameters", "bytes", "min"),
    Output("memory.per_gpu.hbm.grads_bytes", "HBM per GPU: gradients", "bytes", "min"),
    Output("memory.per_gpu.hbm.optimizer_bytes", "HBM per GPU: optimizer states", "bytes", "min"),
    Output("memory.per_gpu.hbm.activations_bytes", "HBM per GPU: activations", "bytes", "min"),
    Output("memory.per_gpu.hbm.buffers_bytes", "HBM per GPU: buffers", "bytes", "min"),
    Output("memory.per_node.ddr.total_bytes", "DDR used per node", "bytes", "min"),
    Output("memory.per_node.ddr.capacity_bytes", "DDR capacity per node", "bytes"),
    Output("memory.per_node.nvme.total_bytes", "NVMe used per node", "bytes", "min"),
    Output("memory.per_node.cxl.total_bytes", "CXL used per node", "bytes", "min"),
    Output("step.time_s", "Step time", "s", "min"),
    # the engine's error band (simulation/errormodel.py): where measured steps of the kind lay
    # relative to tierlab's prediction for them, applied to this one; it need not contain the
    # step time (every measured run of a kind may have been slower), so the note says how
    Output("step.band_note", "Step time: what the measured-run band means", "text"),
    Output("step.time_band_s.0", "Step time, measured-run band low", "s"),
    Output("step.time_band_s.1", "Step time, measured-run band high", "s"),
    Output("step.validated", "Step time: inside what was validated", "bool"),
    Output("step.breakdown_s.compute", "Step: compute", "s", "min"),
    Output("step.breakdown_s.exposed_comm", "Step: exposed communication", "s", "min"),
    Output("step.breakdown_s.exposed_offload", "Step: exposed offload I/O", "s", "min"),
    Output("step.breakdown_s.cpu_optimizer", "Step: CPU optimizer", "s", "min"),
    Output("step.breakdown_s.stall", "Step: prefetch stall", "s", "min"),
    Output("step.breakdown_s.pipeline_bubble", "Step: pipeline bubble", "s", "min"),
    Output("step.context_parallel.exposed_per_step_s", "Step: context-parallel K/V exchange exposed",
           "s", "min"),
    Output("step.expert_parallel.alltoall_exposed_s",
           "Step: expert-parallel all-to-alls exposed, per micro-batch", "s", "min"),
    Output("throughput.tokens_per_s", "Throughput", "tokens_per_s", "max"),
    Output("mfu", "Model FLOPs utilization", "fraction", "max"),
    # an FP8 run's MFU is over the FP8 peak; this row sets it on the 16-bit peak beside BF16 runs'
    Output("step.mfu_peak.mfu_16bit_peak", "Model FLOPs utilization over the 16-bit peak (FP8 runs)",
           "fraction", "max"),
    Output("verdict.bottleneck", "Bottleneck", "text"),
    Output("cost.usd_per_hour", "Cost per hour", "usd_per_hour", "min"),
    Output("cost.usd_per_million_tokens", "Cost per million tokens", "usd_per_mtok", "min"),
    Output("checkpoint.size_bytes", "Checkpoint size", "bytes", "min"),
    Output("checkpoint.stall_s", "Checkpoint stall", "s", "min"),
    Output("checkpoint.interval_s", "Checkpoint interval", "s"),
    Output("checkpoint.goodput", "Goodput (useful work / wall time)", "fraction", "max"),
    Output("parallelism.num_gpus", "GPUs", "count"),
    Output("model.num_params", "Parameters", "count"),
)


def dig(data, path: str):
    """``data["a"]["b"]`` for ``"a.b"`` (``"a.0"``: a list's first item, ``"a.-1"`` its
    last); None where a step is missing."""
    node = data
    for key in path.split("."):
        if isinstance(node, list) and key.lstrip("-").isdigit() and -len(node) <= int(key) < len(node):
            node = node[int(key)]
        elif not isinstance(node, dict) or key not in node:
            return None
        else:
            node = node[key]
    return node


def _compact(value, limit: int = 240) -> str:
    text = json.dumps(value, separators=(", ", ": "), sort_keys=True)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def flatten(data: dict, prefix: str = "") -> dict:
    """Scalar leaves of a nested dict by dotted path (lists kept whole)."""
    out = {}
    for key, value in (data or {}).items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, path + "."))
        elif key in _SKIP_LEAVES:
            continue
        elif isinstance(value, list) and any(isinstance(x, (dict, list)) for x in value):
            out[path] = _compact(value)     # e.g. recsys.tables: shown as text, not objects
        else:
            out[path] = value
    return out


_NO_DEFAULT = object()


@lru_cache(maxsize=None)
def scenario_default(path: str):
    """The engine's default of a scenario leaf by dotted path (``training.context_parallel``
    -> 1): the field default of the section's dataclass (``simulation.scenario``), which a
    resolved scenario's ``to_dict`` leaves out. ``_NO_DEFAULT`` where the path is no
    dataclass field, the field has no plain default, or the default is None (chosen from
    other fields: nothing to show)."""
    cls = Scenario
    parts = path.split(".")
    for i, name in enumerate(parts):
        if not dataclasses.is_dataclass(cls):
            return _NO_DEFAULT
        fields = {f.name: f for f in dataclasses.fields(cls)}
        f = fields.get(name)
        if f is None:
            return _NO_DEFAULT
        if i == len(parts) - 1:
            if f.default is dataclasses.MISSING or f.default is None:
                return _NO_DEFAULT
            return f.default
        hint = typing.get_type_hints(cls).get(name)
        inner = [a for a in typing.get_args(hint) if dataclasses.is_dataclass(a)]
        cls = inner[0] if inner else hint
    return _NO_DEFAULT


def _has_parent(data: dict, path: str) -> bool:
    """Whether ``data`` holds the section ``path``'s leaf sits in (``training.lora`` for
    ``training.lora.double_quant``): a default is shown only inside a section given."""
    node = data
    for name in path.split(".")[:-1]:
        node = node.get(name) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            return False
    return True


def input_rows(inputs: list[dict | None]) -> list[dict]:
    """One row per input leaf of any column: ``{key, values, differs}`` (and ``labels``: the
    values by display name, where some read otherwise); differing rows first. A leaf a
    column's resolved scenario leaves out because it is at its default (``to_dict`` omits
    ``context_parallel`` 1, ``expert_parallel`` 1, ...) shows that default."""
    flat = [flatten(i) if isinstance(i, dict) else {} for i in inputs]
    keys: list[str] = []
    seen = set()
    for f in flat:
        for k in f:
            if k not in seen:
                seen.add(k)
                keys.append(k)
    rows = []
    for k in keys:
        default = scenario_default(k)
        values = [f[k] if k in f else
                  default if default is not _NO_DEFAULT and isinstance(i, dict) and _has_parent(i, k)
                  else None
                  for f, i in zip(flat, inputs)]
        row = {"key": k, "values": values, "differs": any(v != values[0] for v in values)}
        labels = axis_value_labels(k, values)
        if any(labels):
            row["labels"] = labels          # "ZeRO-3" for zero3, "CPU DDR" for cpu, ...
        rows.append(row)
    return sorted(rows, key=lambda r: not r["differs"])   # stable: keeps scenario order


# Values closer than this (relative) read the same in the table (99.82% and 99.82%): ties.
TIE_REL = 5e-4


def best_indices(values: list, better: str, eligible: list[bool]) -> list[int]:
    """Columns holding the best value: among the eligible columns (those that fit) if any
    has a value, else among all. None when every value is the same or there is no rule."""
    if better not in ("min", "max"):
        return []
    numeric = [(i, float(v)) for i, v in enumerate(values)
               if isinstance(v, (int, float)) and v is not None]
    pool = [(i, v) for i, v in numeric if eligible[i]] or numeric
    if not pool:
        return []
    pick = min if better == "min" else max
    target = pick(v for _, v in pool)
    tie = TIE_REL * abs(target)
    everything = [v for _, v in numeric]
    if max(everything) - min(everything) <= tie:
        return []                      # all the same as the table shows them: no best
    return [i for i, v in pool if abs(v - target) <= tie]


# The verdict's bottleneck ids in words (step.py's verdict names them in its message too).
BOTTLENECK_WORDS = {"compute": "compute", "exposed_comm": "exposed communication",
                    "exposed_offload": "exposed offload I/O", "cpu_optimizer": "the CPU optimizer step",
                    "stall": "prefetch-miss stalls", "pipeline_bubble": "the pipeline bubble",
                    "none": "none"}


FIT_STATES = ("does_not_fit", "tight", "fits")     # worst to best (simulation/fit.py)


def report_fit_state(report: dict) -> str | None:
    """``fits`` | ``tight`` | ``does_not_fit``: the report's ``fit_state``, else (a report
    stored before it existed) ``fits`` or ``does_not_fit`` from ``fits``; None without either."""
    state = report.get("fit_state")
    if state in FIT_STATES:
        return state
    fits = report.get("fits")
    return None if fits is None else "fits" if fits else "does_not_fit"


def fit_state_label(report: dict | None) -> str | None:
    """The verdict in the words of the run page's headline (frontend/src/report.ts
    ``verdict``): "Fits: every tier has room", "Tight: within the engine's ±10 % memory
    error — it may not fit", "Does not fit: 1 tier over capacity"."""
    state = report_fit_state(report) if report else None
    if state == "fits":
        return "Fits: every tier has room"
    if state == "tight":
        band = (report.get("memory") or {}).get("band")
        within = f"±{round(band * 100)} % " if isinstance(band, (int, float)) and band else ""
        return f"Tight: within the engine's {within}memory error — it may not fit"
    if state == "does_not_fit":
        n = len(report.get("violations") or [])
        return f"Does not fit: {n} tier{'' if n == 1 else 's'} over capacity" if n else "Does not fit"
    return None


def _pct(x: float) -> int:
    return round(x * 100)


def band_note(report: dict | None) -> str | None:
    """What the step time's measured-run band says, in the run page's words
    (frontend/src/step.ts ``stepBandText``): "measured runs of this kind took 35 % to 47 %
    longer (tensor + pipeline on A100)" when every validated case's measured step was longer
    than tierlab's prediction (``band.error_rel`` both above 0: the band lies wholly above the
    step time), "... less" when all were shorter, else "measured runs of this kind: −12 % to
    +24 % (...)". None without a band."""
    step = (report or {}).get("step") or {}
    band = step.get("band") or {}
    rel = band.get("error_rel")
    if not (isinstance(rel, list) and len(rel) == 2):
        return None
    lo, hi = rel
    kind = f"{band.get('label')} on {band['on']}" if band.get("on") else str(band.get("label") or "")
    tail = f" ({kind})" if kind else ""
    if lo > 0:
        return f"measured runs of this kind took {_pct(lo)} % to {_pct(hi)} % longer{tail}"
    if hi < 0:
        return f"measured runs of this kind took {_pct(-hi)} % to {_pct(-lo)} % less{tail}"
    sign = lambda x: f"+{_pct(x)} %" if x > 0 else f"−{abs(_pct(x))} %" if x < 0 else "0 %"
    spread = f"±{_pct(hi)} %" if abs(lo + hi) < 0.005 else f"{sign(lo)} to {sign(hi)}"
    return f"measured runs of this kind: {spread}{tail}"


def _value(report: dict | None, key: str):
    """The output ``key`` of ``report``; None for a tier the node does not have (its 0 bytes
    would otherwise look like, and be marked as, the best use of it)."""
    if not report:
        return None
    if key == "fit_state":
        return report_fit_state(report)
    if key == "step.band_note":
        return band_note(report)
    if key.startswith("memory.per_node."):
        tier = key.split(".")[2]
        if dig(report, f"memory.per_node.{tier}.present") is False:
            return None
    value = dig(report, key)
    if key == "verdict.bottleneck" and isinstance(value, str):
        return BOTTLENECK_WORDS.get(value, value.replace("_", " "))
    return value


# Outputs of a run that only exist once it starts: for a scenario that does not fit they are
# what it would take if it did (marked ``unfit``), never a result.
AS_IF_RUN = ("step.", "throughput.", "mfu", "verdict.", "cost.", "checkpoint.stall_s",
             "checkpoint.interval_s", "checkpoint.goodput")


def output_rows(reports: list[dict | None]) -> list[dict]:
    """One row per output in OUTPUTS that any report has: ``{key, label, unit, better, values,
    best, unfit}`` (the ``fit_state`` row also ``labels``: each column's verdict in the run
    page's words); ``unfit`` lists the columns whose value is a step time, throughput or
    cost of a scenario that does not fit (what it would take if it fit)."""
    eligible = [bool(r and r.get("fits")) for r in reports]
    unfit_columns = [i for i, r in enumerate(reports) if r and r.get("fits") is False]
    rows = []
    for out in OUTPUTS:
        values = [_value(r, out.key) for r in reports]
        if all(v is None for v in values):
            continue
        if out.unit == "fit_state":
            best = best_indices([None if v is None else FIT_STATES.index(v) for v in values], out.better,
                                [True] * len(values))
        elif out.unit == "bool":
            best = best_indices([None if v is None else int(bool(v)) for v in values], out.better,
                                [True] * len(values))
        else:
            best = best_indices(values, out.better, eligible)
        as_if = out.key.startswith(AS_IF_RUN)
        row = {"key": out.key, "label": out.label, "unit": out.unit, "better": out.better,
               "values": values, "best": best,
               "unfit": [i for i in unfit_columns if as_if and values[i] is not None]}
        if out.unit == "fit_state":
            row["labels"] = [fit_state_label(r) for r in reports]
        rows.append(row)
    return rows


def comparison_table(inputs: list[dict | None], reports: list[dict | None]) -> dict:
    return {"inputs": input_rows(inputs), "outputs": output_rows(reports)}
