"""Accuracy of each method against the high-precision reference, from the grid's gradient rows.

One row per (problem, size, backend): ``error_rel``, ``error_rho`` (ρ = |x - y| / max(1, |x| + |y|),
maximum over the gradient's elements), the reference used, the method's class and the
range the textbook expects for it.  A finite difference subtracts two values of f, so its
rounding error is relative to |f|, not to the derivative: its upper bound is multiplied by
``kappa`` = max(1, |f(x)|) (Σ|c_j f_j| for a vector output with cotangent c), computed here
from the problem at the cell's inputs.  Checked on smooth problems (kinks have conventions, not
derivatives: see the ``kinks`` study) other than the ill-conditioned ones in
``ILL_CONDITIONED``, where every float64 method loses digits to the problem itself.  ``smooth``
is the problem's tag and the cell's inputs: a cell whose message carries the kink note (an
op evaluated exactly on its kink: ``problems.validity.at_kink``) is not smooth there.
"""
from __future__ import annotations

import numpy as np

from ..backends.registry import METHODS
from ..measure.accuracy import AGREEMENT_LABEL, EXTENDED_LABEL, agreement_members
from ..problems.validity import at_kink
from ..results.catalog import is_exact
from ..results.rounding import rounding_level
from ..results.schema import FAULT_STATUSES
from .common import Finding, cell_table, fmt, loglog_slope, no_data

#: the bound of a rounded class is this multiple of its cell's rounding level
ENVELOPE_FACTOR = 30

NAME = "accuracy"
TITLE = "Accuracy of each method against a high-precision reference"
EXPECTED = (
    "Exact methods (reverse mode, symbolic, hand-written) and the complex step are exact up to "
    "float64 rounding, and that rounding grows with the computation: a GMM's gradient sums "
    "10^4-10^5 terms and every library sums them in its own order. So each cell's bound is "
    f"{ENVELOPE_FACTOR:g} × its rounding level (the median ρ of the ≥ 3 exact methods that ran "
    "it), and never below 1e-13 (scaled by the dtype's eps): a correct method passes at every "
    "size, a wrong rule off by 1e-6 still fails. Finite differences are approximations whose "
    "error balances truncation against rounding at their default steps: central differences "
    "(h ≈ eps^(1/3)) err by ~eps^(2/3) ≈ 4e-11, so ρ ≤ 1e-7; forward differences (h ≈ eps^(1/2)) "
    "by ~eps^(1/2) ≈ 1.5e-8, so ρ ≤ 1e-5; Richardson extrapolation (order 6) ρ ≤ 1e-9 -- each "
    "times kappa = max(1, |f(x)|), because the rounding error of a difference of two f values "
    "is relative to |f|; being more accurate than that is luck, not a failure. The reference "
    "shares no float64 rounding with the methods it judges: SymPy at 50 digits where the "
    "problem is small enough, else the gradient program in long double. A reduced-precision "
    "method (TF32 matrix products on a GPU: a 10-bit mantissa, unit roundoff 2^-11 ≈ 4.9e-4) "
    "is exact AD with coarser products: ρ ≤ 1e-2 in every dtype, and it is not counted among "
    "the exact methods.")

#: float64 upper bound on ρ per accuracy class (``backends.registry.ACCURACY_CLASSES``, each
#: method's ``accuracy``): the floor of the rounded classes, times kappa for the
#: classes in SCALES_WITH_F
BOUNDS = {"exact": 1e-13, "complex-step": 1e-13, "central": 1e-7, "forward": 1e-5, "richardson": 1e-9,
          "reduced-precision": 1e-2}
