"""Sparse Jacobians and Hessians of a function on a method: detect, colour, compress, decompress.

``jacobian(fn, inputs, method, sparse=True)`` and ``hessian(..., sparse=True)`` of
:mod:`diffcompare.operators` come here.  The steps, each timed apart:

1. **detect** the sparsity pattern from one traced evaluation on the engine
   (:mod:`~diffcompare.operators.sparsity`; ops it over-approximates are named);
2. **colour** it (:mod:`~diffcompare.operators.colouring`): structurally orthogonal columns
   for forward products and finite differences, rows for reverse products; for a Hessian a
   star colouring or the symmetric pattern's column colouring, whichever needs fewer;
3. **evaluate** one product per colour on the method -- its native pushforward (forward
   mode, the complex step), pullback (reverse mode) or the function's own differences
   (``fd-forward``, ``fd-central``, with the method's step) -- and decompress
   (:mod:`~diffcompare.operators.coloured`).

The symbolic methods that differentiate per variable (``sympy``, ``sympy-cse``,
``symengine``) need none of this by default: they derive only the nonzero entries
(:mod:`~diffcompare.operators.symbolic_sparse`; no detection, no colours, one evaluation).
``options`` are the method's constructor keywords (a suite's ``backend_options``).

A method with both products natively (JAX, torch, autograd) takes the direction with fewer
colours unless ``mode`` says otherwise: on bundle adjustment 14 column colours against
thousands of row colours (a camera's columns meet every row of its observations).

>>> import numpy as np
>>> from diffcompare import operators
>>> banded = lambda xp, x: x[1:] * x[:-1] + xp.sin(x[1:])          # J is bidiagonal
>>> r = operators.jacobian(banded, (np.linspace(0, 1, 50),), method="engine-jvp", sparse=True)
>>> r.matrix.shape, r.colouring.n_colours, r.mode, r.passes
((49, 50), 2, 'forward', 2)
"""
from __future__ import annotations

import time

import numpy as np

from .prepared_sparse import MODES, SparseOperator, SparsePrepared

#: the finite-difference methods that difference the function itself, and their schemes
FD_SCHEMES = {"fd-forward": "forward", "fd-central": "central"}


def jacobian(fn, inputs, method: str = "engine-jvp", wrt=None, mode: str = "auto",
             ordering: str = "largest_first", options=None, peer=None) -> SparseOperator:
    """The Jacobian of ``fn`` at ``inputs`` as a sparse matrix, by ``method``'s products
    (``mode="auto"`` on a symbolic method: its nonzero entries; ``peer="sparsejac"``: that
    library's coloured products on a JAX method, :mod:`~diffcompare.operators.peers`)."""
    return prepare_jacobian(fn, inputs, method, wrt, mode, ordering, options, peer).evaluate()


