"""``torch.nn.functional`` on the engine: the losses and activations the seed threads use.

>>> import diffcompare.engine.torch as torch
>>> F = torch.nn.functional
>>> F.mse_loss(torch.tensor([1., 2.]), torch.tensor([0., 0.]))
tensor(2.5000)
"""
from __future__ import annotations

from ... import ops as _ops

__all__ = ["mse_loss", "relu", "softmax", "log_softmax", "nll_loss", "cross_entropy", "sigmoid",
           "tanh"]

_REDUCTIONS = ("mean", "sum", "none")


def _reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction; use 'mean', 'sum' or "
                         "'none'.")
    return reduction


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Mean (or sum, or elementwise) squared error; ``input`` and ``target`` same shape."""
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"mse_loss: input shape {tuple(input.shape)} and target shape "
                         f"{tuple(target.shape)} differ; PyTorch would broadcast them with a "
                         "warning, which is almost always a bug. Reshape one of them "
                         "(e.g. target.view(-1, 1)).")
    return _ops.mse_loss(input, target, _reduction(reduction))


def relu(input, inplace=False):
    return input.relu()


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def softmax(input, dim):
    return _ops.softmax(input, axis=dim)


def log_softmax(input, dim):
    return _ops.log_softmax(input, axis=dim)


def nll_loss(input, target, reduction="mean"):
    return _ops.nll_loss(input, target, _reduction(reduction))


def cross_entropy(input, target, reduction="mean"):
    return _ops.cross_entropy(input, target, _reduction(reduction))
