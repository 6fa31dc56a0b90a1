"""Expression swell: the logistic map's derivative, symbolic (with and without CSE) vs a graph.

For k = 1..10 steps of x ← r x (1 - x) (``logistic_map``, r = 3.7), it records

- SymPy's operation count of d x_k / d x0 without CSE and with CSE (``sympy-cse``'s
  ``prepared.info``), and the prepare time of ``sympy`` and ``sympy-cse``;
- the engine's recorded graph (``EngineBackend.graph_stats``: nodes, saved bytes);
- the float64 accuracy, at a few x0, of two forms of the same derivative: the nested
  form SymPy derives (``sympy`` backend, lambdified) and the expanded polynomial (the k-fold
  composition expanded exactly -- ``sympy.Poly``, the fast equivalent of ``sympy.expand`` --
  differentiated, its coefficients rounded to float64 and the sum lambdified), each against
  its exact value at 50 digits.

Beside them, the DAG-keeping methods: ``sympy-reverse`` (reverse accumulation over the
expression DAG: its program's operations, ``ops_gradient_reverse``, against the function's,
``ops_function_reverse``) and ``symengine`` (per-variable diff in C++, CSE'd), per k and, in
``mlp`` rows, per hidden width of ``mlp_tanh`` (where the tree size is *predicted* from the
function's DAG, ``predicted_ops_gradient``, since measuring it takes minutes past width 4).

Rows (``kind`` says which): ``size`` per k: ``k, ops_gradient, ops_gradient_cse,
dag_nodes_gradient, prepare_sympy_s, prepare_sympy_cse_s, engine_nodes,
engine_saved_bytes, expand_s, max_abs_coefficient, expanded_overflows (a coefficient
beyond float64's range, 1.8e308: the expanded form evaluates to inf/nan), status, message``;
``accuracy`` per (k, form, x0): ``k, form, x0, value, exact, rel_error``.

SymPy's time grows with k (the uncached expansion ~8x per step at k = 10): a k whose
predecessor took longer than ``TIME_LIMIT_S`` is skipped, and its row says so (status
``guarded``: the guard's prediction holding, not a failure; ``partial`` when a method failed).
"""
from __future__ import annotations

import math
import time

import numpy as np

from .common import Finding, View, fmt, loglog_slope, no_data

NAME = "expression_swell"
TITLE = "Expression swell: symbolic derivatives of a loop, with and without CSE"
#: What the report shows of this study (recorded with it: :func:`diffcompare.studies.record_views`).
FIGURES = (View("expression-swell", "Size of d x_k / d x₀ against k: SymPy operations without and with "
                "CSE, the engine's node count and saved bytes (log scale).", plot="expression_swell"),)
EXPECTED = (
    "Differentiating k steps of the logistic map symbolically, without sharing, copies "
    "x_j into both factors of x_{j+1} at every step, so the derivative's operation count "
    "grows exponentially (a ratio > 1.5 per step, about 2.4 here); common-subexpression "
    "elimination restores the sharing, so the CSE'd count grows only polynomially (its per-step "
    "ratio falls toward 1: linear in the program's operations, about quadratic in SymPy's count "
    "because SymPy flattens each x_k into a product of O(k) factors); the engine records a graph "
    "of a fixed number of nodes per step (exactly linear in k). Expanding the composition into "
    "its degree-2^k polynomial gives huge alternating coefficients, so evaluating the expanded "
    "derivative in float64 loses all accuracy (and overflows once coefficients pass 1e308) while "
    "the nested form stays near eps times the map's condition number.")

PROBLEM = "logistic_map"
R = 3.7
KS = tuple(range(1, 11))
QUICK_KS = tuple(range(1, 8))
X0 = (0.15, 0.35, 0.62, 0.9)
TIME_LIMIT_S = 20.0
DIGITS = 50


