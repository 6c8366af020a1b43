"""Human-readable units for messages. Numbers in reports stay in SI base units."""

GB = 1e9
GIB = 2**30


def fmt_bytes(n: float) -> str:
    """``85.1 GB (79.3 GiB)``: decimal first, binary in brackets, both labelled."""
    if abs(n) >= 1e12:
        return f"{n / 1e12:.2f} TB ({n / 2**40:.2f} TiB)"
    return f"{n / GB:.1f} GB ({n / GIB:.1f} GiB)"
