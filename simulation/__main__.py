"""Command line: ``python -m simulation evaluate FILE.json`` (``-`` reads stdin), and
``python -m simulation validate`` (the validation report of :mod:`simulation.validation`:
step-time errors per data set, the rank correlation of strategies, the memory fit table and
the error bands; ``--json``, ``--write-bands``).

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
        report = evaluate_dict(data)
    except ScenarioError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    json.dump(report, sys.stdout, indent=args.indent)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
