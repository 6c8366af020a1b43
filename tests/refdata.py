"""Published reference cases (copied from the project's sourced data; see data/reference/README.md).

Each case is ``{id, source, inputs, expected, tolerance, note}``; a value passes when
``|actual - expected| <= max(abs, rel * |expected|)``.
"""

import json
from pathlib import Path

REF = Path(__file__).parent / "data" / "reference"


def cases(name: str, prefix: str = "") -> list[dict]:
    data = json.loads((REF / f"{name}.json").read_text())
    return [c for c in data["cases"] if c["id"].startswith(prefix)]


def ids(cs):
    return [c["id"] for c in cs]


def assert_close(actual: float, expected: float, tol: dict, what: str = ""):
    allowed = max(tol.get("abs", 0) or 0, (tol.get("rel", 0) or 0) * abs(expected))
    assert abs(actual - expected) <= allowed, (
        f"{what}: got {actual!r}, expected {expected!r} (allowed +/- {allowed:g})")
