"""Accuracy against a high-precision reference, and the error measures.

The reference gradient is the exact derivative evaluated with mpmath at 50
significant digits, from the float64 inputs taken exactly: the function is
expanded into SymPy scalars, its gradient derived by reverse accumulation over
the expression DAG (``backends.symbolic_reverse``: a program a few times the
function's size, so problems with thousands of inputs are within reach), and
the program evaluated in mpmath.  It is cached on disk per (problem, size,
seed) -- keyed also by a hash of the inputs and of the problem's code, so a
redefined problem is not served a stale reference.  The route uses none of the
methods it judges.

Where it is infeasible (a DAG over ``MAX_DAG_EDGES`` edges, more than
``SYMBOLIC_LIMIT`` inputs, a function SymPy cannot express, or one whose expansion alone
takes over ``SYMBOLIC_BUDGET_S`` seconds -- a (1024, 512) matrix product), the reference
is the gradient program in extended precision (``numpy.longdouble``: the engine's and
HIPS autograd's, which must agree; :mod:`diffcompare.measure.extended`) -- it shares no
float64 rounding with the methods judged, so a GMM over 10,000 points is judged by its
own rounding, not by its distance from another float64 method.  Where that cannot be
made either (long double is float64 on the platform, or a program lacks an op in it), the
reference is the float64 gradient of the exact methods that agree (the engine, JAX and
PyTorch when installed): its label names them and says they are its members,
and ``agreement_members(label)`` gives them, so a ranking leaves them out
rather than judging them against their own agreement.

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

from .budget import OverBudget, time_budget

DIGITS = 50
SYMBOLIC_LIMIT = 100_000   # differentiated scalars above which no symbolic reference is made
MAX_DAG_EDGES = 12_000     # edges of the function's expression DAG, likewise (~1-2 ms each to
                           # build, differentiate and print: a reference within ~20 s, cached;
                           # rosenbrock at n = 1000 is about 10,000 edges)
SYMBOLIC_BUDGET_S = 30.0   # seconds the symbolic reference may take (building the expression
                           # comes before the DAG check) before the agreement one is used
CACHE_VERSION = 5          # bump when the way references are made changes: old entries are ignored
SYMBOLIC_LABEL = f"sympy-reverse-exact@{DIGITS}digits"
AGREEMENT_LABEL = "float64 agreement of exact methods"
EXTENDED_LABEL = "extended-precision gradient"
EXTENDED_DIGITS = 19       # what a 64-bit significand carries
MEMBERS_NOTE = "its members are not ranked against it"


@dataclasses.dataclass
class Reference:
    values: tuple          # per differentiated argument: object arrays of mpf, long double or float64 arrays
    label: str
    digits: int            # significant digits the values carry (about 16 for the fallback)


def default_cache_dir() -> pathlib.Path:
    root = os.environ.get("DIFFCOMPARE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "diffcompare")
    return pathlib.Path(root) / "references"


def _cached(path: pathlib.Path):
    """The reference cached at ``path``, or None where there is none; a damaged cache entry
    is removed (and so recomputed)."""
    if not path.exists():
        return None
    try:
        return _load(path)
    except (ValueError, KeyError, OSError):
        path.unlink()
        return None


def reference_gradient(problem, size, seed, cache_dir=None) -> Reference:
    """The reference gradient (a VJP with the problem's cotangent for vector outputs)."""
    inputs = problem.inputs(size, seed)
    cotangent = problem.cotangent(size, seed)
    path = pathlib.Path(cache_dir or default_cache_dir()) / f"{_cache_key(problem, size, seed, inputs, cotangent)}.json"
    cached = _cached(path)
    if cached is not None:
        return cached
    reference = None
    n = sum(np.size(inputs[i]) for i in problem.wrt)
    if n <= SYMBOLIC_LIMIT and _symbolic_supports(problem):
        try:
            with time_budget(SYMBOLIC_BUDGET_S):
                reference = symbolic_reference(problem, inputs, cotangent)
        except (NotImplementedError, TypeError, ValueError, ZeroDivisionError, OverBudget):
            reference = None
    why_not_extended = None
    if reference is None:
        try:
            reference = extended_reference(problem, inputs, cotangent)
        except NotImplementedError as exc:
            why_not_extended = str(exc)
    if reference is None:
        reference = agreement_reference(problem, inputs, cotangent, why_not_extended)
    _save(path, reference)
    return reference


def _symbolic_supports(problem) -> bool:
    """Whether the SymPy backend takes the problem at all (it refuses, e.g., problems tagged
    'large-expression', whose expression would take minutes to build before any limit)."""
    from ..backends.symbolic import SympyBackend

    return bool(SympyBackend().supports(problem))


def symbolic_reference(problem, inputs, cotangent, digits: int = DIGITS) -> Reference:
    """The exact gradient (reverse accumulation over the SymPy DAG) at ``digits`` digits."""
    gradient_at = exact_gradient_program(problem, inputs, cotangent)
    values = [inputs[i] for i in problem.wrt]
    point = [mpmath.mpf(float(v)) for a in values for v in np.asarray(a, dtype=np.float64).ravel()]
    with mpmath.workdps(digits):
        flat = gradient_at(point)
    out_values, k = [], 0
    for a in values:
        n = int(np.size(a))
        arr = np.empty(n, dtype=object)
        arr[:] = flat[k:k + n]
        out_values.append(arr.reshape(np.shape(a)))
        k += n
    return Reference(tuple(out_values), SYMBOLIC_LABEL, digits)


def exact_gradient_program(problem, inputs, cotangent=None):
    """``gradient_at(point) -> [mpf]``: the exact gradient program (reverse accumulation over
    the SymPy DAG; a VJP with ``cotangent``), evaluated in mpmath at the working precision at
    any flat point of mpf values.  Raises ``NotImplementedError`` past ``MAX_DAG_EDGES``."""
    import sympy

    from ..backends.sympy_dag import dag_edges, reverse_program
    from ..problems import symbolic

    sym = symbolic.symbols_like(inputs, problem.wrt)
    out = np.asarray(problem.fn(symbolic.sympy_xp, *sym.args), dtype=object).reshape(-1)
    outputs = [sympy.sympify(e) for e in out]
    edges = dag_edges(outputs)
    if edges > MAX_DAG_EDGES:
        raise NotImplementedError(f"the function's DAG has {edges} edges (limit {MAX_DAG_EDGES})")
    seeds = None
    if cotangent is not None:
        seeds = [sympy.Rational(float(c)) for c in np.asarray(cotangent, dtype=np.float64).ravel()]
    program = reverse_program(outputs, sym.wrt_flat, seeds=seeds)

    def gradient_at(point):
        env = dict(zip(sym.wrt_flat, point))
        for s, rhs in program.assignments:
            env[s] = _mp_eval(rhs, env)
        return [mpmath.mpf(_mp_eval(g, env)) for g in program.gradient]

    return gradient_at


def _mp_eval(expr, env):
    """``expr`` evaluated in mpmath at the working precision, symbols from ``env``.  Float
    constants are taken as the exact binary fractions they hold (``mpf`` of their ``_mpf_``),
    so the digits are digits of the float64 program.  (Program right-hand sides are small:
    the recursion is shallow.)"""
    if expr in env:
        return env[expr]
    if expr.is_Float:
        return mpmath.mpf(expr._mpf_)
    if expr.is_Rational:
        return mpmath.mpf(int(expr.p)) / int(expr.q)
    if expr.is_Boolean and not expr.args:
        return bool(expr)
    if not expr.args:
        return mpmath.mpf(expr.evalf(mpmath.mp.dps + 5))       # pi, E
    kind = type(expr).__name__
    if kind == "Piecewise":
        for piece, cond in expr.args:
            if _mp_eval(cond, env):
                return _mp_eval(piece, env)
        raise ValueError(f"no branch of {expr} applies")
    args = [_mp_eval(a, env) for a in expr.args]
    if expr.is_Add:
        return mpmath.fsum(args)
    if expr.is_Mul:
        return mpmath.fprod(args)
    if expr.is_Pow:
        return mpmath.power(*args)
    if kind in _MP_FUNCTIONS:
        return _MP_FUNCTIONS[kind](*args)
    raise NotImplementedError(f"no mpmath evaluation for {kind}")


def _heaviside(x, h0=None):
    return (mpmath.mpf(1) / 2 if h0 is None else h0) if x == 0 else (mpmath.mpf(1) if x > 0 else mpmath.mpf(0))


_MP_FUNCTIONS = {
    "exp": mpmath.exp, "log": mpmath.log, "sin": mpmath.sin, "cos": mpmath.cos, "tan": mpmath.tan,
    "tanh": mpmath.tanh, "sinh": mpmath.sinh, "cosh": mpmath.cosh, "atan": mpmath.atan,
    "Abs": abs, "sign": mpmath.sign, "Heaviside": _heaviside, "Max": max, "Min": min,
    "StrictLessThan": lambda a, b: a < b, "LessThan": lambda a, b: a <= b,
    "StrictGreaterThan": lambda a, b: a > b, "GreaterThan": lambda a, b: a >= b,
    "Equality": lambda a, b: a == b, "Unequality": lambda a, b: a != b,
    "And": lambda *a: all(a), "Or": lambda *a: any(a), "Not": lambda a: not a,
}


def extended_reference(problem, inputs, cotangent) -> Reference:
    """The gradient in long double by the engine's and autograd's programs, which must agree
    (:mod:`diffcompare.measure.extended`); its label states the format, the agreement and
    the seconds it took.  Raises ``NotImplementedError`` where it cannot be made."""
    from . import extended

    values, agreement, seconds = extended.extended_gradient(problem, inputs, cotangent)
    label = (f"{EXTENDED_LABEL}: the engine's and autograd's programs in {extended.describe()}, "
             f"agreeing to rho {agreement:.0e}; {seconds:.1f} s")
    return Reference(tuple(np.asarray(v, dtype=np.longdouble) for v in values), label,
                     EXTENDED_DIGITS)


def agreement_members(label: str) -> tuple:
    """The methods a fallback reference was made from (empty for a high-precision one):
    judging them against it would judge them against themselves.

    >>> agreement_members("float64 agreement of exact methods (engine, torch; max rho 0.0e+00; "
    ...                   "its members are not ranked against it)")
    ('engine', 'torch')
    >>> agreement_members(SYMBOLIC_LABEL)
    ()
    """
    if not label.startswith(AGREEMENT_LABEL + " ("):
        return ()
    names = label[len(AGREEMENT_LABEL) + 2:].split(";")[0]
    return tuple(n.strip() for n in names.split(",") if n.strip())


def agreement_reference(problem, inputs, cotangent, why_not_extended=None) -> Reference:
    """The engine's float64 gradient, checked against JAX and PyTorch where installed; the
    label ends with why no extended-precision reference was made, when given."""
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
    why = f"; extended precision: {why_not_extended}" if why_not_extended else ""
    label = f"{AGREEMENT_LABEL} ({', '.join(results)}; max rho {spread:.1e}; {MEMBERS_NOTE}{why})"
    return Reference(tuple(np.asarray(v, dtype=np.float64) for v in base), label, 15)


#: a Hessian's reference has every column up to this many inputs, else this many seeded ones
HESSIAN_REFERENCE_COLUMNS = 64
HESSIAN_SAMPLED_COLUMNS = 8
#: the step of the Hessian reference's central differences, taken at 2 × DIGITS digits: its
#: truncation (h²) and cancellation (10^-2·DIGITS / h) errors are both far below float64's
HESSIAN_REFERENCE_STEP = "1e-25"


def operator_accuracy(problem, operator, result, size, seed, cache_dir=None,
                      tangent=None) -> tuple:
    """``(errors, label)`` of a measured operator's ``result`` (``problems.MEASURED_OPERATORS``;
    a flat-layout ndarray or a sparse operator, judged whole, its structural zeros too)
    against a reference computed apart from the method judged:

    - the problem's exact value where it gives one (``problem.exact_operators``, e.g.
      k-means' Hessian diagonal, 2 × the cluster counts);
    - a Jacobian J (dense or sparse): the VJP cᵀJ with the problem's cotangent against the
      reference VJP (``reference_gradient``; a wrong entry J_ij shows in column j, as c_i
      times its error);
    - a Hessian H (dense or sparse) or its diagonal (every column up to ``HESSIAN_REFERENCE_COLUMNS`` inputs,
      else ``HESSIAN_SAMPLED_COLUMNS`` seeded ones) and H v: central differences of the exact
      gradient program (:func:`exact_gradient_program`) in mpmath at 100 digits with step
      ``HESSIAN_REFERENCE_STEP`` -- exact to far beyond float64, and none of the methods;
      made once per (problem, size, seed) and cached (:func:`reference_hessian`);
    - else ``(None, "not-measured: ...")``."""
    dense = _dense(result)
    exact = problem.exact_operators.get(operator)
    if exact is not None:
        reference = _flat(exact(*problem.inputs(size, seed)))
        return (errors((dense.reshape(-1),), (reference,)),
                f"exact {operator} from the inputs ({exact.__name__})")
    if operator.startswith("jacobian"):
        reference = reference_gradient(problem, size, seed, cache_dir=cache_dir)
        c = np.asarray(problem.cotangent(size, seed), dtype=np.float64).reshape(-1)
        return (errors((c @ dense,), (_flat(reference.values),)),
                f"cᵀJ against the reference VJP: {reference.label}")
    if operator.startswith("hessian") or operator == "hvp":
        reference = reference_hessian(problem, size, seed, tangent if operator == "hvp" else None,
                                      cache_dir=cache_dir)
        if not reference.values:
            return None, reference.label
        if operator == "hvp":
            return errors((dense,), reference.values), reference.label
        columns = hessian_reference_columns(dense.shape[0], seed)
        rows = reference.values[0]             # row k: column columns[k] of H
        if operator == "hessian_diagonal":     # H_jj: the j-th entry of column j
            return (errors((dense[columns],), (np.array([r[j] for r, j in zip(rows, columns)]),)),
                    reference.label)
        return errors(tuple(dense[:, j] for j in columns), tuple(rows)), reference.label
    return None, f"not-measured: problem {problem.name!r} gives no exact {operator}"


def hessian_reference_columns(n: int, seed: int) -> list:
    """The columns of H a Hessian reference holds: every one up to
    ``HESSIAN_REFERENCE_COLUMNS`` inputs, else ``HESSIAN_SAMPLED_COLUMNS`` seeded ones."""
    if n <= HESSIAN_REFERENCE_COLUMNS:
        return list(range(n))
    return sorted(int(j) for j in np.random.default_rng(seed).choice(
        n, HESSIAN_SAMPLED_COLUMNS, replace=False))


def reference_hessian(problem, size, seed, tangent=None, cache_dir=None) -> Reference:
    """The Hessian reference of ``operator_accuracy``, computed once per (problem, size, seed)
    and cached on disk beside the gradient's (keyed likewise, and by ``tangent``): H v for a
    ``tangent``, else the columns ``hessian_reference_columns`` names as the rows of one
    ``(columns, n)`` array of mpf.  Where none can be made (no exact gradient program, over
    ``SYMBOLIC_BUDGET_S``) its ``values`` are empty and its label says why -- cached too, so
    the next method of the cell does not spend the budget again."""
    inputs = problem.inputs(size, seed)
    kind = "hessian" if tangent is None else "hvp"
    key = _cache_key(problem, size, seed, inputs, tangent,
                     extra=f"{kind}-{HESSIAN_REFERENCE_COLUMNS}-{HESSIAN_SAMPLED_COLUMNS}-"
                           f"{HESSIAN_REFERENCE_STEP}")
    path = pathlib.Path(cache_dir or default_cache_dir()) / f"{key}-{kind}.json"
    cached = _cached(path)
    if cached is not None:
        return cached
    try:
        reference = _hessian_reference(problem, inputs, seed, tangent)
    except (NotImplementedError, TypeError, ValueError, ZeroDivisionError, OverBudget) as exc:
        reference = Reference((), "not-measured: no exact gradient program for a Hessian "
                                  f"reference ({exc})", 0)
    _save(path, reference)
    return reference


def _hessian_reference(problem, inputs, seed, tangent) -> Reference:
    if not _symbolic_supports(problem):
        raise NotImplementedError("SymPy does not take this problem")
    with time_budget(SYMBOLIC_BUDGET_S):
        gradient_at = exact_gradient_program(problem, inputs)
        x = [mpmath.mpf(float(v)) for v in _flat(tuple(inputs[i] for i in problem.wrt))]
        n = len(x)
        with mpmath.workdps(2 * DIGITS):
            h = mpmath.mpf(HESSIAN_REFERENCE_STEP)

            def along(v):           # H v = (∇f(x + h v) - ∇f(x - h v)) / 2h
                up = gradient_at([a + h * b for a, b in zip(x, v)])
                down = gradient_at([a - h * b for a, b in zip(x, v)])
                return np.array([(u - d) / (2 * h) for u, d in zip(up, down)], dtype=object)

            how = (f"by central differences (h = {HESSIAN_REFERENCE_STEP}) of the exact "
                   f"gradient program at {2 * DIGITS} digits")
            if tangent is not None:
                return Reference((along([mpmath.mpf(float(t)) for t in tangent]),),
                                 f"H v {how}", 2 * DIGITS)
            columns = hessian_reference_columns(n, seed)
            eye = np.eye(n)
            rows = np.empty((len(columns), n), dtype=object)
            for k, j in enumerate(columns):
                rows[k] = along([mpmath.mpf(e) for e in eye[j]])
    which = "every column" if n <= HESSIAN_REFERENCE_COLUMNS else \
        f"{HESSIAN_SAMPLED_COLUMNS} seeded columns of {n}"
    return Reference((rows,), f"{which} {how}", 2 * DIGITS)


def _dense(result) -> np.ndarray:
    """A result as a dense float64 array (a sparse operator's matrix densified)."""
    matrix = getattr(result, "matrix", result)
    return np.asarray(matrix.toarray() if hasattr(matrix, "toarray") else matrix, dtype=np.float64)


def _flat(values) -> np.ndarray:
    """Arrays (one per differentiated argument) as one flat array, dtype kept (mpf objects)."""
    parts = [np.asarray(v).reshape(-1) for v in values]
    return np.concatenate(parts) if parts else np.zeros(0)


def errors(grads, reference) -> dict:
    """``rel`` and ``rho`` errors of ``grads`` against ``reference``, max over all elements.

    Differences are taken in high precision when the reference carries it, so
    errors near 1e-16 are not swamped by rounding the reference to float64.
    """
    diffs, x_abs, y_abs = [], [], []
    for g, r in zip(grads, reference):
        g = np.asarray(g, dtype=np.float64)
        r = np.asarray(r)
        if r.dtype == object:                       # mpf (SymPy's 50 digits): small problems only
            with mpmath.workdps(DIGITS):
                d = np.array([float(abs(mpmath.mpf(float(a)) - b)) for a, b in zip(g.ravel(), r.ravel())])
            ry = np.array([float(abs(b)) for b in r.ravel()])
        else:                                       # float64, or long double (vectorised)
            wide = np.result_type(r.dtype, np.float64)
            d = np.abs(g.ravel().astype(wide) - r.ravel()).astype(np.float64)
            ry = np.abs(r.ravel()).astype(np.float64)
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

def _cache_key(problem, size, seed, inputs, cotangent, extra: str = "") -> str:
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
    h.update(f"v{CACHE_VERSION}-{DIGITS}-{SYMBOLIC_LIMIT}-{MAX_DAG_EDGES}{extra}".encode())
    return f"{problem.name}-{size}-{seed}-{h.hexdigest()[:16]}"


def _save(path: pathlib.Path, ref: Reference) -> None:
    """The label and digits as JSON; mpf values as strings in it, arrays (float64, and long
    double as a float64 pair whose sum is exact) in an ``.npz`` beside it: a 10⁷-element
    reference is 160 MB of binary rather than half a GB of decimal strings."""
    path.parent.mkdir(parents=True, exist_ok=True)
    values, arrays = [], {}
    for i, v in enumerate(ref.values):
        v = np.asarray(v)
        if v.dtype == object:
            values.append({"shape": list(v.shape), "data": [
                mpmath.nstr(x, ref.digits, strip_zeros=False) if isinstance(x, mpmath.mpf)
                else repr(float(x)) for x in v.ravel()]})
            continue
        hi = v.astype(np.float64)
        arrays[f"v{i}_hi"] = hi
        if v.dtype != np.float64:
            arrays[f"v{i}_lo"] = (v - hi).astype(np.float64)
        values.append({"shape": list(v.shape), "array": v.dtype.name})
    doc = {"label": ref.label, "digits": ref.digits, "values": values}
    if arrays:                                   # written first: the JSON commits the entry
        with open(path.with_suffix(".npz.tmp"), "wb") as f:
            np.savez(f, **arrays)
        path.with_suffix(".npz.tmp").replace(path.with_suffix(".npz"))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(path)     # atomic: a crash never leaves a half-written entry


def _load(path: pathlib.Path) -> Reference:
    doc = json.loads(path.read_text())
    values, arrays = [], None
    for i, v in enumerate(doc["values"]):
        if "array" in v:
            if arrays is None:
                arrays = np.load(path.with_suffix(".npz"))
            hi = arrays[f"v{i}_hi"]
            arr = hi if v["array"] == "float64" else (
                hi.astype(np.longdouble) + arrays[f"v{i}_lo"].astype(np.longdouble))
        elif doc["digits"] > 17:
            with mpmath.workdps(doc["digits"] + 5):
                flat = [mpmath.mpf(s) for s in v["data"]]
            arr = np.empty(len(flat), dtype=object)
            arr[:] = flat
        else:
            arr = np.array([float(s) for s in v["data"]], dtype=np.float64)
        values.append(arr.reshape(v["shape"]))
    return Reference(tuple(values), doc["label"], doc["digits"])


