"""Typed readers for environment variables that fail loudly on bad values."""

import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str | None:
    """The variable's value, or ``default`` when unset or empty."""
    value = os.environ.get(name, "")
    return value if value != "" else default


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    low = value.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false, yes/no), got {value!r}")


def env_int(name: str, default: int, minimum: int | None = None) -> int:
    value = os.environ.get(name, "")
    if value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list; blanks are dropped."""
    value = os.environ.get(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_float(name: str, default: float, minimum: float | None = None) -> float:
    value = os.environ.get(name, "")
    if value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ImproperlyConfigured(f"{name} must be a finite number, got {value!r}")
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}")
    return number


def env_choice(name: str, default: str, choices: list[str]) -> str:
    """One of ``choices`` (compared case-sensitively, as the header or setting expects)."""
    value = os.environ.get(name, "")
    if value == "":
        return default
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


def env_required(name: str, why: str) -> str:
    """The variable's value; unset or empty stops startup with ``why`` in the message."""
    value = os.environ.get(name, "")
    if value.strip() == "":
        raise ImproperlyConfigured(f"{name} must be set {why}")
    return value


def env_rate(name: str, default: str | None) -> str | None:
    """A DRF throttle rate, ``<count>/<period>`` (period: second, minute, hour, day, or their
    first letter), or None for ``off``."""
    import re

    value = os.environ.get(name, "").strip()
    if value == "":
        return default
    if value.lower() in ("off", "none", "0"):
        return None
    if not re.fullmatch(r"[1-9][0-9]*/(s|m|h|d|sec|second|min|minute|hour|day)", value):
        raise ImproperlyConfigured(f"{name} must be <count>/<period> (e.g. 60/min; period s, min, "
                                   f"hour or day) or off, got {value!r}")
    return value
