"""Sparse symbolic Jacobians and Hessians: only the nonzero entries derived, no colouring.

The symbolic methods that differentiate per variable (``sympy``, ``sympy-cse``,
``symengine``; ``dense.SYMBOLIC_DIFF``) know the pattern from the expressions themselves:

- **Jacobian**: their ``prepare`` of a vector output already derives each output only by
  the symbols it contains, keeps the nonzero ``∂y_i/∂x_j`` and lambdifies them together
  (``state.jac_rows``/``jac_cols``); one call gives every nonzero, scattered here into a
  ``csr_array`` instead of a dense matrix;
- **Hessian**: the gradient's entries (their ``prepare`` of the scalar output), each
  differentiated by the symbols it contains at or after its own index (the upper
  triangle), the nonzeros lambdified together (with CSE where the method uses it) and
  mirrored.

The methods' own guards apply (differentiated inputs, symbols, the predicted and measured
expression sizes: ``Backend.supports_inputs`` and ``prepare``), and the Hessian entries'
size is checked like the gradient's (``_check_swell``); a nonsmooth problem's Hessian is
refused (its second derivatives of kinks are DiracDelta terms).  The pattern is the
symbolic one (entries that are not identically zero), so no detection and no colours: one
evaluation (``passes`` 1).

>>> import numpy as np
>>> f = lambda xp, x: xp.sum(x[1:] * x[:-1]) + xp.sum(x ** 3)
>>> p = prepare_hessian(f, (np.arange(1.0, 5.0),), "sympy")
>>> r = p.evaluate()
>>> r.matrix.toarray().tolist()[:2], r.passes, r.colouring is None
([[6.0, 1.0, 0.0, 0.0], [1.0, 12.0, 1.0, 0.0]], 1, True)
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

__all__ = ["prepare_jacobian", "prepare_hessian", "MODE"]

MODE = "symbolic nonzero entries"


def prepare_jacobian(fn, inputs, method, wrt=None, options=None):
    """The sparse Jacobian's prepare phase on a symbolic method: its ``prepare`` derives and
    lambdifies the nonzero entries."""
    from .layout import fit

    started = time.perf_counter()
    problem, args, layout = fit("jacobian", fn, inputs, wrt)
    backend, prepared = _prepared("jacobian", problem, args, method, options)
    state = prepared.state
    rows, cols = state.jac_rows, state.jac_cols
    shape = (layout.m, layout.n)

    def entries():
        return state.g_fn(*backend.call_values(prepared, args))

    return _sparse_prepared("jacobian", method, rows, cols, shape, entries, prepared, started)


def prepare_hessian(fn, inputs, method, wrt=None, options=None):
    """The sparse Hessian's prepare phase on a symbolic method: the gradient's entries
    differentiated per nonzero (upper triangle), lambdified together."""
    from .layout import fit

    started = time.perf_counter()
    problem, args, layout = fit("hessian", fn, inputs, wrt)
    backend, prepared = _prepared("hessian", problem, args, method, options)
    if not problem.smooth:
        raise _unsupported("hessian", method, "the Hessian of a nonsmooth problem: second "
                           "derivatives of kinks are DiracDelta terms, which do not evaluate "
                           "numerically", problem)
    rows, cols, exprs = _upper_entries(backend, prepared.state)
    _check_size(backend, problem, exprs)
    evaluate = _lambdify(backend, prepared.state, exprs)
    n = layout.n
    off = rows != cols
    all_rows = np.concatenate([rows, cols[off]])
    all_cols = np.concatenate([cols, rows[off]])

    def entries():
        values = np.asarray(evaluate(*backend.call_values(prepared, args)),
                            dtype=np.float64).reshape(-1)
        return np.concatenate([values, values[off]])

    return _sparse_prepared("hessian", method, all_rows, all_cols, (n, n), entries, prepared,
                            started)


# --- helpers ------------------------------------------------------------------------------

def _unsupported(operator, method, reason, problem):
    from . import OperatorUnsupported

    return OperatorUnsupported(operator, method, reason, problem.name)


def _prepared(operator, problem, args, method, options):
    """The method's backend and its ``prepare`` of the fitted problem, its refusals (the
    size guards) as ``OperatorUnsupported``."""
    from .. import backends
    from ..backends.base import Unavailable, UnsupportedError

    backend = backends.get(method, **(options or {}))
    support = backend.available()
    if not support:
        raise Unavailable(f"{method}: {support.reason}")
    support = backend.supports_inputs(problem, args)
    if not support:
        raise _unsupported(operator, method, support.reason, problem)
    try:
        return backend, backend.prepare(problem, args)
    except UnsupportedError as exc:
        raise _unsupported(operator, method, exc.reason, problem) from exc


def _is_symengine(backend) -> bool:
    from ..backends.symengine_backend import SymengineBackend

    return isinstance(backend, SymengineBackend)


def _upper_entries(backend, state):
    """``(rows, cols, exprs)``: ``∂g_i/∂x_j`` for j ≥ i where ``x_j`` occurs in the gradient
    entry ``g_i`` and the derivative is not identically zero."""
    wrt = list(state.symbols.wrt_flat)
    if _is_symengine(backend):
        from ..backends.symengine_backend import to_symengine

        wrt = to_symengine(wrt, {})
    index = {s: j for j, s in enumerate(wrt)}
    rows, cols, exprs = [], [], []
    for i, g in enumerate(state.grad_exprs):
        for j in sorted(index[s] for s in g.free_symbols if s in index):
            if j < i:
                continue
            d = g.diff(wrt[j])
            if d != 0:
                rows.append(i), cols.append(j), exprs.append(d)
    return np.array(rows, dtype=np.intp), np.array(cols, dtype=np.intp), exprs


def _check_size(backend, problem, exprs):
    """The Hessian entries held to the method's limit on a derivative's size (its tree
    without CSE, its distinct subexpressions with): too large to print and compile."""
    from ..backends.base import UnsupportedError
    from ..backends.sympy_derivation import count_ops

    tree_ops = 0 if _is_symengine(backend) or backend.use_cse else count_ops(exprs)
    try:
        backend._check_swell(problem, "Hessian's nonzero entries", tree_ops, exprs)
    except UnsupportedError as exc:
        raise _unsupported("hessian", backend.name, exc.reason, problem) from exc


def _lambdify(backend, state, exprs):
    """The entries as one NumPy function of the method's symbols (``backend.call_values``)."""
    if not exprs:
        return lambda *values: np.zeros(0)
    if _is_symengine(backend):
        from ..backends.symengine_backend import to_symengine

        return backend._lambdify_exprs(to_symengine(state.symbols.all_flat, {}), exprs)
    from ..backends.sympy_derivation import common_subexpressions, lambdify

    cse_result = common_subexpressions(exprs) if backend.use_cse else None
    return lambdify(state.symbols.all_flat, exprs, cse_result)


def _sparse_prepared(operator, method, rows, cols, shape, entries, prepared, started):
    from .coloured import SparseResult
    from .prepared_sparse import SparsePrepared
    from .sparsity import Pattern

    structure = sp.csr_array((np.ones(len(rows), dtype=bool), (rows, cols)), shape=shape)
    structure.sum_duplicates()
    structure.sort_indices()
    pattern = Pattern(structure, [], 0.0)
    # the entries in csr order: where each (row, col) lands after the conversion
    order = np.lexsort((cols, rows))

    def compress():
        t0 = time.perf_counter()
        values = np.asarray(entries(), dtype=np.float64).reshape(-1)
        prepared.evaluations += 1
        matrix = sp.csr_array((values[order], structure.indices.copy(),
                               structure.indptr.copy()), shape=shape)
        return SparseResult(matrix, 0, 1, None, time.perf_counter() - t0)

    return SparsePrepared(operator, method, pattern, None, MODE, 0.0, 0.0,
                          time.perf_counter() - started, compress)
