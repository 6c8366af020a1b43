"""``python -m simulation validate``: the engine held against the project's reference data.

Reads the reference cases of a source checkout (``tests/data/reference`` next to this
package, or ``--data DIR``); they are test data and are not installed with the package, so
the command needs a checkout. It prints:

* step time: every reference case with a ``scenario`` and a measured step time
  (``expected_step_time_s``, or a ``step_time_scenarios`` list of
  ``{id, scenario, expected_step_time_s}``), per data set its n, mean |error| and worst
  error (signed, ``predicted / measured - 1``, with the case);
* the rank correlation of strategies: for cases of one data set with the same model, GPU
  count, global batch and sequence length, whether the predicted per-GPU throughput orders
  each pair of strategies as the measurement does (Kendall's tau over those pairs), and
  Spearman's rho of per-GPU throughput over each data set that compares strategies;
* the fit table: for every public report of a real run (``public_oom_reports.json``) the
  observed outcome against the engine's ``fit_state``, and how many out-of-memory runs were
  caught only by *tight*. A line is ``ok`` when an observed OOM reads ``tight`` or
  ``does_not_fit`` and a run that fit reads ``fits`` or ``tight``;
* the error model (:mod:`simulation.errormodel`) these imply, and whether the recorded
  ``simulation/data/error_model.json`` is current (``--write-bands`` rewrites it).

``--json`` prints the same as one JSON object. Exit status: 0; 1 when a fit verdict is
wrong or the recorded error model is stale; 2 when the data is missing.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from . import errormodel
from .errormodel import POOLED, STEP_KIND_LABELS, compute_setting, gpu_generation, step_kind
from .evaluate import _offloaded, evaluate
from .fit import MAX_BAND, MEMORY_ERROR, scenario_kind
from .scenario import Scenario

DEFAULT_DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "reference"
OOM_FILE = "public_oom_reports.json"
ROUND = 4          # digits of the recorded fractions: the C and Python paths agree far closer


# ---------------------------------------------------------------- step time

def step_cases(base: Path) -> list[dict]:
    """``[{dataset, id, scenario, measured_s}]`` from every reference file of ``base``."""
    out = []
    for path in sorted(base.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for c in data.get("cases", ()):
            subs = c.get("step_time_scenarios") or (
                [c] if "scenario" in c and "expected_step_time_s" in c else [])
            for s in subs:
                out.append(dict(dataset=path.stem, id=s["id"], scenario=s["scenario"],
                                measured_s=s["expected_step_time_s"]))
    return out


def _strategy_label(sc: Scenario, par: dict) -> str:
    t = sc.training
    return (f"{sc.strategy.kind} tp{par['tensor_parallel']} pp{par['pipeline_parallel']} "
            f"recompute {t.recompute}")


def step_rows(cases: list[dict]) -> list[dict]:
    """Each case evaluated (``detail=False``: the same step time, faster): ``{dataset, id,
    kind, strategy, gpu_generation, num_gpus, num_params, predicted_s, measured_s, error,
    group, predicted_tokens_per_s_per_gpu, measured_tokens_per_s_per_gpu}``."""
    rows = []
    for c in cases:
        sc = Scenario.from_dict(c["scenario"])
        r = evaluate(sc, detail=False).to_dict()
        par = r["parallelism"]
        pred = r["step"]["time_s"]
        per_gpu = r["throughput"]["tokens_per_s"] / par["num_gpus"]
        rows.append(dict(
            dataset=c["dataset"], id=c["id"], kind=step_kind(sc), strategy=_strategy_label(sc, par),
            strategy_kind=sc.strategy.kind, gpu_generation=gpu_generation(sc), compute=compute_setting(sc),
            num_gpus=par["num_gpus"], num_params=r["model"]["num_params"],
            predicted_s=pred, measured_s=c["measured_s"], error=pred / c["measured_s"] - 1,
            group=[c["dataset"], r["model"]["name"], par["num_gpus"], par["global_batch_size"],
                   sc.training.seq_len],
            predicted_tokens_per_s_per_gpu=per_gpu,
            measured_tokens_per_s_per_gpu=per_gpu * pred / c["measured_s"]))
    return rows


def error_stats(rows: list[dict]) -> dict:
    """``{n, mean_abs_error, mean_error, worst: {id, error}}`` (fractions)."""
    worst = max(rows, key=lambda r: abs(r["error"]))
    return dict(n=len(rows), mean_abs_error=sum(abs(r["error"]) for r in rows) / len(rows),
                mean_error=sum(r["error"] for r in rows) / len(rows),
                worst=dict(id=worst["id"], error=worst["error"]))


def by_dataset(rows: list[dict]) -> dict:
    out = {}
    for r in rows:
        out.setdefault(r["dataset"], []).append(r)
    return {name: error_stats(rs) for name, rs in out.items()}


# ---------------------------------------------------------------- rank correlation

def ranks(values: list[float]) -> list[float]:
    """1-based ranks, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=values.__getitem__)
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(x: list[float], y: list[float]) -> float | None:
    """Spearman's rho: Pearson's correlation of the ranks; None below 3 values or with no
    spread."""
    if len(x) < 3:
        return None
    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    return cov / math.sqrt(vx * vy) if vx and vy else None


