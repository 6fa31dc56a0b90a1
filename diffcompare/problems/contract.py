"""The ``xp`` contract: the names a problem's ``fn(xp, *args)`` may use.

A problem is written once and runs on five namespaces: NumPy (finite differences, the
hand-written gradients), ``jax.numpy``, the engine's namespace, SymPy's
(``diffcompare.problems.symbolic.sympy_xp``) and PyTorch's
(``diffcompare.backends.torch_namespace``, built on array-api-compat).  ``NAMES`` lists what
works on all five, with NumPy's meaning (``axis``/``keepdims`` for reductions, given by keyword
as in the array API standard; float64 for new arrays).

A few names NumPy lacks are provided by diffcompare (``PROVIDED``) wherever a namespace
has no name of its own, written with contract names only:

- ``logsumexp(x, axis=None, keepdims=False)``: ``m + log(sum(exp(x - m)))`` with ``m`` the
  maximum (stable; the shift's gradient cancels exactly); SymPy gets the plain
  ``log(sum(exp(x)))``, whose derivative has no ``Max``/``Heaviside`` in it;
- ``sigmoid(x) = 1 / (1 + exp(-x))``, computed as ``(1 + tanh(x / 2)) / 2`` (no overflow);
- ``softplus(x) = log(1 + exp(x))``, computed as ``maximum(x, 0) + log(1 + exp(-|x|))``
  (SymPy: the plain form);
- ``log1p(x) = log(1 + x)`` where a namespace has none (the engine).

Every problem's ``fn`` is called through :func:`bind` (``Problem`` does it), so on every
namespace ``xp`` has these names.  A name that is neither the namespace's own nor provided
raises ``MissingName`` (an ``AttributeError``) naming the name, the namespace and the contract:

>>> import numpy as np
>>> xp = namespace(np)
>>> float(xp.logsumexp(np.array([0.0, 0.0])))    # log 2
0.6931471805599453
>>> float(xp.sigmoid(np.array(0.0)))
0.5
>>> from diffcompare.engine import array_api
>>> namespace(array_api).fft
Traceback (most recent call last):
...
diffcompare.problems.contract.MissingName: xp.fft is not available on the engine (diffcompare.engine.array_api): it is not in diffcompare's xp contract; use the names in diffcompare.problems.contract.NAMES (abs, add, amax, ...).

Names outside the contract that a namespace has (``np.fft`` on NumPy) still work there,
so a problem meant for one method is not refused; ``tests/problems/test_contract.py`` checks
that the shipped catalog uses contract names only.
"""
from __future__ import annotations

import functools
import types
import warnings

#: The contract, by kind.  Each name works on NumPy, jax.numpy, the engine, SymPy and torch.
GROUPS = {
    "elementwise": ("abs", "exp", "log", "log1p", "sqrt", "sin", "cos", "tanh", "sign", "square",
                    "negative", "add", "subtract", "multiply", "divide", "power", "maximum",
                    "minimum", "clip", "where", "sigmoid", "softplus"),
    "reductions": ("sum", "mean", "max", "min", "amax", "amin", "logsumexp"),
    "linear algebra": ("matmul", "dot"),
    "shapes": ("reshape", "transpose", "permute_dims", "swapaxes", "expand_dims", "squeeze",
               "broadcast_to", "stack", "concatenate", "concat"),
    "new arrays": ("asarray", "zeros", "ones", "full", "zeros_like", "ones_like", "arange", "eye"),
    "constants": ("pi", "e", "inf", "nan", "newaxis", "float64", "float32"),
}
NAMES = tuple(sorted(n for group in GROUPS.values() for n in group))

# --- linear algebra (branch h-linalg): for the contract's owner to wire into GROUPS / the table ---
#: Each name works with NumPy's meaning on NumPy, jax.numpy, the engine, torch
#: (backends/torch_namespace) and SymPy (problems/symbolic.sympy_xp), except where
#: ``LINALG["refused"]`` gives the reason a namespace raises NotImplementedError.
#: ``"linear algebra"``: top-level names (``linalg`` is the sub-namespace itself);
#: ``"linalg"``: the names of ``xp.linalg``.
LINALG = {
    "linear algebra": ("matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum", "kron",
                       "cross", "trace", "matrix_transpose", "linalg"),
    "linalg": ("det", "slogdet", "inv", "solve", "cholesky", "eigh", "eigvalsh", "norm", "qr",
               "matrix_power", "multi_dot", "svd", "svdvals", "pinv"),
    "refused": {
        ("SymPy", "linalg.eigh"): "no usable closed form for the eigenvectors (roots of the "
                                  "degree-n characteristic polynomial)",
        ("SymPy", "linalg.eigvalsh"): "no closed form beyond n = 4 (roots of the characteristic "
                                      "polynomial)",
        ("SymPy", "linalg.qr"): "nested square roots grow too fast; LAPACK's sign convention",
        ("SymPy", "linalg.svd/svdvals/pinv"): "no usable closed form for singular values",
        ("SymPy", "linalg.norm 'nuc'/2/-2"): "needs singular values",
        ("SymPy", "linalg.det/inv/solve/cholesky"): "n > 4: a symbolic det has n! terms",
    },
}
# --- end of h-linalg's block ---


# --- names diffcompare provides where a namespace lacks them -----------------------------

def _symbolic(xp) -> bool:
    from .symbolic import SympyNamespace

    return isinstance(xp, SympyNamespace)


