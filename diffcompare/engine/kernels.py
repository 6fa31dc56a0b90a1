"""Shape-dependent kernels: quicker forms of a few NumPy operations, used by both modes.

Each kernel is a plain function that computes what the NumPy expression in its
docstring computes (the same numbers, or the same up to the order of a sum's
rounding where it says so), by a form that is faster at some shapes: a short-axis
sum as a matrix-vector product with ones, a leading-axis sum as ``np.einsum``, a
multiply-then-sum as one ``einsum``, a row scatter instead of ``np.add.at``, a
repeat instead of a loop over a zero stride.  The choice is made from the shapes,
strides and dtypes of the arrays it is given; on anything that is not a NumPy
array (a NumPy scalar) it computes the plain form.

The eager engine's ops (``ops/*``) call these on arrays.  ``compile`` records a
call to each kernel named in ``TRACED`` as one step of the program
(``compiler/tracing.py`` swaps them, while tracing, for versions that record), and
the generated code calls the same function, so a compiled program takes the same
fast paths, chosen at run time by the same tests.  Every traced kernel returns a
new array that no operand shares (the generated code may write into it).  The
other kernels (``sum_to``, ``exp_in_place``, ``mm``) run on traced values as they
are: their plain forms are what the tracer records.
"""
from __future__ import annotations

import math

import numpy as np

#: the kernels ``compile`` records as one call each (see the module docstring)
TRACED = ("add_reduce", "extreme_reduce", "mul_sum_to", "double_product", "index_add",
          "take_rows")

_SHORT_AXIS = 64     # below this last-axis length add.reduce loses to a BLAS matrix-vector product
_LARGE = 4096        # ... once there are enough elements for the BLAS call to pay
_FEW = 16            # extreme_reduce: a last axis this short is reduced one slice at a time
_FEW_COLUMNS = 8     # index_add: at most this many columns, one 1-D np.add.at per column


def add_reduce(x, axes: tuple, keepdims: bool):
    """``np.add.reduce(x, axis=axes, keepdims=keepdims)`` (``axes`` sorted), quicker for
    large C-contiguous float arrays where NumPy's reduce runs one short loop per row or
    per output element:

    - over the short last axis, a matrix-vector product with ones (sum(axis=-1) of a
      (1000, 100, 8) array: 2.3 ms, against 0.24 ms for ``@ ones(8)``), the same sum up
      to rounding;
    - over leading axes (a bias gradient summed over the batch), ``np.einsum('ij->j')``,
      which adds the rows in the same order as the reduce (sum(axis=0) of (4096, 10):
      38 us, not 177);
    - over one middle axis, ``np.einsum('ijk->ik')``, again in the reduce's order.
    """
    if (type(x) is np.ndarray and x.size >= _LARGE and x.ndim >= 2 and x.dtype.kind == "f"
            and x.flags.c_contiguous):
        k = len(axes)
        kept = math.prod(x.shape[k:])
        if k and axes[-1] == k - 1 and kept > 1 and x.itemsize >= 4:   # leading k axes
            out = np.einsum("ij->j", x.reshape(-1, kept)).reshape(x.shape[k:])
            return out.reshape((1,) * k + out.shape) if keepdims else out
        if k == 1 and axes[0] == x.ndim - 1 and 1 < x.shape[-1] <= _SHORT_AXIS:
            n = x.shape[-1]
            out = (x.reshape(-1, n) @ np.ones(n, x.dtype)).reshape(x.shape[:-1])
            return out[..., None] if keepdims else out
        if k == 1 and 0 < axes[0] < x.ndim - 1 and x.itemsize >= 4:
            # one middle axis (a pairwise difference's gradient, (n, n, d) -> (n, 1, d)):
            # NumPy's reduce strides through it one short row at a time; einsum adds the
            # same rows in the same order, 2-5x faster ((300, 300, 3): 1.33 -> 0.27 ms)
            ax = axes[0]
            rows = (math.prod(x.shape[:ax]), x.shape[ax], math.prod(x.shape[ax + 1:]))
            out = np.einsum("ijk->ik", x.reshape(rows))
            shape = x.shape[:ax] + ((1,) if keepdims else ()) + x.shape[ax + 1:]
            return out.reshape(shape)
    return np.add.reduce(x, axis=axes, keepdims=keepdims)