def prepare_jacobian(fn, inputs, method: str = "engine-jvp", wrt=None, mode: str = "auto",
                     ordering: str = "largest_first", options=None,
                     peer=None) -> SparsePrepared:
    """:func:`jacobian`'s prepare phase: detect, colour, choose the direction."""
    if peer is not None:
        from . import peers
        if peer not in peers.PEERS:
            raise ValueError(f"peer must be one of {', '.join(peers.PEERS)} (or None), "
                             f"got {peer!r}.")
        return peers.prepare_sparsejac(fn, inputs, method, wrt, mode, ordering, options)
    from . import prepare
    from .layout import fit
    from .colouring import colour_columns, colour_rows
    from .coloured import jacobian_fd, jacobian_forward, jacobian_reverse
    from .dense import SYMBOLIC_DIFF, TABLE, Native
    from .sparsity import jacobian_pattern

    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}.")
    if method in SYMBOLIC_DIFF and mode == "auto":
        from . import symbolic_sparse
        return symbolic_sparse.prepare_jacobian(fn, inputs, method, wrt, options)
    started = time.perf_counter()
    problem, args, layout = fit("jacobian", fn, inputs, wrt)
    pattern = jacobian_pattern(problem.fn, args, problem.wrt)
    t0 = time.perf_counter()
    if method in FD_SCHEMES:
        colouring = colour_columns(pattern, ordering)
        colour_s = time.perf_counter() - t0

        def f_flat(x):
            given = dict(zip(problem.wrt, layout.split(x)))
            call = [given.get(i, a) for i, a in enumerate(args)]
            return np.asarray(problem.fn(np, *call), dtype=np.float64).ravel()

        x0 = layout.concat([args[i] for i in problem.wrt])
        from .. import backends
        step = backends.get(method, **(options or {})).step     # its default, or the option
        return SparsePrepared("jacobian", method, pattern, colouring,
                              f"{FD_SCHEMES[method]} differences", pattern.seconds, colour_s,
                              time.perf_counter() - started,
                              lambda: jacobian_fd(f_flat, x0, pattern, colouring,
                                                  scheme=FD_SCHEMES[method], step=step))
    has = {d: isinstance(TABLE[p].get(method), Native)
           for d, p in (("forward", "pushforward"), ("reverse", "pullback"))}
    if mode != "auto" and not has[mode]:
        from . import OperatorUnsupported
        raise OperatorUnsupported("jacobian", method, f"no native {mode}-mode product "
                                  f"({'pushforward' if mode == 'forward' else 'pullback'})",
                                  problem.name)
    columns = colour_columns(pattern, ordering) if has["forward"] and mode != "reverse" else None
    rows = colour_rows(pattern, ordering) if has["reverse"] and mode != "forward" else None
    if columns is None and rows is None:
        from . import OperatorUnsupported
        raise OperatorUnsupported("jacobian", method, "neither a native pushforward nor a "
                                  "native pullback to compress", problem.name)
    forward = rows is None or (columns is not None and columns.n_colours <= rows.n_colours)
    colour_s = time.perf_counter() - t0
    if forward:
        jvp = prepare("pushforward", problem, args, method, options=options)
        compress = lambda: jacobian_forward(lambda v: jvp.evaluate(args, v), pattern, columns)  # noqa: E731
    else:
        vjp = prepare("pullback", problem, args, method, options=options)
        compress = lambda: jacobian_reverse(lambda u: vjp.evaluate(args, u), pattern, rows)  # noqa: E731
    return SparsePrepared("jacobian", method, pattern, columns if forward else rows,
                          "forward" if forward else "reverse", pattern.seconds, colour_s,
                          time.perf_counter() - started, compress)


def hessian(fn, inputs, method: str = "engine", wrt=None, ordering: str = "largest_first",
            kind: str = "auto", options=None) -> SparseOperator:
    """The Hessian of scalar ``fn`` at ``inputs`` as a sparse matrix: one Hessian-vector
    product on ``method`` per colour of a ``colour_hessian`` colouring of ``kind``
    (``auto``: the star or the column colouring, whichever has fewer colours; on a
    symbolic method its nonzero entries instead)."""
    return prepare_hessian(fn, inputs, method, wrt, ordering, kind, options).evaluate()


def prepare_hessian(fn, inputs, method: str = "engine", wrt=None,
                    ordering: str = "largest_first", kind: str = "auto",
                    options=None) -> SparsePrepared:
    """:func:`hessian`'s prepare phase: detect, colour, prepare the method's HVP."""
    from . import prepare
    from .layout import fit
    from .colouring import HESSIAN_KINDS, colour_hessian
    from .coloured import hessian_forward_over_reverse
    from .dense import SYMBOLIC_DIFF
    from .sparsity import hessian_pattern

    if kind not in HESSIAN_KINDS:
        raise ValueError(f"kind must be one of {', '.join(HESSIAN_KINDS)}, got {kind!r}.")
    if method in SYMBOLIC_DIFF and kind == "auto":
        from . import symbolic_sparse
        return symbolic_sparse.prepare_hessian(fn, inputs, method, wrt, options)
    started = time.perf_counter()
    problem, args, _ = fit("hessian", fn, inputs, wrt)
    pattern = hessian_pattern(problem.fn, args, problem.wrt)
    t0 = time.perf_counter()
    colouring = colour_hessian(pattern, ordering, kind)
    colour_s = time.perf_counter() - t0
    hvp = prepare("hvp", problem, args, method, options=options)
    return SparsePrepared("hessian", method, pattern, colouring,
                          f"{hvp.how}, {colouring.kind} colouring", pattern.seconds,
                          colour_s, time.perf_counter() - started,
                          lambda: hessian_forward_over_reverse(lambda v: hvp.evaluate(args, v),
                                                               pattern, colouring))


__all__ = ["SparseOperator", "SparsePrepared", "jacobian", "hessian", "prepare_jacobian",
           "prepare_hessian", "FD_SCHEMES", "MODES"]
