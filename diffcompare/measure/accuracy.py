"""Accuracy against a high-precision reference, and the error measures.

The reference gradient is SymPy's exact derivative evaluated with mpmath at
50 significant digits, from the float64 inputs taken exactly.  It is cached on
disk per (problem, size, seed) -- keyed also by a hash of the inputs and of the
problem's code, so a redefined problem is not served a stale reference.  Where
the symbolic route is infeasible (too many inputs, or SymPy cannot handle the
function), the reference is the float64 gradient of the exact methods that
agree (the engine, JAX and PyTorch when installed), and its label says so.

Errors, maximum over elements:
- ``rel``: |x - y| / max|y| (the ∞-norm relative error);
- ``rho``: |x - y| / max(1, |x| + |y|), which behaves like a relative error for
  large values and an absolute one near zero.

>>> import numpy as np
>>> e = errors((np.array([1.0, 2.0 + 2e-16]),), (np.array([1.0, 2.0]),))
>>> e["rel"] < 2e-16, e["rho"] < 1e-16
(True, True)
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pathlib

import mpmath
import numpy as np

DIGITS = 50
SYMBOLIC_LIMIT = 200       # differentiated scalars above which no symbolic reference is made
MAX_TREE_OPS = 20_000      # operations in the function's expression tree, likewise
CACHE_VERSION = 2          # bump when the way references are made changes: old entries are ignored
SYMBOLIC_LABEL = f"sympy-exact@{DIGITS}digits"
AGREEMENT_LABEL = "float64 agreement of exact methods"


@dataclasses.dataclass
class Reference:
    values: tuple          # per differentiated argument: object arrays of mpf, or float64 arrays
    label: str
    digits: int            # significant digits the values carry (about 16 for the fallback)


def default_cache_dir() -> pathlib.Path:
    root = os.environ.get("DIFFCOMPARE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "diffcompare")
    return pathlib.Path(root) / "references"


def reference_gradient(problem, size, seed, cache_dir=None) -> Reference:
    """The reference gradient (a VJP with the problem's cotangent for vector outputs)."""
    inputs = problem.inputs(size, seed)
    cotangent = problem.cotangent(size, seed)
    path = pathlib.Path(cache_dir or default_cache_dir()) / f"{_cache_key(problem, size, seed, inputs, cotangent)}.json"
    if path.exists():
        try:
            return _load(path)
        except (ValueError, KeyError):
            path.unlink()              # a damaged cache entry is recomputed
    reference = None
    n = sum(np.size(inputs[i]) for i in problem.wrt)
    if n <= SYMBOLIC_LIMIT and _symbolic_supports(problem):
        try:
            reference = symbolic_reference(problem, inputs, cotangent)
        except (NotImplementedError, TypeError, ValueError, ZeroDivisionError):
            reference = None
    if reference is None:
        reference = agreement_reference(problem, inputs, cotangent)
    _save(path, reference)
    return reference


def _symbolic_supports(problem) -> bool:
    """Whether the SymPy backend takes the problem at all (it refuses, e.g., problems tagged
    'large-expression', whose expression would take minutes to build before any limit)."""
    from ..backends.symbolic import SympyBackend

    return bool(SympyBackend().supports(problem))


def symbolic_reference(problem, inputs, cotangent, digits: int = DIGITS) -> Reference:
    """SymPy's exact gradient evaluated at ``digits`` digits with mpmath."""
    import sympy

    from ..problems import symbolic

    from ..backends.symbolic import count_ops

    symbols, args = symbolic.symbols_like(inputs, problem.wrt)
    out = np.asarray(problem.fn(symbolic.sympy_xp, *args), dtype=object)
    if cotangent is not None:
        out = np.sum(out * np.asarray(cotangent, dtype=np.float64).astype(object))
    expr = sympy.sympify(np.asarray(out, dtype=object).reshape(-1)[0])
    if count_ops([expr]) > MAX_TREE_OPS:   # the sympy backend's swell limit: fall back instead of hanging
        raise NotImplementedError(f"expression swell: over {MAX_TREE_OPS} operations")
    # Float constants (from the inputs or the problem's code) become the exact binary
    # fractions they stand for, so the 50 digits are 50 digits of the float64 program.
    expr = expr.xreplace({f: sympy.Rational(f) for f in expr.atoms(sympy.Float)})
    flat_symbols = [s for sym in symbols for s in np.asarray(sym, dtype=object).ravel()]
    grads = [sympy.diff(expr, s) for s in flat_symbols]
    evaluate = sympy.lambdify(flat_symbols, grads, modules=[_MPMATH_EXTRA, "mpmath"], cse=True)
    values = [inputs[i] for i in problem.wrt]
    point = [mpmath.mpf(float(v)) for a in values for v in np.asarray(a, dtype=np.float64).ravel()]
    with mpmath.workdps(digits):
        flat = [mpmath.mpf(g) for g in evaluate(*point)]
    out_values, k = [], 0
    for a in values:
        n = int(np.size(a))
        arr = np.empty(n, dtype=object)
        arr[:] = flat[k:k + n]
        out_values.append(arr.reshape(np.shape(a)))
        k += n
    return Reference(tuple(out_values), SYMBOLIC_LABEL, digits)


def agreement_reference(problem, inputs, cotangent) -> Reference:
    """The engine's float64 gradient, checked against JAX and PyTorch where installed."""
    from .. import backends

    results = {}
    for name in ("engine", "jax-jit", "torch"):
        backend = backends.get(name)
        if not backend.available() or not backend.supports(problem):
            continue
        try:
            results[name] = backends.compute_gradient(backend, problem, inputs, cotangent)
        except backends.BackendError:
            continue
    if not results:
        raise RuntimeError(f"no exact method could differentiate {problem.name!r} for a reference")
    base_name, base = next(iter(results.items()))
    spread = max((errors(g, base)["rho"] for g in results.values()), default=0.0)
    label = f"{AGREEMENT_LABEL} ({', '.join(results)}; max rho {spread:.1e})"
    return Reference(tuple(np.asarray(v, dtype=np.float64) for v in base), label, 15)


def errors(grads, reference) -> dict:
    """``rel`` and ``rho`` errors of ``grads`` against ``reference``, max over all elements.

    Differences are taken in high precision when the reference carries it, so
    errors near 1e-16 are not swamped by rounding the reference to float64.
    """
    diffs, x_abs, y_abs = [], [], []
    for g, r in zip(grads, reference):
        g = np.asarray(g, dtype=np.float64)
        r = np.asarray(r)
        if r.dtype == object:
            with mpmath.workdps(DIGITS):
                d = np.array([float(abs(mpmath.mpf(float(a)) - b)) for a, b in zip(g.ravel(), r.ravel())])
            ry = np.array([float(abs(b)) for b in r.ravel()])
        else:
            d = np.abs(g.ravel() - r.ravel().astype(np.float64))
            ry = np.abs(r.ravel().astype(np.float64))
        diffs.append(d)
        x_abs.append(np.abs(g.ravel()))
        y_abs.append(ry)
    d, xa, ya = (np.concatenate(v) if v else np.zeros(0) for v in (diffs, x_abs, y_abs))
    if d.size == 0:
        return {"rel": 0.0, "rho": 0.0}
    scale = ya.max()
    rel = float(d.max() / scale) if scale > 0 else float(d.max())
    rho = float(np.max(d / np.maximum(1.0, xa + ya)))
    return {"rel": rel, "rho": rho}


# --- cache -------------------------------------------------------------------------

def _cache_key(problem, size, seed, inputs, cotangent) -> str:
    h = hashlib.sha256()
    for a in inputs:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    if cotangent is not None:
        h.update(np.ascontiguousarray(cotangent).tobytes())
    code = getattr(problem.fn, "__code__", None)
    if code is not None:
        h.update(code.co_code)
        h.update(repr(code.co_consts).encode())
        h.update(repr(code.co_names).encode())
    h.update(repr(problem.wrt).encode())
    h.update(f"v{CACHE_VERSION}-{DIGITS}-{SYMBOLIC_LIMIT}-{MAX_TREE_OPS}".encode())
    return f"{problem.name}-{size}-{seed}-{h.hexdigest()[:16]}"


def _save(path: pathlib.Path, ref: Reference) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"label": ref.label, "digits": ref.digits,
           "values": [{"shape": list(np.shape(v)),
                       "data": [mpmath.nstr(x, ref.digits, strip_zeros=False) if isinstance(x, mpmath.mpf)
                                else repr(float(x)) for x in np.asarray(v, dtype=object).ravel()]}
                      for v in ref.values]}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(path)     # atomic: a crash never leaves a half-written entry


def _load(path: pathlib.Path) -> Reference:
    doc = json.loads(path.read_text())
    values = []
    for v in doc["values"]:
        if doc["digits"] > 17:
            with mpmath.workdps(doc["digits"] + 5):
                flat = [mpmath.mpf(s) for s in v["data"]]
            arr = np.empty(len(flat), dtype=object)
            arr[:] = flat
        else:
            arr = np.array([float(s) for s in v["data"]], dtype=np.float64)
        values.append(arr.reshape(v["shape"]))
    return Reference(tuple(values), doc["label"], doc["digits"])


# SymPy's mpmath printer lacks a few functions used by nonsmooth problems.
_MPMATH_EXTRA = {
    "Heaviside": lambda x, h0=mpmath.mpf(1) / 2: h0 if x == 0 else (mpmath.mpf(1) if x > 0 else mpmath.mpf(0)),
    "sign": mpmath.sign,
}