def sum_to(x, shape: tuple):
    """Sum ``x`` over the axes NumPy broadcasting added to get from ``shape`` to ``x.shape``
    (the bias gradient's ``sum(0)``): ``x`` itself when nothing was added."""
    if x.shape == shape:
        return x
    if x.size == math.prod(shape):
        # every summed axis has length 1 (a batch of one): the same numbers, reshaped
        return x.reshape(shape)
    lead = x.ndim - len(shape)
    if lead == 1 and x.shape[1:] == shape:   # the common case: a bias broadcast over a batch
        return add_reduce(x, (0,), False) if x.size >= _LARGE else np.add.reduce(x, axis=0)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1
    )
    # e.g. an (n, 1) scale's gradient from an (n, 2) product: add_reduce's short-axis route
    out = add_reduce(x, axes, True)
    return out.reshape(shape) if lead else out


def extreme_reduce(x, axes: tuple, ufunc, **kw):
    """``ufunc.reduce(x, axis=axes, keepdims=True, **kw)`` for ``ufunc`` ``np.maximum`` or
    ``np.minimum`` (``np.max``/``np.min``); over a last axis of at most ``_FEW`` elements,
    one ufunc call per slice instead: 3x faster than NumPy's reduce there (max over axis 1
    of a (1000, 10) array: 15 us, not 44).  NaN propagates either way."""
    if (type(x) is np.ndarray and len(axes) == 1 and x.ndim >= 2 and axes[0] == x.ndim - 1
            and 1 < x.shape[-1] <= _FEW and x.size >= _FEW * 64):
        out = ufunc(x[..., 0], x[..., 1])
        for i in range(2, x.shape[-1]):
            ufunc(out, x[..., i], out=out)
        return out[..., None]
    return ufunc.reduce(x, axis=axes, keepdims=True, **kw)


