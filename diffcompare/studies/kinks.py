"""What each method returns at a kink: relu, abs and max at exact zeros and exact ties.

At a kink a function has no derivative, so what a method returns there is a convention.
This study runs every backend on ``relu_kink`` (Σ maximum(x, 0)), ``abs_kink`` (Σ |x|)
and ``max_kink`` (Σ of row maxima with 2- and 3-way ties), through ``compute_gradient``,
and records the derivative it returns for every element, with the element's distance to
the kink (0 at the kink itself).  It also differentiates the dedicated relu *operations*
(the engine's ``Tensor.relu``, ``torch.relu``, ``jax.nn.relu``), which use another
convention than ``maximum(x, 0)``.

Rows: ``source`` ("problem" or "op"), ``problem``, ``backend``, ``element``, ``x``,
``library`` (the library and version that computed it: a convention is a fact of a
version, so an upgrade that changes one shows as a failed finding naming both),
``distance`` (how far the element is from changing the active branch), ``tie_size``
(elements sharing the max; 1 for relu/abs), ``kink``, ``derivative``, ``true_derivative``
(away from kinks), ``convention`` (what the method documents at a kink), ``status``,
``message``.
"""
from __future__ import annotations

import math

import numpy as np

from ..backends.registry import METHODS
from .common import Finding, fmt, no_data

NAME = "kinks"
TITLE = "Derivatives at kinks: each method's convention"
EXPECTED = (
    "At a kink every method returns a convention, not a derivative, and the conventions "
    "differ: the engine and PyTorch split ties evenly (maximum(x, 0)'(0) = 1/2, a k-way max "
    "tie gives 1/k to each element) and take abs'(0) = 0, while their dedicated relu "
    "operations take relu'(0) = 0; JAX splits ties the same way but takes abs'(0) = 1 "
    "(jax.nn.relu'(0) = 0); SymPy's Heaviside(0) = 1/2 gives 1/2 at maximum(x, 0) and to every "
    "element of a max tie (a 3-way tie sums to 3/2), and sign(0) = 0 for abs; central "
    "differences (and Richardson's) average the one-sided slopes (1/2 for relu, 0 for abs, 1/2 "
    "per tied element), forward differences return the right-hand slope (1 for relu and abs, 1 "
    "per tied element); the complex step refuses nonsmooth functions. Away from kinks exact "
    "methods return the true derivative; finite differences do so only when their step is "
    "smaller than the distance to the kink, and blend both sides when it is not (x = ±1e-8).")

PROBLEMS = ("relu_kink", "abs_kink", "max_kink")
EXACT_TOL, FD_TOL = 1e-12, 1e-9
FAR = 1e-3          # distance beyond every default finite-difference step


def _split(m):                      # even split of a tie among m elements
    return 1.0 / m


def _half(m):
    return 0.5


def _one(m):
    return 1.0


_SPLIT_ABS0 = "maximum(x, 0)'(0) = 1/2 (tie split), abs'(0) = 0, k-way max tie: 1/k each"
_SPLIT_ABS1 = "maximum(x, 0)'(0) = 1/2 (tie split), abs'(0) = 1, k-way max tie: 1/k each"
_HEAVISIDE = ("Heaviside(0) = 1/2: maximum(x, 0)'(0) = 1/2, every element of a max tie 1/2; "
              "sign(0) = 0 for abs")
_AVERAGE = "average of the one-sided slopes: relu 1/2, abs 0, each tied max element 1/2"
_RIGHT = "the right-hand slope: relu 1, abs 1, each tied max element 1"

# backend -> (relu at 0, abs at 0, value per tied element of a max tie of size m, wording)
CONVENTIONS = {
    "engine": (0.5, 0.0, _split, _SPLIT_ABS0),
    "torch": (0.5, 0.0, _split, _SPLIT_ABS0),
    "jax-jit": (0.5, 1.0, _split, _SPLIT_ABS1),
    "jax-eager": (0.5, 1.0, _split, _SPLIT_ABS1),
    "sympy": (0.5, 0.0, _half, _HEAVISIDE),
    "sympy-cse": (0.5, 0.0, _half, _HEAVISIDE),
    "sympy-reverse": (0.5, 0.0, _half, _HEAVISIDE),      # sympy's local derivatives of Max and Abs
    "fd-central": (0.5, 0.0, _half, _AVERAGE),
    "fd-richardson": (0.5, 0.0, _half, _AVERAGE),
    "fd-forward": (1.0, 1.0, _one, _RIGHT),
}
REFUSES = {"fd-complex-step": "refuses nonsmooth problems (complex abs/max give silently wrong derivatives)",
           "symengine": "refuses nonsmooth problems (SymEngine leaves d Max, d Abs unevaluated)"}
