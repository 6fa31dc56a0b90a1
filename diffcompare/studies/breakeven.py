"""Preparation against per-call cost: after how many gradients does preparing pay off?

A method that prepares (SymPy derives and compiles; ``jax.jit`` traces and compiles) pays
a one-off cost to make each later call cheaper.  Against a baseline that prepares (almost)
nothing, N calls cost ``prepare_m + N t_m`` against ``prepare_b + N t_b``, so the method
pays off after

    N* = (prepare_m - prepare_b) / (t_b - t_m)        (infinite when t_m >= t_b: never)

gradients (0 when it is both cheaper to prepare and faster).  Pairs: ``sympy``,
``sympy-cse``, ``sympy-reverse`` (reverse accumulation over the expression DAG: cheaper to
prepare, the same kind of generated code) and ``symengine`` against the ``engine``, ``jax-jit`` against ``jax-eager`` (and against the
engine), from the grid's prepare and gradient rows of every (problem, size) both ran.
"""
from __future__ import annotations

import math

import numpy as np

from ..backends.registry import METHODS
from .common import Finding, cell_table, fmt, no_data

NAME = "breakeven"
TITLE = "Break-even: one-off preparation against cheaper calls"
EXPECTED = (
    "Compilation is an investment: jax.jit spends a one-off trace-and-compile (typically "
    "tens to hundreds of milliseconds) to remove JAX's per-operation dispatch, so against "
    "jax-eager it pays off after a finite number of gradient calls on every problem (usually "
    "a few to a few hundred). Symbolic derivation (SymPy, with or without CSE) buys generated "
    "code without graph-recording overhead: on small problems it beats the engine per call and "
    "pays off after a finite number of calls, but the scalar-expanded code grows with n (and "
    "its preparation superlinearly), so at large n it may never pay off.")

#: (method, baseline): each method and the baselines its description weighs it against
PAIRS = tuple((m.name, baseline) for m in METHODS.values() for baseline in m.breakeven)
#: the symbolic methods whose generated code shares subexpressions (judged alike)
SHARED = ("sympy-cse", "sympy-reverse", "symengine")
COLUMNS = ["problem", "size", "n_inputs", "method", "baseline", "prepare_s", "baseline_prepare_s",
           "t_method_s", "t_baseline_s", "saving_per_call_s", "breakeven_calls", "pays_off",
           "ops", "ops_cse", "swell"]
#: a derivative "swells" when its operation count without CSE exceeds this multiple of the CSE'd one
SWELL_FACTOR = 2.0


def breakeven_calls(prepare_m, prepare_b, t_m, t_b) -> float:
    """N* = (prepare_m - prepare_b) / (t_b - t_m); inf if never, 0 if at once.

    >>> breakeven_calls(1.0, 0.0, 1e-3, 2e-3)
    1000.0
    >>> breakeven_calls(1.0, 0.0, 2e-3, 1e-3)
    inf
    """
    extra = max(0.0, float(prepare_m) - float(prepare_b or 0.0))
    saving = float(t_b) - float(t_m)
    if saving <= 0:
        return math.inf if extra > 0 or saving < 0 else 0.0
    return extra / saving


