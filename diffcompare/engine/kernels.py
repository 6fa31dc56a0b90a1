"""Shape-dependent kernels: quicker forms of a few NumPy operations, used by both modes.

Each kernel is a plain function that computes what the NumPy expression in its
docstring computes (the same numbers, or the same up to the order of a sum's
rounding where it says so), by a form that is faster at some shapes: a short-axis
sum as a matrix-vector product with ones, a sum over a long axis other than the
last in blocks by ``np.einsum`` (as accurate as a pairwise sum, where NumPy's reduce
adds the rows one after another), a multiply-then-sum as one ``einsum``, a row
scatter instead of ``np.add.at``, a repeat instead of a loop over a zero stride.
The choice is made from the shapes, strides and dtypes of the arrays it is given;
on anything that is not a NumPy array (a NumPy scalar) it computes the plain form.

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
_BLOCK = 64          # add_reduce: rows added one after another, at most (then the blocks' sums)
_FEW = 16            # extreme_reduce: a last axis this short is reduced one slice at a time
_MIN_OPERAND = 1024  # binary: smaller operands gain nothing worth the shape arithmetic
_SHORT_RUN = 64      # ... a repeated run shorter than this makes NumPy's broadcast loop slow
_MIN_RESULT = 16384  # ... from this many elements of the result
_SHORT_LAST = 3      # ... a broadcast last axis this short runs column by column (2x faster at 2, slower from 4)
_FEW_COLUMNS = 12    # index_add: at most this many columns, one 1-D np.add.at per column

#: where a kernel is its plain form at these operands' shapes (small ones), which
#: ``compile`` records as it is (``x.sum()``, not a call): readable small programs
PLAIN = {"add_reduce": lambda x, axes, keepdims: np.size(x) < _LARGE and not _long_runs(np.shape(x), axes),
         "mul_sum_to": lambda g, x, shape: np.size(g) < _LARGE,
         "double_product": lambda g, a: np.size(g) < _LARGE}


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
    """``np.add.reduce(x, axis=axes, keepdims=keepdims)`` (``axes`` sorted), the same sum up
    to rounding: for C-contiguous float arrays, accurate where NumPy's reduce is not and
    quicker where its reduce runs one short loop per row or per output element.

    NumPy adds pairwise only along a contiguous run of axes at the end; over any other
    axis it adds the rows one after another into each output, an error growing with the
    number of rows (a float32 bias gradient summed over 50000 rows: 5e-6 relative, where
    torch's cascade sum gives 1e-7).  Here the reduced axes are taken one run of adjacent
    axes at a time, the outermost first, each as the middle axis of a (before, run, after)
    view:

    - a run before the last axis: ``_sum_rows``, the rows added in blocks of at most
      ``_BLOCK`` and then the blocks' sums the same way, by ``np.einsum``, 2-10x faster
      than NumPy's reduce there (sum(axis=0) of (100000, 10) float32: 0.21 ms, not 1.9;
      one middle axis of (300, 300, 3): 0.18 ms, not 1.33);
    - a short run at the end (at most ``_SHORT_AXIS``), a matrix-vector product with ones
      (sum(axis=-1) of a (1000, 100, 8) array: 0.24 ms, not 2.3); a longer one NumPy's
      pairwise reduce.

    An array below ``_LARGE`` elements whose reduced axes hold at most ``_BLOCK`` rows
    before that run at the end takes NumPy's reduce (``PLAIN``): its order is then as
    accurate, and its one call quicker."""
    # the size test first: on small arrays (the common case) the checks cost more than the sum
    if (type(x) is np.ndarray and x.ndim >= 2 and axes and (x.size >= _LARGE or _long_runs(x.shape, axes))
            and x.dtype.kind == "f" and x.flags.c_contiguous):
        k = len(axes)
        if axes[-1] == k - 1 and k < x.ndim and x.itemsize >= 4:   # leading axes (a bias gradient)
            out = _sum_rows(x.reshape(1, math.prod(x.shape[:k]), math.prod(x.shape[k:])))
            return out.reshape((1,) * k + x.shape[k:] if keepdims else x.shape[k:])
        if axes[0] == x.ndim - k and math.prod(x.shape[-k:]) > _SHORT_AXIS:   # a long run at the end
            return np.add.reduce(x, axis=axes, keepdims=keepdims)
        out, left = x, axes
        while left:   # the outermost run of adjacent reduced axes, then the rest
            start = end = left[0]
            while end + 1 in left:
                end += 1
            out = _reduce_run(out, start, end + 1)
            left = tuple(i - (end + 1 - start) for i in left if i > end)
        return out.reshape([1 if i in axes else n for i, n in enumerate(x.shape)]) if keepdims else out
    return np.add.reduce(x, axis=axes, keepdims=keepdims)


def _long_runs(shape, axes) -> bool:
    """More than ``_BLOCK`` rows in all along the reduced axes before the run of them that
    ends the shape (contiguous: NumPy's reduce adds it pairwise), which NumPy's reduce
    would add one after another."""
    end = len(shape)
    if not axes or axes[0] == end - len(axes):   # nothing, or one run at the end (a full sum too)
        return False
    if len(axes) == 1:
        return shape[axes[0]] > _BLOCK
    while end - 1 in axes:
        end -= 1
    return math.prod(shape[i] for i in axes if i < end) > _BLOCK


def _reduce_run(x, start, end):
    """``x`` (C-contiguous, float) summed over its axes ``start`` to ``end - 1``: a new
    C-contiguous array."""
    shape = x.shape
    before, run, after = math.prod(shape[:start]), math.prod(shape[start:end]), math.prod(shape[end:])
    kept = shape[:start] + shape[end:]
    if after > 1 and x.itemsize >= 4:
        return _sum_rows(x.reshape(before, run, after)).reshape(kept)
    if after == 1 and 1 < run <= _SHORT_AXIS and x.size >= _LARGE:
        return (x.reshape(before, run) @ np.ones(run, x.dtype)).reshape(kept)
    # a run at the end (NumPy adds it pairwise), half precision, a small remainder
    return np.add.reduce(x, axis=tuple(range(start, end)))


def _sum_rows(*operands):
    """``x.sum(axis=1)`` of a C-contiguous (a, n, c) float array ``x``, an (a, c) array; or
    of the product of two such arrays, without the product's temporary.

    Blocked pairwise summation, as NumPy's along a contiguous axis and torch's cascade
    sum: ``_BLOCK * m`` rows (m = n // ``_BLOCK``) give m partial sums of ``_BLOCK`` rows
    each, added in order by one ``np.einsum``; the m partial sums are added the same way,
    then the rows past the blocks in order.  Each output adds at most ``_BLOCK`` numbers
    one after another per level, so its error grows with ``_BLOCK`` times the number of
    levels (log(n) / log(_BLOCK)), not with n.  Short rows (c < ``_SHORT_AXIS``) are
    added as ``_BLOCK`` slabs of m rows (partial sum j adds rows j, j + m, j + 2m, ...),
    so the einsum's loop runs over m * c contiguous numbers, not c: 1.3-3x faster than
    adding the n rows in order ((100000, 10) float32: 0.20 ms, not 0.41); long rows in
    blocks of ``_BLOCK`` consecutive rows, as fast as in order (a slab's m * c partial
    sums would leave the cache: (1000, 784): 0.29 ms, not 0.24)."""
    a, n, c = operands[0].shape
    if n <= _BLOCK:
        return _add_rows(*operands)
    m = n // _BLOCK
    used = m * _BLOCK
    if c < _SHORT_AXIS:
        sums = _add_rows(*(x[:, :used].reshape(a, _BLOCK, m * c) for x in operands))
    elif a == 1:
        sums = _add_rows(*(x.reshape(n, c)[:used].reshape(m, _BLOCK, c) for x in operands))
    else:
        sums = np.einsum(_BLOCK_SUM[len(operands)], *(x[:, :used].reshape(a, m, _BLOCK, c) for x in operands))
    out = _sum_rows(sums.reshape(a, m, c)) if m > 1 else sums.reshape(a, c)
    if used < n:
        out += _add_rows(*(x[:, used:] for x in operands))
    return out


def _add_rows(*operands):
    """The (a, n, c) array (or the product of two) summed over its middle axis, the rows in
    order: ``np.einsum``, or below ``_LARGE`` elements NumPy's reduce (one quicker call)."""
    if len(operands) == 1 and operands[0].size < _LARGE:
        return np.add.reduce(operands[0], axis=1)
    return np.einsum(_ROW_SUM[len(operands)], *operands)


#: _sum_rows: a sum over the middle axis (of products), and over the third of four
_ROW_SUM = {1: "ijk->ik", 2: "ijk,ijk->ik"}
_BLOCK_SUM = {1: "ijkl->ijl", 2: "ijkl,ijkl->ijl"}


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
        if x.size >= _LARGE or x.shape[0] > _BLOCK:
            return add_reduce(x, (0,), False)
        return np.add.reduce(x, axis=0)
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
    large C-contiguous float arrays ``g`` and ``x`` of one shape summed over one run of
    adjacent axes before the last, the products summed in blocks as ``add_reduce`` sums
    rows (``_sum_rows``), by ``np.einsum`` without a ``g * x`` temporary ((1000, 10, 10)
    -> (10, 10): 59 us, not 122; (10, 1000, 10) -> (10, 1, 10): 63 us, not 133).  Anything
    else is the product summed by ``sum_to`` (a summed last axis: NumPy's pairwise sum,
    more accurate there than einsum's, or ``add_reduce``'s product with ones)."""
    if (type(g) is np.ndarray and type(x) is np.ndarray and g.shape == x.shape
            and g.size >= _LARGE and g.dtype == x.dtype and g.dtype.kind == "f"
            and g.flags.c_contiguous and x.flags.c_contiguous and math.prod(shape) > 1):
        lead = g.ndim - len(shape)
        summed = [i for i, n in enumerate(g.shape)
                  if i < lead or (shape[i - lead] == 1 and n != 1)]
        if summed and summed[-1] - summed[0] == len(summed) - 1 and summed[-1] < g.ndim - 1:
            start, end = summed[0], summed[-1] + 1
            rows = (math.prod(g.shape[:start]), math.prod(g.shape[start:end]), math.prod(g.shape[end:]))
            return _sum_rows(g.reshape(rows), x.reshape(rows)).reshape(shape)
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
    if isinstance(x, np.generic):   # (a NumPy scalar's buffer is read-only, and so the view)
        return np.ndarray(shape, x.dtype, x, 0, (0,) * len(shape))
    if x.size == 1 and x.ndim <= len(shape) and type(x) is np.ndarray:
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
