"""How much of NumPy's differentiable API the engine differentiates, counted against HIPS autograd.

HIPS autograd (reverse mode over NumPy, the engine's closest peer) registers a VJP for
each NumPy function it differentiates.  This script takes that list (the public NumPy
names among ``autograd``'s primitives with a VJP, plus the functions autograd declares
with a zero gradient: floor, ceil, sign, ...), runs one or more gradient cases per name
through autograd and through the engine's array namespace, and counts per name:

- ``right``: every case's value and gradient equal autograd's (rtol 1e-8);
- ``wrong``: a case ran on the engine with a different value or gradient;
- ``convention``: equal to autograd's after a documented change of convention
  (``CONVENTIONS``: the engine follows PyTorch's where the two differ);
- ``missing``: the engine has no such name (or raises on it).

A case is ``f(xp, *inputs)``; its gradient is that of ``sum(f * W)`` for a seeded random
``W`` (so every output element is checked), for each input.  Names whose cases need
complex numbers (fft, eig, angle) are counted and reported as missing where the engine
refuses them.

    python benchmarks/numpy_coverage.py            # the summary and the names per class
    python benchmarks/numpy_coverage.py --verbose  # each case's outcome
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

R = np.random.default_rng(0)


def rand(*shape):
    return R.standard_normal(shape)


def pos(*shape):
    return R.uniform(0.5, 2.0, shape)


def unit(*shape):
    return R.uniform(-0.8, 0.8, shape)


def spd(n):
    a = R.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


#: name -> [(case label, f(xp, *inputs), inputs)]; names are NumPy's (``linalg.det``...)
CASES: dict = {}


def case(name, f, *inputs, label=""):
    CASES.setdefault(name, []).append((label or name, f, inputs))


# --- elementwise ------------------------------------------------------------------------
for _n in ["exp", "sin", "cos", "tanh", "negative", "square", "absolute", "fabs", "exp2",
           "expm1", "sinh", "cosh", "tan", "arctan", "arcsinh", "rad2deg", "deg2rad", "degrees",
           "radians", "sinc"]:
    case(_n, lambda xp, x, _n=_n: getattr(xp, _n)(x), rand(3, 4))
for _n in ["log", "sqrt", "log10", "log2", "log1p", "reciprocal"]:
    case(_n, lambda xp, x, _n=_n: getattr(xp, _n)(x), pos(3, 4))
for _n in ["arcsin", "arccos", "arctanh"]:
    case(_n, lambda xp, x, _n=_n: getattr(xp, _n)(x), unit(3, 4))
case("arccosh", lambda xp, x: xp.arccosh(x), pos(3, 4) + 1.0)
for _n in ["floor", "ceil", "sign", "round", "rint", "trunc"]:
    case(_n, lambda xp, x, _n=_n: getattr(xp, _n)(x) * x, rand(3, 4) * 3)
for _n in ["add", "subtract", "multiply", "maximum", "minimum", "fmax", "fmin", "logaddexp",
           "logaddexp2", "hypot", "arctan2"]:
    case(_n, lambda xp, x, y, _n=_n: getattr(xp, _n)(x, y), rand(2, 3), rand(3),
         label=f"{_n} broadcast")
for _n in ["divide", "true_divide", "power"]:
    case(_n, lambda xp, x, y, _n=_n: getattr(xp, _n)(x, y), pos(2, 3), pos(3), label=f"{_n} broadcast")
case("remainder", lambda xp, x, y: xp.remainder(x, y), rand(2, 3) * 3, pos(3))
case("mod", lambda xp, x, y: xp.mod(x, y), rand(2, 3) * 3, pos(3))
case("clip", lambda xp, x: xp.clip(x, -0.5, 0.5), rand(3, 4))
case("where", lambda xp, x, y: xp.where(x > 0, x, y), rand(3, 4), rand(3, 4))
case("nan_to_num", lambda xp, x: xp.nan_to_num(x), rand(3, 4))
case("real", lambda xp, x: xp.real(x), rand(3))
case("imag", lambda xp, x: xp.imag(x) + x, rand(3))
case("conjugate", lambda xp, x: xp.conjugate(x), rand(3))
case("conj", lambda xp, x: xp.conj(x), rand(3))

# --- reductions and scans ---------------------------------------------------------------
for _n in ["sum", "mean", "prod", "var", "std", "max", "min", "amax", "amin"]:
    case(_n, lambda xp, x, _n=_n: getattr(xp, _n)(x), pos(3, 4), label=f"{_n} all")
    case(_n, lambda xp, x, _n=_n: getattr(xp, _n)(x, axis=1, keepdims=True), pos(3, 4),
         label=f"{_n} axis=1 keepdims")
case("var", lambda xp, x: xp.var(x, axis=0, ddof=1), rand(4, 3), label="var ddof=1")
case("std", lambda xp, x: xp.std(x, axis=0, ddof=1), rand(4, 3), label="std ddof=1")
case("cumsum", lambda xp, x: xp.cumsum(x, axis=1), rand(3, 4))
case("cumsum", lambda xp, x: xp.cumsum(x), rand(3, 4), label="cumsum flat")
case("trace", lambda xp, x: xp.trace(x), rand(4, 4))
case("diag", lambda xp, x: xp.diag(x), rand(4, 4), label="diag of matrix")
case("diag", lambda xp, x: xp.diag(x), rand(4), label="diag of vector")
case("diagonal", lambda xp, x: xp.diagonal(x, 0, -1, -2), rand(2, 4, 4))
case("diff", lambda xp, x: xp.diff(x, axis=0), rand(4, 3))
case("sort", lambda xp, x: xp.sort(x), rand(7))
case("tril", lambda xp, x: xp.tril(x), rand(4, 4))
case("triu", lambda xp, x: xp.triu(x, 1), rand(4, 4))

# --- shapes -----------------------------------------------------------------------------
case("reshape", lambda xp, x: xp.reshape(x, (4, 3)), rand(3, 4))
case("ravel", lambda xp, x: xp.ravel(x), rand(3, 4))
case("transpose", lambda xp, x: xp.transpose(x), rand(3, 4))
case("swapaxes", lambda xp, x: xp.swapaxes(x, 0, 2), rand(2, 3, 4))
case("moveaxis", lambda xp, x: xp.moveaxis(x, 0, -1), rand(2, 3, 4))
case("rollaxis", lambda xp, x: xp.rollaxis(x, 2), rand(2, 3, 4))
case("expand_dims", lambda xp, x: xp.expand_dims(x, 1), rand(3, 4))
case("squeeze", lambda xp, x: xp.squeeze(x), rand(3, 1, 4))
case("broadcast_to", lambda xp, x: xp.broadcast_to(x, (3, 4)), rand(1, 4))
case("repeat", lambda xp, x: xp.repeat(x, 2, axis=1), rand(3, 4))
case("tile", lambda xp, x: xp.tile(x, (2, 1)), rand(3, 4))
case("roll", lambda xp, x: xp.roll(x, 2, axis=1), rand(3, 4))
case("fliplr", lambda xp, x: xp.fliplr(x), rand(3, 4))
case("flipud", lambda xp, x: xp.flipud(x), rand(3, 4))
case("rot90", lambda xp, x: xp.rot90(x), rand(3, 4))
case("atleast_1d", lambda xp, x: xp.atleast_1d(x), rand())
case("atleast_2d", lambda xp, x: xp.atleast_2d(x), rand(3))
case("atleast_3d", lambda xp, x: xp.atleast_3d(x), rand(3))
case("concatenate", lambda xp, x, y: xp.concatenate([x, y], axis=0), rand(2, 3), rand(1, 3))
case("stack", lambda xp, x, y: xp.stack([x, y], axis=1), rand(2, 3), rand(2, 3))
case("vstack", lambda xp, x, y: xp.vstack([x, y]), rand(2, 3), rand(3))
case("hstack", lambda xp, x, y: xp.hstack([x, y]), rand(3), rand(2))
case("column_stack", lambda xp, x, y: xp.column_stack([x, y]), rand(3), rand(3))
case("append", lambda xp, x, y: xp.append(x, y), rand(3), rand(2))
case("pad", lambda xp, x: xp.pad(x, ((1, 0), (2, 1)), mode="constant"), rand(3, 4))
case("split", lambda xp, x: xp.split(x, 2, axis=1)[1], rand(3, 4))
case("array_split", lambda xp, x: xp.array_split(x, 3)[2], rand(7))
case("vsplit", lambda xp, x: xp.vsplit(x, 2)[0], rand(4, 3))
case("hsplit", lambda xp, x: xp.hsplit(x, 2)[1], rand(3, 4))
case("dsplit", lambda xp, x: xp.dsplit(x, 2)[1], rand(2, 3, 4))
case("select", lambda xp, x: xp.select([x > 0.5, x < -0.5], [x, x * x], 0.0), rand(3, 4))
case("array", lambda xp, x, y: xp.array([x, y, x * y]), rand(), rand())
case("linspace", lambda xp, x: xp.linspace(x, 2 * x, 5), rand(), label="linspace of a scalar")
case("full", lambda xp, x: xp.full((2, 3), x), rand())
case("astype", lambda xp, x: xp.astype(x, xp.float64) if hasattr(xp, "astype") else x.astype("float64"),
     rand(3))

# --- linear algebra ---------------------------------------------------------------------
case("matmul", lambda xp, x, y: xp.matmul(x, y), rand(2, 3, 4), rand(4, 5))
case("dot", lambda xp, x, y: xp.dot(x, y), rand(3, 4), rand(4, 5), label="dot 2-D")
case("dot", lambda xp, x, y: xp.dot(x, y), rand(2, 3, 4), rand(5, 4, 2), label="dot N-D")
case("inner", lambda xp, x, y: xp.inner(x, y), rand(3, 4), rand(2, 4))
case("outer", lambda xp, x, y: xp.outer(x, y), rand(3), rand(4))
case("tensordot", lambda xp, x, y: xp.tensordot(x, y, axes=([1, 2], [0, 1])), rand(2, 3, 4), rand(3, 4, 5))
case("einsum", lambda xp, x, y: xp.einsum("ij,jk->ik", x, y), rand(3, 4), rand(4, 2))
case("einsum", lambda xp, x, y: xp.einsum("bij,bj->bi", x, y), rand(2, 3, 4), rand(2, 4), label="einsum batched")
case("kron", lambda xp, x, y: xp.kron(x, y), rand(2, 3), rand(3, 2))
case("cross", lambda xp, x, y: xp.cross(x, y), rand(4, 3), rand(4, 3))
case("linalg.det", lambda xp, x: xp.linalg.det(x), rand(4, 4))
case("linalg.slogdet", lambda xp, x: xp.linalg.slogdet(x)[1], rand(4, 4))
case("linalg.inv", lambda xp, x: xp.linalg.inv(x), spd(4))
case("linalg.solve", lambda xp, a, b: xp.linalg.solve(a, b), spd(4), rand(4, 2))
case("linalg.cholesky", lambda xp, x: xp.linalg.cholesky(x), spd(4))
case("linalg.eigh", lambda xp, x: xp.linalg.eigh(x)[0], spd(4), label="eigh values")
case("linalg.norm", lambda xp, x: xp.linalg.norm(x), rand(3, 4), label="norm fro")
case("linalg.norm", lambda xp, x: xp.linalg.norm(x, axis=1), rand(3, 4), label="norm rows")
case("linalg.pinv", lambda xp, x: xp.linalg.pinv(x), rand(4, 3))
case("linalg.svd", lambda xp, x: xp.linalg.svd(x, compute_uv=False), rand(4, 3), label="singular values")

# --- complex and spectral: autograd differentiates these, the engine is real-valued -------
case("fft.fft", lambda xp, x: xp.real(xp.fft.fft(x)), rand(8))
case("fft.rfft", lambda xp, x: xp.real(xp.fft.rfft(x)), rand(8))
case("fft.ifft", lambda xp, x: xp.real(xp.fft.ifft(x)), rand(8))
case("fft.fft2", lambda xp, x: xp.real(xp.fft.fft2(x)), rand(4, 4))
case("fft.fftshift", lambda xp, x: xp.fft.fftshift(x), rand(8))
case("angle", lambda xp, x: xp.angle(x), rand(4))
case("linalg.eig", lambda xp, x: xp.real(xp.linalg.eig(x)[0]), spd(3))
case("gradient", lambda xp, x: xp.gradient(x), rand(6))
case("partition", lambda xp, x: xp.partition(x, 2), rand(6))
case("real_if_close", lambda xp, x: xp.real_if_close(x), rand(3))


#: name -> (transform of autograd's gradient, why): where the engine follows PyTorch's
#: convention and autograd another, the engine's gradient is compared with the transformed one
#: and the name is counted in "convention" (a documented difference, not an error)
CONVENTIONS = {
    "linalg.eigh": (lambda g: (g + np.swapaxes(g, -1, -2)) / 2,
                    "the engine (as torch) returns the symmetric gradient; autograd the "
                    "lower triangle's, which NumPy's eigh reads"),
}


def _get(xp, dotted):
    for part in dotted.split("."):
        xp = getattr(xp, part)
    return xp


def _weighted_sum(xp, out, weights):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    total = 0.0
    for o, w in zip(outs, weights):
        total = total + xp.sum(o * w)
    return total


def _weights(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    g = np.random.default_rng(1)
    return [g.standard_normal(np.shape(o)) for o in outs]


def autograd_case(f, inputs):
    import autograd
    import autograd.numpy as anp

    out = f(anp, *inputs)
    w = _weights(out)
    grads = autograd.grad(lambda *xs: _weighted_sum(anp, f(anp, *xs), w),
                          argnum=list(range(len(inputs))))(*inputs)
    return out, w, grads


def engine_case(f, inputs, w):
    from diffcompare.engine import Tensor, array_api

    xs = [Tensor(np.array(x, dtype=np.float64), requires_grad=True) for x in inputs]
    out = f(array_api, *xs)
    _weighted_sum(array_api, out, w).backward()
    return out, [np.zeros(np.shape(x)) if x.grad is None else x.grad.data for x in xs]


def _values(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [np.asarray(getattr(o, "data", o), dtype=np.float64) for o in outs]


def run_case(name, f, inputs):
    """'right', 'wrong' or 'missing', and a reason."""
    try:
        ref_out, w, ref_grads = autograd_case(f, inputs)
    except Exception as exc:   # noqa: BLE001 - autograd itself cannot: the case says nothing
        return "no reference", f"autograd raises {type(exc).__name__}: {str(exc)[:80]}"
    try:
        out, grads = engine_case(f, inputs, w)
    except (AttributeError, NotImplementedError) as exc:
        return "missing", f"{type(exc).__name__}: {str(exc)[:90]}"
    except Exception as exc:   # noqa: BLE001 - any failure of a name the engine has
        return "wrong", f"raises {type(exc).__name__}: {str(exc)[:90]}"
    for ours, theirs in zip(_values(out), _values(ref_out)):
        if ours.shape != theirs.shape or not np.allclose(ours, theirs, rtol=1e-8, atol=1e-10):
            return "wrong", f"value differs (shape {ours.shape} vs {theirs.shape})"
    convention = None
    for i, (ours, theirs) in enumerate(zip(grads, ref_grads)):
        theirs = np.asarray(theirs, dtype=np.float64)
        if ours.shape == theirs.shape and np.allclose(ours, theirs, rtol=1e-8, atol=1e-10):
            continue
        if name in CONVENTIONS and np.allclose(ours, CONVENTIONS[name][0](theirs), rtol=1e-8,
                                               atol=1e-10):
            convention = CONVENTIONS[name][1]
            continue
        return "wrong", f"gradient of input {i} differs"
    return ("convention", convention) if convention else ("right", "")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    import warnings

    warnings.simplefilter("ignore")
    per_name, n_cases = {}, 0
    for name, cases in CASES.items():
        outcome = None
        for label, f, inputs in cases:
            n_cases += 1
            status, reason = run_case(name, f, inputs)
            if status == "convention" and args.verbose:
                reason = f"({reason})"
            if args.verbose:
                print(f"{status:8s} {label:28s} {reason}")
            if status == "no reference":
                continue
            if outcome is None:
                outcome = status
            elif status != "right" and outcome not in ("missing", "wrong"):
                outcome = status
            if status == "missing":
                outcome = "missing"
        per_name[name] = outcome
    by = {k: sorted(n for n, o in per_name.items() if o == k) for k in ("right", "convention", "wrong", "missing")}
    unjudged = sorted(set(per_name) - set().union(*by.values()))
    if unjudged:   # every case of the name failed on autograd itself
        print(f"not counted (autograd fails on every case): {', '.join(unjudged)}")
        per_name = {n: o for n, o in per_name.items() if n not in unjudged}
    total = len(per_name)
    print(f"{total} NumPy names that HIPS autograd differentiates, {n_cases} gradient cases")
    for k in ("right", "convention", "wrong", "missing"):
        print(f"  {k:8s} {len(by[k]):4d} ({100 * len(by[k]) / total:.0f}%): {', '.join(by[k])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
