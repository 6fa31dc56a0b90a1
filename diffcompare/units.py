"""Bytes and seconds written for people: the one formatter of each, used everywhere (the
report's tables and axes, the engine's graph summaries, the studies' sentences).

Depends on nothing, so every layer may import it.

>>> fmt_bytes(40), fmt_bytes(1536), fmt_bytes(3 * 2**30), fmt_bytes(None)
('40 B', '1.5 KiB', '3.0 GiB', '—')
>>> fmt_bytes(4096, digits=3), fmt_bytes(1536, digits=3)        # an axis: significant digits
('4 KiB', '1.5 KiB')
>>> fmt_seconds(3.2e-6), fmt_seconds(0.0123), fmt_seconds(2500), fmt_seconds(float("nan"), missing="")
('3.2 µs', '12.3 ms', '2,500 s', '')
>>> fmt_seconds(0.9999999)                                       # no "1e+03 ms"
'1 s'
"""
from __future__ import annotations

import math

MISSING = "—"
_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
_SECOND_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


def _number(x):
    """``x`` as a float, or None for None, NaN, pandas NA and non-numbers."""
    if x is None:
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def fmt_bytes(n, missing: str = MISSING, digits: int | None = None) -> str:
    """``n`` bytes in binary units: ``40 B``, ``1.5 KiB`` (one decimal), or with ``digits``
    significant digits (``4 KiB``, for an axis); ``missing`` for no number."""
    n = _number(n)
    if n is None:
        return missing
    for unit in _BYTE_UNITS:
        if abs(n) < 1024 or unit == _BYTE_UNITS[-1]:
            break
        n /= 1024
    if unit == "B":
        return f"{n:.0f} B" if digits is None else f"{n:.{digits}g} B"
    return f"{n:.1f} {unit}" if digits is None else f"{n:.{digits}g} {unit}"


def fmt_seconds(s, missing: str = MISSING) -> str:
    """``s`` seconds with three significant digits in s, ms, µs or ns (whole seconds from
    1,000 s on); ``missing`` for no number."""
    s = _number(s)
    if s is None:
        return missing
    if abs(s) >= 1000:
        return f"{s:,.0f} s"
    for unit, scale in _SECOND_UNITS:
        if abs(s) >= scale * 0.9995 or unit == "ns":       # 0.9999 s is "1 s", not "1e+03 ms"
            return f"{s / scale:.3g} {unit}"
    return f"{s:g} s"


__all__ = ["fmt_bytes", "fmt_seconds", "MISSING"]
