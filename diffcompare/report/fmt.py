"""Numbers for the report: seconds, bytes (the package's one formatter of each,
:mod:`diffcompare.units`), errors, ratios, steps and counts, as text.

They return plain strings; the templates escape every string they print (Jinja2's
autoescaping), so names from user-defined problems cannot inject markup.

>>> fmt_seconds(3.2e-6), fmt_seconds(0.0123), fmt_seconds(None)
('3.2 µs', '12.3 ms', '—')
>>> fmt_bytes(1536), fmt_bytes(40)
('1.5 KiB', '40 B')
>>> fmt_error(0.0), fmt_error(3.25e-11)
('0', '3.2e-11')
>>> fmt_ratio(5.66), fmt_ratio(57081087.0)
('5.66×', '57,000,000×')
"""
from __future__ import annotations

import math

from ..units import MISSING as DASH
from ..units import fmt_bytes, fmt_seconds


def is_missing(x) -> bool:
    """None, NaN, pandas NA: anything that is not a number to print."""
    if x is None:
        return True
    try:
        return bool(x != x) or math.isnan(float(x))
    except (TypeError, ValueError):
        return False


def fmt_error(x) -> str:
    """A relative error or rho: ``0`` when exact, else two significant digits."""
    if is_missing(x):
        return DASH
    x = float(x)
    if x == 0:
        return "0"
    if math.isinf(x):
        return "inf"
    return f"{x:.1e}" if abs(x) < 1e-2 or abs(x) >= 1e3 else f"{x:.2g}"


def fmt_num(x, digits: int = 3) -> str:
    """A plain number: ``1.5e-08``, ``3.14``, ``12000``."""
    if is_missing(x):
        return DASH
    x = float(x)
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e6):
        return f"{x:.{digits - 1}e}"
    if float(x).is_integer() and abs(x) < 1e6:
        return str(int(x))
    return f"{x:.{digits}g}"


def fmt_ratio(x) -> str:
    if is_missing(x):
        return DASH
    x = float(x)
    if math.isinf(x):
        return "∞"
    if x >= 1000:                       # two significant digits, written out: 57,000,000×
        return f"{float(f'{x:.2g}'):,.0f}×"
    return f"{x:.3g}×"


def fmt_step(h) -> str:
    """A step size: ``1e-08``, ``0.01``."""
    return DASH if is_missing(h) else f"{float(h):.3g}"


def fmt_count(x) -> str:
    if is_missing(x):
        return DASH
    x = float(x)
    if math.isinf(x):
        return "never"
    return f"{x:,.0f}" if x >= 1 else f"{x:.2g}"


def shorten(text, limit: int = 160) -> str:
    """The first line of ``text``, cut to ``limit`` characters (with an ellipsis)."""
    if text is None:
        return ""
    line = str(text).strip().splitlines()[0] if str(text).strip() else ""
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
