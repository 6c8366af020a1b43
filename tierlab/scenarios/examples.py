"""The example scenarios shipped in examples.json (used by `seed` and the form page)."""

import json
from functools import cache
from pathlib import Path

EXAMPLES_FILE = Path(__file__).resolve().parent / "examples.json"


@cache
def _load() -> tuple:
    return tuple(json.loads(EXAMPLES_FILE.read_text()))


def examples() -> list[dict]:
    """``[{"name": ..., "scenario": {...}}, ...]`` (fresh copies)."""
    return json.loads(json.dumps(_load()))