def run(out_dir=None, quick: bool = False, ks=None, time_limit_s: float = TIME_LIMIT_S, widths=None):
    """The study's rows.  ``ks``: steps of the logistic map (default by ``quick``);
    ``widths``: MLP widths (default by ``quick``; none when ``ks`` is given, a look at the
    logistic map alone)."""
    import pandas as pd

    from .. import backends, problems

    problem = problems.get(PROBLEM)
    ks_given = ks is not None
    ks = tuple(ks) if ks is not None else (QUICK_KS if quick else KS)
    engine = backends.get("engine")
    rows, acc_rows = [], []
    last = {"symbolic": 0.0, "expand": 0.0}
    for k in ks:
        inputs = problem.inputs(k, seed=0)
        row = {"kind": "size", "k": k, "status": "ok", "message": None}
        # the engine's graph: always cheap
        prepared = engine.prepare(problem, inputs)
        stats = engine.graph_stats(prepared, inputs)
        row.update(engine_nodes=stats["nodes"], engine_saved_bytes=stats["saved_bytes"])
        compiled = backends.get("engine-compiled")   # the same graph as a generated program
        row["compiled_steps"] = compiled.graph_stats(compiled.prepare(problem, inputs), inputs)["nodes"]
        notes = _Notes()
        # symbolic: operation counts and prepare times
        if last["symbolic"] > time_limit_s:
            notes.guard(f"sympy skipped: k = {k - 1} took {last['symbolic']:.1f} s > {time_limit_s:g} s")
        else:
            t_all = time.perf_counter()
            for name, key in (("sympy-cse", "prepare_sympy_cse_s"), ("sympy", "prepare_sympy_s")):
                # the study's own time limit decides what runs: the backends' guards are lifted
                backend = backends.get(name, max_tree_ops=100_000, max_diff_ops=10 ** 7)
                try:
                    t0 = time.perf_counter()
                    prep = backends.checked_prepare(backend, problem, inputs)
                    row[key] = time.perf_counter() - t0
                    info = prep.info
                    row.setdefault("ops_gradient", info.get("ops_gradient"))
                    row.setdefault("dag_nodes_gradient", info.get("dag_nodes_gradient"))
                    if "ops_gradient_cse" in info:
                        row["ops_gradient_cse"] = info["ops_gradient_cse"]
                except backends.BackendError as exc:
                    notes.refusal(exc, f"{name}: {exc.detail}")
            last["symbolic"] = time.perf_counter() - t_all
        # the DAG-keeping methods: always cheap here
        for name, key in (("sympy-reverse", "reverse"), ("symengine", "symengine")):
            info = _prepare_info(name, problem, inputs, row, key, notes)
            if info is not None:
                row[f"ops_gradient_{key}"] = info.get("ops_gradient_cse")
                row[f"ops_function_{key}"] = info.get("ops_function_cse", info.get("ops_function"))
        # accuracy of the nested and the expanded forms
        nested = _nested_values(problem, k, notes)
        if last["expand"] > time_limit_s:
            notes.guard(f"expansion skipped: k = {k - 1} took {last['expand']:.1f} s > {time_limit_s:g} s")
            expanded, max_coef = None, math.nan
        else:
            t0 = time.perf_counter()
            expanded, max_coef = _expanded_values(k)
            last["expand"] = row["expand_s"] = time.perf_counter() - t0
        row["max_abs_coefficient"] = max_coef
        row["expanded_overflows"] = bool(not math.isfinite(max_coef)) if expanded is not None else None
        for form, values, r in (("nested", nested, _float_r()), ("expanded", expanded, _decimal_r())):
            if values is None:
                continue
            for x0, v in zip(X0, values):
                exact = _exact_derivative(x0, r, k)
                rel = abs(v - exact) / abs(exact) if np.isfinite(v) else math.inf
                acc_rows.append({"kind": "accuracy", "k": k, "form": form, "x0": x0, "value": v,
                                 "exact": float(exact), "rel_error": float(rel)})
        if notes:
            row["status"] = notes.status
            row["message"] = "; ".join(notes)
        rows.append(row)
    # quick: sympy-cse on the MLP only where predicted to take a second or two
    if widths is None:
        widths = () if ks_given else (QUICK_WIDTHS if quick else WIDTHS)
    mlp_rows = _mlp_rows(widths, min(time_limit_s, 2.0) if quick else time_limit_s)
    return pd.DataFrame(rows + acc_rows + mlp_rows, columns=COLUMNS)