OP_CONVENTION = 0.0     # relu'(0) of the dedicated relu operations


# --- where the kinks are ----------------------------------------------------------------

def kink_geometry(problem_name: str, x) -> list[dict]:
    """Per flat element of ``x``: ``x``, ``distance`` to the kink, ``tie_size``, ``kink``,
    ``true_derivative`` (NaN at a kink)."""
    x = np.asarray(x, dtype=np.float64)
    out = []
    if problem_name in ("relu_kink", "abs_kink", "relu_op"):
        for v in x.reshape(-1):
            true = (1.0 if v > 0 else 0.0) if problem_name != "abs_kink" else float(np.sign(v))
            out.append({"x": float(v), "distance": abs(float(v)), "tie_size": 1, "kink": v == 0,
                        "true_derivative": math.nan if v == 0 else true})
        return out
    if problem_name == "max_kink":
        for row in x.reshape(x.shape[0], -1):
            top = row.max()
            tied = row == top
            m = int(tied.sum())
            for j, v in enumerate(row):
                others = np.delete(row, j)
                distance = float(v - others.max()) if tied[j] else float(top - v)
                kink = bool(tied[j] and m >= 2)
                out.append({"x": float(v), "distance": abs(distance), "tie_size": m if tied[j] else 0,
                            "kink": kink,
                            "true_derivative": math.nan if kink else (1.0 if tied[j] else 0.0)})
        return out
    raise ValueError(f"no kink geometry for problem {problem_name!r}")


def convention_value(backend: str, problem_name: str, tie_size: int):
    """What ``backend`` documents at a kink of ``problem_name`` (None if undocumented)."""
    if problem_name == "relu_op":
        return OP_CONVENTION
    conv = CONVENTIONS.get(backend)
    if conv is None:
        return None
    relu, absolute, tie, _ = conv
    return {"relu_kink": relu, "abs_kink": absolute}.get(problem_name, tie(tie_size) if tie_size else None)


# --- running --------------------------------------------------------------------------

def run(out_dir=None, quick: bool = False):
    import pandas as pd

    from .. import backends, problems

    rows = []
    for pname in PROBLEMS:
        problem = problems.get(pname)
        size = min(problem.sizes)
        inputs = problem.inputs(size, seed=0)
        geometry = kink_geometry(pname, inputs[0])
        for bname in backends.names():
            backend = backends.get(bname)
            base = {"source": "problem", "problem": pname, "backend": bname, "library": backend.library()}
            try:
                g, = backends.compute_gradient(backend, problem, inputs)
            except backends.UnsupportedError as exc:
                rows.append({**base, "status": "unsupported", "message": exc.reason})
                continue
            except backends.BackendError as exc:
                status = "unavailable" if exc.detail.startswith("unavailable") else "error"
                rows.append({**base, "status": status, "message": exc.detail})
                continue
            for i, (geo, d) in enumerate(zip(geometry, np.asarray(g).reshape(-1))):
                rows.append({**base, "element": i, **geo, "derivative": float(d),
                             "convention": convention_value(bname, pname, geo["tie_size"]) if geo["kink"] else None,
                             "status": "ok", "message": None})
    rows.extend(_relu_op_rows())
    columns = ["source", "problem", "backend", "library", "element", "x", "distance", "tie_size", "kink",
               "derivative", "true_derivative", "convention", "status", "message"]
    return pd.DataFrame(rows, columns=columns)


def _relu_op_rows():
    """relu'(x) of the dedicated relu operations at the kink points."""
    from .. import backends
    from ..problems.catalog.nonsmooth import KINK_POINTS

    x = np.array(KINK_POINTS, dtype=np.float64)
    geometry = kink_geometry("relu_op", x)
    rows = []
    for name, fn in (("engine", _engine_relu_grad), ("torch", _torch_relu_grad), ("jax", _jax_relu_grad)):
        library = backends.get({"jax": "jax-jit"}.get(name, name)).library()
        base = {"source": "op", "problem": "relu_op", "backend": name, "library": library}
        try:
            g = fn(x)
        except ImportError as exc:
            rows.append({**base, "status": "unavailable", "message": str(exc)})
            continue
        except Exception as exc:
            rows.append({**base, "status": "error", "message": f"{type(exc).__name__}: {exc}"})
            continue
        for i, (geo, d) in enumerate(zip(geometry, g)):
            rows.append({**base, "element": i, **geo, "derivative": float(d),
                         "convention": OP_CONVENTION if geo["kink"] else None, "status": "ok",
                         "message": None})
    return rows


def _engine_relu_grad(x):
    from ..engine import Tensor

    t = Tensor(x, requires_grad=True)
    t.relu().sum().backward()
    return np.asarray(t.grad.data if hasattr(t.grad, "data") else t.grad, dtype=np.float64)


