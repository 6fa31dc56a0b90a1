"""Derivative operators, one vocabulary for every method: values for use, not only timing.

For ``f: R^n -> R^m`` -- the ``n`` inputs are the differentiated arguments (``wrt``)
flattened in C order and concatenated, the ``m`` outputs the function's value flattened
(:mod:`diffcompare.operators.layout`) -- with Jacobian ``J = ∂f/∂x`` of shape ``(m, n)``:

==============  ==================  ===================  =====================================
operator        needs               result (float64)     meaning
==============  ==================  ===================  =====================================
``gradient``    m = 1               ``(n,)``             ``∇f = J[0]``
``pullback``    cotangent ``u``     ``(n,)``             ``uᵀ J`` (VJP, reverse mode's product)
``pushforward`` tangent ``v``       ``(m,)``             ``J v`` (JVP, forward mode's product)
``jacobian``                        ``(m, n)``           ``J``
``hessian``     m = 1               ``(n, n)``           ``H = ∂²f/∂x²`` (symmetric)
``hvp``         m = 1, tangent v    ``(n,)``             ``H v``
==============  ==================  ===================  =====================================

A cotangent is given flat ``(m,)`` or in the output's shape; a tangent flat ``(n,)``, as one
array per differentiated argument, or (one argument) in its shape.  ``fn`` is ``fn(xp, *args)``
written against the xp contract (docs/contract.md), a :class:`~diffcompare.problems.Problem`,
or a catalog problem's name.  Each operator has a prepare phase (``prepare`` ->
:class:`PreparedOperator`, its seconds in ``prepare_s``) and an evaluate phase
(``PreparedOperator.evaluate``); the one-call functions below do both.  A method computes an
operator only natively (:data:`diffcompare.operators.dense.TABLE`, shown by
:func:`capabilities`); otherwise it raises :class:`OperatorUnsupported` with the reason --
never another method's answer.

>>> import numpy as np
>>> from diffcompare import operators
>>> f = lambda xp, x: xp.sin(x) * x[0]
>>> x = np.array([1.0, 2.0])
>>> operators.jacobian(f, (x,), method="engine").round(4)
array([[ 1.3818,  0.    ],
       [ 0.9093, -0.4161]])
>>> op = operators.prepare("hvp", lambda xp, x: xp.sum(x ** 3), (x,), method="torch")
>>> op.how, op.evaluate((x,), np.array([1.0, 0.0])).tolist()
('double backward (torch.autograd.grad, create_graph)', [6.0, 0.0])
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable

import numpy as np

from ..backends.base import Unavailable, UnsupportedError
from .dense import OPERATORS, TABLE, Context, Native
from .layout import Layout, as_args, fit

#: Dense results larger than this many entries are refused (float64: 200 MB): pass
#: ``sparse=True`` for a compressed, coloured evaluation instead.
MAX_DENSE_ENTRIES = 25_000_000

#: the operators that take a vector at evaluate, and its name
_VECTOR = {"pullback": "cotangent", "pushforward": "tangent", "hvp": "tangent"}


class OperatorUnsupported(UnsupportedError):
    """The method does not compute the operator natively (or not for this problem/size):
    ``reason`` says why.  A runner records it as "unsupported", as a backend's refusal."""

    def __init__(self, operator: str, method: str, reason: str, problem: str = "fn"):
        self.operator, self.method = operator, method
        self.problem, self.backend, self.reason = problem, method, reason
        self.detail = f"unsupported: {reason}"
        RuntimeError.__init__(self, f"{operator} of {problem!r} on {method!r}: {reason}")


class DenseTooLarge(OperatorUnsupported):
    """The dense result would not fit the declared limit (``MAX_DENSE_ENTRIES``)."""


