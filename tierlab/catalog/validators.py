"""Checks on catalog spec JSON: quantities with a unit in their key are never negative."""

import math
import re

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator

# Engine keys (`*_bytes`, `*_bytes_per_s`, `*_flops*`) and the raw catalog's unit keys
# (`hbm_gb`, `bw_gbps_unidir`, `bf16_tflops`, ...).
QUANTITY_KEY = re.compile(r"(^|_)(bytes|flops|tflops|tops|gb|gib|tb|tib|pb|mb|gbps|tbps|gbit)(_|$)")

slug_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9._-]*$",
    "Use lowercase letters, digits, '.', '-' and '_' (for example llama2-70b or gpt3-6.7b).",
)


def bad_quantities(spec, path: str = "") -> list[str]:
    """Dotted paths of quantity keys whose value is negative or not finite."""
    found = []
    if isinstance(spec, dict):
        for key, value in spec.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(value, (dict, list)):
                found += bad_quantities(value, where)
            elif (QUANTITY_KEY.search(str(key)) and isinstance(value, (int, float))
                  and not isinstance(value, bool) and not (math.isfinite(value) and value >= 0)):
                found.append(where)
    elif isinstance(spec, list):
        for i, value in enumerate(spec):
            found += bad_quantities(value, f"{path}[{i}]")
    return found


# Rates must be above zero (the engine divides by them); sizes may be zero (no such tier).
RATE_KEY = re.compile(r"(^|_)(per_s|flops|tflops|tops|gbps|tbps|gbit)(_|$)")


def _value_at(spec, path: str):
    node = spec
    for step in re.split(r"\.|\[(\d+)\]", path):
        if step is None or step == "":
            continue
        node = node[int(step)] if isinstance(node, list) else node[step]
    return node


def quantity_message(key: str, value) -> str:
    """What is wrong with a bad quantity, in the engine's words (``simulation.fields``), so a
    zero and a negative rate read alike: "must be > 0, got -5"."""
    if not (isinstance(value, (int, float)) and math.isfinite(value)):
        return f"must be a finite number, got {value}"
    return f"must be {'>' if RATE_KEY.search(key) else '>='} 0, got {value:g}"


def validate_spec(spec, field: str = "spec") -> None:
    """Raise ValidationError({field: ...}) for a non-object spec or a negative quantity."""
    if not isinstance(spec, dict):
        raise ValidationError({field: "must be a JSON object"})
    bad = bad_quantities(spec)
    if bad:
        raise ValidationError({field: [f"{field}.{p}: {quantity_message(p.rsplit('.', 1)[-1], _value_at(spec, p))}"
                                       for p in bad]})
