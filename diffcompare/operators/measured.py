"""The operators a benchmark cell measures (``problems.MEASURED_OPERATORS``), each computed
one way: through this package.

``prepare(name, problem, inputs, method, seed, options)`` -> :class:`Measured`, its prepare
phase done and timed (``prepare_s``), the method built with ``options`` (the cell's
``backend_options``: a difference step, a device); ``evaluate()`` computes the operator once
more at the same inputs -- what a cell times.  ``jacobian``, ``hessian`` and ``hvp`` are the
dense operators (:func:`diffcompare.operators.prepare`, the methods' own machinery as
``dense.TABLE`` says); ``jacobian_sparse`` and ``hessian_sparse`` the detected, coloured,
compressed ones (:mod:`~diffcompare.operators.sparse`; a symbolic method's nonzero
entries); ``hessian_diagonal`` the backend's own (``Backend.product``: the engine, JAX,
torch and fd-central have one).  An operator the
method cannot compute, or one for the other kind of output, raises
:class:`~diffcompare.operators.OperatorUnsupported` with the reason.

>>> import numpy as np
>>> from diffcompare.problems import Problem
>>> p = Problem("cubes", lambda xp, x: xp.sum(x ** 3), lambda n, s: (np.arange(1.0, n + 1),),
...             "Σ x³")
>>> m = prepare("hessian_sparse", p, p.inputs(3, 0), "torch")
>>> m.evaluate().matrix.toarray().diagonal().tolist(), m.extra["colours"]
([6.0, 12.0, 18.0], 1)
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np

from ..problems.problem import MEASURED_OPERATORS, operator_mismatch

#: the dense operator of :mod:`diffcompare.operators` each measured one is
DENSE = {"jacobian": "jacobian", "hessian": "hessian", "hvp": "hvp"}
SPARSE = {"jacobian_sparse": "jacobian", "hessian_sparse": "hessian"}


@dataclasses.dataclass
class Measured:
    """A measured operator prepared: ``how`` the method computes it, ``prepare_s``,
    ``evaluate()`` (an ndarray in :mod:`~diffcompare.operators.layout`'s flat layout, or a
    :class:`~.sparse.SparseOperator`), ``tangent`` (hvp's v) and ``extra`` (the sparse
    route's colours, passes, pattern and step seconds)."""

    name: str
    method: str
    how: str
    prepare_s: float
    evaluate: Callable = dataclasses.field(repr=False)
    tangent: np.ndarray | None = None
    extra: dict = dataclasses.field(default_factory=dict)


def tangent(n: int, seed: int) -> np.ndarray:
    """hvp's tangent: seeded standard normal, the same for every method of a cell."""
    return np.random.default_rng([seed, 20]).standard_normal(n)


def prepare(name: str, problem, inputs, method: str, seed: int = 0, options=None) -> Measured:
    """Prepare measured operator ``name`` of ``problem`` at ``inputs`` on ``method``
    (constructed with ``options``)."""
    from . import OperatorUnsupported, sparse_module
    from . import prepare as prepare_dense

    if name not in MEASURED_OPERATORS:
        raise ValueError(f"unknown operator {name!r}; the measured operators are "
                         f"{', '.join(MEASURED_OPERATORS)}.")
    why = operator_mismatch(name, problem)
    if why:
        raise OperatorUnsupported(name, method, why, problem.name)
    if name in DENSE:
        op = prepare_dense(DENSE[name], problem, inputs, method, options=options)
        v = tangent(op.layout.n, seed) if name == "hvp" else None
        return Measured(name, method, op.how, op.prepare_s,
                        lambda: op.evaluate(inputs, v), v)
    if name in SPARSE:
        sparse = sparse_module(SPARSE[name], method)
        prepared = getattr(sparse, f"prepare_{SPARSE[name]}")(problem, inputs, method,
                                                              options=options)
        pattern, colouring = prepared.pattern, prepared.colouring
        extra = {"pattern_nnz": pattern.nnz, "mode": prepared.mode,
                 "detect_s": prepared.detect_s, "colour_s": prepared.colour_s,
                 "conservative": list(pattern.conservative)}
        how = prepared.mode
        if colouring is not None:      # none for a symbolic method's nonzero entries
            extra.update(colours=int(colouring.n_colours),
                         colour_lower_bound=int(colouring.lower_bound), colouring=colouring.kind)
            how = f"{prepared.mode}, {colouring.n_colours} colours"
        return Measured(name, method, how, prepared.prepare_s, prepared.evaluate, None, extra)
    return _backend_product(name, problem, inputs, method, options)


def _backend_product(name, problem, inputs, method, options=None) -> Measured:
    """A derivative the operators do not name (the Hessian diagonal): ``Backend.product``."""
    from .. import backends
    from ..backends.base import Unavailable
    from . import OperatorUnsupported

    backend = backends.get(method, **(options or {}))
    support = backend.available()
    if not support:
        raise Unavailable(f"{method}: {support.reason}")
    support = backend.supports_product(problem, name, inputs)
    if not support:
        raise OperatorUnsupported(name, method, support.reason, problem.name)
    t0 = time.perf_counter()
    prepared = backend.prepare(problem, inputs)
    prepare_s = time.perf_counter() - t0
    wrt = problem.wrt

    def evaluate():
        values = backends.checked_product(backend, prepared, inputs, name, ())
        return np.concatenate([np.asarray(v, dtype=np.float64).reshape(-1) for v in values]) \
            if len(wrt) else np.zeros(0)

    return Measured(name, method, f"{method}'s own {name} (Backend.product)", prepare_s,
                    evaluate)


__all__ = ["Measured", "prepare", "tangent", "DENSE", "SPARSE"]
