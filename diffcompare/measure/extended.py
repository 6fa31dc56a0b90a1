"""A gradient reference in extended precision, for problems too large for SymPy's.

The float64 program of a gradient, evaluated in ``numpy.longdouble`` (x86's 80-bit extended
format: a 64-bit significand, eps = 1.1e-19; IEEE quad on some other CPUs) by two
independent reverse-mode programs: the engine's and HIPS autograd's.  Neither shares float64
rounding with the methods the reference judges, and each checks the other's derivative rules:
the reference is accepted only when they agree to ``AGREEMENT_RHO`` (on the catalog they
agree to 1e-16 or better, where float64 methods differ from them by 1e-15 to 1e-12).  Inputs
and constants are the float64 values taken exactly, as for the 50-digit SymPy reference.

Where ``longdouble`` is plain float64 (Windows, macOS on ARM) or either program cannot run
the problem in it, :func:`extended_gradient` raises ``NotImplementedError`` with the reason,
and the caller falls back to the float64 agreement of the exact methods.

>>> import numpy as np
>>> from diffcompare import problems
>>> p = problems.get("rosenbrock")
>>> if not available():
...     print("skipped")
... else:
...     values, agreement, _ = extended_gradient(p, p.inputs(4), None)
...     print(values[0].dtype == np.longdouble, agreement < AGREEMENT_RHO)
True True
"""
from __future__ import annotations

import time

import numpy as np

#: the two long-double programs must agree to this ρ (max over elements) to be a reference
AGREEMENT_RHO = 1e-15
#: below this unit roundoff a long double carries digits float64 does not (x86: 1.1e-19)
MAX_EPS = 1e-18


def available() -> bool:
    """Whether this platform's ``longdouble`` is wider than float64."""
    return bool(np.finfo(np.longdouble).eps <= MAX_EPS)


def describe() -> str:
    """The format, for a label: ``long double (64-bit significand, eps 1.1e-19)``."""
    info = np.finfo(np.longdouble)
    return f"long double ({info.nmant + 1}-bit significand, eps {float(info.eps):.1e})"


def extended_gradient(problem, inputs, cotangent) -> tuple:
    """``(values, agreement, seconds)``: the engine's gradient (or VJP with ``cotangent``) of
    ``problem`` at ``inputs`` in long double, the ρ by which autograd's differs from it, and
    the seconds both took.  Raises ``NotImplementedError`` saying why when it cannot be made."""
    if not available():
        raise NotImplementedError(f"numpy.longdouble is float64 on this platform "
                                  f"(eps {float(np.finfo(np.longdouble).eps):.1e})")
    started = time.perf_counter()
    results = {}
    for name, program in (("engine", _engine), ("autograd", _autograd)):
        try:
            grads = program(problem, inputs, cotangent)
        except ImportError as exc:
            raise NotImplementedError(f"{name} is not installed ({exc})") from None
        except Exception as exc:       # a name or op the program lacks in long double
            raise NotImplementedError(f"{name} cannot run {problem.name!r} in long double: "
                                      f"{type(exc).__name__}: {exc}") from None
        grads = [np.asarray(g) for g in grads]
        narrow = [str(g.dtype) for g in grads if g.dtype != np.longdouble]
        if narrow:
            raise NotImplementedError(f"{name}'s gradient of {problem.name!r} came back as "
                                      f"{', '.join(narrow)}, not long double")
        results[name] = grads
    agreement = rho(results["engine"], results["autograd"])
    if not agreement <= AGREEMENT_RHO:
        raise NotImplementedError(f"the engine's and autograd's long-double gradients of "
                                  f"{problem.name!r} differ by ρ {agreement:.1e} "
                                  f"(a reference needs ≤ {AGREEMENT_RHO:.0e})")
    return tuple(results["engine"]), agreement, time.perf_counter() - started


def rho(a, b) -> float:
    """max |x - y| / max(1, |x| + |y|) over every element, in long double."""
    worst = 0.0
    for x, y in zip(a, b):
        x, y = np.asarray(x, dtype=np.longdouble), np.asarray(y, dtype=np.longdouble)
        if x.size:
            worst = max(worst, float(np.max(np.abs(x - y) / np.maximum(1, np.abs(x) + np.abs(y)))))
    return worst


def _long(a):
    a = np.asarray(a)
    return a.astype(np.longdouble) if a.dtype.kind == "f" else a


def _engine(problem, inputs, cotangent):
    from ..engine import Tensor, array_api, autograd

    args = [Tensor(_long(a)) for a in inputs]
    leaves = [Tensor(_long(inputs[i]), requires_grad=True) for i in problem.wrt]
    for i, leaf in zip(problem.wrt, leaves):
        args[i] = leaf
    out = problem.fn(array_api, *args)
    if not out.requires_grad:
        return [np.zeros_like(leaf.data) for leaf in leaves]
    seed = None if cotangent is None else _long(cotangent)
    grads = autograd.grad(out, leaves, seed, allow_unused=True, materialize_grads=True)
    return [getattr(g, "data", g) for g in grads]


def _autograd(problem, inputs, cotangent):
    import autograd.numpy as anp
    from autograd import make_vjp

    def f(wrt_values):
        args = [_long(a) for a in inputs]
        for i, v in zip(problem.wrt, wrt_values):
            args[i] = v
        return problem.fn(anp, *args)

    pullback, out = make_vjp(f)(tuple(_long(inputs[i]) for i in problem.wrt))
    seed = np.ones_like(np.asarray(out)) if cotangent is None else \
        _long(cotangent).reshape(np.shape(out))
    return pullback(seed)