@dataclasses.dataclass
class PreparedOperator:
    """An operator prepared for one problem, method and input shapes.

    ``evaluate(inputs[, vector])`` returns the operator's value (module docstring's shapes);
    ``unflatten`` turns an input-space vector back into one array per argument."""

    operator: str
    method: str
    how: str
    prepare_s: float
    problem: Any
    layout: Layout
    _evaluate: Callable = dataclasses.field(repr=False)

    def evaluate(self, inputs, vector=None) -> np.ndarray:
        inputs = self.layout.check_inputs(as_args(inputs, self.problem.wrt))
        name = _VECTOR.get(self.operator)
        if name is None:
            if vector is not None:
                raise TypeError(f"{self.operator} takes no vector (got one of shape "
                                f"{np.shape(vector)}).")
        elif vector is None:
            raise TypeError(f"{self.operator} needs a {name}.")
        else:
            vector = (self.layout.cotangent(vector) if name == "cotangent"
                      else self.layout.tangent(vector))
        out = np.asarray(self._evaluate(inputs, vector), dtype=np.float64)
        expected = _result_shape(self.operator, self.layout)
        if out.shape != expected:
            out = out.reshape(expected)      # a library's own layout of the same numbers
        return out

    def unflatten(self, flat) -> tuple:
        """An ``(n,)`` result (gradient, pullback, hvp) as one array per differentiated argument."""
        return self.layout.split(flat)


def prepare(operator: str, fn_or_problem, inputs, method: str = "engine",
            wrt=None, options=None) -> PreparedOperator:
    """Prepare ``operator`` of ``fn_or_problem`` at ``inputs`` on ``method`` (a backend name;
    ``options``: its constructor's keywords, as a suite's ``backend_options`` -- a difference
    step, a device).

    Raises ``OperatorUnsupported`` (with the reason) where the method has no native way,
    ``DenseTooLarge`` for a dense result past ``MAX_DENSE_ENTRIES``, ``Unavailable`` when the
    method's library is missing here, ``ValueError`` for a vector-valued function given to a
    scalar operator."""
    from .. import backends

    if operator not in OPERATORS:
        raise ValueError(f"unknown operator {operator!r}; the operators are {', '.join(OPERATORS)}.")
    problem, inputs, layout = fit(operator, fn_or_problem, inputs, wrt)
    cell = TABLE[operator].get(method)
    if cell is None:
        raise KeyError(f"unknown method {method!r}; known methods: {', '.join(backends.names())}")
    if not isinstance(cell, Native):
        raise OperatorUnsupported(operator, method, cell.reason, problem.name)
    _check_dense(operator, method, problem, layout)
    backend = backends.get(method, **(options or {}))
    support = backend.available()
    if not support:
        raise Unavailable(f"{method}: {support.reason}")
    support = backend.supports_inputs(problem, inputs) if cell.input_limit else support
    if not support:
        raise OperatorUnsupported(operator, method, support.reason, problem.name)
    t0 = time.perf_counter()
    evaluate = cell.build(Context(operator, method, backend, problem, inputs, layout))
    return PreparedOperator(operator, method, cell.how, time.perf_counter() - t0, problem,
                            layout, evaluate)


def gradient(fn, inputs, method: str = "engine", wrt=None) -> np.ndarray:
    """``∇f``, shape ``(n,)``.

    >>> import numpy as np
    >>> gradient(lambda xp, x: xp.sum(x ** 2), (np.array([1.0, 2.0]),), method="jax-jit").tolist()
    [2.0, 4.0]
    """
    return prepare("gradient", fn, inputs, method, wrt).evaluate(inputs)


def pullback(fn, inputs, cotangent, method: str = "engine", wrt=None) -> np.ndarray:
    """``uᵀ J`` for cotangent ``u`` (flat or in the output's shape), shape ``(n,)``."""
    return prepare("pullback", fn, inputs, method, wrt).evaluate(inputs, cotangent)


def pushforward(fn, inputs, tangent, method: str = "engine-jvp", wrt=None) -> np.ndarray:
    """``J v`` for tangent ``v``, shape ``(m,)``."""
    return prepare("pushforward", fn, inputs, method, wrt).evaluate(inputs, tangent)


def jacobian(fn, inputs, method: str = "engine", wrt=None, sparse: bool = False):
    """``J``, shape ``(m, n)``; ``sparse=True``: a :class:`~.sparse.SparseOperator`
    (its ``matrix`` a SciPy sparse array; detected, coloured, compressed)."""
    if sparse:
        return _sparse_route("jacobian", fn, inputs, method, wrt)
    return prepare("jacobian", fn, inputs, method, wrt).evaluate(inputs)


