"""Field checks shared by every scenario section: each names the dotted field it rejects.

``d`` is the section (a dict), ``key`` the field, ``path`` the section's dotted path;
every helper returns the value (or the default) or raises :class:`ScenarioError`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import sys
import unicodedata

from .errors import ScenarioError

def _where(path: str, key: str) -> str:
    """The dotted field: ``training.seq_len``, or ``convention`` at the top level."""
    return f"{path}.{key}" if path else key


# Characters a message shows as JSON escapes (\\uXXXX) rather than as themselves: control
# characters (Cc), format characters (Cf: bidi overrides, zero-width ones), lone surrogates
# (Cs, which UTF-8 cannot encode), private use (Co) and the line / paragraph separators.
_ESCAPED_CATEGORIES = frozenset(("Cc", "Cf", "Cs", "Co", "Zl", "Zp"))


def _escape(ch: str) -> str:
    if unicodedata.category(ch) not in _ESCAPED_CATEGORIES:
        return ch
    return json.dumps(ch)[1:-1]          # ensure_ascii's escape (a surrogate pair past U+FFFF)


def show(v) -> str:
    """A value as the user wrote it in JSON (true, null, "text"), for messages. Letters,
    marks, symbols and emoji of any script are shown as themselves ("ллама-🦙", not
    "\\u043b..."); the characters of :data:`_ESCAPED_CATEGORIES` stay escaped."""
    try:
        text = json.dumps(v, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(v)
    if not text.isascii():
        text = "".join(map(_escape, text))
    return text if len(text) <= 80 else text[:79] + "…"      # a 100 kB name is not echoed


def finite(v) -> bool:
    """``math.isfinite`` for any JSON number: an integer past float's range (JSON allows
    4,300 digits) is not finite rather than an OverflowError."""
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def number_text(v) -> str:
    """A number for a message: whole numbers with thousands separators up to 1e15, else three
    significant digits ("1e+309" for an integer of 310 digits, past float's range)."""
    if isinstance(v, int) and not isinstance(v, bool):
        if -1e15 < v < 1e15:
            return f"{v:,}"
        if not finite(v):
            digits = len(str(abs(v)))
            return f"{'-' if v < 0 else ''}1e+{digits - 1} (an integer of {digits} digits)"
        return f"{float(v):.3g}"
    return f"{v:g}" if isinstance(v, float) else show(v)


# The largest whole number a field without a bound of its own takes: far beyond any count the
# engine reads (layers, heads, GPUs, tokens), and short enough to print in a message.
INT_CEILING = 10 ** 15


def int_field(d: dict, key: str, path: str, default=None, minimum: int = 1, required=False,
              maximum: int | None = None):
    v = d.get(key)
    if v is None:                         # absent or null: the default
        v = default
    if maximum is None:
        maximum = INT_CEILING
    if type(v) is int and minimum <= v <= maximum:
        return v                          # the common case, checked first: same result
    if v is None:
        if required:
            raise ScenarioError(_where(path, key), "is required")
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or isinstance(v, float) and (
            not math.isfinite(v) or v != int(v)):
        raise ScenarioError(_where(path, key), f"must be a whole number, got {show(v)}")
    v = int(v)
    if v < minimum:
        raise ScenarioError(_where(path, key), f"must be at least {minimum}, got {number_text(v)}")
    if v > maximum:                             # not 1e308's 309 digits
        raise ScenarioError(_where(path, key), f"must be at most {maximum:,}, got {number_text(v)}")
    return v


_FMAX = sys.float_info.max     # past it an int has no float (OverflowError)


# The smallest positive value a field that must be > 0 (or >= 0) takes: each is a size,
# rate, time or share in SI units, and one of 1e-300 (a NIC of 1e-300 B/s) made a step
# time infinite, which no JSON report can hold. At 1e-12 quotients stay finite. ``tiny``
# False for a field that is none of these (a Zipf exponent).
TINY = 1e-12


def num_field(d: dict, key: str, path: str, default=None, minimum: float = 0.0, strict=False,
         maximum: float | None = None, tiny: bool = True):
    v = d.get(key)
    if v is None:                         # absent or null: the default
        v = default
    if v is None:
        return None
    t = type(v)
    if (t is float or t is int) and -_FMAX <= v <= _FMAX and (v > minimum or (
            v == minimum and not strict)) and (maximum is None or v <= maximum) and (
            v >= 1e-12 or minimum != 0 or not tiny or (v == 0 and not strict)):
        return float(v)                   # the common case, checked first (1e-12 is TINY)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ScenarioError(_where(path, key), f"must be a finite number, got {show(v)}")
    if not finite(v):
        if maximum is not None and isinstance(v, int) and v > 0:
            raise ScenarioError(_where(path, key), f"must be <= {maximum:g}, got {number_text(v)}")
        raise ScenarioError(_where(path, key), f"must be a finite number, got {number_text(v)}")
    if v < minimum or (strict and v == minimum):
        op = ">" if strict else ">="
        raise ScenarioError(_where(path, key), f"must be {op} {minimum:g}, got {number_text(v)}")
    if tiny and minimum == 0 and 0 < v < TINY:
        raise ScenarioError(_where(path, key), ("must be at least" if strict else "must be 0 or at least")
                            + f" {TINY:g} (a size, rate, time or share this small is out of range), "
                            f"got {number_text(v)}")
    if maximum is not None and v > maximum:
        raise ScenarioError(_where(path, key), f"must be <= {maximum:g}, got {number_text(v)}")
    return float(v)


def bool_field(d: dict, key: str, path: str, default: bool):
    v = d.get(key, default)
    if v is True or v is False:
        return v
    if not isinstance(v, bool):
        raise ScenarioError(_where(path, key), f"must be true or false, got {show(v)}")
    return v


def choice_field(d: dict, key: str, path: str, choices, default):
    v = d.get(key, default)
    if v is True or v is False or v not in choices:
        shown = ", ".join("null" if c is None else str(c) for c in choices)
        raise ScenarioError(_where(path, key), f"must be one of {shown}; got {show(v)}")
    return v


def str_field(d: dict, key: str, path: str, default=None):
    v = d.get(key, default)
    if v is not None and not isinstance(v, str):
        raise ScenarioError(_where(path, key), f"must be a string, got {show(v)}")
    return v


MAX_NAME_CHARS = 200      # a name's length cap: the API's own for a scenario's name (Scenario.name)


def name_field(d: dict, key: str, path: str, default=None):
    """A name (a string, as :func:`str_field`) of at most :data:`MAX_NAME_CHARS` characters:
    it is stored with the scenario and shown in titles and reports."""
    v = str_field(d, key, path, default)
    if v is not None and len(v) > MAX_NAME_CHARS:
        raise ScenarioError(_where(path, key), f"must be at most {MAX_NAME_CHARS} characters, "
                                               f"got {len(v):,}")
    return v


def section(d: dict, key: str, path: str = "") -> dict:
    v = d.get(key, {})
    where = _where(path, key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ScenarioError(where, f"must be an object, got {type(v).__name__}")
    return v


def no_unknown(d: dict, allowed, path: str):
    for k in d:
        if k not in allowed:
            raise ScenarioError(f"{path}.{k}" if path else k,
                                f"unknown field; known fields: {', '.join(sorted(allowed))}")


def drop_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def made_once(obj, make) -> dict:
    """``make(obj)``, made once per frozen, shared object (kept on it as a cache, not a
    field) and handed out as a shallow copy, so a caller may change what it gets."""
    made = obj.__dict__.get("_as_dict")
    if made is None:
        made = make(obj)
        object.__setattr__(obj, "_as_dict", made)
    return made.copy()


@functools.cache
def field_names(cls) -> frozenset:
    """The names of a dataclass's fields, computed once per class (``dataclasses.fields``
    builds its tuple anew on every call)."""
    return frozenset(f.name for f in dataclasses.fields(cls))


def frozen_new(cls, fields: dict):
    """An instance of the frozen dataclass ``cls`` with ``fields`` (every field of it, or
    the rest at their defaults), made without its ``__init__``: a frozen ``__init__`` sets
    each field through ``object.__setattr__``, 8x the cost of filling ``__dict__`` (4.7 us
    against 0.6 us for TrainingSpec's 26 fields). Only for classes with no
    ``__post_init__``; a field without a plain default (a required one, or one with a
    ``default_factory``) must be in ``fields``. The instance equals ``cls(**fields)``
    (``tests/engine/test_scenario_fast.py``)."""
    obj = object.__new__(cls)
    d = obj.__dict__
    d.update(_defaults(cls))
    d.update(fields)
    return obj


@functools.cache
def _defaults(cls) -> dict:
    """Every field of ``cls`` with its default (MISSING for a required one), in order."""
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"frozen_new would skip {cls.__name__}.__post_init__")
    return {f.name: f.default for f in dataclasses.fields(cls)}


def plain(obj) -> dict:
    """Shallow field dict (dataclasses.asdict deep-copies, which is slow here). A
    dataclass instance holds its fields in ``__dict__`` in field order (``__init__`` and
    :func:`frozen_new` set them so); with nothing else there, that is the dict."""
    d = obj.__dict__
    names = obj.__dataclass_fields__
    if len(d) == len(names):
        return d.copy()
    return {name: getattr(obj, name) for name in names}


def given(obj) -> dict:
    """``drop_none(plain(obj))`` in one pass: the fields that are not None, in order."""
    d = obj.__dict__
    if len(d) == len(obj.__dataclass_fields__):
        return {k: v for k, v in d.items() if v is not None}
    return drop_none(plain(obj))
