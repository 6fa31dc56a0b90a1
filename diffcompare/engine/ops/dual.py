"""Functions for writing backward formulas once, for arrays and for Tensors.

An ordinary backward passes NumPy arrays through the formulas (fast, nothing
recorded).  ``backward(create_graph=True)`` passes Tensors instead, so the same
formula builds a graph that can be differentiated again.  Operators (``+ - * /
@``, ``.reshape``, ``.swapaxes``, ``.sum``, indexing) already work on both; the
functions here cover the rest, dispatching on whether ``x`` is a Tensor.
"""
from __future__ import annotations

import numpy as np

from .. import kernels
from ..tensor import Tensor as _Tensor

#: The Function each helper applies to Tensors, registered by the module defining it
#: (``@dual.records("exp")``), so that this module imports no op module.
_recorded = {}


def records(name: str):
    """Class decorator: the helper ``name`` of this module applies this Function to Tensors."""
    def register(cls):
        _recorded[name] = cls
        return cls
    return register


def is_tensor(x) -> bool:
    """Whether a formula runs on Tensors (a ``create_graph`` backward), not on arrays."""
    return type(x) is _Tensor


def sum_to(x, shape: tuple):
    """Reduce a broadcast gradient back to an input's ``shape`` (the bias ``sum(0)``)."""
    if is_tensor(x):
        return x if x.shape == shape else _recorded["sum_to"].apply(x, shape=shape)
    if not hasattr(x, "shape"):
        x = np.asarray(x)       # (a Python number)
    return kernels.sum_to(x, shape)


def broadcast_to(x, shape: tuple):
    if is_tensor(x):
        return x if x.shape == shape else _recorded["broadcast_to"].apply(x, shape=shape)
    return kernels.broadcast_to(x, shape)


def exp(x):
    return _recorded["exp"].apply(x) if is_tensor(x) else np.exp(x)


def log(x):
    return _recorded["log"].apply(x) if is_tensor(x) else np.log(x)


def sin(x):
    return _recorded["sin"].apply(x) if is_tensor(x) else np.sin(x)


def cos(x):
    return _recorded["cos"].apply(x) if is_tensor(x) else np.cos(x)


def _helper(name: str, array_fn):
    """The helper ``name``: the op's Function on a Tensor, ``array_fn`` on anything else."""
    def helper(x):
        return _recorded[name].apply(x) if is_tensor(x) else array_fn(x)

    helper.__name__ = helper.__qualname__ = name
    return helper


sqrt = _helper("sqrt", np.sqrt)
sinh = _helper("sinh", np.sinh)
cosh = _helper("cosh", np.cosh)
exp2 = _helper("exp2", np.exp2)


def where(mask: np.ndarray, x, y=0.0):
    """``x`` where the constant boolean ``mask`` holds, else ``y`` (a number)."""
    if is_tensor(x):
        zero = _Tensor._make(np.asarray(y, dtype=x.dtype))
        return _recorded["where"].apply(x, zero, condition=mask)
    return np.where(mask, x, y)


def permute(x, axes):
    return _recorded["permute"].apply(x, axes=axes) if is_tensor(x) else np.transpose(x, axes)


def stack(xs, axis: int):
    return _recorded["stack"].apply(*xs, axis=axis) if any(map(is_tensor, xs)) else np.stack(xs, axis)


def concatenate(xs, axis: int):
    return _recorded["concatenate"].apply(*xs, axis=axis) if any(map(is_tensor, xs)) else np.concatenate(xs, axis)


def unbind(x, axis: int):
    if is_tensor(x):
        return _recorded["unbind"].apply(x, axis=axis)
    return tuple(np.moveaxis(x, axis, 0))


def split_at(x, indices, axis: int):
    """Split ``x`` along ``axis`` at the given cut points."""
    if is_tensor(x):
        return _recorded["split_at"].apply(x, indices=tuple(indices), axis=axis)
    return kernels.split(x, indices, axis)


def index_add(x, key, shape: tuple, accumulate: bool):
    """Zeros of ``shape`` with ``x`` added at ``key`` (the backward of indexing).

    ``accumulate`` sums repeated indices (advanced indexing); basic indexing
    cannot repeat, so a plain assignment is enough.
    """
    if is_tensor(x):
        return _recorded["index_add"].apply(x, key=key, shape=shape, accumulate=accumulate)
    return kernels.index_add(x, key, tuple(shape), accumulate)


def zeros(shape, like):
    """Zeros of ``shape`` and ``like``'s dtype, a constant Tensor if ``like`` is one."""
    if is_tensor(like):
        return _Tensor._make(np.zeros(shape, like.dtype))
    return np.zeros(shape, np.result_type(like))
