"""Cost against the number of inputs n: gradient time, the gradient/function ratio, memory.

Derived from a suite's grid results (``rosenbrock`` and ``mlp_tanh`` over their default
size sweeps, every backend): one row per (problem, size, backend) with the number of
differentiated inputs ``n_inputs``, the gradient and function times, their ratio, the
prepare time, the peak memory of one gradient and the function evaluations per gradient
(with the formula finite differences should follow).
"""
from __future__ import annotations

import numpy as np

from ..backends.registry import METHODS
from .common import Finding, cell_table, fmt, loglog_slope, no_data, upper_part

NAME = "scaling"
TITLE = "Scaling with the number of inputs"
EXPECTED = (
    "Finite differences perturb one input at a time, so a gradient costs exactly n+1 "
    "(forward), 2n (central), n (complex step) or 6n (Richardson, 3 levels) function "
    "evaluations, and their gradient/function time ratio grows in proportion to n (log-log "
    "slope ≈ 1 over the larger sizes; the gradient time itself grows like n times the function's "
    "own cost). Reverse mode computes the whole gradient in a small constant multiple of the "
    "function's cost, whatever n (the cheap gradient principle: at most ~4-5 times the "
    "operations; an interpreted engine such as this one pays Python overhead per node on top, "
    "so < 10x at large n), and its peak memory grows with the stored forward pass (∝ n). "
    "Symbolic differentiation of a scalar-expanded expression takes more than linear time to "
    "prepare (n derivatives of an expression of size ∝ n).")

PROBLEMS = ("rosenbrock", "mlp_tanh")
#: the methods that make a fixed count of function evaluations per gradient (their descriptions)
FD_EVALUATIONS = {m.name: m for m in METHODS.values() if m.evaluations is not None}
REVERSE_MODE = ("engine", "torch", "jax-jit", "jax-eager", "manual")
SYMBOLIC = ("sympy", "sympy-cse")
CHEAP_GRADIENT_BOUND = "4-5"      # Griewank & Walther: operation count of a gradient / function
ENGINE_RATIO_LIMIT = 10.0
#: growth a peak-memory comparison can resolve: allocators hand out memory in blocks and
#: arenas, so a smaller difference between two sizes is not evidence either way
MEMORY_RESOLUTION_BYTES = 1024

COLUMNS = ["problem", "size", "n_inputs", "backend", "family", "dtype", "status", "gradient_s",
           "function_s", "gradient_function_ratio", "prepare_s", "peak_bytes", "memory_source",
           "evaluations", "expected_evaluations", "message"]


def analyze(results, problems=PROBLEMS):
    import pandas as pd

    table = cell_table(results)
    table = table[table.problem.isin(problems)]
    if table.empty:
        return pd.DataFrame(columns=COLUMNS)
    # several seeds: the median of each measure
    numeric = ["n_inputs", "gradient_s", "function_s", "prepare_s", "peak_bytes", "evaluations"]
    for c in numeric:
        table[c] = pd.to_numeric(table[c], errors="coerce")
    keys = ["problem", "size", "backend", "dtype"]
    agg = {c: "median" for c in numeric}
    agg.update(family="first", status="first", message="first", memory_source="first")
    out = table.groupby(keys, as_index=False, sort=True).agg(agg)
    out["gradient_function_ratio"] = out.gradient_s / out.function_s
    out["expected_evaluations"] = [
        FD_EVALUATIONS[b].evaluations_for(int(n)) if b in FD_EVALUATIONS and pd.notna(n) else np.nan
        for b, n in zip(out.backend, out.n_inputs)]
    return out[COLUMNS].reset_index(drop=True)


def _curve(df, problem, backend, column):
    c = df[(df.problem == problem) & (df.backend == backend)].dropna(subset=["n_inputs", column])
    c = c[c[column] > 0]
    return c.sort_values("n_inputs")


MIN_SPAN = 10   # a growth rate needs sizes spanning a decade: below that, noise and fixed costs decide


def _upper(curve, minimum=3):
    """The larger sizes of a curve, or nothing when all its sizes span less than
    ``MIN_SPAN`` (then the check reports no data instead of a verdict on noise)."""
    if len(curve) and curve.n_inputs.max() < MIN_SPAN * curve.n_inputs.min():
        return curve.iloc[0:0]
    keep = upper_part(curve.n_inputs, minimum)
    return curve[curve.n_inputs.isin(keep)]