def analyze(results, pairs=PAIRS):
    import pandas as pd

    table = cell_table(results)
    table = table[table.dtype == "float64"] if (table.dtype == "float64").any() else table
    for c in ("prepare_s", "gradient_s", "n_inputs", "expr_ops", "expr_ops_cse"):
        table[c] = pd.to_numeric(table[c], errors="coerce")
    # expression sizes of each (problem, size), from the sympy-cse cell (before and after CSE)
    ops = (table[table.backend == "sympy-cse"].groupby(["problem", "size"])[["expr_ops", "expr_ops_cse"]]
           .median().to_dict("index"))
    keys = ["problem", "size"]
    per = table.groupby(keys + ["backend"], as_index=False).agg(
        prepare_s=("prepare_s", "median"), gradient_s=("gradient_s", "median"), n_inputs=("n_inputs", "median"))
    rows = []
    for method, baseline in pairs:
        m = per[per.backend == method].dropna(subset=["prepare_s", "gradient_s"])
        b = per[per.backend == baseline].dropna(subset=["gradient_s"])
        both = m.merge(b, on=keys, suffixes=("_m", "_b"))
        for r in both.itertuples():
            n_star = breakeven_calls(r.prepare_s_m, r.prepare_s_b if pd.notna(r.prepare_s_b) else 0.0,
                                     r.gradient_s_m, r.gradient_s_b)
            sizes = ops.get((r.problem, r.size), {}) if method.startswith(("sympy", "symengine")) else {}
            o, oc = sizes.get("expr_ops", np.nan), sizes.get("expr_ops_cse", np.nan)
            rows.append({"problem": r.problem, "size": r.size, "n_inputs": r.n_inputs_m, "method": method,
                         "ops": o, "ops_cse": oc, "swell": o / oc if oc and oc > 0 else np.nan,
                         "baseline": baseline, "prepare_s": r.prepare_s_m,
                         "baseline_prepare_s": r.prepare_s_b, "t_method_s": r.gradient_s_m,
                         "t_baseline_s": r.gradient_s_b, "saving_per_call_s": r.gradient_s_b - r.gradient_s_m,
                         "breakeven_calls": n_star, "pays_off": bool(np.isfinite(n_star))})
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.sort_values(["method", "baseline", "problem", "n_inputs"]).reset_index(drop=True)


def _summary(rows):
    finite = rows[np.isfinite(rows.breakeven_calls)]
    text = f"{len(finite)} of {len(rows)} cells pay off"
    if len(finite):
        text += (f"; N* median {fmt(finite.breakeven_calls.median())}, range "
                 f"{fmt(finite.breakeven_calls.min())}..{fmt(finite.breakeven_calls.max())} calls")
    never = rows[~np.isfinite(rows.breakeven_calls)]
    if len(never):
        text += "; never: " + ", ".join(f"{r.problem} n={int(r.n_inputs)}" for r in never.head(8).itertuples())
    return text


def check(df) -> list:
    findings = []
    name = "jax-jit pays off against jax-eager"
    expected = "a finite N* on every (problem, size): compiling always pays off eventually"
    rows = df[(df.method == "jax-jit") & (df.baseline == "jax-eager")]
    if rows.empty:
        findings.append(no_data(name, expected, "no cells with both jax-jit and jax-eager"))
    else:
        findings.append(Finding(name, expected, _summary(rows), bool(rows.pays_off.all())))
    for method in SHARED + ("sympy",):
        name = f"{method} pays off against the engine on small problems"
        if method in SHARED:
            expected = ("a finite N* at the smallest size of every problem (generated code beats graph "
                        "recording per call); at large n it may never pay off")
        else:
            expected = (f"a finite N* at the smallest size of every problem whose derivative does not "
                        f"swell (ops without CSE ≤ {SWELL_FACTOR:g}x with CSE); where it swells, the "
                        "repeated subexpressions can make each call slower than the engine's")
        rows = df[(df.method == method) & (df.baseline == "engine")]
        if rows.empty:
            findings.append(no_data(name, expected, f"no cells with both {method} and the engine"))
            continue
        smallest = rows.loc[rows.groupby("problem")["size"].idxmin()]
        judged = smallest
        if method == "sympy":
            judged = smallest[~(smallest.swell > SWELL_FACTOR)]
        swollen = smallest[smallest.swell > SWELL_FACTOR] if method == "sympy" else smallest.iloc[0:0]
        text = _summary(rows) + "; at the smallest sizes: " + ", ".join(
            f"{r.problem} n={int(r.n_inputs)}: {fmt(r.breakeven_calls)}" for r in judged.itertuples())
        if len(swollen):
            text += "; swollen (not judged): " + ", ".join(
                f"{r.problem} n={int(r.n_inputs)} ({fmt(r.swell)}x ops): {fmt(r.breakeven_calls)}"
                for r in swollen.itertuples())
        if method in SHARED[1:]:
            prep = rows.groupby("problem").prepare_s.max()
            text += "; largest preparation per problem: " + ", ".join(
                f"{pr} {fmt(v)} s" for pr, v in prep.sort_values(ascending=False).head(4).items())
        findings.append(Finding(name, expected, text, bool(judged.pays_off.all()) if len(judged) else None))
    return findings
