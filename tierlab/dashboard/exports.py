"""Downloads: a run's report as JSON, a comparison as CSV, a scenario as a DeepSpeed config
or an FSDP snippet (written by ``simulation.export``)."""

from __future__ import annotations

import csv
import io
import json

from django.http import HttpResponse
from django.utils.text import slugify

import simulation
from simulation import export as engine_export
from tierlab.catalog.labels import field_unit
from tierlab.scenarios import services

CSV_UNITS = {
    "bytes": "bytes", "s": "s", "fraction": "fraction (0..1)", "tokens_per_s": "tokens/s",
    "usd_per_hour": "USD/h", "usd_per_mtok": "USD per 1e6 tokens", "count": "count",
    "bool": "true/false", "text": "",
    "fit_state": "fits | tight (may not fit) | does not fit",
}


def _scenario(spec: dict, owner) -> simulation.Scenario:
    """The scenario as the catalog has it now, a cluster profile only if ``owner`` (the
    scenario's) may use it, as for a run. Raises ScenarioError ("unknown cluster profile")."""
    lookups = services.lookups_for(owner)
    services.check_profile_visible(spec, owner, lookups)
    return simulation.Scenario.from_dict(spec, **lookups)


def deepspeed_config(spec: dict, owner) -> dict:
    return engine_export.deepspeed_config(_scenario(spec, owner))


def fsdp_snippet(spec: dict, owner) -> str:
    return engine_export.fsdp_snippet(_scenario(spec, owner))


def megatron_args(spec: dict, owner) -> str:
    """Megatron-LM arguments for the scenario on one line (``simulation.export.megatron_args``),
    then what they cannot say as ``#`` comment lines (``megatron_notes``): a shell running the
    first line runs every argument."""
    sc = _scenario(spec, owner)
    return (" ".join(engine_export.megatron_args(sc)) + "\n"
            + "".join(f"# {n}\n" for n in engine_export.megatron_notes(sc)))


def filename(stem: str, ext: str) -> str:
    return f"{slugify(stem)[:80] or 'tierlab'}.{ext}"


def download(body: str, content_type: str, name: str) -> HttpResponse:
    """A response the browser saves as ``name`` (and a script can read as it is)."""
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def json_download(data, name: str) -> HttpResponse:
    return download(json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                    "application/json; charset=utf-8", name)


# A text cell a spreadsheet would run as a formula (=HYPERLINK(...), +, -, @, or a tab or
# carriage return before one): OWASP's CSV injection guidance, a single quote before it.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _text(value) -> str:
    """A text cell, with a leading ``'`` when it begins as a formula would (names and
    errors come from users and reach anyone with a share link). Numbers are not text:
    a negative number stays as it is (:func:`_cell`). A carriage return inside becomes a
    line feed: Python's writer quotes a cell with ``\n`` but not one with a lone ``\r``,
    which a spreadsheet reads as a new row (whose first cell could be a formula)."""
    text = "" if value is None else str(value)
    text = "'" + text if text.startswith(FORMULA_STARTS) else text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _cell(value, unit: str = "") -> str:
    """A CSV cell; bytes as whole bytes (the engine's estimates carry fractions of a byte,
    70638308659.2: a byte count reads as an integer, rounded here only)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if unit == "bytes" and isinstance(value, float) and value == value and abs(value) != float("inf"):
        return str(round(value))
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, dict)):
        return _text(json.dumps(value, sort_keys=True))
    return _text(value)


def comparison_csv(payload: dict) -> str:
    """The comparison table as CSV: one row per output, then per input; SI values, unit column.

    Columns: section, key, label, unit, best (names of the best columns) or differs (for
    inputs), then one column per scenario in the comparison's order.
    """
    names = [_text(f"{i['position'] + 1}. {i['name']}") for i in payload["items"]]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["section", "key", "label", "unit", "best_or_differs", *names])
    w.writerow(["status", "status", "Run status", "", "", *[_text(i["status"]) for i in payload["items"]]])
    for row in payload["table"]["outputs"]:
        best = "; ".join(names[i] for i in row["best"])
        # the verdict as the run page words it ("Tight: ... it may not fit"), else the value
        values = [label if label is not None else v
                  for v, label in zip(row["values"], row.get("labels") or [None] * len(row["values"]))]
        w.writerow(["output", _text(row["key"]), _text(row["label"]),
                    _text(CSV_UNITS.get(row["unit"], row["unit"])), best,
                    *[_cell(v, row["unit"]) for v in values]])
    for row in payload["table"]["inputs"]:
        unit = field_unit(row["key"])     # one table of units: tierlab/catalog/labels.py
        w.writerow(["input", _text(row["key"]), _text(row["key"]), _text(unit), "differs" if row["differs"] else "",
                    *[_cell(v, unit) for v in row["values"]]])
    return buf.getvalue()


SWEEP_CSV_FIELDS = ("step_time_s", "tokens_per_s", "usd_per_hour", "usd_per_million_tokens",
                     "hbm_total_bytes", "mfu", "mfu_peak_precision", "mfu_16bit_peak", "goodput")


def sweep_csv(payload: dict) -> str:
    """Every point of a sweep as CSV (what its page's table lists only the first rows of).

    Columns: index (0-based, the engine's grid order), one per axis (its path; the value
    as the scenario takes it, an object as JSON, a null as its meaning: "off" for FP8,
    "default" for a number), status (done: evaluated; failed: the engine refused the
    scenario, valid false, or its evaluation or chunk failed; pending; cancelled), valid, fits,
    fit_state (fits, tight: it may not fit, does_not_fit; empty for a point not evaluated), pareto (on the cost / step-time front), the numbers in SI units as their names say
    (``step_time_s``, ``hbm_total_bytes``; ``mfu`` and ``goodput`` fractions; ``mfu`` is over
    the peak ``mfu_peak_precision`` names, fp8 for an FP8 point, and ``mfu_16bit_peak`` over
    the 16-bit peak for every point, the column that compares), error.
    A number the point has not is an empty cell.
    """
    paths = [ax["path"] for ax in payload["axes"]]
    # a null reads as its meaning ("off" for FP8), as on the page: an empty cell would read
    # as a value missing
    nulls = {ax["path"]: next((label for v, label in zip(ax["values"], ax.get("value_labels") or [])
                               if v is None and label), "null") for ax in payload["axes"]}
    front = set(payload.get("pareto") or [])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["index", *map(_text, paths), "status", "valid", "fits", "fit_state", "pareto", *SWEEP_CSV_FIELDS,
                "error"])
    for p in payload["points"]:
        w.writerow([p["index"], *[_cell(p["values"].get(k)) if p["values"].get(k) is not None else _text(nulls[k])
                                  for k in paths], _text(p.get("status", "")),
                    _cell(p.get("valid")), _cell(p.get("fits")), _text(p.get("fit_state") or ""),
                    _cell(p["index"] in front),
                    *[_cell(p.get(k)) for k in SWEEP_CSV_FIELDS], _text(p.get("error") or "")])
    return buf.getvalue()