def mul_sum_to(g, x, shape: tuple):
    """``sum_to(g * x, shape)``: the gradient of a product's operand of ``shape``.  When
    the operand was broadcast over leading axes of large C-contiguous arrays ``g`` and ``x``
    of one shape, one ``np.einsum`` (no ``g * x`` temporary; 37 us instead of 66 for
    (1000, 10, 10) -> (10, 10)), adding the products in the order ``sum_to`` does."""
    if (type(g) is np.ndarray and type(x) is np.ndarray and g.shape == x.shape
            and g.size >= _LARGE and g.dtype == x.dtype and g.dtype.kind == "f"
            and g.flags.c_contiguous and x.flags.c_contiguous):
        kept = leading_repeat_size(shape, g.shape)
        if kept:
            rows = (g.size // kept, kept)
            return np.einsum("ij,ij->j", g.reshape(rows), x.reshape(rows)).reshape(shape)
    return sum_to(g * x, shape)


def double_product(g, a):
    """``g * 2.0 * a`` (the square's gradient).  When ``g`` repeats each element along its
    last axis only (a zero stride there: ``sum(d ** 2, axis=-1)``'s backward), NumPy's
    loop over the zero stride is slow: double g's own elements, repeat them into a fresh
    array and multiply by ``a`` in place (the same numbers; 88 -> 57 us for (1000, 10, 10))."""
    if (type(g) is np.ndarray and type(a) is np.ndarray and g.size >= _LARGE and g.ndim > 1
            and g.strides[-1] == 0 and g.shape[-1] > 1 and 0 not in g.strides[:-1]
            and a.shape == g.shape and a.dtype == g.dtype):
        out = np.repeat(g[..., :1] * 2.0, g.shape[-1], axis=-1)
        return np.multiply(out, a, out=out)
    return g * 2.0 * a


def index_add(g, key, shape: tuple, accumulate: bool):
    """``out = np.zeros(shape); np.add.at(out, key, g)`` if ``accumulate`` (repeated
    indices summed: the backward of advanced indexing), else ``out[key] = g``.  For rows
    gathered by one 1-D integer array (an embedding, a bundle adjustment's camera lookup),
    a row scatter several times faster than ``np.add.at``: each output row sums its rows
    in index order, as ``np.add.at`` does."""
    if accumulate and _is_row_gather(key, g, shape):
        return _scatter_rows(g, key, shape)
    out = np.zeros(shape, dtype=g.dtype if type(g) is np.ndarray else np.result_type(g))
    if accumulate:
        np.add.at(out, key, g)
    else:
        out[key] = g
    return out


def take_rows(x, key):
    """``x[key]``; for one 1-D integer array ``key`` (a row gather) ``np.take(x, key,
    axis=0)``, 5x faster."""
    if type(key) is np.ndarray and key.ndim == 1 and key.dtype.kind in "iu" and type(x) is np.ndarray:
        return np.take(x, key, axis=0)
    return x[key]


def exp_in_place(x):
    """``np.exp(x)``, written into ``x``'s own memory when ``x`` is an array: the caller
    hands over a fresh array it does not need again.  (A traced value takes ``np.exp``;
    the compiled program's buffer planning writes it in place where that is safe.)"""
    return np.exp(x, out=x) if type(x) is np.ndarray else np.exp(x)


def mm(x, y):
    """``x @ y``; for two 2-D arrays ``x.dot(y)``, the same BLAS product with less
    dispatch (0.47 us, not 1.1, for (1, 1) @ (1, 4); ``np.dot`` is 0.74), and through
    BLAS where ``np.matmul`` runs its own loop: a contracted dim of 1, the outer product
    ``a.T @ g`` of a one-row batch, 4.5 us not 13 for (64, 1) @ (1, 128).  Tensors and
    traced values take ``@``."""
    if type(x) is np.ndarray and type(y) is np.ndarray and x.ndim == 2 and y.ndim == 2:
        return x.dot(y)
    return x @ y


def broadcast_axes(shape, out_shape) -> list:
    """The axes of ``out_shape`` along which ``shape`` is repeated by broadcasting."""
    pad = len(out_shape) - len(shape)
    return [i for i, n in enumerate(out_shape) if n != 1 and (i < pad or shape[i - pad] == 1)]


def leading_repeat_size(shape, out_shape) -> int:
    """The size of ``shape`` when broadcasting it to ``out_shape`` repeats it over leading
    axes only (``(10, 10)`` or ``(1, 10, 10)`` in ``(1000, 10, 10)``), else 0 (also for
    one element: a scalar's sum is add.reduce's pairwise total)."""
    axes = broadcast_axes(shape, out_shape)
    if not axes or axes != list(range(len(axes))):
        return 0
    kept = math.prod(out_shape[len(axes):])
    return kept if kept > 1 else 0


def _is_row_gather(key, g, shape) -> bool:
    """``x[idx]`` with one 1-D integer array."""
    return (type(key) is np.ndarray and key.ndim == 1 and key.dtype.kind in "iu"
            and type(g) is np.ndarray and g.dtype.kind == "f" and len(shape) >= 1
            and g.shape[:1] == key.shape)


def _scatter_rows(g, key, shape):
    """Sum the rows of ``g`` into rows ``key`` of zeros(shape): one 1-D ``np.add.at`` per
    column when there are few columns (a camera's 7 parameters; NumPy's 1-D ``add.at``
    has a fast loop, 15% quicker than ``bincount`` on a strided column), else one
    ``bincount`` over (row, column) pairs.  Either way each output sums its rows in index
    order."""
    n = shape[0]
    cols = int(np.prod(shape[1:], dtype=np.int64))
    flat = g.reshape(len(key), cols)
    if cols <= _FEW_COLUMNS:
        out = np.zeros((n, cols), dtype=g.dtype)
        for j in range(cols):
            np.add.at(out[:, j], key, flat[:, j])
        return out.reshape(shape)
    if not np.can_cast(g.dtype, np.float64):     # long double: bincount sums in float64 only
        out = np.zeros((n, cols), dtype=g.dtype)
        np.add.at(out, key, flat)
        return out.reshape(shape)
    idx = np.where(key < 0, key + n, key) if key.dtype.kind == "i" else key
    pairs = (idx[:, None] * cols + np.arange(cols)).ravel()
    out = np.bincount(pairs, weights=flat.ravel(), minlength=n * cols)
    return out.reshape(shape).astype(g.dtype, copy=False)