SCALES_WITH_F = frozenset({"central", "forward", "richardson"})
#: classes exact up to rounding: bounded by the cell's rounding level, not by a model
ROUNDED = frozenset({"exact", "complex-step"})
#: classes whose bound holds in every dtype (the others' models are float64's): the rounded
#: ones, and reduced precision, whose bound is TF32's unit roundoff (2^-11 ≈ 4.9e-4) × 20
ANY_DTYPE = ROUNDED | {"reduced-precision"}
#: smooth problems whose own conditioning exceeds the bounds above in float64
ILL_CONDITIONED = {"logistic_map": "chaotic: d x_k/d x0 amplifies rounding like e^(0.35 k)"}
HIGH_PRECISION_DIGITS = 18
COLUMNS = ["problem", "size", "dtype", "n_inputs", "backend", "method_class", "status", "smooth",
           "checked", "error_rel", "error_rho", "reference", "kappa", "rounding_level", "bound",
           "bound_basis", "within"]


def method_class(backend: str, family=None):
    """The method's accuracy class (its description's ``accuracy``: None for a method with
    no bound, numdifftools); for a name that is not registered, ``"exact"`` when its
    ``family`` is exact (:func:`results.catalog.is_exact`), else None (not judged)."""
    method = METHODS.get(backend)
    if method is not None:
        return method.accuracy
    return "exact" if is_exact(family) else None


def function_scale(problem_name: str, size: int, seed: int = 0) -> float:
    """|f(x)| at the cell's inputs (Σ|c_j f_j| for a vector output); NaN if unknown."""
    from .. import problems

    try:
        problem = problems.get(problem_name)
        inputs = problem.inputs(int(size), int(seed))
        with np.errstate(all="ignore"):
            value = np.abs(np.asarray(problem.fn(np, *inputs), dtype=np.float64))
        c = problem.cotangent(int(size), int(seed))
        return float(np.sum(value * np.abs(c))) if c is not None else float(np.sum(value))
    except Exception:               # a problem this process cannot build: no scale
        return float("nan")


def _smooth(problem_name: str) -> bool:
    from .. import problems

    try:
        return problems.get(problem_name).smooth
    except KeyError:
        return True                 # a problem from an unknown module: judge it as smooth


def _eps_ratio(dtype) -> float:
    try:
        return float(np.finfo(np.dtype(str(dtype))).eps / np.finfo(np.float64).eps)
    except TypeError:
        return 1.0


def analyze(results):
    """One row per measured cell (and per cell that timed out, errored or crashed, with no ρ)."""
    import pandas as pd

    table = cell_table(results)
    if "dtype" not in table:
        table["dtype"] = "float64"
    table["dtype"] = table["dtype"].fillna("float64").astype(str)
    faults = table[table.status.isin(list(FAULT_STATUSES))]
    table = pd.concat([table.dropna(subset=["error_rho"]), faults], ignore_index=True)
    if table.empty:
        return pd.DataFrame(columns=COLUMNS)
    out = table[["problem", "size", "seed", "dtype", "n_inputs", "backend", "family", "status", "error_rel",
                 "error_rho", "reference", "message"]].copy()
    scales = {key: function_scale(*key) for key in set(zip(out.problem, out["size"], out.seed))}
    out["kappa"] = [max(1.0, scales[k]) if np.isfinite(scales[k]) else 1.0
                    for k in zip(out.problem, out["size"], out.seed)]
    out["method_class"] = [method_class(b, f) for b, f in zip(out.backend, out.family)]
    smooth = {p: _smooth(p) for p in set(out.problem)}
    out["smooth"] = out.problem.map(smooth) & ~out.pop("message").map(at_kink)
    measured = out.error_rho.notna()
    out["checked"] = (out.smooth & ~out.problem.isin(list(ILL_CONDITIONED)) & out.method_class.notna()
                      & measured & ((out.dtype == "float64") | out.method_class.isin(list(ANY_DTYPE))))
    out["rounding_level"] = _rounding_levels(out)
    bounds = [_bound(r) for r in out.itertuples()]
    out["bound"] = [b for b, _ in bounds]
    out["bound_basis"] = [basis for _, basis in bounds]
    out["within"] = (out.error_rho.astype(float) <= out.bound).where(out.checked)
    return out[COLUMNS].sort_values(["problem", "size", "backend"]).reset_index(drop=True)


