"""Template filters that show engine quantities with labelled display units."""

from django import template

register = template.Library()


def _four(x: float) -> str:
    """Four significant digits, never an exponent: 30.72, 989, 22,529."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def _si(value: float, unit: str) -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{_four(value / factor)} {prefix}{unit}"
    return f"{_four(value)} {unit}"


def _seconds(value: float) -> str:
    for factor, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if value >= factor:
            return f"{value / factor:.4g} {unit}"
    return f"{value * 1e9:.4g} ns"


def _gib(value: float) -> str:
    """GiB, or TiB / PiB from 1 TiB: 28,610.2 GiB reads as 27.94 TiB."""
    for factor, unit in ((2**50, "PiB"), (2**40, "TiB")):
        if abs(value) >= factor:
            return f"{value / factor:,.2f} {unit}"
    g = value / 2**30
    return f"{g:,.1f} GiB" if abs(g) >= 1 else f"{g:.3g} GiB"       # one precision per page


def format_quantity(key: str, value) -> str:
    """`hbm_capacity_bytes` 85e9 -> '85 GB (79.16 GiB)'; booleans as yes/no, prices in
    dollars; other values as they are."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not isinstance(value, (int, float)):
        return str(value)
    if key.startswith("price_usd_per_node_hour"):
        return f"${value:,.2f} per node-hour"
    if key.endswith("_bytes_per_s"):
        return _si(value, "B/s")
    if key.endswith("_bytes"):
        return f"{_si(value, 'B')} ({_gib(value)})"
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


# Units named inside a raw hardware key (bw_gbps_measured_d2h): the token -> its unit.
# Two-token units first. "gbps" in this catalog is gigabytes per second, "gbit_s" gigabits.
_HARDWARE_UNITS = (
    (("gib", "s"), "GiB/s"), (("gbit", "s"), "Gbit/s"), (("mbit", "s"), "Mbit/s"),
    (("mt", "s"), "MT/s"), (("gt", "s"), "GT/s"), (("usd", "per", "hr"), "$/h"),
    (("gbps",), "GB/s"), (("tbps",), "TB/s"), (("tflops",), "TFLOP/s"), (("tops",), "TOPS"),
    (("kiops",), "k IOPS"), (("gb",), "GB"), (("gib",), "GiB"), (("tb",), "TB"), (("tib",), "TiB"),
    (("pb",), "PB"), (("mb",), "MB"), (("kw",), "kW"), (("w",), "W"), (("ns",), "ns"),
    (("us",), "µs"), (("ms",), "ms"), (("pct",), "%"),
)


def hardware_unit(key: str) -> str | None:
    """The unit a raw catalog key names: ``bw_gbps_unidir`` -> "GB/s", ``nic_gbit_s`` ->
    "Gbit/s", ``hbm_gb`` -> "GB"; None for a count or a word (``drives``, ``cpu``)."""
    tokens = key.lower().split("_")
    for i in range(len(tokens)):
        for unit_tokens, unit in _HARDWARE_UNITS:
            if tuple(tokens[i:i + len(unit_tokens)]) == unit_tokens:
                return unit
    return None


def format_hardware(key: str, value) -> str:
    """A raw catalog figure with the unit its key names: ``bw_gbps_bidir`` 900 -> "900 GB/s"."""
    unit = hardware_unit(key)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and value and all(isinstance(v, (int, float)) for v in value):
        text = ", ".join(f"{v:,}" if isinstance(v, int) else f"{v:.6g}" for v in value)
    elif isinstance(value, (int, float)):
        text = f"{value:,}" if isinstance(value, int) else f"{value:,.6g}"
    else:
        return str(value)
    if unit is None:
        return text
    if unit == "$/h":
        return f"${text}/h"
    return f"{text}{unit}" if unit == "%" else f"{text} {unit}"


@register.filter
def hardware_items(specs) -> list[tuple[str, str]]:
    """A raw item's figures as (key, value with its unit) pairs, empty ones left out."""
    if not isinstance(specs, dict):
        return []
    return [(k, format_hardware(str(k), v)) for k, v in specs.items() if v is not None]


@register.filter
def spec_items(spec) -> list[tuple[str, str]]:
    """Flatten a spec dict to (dotted key, display value) pairs."""
    return list(_flatten(spec)) if isinstance(spec, dict) else []