#: columns of the DAG-keeping methods (logistic-map rows) and of the MLP rows
NEW_COLUMNS = ["ops_function_reverse", "ops_gradient_reverse", "prepare_reverse_s",
               "ops_function_symengine", "ops_gradient_symengine", "prepare_symengine_s",
               "width", "n_inputs", "ops_function", "ops_function_cse", "predicted_ops_gradient",
               "compiled_steps"]
COLUMNS = ["kind", "k", "ops_gradient", "ops_gradient_cse", "dag_nodes_gradient",
           "prepare_sympy_s", "prepare_sympy_cse_s", "engine_nodes", "engine_saved_bytes",
           "expand_s", "max_abs_coefficient", "expanded_overflows", "form", "x0", "value", "exact", "rel_error",
           "status", "message"] + NEW_COLUMNS
MLP = "mlp_tanh"
WIDTHS = (1, 2, 4, 8, 16)
QUICK_WIDTHS = (1, 4)


class _Notes(list):
    """A row's notes, each either a guard's (a limit that stopped what grows past it, a method
    refused or not installed: predicted, not a fault) or a failure.  ``status``: ``guarded``
    when every note is a guard's, else ``partial``."""

    failed = False

    def guard(self, text: str):
        self.append(text)

    def refusal(self, exc, text: str):
        """A ``BackendError``: a guard's when the backend refused (``UnsupportedError``)."""
        from ..backends import UnsupportedError

        self.append(text)
        self.failed = self.failed or not isinstance(exc, UnsupportedError)

    @property
    def status(self) -> str:
        return "partial" if self.failed else "guarded"


def _prepare_info(name, problem, inputs, row, key, notes):
    """Prepare ``name`` on ``inputs``; its time goes to ``row[f"prepare_{key}_s"]``."""
    from .. import backends

    backend = backends.get(name)
    if not backend.available():
        notes.guard(f"{name}: unavailable ({backend.available().reason})")
        return None
    try:
        t0 = time.perf_counter()
        prepared = backends.checked_prepare(backend, problem, inputs)
        row[f"prepare_{key}_s"] = time.perf_counter() - t0
        return prepared.info
    except backends.BackendError as exc:
        notes.refusal(exc, f"{name}: {exc.detail}")
        return None


def _mlp_rows(widths, time_limit_s):
    """The MLP (``mlp_tanh``) by hidden width: the gradient's tree size (``sympy``, predicted
    from the function's DAG -- measuring it takes minutes past width 4), its CSE'd size
    (``sympy-cse``, while predicted to take under ``time_limit_s``), the reverse program's
    size, SymEngine's CSE'd size and the engine's node count, side by side."""
    from .. import backends, problems
    from ..backends.symbolic import SympyBackend

    problem = problems.get(MLP)
    engine = backends.get("engine")
    rows = []
    for width in widths:
        inputs = problem.inputs(width, seed=0)
        row = {"kind": "mlp", "width": width, "status": "ok", "message": None,
               "n_inputs": int(sum(np.size(inputs[i]) for i in problem.wrt))}
        notes = _Notes()
        stats = engine.graph_stats(engine.prepare(problem, inputs), inputs)
        row.update(engine_nodes=stats["nodes"], engine_saved_bytes=stats["saved_bytes"])
        info = _prepare_info("sympy-reverse", problem, inputs, row, "reverse", notes)
        if info is not None:
            row.update(ops_function=info["ops_function"], ops_function_reverse=info["ops_function_cse"],
                       ops_gradient_reverse=info["ops_gradient_cse"],
                       predicted_ops_gradient=_predicted(problem, inputs))
        predicted_s = (row.get("predicted_ops_gradient") or np.inf) * SympyBackend.seconds_per_op
        if predicted_s <= time_limit_s:
            info = _prepare_info("sympy-cse", problem, inputs, row, "sympy_cse", notes)
            if info is not None:
                row.update(ops_function_cse=info.get("ops_function_cse"),
                           ops_gradient_cse=info.get("ops_gradient_cse"), ops_gradient=info.get("ops_gradient"))
        else:
            notes.guard(f"sympy-cse not run: predicted up to {predicted_s:.0f} s > {time_limit_s:g} s")
        info = _prepare_info("symengine", problem, inputs, row, "symengine", notes)
        if info is not None:
            row.update(ops_function_symengine=info.get("ops_function"),
                       ops_gradient_symengine=info.get("ops_gradient_cse"))
        if notes:
            row["status"] = notes.status
            row["message"] = "; ".join(notes)
        rows.append(row)
    return rows


