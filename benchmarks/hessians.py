#!/usr/bin/env python
"""Hessians by every method that computes one, over n; sparse Hessians; HVPs past dense sizes.

Part 1 -- dense Hessians through ``diffcompare.operators.prepare("hessian", ...)`` of

- ``quadratic``: the catalog's ``quadratic_form`` xᵀ A x (A a fixed random n × n matrix):
  exact Hessian A + Aᵀ;
- ``logistic``: logistic regression, mean_i log(1 + exp(-y_i x_iᵀ w)) over ``--samples-n``
  (default 200) samples with n features: exact Hessian Xᵀ diag(s (1 - s)) X / N,
  s = sigmoid(y X w);
- ``gmm``: the catalog's ADBench GMM at d = 2 with 100 points, K = n / 6 components (6 K
  parameters: α, μ and the inverse-covariance factors); no closed form, so its error column
  is the largest difference from the engine's Hessian (marked ``~``);
- ``banded``: Σ a_i x_i² + Σ b_i x_i x_{i+1} (a quadratic form with tridiagonal A, written
  elementwise): exact tridiagonal Hessian;
- ``arrowhead``: Σ a_i x_i² + x_0 Σ_{i≥1} b_i x_i: exact arrowhead Hessian (a dense first
  row and column, the diagonal).

For ``banded`` and ``arrowhead`` also the sparse Hessians (``operators.sparse.prepare_hessian``:
detected pattern, colouring, one HVP per colour, decompressed; its ``evaluate`` timed):
``sparse <m> (star)`` with the star colouring (symmetric recovery), ``sparse <m> (column)``
with the symmetric pattern's column colouring, and ``sparse sympy (entries)``, the
symbolic nonzero entries derived per nonzero (no colours).  The bracket gives the prepare
seconds and the colours.

Methods: ``engine`` (n reverse passes through the gradient's graph), ``jax-jit``
(``jax.hessian``: forward over reverse, compiled), ``torch`` (``torch.func.hessian``: forward
over reverse), ``autograd`` (``autograd.hessian``), ``sympy`` (symbolic Hessian-vector
product derived once, evaluated per unit vector; refused past its symbol guard), ``fd-central``
(central differences of the central-difference gradient).  CPU seconds (``time.process_time``)
of one evaluation, median; the prepare phase (``PreparedOperator.prepare_s``: compiling,
deriving) apart.  A method whose predicted next time (its last time scaled by its own growth
so far) passes ``--cap`` seconds is not run at the larger sizes.  Then the growth table: time
against n per method and the exponent fitted to log t = p log n + c over the sizes run.

Part 2 -- Hessian-vector products where the dense Hessian does not fit (n = 1e5, 1e6:
80 GB and 8 TB of float64): ``operators.prepare("hvp", ...)`` against
``operators.prepare("gradient", ...)`` on the same method, for ``logistic`` (16 samples)
and ``banded``; HVP time ÷ gradient time and the error against the closed form H v.
One BLAS thread.

    python benchmarks/hessians.py                          # about 3 minutes here
    python benchmarks/hessians.py --sizes 10,30,100 --cap 1 --hvp-sizes 100000
"""
from __future__ import annotations

import argparse
import math
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

from cpu_median import cpu_median  # noqa: E402 -- benchmarks/, the script's folder
from diffcompare import operators  # noqa: E402
from diffcompare.backends.base import Unavailable  # noqa: E402
from diffcompare.problems.catalog.adbench import gmm, gmm_inputs  # noqa: E402
from diffcompare.problems.catalog.classic import quadratic_form  # noqa: E402

METHODS = ("engine", "jax-jit", "torch", "autograd", "sympy", "fd-central")
#: the sparse Hessian rows: (method, colouring kind); sympy's "auto" is its nonzero entries
SPARSE_ROWS = tuple((m, k) for m in ("engine", "jax-jit", "torch") for k in ("star", "column")) \
    + (("sympy", "auto"),)
SPARSE_PROBLEMS = ("banded", "arrowhead")
HVP_METHODS = ("engine", "jax-jit", "torch", "autograd")


# --- the problems: fn(xp, *args), inputs at n, wrt, the exact Hessian (or None) ----------

def logistic(xp, w, X, y):
    """Logistic regression's mean loss, mean_i log(1 + exp(-y_i x_iᵀ w))."""
    return xp.mean(xp.log(1 + xp.exp(-y * (X @ w))))


def logistic_inputs(n, samples, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((samples, n)) / np.sqrt(n)
    return (0.5 * rng.standard_normal(n), X, np.sign(rng.standard_normal(samples)))


def logistic_hessian(w, X, y):
    s = 1 / (1 + np.exp(-y * (X @ w)))
    return (X.T * (s * (1 - s))) @ X / X.shape[0]


def logistic_hvp(v, w, X, y):
    s = 1 / (1 + np.exp(-y * (X @ w)))
    return X.T @ (s * (1 - s) * (X @ v)) / X.shape[0]


def banded(xp, x, a, b):
    """Σ a_i x_i² + Σ b_i x_i x_{i+1}: xᵀ A x with A tridiagonal."""
    return xp.sum(a * x * x) + xp.sum(b * x[:-1] * x[1:])


def banded_inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n), 1 + rng.random(n), rng.standard_normal(n - 1))