def _rounding_levels(out) -> list:
    """Per row, its cell's rounding level (:func:`results.rounding.rounding_level`) over the
    exact methods measured there, leaving out the members of a float64 agreement reference
    (their ρ against their own agreement measures nothing)."""
    levels = {}
    for key, cell in out[out.error_rho.notna()].groupby(["problem", "size", "seed", "dtype"]):
        members = set(agreement_members(str(cell.reference.iloc[0])))
        judged = cell[~cell.backend.isin(members)]
        levels[key] = rounding_level(dict(zip(judged.backend, judged.error_rho)),
                                     dict(zip(judged.backend, judged.method_class == "exact")))
    return [levels.get(k, None) for k in zip(out.problem, out["size"], out.seed, out.dtype)]


def _bound(row) -> tuple:
    """(bound on ρ, how it was set) for one row."""
    cls = row.method_class
    if cls is None or not isinstance(cls, str):
        return float("nan"), "not judged: no accuracy class"
    if cls in ROUNDED:
        floor = BOUNDS[cls] * _eps_ratio(row.dtype)
        level = row.rounding_level
        if level is None or not np.isfinite(level):
            return floor, f"floor {fmt(floor)} (fewer than 3 exact methods to set a rounding level)"
        envelope = ENVELOPE_FACTOR * level
        if envelope <= floor:
            return floor, f"floor {fmt(floor)} (≥ {ENVELOPE_FACTOR:g} × rounding level {fmt(level)})"
        return envelope, f"{ENVELOPE_FACTOR:g} × rounding level {fmt(level)}"
    if row.dtype != "float64" and cls not in ANY_DTYPE:
        return float("nan"), f"not judged: {cls} bounds are for float64"
    bound = BOUNDS[cls] * (row.kappa if cls in SCALES_WITH_F else 1.0)
    return bound, f"{fmt(BOUNDS[cls])} × kappa {fmt(row.kappa)}"


