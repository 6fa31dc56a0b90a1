"""What every study shares: ``Finding``, ``View`` (a declared figure or table), the grid's cells
table, slopes and number formatting.

A ``Finding`` states one textbook expectation, the number measured, and whether the
expectation holds (``ok=None``: the study had no data to measure it, e.g. a backend
that is not installed or a suite that did not run the cells).

>>> f = Finding("forward minimum", "~1e-8 near h = 1e-8", "2.1e-08 at h = 1e-08", True)
>>> f.as_dict()["ok"]
True
>>> round(loglog_slope([1, 10, 100], [2, 20, 200]), 6)
1.0
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np


@dataclasses.dataclass
class Finding:
    """One checked expectation.

    ``name``: short label; ``expected``: the textbook expectation, with its tolerance;
    ``measured``: the numbers found; ``ok``: whether the expectation holds
    (``None`` when there was nothing to measure it on).
    """

    name: str
    expected: str
    measured: str
    ok: bool | None

    def __post_init__(self):
        if self.ok is not None:
            self.ok = bool(self.ok)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def __str__(self):
        mark = {True: "holds", False: "FAILS", None: "no data"}[self.ok]
        return f"[{mark}] {self.name}: expected {self.expected}; measured {self.measured}"


@dataclasses.dataclass(frozen=True)
class View:
    """A figure or a table a study declares (``FIGURES`` / ``TABLES``): what the report shows
    of it, recorded by the run so the report only reads it.

    ``key``: its name (the file ``studies/<study>.<key>.csv``); ``data``: ``frame ->
    DataFrame``, the rows it shows, computed from the study's rows when the study runs (None:
    the study's rows as they are); ``plot``: for a figure, the name of the report's plot that
    draws it (:data:`diffcompare.report.plots.PLOTS`); ``caption``: what it shows.
    """

    key: str
    caption: str = ""
    plot: str | None = None
    data: object = None

    def rows(self, frame):
        return frame if self.data is None else self.data(frame)


def no_data(name: str, expected: str, why: str) -> Finding:
    return Finding(name, expected, f"no data: {why}", None)


# --- numbers ------------------------------------------------------------------------

def fmt(x, digits: int = 2) -> str:
    """A number for a sentence: ``1.2e-08``, ``3.4``, ``inf``, ``nan``."""
    if x is None:
        return "n/a"
    try:
        x = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e4):
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits + 1}g}"


def loglog_slope(x, y) -> float:
    """Least-squares slope of log(y) against log(x) (NaN with fewer than 2 usable points)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if keep.sum() < 2 or np.ptp(np.log(x[keep])) == 0:
        return float("nan")
    return float(np.polyfit(np.log(x[keep]), np.log(y[keep]), 1)[0])


def upper_part(values, minimum: int = 3):
    """The larger half of the distinct ``values`` (sorted), but at least ``minimum`` of them."""
    v = sorted(set(values))
    k = max(minimum, (len(v) + 1) // 2)
    return v[-k:] if len(v) > k else v


def within_decade(measured: float, target: float) -> bool:
    """``measured`` within a factor of 10 of ``target`` (both positive)."""
    return bool(measured > 0 and target > 0 and abs(math.log10(measured / target)) <= 1.0)


# --- grid results -------------------------------------------------------------------

def cell_table(results):
    """One row per finished backend cell with its phases side by side (the results layer's
    :func:`diffcompare.results.cells.cells_table`, without cells that did not finish):
    ``prepare_s``, ``function_s``, ``gradient_s`` (median seconds), ``peak_bytes``,
    ``evaluations``, ``n_inputs``, ``error_rel``, ``error_rho``, ``reference``, ``expr_ops``,
    ``expr_ops_cse``, ``family``, and the cell's completion ``status``/``message``."""
    from ..results.cells import cells_table
    from ..results.schema import READER_STATUSES

    table = cells_table(results)
    return table[~table["status"].isin(list(READER_STATUSES))].reset_index(drop=True)


# --- high-precision derivatives ----------------------------------------------------

def high_precision_derivatives(problem, inputs, orders=(1,), digits: int = 50):
    """Exact derivatives of a scalar ``problem`` at ``inputs`` to ``digits`` digits.

    SymPy differentiates the expression built by ``problem.fn`` on the SymPy namespace,
    with every float (inputs and constants) taken as the exact binary fraction it
    stands for, and evaluates at ``digits`` digits.  Returns ``{order: [mpf per
    differentiated scalar]}``; orders above 1 are the pure second, third, ...
    derivatives along each coordinate (for error models of finite differences).
    """
    import mpmath
    import sympy

    from ..problems.symbolic import symbols_like, sympy_xp

    sym = symbols_like(inputs, problem.wrt, constants="numbers")
    out = np.asarray(problem.fn(sympy_xp, *sym.args), dtype=object).reshape(-1)
    if out.size != 1:
        raise ValueError(f"problem {problem.name!r} has a vector output; a scalar is needed here.")
    expr = sympy.sympify(out[0])
    expr = expr.xreplace({f: sympy.Rational(f) for f in expr.atoms(sympy.Float)})
    values = [v for i in problem.wrt for v in np.asarray(inputs[i], dtype=np.float64).reshape(-1)]
    point = {s: sympy.Rational(float(v)) for s, v in zip(sym.wrt_flat, values)}
    result = {}
    with mpmath.workdps(digits + 5):
        for order in orders:
            derivs = []
            for s in sym.wrt_flat:
                d = expr.diff(s, order) if order else expr
                derivs.append(mpmath.mpf(str(sympy.N(d, digits + 5, subs=point))))
            result[order] = derivs
    return result
