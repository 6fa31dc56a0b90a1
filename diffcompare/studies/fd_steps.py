"""Finite differences: error against step size, the classic V (and the complex step's flat line).

Every finite-difference method differentiates Squire & Trapp's f(x) = eˣ/√(sin³x + cos³x)
at x = 1.5 with absolute steps h = 10⁻ᵏ, k = 1..20 (``relative=False``), dividing by the
nominal h (``exact_step=False``: the textbook formula, which returns 0 once x + h rounds
to x), in float64 and in float32.  The error is relative to SymPy's exact derivative
evaluated at 50 digits.  ``step_taken`` records the step the arithmetic really takes,
``(x + h) - x`` in the row's dtype (0 once x + h rounds to x; in float32 at x = 1.5 a
multiple of 2⁻²³·1 ≈ 1.2e-7, so h = 1e-7 is really 1.19e-7).

Left of its bottom, a finite-difference curve is rounding noise: its exact values depend on
the last bits of the CPU's libm (float32 especially), so one lucky point can undercut the
true bottom.  The checks therefore locate each V's bottom on its *3-step envelope* (the
largest error among a step and its two neighbouring decades, :func:`v_bottoms`), which no
single lucky point can move.

Rows: ``method, dtype, k, h, step_taken, gradient, exact, rel_error, abs_error, status, message``.

>>> import diffcompare.studies.fd_steps as s
>>> df = s.run(quick=True)                                # doctest: +SKIP
>>> df.query("dtype == 'float64'").groupby("method").rel_error.min()   # doctest: +SKIP
"""
from __future__ import annotations

import math

import numpy as np

from .common import Finding, View, fmt, high_precision_derivatives, no_data, within_decade

NAME = "fd_steps"
TITLE = "Finite differences: error versus step size"
EXPECTED = (
    "Forward differences err by truncation h|f''|/2 plus rounding ~eps|f|/h, so their error "
    "against h is a V whose bottom is ~sqrt(eps) ≈ 1e-8 at h ≈ sqrt(eps) ≈ 1e-8; central "
    "differences (truncation h²|f'''|/6) bottom out at ~eps^(2/3) ≈ 1e-10 near h ≈ eps^(1/3) ≈ "
    "1e-5; Richardson extrapolation (order 6) reaches ≲ 1e-12 at a large step (h ≈ 1e-3..1e-1). "
    "The complex step subtracts nothing, so it has no rounding term and no V: its error falls "
    "as h² until it reaches eps ≈ 1e-16 (at h ≈ 1e-8 here) and stays there for every smaller h, "
    "down to 1e-20. In float32 (eps ≈ 1.2e-7) the rounding term is ~5e8 times larger, so the "
    "bottom of each V moves to a larger h and a larger error; below the bottom the float32 curve "
    "is rounding noise whose exact values differ between CPUs, so every bottom is located on the "
    "curve's 3-step envelope, never on a single point. Each check allows an order of magnitude.")

PROBLEM = "squire_trapp"
POINT = 1.5
METHODS = ("fd-forward", "fd-central", "fd-complex-step", "fd-richardson")
DTYPES = ("float64", "float32")
EXPONENTS = tuple(range(1, 21))
DIGITS = 50
REFERENCE_LABEL = f"sympy exact derivative @ {DIGITS} digits (mpmath)"

# (textbook error minimum, step at the minimum) in float64, as in EXPECTED
TEXTBOOK = {"fd-forward": (1e-8, 1e-8), "fd-central": (1e-10, 1e-5)}


def _inputs(problem):
    """The problem's size-1 input if it is x = 1.5, else x = 1.5 built directly."""
    x, = problem.inputs(1)
    if np.shape(x) != (1,) or float(x[0]) != POINT:
        x = np.array([POINT])
    return (x,)


def run(out_dir=None, quick: bool = False):
    """The error-versus-step table (``quick`` changes nothing: the whole sweep takes < 1 s)."""
    import mpmath
    import pandas as pd

    from .. import backends, problems

    problem = problems.get(PROBLEM)
    inputs = _inputs(problem)
    exact = high_precision_derivatives(problem, inputs, orders=(1,), digits=DIGITS)[1][0]
    model = error_model(problem)
    rows = []
    for method in METHODS:
        for dtype in DTYPES:
            for k in EXPONENTS:
                h = 10.0 ** -k
                m = model.get(method, {}) if dtype == "float64" else {}
                x0 = np.asarray(inputs[0], dtype=dtype).reshape(-1)[0]
                step_taken = float((x0 + np.asarray(h, dtype=dtype)) - x0)
                row = {"method": method, "dtype": dtype, "k": k, "h": h, "x": POINT,
                       "step_taken": step_taken,
                       "exact": float(exact), "reference": REFERENCE_LABEL,
                       "model_best_h": m.get("h", math.nan), "model_best_error": m.get("error", math.nan)}
                try:
                    backend = backends.get(method, step=h, relative=False, dtype=dtype,
                                           exact_step=False)
                    g, = backends.compute_gradient(backend, problem, inputs)
                    value = float(np.asarray(g).reshape(-1)[0])
                    with mpmath.workdps(DIGITS):
                        err = abs(mpmath.mpf(value) - exact)
                        row.update(gradient=value, abs_error=float(err),
                                   rel_error=float(err / abs(exact)), status="ok", message=None)
                except Exception as exc:          # a failed step is a row, not a lost sweep
                    row.update(gradient=math.nan, abs_error=math.nan, rel_error=math.nan,
                               status="error", message=f"{type(exc).__name__}: {exc}")
                rows.append(row)
    return pd.DataFrame(rows, columns=["method", "dtype", "k", "h", "x", "step_taken", "gradient", "exact",
                                       "abs_error", "rel_error", "status", "message", "reference",
                                       "model_best_h", "model_best_error"])