def check(df) -> list:
    findings = []
    checked = df[df.checked.fillna(False).astype(bool)] if len(df) else df
    faults = df[df.status.isin(list(FAULT_STATUSES))] if len(df) else df
    present = set(df.method_class.dropna()) if len(df) else set()
    for cls in BOUNDS:
        if cls == "reduced-precision" and cls not in present:
            continue                  # a GPU variant: a finding only where one ran
        bound = (f"{ENVELOPE_FACTOR:g} × the cell's rounding level, at least {fmt(BOUNDS[cls])}"
                 if cls in ROUNDED else f"{fmt(BOUNDS[cls])} × kappa")
        name, expected = f"{cls} methods", f"ρ ≤ {bound} on every checked cell"
        rows = checked[checked.method_class == cls] if len(checked) else checked
        lost = faults[faults.method_class == cls] if len(faults) else faults
        not_run = ("; not measured: " + ", ".join(f"{r.backend} {r.problem} size {r['size']} ({r.status})"
                                                  for _, r in lost.head(6).iterrows())
                   + (f" and {len(lost) - 6} more" if len(lost) > 6 else "")) if len(lost) else ""
        if rows is None or rows.empty:
            findings.append(no_data(name, expected, "no gradient rows" + not_run))
            continue
        rho = rows.error_rho.astype(float)
        worst = rows.loc[(rho / rows.bound).idxmax()]
        bad = rows[~rows.within.astype(bool)]
        text = (f"{len(rows) - len(bad)} of {len(rows)} cells within ({', '.join(sorted(set(rows.backend)))}); "
                f"ρ min {fmt(rho.min())}, median {fmt(rho.median())}, max {fmt(rho.max())}; closest to "
                f"its bound: {worst.backend} on {worst.problem} size {worst['size']}, ρ {fmt(worst.error_rho)} "
                f"against {fmt(worst.bound)} ({worst.bound_basis})")
        unchecked = df[(df.method_class == cls) & df.problem.isin(list(ILL_CONDITIONED))]
        if len(unchecked):
            text += (f" (not checked, ill-conditioned: {', '.join(sorted(set(unchecked.problem)))}, ρ up to "
                     f"{fmt(unchecked.error_rho.max())})")
        if len(bad):
            text += "; outside: " + ", ".join(f"{r.backend} {r.problem} n={int(r.n_inputs)}: {fmt(r.error_rho)} "
                                              f"> {fmt(r.bound)}" for r in bad.head(6).itertuples())
        findings.append(Finding(name, expected, text + not_run, bad.empty))
    # rounding relative to |f|: the error grows with kappa
    name = "finite-difference error grows with |f|"
    expected = ("fd-forward's ρ rises with kappa = max(1, |f|) across the checked cells: log-log slope "
                "> 0.3 where kappa spans ≥ 2 decades (1 for pure rounding, less where truncation "
                "or the derivative's own size dominates)")
    fwd = checked[(checked.method_class == "forward") & (checked.error_rho > 0)] if len(checked) else checked
    if fwd is None or fwd.empty or np.log10(fwd.kappa.max() / fwd.kappa.min()) < 2:
        findings.append(no_data(name, expected, "kappa spans less than 2 decades"))
    else:
        slope = loglog_slope(fwd.kappa, fwd.error_rho)
        hi = fwd.loc[fwd.kappa.idxmax()]
        findings.append(Finding(name, expected,
                                f"slope {fmt(slope)} over {len(fwd)} cells, kappa {fmt(fwd.kappa.min())}.."
                                f"{fmt(fwd.kappa.max())}; at the largest kappa ({hi.problem} n={int(hi.n_inputs)}) "
                                f"ρ = {fmt(hi.error_rho)}, at kappa = 1: median ρ "
                                f"{fmt(fwd[fwd.kappa <= 1].error_rho.median() if (fwd.kappa <= 1).any() else float('nan'))}",
                                slope > 0.3))
    findings.append(_reference_finding(df))
    return findings


def _reference_finding(df) -> Finding:
    """Every smooth cell judged against a reference that shares no float64 rounding with the
    methods it judges (≥ ``HIGH_PRECISION_DIGITS`` digits): which reference each used."""
    name = "high-precision reference"
    expected = (f"every smooth (problem, size) is measured against a reference of ≥ {HIGH_PRECISION_DIGITS} "
                "digits -- SymPy's 50 where the problem is small enough, else the gradient program in "
                "long double -- not the float64 agreement of the methods it judges")
    measured = df[df.error_rho.notna() & df.smooth.fillna(False).astype(bool)] if len(df) else df
    if measured is None or measured.empty:
        return no_data(name, expected, "no gradient rows on smooth problems")
    refs = measured.drop_duplicates(["problem", "size"])
    kinds = refs.reference.astype(str).map(reference_kind)
    counts = kinds.value_counts()
    text = f"{int((kinds != 'float64 agreement').sum())} of {len(refs)} smooth (problem, size) cells: " + \
        ", ".join(f"{kind} {int(n)}" for kind, n in counts.items())
    low = refs[kinds == "float64 agreement"]
    if len(low):
        text += "; float64 agreement on: " + ", ".join(
            f"{r.problem} size {r['size']}" for _, r in low.head(6).iterrows())
        reasons = sorted({str(r).partition("extended precision: ")[2].rstrip(")") for r in low.reference
                          if "extended precision: " in str(r)})
        if reasons:
            text += f" (long double: {'; '.join(reasons[:2])})"
    return Finding(name, expected, text, low.empty)


def reference_kind(label: str) -> str:
    """``"SymPy 50 digits"``, ``"long double"`` or ``"float64 agreement"`` from a reference label."""
    if label.startswith(AGREEMENT_LABEL):
        return "float64 agreement"
    if label.startswith(EXTENDED_LABEL):
        return "long double"
    return "SymPy 50 digits" if "digits" in label else label