def _sign(v: float) -> int:
    return (v > 0) - (v < 0)


def strategy_ranking(rows: list[dict]) -> dict:
    """Pairs of strategies in the same configuration, ordered by per-GPU throughput:
    ``{pairs: [{a, b, measured_faster, predicted_faster, agree}], agree, n_pairs,
    kendall_tau, spearman: {dataset: {n, rho}}}``. Kendall's tau over the pairs is
    ``(concordant - discordant) / (concordant + discordant)`` (tied pairs left out)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r["group"]), []).append(r)
    pairs, conc, disc = [], 0, 0
    for members in groups.values():
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                if a["strategy"] == b["strategy"]:
                    continue
                m = _sign(a["measured_tokens_per_s_per_gpu"] - b["measured_tokens_per_s_per_gpu"])
                p = _sign(a["predicted_tokens_per_s_per_gpu"] - b["predicted_tokens_per_s_per_gpu"])
                if m == 0 or p == 0:
                    continue
                conc += m == p
                disc += m != p
                faster = lambda s: (a if s > 0 else b)["id"]
                pairs.append(dict(a=a["id"], b=b["id"], measured_faster=faster(m),
                                  predicted_faster=faster(p), agree=m == p))
    rho = {}
    for name in dict.fromkeys(r["dataset"] for r in rows):
        rs = [r for r in rows if r["dataset"] == name]
        if len({r["strategy"] for r in rs}) > 1:
            rho[name] = dict(n=len(rs), rho=spearman([r["measured_tokens_per_s_per_gpu"] for r in rs],
                                                     [r["predicted_tokens_per_s_per_gpu"] for r in rs]))
    return dict(pairs=pairs, agree=conc, n_pairs=conc + disc,
                kendall_tau=(conc - disc) / (conc + disc) if conc + disc else None, spearman=rho)


# ---------------------------------------------------------------- memory fit

def fit_rows(cases: list[dict]) -> list[dict]:
    """One row per case with an observed fit outcome: ``{id, observed, fit_state, ok,
    hbm_gib, hbm_capacity_gib, peak_phase}`` (GiB = 2**30 bytes)."""
    rows = []
    for c in cases:
        observed = c["expected"].get("fits")
        if observed is None:
            continue
        r = evaluate(Scenario.from_dict(c["scenario"]), include_step=False).to_dict()
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
    out.append("")
    out.append(fit_summary(rows))
    return "\n".join(out)


def fit_summary(rows: list[dict]) -> str:
    ooms = [r for r in rows if r["observed"] == "OOM"]
    only_tight = sum(r["fit_state"] == "tight" for r in ooms)
    right = sum(r["ok"] for r in rows)
    return (f"{right} of {len(rows)} verdicts match what was observed; {only_tight} of "
            f"{len(ooms)} out-of-memory runs were caught only by tight.")


def memory_evidence(cases: list[dict]) -> list[dict]:
    """What each public report says about the memory estimate's error, as a fraction of the
    tier's capacity (the unit of the tight band): ``{id, kind, implied_error, why}``.

    An OOM with every tier below capacity needs the estimate to be short by at least the
    smallest free share; a run that fit with a tier above capacity needs it to be over by
    the largest excess; a measured figure (``hbm_total_gib``) differs by
    ``|measured - estimate| / capacity``. Reports the verdict already explains add 0.
    """
    out = []
    for c in cases:
        sc = Scenario.from_dict(c["scenario"])
        r = evaluate(sc, include_step=False).to_dict()
        kind = scenario_kind(sc.strategy.zero_stage, _offloaded(sc),
                             r["parallelism"]["pipeline_parallel"])
        tiers = [t for scope in ("per_gpu", "per_node") for t in r["memory"][scope].values()
                 if t["capacity_bytes"] > 0]
        named = c["expected"].get("overflow_tiers")
        if named:
            tiers = [r["memory"]["per_gpu" if n == "hbm" else "per_node"][n] for n in named]
        exp = c["expected"]
        if exp.get("fits") is False:
            err = max(0.0, min(1 - t["total_bytes"] / t["capacity_bytes"] for t in tiers))
            out.append(dict(id=c["id"], kind=kind, implied_error=err, why="observed OOM"))
        elif exp.get("fits") is True:
            err = max(0.0, max(t["total_bytes"] / t["capacity_bytes"] - 1 for t in tiers))
            out.append(dict(id=c["id"], kind=kind, implied_error=err, why="observed to fit"))
        if exp.get("metric") == "hbm_total_gib":
            hbm = r["memory"]["per_gpu"]["hbm"]
            err = abs(exp["value"] * 2**30 - hbm["total_bytes"]) / hbm["capacity_bytes"]
            out.append(dict(id=c["id"], kind=kind, implied_error=err, why="measured HBM per GPU"))
    return out


# ---------------------------------------------------------------- the error model

def _step_record(kind: str, rows: list[dict], sources: dict) -> dict:
    es = [r["error"] for r in rows]
    lo, hi = min(es), max(es)
    datasets = sorted({r["dataset"] for r in rows})
    gens = sorted({r["gpu_generation"] for r in rows})
    return dict(
        kind=kind, label=STEP_KIND_LABELS.get(kind, "any validated scenario"),
        on=", ".join(g.upper() for g in gens), cases=len(rows),
        # measured = predicted / (1 + error): the band every validated measurement lay in
        band_rel=[round(1 / (1 + hi) - 1, ROUND), round(1 / (1 + lo) - 1, ROUND)],
        error_range=[round(lo, ROUND), round(hi, ROUND)],
        mean_abs_error=round(sum(map(abs, es)) / len(es), ROUND),
        source="observed spread of validated step times: " + "; ".join(
            f"{sources[d]} ({sum(r['dataset'] == d for r in rows)})" for d in datasets),
        domain=dict(gpu_generations=gens, strategies=sorted({r["strategy_kind"] for r in rows}),
                    num_gpus=[min(r["num_gpus"] for r in rows), max(r["num_gpus"] for r in rows)],
                    num_params=[min(r["num_params"] for r in rows), max(r["num_params"] for r in rows)],
                    compute=sorted({r["compute"] for r in rows})))


def dataset_sources(base: Path) -> dict:
    """Each data set's short citation (its ``cite``, else the file's name); the full source
    is in the file."""
    out = {}
    for path in sorted(base.glob("*.json")):
        d = json.loads(path.read_text(encoding="utf-8"))
        out[path.stem] = d.get("cite") or path.stem
    return out


def build_error_model(rows: list[dict], evidence: list[dict], sources: dict) -> dict:
    """The error model :mod:`simulation.errormodel` reads, from the step rows and the
    memory evidence (deterministic: the same engine and data give the same file)."""
    kinds = {}
    for kind in STEP_KIND_LABELS:
        rs = [r for r in rows if r["kind"] == kind]
        if rs:
            kinds[kind] = _step_record(kind, rs, sources)
    kinds[POOLED] = _step_record(POOLED, rows, sources)
    by_gen = {}
    for kind in STEP_KIND_LABELS:
        rs = [r for r in rows if r["kind"] == kind]
        for gen in sorted({r["gpu_generation"] for r in rs}):
            by_gen.setdefault(kind, {})[gen] = _step_record(
                kind, [r for r in rs if r["gpu_generation"] == gen], sources)
    for gen in sorted({r["gpu_generation"] for r in rows}):
        by_gen.setdefault(POOLED, {})[gen] = _step_record(
            POOLED, [r for r in rows if r["gpu_generation"] == gen], sources)
    mem = {}
    for kind, prior in MEMORY_ERROR.items():
        ev = [e for e in evidence if e["kind"] == kind]
        implied = max((e["implied_error"] for e in ev), default=0.0)
        mem[kind] = dict(prior=prior, implied_by_reports=round(implied, ROUND),
                         band=round(min(max(prior, implied), MAX_BAND), ROUND),
                         reports=[dict(id=e["id"], why=e["why"], implied_error=round(e["implied_error"], ROUND))
                                  for e in ev])
    return {
        "generated_by": "python -m simulation validate --write-bands",
        "step_time": {
            "definition": "error = predicted / measured - 1 over the validated cases of a kind; "
                          "band_rel = [1 / (1 + max error) - 1, 1 / (1 + min error) - 1]: every "
                          "measurement of the kind lay within predicted x (1 + band_rel); "
                          "by_generation: the same per kind and GPU generation, the band a "
                          "scenario on that generation gets",
            "kinds": kinds, "by_generation": by_gen},
        "memory": {
            "definition": "tight band per memory kind (simulation.fit): max(prior, the largest "
                          "error a public report implies, as a fraction of the tier's capacity), "
                          f"at most {MAX_BAND}",
            "kinds": mem},
    }


# ---------------------------------------------------------------- the report

def report(base: Path) -> dict:
    """The whole validation as one JSON-able dict."""
    rows = step_rows(step_cases(base))
    oom = json.loads((base / OOM_FILE).read_text(encoding="utf-8"))["cases"]
    frows = fit_rows(oom)
    model = build_error_model(rows, memory_evidence(oom), dataset_sources(base))
    recorded = json.loads(errormodel.MODEL_PATH.read_text()) if errormodel.MODEL_PATH.exists() else None
    return dict(step_time=dict(datasets=by_dataset(rows), overall=error_stats(rows), rows=rows),
                strategy_ranking=strategy_ranking(rows),
                memory_fit=dict(rows=frows, summary=fit_summary(frows), all_ok=all(r["ok"] for r in frows)),
                error_model=model, error_model_current=recorded == model)


def _pct(x: float) -> str:
    return f"{x * 100:+.1f} %"


def text(rep: dict) -> str:
    """The report as Markdown."""
    st = rep["step_time"]
    out = ["Step time (error = predicted / measured - 1)", "",
           "| data set | n | mean abs error | mean error | worst error | worst case |",
           "|---|---|---|---|---|---|"]
    for name, s in st["datasets"].items():
        out.append(f"| {name} | {s['n']} | {s['mean_abs_error'] * 100:.1f} % | {_pct(s['mean_error'])} | "
                   f"{_pct(s['worst']['error'])} | {s['worst']['id']} |")
    o = st["overall"]
    out.append(f"| all | {o['n']} | {o['mean_abs_error'] * 100:.1f} % | {_pct(o['mean_error'])} | "
               f"{_pct(o['worst']['error'])} | {o['worst']['id']} |")
    rk = rep["strategy_ranking"]
    out += ["", "Rank correlation of strategies (per-GPU throughput, same model, GPUs and batch)", ""]
    for p in rk["pairs"]:
        out.append(f"- {p['a']} vs {p['b']}: measured {p['measured_faster']} faster, "
                   f"predicted {p['predicted_faster']}: {'agrees' if p['agree'] else 'WRONG ORDER'}")
    tau = rk["kendall_tau"]
    out.append(f"\n{rk['agree']} of {rk['n_pairs']} pairs ordered as measured; Kendall's tau "
               + (f"{tau:+.2f}" if tau is not None else "n/a") + ".")
    for name, s in rk["spearman"].items():
        rho = f"{s['rho']:+.2f}" if s["rho"] is not None else "n/a"
        out.append(f"Spearman's rho of per-GPU throughput over {name} ({s['n']} rows): {rho}.")
    out += ["", "Fit table (public reports of real runs)", "",
            fit_table(rep["memory_fit"]["rows"])]
    out += ["", "Error bands (simulation/data/error_model.json)", "",
            "| kind | on | cases | measured step within | mean abs error |", "|---|---|---|---|---|"]
    model = rep["error_model"]["step_time"]
    shown = [rec for gens in model["by_generation"].values() for rec in gens.values()]
    for k in shown + ([model["kinds"][POOLED]] if len(model["by_generation"][POOLED]) > 1 else []):
        lo, hi = k["band_rel"]
        out.append(f"| {k['label']} | {k['on']} | {k['cases']} | {_pct(lo)} .. {_pct(hi)} of the prediction | "
                   f"{k['mean_abs_error'] * 100:.1f} % |")
    out.append("")
    out.append("| memory kind | prior | implied by reports | tight band |")
    out.append("|---|---|---|---|")
    for name, m in rep["error_model"]["memory"]["kinds"].items():
        out.append(f"| {name} | {m['prior'] * 100:.1f} % | {m['implied_by_reports'] * 100:.1f} % | "
                   f"±{m['band'] * 100:.1f} % of capacity |")
    out.append("")
    out.append("The recorded error model is current." if rep["error_model_current"] else
               "The recorded error model is STALE: run python -m simulation validate --write-bands.")
    return "\n".join(out)


def main(data_dir: str | None = None, as_json: bool = False, write_bands: bool = False) -> int:
    base = Path(data_dir) if data_dir else DEFAULT_DATA
    if not (base / OOM_FILE).exists():
        print(f"error: {base / OOM_FILE} not found: the validation data are the test data of a "
              "tierlab source checkout (tests/data/reference), not installed with the package; "
              "run from a checkout or pass --data DIR")
        return 2
    rep = report(base)
    if write_bands:
        errormodel.MODEL_PATH.parent.mkdir(exist_ok=True)
        errormodel.MODEL_PATH.write_text(json.dumps(rep["error_model"], indent=1) + "\n", encoding="utf-8")
        rep["error_model_current"] = True
    if as_json:
        json.dump(rep, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(text(rep))
    return 0 if rep["memory_fit"]["all_ok"] and rep["error_model_current"] else 1
