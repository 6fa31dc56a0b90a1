"""Functions for writing backward formulas once, for arrays and for Tensors.

An ordinary backward passes NumPy arrays through the formulas (fast, nothing
recorded).  ``backward(create_graph=True)`` passes Tensors instead, so the same
formula builds a graph that can be differentiated again.  Operators (``+ - * /
@``, ``.reshape``, ``.swapaxes``, ``.sum``, indexing) already work on both; the
functions here cover the rest, dispatching on whether ``x`` is a Tensor.
"""
from __future__ import annotations

import numpy as np

from . import elementwise as _ew
from . import shape as _shape


def _is_tensor(x) -> bool:
    return type(x) is _Tensor


def sum_to_array(x: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``x`` over the axes NumPy broadcasting added to get from ``shape`` to ``x.shape``."""
    x = np.asarray(x)
    if x.shape == shape:
        return x
    lead = x.ndim - len(shape)
    if lead == 1 and x.shape[1:] == shape:   # the common case: a bias broadcast over a batch
        return np.add.reduce(x, axis=0)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1
    )
    out = x.sum(axis=axes, keepdims=True)
    return out.reshape(shape) if lead else out


def sum_to(x, shape: tuple):
    """Reduce a broadcast gradient back to an input's ``shape`` (the bias ``sum(0)``)."""
    if _is_tensor(x):
        return x if x.shape == shape else _shape.SumTo.apply(x, shape=shape)
    return sum_to_array(x, shape)


def broadcast_to(x, shape: tuple):
    if _is_tensor(x):
        return x if x.shape == shape else _shape.BroadcastTo.apply(x, shape=shape)
    return broadcast_to_array(x, shape)


def broadcast_to_array(x: np.ndarray, shape: tuple) -> np.ndarray:
    """``np.broadcast_to``; a one-element ``x`` (a full reduction's gradient) is
    spread by zero strides directly, 6x faster than NumPy's Python-level wrapper."""
    if x.size == 1 and type(x) is np.ndarray and x.ndim <= len(shape):
        out = np.ndarray(shape, x.dtype, x, 0, (0,) * len(shape))
        out.flags.writeable = False   # as np.broadcast_to: one memory location, many elements
        return out
    return np.broadcast_to(x, shape)


def exp(x):
    return _ew.Exp.apply(x) if _is_tensor(x) else np.exp(x)


def log(x):
    return _ew.Log.apply(x) if _is_tensor(x) else np.log(x)


def sin(x):
    return _ew.Sin.apply(x) if _is_tensor(x) else np.sin(x)


def cos(x):
    return _ew.Cos.apply(x) if _is_tensor(x) else np.cos(x)


def where(mask: np.ndarray, x, y=0.0):
    """``x`` where the constant boolean ``mask`` holds, else ``y`` (a number)."""
    if _is_tensor(x):
        zero = _Tensor._make(np.asarray(y, dtype=x.dtype))
        return _ew.Where.apply(x, zero, condition=mask)
    return np.where(mask, x, y)


def permute(x, axes):
    return _shape.Permute.apply(x, axes=axes) if _is_tensor(x) else np.transpose(x, axes)


def stack(xs, axis: int):
    return _shape.Stack.apply(*xs, axis=axis) if any(map(_is_tensor, xs)) else np.stack(xs, axis)


def concatenate(xs, axis: int):
    return _shape.Cat.apply(*xs, axis=axis) if any(map(_is_tensor, xs)) else np.concatenate(xs, axis)


def unbind(x, axis: int):
    if _is_tensor(x):
        return _shape.Unbind.apply(x, axis=axis)
    return tuple(np.moveaxis(x, axis, 0))


def split_at(x, indices, axis: int):
    """Split ``x`` along ``axis`` at the given cut points."""
    if _is_tensor(x):
        return _shape.Split.apply(x, indices=tuple(indices), axis=axis)
    return tuple(np.split(x, indices, axis))


def index_add(x, key, shape: tuple, accumulate: bool):
    """Zeros of ``shape`` with ``x`` added at ``key`` (the backward of indexing).

    ``accumulate`` sums repeated indices (advanced indexing); basic indexing
    cannot repeat, so a plain assignment is enough.
    """
    if _is_tensor(x):
        return _shape.IndexAdd.apply(x, key=key, shape=shape, accumulate=accumulate)
    return _shape.index_add_array(x, key, shape, accumulate)


def zeros(shape, like):
    """Zeros of ``shape`` and ``like``'s dtype, a constant Tensor if ``like`` is one."""
    if _is_tensor(like):
        return _Tensor._make(np.zeros(shape, like.dtype))
    return np.zeros(shape, np.result_type(like))


from ..tensor import Tensor as _Tensor  # noqa: E402
