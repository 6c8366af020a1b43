"""Template filters that show engine quantities with labelled display units."""

from django import template

register = template.Library()


def _si(value: float, unit: str) -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


def _seconds(value: float) -> str:
    for factor, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if value >= factor:
            return f"{value / factor:.4g} {unit}"
    return f"{value * 1e9:.4g} ns"


def format_quantity(key: str, value) -> str:
    """`hbm_capacity_bytes` 85e9 -> '85.15 GB (79.3 GiB)'; other values as they are."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if key.endswith("_bytes_per_s"):
        return _si(value, "B/s")
    if key.endswith("_bytes"):
        return f"{_si(value, 'B')} ({value / 2**30:.4g} GiB)"
    if "_flops" in key:
        return _si(value, "FLOP/s")
    if key.endswith("_s"):
        return _seconds(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:.6g}"


def _flatten(spec, prefix=""):
    for key, value in spec.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _flatten(value, f"{path}.")
        elif value is not None:
            yield path, format_quantity(str(key), value)


@register.filter
def spec_items(spec) -> list[tuple[str, str]]:
    """Flatten a spec dict to (dotted key, display value) pairs."""
    return list(_flatten(spec)) if isinstance(spec, dict) else []