def _predicted(problem, inputs):
    from ..backends.sympy_derivation import predict_gradient_ops
    from ..problems.symbolic import symbols_like, sympy_xp

    s = symbols_like(inputs, problem.wrt, constants="symbols")
    return predict_gradient_ops([problem.fn(sympy_xp, *s.args)], s.wrt_flat)


# --- the two forms ------------------------------------------------------------------

def _float_r():
    import mpmath

    return mpmath.mpf(R)                   # the float64 3.7 the program multiplies by, exactly


def _decimal_r():
    import mpmath

    with mpmath.workdps(DIGITS):
        return mpmath.mpf(37) / 10         # the expansion's exact rational 37/10


def _exact_derivative(x0, r, k):
    """d x_k / d x0 by forward-mode iteration at 50 digits."""
    import mpmath

    with mpmath.workdps(DIGITS):
        x, d = mpmath.mpf(x0), mpmath.mpf(1)
        for _ in range(k):
            d = r * (1 - 2 * x) * d
            x = r * x * (1 - x)
        return +d


def _nested_values(problem, k, notes):
    """The derivative SymPy derives from the loop as written (nested), lambdified, in float64."""
    from .. import backends

    backend = backends.get("sympy", constants="numbers", max_tree_ops=10 ** 7)
    r = np.full(k, R)
    out = []
    try:
        prepared = backends.checked_prepare(backend, problem, (np.array([X0[0]]), r))
        for x0 in X0:
            g, = backends.checked_vjp(backend, prepared, (np.array([x0]), r))
            out.append(float(g[0]))
    except backends.BackendError as exc:
        notes.refusal(exc, f"nested form: {exc.detail}")
        return None
    return out


def _expanded_values(k):
    """The expanded derivative (exact coefficients rounded to float64), lambdified, at X0."""
    import sympy

    x = sympy.Symbol("x", real=True)
    p = sympy.Poly(x, x, domain="QQ")
    r = sympy.Rational(37, 10)
    for _ in range(k):
        p = r * p * (1 - p)
    coeffs = p.diff(x).all_coeffs()
    degree = len(coeffs) - 1
    floats = [_to_float(c) for c in coeffs]
    terms = [sympy.Float(c, 17) * x ** (degree - i) if math.isfinite(c)
             else (sympy.oo if c > 0 else -sympy.oo) * x ** (degree - i)
             for i, c in enumerate(floats) if c != 0]
    f = _lambdify([x], sympy.Add(*terms))
    with np.errstate(all="ignore"):
        values = [float(f(np.float64(x0))) for x0 in X0]
    return values, max(abs(c) for c in floats)


def _to_float(c) -> float:
    try:
        return float(c)
    except OverflowError:
        return math.inf if c > 0 else -math.inf


def _lambdify(args, expr):
    """A NumPy function of ``expr`` (the backends' printer, which writes floats exactly)."""
    from ..backends.sympy_derivation import lambdify

    fn = lambdify(args, [expr])
    return lambda *a: fn(*a)[0]


