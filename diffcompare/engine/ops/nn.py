"""Neural-network ops: softmax, log-softmax, and the MSE and cross-entropy losses.

``reduction`` is ``'mean'`` (PyTorch's default: the loss of a minibatch is the
average of the per-sample losses, seed 000), ``'sum'`` or ``'none'``.
"""
from __future__ import annotations

import numpy as np

from .. import kernels
from ..function import Function
from . import dual
from .reduction import normalize_axes

REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction):
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}.")


def _reduce(values, reduction):
    if reduction == "mean":
        return np.add.reduce(values, axis=None) / max(values.size, 1)
    if reduction == "sum":
        return np.add.reduce(values, axis=None)
    return values


def _reduce_squares(d, reduction):
    """sum or mean of d² (vdot: one pass, no d² temporary), or d² itself for 'none'."""
    if reduction == "none":
        return d * d
    total = np.vdot(d, d)
    return total / max(d.size, 1) if reduction == "mean" else total


class Softmax(Function):
    saves_result = True

    def forward(self, a, axis=-1):
        self.axes = normalize_axes(axis, a.data.ndim)
        if a.data.size == 0:   # an empty result, not NumPy's "zero-size reduction" error
            return a.data.copy()
        e = np.exp(a.data - a.data.max(axis=axis, keepdims=True))
        return e / kernels.add_reduce(e, self.axes, True)

    def backward(self, g):
        (y,) = self.saved_tensors
        return y * (g - dual.sum(g * y, self.axes, True))


class LogSoftmax(Function):
    saves_result = True

    def forward(self, a, axis=-1):
        self.axes = normalize_axes(axis, a.data.ndim)
        if a.data.size == 0:   # an empty result, not NumPy's "zero-size reduction" error
            return a.data.copy()
        shifted = a.data - a.data.max(axis=axis, keepdims=True)
        return shifted - np.log(kernels.add_reduce(np.exp(shifted), self.axes, True))

    def backward(self, g):
        (y,) = self.saved_tensors
        return g - dual.exp(y) * dual.sum(g, self.axes, True)


class MseLoss(Function):
    """Mean squared error; d/d input = 2 (input - target) / n for ``'mean'``."""

    broadcasts = True

    def forward(self, a, b, reduction="mean"):
        _check_reduction(reduction)
        self.reduction = reduction
        self.save_for_backward(self=a, target=b)
        d = a.data - b.data
        self.count = d.size
        return _reduce_squares(d, reduction)

    def backward(self, g):
        scale = 2.0 / self.count if self.reduction == "mean" else 2.0
        ga = (self.saved_value("self") - self.saved_value("target")) * (g * scale)
        need_a, need_b = self.needs_input_grad
        return (ga if need_a else None, -ga if need_b else None)


class NllLoss(Function):
    """Negative log-likelihood of integer class ``target`` under log-probabilities (N, C) or (C,)."""

    def forward(self, logp, target, reduction="mean"):
        _check_reduction(reduction)
        target = np.asarray(target)
        if target.dtype.kind not in "iu":
            raise TypeError(f"nll_loss needs integer class indices, got dtype {target.dtype}.")
        n_classes = logp.shape[-1]
        if target.size and (target.min() < 0 or target.max() >= n_classes):
            raise IndexError(
                f"target class out of range: classes must be in [0, {n_classes - 1}], "
                f"got min {target.min()} and max {target.max()}."
            )
        self.reduction = reduction
        self.in_shape = logp.shape
        self.key = (np.arange(logp.shape[0]), target) if logp.ndim == 2 else (target,)
        picked = logp.data[self.key]
        self.picked_shape = picked.shape
        return _reduce(-picked, reduction)

    def backward(self, g):
        if self.reduction == "mean":
            g = g / max(int(np.prod(self.picked_shape)), 1)
        if self.reduction != "none":
            g = dual.broadcast_to(g, self.picked_shape)
        # (row, target) pairs are unique for (N, C) input; a 1-D input may repeat a class
        return dual.index_add(-g, self.key, self.in_shape, accumulate=len(self.in_shape) != 2)