def _torch_relu_grad(x):
    import torch

    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    torch.relu(t).sum().backward()
    return t.grad.numpy()


def _jax_relu_grad(x):
    from ..backends.jax_runtime import import_jax, x64_scope

    jax = import_jax()
    with x64_scope(jax, True):
        return np.asarray(jax.grad(lambda v: jax.nn.relu(v).sum())(jax.numpy.asarray(x)), dtype=np.float64)


# --- checks ------------------------------------------------------------------------------

def _differences(backend) -> bool:
    """Whether ``backend`` is a registered method that approximates (finite differences,
    which blend both sides of a kink within a step); the libraries' own ops are not."""
    method = METHODS.get(backend)
    return method is not None and not method.exact


def _tol(backend):
    return FD_TOL if _differences(backend) else EXACT_TOL


def _values(rows):
    return ", ".join(sorted({fmt(v, 3) for v in rows.derivative}))


def _check_method(df, backend, source, wording):
    rows = df[(df.backend == backend) & (df.source == source)]
    name = f"{backend}{' relu op' if source == 'op' else ''} at kinks"
    expected = wording + "; away from kinks the true derivative"
    ok_rows = rows[rows.status == "ok"]
    if ok_rows.empty:
        why = "; ".join(sorted(set(f"{r.problem}: {r.status} ({r.message})" for r in rows.itertuples()))) \
            or "not run"
        return no_data(name, expected, why)
    tol = _tol(backend)
    libraries = sorted(set(ok_rows.library.dropna().astype(str))) if "library" in ok_rows else []
    parts, ok = ([f"with {', '.join(libraries)}"] if libraries else []), True
    for pname, prow in ok_rows.groupby("problem", sort=False):
        kinks = prow[prow.kink.astype(bool)]
        held = bool(np.all(np.abs(kinks.derivative.astype(float) - kinks.convention.astype(float)) <= tol))
        distance = prow.distance.astype(float)
        far = distance >= FAR if _differences(backend) else distance > 0
        away = prow[~prow.kink.astype(bool) & far]
        true_ok = bool(np.all(np.abs(away.derivative.astype(float) - away.true_derivative.astype(float)) <= max(tol, 1e-9)))
        ok = ok and held and true_ok
        desc = f"{pname}: at kinks {_values(kinks)}"
        if pname == "max_kink":
            desc += " (" + ", ".join(f"{int(m)}-way tie -> {_values(kinks[kinks.tie_size == m])}"
                                     for m in sorted(set(kinks.tie_size))) + ")"
        if not true_ok:
            desc += f"; WRONG away from kinks ({len(away)} elements checked)"
        parts.append(desc)
    failed = rows[rows.status != "ok"]
    if len(failed):
        parts.append("not run on " + ", ".join(f"{r.problem} ({r.status})" for r in failed.itertuples()))
        ok = False
    return Finding(name, expected, "; ".join(parts), ok)


def check(df) -> list:
    findings = []
    for backend, (_, _, _, wording) in CONVENTIONS.items():
        findings.append(_check_method(df, backend, "problem", wording))
    for backend, wording in REFUSES.items():
        rows = df[(df.backend == backend) & (df.source == "problem")]
        name = f"{backend} at kinks"
        if rows.empty:
            findings.append(no_data(name, wording, "not run"))
        else:
            findings.append(Finding(name, wording, ", ".join(f"{r.problem}: {r.status}" for r in rows.itertuples()),
                                    bool((rows.status == "unsupported").all())))
    for backend in ("engine", "torch", "jax"):
        findings.append(_check_method(df, backend, "op", "relu'(0) = 0 (gradient only where x > 0)"))
    # finite differences straddle a kink closer than their step
    near = df[(df.source == "problem") & (df.status == "ok") & df.backend.isin(["fd-forward", "fd-central"])
              & (df.distance > 0) & (df.distance < FAR)]
    expected = ("at distance 1e-8 from a kink (less than the default steps, 1.5e-8 and 6e-6) the "
                "quotient blends both sides: some returned values are off the true derivative by > 1e-3")
    if near.empty:
        findings.append(no_data("finite differences near kinks", expected, "no near-kink rows"))
    else:
        off = near[np.abs(near.derivative - near.true_derivative) > 1e-3]
        examples = "; ".join(f"{r.backend} {r.problem} x={fmt(r.x)}: {fmt(r.derivative, 4)} (true {fmt(r.true_derivative)})"
                             for r in off.head(4).itertuples())
        findings.append(Finding("finite differences near kinks", expected,
                                f"{len(off)} of {len(near)} near-kink values off by > 1e-3, e.g. {examples}",
                                len(off) > 0))
    return findings
