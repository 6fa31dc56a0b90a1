"""Binary arithmetic with NumPy broadcasting, quicker where NumPy's loop is slow.

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

Everything else (same shapes, scalars, small arrays, traced values) is the plain
operator, exactly as written ``x - y``.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..kernels import broadcast_axes

_OPERATOR = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
             np.true_divide: operator.truediv}
_MIN_OPERAND = 1024    # the smaller sizes gain nothing worth the shape arithmetic
_SHORT_RUN = 64        # a repeated run shorter than this makes NumPy's broadcast loop slow
_MIN_RESULT = 16384
_SHORT_LAST = 3        # a broadcast last axis this short runs column by column (2x faster at 2, slower from 4)


def binary(ufunc, x, y):
    """``ufunc(x, y)`` for ``np.add``/``subtract``/``multiply``/``true_divide``, written as
    the operator (``x - y``); a large broadcast over a short run repeats first."""
    # on every binary op's path: arrays go straight to the ufunc (what the operator calls)
    if type(x) is np.ndarray and type(y) is np.ndarray:
        # (a one-element operand is NumPy's fast scalar loop already)
        if (x.shape != y.shape and (x.size >= _MIN_OPERAND or y.size >= _MIN_OPERAND)
                and x.size != 1 and y.size != 1 and not _small_suffix_broadcast(x.shape, y.shape)):
            out = _repeated(ufunc, x, y)
            if out is not None:
                return out
        return ufunc(x, y)
    return _OPERATOR[ufunc](x, y)     # numbers, traced values: the operator itself


def _small_suffix_broadcast(a, b):
    """One shape ends with the other (a bias over a batch) and the result is small:
    known without ``np.broadcast_shapes``, which alone costs ~2 us."""
    if len(a) < len(b):
        a, b = b, a
    return a[len(a) - len(b):] == b and math.prod(a) < _MIN_RESULT


def _repeated(ufunc, x, y):
    try:
        shape = np.broadcast(x, y).shape   # (np.broadcast_shapes is 3x slower)
    except ValueError:
        return None   # the operator raises NumPy's own message
    if math.prod(shape) < _MIN_RESULT:
        return None
    if (1 < shape[-1] <= _SHORT_LAST and x.ndim and y.ndim and (x.shape[-1] == 1) != (y.shape[-1] == 1)
            and x.dtype == y.dtype and x.dtype.kind == "f"):
        return _by_last_position(ufunc, x, y, shape)
    dtype = np.result_type(x, y)
    for slow, fast, slow_first in ((x, y, True), (y, x, False)):
        axis = _short_repeat_axis(slow.shape, shape)
        if axis is None or slow.dtype != dtype or not _leading_broadcast_only(fast.shape, shape):
            continue
        full = np.repeat(slow.reshape((1,) * (len(shape) - slow.ndim) + slow.shape),
                         shape[axis], axis=axis)
        return ufunc(full, fast, out=full) if slow_first else ufunc(fast, full, out=full)
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
    axes = broadcast_axes(shape, out_shape)
    if len(axes) != 1:
        return None
    run = math.prod(out_shape[axes[0] + 1:])
    return axes[0] if 1 < run < _SHORT_RUN else None


def _leading_broadcast_only(shape, out_shape):
    """Broadcast over leading axes only (or not at all): NumPy's loop stays long."""
    axes = broadcast_axes(shape, out_shape)
    return axes == list(range(len(axes)))