def banded_hessian(x, a, b):
    return np.diag(2 * a) + np.diag(b, 1) + np.diag(b, -1)


def banded_hvp(v, x, a, b):
    out = 2 * a * v
    out[:-1] += b * v[1:]
    out[1:] += b * v[:-1]
    return out


def arrowhead(xp, x, a, b):
    """Σ a_i x_i² + x_0 Σ_{i≥1} b_i x_i: x_0 couples to every other input."""
    return xp.sum(a * x * x) + x[0] * xp.sum(b * x[1:])


def arrowhead_hessian(x, a, b):
    h = np.diag(2 * a)
    h[0, 1:] = h[1:, 0] = b
    return h


def problems(samples_n):
    gmm_k = lambda n: max(1, round(n / 6))          # noqa: E731 -- 6 K parameters at d = 2
    return {
        "quadratic": (quadratic_form, lambda n: (np.random.default_rng(0).standard_normal(n),
                                                 np.random.default_rng(1).standard_normal((n, n))
                                                 / np.sqrt(n)),
                      lambda x, A: A + A.T),
        "logistic": (logistic, lambda n: logistic_inputs(n, samples_n), logistic_hessian),
        "gmm": (gmm, lambda n: gmm_inputs(gmm_k(n), 0, d=2, n=100), None),
        "banded": (banded, banded_inputs, banded_hessian),
        "arrowhead": (arrowhead, banded_inputs, arrowhead_hessian),
    }


WRT = {"gmm": (0, 1, 2)}


def exponent(points):
    """Least-squares slope of log t against log n."""
    if len(points) < 2:
        return None
    ln = np.log([n for n, _ in points])
    lt = np.log([max(t, 1e-7) for _, t in points])
    return float(np.polyfit(ln, lt, 1)[0])


def predict(points, n):
    if not points:
        return 0.0
    p = exponent(points[-2:]) if len(points) >= 2 else 1.0
    p = min(max(p, 0.5), 4.0)
    n0, t0 = points[-1]
    return t0 * (n / n0) ** p


# --- part 1 -----------------------------------------------------------------------------

def dense_hessians(name, fn, make, exact, sizes, methods, cap, prepare_cap, samples, sparse):
    print(f"\n## {name}: Hessian, CPU s per evaluation (prepare s in brackets), max abs error "
          f"{'against the closed form' if exact else '~ = against the engine (no closed form)'}")
    label = {"star": "star", "column": "column", "auto": "entries"}
    sparse_rows = {f"sparse {m} ({label[k]})": (m, k) for m, k in SPARSE_ROWS} if sparse else {}
    rows = list(methods) + list(sparse_rows)
    history = {m: [] for m in rows}     # (n, prepare s) for the prepare cap
    growth = {m: [] for m in rows}      # (n, eval)
    cells = {m: {} for m in rows}
    actual = []
    for n in sizes:
        inputs = make(n)
        wrt = WRT.get(name, (0,))
        n_param = int(sum(np.size(inputs[i]) for i in wrt))
        actual.append(n_param)
        ref = exact(*inputs) if exact else None
        for m in rows:
            if cells[m] and any(v.startswith("capped") for v in cells[m].values()):
                cells[m][n_param] = "-"
                continue
            guess = predict(growth[m], n_param)
            guess_prep = predict(history[m], n_param)
            if guess > cap or guess_prep > prepare_cap:
                cells[m][n_param] = (f"capped (~{guess:.0f} s)" if guess > cap
                                     else f"capped (prepare ~{guess_prep:.0f} s)")
                continue
            try:
                if m in sparse_rows:
                    # detect + colour + prepare the HVP once, then time the evaluation alone:
                    # one HVP per colour, decompressed (sympy: its nonzero entries, one call)
                    method, kind = sparse_rows[m]
                    prepared = operators.sparse.prepare_hessian(fn, inputs, method, wrt,
                                                                kind=kind)
                    secs_eval, res = cpu_median(prepared.evaluate, samples)
                    out = res.matrix.toarray()
                    colours = "" if res.colouring is None else f", {res.colouring.n_colours} col."
                    prep = f"{prepared.prepare_s:.3f}{colours}"
                    extra = prepared.prepare_s
                else:
                    op = operators.prepare("hessian", fn, inputs, m, wrt)
                    secs_eval, out = cpu_median(lambda: op.evaluate(inputs), samples)
                    prep, extra = f"{op.prepare_s:.2f}", op.prepare_s
            except (operators.OperatorUnsupported, Unavailable) as exc:
                reason = str(getattr(exc, "reason", exc))
                cells[m][n_param] = "refused: " + " ".join(reason.split("(")[0].split()[:5]) + " …"
                continue
            if ref is None and m == "engine":
                ref = out
                mark = ""
            else:
                mark = "" if exact else "~"
            err = f"{mark}{np.abs(out - ref).max():.0e}" if ref is not None else "?"
            cells[m][n_param] = f"{secs_eval:.4f} ({prep}) {err}"
            history[m].append((n_param, extra))
            growth[m].append((n_param, secs_eval))
    print("| method | " + " | ".join(f"n = {n}" for n in actual) + " | exponent |")
    print("|---|" + "---|" * (len(actual) + 1))
    for m in rows:
        p = exponent(growth[m])
        print(f"| {m} | " + " | ".join(cells[m].get(n, "-") for n in actual) +
              f" | {'-' if p is None else f'{p:.2f}'} |")
    return growth


