"""Peer libraries' sparse Jacobians on the sparse route: ``sparsejac`` on JAX.

``sparsejac`` (PyPI; the optional extra ``diffcompare[sparsejac]``) computes a sparse
Jacobian in JAX from a given pattern (a ``BCOO``): it colours the pattern with networkx's
greedy colouring and compresses ``jax.jvp`` (``jacfwd``) or ``jax.vjp`` (``jacrev``)
products.  ``operators.sparse.jacobian(..., peer="sparsejac")`` gives it the pattern
:mod:`.sparsity` detected and the JAX method's flat function (its device, 64-bit mode and
matmul precision), compiles ``jax.jit`` of it in prepare, and returns the same
:class:`~.prepared_sparse.SparsePrepared` as the route's own products: the two side by side
differ only in who colours, compresses and decompresses.  The direction is the route's
(``mode``; ``auto`` takes the one with fewer colours); the ``colouring`` recorded is ours of
the same networkx strategy (sparsejac keeps its own internal), which ``n_colours`` counts.

>>> import numpy as np
>>> r = prepare_sparsejac(lambda xp, x: x[1:] * x[:-1], (np.arange(1.0, 6.0),), "jax-jit")
>>> r.mode, r.colouring.n_colours, r.evaluate().matrix.toarray()[0].tolist()
('sparsejac.jacfwd', 2, [2.0, 1.0, 0.0, 0.0, 0.0])
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

PEERS = ("sparsejac",)


def prepare_sparsejac(fn, inputs, method="jax-jit", wrt=None, mode="auto",
                      ordering="largest_first", options=None):
    """The sparse Jacobian's prepare phase by ``sparsejac`` on JAX ``method`` (jitted)."""
    from .. import backends
    from ..backends.base import Unavailable, compute_dtype
    from . import OperatorUnsupported
    from .coloured import SparseResult
    from .colouring import colour_columns, colour_rows
    from .dense import JAX_JIT, flat_function
    from .layout import fit
    from .prepared_sparse import MODES, SparsePrepared
    from .sparsity import jacobian_pattern

    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}.")
    try:
        import sparsejac
    except ModuleNotFoundError:
        raise Unavailable("sparsejac is not installed: pip install 'diffcompare[sparsejac]'") \
            from None
    started = time.perf_counter()
    problem, args, layout = fit("jacobian", fn, inputs, wrt)
    jitted = JAX_JIT + ("jax-jacfwd",)
    if method not in jitted:
        raise OperatorUnsupported("jacobian", method, "sparsejac runs on JAX under jit: one of "
                                  f"{', '.join(jitted)}", problem.name)
    backend = backends.get(method, **(options or {}))
    support = backend.available()
    if not support:
        raise Unavailable(f"{method}: {support.reason}")
    pattern = jacobian_pattern(problem.fn, args, problem.wrt)
    t0 = time.perf_counter()
    columns = colour_columns(pattern, ordering) if mode != "reverse" else None
    rows = colour_rows(pattern, ordering) if mode != "forward" else None
    forward = rows is None or (columns is not None and columns.n_colours <= rows.n_colours)
    colouring = columns if forward else rows
    colour_s = time.perf_counter() - t0

    from jax.experimental import sparse as jsparse

    from ..backends.jax_runtime import import_jax, pick_device, placement

    jax = import_jax()
    device = pick_device(jax, backend.device)
    dtype = compute_dtype(problem, args)

    def scope():
        return placement(jax, dtype == np.float64, device, backend.matmul_precision)

    coo = pattern.matrix.tocoo()
    with scope():
        sparsity = jsparse.BCOO((jax.numpy.ones(coo.nnz, dtype=bool),
                                 jax.numpy.asarray(np.stack([coo.row, coo.col], axis=1))),
                                shape=coo.shape)
        # the other arguments as closure constants of a function of x alone: XLA folds the
        # gathers they index at compile time -- on bundle adjustment at medium size 1.4x
        # faster evaluations than passing them as jit arguments, for a compile 1.9x longer
        # (2.8 s against 1.5 s CPU, measured side by side)
        others = tuple(jax.device_put(np.asarray(a), device) for a in args)
        f = flat_function(problem, layout, jax.numpy, others, scalar=False)
        jac = (sparsejac.jacfwd if forward else sparsejac.jacrev)(
            lambda x: f(x), sparsity=sparsity, coloring_strategy=ordering)
        x0 = jax.device_put(layout.concat([args[i] for i in problem.wrt]).astype(dtype), device)
        compiled = jax.jit(jac).lower(x0).compile()

    def compress():
        t = time.perf_counter()
        with scope():
            out = compiled(x0)
            out.data.block_until_ready()
        index = np.asarray(out.indices)
        matrix = sp.csr_array((np.asarray(out.data, dtype=np.float64), (index[:, 0], index[:, 1])),
                              shape=(layout.m, layout.n))
        matrix.sort_indices()
        return SparseResult(matrix, colouring.n_colours, colouring.n_colours, colouring,
                            time.perf_counter() - t)

    return SparsePrepared("jacobian", method, pattern, colouring,
                          f"sparsejac.{'jacfwd' if forward else 'jacrev'}", pattern.seconds,
                          colour_s, time.perf_counter() - started, compress)


__all__ = ["PEERS", "prepare_sparsejac"]
