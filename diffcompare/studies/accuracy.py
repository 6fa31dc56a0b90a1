"""Accuracy of each method against the high-precision reference, from the grid's gradient rows.

One row per (problem, size, backend): ``error_rel``, ``error_rho`` (ρ = |x - y| / max(1, |x| + |y|),
maximum over the gradient's elements), the reference used, the method's class and the
range the textbook expects for it.  A finite difference subtracts two values of f, so its
rounding error is relative to |f|, not to the derivative: its upper bound is multiplied by
``kappa`` = max(1, |f(x)|) (Σ|c_j f_j| for a vector output with cotangent c), computed here
from the problem at the cell's inputs.  Checked on smooth problems (kinks have conventions, not
derivatives: see the ``kinks`` study) other than the ill-conditioned ones in
``ILL_CONDITIONED``, where every float64 method loses digits to the problem itself.
"""
from __future__ import annotations

import numpy as np

from .common import Finding, cell_table, fmt, loglog_slope, no_data

NAME = "accuracy"
TITLE = "Accuracy of each method against a high-precision reference"
EXPECTED = (
    "Exact methods (reverse mode, symbolic, hand-written) are exact up to float64 rounding: "
    "ρ ≤ 1e-13 on well-conditioned problems. The complex step, with its tiny step and no "
    "subtraction, is as accurate: ρ ≤ 1e-13. Finite differences are approximations whose "
    "error balances truncation against rounding at their default steps: central differences "
    "(h ≈ eps^(1/3)) err by ~eps^(2/3) ≈ 4e-11, so ρ between 1e-14 and 1e-7; forward differences "
    "(h ≈ eps^(1/2)) by ~eps^(1/2) ≈ 1.5e-8, so ρ between 1e-11 and 1e-5; Richardson "
    "extrapolation (order 6) ρ ≤ 1e-9 -- each upper bound times kappa = max(1, |f(x)|), because "
    "the rounding error of a difference of two f values is relative to |f| (so finite "
    "differences of a large sum such as Rosenbrock at n = 2048, |f| ≈ 1e6, lose ~6 more digits "
    "than those of a mean such as the MLP's loss). The reference itself should carry "
    "≥ 30 digits (SymPy at 50 digits) wherever the problem is small enough for it.")

#: method class -> (backends, lower bound on rho or None, upper bound on rho (times kappa for
#: the classes in SCALES_WITH_F))
CLASSES = {
    "exact": (("engine", "manual", "sympy", "sympy-cse", "sympy-reverse", "symengine", "jax-jit", "jax-eager",
               "jax-jit-cpu", "jax-jit-tf32",
               "torch"), None, 1e-13),
    "complex-step": (("fd-complex-step",), None, 1e-13),
    "central": (("fd-central",), 1e-14, 1e-7),
    "forward": (("fd-forward",), 1e-11, 1e-5),
    "richardson": (("fd-richardson",), None, 1e-9),
}
SCALES_WITH_F = frozenset({"central", "forward", "richardson"})
#: smooth problems whose own conditioning exceeds the bounds above in float64
ILL_CONDITIONED = {"logistic_map": "chaotic: d x_k/d x0 amplifies rounding like e^(0.35 k)"}
HIGH_PRECISION_DIGITS = 30
COLUMNS = ["problem", "size", "n_inputs", "backend", "method_class", "smooth", "checked",
           "error_rel", "error_rho", "reference", "kappa", "expected_low", "expected_high", "within"]


def method_class(backend: str):
    for cls, (members, _, _) in CLASSES.items():
        if backend in members:
            return cls
    return None


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


