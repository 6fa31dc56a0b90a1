#!/usr/bin/env python
"""Preparation of symbolic gradients: per-variable SymPy against reverse accumulation and SymEngine.

Problem: ``mlp_tanh`` (batch 8, 4 in, 2 out) at hidden widths 1, 2, 4, 8, 16, and the MLP
with batch 16, 10 in, 16 hidden, 10 out (346 parameters).  For each symbolic backend
(``sympy``, ``sympy-cse``, ``sympy-reverse``, ``symengine``) it prints, side by side in one
process:

- ``prepare``: seconds of ``backend.prepare`` (build, derive, CSE, compile), once per cell
  (a cold SymPy cache each time);  where a per-variable backend (``sympy``, ``sympy-cse``,
  ``symengine``) would exceed ``--cap``
  seconds, it is not run and its time is *extrapolated* (marked ``~``) from the measured
  trend: a power law of prepare time against the predicted derivative size
  (``predict_gradient_ops``, computed from the function's DAG), fitted to that backend's
  measured cells.  Such a row says "not run"; a ratio sympy / method is marked ``~`` where
  sympy's time is extrapolated and never divides by an extrapolated time ("n/a");
- ``ops f`` / ``ops g``: the CSE'd operation count of the function and of the gradient
  (``ops_function_cse``/``ops_gradient_cse``; for ``sympy`` the tree's count), and ``g/f``;
- ``eval``: median seconds of one gradient call of the generated code (``time_call``), beside
  the engine's and ``jax-jit``'s on the same inputs.

Targets (issue 11): at width 16 and on the 346-parameter MLP, ``sympy-reverse`` and
``symengine`` prepare >= 10x faster than ``sympy``; ``sympy-reverse``'s gradient <= 5x the
function's operations at every width.

Usage::

    python benchmarks/symbolic_prepare.py                 # widths 1-16 + the 346-parameter MLP
    python benchmarks/symbolic_prepare.py --widths 1 2 4 --no-big --cap 10   # a quick look
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from diffcompare import backends, problems
from diffcompare.backends.sympy_derivation import predict_gradient_ops
from diffcompare.measure.timing import time_call
from diffcompare.problems import Problem
from diffcompare.problems.symbolic import symbols_like, sympy_xp

SYMBOLIC = ("sympy", "sympy-cse", "sympy-reverse", "symengine")
PER_VARIABLE = ("sympy", "sympy-cse", "symengine")     # per-variable diff: extrapolated past --cap
PEERS = ("engine", "jax-jit")
UNLIMITED = {"max_inputs": 10 ** 6, "max_symbols": 10 ** 7, "max_tree_ops": 10 ** 9, "max_diff_ops": 10 ** 12}


def _big_mlp_inputs(size, seed):
    rng = np.random.default_rng(seed)
    batch, n_in, hidden, n_out = 16, 10, size, 10
    return (rng.standard_normal((n_in, hidden)) / np.sqrt(n_in), 0.1 * rng.standard_normal(hidden),
            rng.standard_normal((hidden, n_out)) / np.sqrt(hidden), 0.1 * rng.standard_normal(n_out),
            rng.standard_normal((batch, n_in)), rng.standard_normal((batch, n_out)))


def cases(widths, big):
    p = problems.get("mlp_tanh")
    out = [(f"mlp_tanh w={w}", p, w) for w in widths]
    if big:
        big_p = Problem(name="mlp_tanh_16x10x16x10", fn=p.fn, make_inputs=_big_mlp_inputs,
                        wrt=p.wrt, description="tanh MLP, batch 16, 10 in, 16 hidden, 10 out")
        out.append(("mlp 16x10x16x10", big_p, 16))
    return out


def predicted_ops(problem, inputs) -> int:
    s = symbols_like(inputs, problem.wrt, constants="symbols")
    return predict_gradient_ops([problem.fn(sympy_xp, *s.args)], s.wrt_flat)


def fit_power_law(points):
    """``(a, b)`` of ``t = a · x^b`` by least squares in log-log (at least 2 points)."""
    x = np.log([p[0] for p in points])
    y = np.log([p[1] for p in points])
    b, log_a = np.polyfit(x, y, 1)
    return math.exp(log_a), b


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    ap.add_argument("--no-big", action="store_true", help="leave out the 346-parameter MLP")
    ap.add_argument("--cap", type=float, default=40.0,
                    help="seconds a per-variable prepare may be predicted to take before it is extrapolated")
    ap.add_argument("--min-sample", type=float, default=0.01)
    args = ap.parse_args(argv)

    rows = []
    trend = {b: [] for b in PER_VARIABLE}
    for label, problem, size in cases(args.widths, not args.no_big):
        inputs = problem.inputs(size, seed=0)
        n = sum(np.size(inputs[i]) for i in problem.wrt)
        pred = predicted_ops(problem, inputs)
        row = {"case": label, "n": n, "predicted": pred}
        for name in SYMBOLIC + PEERS:
            options = UNLIMITED if name in SYMBOLIC else {}
            backend = backends.get(name, **options)
            if not backend.available():
                row[name] = {"note": "unavailable"}
                continue
            if name in PER_VARIABLE and len(trend[name]) >= 2:
                a, b = fit_power_law(trend[name])
                estimate = a * pred ** b
                if estimate > args.cap:
                    row[name] = {"prepare": estimate, "extrapolated": True}
                    continue
            t0 = time.perf_counter()
            prepared = backend.prepare(problem, inputs)
            prepare_s = time.perf_counter() - t0
            if name in PER_VARIABLE:
                trend[name].append((pred, prepare_s))
            info = prepared.info
            grad = backend.gradient(prepared, inputs)
            timing = time_call(lambda: backend.gradient(prepared, inputs), min_sample_s=args.min_sample,
                               samples=5)
            row[name] = {"prepare": prepare_s, "eval": timing.stats.median, "grad": grad,
                         "ops_f": info.get("ops_function_cse", info.get("ops_function")),
                         "ops_g": info.get("ops_gradient_cse", info.get("ops_gradient"))}
        _check(row)
        rows.append(row)
        _print_row(row)
    _print_summary(rows)


def _check(row):
    ref = row.get("engine", {}).get("grad")
    for name in SYMBOLIC + ("jax-jit",):
        got = row.get(name, {}).get("grad")
        if ref is None or got is None:
            continue
        err = max(float(np.max(np.abs(g - r) / np.maximum(1, np.abs(r)))) for g, r in zip(got, ref))
        if err > 1e-10:
            raise SystemExit(f"{row['case']}: {name} differs from the engine (rho {err:.1e})")


def _fmt(x, extrapolated=False):
    if x is None:
        return "-"
    s = f"{x:.3g}"
    return "~" + s if extrapolated else s


def _print_row(row):
    print(f"\n{row['case']}: {row['n']} parameters, predicted per-variable derivative ops "
          f"{row['predicted']}")
    print(f"  {'method':14s} {'prepare s':>11s} {'ops f':>8s} {'ops g':>8s} {'g/f':>6s} {'eval µs':>10s}")
    for name in SYMBOLIC + PEERS:
        r = row.get(name, {})
        if "note" in r:
            print(f"  {name:14s} {r['note']}")
            continue
        if r.get("extrapolated"):
            print(f"  {name:14s} {_fmt(r['prepare'], True):>11s}   not run: prepare extrapolated "
                  f"past --cap from the measured trend")
            continue
        gf = r["ops_g"] / r["ops_f"] if r.get("ops_f") else None
        print(f"  {name:14s} {_fmt(r.get('prepare')):>11s} "
              f"{_fmt(r.get('ops_f')):>8s} {_fmt(r.get('ops_g')):>8s} {_fmt(gf):>6s} "
              f"{_fmt(r['eval'] * 1e6 if 'eval' in r else None):>10s}")


def speedup(slow: dict, fast: dict) -> str:
    """``slow / fast`` prepare seconds, ``~`` where ``slow`` is extrapolated; never divided by
    an extrapolated time (a ratio over an estimate of the faster method says nothing): "n/a"
    there, "-" where either is missing.

    >>> speedup({"prepare": 40.0, "extrapolated": True}, {"prepare": 2.0})
    '~20'
    >>> speedup({"prepare": 40.0}, {"prepare": 80.0, "extrapolated": True})
    'n/a'
    """
    if not slow.get("prepare") or not fast.get("prepare"):
        return "-"
    if fast.get("extrapolated"):
        return "n/a"
    return _fmt(slow["prepare"] / fast["prepare"], slow.get("extrapolated"))


def _print_summary(rows):
    print("\nSummary (prepare seconds; ~ = extrapolated from the measured trend, not run; "
          "ratio = sympy / method, ~ where sympy's time is extrapolated, n/a where the method's is)")
    head = f"{'case':18s} {'n':>5s}" + "".join(f" {n:>14s}" for n in SYMBOLIC) + \
        "   sympy/reverse  sympy/symengine  reverse g/f"
    print(head)
    for row in rows:
        cells = "".join(f" {_fmt(row.get(n, {}).get('prepare'), row.get(n, {}).get('extrapolated')):>14s}"
                        for n in SYMBOLIC)
        ratios = [speedup(row.get("sympy", {}), row.get(n, {})) for n in ("sympy-reverse", "symengine")]
        rev = row.get("sympy-reverse", {})
        gf = rev["ops_g"] / rev["ops_f"] if rev.get("ops_f") else None
        print(f"{row['case']:18s} {row['n']:5d}{cells}   {ratios[0]:>13s}  {ratios[1]:>15s}  {_fmt(gf):>11s}")


if __name__ == "__main__":
    main()