def hessian(fn, inputs, method: str = "engine", wrt=None, sparse: bool = False):
    """``H``, shape ``(n, n)``; ``sparse=True``: a :class:`~.sparse.SparseOperator`."""
    if sparse:
        return _sparse_route("hessian", fn, inputs, method, wrt)
    return prepare("hessian", fn, inputs, method, wrt).evaluate(inputs)


def hvp(fn, inputs, v, method: str = "engine", wrt=None) -> np.ndarray:
    """``H v``, shape ``(n,)``."""
    return prepare("hvp", fn, inputs, method, wrt).evaluate(inputs, v)


def capabilities(available: bool = False):
    """operator × method DataFrame of ``"native: <how>"`` or ``"unsupported: <why>"``, from
    :data:`~diffcompare.operators.dense.TABLE`; with ``available=True`` a native cell whose
    library is missing here reads ``"unavailable: <why>"``."""
    import pandas as pd

    from .. import backends

    missing = {}
    if available:
        missing = {m: s.reason for m, s in backends.availability().items() if not s}
    rows = {}
    for op in OPERATORS:
        rows[op] = {m: (f"unavailable: {missing[m]}" if isinstance(cell, Native) and m in missing
                        else f"native: {cell.how}" if isinstance(cell, Native)
                        else f"unsupported: {cell.reason}")
                    for m, cell in TABLE[op].items()}
    return pd.DataFrame.from_dict(rows, orient="index")[backends.names()]


def _sparse_route(operator, fn, inputs, method, wrt):
    """``sparse=True``: detect, colour, compress and decompress
    (:mod:`diffcompare.operators.sparse`); a :class:`~.sparse.SparseOperator` back, its
    ``matrix`` a SciPy sparse array with the colouring it used."""
    return getattr(sparse_module(operator, method), operator)(fn, inputs, method=method, wrt=wrt)


def sparse_module(operator, method):
    """:mod:`diffcompare.operators.sparse`, or ``OperatorUnsupported`` saying what to install."""
    try:
        from . import sparse
        import networkx  # noqa: F401 -- colouring's other orderings; fail here, not midway
    except ModuleNotFoundError as exc:
        raise OperatorUnsupported(
            operator, method, f"sparse operators need SciPy and networkx ({exc.name} is "
            "missing): pip install 'diffcompare[sparse]'; or sparse=False for the dense "
            "matrix") from None
    return sparse


def __getattr__(name):
    """The submodules on first use (``operators.sparse.jacobian(...)``): they need SciPy and
    networkx, which the dense operators do not."""
    if name in ("sparse", "sparsity", "colouring", "coloured", "symbolic_sparse", "peers"):
        from importlib import import_module

        return import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _result_shape(operator, layout) -> tuple:
    n, m = layout.n, layout.m
    return {"gradient": (n,), "pullback": (n,), "pushforward": (m,), "jacobian": (m, n),
            "hessian": (n, n), "hvp": (n,)}[operator]


def _check_dense(operator, method, problem, layout):
    entries = {"jacobian": layout.m * layout.n, "hessian": layout.n * layout.n}.get(operator, 0)
    if entries > MAX_DENSE_ENTRIES:
        raise DenseTooLarge(operator, method,
                            f"the dense {operator} would have {layout.m if operator == 'jacobian' else layout.n:,} x "
                            f"{layout.n:,} = {entries:,} entries ({entries * 8 / 2**30:.3g} GiB of "
                            f"float64), over MAX_DENSE_ENTRIES = {MAX_DENSE_ENTRIES:,}: pass "
                            "sparse=True for a compressed, coloured evaluation", problem.name)


__all__ = ["OPERATORS", "OperatorUnsupported", "DenseTooLarge", "PreparedOperator",
           "MAX_DENSE_ENTRIES", "prepare", "gradient", "pullback", "pushforward", "jacobian",
           "hessian", "hvp", "capabilities"]
