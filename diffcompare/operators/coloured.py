"""Compressed evaluation of sparse Jacobians and Hessians, and their decompression.

Everything here works from plain callables of flat float64 arrays and knows no backend:
the caller passes a Jacobian-vector product, a vector-Jacobian product, a flat function
(finite differences) or a Hessian-vector product, with a ``Pattern`` (or any scipy sparse
matrix) and a ``Colouring`` from :mod:`.colouring`.  One product per colour; each nonzero
``(i, j)`` is then read from the compressed matrix at row ``i``, column ``colours[j]``
(forward) or at ``colours[i]``, column ``j`` (reverse).

>>> import numpy as np
>>> from diffcompare.operators.colouring import colour_columns, colour_rows
>>> f = lambda x: x[1:] * x[:-1]                      # J is bidiagonal
>>> J = lambda x: np.eye(4, 5) * x[1:, None] + np.eye(4, 5, 1) * x[:-1, None]
>>> x = np.arange(1.0, 6.0)
>>> pattern = J(np.ones(5)) != 0
>>> r = jacobian_forward(lambda v: J(x) @ v, pattern, colour_columns(pattern))
>>> r.n_colours, r.passes, np.allclose(r.matrix.toarray(), J(x))
(2, 2, True)
>>> r = jacobian_reverse(lambda u: u @ J(x), pattern, colour_rows(pattern))
>>> r.n_colours, np.allclose(r.matrix.toarray(), J(x))
(2, True)
>>> r = jacobian_fd(f, x, pattern, colour_columns(pattern))
>>> r.passes, bool(np.abs(r.matrix.toarray() - J(x)).max() < 1e-8)
(4, True)
>>> H = np.diag([2.0, 2, 2]) + np.diag([1.0, 1], 1) + np.diag([1.0, 1], -1)
>>> from diffcompare.operators.colouring import colour_hessian
>>> r = hessian_forward_over_reverse(lambda v: H @ v, H != 0, colour_hessian(H != 0))
>>> r.colouring.kind, r.n_colours, np.array_equal(r.matrix.toarray(), H)
('star', 2, True)
>>> A = np.eye(5) * 4; A[0, 1:] = A[1:, 0] = 1.0                     # an arrowhead
>>> r = hessian_forward_over_reverse(lambda v: A @ v, A != 0, colour_hessian(A != 0))
>>> r.colouring.kind, r.n_colours, np.array_equal(r.matrix.toarray(), A)
('star', 2, True)
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.sparse as sp

__all__ = ["SparseResult", "jacobian_forward", "jacobian_reverse", "jacobian_fd",
           "hessian_forward_over_reverse", "seeds"]


@dataclasses.dataclass(frozen=True)
class SparseResult:
    """``matrix``: ``csr_array`` float64 with the pattern's structure; ``n_colours`` (0 with
    no colouring: :mod:`.symbolic_sparse`);
    ``passes``: calls made to the product or function; ``colouring``; ``seconds``
    (products and decompression, not detection or colouring)."""

    matrix: sp.csr_array
    n_colours: int
    passes: int
    colouring: object
    seconds: float


def seeds(colouring) -> np.ndarray:
    """The seed matrix, shape ``(len(colours), n_colours)``: column c is the indicator of colour c."""
    s = np.zeros((colouring.colours.size, colouring.n_colours))
    s[np.arange(colouring.colours.size), colouring.colours] = 1.0
    return s


def jacobian_forward(jvp, pattern, colouring) -> SparseResult:
    """``J`` from ``jvp(v) = J @ v``: one product per column colour."""
    start = time.perf_counter()
    m = _structure(pattern)
    s = seeds(colouring)
    compressed = np.stack([_flat(jvp(s[:, c])) for c in range(colouring.n_colours)], axis=1) \
        if colouring.n_colours else np.zeros((m.shape[0], 0))
    rows, cols = _coords(m)
    values = compressed[rows, colouring.colours[cols]]
    return _result(m, values, colouring, colouring.n_colours, start)


def jacobian_reverse(vjp, pattern, row_colouring) -> SparseResult:
    """``J`` from ``vjp(u) = u @ J``: one product per row colour."""
    start = time.perf_counter()
    m = _structure(pattern)
    s = seeds(row_colouring)
    compressed = np.stack([_flat(vjp(s[:, c])) for c in range(row_colouring.n_colours)], axis=0) \
        if row_colouring.n_colours else np.zeros((0, m.shape[1]))
    rows, cols = _coords(m)
    values = compressed[row_colouring.colours[rows], cols]
    return _result(m, values, row_colouring, row_colouring.n_colours, start)


def jacobian_fd(f_flat, x_flat, pattern, colouring, scheme: str = "central",
                step: float | None = None) -> SparseResult:
    """``J`` of ``f_flat`` at ``x_flat`` by coloured finite differences.

    Each column j is perturbed by ``h_j = step * max(1, |x_j|)`` (``step``: ε^(1/3) for
    ``central``, ε^(1/2) for ``forward``); a colour's columns move together and each nonzero
    is divided by its own column's ``h_j``.  ``central``: 2 calls per colour;
    ``forward``: 1 per colour plus one at ``x``.
    """
    if scheme not in ("central", "forward"):
        raise ValueError(f"scheme is 'central' or 'forward', not {scheme!r}")
    start = time.perf_counter()
    m = _structure(pattern)
    x = np.asarray(x_flat, dtype=np.float64).reshape(-1)
    eps = np.finfo(np.float64).eps
    step = (eps ** (1 / 3) if scheme == "central" else eps ** 0.5) if step is None else step
    h = step * np.maximum(1.0, np.abs(x))
    s = seeds(colouring)
    columns, passes = [], 0
    base = _flat(f_flat(x)) if scheme == "forward" else None
    passes += scheme == "forward"
    for c in range(colouring.n_colours):
        d = h * s[:, c]
        if scheme == "central":
            columns.append(_flat(f_flat(x + d)) - _flat(f_flat(x - d)))
            passes += 2
        else:
            columns.append(_flat(f_flat(x + d)) - base)
            passes += 1
    compressed = np.stack(columns, axis=1) if columns else np.zeros((m.shape[0], 0))
    rows, cols = _coords(m)
    divisor = (2.0 if scheme == "central" else 1.0) * h[cols]
    values = compressed[rows, colouring.colours[cols]] / divisor
    return _result(m, values, colouring, passes, start)


def hessian_forward_over_reverse(hvp, pattern, colouring) -> SparseResult:
    """``H`` from ``hvp(v) = H @ v`` (forward over reverse) with a ``colour_hessian``
    colouring of the symmetric pattern: one product per colour, then

    - ``symmetric-column``: each nonzero ``H[i, j]`` at row i of colour ``colours[j]``'s
      product (no other column of that colour has a nonzero in row i);
    - ``star``: direct recovery (Gebremedhin, Manne & Pothen 2005): ``H[i, j]`` at row i of
      colour ``colours[j]``'s product where j is row i's only nonzero of that colour, else
      at row j of colour ``colours[i]``'s (``H[j, i]``, the same number): a star colouring
      leaves one of the two alone.  A diagonal entry is alone in its colour (neighbours
      differ)."""
    m = _structure(pattern)
    m = _structure(m + m.T)
    if colouring.kind != "star":
        return jacobian_forward(hvp, m, colouring)
    start = time.perf_counter()
    s = seeds(colouring)
    k, n = colouring.n_colours, m.shape[0]
    compressed = np.stack([_flat(hvp(s[:, c])) for c in range(k)], axis=1) if k \
        else np.zeros((n, 0))
    rows, cols = _coords(m)
    colours = colouring.colours
    # how many of row i's nonzeros have colour c, at [i * k + c]
    alone = np.bincount(rows * k + colours[cols], minlength=n * k) == 1
    direct = alone[rows * k + colours[cols]]
    mirrored = alone[cols * k + colours[rows]]
    if not np.all(direct | mirrored):
        bad = int(np.flatnonzero(~(direct | mirrored))[0])
        raise ValueError(f"not a star colouring of this pattern: H[{rows[bad]}, {cols[bad]}] is "
                         "shared in both its row and its column; colour with "
                         "colour_hessian(pattern, kind='star').")
    values = np.where(direct, compressed[rows, colours[cols]], compressed[cols, colours[rows]])
    return _result(m, values, colouring, k, start)


# --- helpers ------------------------------------------------------------------------------

def _structure(pattern):
    m = sp.csr_array(getattr(pattern, "matrix", pattern), dtype=bool)
    m.sum_duplicates()
    m.sort_indices()
    return m


def _coords(m):
    return np.repeat(np.arange(m.shape[0]), np.diff(m.indptr)), m.indices


def _flat(a):
    return np.asarray(getattr(a, "data", a), dtype=np.float64).reshape(-1)


def _result(m, values, colouring, passes, start):
    matrix = sp.csr_array((np.asarray(values, dtype=np.float64), m.indices.copy(), m.indptr.copy()),
                          shape=m.shape)
    return SparseResult(matrix, colouring.n_colours, int(passes), colouring,
                        time.perf_counter() - start)
