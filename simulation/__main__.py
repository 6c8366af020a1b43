"""Command line: ``python -m simulation evaluate FILE.json`` (``-`` reads stdin), and
``python -m simulation validate`` (the validation report of :mod:`simulation.validation`:
step-time errors per data set, the rank correlation of strategies, the memory fit table and
the error bands; ``--json``, ``--write-bands``), and ``python -m simulation plan SPEC.json``
(the planner of :mod:`simulation.planner`: the ranked configurations with their bottleneck,
the Pareto front and the rejected counts; ``--json`` prints the whole answer).

Prints the report as JSON on stdout. Bad input prints ``error: <field>: <message>`` on
stderr and exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import ScenarioError, evaluate_dict


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simulation",
                                 description="tierlab engine: evaluate a scenario")
    sub = ap.add_subparsers(dest="cmd", required=True)
    ev = sub.add_parser("evaluate", help="print the report of a scenario JSON file")
    ev.add_argument("file", help="scenario JSON file, or - for stdin")
    ev.add_argument("--indent", type=int, default=2)
    va = sub.add_parser("validate", help="print the engine's validation against reference data")
    va.add_argument("--data", help="folder of reference JSON files (default: tests/data/reference "
                                   "of the checkout this package is in)")
    va.add_argument("--json", action="store_true", help="print the report as one JSON object")
    va.add_argument("--write-bands", action="store_true",
                    help="rewrite simulation/data/error_model.json from this validation")
    pl = sub.add_parser("plan", help="search the best configurations of a plan spec JSON file")
    pl.add_argument("file", help="plan spec JSON file, or - for stdin")
    pl.add_argument("--json", action="store_true", help="print the answer as one JSON object")
    pl.add_argument("--indent", type=int, default=2)
    args = ap.parse_args(argv)
    if args.cmd == "validate":
        from .validation import main as validate
        return validate(args.data, as_json=args.json, write_bands=args.write_bands)

    try:
        text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
    except OSError as e:
        print(f"error: cannot read {args.file}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        print(f"error: {args.file} is not valid JSON: {e}", file=sys.stderr)
        return 2
    try:
        if args.cmd == "plan":
            from .planner import plan
            report = plan(data)
        else:
            report = evaluate_dict(data)
    except ScenarioError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.cmd == "plan" and not args.json:
        sys.stdout.write(_plan_text(report))
        return 0
    # one write: json.dump writes each of its thousands of pieces to the stream
    sys.stdout.write(json.dumps(report, indent=args.indent) + "\n")
    return 0


def _plan_text(out: dict) -> str:
    """The planner's answer for a terminal: ranked rows, the front, the rejections."""
    lines = [f"{out['candidates']:,} candidates, {out['feasible']:,} feasible "
             f"(objective: {out['objective']})"]
    for r in out["top"]:
        c = r["choices"]
        cost = r["usd_per_million_tokens"]
        lines.append(f"{r['rank']:>3}. {c['num_nodes']} node(s) TP {c['tensor_parallel']} "
                     f"PP {c['pipeline_parallel']}"
                     + (f" (v {c['interleave_stages']})" if c["interleave_stages"] > 1 else "")
                     + f" DP {r['data_parallel']} mb {c['micro_batch_size']} {c['strategy']} "
                     f"recompute {c['recompute']} offload {c['offload_optimizer']}/{c['offload_params']}: "
                     f"step {r['step_time_s']:.3g} s"
                     + (f", {cost:.3g} USD per M tokens" if cost is not None else "")
                     + f"\n       bottleneck: {r['bottleneck_message']}"
                     + (f"\n       {r['alternatives_message']}" if r.get("alternatives_message") else ""))
    lines.append("Pareto front (step time, USD per M tokens): " + ", ".join(
        f"#{r['index']} {r['step_time_s']:.3g} s / "
        + (f"{r['usd_per_million_tokens']:.3g}" if r["usd_per_million_tokens"] is not None else "-")
        for r in out["pareto"]))
    rejected = {k: v for k, v in out["rejected"].items() if v}
    lines.append("rejected: " + (", ".join(f"{k} {v:,}" for k, v in rejected.items()) or "none")
                 + f"; dominated {out['dominated']:,}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