def analyze(results):
    import pandas as pd

    table = cell_table(results).dropna(subset=["error_rho"])
    if table.empty:
        return pd.DataFrame(columns=COLUMNS)
    out = table[["problem", "size", "seed", "n_inputs", "backend", "error_rel", "error_rho", "reference"]].copy()
    scales = {key: function_scale(*key) for key in set(zip(out.problem, out["size"], out.seed))}
    out["kappa"] = [max(1.0, scales[k]) if np.isfinite(scales[k]) else 1.0
                    for k in zip(out.problem, out["size"], out.seed)]
    out["method_class"] = [method_class(b) for b in out.backend]
    smooth = {p: _smooth(p) for p in set(out.problem)}
    out["smooth"] = out.problem.map(smooth)
    out["checked"] = out.smooth & ~out.problem.isin(list(ILL_CONDITIONED)) & out.method_class.notna()
    lows, highs = [], []
    for cls, kappa in zip(out.method_class, out.kappa):
        _, low, high = CLASSES.get(cls, ((), None, None))
        lows.append(low if low is not None else np.nan)
        highs.append(high * (kappa if cls in SCALES_WITH_F else 1.0) if high is not None else np.nan)
    out["expected_low"], out["expected_high"] = lows, highs
    rho = out.error_rho.astype(float)
    # an exact zero is fine (forward differences of a linear function are exact); the lower
    # bound only catches a suspiciously small nonzero error
    out["within"] = ((rho <= out.expected_high) & ~((rho < out.expected_low) & (rho > 0))
                     ).where(out.method_class.notna())
    return out[COLUMNS].sort_values(["problem", "size", "backend"]).reset_index(drop=True)


def check(df) -> list:
    findings = []
    checked = df[df.checked.astype(bool)] if len(df) else df
    for cls, (members, low, high) in CLASSES.items():
        top = f"{fmt(high)}" + (" × kappa" if cls in SCALES_WITH_F else "")
        rng = f"{fmt(low)} ≤ ρ ≤ {top}" if low is not None else f"ρ ≤ {top}"
        name, expected = f"{cls} methods", f"{rng} on every checked cell ({', '.join(members)})"
        rows = checked[checked.method_class == cls] if len(checked) else checked
        if rows is None or rows.empty:
            findings.append(no_data(name, expected, "no gradient rows"))
            continue
        rho = rows.error_rho.astype(float)
        bad = rows[~rows.within.astype(bool)]
        text = (f"{len(rows) - len(bad)} of {len(rows)} cells within; ρ min {fmt(rho.min())}, median "
                f"{fmt(rho.median())}, max {fmt(rho.max())} ({rows.loc[rho.idxmax(), 'backend']} on "
                f"{rows.loc[rho.idxmax(), 'problem']})")
        unchecked = df[(df.method_class == cls) & df.problem.isin(list(ILL_CONDITIONED))]
        if len(unchecked):
            text += (f" (not checked, ill-conditioned: {', '.join(sorted(set(unchecked.problem)))}, ρ up to "
                     f"{fmt(unchecked.error_rho.max())})")
        if len(bad):
            text += "; outside: " + ", ".join(f"{r.backend} {r.problem} n={int(r.n_inputs)} (kappa "
                                              f"{fmt(r.kappa)}): {fmt(r.error_rho)}"
                                              for r in bad.head(6).itertuples())
        findings.append(Finding(name, expected, text, bad.empty))
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
    # the reference
    name = "high-precision reference"
    expected = (f"every cell small enough for SymPy (≤ 200 inputs) is measured against a reference of "
                f"≥ {HIGH_PRECISION_DIGITS} digits, not the float64 agreement of the exact methods")
    if df is None or df.empty:
        findings.append(no_data(name, expected, "no gradient rows"))
    else:
        small = df[(df.n_inputs.astype(float) <= 200) & df.smooth.astype(bool)]
        refs = small.drop_duplicates(["problem", "size"])
        high = refs.reference.astype(str).str.contains("digits")
        labels = sorted(set(refs.reference.astype(str)))
        findings.append(Finding(name, expected,
                                f"{int(high.sum())} of {len(refs)} small smooth (problem, size) cells; "
                                f"references used: {'; '.join(labels[:4])}",
                                bool(len(refs)) and bool(high.all())))
    return findings