def growth_table(all_growth):
    print("\n## Growth: Hessian CPU s against n; exponent p (t ~ n^p) fitted over all sizes run "
          "and over the two largest (small n is overhead: the top pair shows the asymptote)")
    for name, growth in all_growth.items():
        ns = sorted({n for pts in growth.values() for n, _ in pts})
        print(f"\n{name}:")
        print("| method | " + " | ".join(str(n) for n in ns) + " | p (all) | p (top two) |")
        print("|---|" + "---|" * (len(ns) + 2))
        for m, pts in growth.items():
            if not pts:
                continue
            d = dict(pts)
            p, top = exponent(pts), exponent(pts[-2:])
            print(f"| {m} | " + " | ".join(f"{d[n]:.2g}" if n in d else "-" for n in ns) +
                  f" | {'-' if p is None else f'{p:.2f}'} | {'-' if top is None else f'{top:.2f}'} |")


# --- part 2 -----------------------------------------------------------------------------

def hvps(sizes, samples, cap):
    print("\n## HVPs where the dense Hessian does not fit: CPU s of one HVP, of one gradient, "
          "their ratio, max abs error of H v against the closed form")
    cases = {"logistic (16 samples)": (logistic, lambda n: logistic_inputs(n, 16), logistic_hvp),
             "banded": (banded, banded_inputs, banded_hvp)}
    print("| problem | n | dense H would be | method | hvp s | gradient s | hvp ÷ gradient | error |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (fn, make, exact_hvp) in cases.items():
        last = {}
        for n in sizes:
            inputs = make(n)
            v = np.random.default_rng(5).standard_normal(n)
            ref = exact_hvp(v, *inputs)
            gib = n * n * 8 / 2 ** 30
            for m in HVP_METHODS:
                if m in last and last[m] * n / last.get(m + "n", n) > cap:
                    print(f"| {name} | {n:.0e} | {gib:,.0f} GiB | {m} | capped | | | |")
                    continue
                try:
                    hv = operators.prepare("hvp", fn, inputs, m)
                    gr = operators.prepare("gradient", fn, inputs, m)
                except (operators.OperatorUnsupported, Unavailable) as exc:
                    print(f"| {name} | {n:.0e} | {gib:,.0f} GiB | {m} | refused: "
                          f"{getattr(exc, 'reason', exc)} | | | |")
                    continue
                hs, out = cpu_median(lambda: hv.evaluate(inputs, v), samples)
                gs, _ = cpu_median(lambda: gr.evaluate(inputs), samples)
                last[m], last[m + "n"] = hs + gs, n
                err = np.abs(out - ref).max()
                print(f"| {name} | {n:.0e} | {gib:,.0f} GiB | {m} | {hs:.4f} | {gs:.4f} | "
                      f"{hs / gs:.1f} | {err:.0e} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="quadratic,logistic,gmm,banded,arrowhead")
    parser.add_argument("--sizes", default="10,30,100,300,1000")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--cap", type=float, default=3.0,
                        help="seconds: a method predicted past this at the next n stops")
    parser.add_argument("--prepare-cap", type=float, default=10.0,
                        help="seconds: the same for the prepare phase (compiling, deriving)")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--samples-n", type=int, default=200, help="logistic regression's N")
    parser.add_argument("--hvp-sizes", default="100000,1000000")
    args = parser.parse_args()
    probs = problems(args.samples_n)
    sizes = [int(s) for s in args.sizes.split(",")]
    all_growth = {}
    for name in args.problems.split(","):
        fn, make, exact = probs[name]
        all_growth[name] = dense_hessians(name, fn, make, exact, sizes,
                                          args.methods.split(","), args.cap, args.prepare_cap,
                                          args.samples,
                                          sparse=name in SPARSE_PROBLEMS)
    growth_table(all_growth)
    if args.hvp_sizes:
        hvps([int(s) for s in args.hvp_sizes.split(",")], args.samples, args.cap)


if __name__ == "__main__":
    main()