# --- checks -----------------------------------------------------------------------------

def _curve(df, method, dtype):
    c = df[(df.method == method) & (df.dtype == dtype) & (df.status == "ok")]
    return c.sort_values("h", ascending=False)


def _minimum(curve):
    """(h, error) at the bottom of the V: the step whose 3-step envelope is least."""
    errors = curve.rel_error.astype(float).to_numpy()
    envelope = np.array([errors[max(i - 1, 0):i + 2].max() for i in range(len(errors))])
    i = int(np.argmin(envelope))
    return float(curve.h.iloc[i]), float(errors[i])


def v_bottoms(df):
    """Each (method, dtype) curve's V bottom, on its 3-step envelope, beside its least error.

    Columns ``method, dtype, h, error`` (the bottom: the step whose largest error among
    itself and its neighbouring decades is least, and the error there) and ``least_h,
    least_error`` (the single smallest point, which left of the bottom can be rounding luck).

    >>> import pandas as pd
    >>> df = pd.DataFrame({"method": "m", "dtype": "float32", "status": "ok",
    ...                    "h": [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7],
    ...                    "rel_error": [1e-1, 1e-3, 1e-4, 1e-3, 1e-2, 1e-6, 1e-1]})  # 1e-6: luck
    >>> v_bottoms(df)[["h", "error", "least_h"]].values.tolist()
    [[0.001, 0.0001, 1e-06]]
    """
    import pandas as pd

    rows = []
    for (method, dtype), _ in df[df.status == "ok"].groupby(["method", "dtype"], sort=False):
        curve = _curve(df, method, dtype)
        curve = curve[curve.rel_error.notna()]
        if curve.empty:
            continue
        h, e = _minimum(curve)
        i = curve.rel_error.astype(float).idxmin()
        rows.append({"method": method, "dtype": dtype, "h": h, "error": e,
                     "least_h": float(curve.loc[i, "h"]), "least_error": float(curve.loc[i, "rel_error"])})
    return pd.DataFrame(rows, columns=["method", "dtype", "h", "error", "least_h", "least_error"])


def bars(df):
    """The float32-against-float64 figure's rows: each curve's V bottom (:func:`v_bottoms`),
    ``method, dtype, h, best_error``."""
    return v_bottoms(df).rename(columns={"error": "best_error"})


#: What the report shows of this study (recorded with it: :func:`diffcompare.studies.record_views`).
FIGURES = (View("fd-steps", "Relative error against step h, float64 (left) and float32 (right).",
                plot="fd_steps"),
           View("float32-vs-float64", "Smallest error each finite-difference method reaches over all "
                "steps, per dtype (fd_steps study).", plot="float_dtype_bars", data=bars))


def _error_at(curve, h):
    hit = curve[np.isclose(curve.h.astype(float), h, rtol=1e-9)]
    return float(hit.rel_error.iloc[0]) if len(hit) else math.nan


