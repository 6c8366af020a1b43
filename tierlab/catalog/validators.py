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


def validate_spec(spec, field: str = "spec") -> None:
    """Raise ValidationError({field: ...}) for a non-object spec or a negative quantity."""
    if not isinstance(spec, dict):
        raise ValidationError({field: "must be a JSON object"})
    bad = bad_quantities(spec)
    if bad:
        raise ValidationError({field: [f"{p}: must be a finite number >= 0" for p in bad]})
