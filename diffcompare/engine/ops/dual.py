"""Functions for writing backward formulas once, for arrays and for Tensors.

An ordinary backward passes NumPy arrays through the formulas (fast, nothing
recorded).  ``backward(create_graph=True)`` passes Tensors instead, so the same
formula builds a graph that can be differentiated again.  Operators (``+ - * /
@``, ``.reshape``, ``.swapaxes``, ``.sum``, indexing) already work on both; the
functions here cover the rest, dispatching on whether ``x`` is a Tensor.
"""
from __future__ import annotations

import math

import numpy as np

from ..tensor import Tensor as _Tensor, data_types as _data_types

#: The Function each helper applies to Tensors, registered by the module defining it
#: (``@dual.records("exp")``), so that this module imports no op module.
_recorded = {}


def records(name: str):
    """Class decorator: the helper ``name`` of this module applies this Function to Tensors."""
    def register(cls):
        _recorded[name] = cls
        return cls
    return register


def _is_tensor(x) -> bool:
    return type(x) is _Tensor


def sum_to_array(x: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``x`` over the axes NumPy broadcasting added to get from ``shape`` to ``x.shape``."""
    if type(x) is not np.ndarray and type(x) not in _data_types:
        x = np.asarray(x)   # (a registered array stand-in, compile's Tracer, sums as it is)
    if x.shape == shape:
        return x
    if x.size == math.prod(shape):
        # every summed axis has length 1 (a batch of one): the same numbers, reshaped
        return x.reshape(shape)
    lead = x.ndim - len(shape)
    if lead == 1 and x.shape[1:] == shape:   # the common case: a bias broadcast over a batch
        if type(x) is np.ndarray and x.size >= _LARGE:
            return add_reduce(x, (0,), False)
        return np.add.reduce(x, axis=0)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1
    )
    # e.g. an (n, 1) scale's gradient from an (n, 2) product: add_reduce's short-axis route
    out = add_reduce(x, axes, True) if type(x) is np.ndarray else x.sum(axis=axes, keepdims=True)
    return out.reshape(shape) if lead else out


def add_reduce(x, axes: tuple, keepdims: bool):
    """``np.add.reduce(x, axes)`` (``axes`` sorted), quicker for large C-contiguous float
    arrays where NumPy's reduce runs one short loop per row or per output element:

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


_SHORT_AXIS = 64     # below this last-axis length add.reduce loses to a BLAS matrix-vector product
_LARGE = 4096        # ... once there are enough elements for the BLAS call to pay


def sum_to(x, shape: tuple):
    """Reduce a broadcast gradient back to an input's ``shape`` (the bias ``sum(0)``)."""
    if _is_tensor(x):
        return x if x.shape == shape else _recorded["sum_to"].apply(x, shape=shape)
    return sum_to_array(x, shape)


def broadcast_to(x, shape: tuple):
    if _is_tensor(x):
        return x if x.shape == shape else _recorded["broadcast_to"].apply(x, shape=shape)
    return broadcast_to_array(x, shape)


def broadcast_to_array(x: np.ndarray, shape: tuple) -> np.ndarray:
    """``np.broadcast_to``; a one-element ``x`` (a full reduction's gradient) is
    spread by zero strides directly, 6x faster than NumPy's Python-level wrapper."""
    if x.size == 1 and x.ndim <= len(shape) and (type(x) is np.ndarray or isinstance(x, np.generic)):
        out = np.ndarray(shape, x.dtype, x, 0, (0,) * len(shape))
        out.flags.writeable = False   # as np.broadcast_to: one memory location, many elements
        return out
    return np.broadcast_to(x, shape)


def exp(x):
    return _recorded["exp"].apply(x) if _is_tensor(x) else np.exp(x)


def log(x):
    return _recorded["log"].apply(x) if _is_tensor(x) else np.log(x)


def sin(x):
    return _recorded["sin"].apply(x) if _is_tensor(x) else np.sin(x)


def cos(x):
    return _recorded["cos"].apply(x) if _is_tensor(x) else np.cos(x)


def _helper(name: str, array_fn):
    """The helper ``name``: the op's Function on a Tensor, ``array_fn`` on anything else."""
    def helper(x):
        return _recorded[name].apply(x) if _is_tensor(x) else array_fn(x)

    helper.__name__ = helper.__qualname__ = name
    return helper


sqrt = _helper("sqrt", np.sqrt)
sinh = _helper("sinh", np.sinh)
cosh = _helper("cosh", np.cosh)
exp2 = _helper("exp2", np.exp2)


def where(mask: np.ndarray, x, y=0.0):
    """``x`` where the constant boolean ``mask`` holds, else ``y`` (a number)."""
    if _is_tensor(x):
        zero = _Tensor._make(np.asarray(y, dtype=x.dtype))
        return _recorded["where"].apply(x, zero, condition=mask)
    return np.where(mask, x, y)


def permute(x, axes):
    return _recorded["permute"].apply(x, axes=axes) if _is_tensor(x) else np.transpose(x, axes)


def stack(xs, axis: int):
    return _recorded["stack"].apply(*xs, axis=axis) if any(map(_is_tensor, xs)) else np.stack(xs, axis)


def concatenate(xs, axis: int):
    return _recorded["concatenate"].apply(*xs, axis=axis) if any(map(_is_tensor, xs)) else np.concatenate(xs, axis)


def unbind(x, axis: int):
    if _is_tensor(x):
        return _recorded["unbind"].apply(x, axis=axis)
    return tuple(np.moveaxis(x, axis, 0))


def split_at(x, indices, axis: int):
    """Split ``x`` along ``axis`` at the given cut points."""
    if _is_tensor(x):
        return _recorded["split_at"].apply(x, indices=tuple(indices), axis=axis)
    if type(x) is np.ndarray:   # slices, without np.split's Python wrapper
        lead = (slice(None),) * (axis % x.ndim)
        bounds = (0, *indices, x.shape[axis])
        return tuple(x[lead + (slice(a, b),)] for a, b in zip(bounds[:-1], bounds[1:]))
    return tuple(np.split(x, indices, axis))


def index_add(x, key, shape: tuple, accumulate: bool):
    """Zeros of ``shape`` with ``x`` added at ``key`` (the backward of indexing).

    ``accumulate`` sums repeated indices (advanced indexing); basic indexing
    cannot repeat, so a plain assignment is enough.
    """
    if _is_tensor(x):
        return _recorded["index_add"].apply(x, key=key, shape=shape, accumulate=accumulate)
    return index_add_array(x, key, shape, accumulate)


def zeros(shape, like):
    """Zeros of ``shape`` and ``like``'s dtype, a constant Tensor if ``like`` is one."""
    if _is_tensor(like):
        return _Tensor._make(np.zeros(shape, like.dtype))
    return np.zeros(shape, np.result_type(like))


def index_add_array(g, key, shape, accumulate):
    """Zeros of ``shape`` with ``g`` added at ``key`` (repeated indices summed if ``accumulate``)."""
    if accumulate and _is_row_gather(key, g, shape):
        return _scatter_rows(g, key, shape)
    out = np.zeros(shape, dtype=g.dtype if type(g) is np.ndarray else np.result_type(g))
    if accumulate:
        np.add.at(out, key, g)
    else:
        out[key] = g
    return out


def _is_row_gather(key, g, shape) -> bool:
    """``x[idx]`` with one 1-D integer array: the gather of rows an embedding or a
    bundle adjustment's camera lookup does."""
    return (type(key) is np.ndarray and key.ndim == 1 and key.dtype.kind in "iu"
            and g.dtype.kind == "f" and len(shape) >= 1 and g.shape[:1] == key.shape)


def _scatter_rows(g, key, shape):
    """Sum the rows of ``g`` into rows ``key`` of zeros(shape), several times faster
    than ``np.add.at`` on rows: one 1-D ``np.add.at`` per column when there are few
    columns (a camera's 7 parameters; NumPy's 1-D ``add.at`` has a fast loop, 15%
    quicker than ``bincount`` on a strided column), else one ``bincount`` over
    (row, column) pairs.  Either way each output sums its rows in index order."""
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


_FEW_COLUMNS = 8