# --- checks ---------------------------------------------------------------------------

def _ratios(values):
    v = np.asarray(values, dtype=float)
    return v[1:] / v[:-1]


def check(df) -> list:
    findings = []
    sizes = df[df.kind == "size"].sort_values("k")
    ops = sizes.dropna(subset=["ops_gradient"])
    name, expected = "ops without CSE: exponential", "mean ratio per step > 1.5"
    if len(ops) < 3:
        findings.append(no_data(name, expected, "fewer than 3 k with SymPy counts"))
    else:
        r = _ratios(ops.ops_gradient)
        findings.append(Finding(name, expected,
                                f"ops {int(ops.ops_gradient.iloc[0])} (k={int(ops.k.iloc[0])}) -> "
                                f"{int(ops.ops_gradient.iloc[-1])} (k={int(ops.k.iloc[-1])}); mean ratio "
                                f"{fmt(np.mean(r))}, last ratios {', '.join(fmt(x) for x in r[-3:])}",
                                np.mean(r) > 1.5))
    cse = sizes.dropna(subset=["ops_gradient_cse"])
    name = "ops with CSE: polynomial"
    expected = ("per-step ratio falls toward 1 (mean over the larger half of k ≤ 1.5, and below "
                "the no-CSE ratio), log-log slope in k ≤ 2.5 there (polynomial)")
    if len(cse) < 4:
        findings.append(no_data(name, expected, "fewer than 4 k with CSE counts"))
    else:
        r = _ratios(cse.ops_gradient_cse)
        half = r[len(r) // 2:]
        ks = cse.k.to_numpy(float)
        upper = slice(len(ks) // 2, None)
        slope = loglog_slope(ks[upper], cse.ops_gradient_cse.to_numpy(float)[upper])
        nocse = _ratios(cse.ops_gradient)[len(r) // 2:]
        findings.append(Finding(name, expected,
                                f"ops {int(cse.ops_gradient_cse.iloc[0])} -> {int(cse.ops_gradient_cse.iloc[-1])}; "
                                f"ratios of the larger half {', '.join(fmt(x) for x in half)} (no CSE: "
                                f"{', '.join(fmt(x) for x in nocse)}); log-log slope {fmt(slope)}",
                                np.mean(half) <= 1.5 and np.all(half < nocse) and slope <= 2.5))
    name, expected = "engine graph: linear in k", "the same number of nodes added per step"
    eng = sizes.dropna(subset=["engine_nodes"])
    if len(eng) < 3:
        findings.append(no_data(name, expected, "fewer than 3 k"))
    else:
        steps = np.diff(eng.engine_nodes.to_numpy(float)) / np.diff(eng.k.to_numpy(float))
        findings.append(Finding(name, expected,
                                f"nodes {int(eng.engine_nodes.iloc[0])} (k={int(eng.k.iloc[0])}) -> "
                                f"{int(eng.engine_nodes.iloc[-1])} (k={int(eng.k.iloc[-1])}); nodes per step "
                                f"{', '.join(sorted({fmt(s) for s in steps}))}",
                                np.ptp(steps) == 0 and steps[0] > 0))
    acc = df[df.kind == "accuracy"]
    name = "expanded form less accurate than nested"
    expected = ("for the larger half of k the expanded form's median error is ≥ 100x the nested "
                "form's, and the nested form stays ≤ 1e-10")
    if acc.empty:
        findings.append(no_data(name, expected, "no accuracy rows"))
    else:
        med = acc.groupby(["k", "form"]).rel_error.median().unstack("form")
        med = med.dropna()
        if med.empty or "expanded" not in med or "nested" not in med:
            findings.append(no_data(name, expected, "no k with both forms"))
        else:
            upper = med.iloc[len(med) // 2:]
            ok = bool(((upper.expanded >= 100 * np.maximum(upper.nested, 1e-16))).all()
                      and (med.nested <= 1e-10).all())
            findings.append(Finding(name, expected, "median relative error by k: " + "; ".join(
                f"k={int(k)} nested {fmt(r.nested)} expanded {fmt(r.expanded)}" for k, r in med.iterrows()),
                ok))
    name = "swell costs preparation time"
    expected = ("at the largest k (≥ 6), preparing without CSE (printing and compiling the swollen "
                "tree) takes longer than with CSE")
    both = sizes.dropna(subset=["prepare_sympy_s", "prepare_sympy_cse_s"])
    if both.empty or both.k.max() < 6:
        findings.append(no_data(name, expected, "no prepare times for k ≥ 6"))
    else:
        last = both.iloc[-1]
        findings.append(Finding(name, expected,
                                f"k={int(last.k)}: sympy {fmt(last.prepare_sympy_s)} s, sympy-cse "
                                f"{fmt(last.prepare_sympy_cse_s)} s (k={int(both.k.iloc[0])}: "
                                f"{fmt(both.prepare_sympy_s.iloc[0])} s and {fmt(both.prepare_sympy_cse_s.iloc[0])} s)",
                                last.prepare_sympy_s > last.prepare_sympy_cse_s))
    name = "reverse accumulation keeps the cheap-gradient bound"
    expected = ("the reverse program (sympy-reverse) has at most 5x the operations of the function's "
                "DAG at every k of the logistic map and every MLP width, while per-variable diff + CSE "
                "(sympy-cse) grows faster than the function on the MLP")
    rev = df.dropna(subset=["ops_gradient_reverse", "ops_function_reverse"]) \
        if "ops_gradient_reverse" in df else df.iloc[0:0]
    if rev.empty:
        findings.append(no_data(name, expected, "no sympy-reverse sizes"))
    else:
        ratio = rev.ops_gradient_reverse.astype(float) / rev.ops_function_reverse.astype(float)
        mlp = df[(df.kind == "mlp")].dropna(subset=["ops_gradient_cse", "ops_function_cse"]) \
            if "width" in df else df.iloc[0:0]
        cse_ratio = (mlp.ops_gradient_cse.astype(float) / mlp.ops_function_cse.astype(float)).to_numpy()
        text = (f"reverse gradient/function ops {fmt(ratio.min())}..{fmt(ratio.max())} over {len(rev)} sizes"
                + (f"; sympy-cse on the MLP (widths {', '.join(str(int(w)) for w in mlp.width)}): "
                   f"{', '.join(fmt(r) for r in cse_ratio)}" if len(mlp) else ""))
        grows = len(cse_ratio) < 2 or bool(cse_ratio[-1] > cse_ratio[0])
        findings.append(Finding(name, expected, text, bool((ratio <= 5).all()) and grows))
    findings.append(_measured_or_guarded(df))
    return findings


def _measured_or_guarded(df) -> Finding:
    """Every k and width measured, or stopped by a guard (the study's time limit, a backend's
    size guard: the growth this study measures, predicted); a method that failed fails it."""
    name = "every k measured or stopped by its guard"
    expected = ("each k (and MLP width) measured, or skipped by the study's time limit or a backend's "
                "size guard, as designed for what grows past it; no method failing")
    rows = df[df.kind.isin(["size", "mlp"])] if len(df) else df
    if rows is None or rows.empty:
        return no_data(name, expected, "no k measured")
    failed = rows[rows.status == "partial"]
    guarded = rows[rows.status == "guarded"]
    def label(r):
        return f"k={int(r.k)}" if r.kind == "size" else f"width {int(r.width)}"

    if len(failed):
        return Finding(name, expected, "; ".join(f"{label(r)}: {r.message}" for r in failed.itertuples()), False)
    text = f"{len(rows) - len(guarded)} of {len(rows)} measured in full"
    if len(guarded):
        text += "; by a guard: " + "; ".join(f"{label(r)}: {r.message}" for r in guarded.head(4).itertuples())
    return Finding(name, expected, text, True)