def check(df) -> list:
    findings = []
    eps = float(np.finfo(np.float64).eps)

    # float64: the V of forward and central differences, at the textbook place
    for method, (e_target, h_target) in TEXTBOOK.items():
        name = f"{method} float64 minimum"
        expected = (f"error at the V's bottom ≈ {fmt(e_target)} (within 10x) at h ≈ {fmt(h_target)} "
                    "(within 10x), rising again for smaller h (the V)")
        curve = _curve(df, method, "float64")
        if curve.empty:
            findings.append(no_data(name, expected, f"no successful {method} rows"))
            continue
        h_min, e_min = _minimum(curve)
        tail = curve[curve.h < h_min / 100].rel_error.astype(float)
        rises = bool(len(tail) and tail.max() >= 100 * e_min)
        model = ""
        if "model_best_h" in curve and np.isfinite(curve.model_best_h.iloc[0]):
            model = (f" (the error model from f and its 2nd and 3rd derivatives at x predicts "
                     f"{fmt(curve.model_best_error.iloc[0])} at h = {fmt(curve.model_best_h.iloc[0])})")
        findings.append(Finding(
            name, expected,
            f"bottom error {fmt(e_min)} at h = {fmt(h_min)}{model}; largest error at h < h*/100: "
            f"{fmt(tail.max() if len(tail) else math.nan)}",
            within_decade(e_min, e_target) and within_decade(h_min, h_target) and rises))

    # Richardson: high order, so its best step is large
    curve = _curve(df, "fd-richardson", "float64")
    expected = "error at the V's bottom ≈ 1e-12 (≤ 1e-11) at a large step, 1e-3 ≤ h ≤ 1e-1"
    if curve.empty:
        findings.append(no_data("fd-richardson float64 minimum", expected, "no rows"))
    else:
        h_min, e_min = _minimum(curve)
        findings.append(Finding("fd-richardson float64 minimum", expected,
                                f"bottom error {fmt(e_min)} at h = {fmt(h_min)}",
                                e_min <= 1e-11 and 1e-3 <= h_min <= 1e-1))

    # complex step: no rounding term, no V
    curve = _curve(df, "fd-complex-step", "float64")
    expected = (f"error ≤ 10 eps = {fmt(10 * eps)} for every h ≤ 1e-8 down to 1e-20 (flat, no V); "
                "at h = 1e-5 still the O(h²) truncation, ~1e-10")
    if curve.empty:
        findings.append(no_data("fd-complex-step float64 flat", expected, "no rows"))
    else:
        small = curve[curve.h <= 1e-8 * (1 + 1e-9)].rel_error.astype(float)
        complete = len(small) == sum(1 for k in EXPONENTS if k >= 8)
        findings.append(Finding(
            "fd-complex-step float64 flat", expected,
            f"max error over h ≤ 1e-8: {fmt(small.max())} ({len(small)} steps, median "
            f"{fmt(small.median())}); error at h = 1e-5: {fmt(_error_at(curve, 1e-5))}",
            complete and small.max() <= 10 * eps))

    # float32 against float64: where the V's bottom sits, and how deep it is
    for method in ("fd-forward", "fd-central", "fd-richardson"):
        name = f"{method} float32 vs float64"
        expected = ("float32's V bottom (on the 3-step envelope) sits at a larger step, with an error "
                    "at least 100x float64's; left of it float32 is rounding noise")
        c64, c32 = _curve(df, method, "float64"), _curve(df, method, "float32")
        if c64.empty or c32.empty:
            findings.append(no_data(name, expected, "missing rows"))
            continue
        (h64, e64), (h32, e32) = _minimum(c64), _minimum(c32)
        lucky = c32.loc[c32.rel_error.astype(float).idxmin()]
        noise = (f"; float32's single least point, {fmt(lucky.rel_error)} at h = {fmt(lucky.h)}, is "
                 "rounding luck" if float(lucky.h) < h32 else "")
        findings.append(Finding(name, expected,
                                f"float32 bottom: {fmt(e32)} at h = {fmt(h32)}; float64 bottom: {fmt(e64)} "
                                f"at h = {fmt(h64)}{noise}",
                                h32 > h64 and e32 >= 100 * e64))
    c64, c32 = _curve(df, "fd-complex-step", "float64"), _curve(df, "fd-complex-step", "float32")
    expected = "float32's flat error level (median over h ≤ 1e-8) is ~eps32 ≈ 1e-7, far above float64's"
    if c64.empty or c32.empty:
        findings.append(no_data("fd-complex-step float32 vs float64", expected, "missing rows"))
    else:
        p64 = float(c64[c64.h <= 1e-8 * (1 + 1e-9)].rel_error.median())
        p32 = float(c32[c32.h <= 1e-8 * (1 + 1e-9)].rel_error.median())
        findings.append(Finding("fd-complex-step float32 vs float64", expected,
                                f"float32 median {fmt(p32)}; float64 median {fmt(p64)}",
                                p32 > 100 * max(p64, eps / 10) and p32 <= 1e-5))
    return findings


def error_model(problem=None, digits: int = 30) -> dict:
    """The textbook optimum of forward and central differences from f, f'', f''' at x:
    forward h* = 2 sqrt(eps|f|/|f''|), error* = 2 sqrt(eps|f||f''|)/|f'|;
    central h* = (3 eps|f|/|f'''|)^(1/3), error* = 1.5 eps|f|/(h*|f'|)."""
    from .. import problems

    problem = problem or problems.get(PROBLEM)
    d = high_precision_derivatives(problem, _inputs(problem), orders=(0, 1, 2, 3), digits=digits)
    f, f1, f2, f3 = (abs(float(d[o][0])) for o in (0, 1, 2, 3))
    eps = float(np.finfo(np.float64).eps)
    hf = 2 * math.sqrt(eps * f / f2)
    hc = (3 * eps * f / f3) ** (1 / 3)
    return {"fd-forward": {"h": hf, "error": 2 * math.sqrt(eps * f * f2) / f1},
            "fd-central": {"h": hc, "error": 1.5 * eps * f / (hc * f1)}}
