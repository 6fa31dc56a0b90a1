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
other kernels (``binary``, ``mm_tn``, ``sum_to``, ``split``, ``broadcast_to``,
``exp_in_place``, ``mm``) run on traced values as they are: their plain forms are
what the tracer records, and where their choice depends on shapes alone they call a
traced kernel (``binary`` calls ``broadcast_binary`` for the broadcasts it repeats,
``mm_tn`` calls ``transposed_product`` for the shapes where that layout is faster).  The
generated code calls the kernels in ``NUMPY_EQUIVALENTS`` in place of the NumPy
function of the same name (``np.broadcast_to``: a view, as NumPy's).
"""
from __future__ import annotations

import math
import operator

import numpy as np

#: the kernels ``compile`` records as one call each (see the module docstring)
#: kernels with the signature and result of the NumPy function of their name: a generated
#: program calls the kernel where the trace recorded the NumPy function
NUMPY_EQUIVALENTS = ("broadcast_to",)
TRACED = ("broadcast_binary", "transposed_product", "add_reduce", "extreme_reduce", "mul_sum_to", "double_product",
          "index_add", "take_rows")

_SHORT_AXIS = 64     # below this last-axis length add.reduce loses to a BLAS matrix-vector product
_LARGE = 4096        # ... once there are enough elements for the BLAS call to pay
_FEW = 16            # extreme_reduce: a last axis this short is reduced one slice at a time
_MIN_OPERAND = 1024  # binary: smaller operands gain nothing worth the shape arithmetic
_SHORT_RUN = 64      # ... a repeated run shorter than this makes NumPy's broadcast loop slow
_MIN_RESULT = 16384  # ... from this many elements of the result
_SHORT_LAST = 3      # ... a broadcast last axis this short runs column by column (2x faster at 2, slower from 4)
_FEW_COLUMNS = 12    # index_add: at most this many columns, one 1-D np.add.at per column

#: below this many elements in its first operand a kernel is its plain form, which
#: ``compile`` records as it is (``x.sum()``, not a call): readable small programs
MIN_SIZE = {"add_reduce": _LARGE, "mul_sum_to": _LARGE, "double_product": _LARGE}


def binary(ufunc, x, y):
    """``ufunc(x, y)`` for ``np.add``/``subtract``/``multiply``/``true_divide``, written as
    the operator (``x - y``); a large broadcast over a short run (``broadcast_binary``)
    repeats first.

    NumPy runs a broadcast ``x[:, None, :] - c`` (shapes (n, 1, d) and (k, d)) as one
    short inner loop of ``d`` elements per (row, repetition): for the k-means and GMM
    distance tensors that is about 3x slower than the same subtraction on a full
    array.  Repeating the operand along its broadcast axis first (``np.repeat``, a
    run of copies) and doing the op in place on the repeat gives the same values::

        >>> import numpy as np
        >>> x, c = np.arange(6.0).reshape(3, 1, 2), np.ones((4, 2))
        >>> bool((binary(np.subtract, x, c) == x - c).all())
        True
        >>> q = np.arange(60000.0).reshape(20000, 3) + 1
        >>> bool((binary(np.true_divide, q[:, :2], q[:, 2:]) == q[:, :2] / q[:, 2:]).all())
        True

    Everything else (same shapes, scalars, small arrays) is the plain operator, exactly
    as written ``x - y``; a traced value takes ``broadcast_binary`` where its shapes
    would repeat, else the operator."""
    # on every binary op's path: arrays go straight to the ufunc (what the operator calls)
    if type(x) is np.ndarray and type(y) is np.ndarray:
        if x.shape != y.shape and _large_broadcast(x, y):
            return broadcast_binary(ufunc, x, y)
        return ufunc(x, y)
    if (hasattr(x, "shape") and hasattr(y, "shape") and x.shape != y.shape
            and _large_broadcast(x, y) and _repeat_form(x, y, _broadcast_shape(x, y)) is not None):
        return broadcast_binary(ufunc, x, y)     # (a traced value: one recorded call)
    return _OPERATOR[ufunc](x, y)     # numbers, traced values: the operator itself


_OPERATOR = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
             np.true_divide: operator.truediv}


def broadcast_binary(ufunc, x, y):
    """``ufunc(x, y)``, where a broadcast over a short run repeats first (``binary``):
    over a short last axis one call per position (``_by_last_position``); along one
    axis with a short run after it, ``np.repeat`` of that operand and the ufunc in place
    on the repeat.  The same numbers as ``ufunc(x, y)``."""
    if type(x) is np.ndarray and type(y) is np.ndarray:
        shape = _broadcast_shape(x, y)
        form = _repeat_form(x, y, shape)
        if form == "last":
            return _by_last_position(ufunc, x, y, shape)
        if form is not None:
            axis, slow_first = form
            slow, fast = (x, y) if slow_first else (y, x)
            full = np.repeat(slow.reshape((1,) * (len(shape) - slow.ndim) + slow.shape),
                             shape[axis], axis=axis)
            return ufunc(full, fast, out=full) if slow_first else ufunc(fast, full, out=full)
    return ufunc(x, y)


def _large_broadcast(x, y) -> bool:
    """Operands of different shapes, one large, neither a single element (NumPy's fast
    scalar loop), not a bias over a small batch."""
    return ((x.size >= _MIN_OPERAND or y.size >= _MIN_OPERAND) and x.size != 1 and y.size != 1
            and not _small_suffix_broadcast(x.shape, y.shape))


def _small_suffix_broadcast(a, b):
    """One shape ends with the other (a bias over a batch) and the result is small:
    known without ``np.broadcast_shapes``, which alone costs ~2 us."""
    if len(a) < len(b):
        a, b = b, a
    return a[len(a) - len(b):] == b and math.prod(a) < _MIN_RESULT


def _broadcast_shape(x, y):
    """The broadcast shape, or None where the shapes do not broadcast (the operator
    raises NumPy's own message)."""
    try:
        if type(x) is np.ndarray and type(y) is np.ndarray:
            return np.broadcast(x, y).shape   # (np.broadcast_shapes is 3x slower)
        return np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return None


def _repeat_form(x, y, shape):
    """How ``broadcast_binary`` computes: ``"last"``, ``(axis, x_is_repeated)`` or None
    (the ufunc itself), from the operands' shapes and dtypes alone."""
    if shape is None or math.prod(shape) < _MIN_RESULT:
        return None
    if (1 < shape[-1] <= _SHORT_LAST and x.ndim and y.ndim and (x.shape[-1] == 1) != (y.shape[-1] == 1)
            and x.dtype == y.dtype and x.dtype.kind == "f"):
        return "last"
    dtype = np.result_type(x.dtype, y.dtype)
    for slow, fast, slow_first in ((x, y, True), (y, x, False)):
        axis = _short_repeat_axis(slow.shape, shape)
        if axis is None or slow.dtype != dtype or not _leading_broadcast_only(fast.shape, shape):
            continue
        return axis, slow_first
    return None


def _by_last_position(ufunc, x, y, shape):
    """``ufunc(x, y)`` with one call per index j of the short last axis, on
    ``x[..., j]`` and ``y[..., j]`` (or ``[..., 0]`` for the operand broadcast there):
    each element is the same operation on the same two numbers."""
    out = np.empty(shape, x.dtype)
    x_runs, y_runs = x.shape[-1] != 1, y.shape[-1] != 1
    x0, y0 = x[..., 0], y[..., 0]
    for j in range(shape[-1]):
        ufunc(x[..., j] if x_runs else x0, y[..., j] if y_runs else y0, out=out[..., j])
    return out


def _short_repeat_axis(shape, out_shape):
    """The one axis along which ``shape`` is repeated to ``out_shape``, if the run of
    its own elements after that axis is short (else None)."""
    axes = _broadcast_axes(shape, out_shape)
    if len(axes) != 1:
        return None
    run = math.prod(out_shape[axes[0] + 1:])
    return axes[0] if 1 < run < _SHORT_RUN else None


def _leading_broadcast_only(shape, out_shape):
    """Broadcast over leading axes only (or not at all): NumPy's loop stays long."""
    axes = _broadcast_axes(shape, out_shape)
    return axes == list(range(len(axes)))


def _broadcast_axes(shape, out_shape) -> list:
    """The axes of ``out_shape`` along which ``shape`` is repeated by broadcasting."""
    pad = len(out_shape) - len(shape)
    return [i for i, n in enumerate(out_shape) if n != 1 and (i < pad or shape[i - pad] == 1)]


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
    if type(x) is np.ndarray:
        return ufunc.reduce(x, axis=axes, keepdims=True, **kw)
    return _REDUCTION_OF[ufunc](x, axis=axes, keepdims=True, **kw)   # np.max / np.min


_REDUCTION_OF = {np.maximum: np.max, np.minimum: np.min}


def mul_sum_to(g, x, shape: tuple):
    """``sum_to(g * x, shape)``: the gradient of a product's operand of ``shape``.  For
    large C-contiguous float arrays ``g`` and ``x`` of one shape, one ``np.einsum`` over
    the summed axes (no ``g * x`` temporary; (1000, 10, 10) -> (10, 10): 44 us, not 66;
    (10, 1000, 10) -> (10, 1, 10): 62 us, not 121), the same sum up to rounding; except
    over a short last axis, where the product and ``add_reduce``'s matrix-vector
    product with ones are quicker, and for a one-element result (``add.reduce``'s
    pairwise total)."""
    if (type(g) is np.ndarray and type(x) is np.ndarray and g.shape == x.shape
            and g.size >= _LARGE and g.dtype == x.dtype and g.dtype.kind == "f"
            and g.flags.c_contiguous and x.flags.c_contiguous and math.prod(shape) > 1):
        lead = g.ndim - len(shape)
        summed = [i for i, n in enumerate(g.shape)
                  if i < lead or (shape[i - lead] == 1 and n != 1)]
        if summed and not (summed[-1] == g.ndim - 1 and g.shape[-1] <= _SHORT_AXIS):
            axes = _LETTERS[:g.ndim]
            kept = "".join(c for i, c in enumerate(axes) if i not in summed)
            return np.einsum(f"{axes},{axes}->{kept}", g, x).reshape(shape)
    return sum_to(g * x, shape)


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


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


def split(x, indices, axis: int):
    """``tuple(np.split(x, indices, axis))`` for cut points ``indices``: the slices
    themselves, without ``np.split``'s Python wrapper (6.5 us for four parts of a
    56-vector, against four slices at ~0.3 us each; also in a compiled program, where
    the tracer records the slices)."""
    lead = (slice(None),) * (axis % x.ndim)
    bounds = (0, *indices, x.shape[axis])
    return tuple(x[lead + (slice(a, b),)] for a, b in zip(bounds[:-1], bounds[1:]))


def broadcast_to(x, shape: tuple):
    """``np.broadcast_to(x, shape)`` (a read-only view); a one-element ``x`` (a full
    reduction's gradient) is spread by zero strides directly, 6x faster than NumPy's
    Python-level wrapper."""
    if x.size == 1 and x.ndim <= len(shape) and (type(x) is np.ndarray or isinstance(x, np.generic)):
        out = np.ndarray(shape, x.dtype, x, 0, (0,) * len(shape))
        out.flags.writeable = False   # as np.broadcast_to: one memory location, many elements
        return out
    return np.broadcast_to(x, shape)


def exp_in_place(x):
    """``np.exp(x)``, written into ``x``'s own memory when ``x`` is an array: the caller
    hands over a fresh array it does not need again.  (A traced value takes ``np.exp``;
    the compiled program's buffer planning writes it in place where that is safe.)"""
    return np.exp(x, out=x) if type(x) is np.ndarray else np.exp(x)


def mm_tn(a, g):
    """``a.T @ g`` for 2-D ``a`` and ``g`` (a weight's gradient ``X.T @ G``).  Where the
    result has more rows than columns and ``a`` is large, ``transposed_product``; else
    ``mm(a.T, g)``.  Tensors (a ``create_graph`` backward) and traced values as well."""
    if a.shape[1] > g.shape[1] and a.size >= _LARGE:
        return transposed_product(a, g)
    return mm(a.T, g)


def transposed_product(a, g):
    """``a.T @ g`` computed as ``(g.T @ a).T``: the same dot products (up to the order of
    BLAS's rounding), in the layout OpenBLAS runs faster for a tall result ((1000, 784)
    and (1000, 50): 1.67 ms, not 2.49; (20000, 11) and (20000, 3): 170 us, not 191).
    The result is the transpose (a view) of a new array."""
    return (g.T @ a).T


def mm(x, y):
    """``x @ y``; for two 2-D arrays ``x.dot(y)``, the same BLAS product with less
    dispatch (0.47 us, not 1.1, for (1, 1) @ (1, 4); ``np.dot`` is 0.74), and through
    BLAS where ``np.matmul`` runs its own loop: a contracted dim of 1, the outer product
    ``a.T @ g`` of a one-row batch, 4.5 us not 13 for (64, 1) @ (1, 128).  Tensors and
    traced values take ``@``."""
    if type(x) is np.ndarray and type(y) is np.ndarray and x.ndim == 2 and y.ndim == 2:
        return x.dot(y)
    return x @ y


def _is_row_gather(key, g, shape) -> bool:
    """``x[idx]`` with one 1-D integer array."""
    return (type(key) is np.ndarray and key.ndim == 1 and key.dtype.kind in "iu"
            and type(g) is np.ndarray and g.dtype.kind == "f" and len(shape) >= 1
            and g.shape[:1] == key.shape)


def _scatter_rows(g, key, shape):
    """Sum the rows of ``g`` into rows ``key`` of zeros(shape): one 1-D ``np.add.at`` per
    column when there are few columns (a camera's 11 parameters: 0.40 ms, not 0.62 for
    20000 rows; NumPy's 1-D ``add.at`` has a fast loop, quicker than ``bincount`` on a
    strided column), else one
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