def check(df) -> list:
    findings = []
    present = set(df.backend) if len(df) else set()
    problems = list(dict.fromkeys(df.problem)) if len(df) else []

    # 1. finite differences: exactly n+1, 2n, n, 6n evaluations
    for backend, method in FD_EVALUATIONS.items():
        name = f"{backend} evaluations"
        expected = f"exactly {method.evaluations_label} function evaluations per gradient"
        rows = df[(df.backend == backend)].dropna(subset=["evaluations", "n_inputs"])
        if rows.empty:
            findings.append(no_data(name, expected, f"no {backend} gradient rows"))
            continue
        good = rows.evaluations == rows.expected_evaluations
        bad = rows[~good]
        findings.append(Finding(name, expected,
                                f"{int(good.sum())} of {len(rows)} cells match (n = {int(rows.n_inputs.min())}"
                                f"..{int(rows.n_inputs.max())})" + ("; mismatches: " + ", ".join(
                                    f"{r.problem} n={int(r.n_inputs)}: {int(r.evaluations)}"
                                    for r in bad.head(5).itertuples()) if len(bad) else ""),
                                bool(good.all())))

    # 2. finite differences: time ratio ∝ n
    for backend in ("fd-forward", "fd-central"):
        name = f"{backend} cost ∝ n"
        expected = ("gradient/function time ratio grows ∝ n: log-log slope 0.7..1.3 over the larger "
                    "sizes of each problem")
        parts, oks = [], []
        for problem in problems:
            c = _upper(_curve(df, problem, backend, "gradient_function_ratio"))
            if len(c) < 2:
                continue
            slope = loglog_slope(c.n_inputs, c.gradient_function_ratio)
            raw = loglog_slope(c.n_inputs, c.gradient_s)
            oks.append(0.7 <= slope <= 1.3)
            parts.append(f"{problem} (n = {int(c.n_inputs.min())}..{int(c.n_inputs.max())}): ratio slope "
                         f"{fmt(slope)}, time slope {fmt(raw)}, ratio at largest n {fmt(c.gradient_function_ratio.iloc[-1])}")
        findings.append(Finding(name, expected, "; ".join(parts), all(oks)) if parts
                        else no_data(name, expected, f"fewer than 2 sizes of {backend}"))

    # 3. reverse mode: bounded gradient/function ratio
    name = "reverse mode: bounded gradient/function ratio"
    expected = (f"the engine's gradient/function time ratio at the largest n < {ENGINE_RATIO_LIMIT:g} and not "
                f"growing with n (ratio slope over the larger sizes ≤ 0.3); the cheap-gradient bound "
                f"on operation counts is ~{CHEAP_GRADIENT_BOUND}")
    parts, oks = [], []
    for problem in problems:
        c = _curve(df, problem, "engine", "gradient_function_ratio")
        up = _upper(c)
        if up.empty:
            continue
        slope = loglog_slope(up.n_inputs, up.gradient_function_ratio) if len(up) >= 2 else 0.0
        last = float(c.gradient_function_ratio.iloc[-1])
        oks.append(last < ENGINE_RATIO_LIMIT and not slope > 0.3)
        others = []
        for b in REVERSE_MODE[1:]:
            o = _curve(df, problem, b, "gradient_function_ratio")
            if len(o):
                others.append(f"{b} {fmt(o.gradient_function_ratio.iloc[-1])}")
        parts.append(f"{problem}: engine ratio {fmt(c.gradient_function_ratio.iloc[0])} at n={int(c.n_inputs.iloc[0])} "
                     f"-> {fmt(last)} at n={int(c.n_inputs.iloc[-1])} (slope {fmt(slope)})"
                     + (f"; at the largest n also {', '.join(others)}" if others else ""))
    findings.append(Finding(name, expected, "; ".join(parts), all(oks)) if parts
                    else no_data(name, expected, "no engine rows"))

    # 4. reverse mode memory ∝ n
    name = "reverse mode: memory grows with the stored forward pass"
    expected = ("the engine's peak memory of one gradient is a fixed overhead (Python objects of the "
                "graph) plus a part ∝ n: it grows by at least one float64 (8 B) per input from the "
                "smallest to the largest size")
    parts, oks = [], []
    for problem in problems:
        c = _curve(df, problem, "engine", "peak_bytes")
        if len(c) < 2:
            continue
        first, last = c.iloc[0], c.iloc[-1]
        grown = max(last.n_inputs - first.n_inputs, 1)
        per_input = (last.peak_bytes - first.peak_bytes) / grown
        judged = 8 * grown >= MEMORY_RESOLUTION_BYTES
        if judged:
            oks.append(per_input >= 8)
        parts.append(f"{problem}: {fmt(first.peak_bytes)} B at n={int(first.n_inputs)} -> "
                     f"{fmt(last.peak_bytes)} B at n={int(last.n_inputs)} ({fmt(per_input)} B per input)"
                     + ("" if judged else f"; not judged: 8 B x {int(grown)} more inputs is below the "
                        f"{MEMORY_RESOLUTION_BYTES} B a peak measurement resolves"))
    if not parts:
        findings.append(no_data(name, expected, "no engine memory rows"))
    else:
        findings.append(Finding(name, expected, "; ".join(parts), all(oks) if oks else None))

    # 5. symbolic preparation: superlinear
    for backend in SYMBOLIC:
        name = f"{backend} prepare time superlinear"
        expected = ("prepare time grows faster than n: log-log slope > 1.1 over the larger sizes it "
                    "accepts (the smallest are dominated by fixed costs)")
        parts, oks = [], []
        for problem in problems:
            c = _upper(_curve(df, problem, backend, "prepare_s"), minimum=2)
            if len(c) < 2:
                continue
            slope = loglog_slope(c.n_inputs, c.prepare_s)
            oks.append(slope > 1.1)
            parts.append(f"{problem}: {fmt(c.prepare_s.iloc[0])} s at n={int(c.n_inputs.iloc[0])} -> "
                         f"{fmt(c.prepare_s.iloc[-1])} s at n={int(c.n_inputs.iloc[-1])} (slope {fmt(slope)})")
        refused = df[(df.backend == backend) & (df.status == "unsupported")]
        if len(refused):
            parts.append("refused: " + ", ".join(f"{p} size {int(s)}" for p, s in zip(refused.problem, refused["size"])))
        if oks:
            findings.append(Finding(name, expected, "; ".join(parts), all(oks)))
        else:
            findings.append(no_data(name, expected, f"fewer than 2 sizes of {backend}"
                                    + (" present" if backend in present else " (not run)")))
    return findings
