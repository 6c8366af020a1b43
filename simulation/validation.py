"""``python -m simulation validate``: the engine held against the project's reference data.

Reads the reference cases of a checkout (``tests/data/reference``, or ``--data DIR``) and
prints the fit table: for every public report of a real run (``public_oom_reports.json``)
the observed outcome against the engine's ``fit_state``, and how many out-of-memory runs
were caught only by *tight*. A line is ``ok`` when an observed OOM reads ``tight`` or
``does_not_fit`` and a run that fit reads ``fits`` or ``tight``.
"""

from __future__ import annotations

import json
from pathlib import Path

from .evaluate import evaluate_dict


def fit_rows(cases: list[dict]) -> list[dict]:
    """One row per case with an observed fit outcome: ``{id, observed, fit_state, ok,
    hbm_gib, hbm_capacity_gib, peak_phase}`` (GiB = 2**30 bytes)."""
    rows = []
    for c in cases:
        observed = c["expected"].get("fits")
        if observed is None:
            continue
        r = evaluate_dict(c["scenario"], include_step=False)
        hbm = r["memory"]["per_gpu"]["hbm"]
        state = r["fit_state"]
        ok = state != "fits" if observed is False else state != "does_not_fit"
        named = [v["tier"] for v in r["violations"]] + [t["tier"] for t in r["memory"]["tight"]]
        rows.append(dict(id=c["id"], observed="fits" if observed else "OOM", fit_state=state,
                         ok=ok, hbm_gib=hbm["total_bytes"] / 2**30,
                         hbm_capacity_gib=hbm["capacity_bytes"] / 2**30,
                         peak_phase=hbm["peak_phase"], tiers=", ".join(named) or "-"))
    return rows


def fit_table(rows: list[dict]) -> str:
    """The rows as a Markdown table with a summary line."""
    out = ["| case | observed | tierlab | tier | HBM per GPU (GiB) | HBM peak at | |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['id']} | {r['observed']} | {r['fit_state']} | {r['tiers']} | "
                   f"{r['hbm_gib']:.1f} of {r['hbm_capacity_gib']:.1f} | {r['peak_phase']} | "
                   f"{'ok' if r['ok'] else 'WRONG'} |")
    ooms = [r for r in rows if r["observed"] == "OOM"]
    only_tight = sum(r["fit_state"] == "tight" for r in ooms)
    right = sum(r["ok"] for r in rows)
    out.append("")
    out.append(f"{right} of {len(rows)} verdicts match what was observed; {only_tight} of "
               f"{len(ooms)} out-of-memory runs were caught only by tight.")
    return "\n".join(out)


def main(data_dir: str | None = None) -> int:
    base = Path(data_dir) if data_dir else Path("tests/data/reference")
    path = base / "public_oom_reports.json"
    if not path.exists():
        print(f"error: {path} not found (run from a tierlab checkout or pass --data DIR)")
        return 2
    rows = fit_rows(json.loads(path.read_text())["cases"])
    print("Fit table (public reports of real runs)\n")
    print(fit_table(rows))
    return 0 if all(r["ok"] for r in rows) else 1
