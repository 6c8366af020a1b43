"""Human-readable units for messages. Numbers in reports stay in SI base units."""

GB = 1e9
GIB = 2**30


def plural(n: float, one: str, many: str | None = None) -> str:
    """``1 GPU``, ``8 GPUs``, ``1,024 GPUs``: a count with its noun, plural unless the count
    is 1 (``many`` for an irregular plural; default ``one + "s"``)."""
    shown = f"{n:,}" if isinstance(n, int) else f"{n:,g}"
    return f"{shown} {one if n == 1 else (many or one + 's')}"


def fmt_bytes(n: float) -> str:
    """``85.1 GB (79.3 GiB)``, ``30.72 TB (27.94 TiB)``, ``22,528.56 PB (20,009.38 PiB)``:
    decimal first, binary in brackets, both labelled, scaled to the size, with thousands
    separators."""
    if abs(n) >= 1e15:
        return f"{n / 1e15:,.2f} PB ({n / 2**50:,.2f} PiB)"
    if abs(n) >= 1e12:
        return f"{n / 1e12:,.2f} TB ({n / 2**40:,.2f} TiB)"
    return f"{n / GB:,.1f} GB ({n / GIB:,.1f} GiB)"