def _logsumexp(xp):
    if _symbolic(xp):
        return lambda x, axis=None, keepdims=False: xp.log(xp.sum(xp.exp(x), axis=axis,
                                                                  keepdims=keepdims))

    def logsumexp(x, axis=None, keepdims=False):
        m = xp.max(x, axis=axis, keepdims=True)
        out = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
        if keepdims:
            return out
        return xp.reshape(out, ()) if axis is None else xp.squeeze(out, axis=axis)

    return logsumexp


def _sigmoid(xp):
    if _symbolic(xp):
        return lambda x: 1 / (1 + xp.exp(-x))
    return lambda x: 0.5 * (1 + xp.tanh(0.5 * x))


def _softplus(xp):
    if _symbolic(xp):
        return lambda x: xp.log(1 + xp.exp(x))
    return lambda x: xp.maximum(x, 0) + xp.log(1 + xp.exp(-xp.abs(x)))


def _log1p(xp):
    return lambda x: xp.log(1 + x)


#: name -> (xp -> function), used only where the namespace has no such name
PROVIDED = {"logsumexp": _logsumexp, "sigmoid": _sigmoid, "softplus": _softplus, "log1p": _log1p}


# --- the bound namespace -------------------------------------------------------------

def _label(xp) -> str:
    name = getattr(xp, "__name__", None)
    labels = {"numpy": "NumPy (numpy)", "jax.numpy": "JAX (jax.numpy)",
              "diffcompare.engine.array_api": "the engine (diffcompare.engine.array_api)",
              "diffcompare.backends.torch_namespace": "torch (diffcompare.backends.torch_namespace)"}
    if name in labels:
        return labels[name]
    if type(xp).__name__ == "SympyNamespace":
        return "SymPy (diffcompare.problems.symbolic.sympy_xp)"
    return name or repr(xp)


class MissingName(AttributeError, NotImplementedError):
    """A problem used a name its namespace lacks (an ``AttributeError``, and a
    ``NotImplementedError`` as the SymPy namespace has always raised for such names)."""


class ContractNamespace(types.SimpleNamespace):
    """``xp`` as a problem sees it: the namespace's own names, plus ``PROVIDED`` where
    missing; a missing name raises ``AttributeError`` naming it and the namespace."""

    def __getattr__(self, name):
        # only reached for names the namespace lacks
        if name.startswith("__"):
            raise AttributeError(name)
        label = self.__dict__.get("_label", "this namespace")
        where = ("it is in diffcompare's xp contract but missing here (a bug: please report it)"
                 if name in NAMES else "it is not in diffcompare's xp contract")
        raise MissingName(f"xp.{name} is not available on {label}: {where}; use the names in "
                             f"diffcompare.problems.contract.NAMES ({', '.join(NAMES[:3])}, ...).")


_CACHE: dict = {}


def namespace(xp) -> ContractNamespace:
    """``xp`` with the contract's names (built once per namespace)."""
    if isinstance(xp, ContractNamespace):
        return xp
    key = id(xp)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is xp:
        return hit[1]
    attrs = {}
    with warnings.catch_warnings():       # reading every name touches deprecated ones
        warnings.simplefilter("ignore")
        for name in dir(xp):
            if name.startswith("_"):
                continue
            try:
                attrs[name] = getattr(xp, name)
            except (AttributeError, NotImplementedError, ImportError):
                continue
    for name in NAMES:              # names a namespace resolves lazily (torch's dtypes)
        if name not in attrs:
            try:
                attrs[name] = getattr(xp, name)
            except (AttributeError, NotImplementedError):
                if name in PROVIDED:
                    attrs[name] = PROVIDED[name](xp)
    ns = ContractNamespace(**attrs)
    ns.__dict__["_label"] = _label(xp)
    _CACHE[key] = (xp, ns)
    return ns


def missing(xp) -> list:
    """Contract names that ``xp`` cannot give (empty for the five supported namespaces)."""
    ns = namespace(xp)
    return [n for n in NAMES if n not in vars(ns)]


class ContractFunction:
    """A problem's ``fn`` called with ``namespace(xp)``; otherwise looks like ``fn``
    (``__code__``, ``__module__``, ``__name__``, ``__wrapped__``), so caches keyed by the
    function's code and pickling by reference keep working."""

    def __init__(self, fn):
        self.__wrapped__ = fn
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, xp, *args):
        return self.__wrapped__(namespace(xp), *args)

    def __getattr__(self, name):
        if name == "__wrapped__":
            raise AttributeError(name)
        return getattr(self.__wrapped__, name)

    def __reduce__(self):
        return (ContractFunction, (self.__wrapped__,))

    def __eq__(self, other):
        return isinstance(other, ContractFunction) and other.__wrapped__ == self.__wrapped__

    def __hash__(self):
        return hash(self.__wrapped__)

    def __repr__(self):
        return f"<problem function {getattr(self.__wrapped__, '__qualname__', self.__wrapped__)!r}>"


def bind(fn) -> ContractFunction:
    """``fn`` called with the contract namespace (idempotent)."""
    return fn if isinstance(fn, ContractFunction) else ContractFunction(fn)


__all__ = ["NAMES", "GROUPS", "PROVIDED", "namespace", "bind", "missing", "MissingName",
           "ContractNamespace",
           "ContractFunction"]
