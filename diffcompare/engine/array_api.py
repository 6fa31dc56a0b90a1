"""The engine as an array namespace: ``xp = x.__array_namespace__()``.

A problem written once as ``fn(xp, *args)`` with NumPy's function names runs on
NumPy, ``jax.numpy`` and this module alike; here every call is recorded for
backward.

>>> import numpy as np
>>> from diffcompare.engine import Tensor
>>> def rosenbrock(xp, x):
...     return xp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
>>> float(rosenbrock(np, np.array([1.0, 2.0])))
100.0
>>> x = Tensor([1.0, 2.0], requires_grad=True)
>>> y = rosenbrock(x.__array_namespace__(), x)
>>> y.backward(); x.grad
tensor([-400.,  200.])
"""
from __future__ import annotations

import numpy as np

from . import ops
# re-exported: these are the namespace's functions (the xp contract other namespaces offer)
from .ops import (abs, add, astype, broadcast_to, concatenate, cos, exp, expand_dims, log,  # noqa: F401
                  logsumexp, matmul, max, maximum, mean, min, minimum, permute, reshape,
                  sin, sqrt, squeeze, stack, sum, swapaxes, tanh, where)
from .tensor import Tensor

float32 = np.float32
float64 = np.float64
bool = np.bool_
pi, e, inf, nan = np.pi, np.e, np.inf, np.nan
newaxis = None

subtract, multiply, divide, negative, power = ops.sub, ops.mul, ops.div, ops.neg, ops.pow
concat = concatenate
permute_dims = permute
transpose = ops.transpose
amax, amin = max, min


def asarray(x, dtype=None) -> Tensor:
    """``x`` if it is already a Tensor (graph kept), else a constant Tensor."""
    if isinstance(x, Tensor):
        return x if dtype is None else astype(x, dtype)
    return Tensor(x, dtype=dtype)


def square(x):
    return ops.mul(x, x)


def dot(a, b):
    """NumPy's ``dot`` for vectors and matrices (``matmul`` for ndim <= 2)."""
    return matmul(a, b)


def sign(x):
    """Not differentiated (its derivative is 0 almost everywhere)."""
    return Tensor(np.sign(_data(x)))


def zeros(shape, dtype=np.float64):
    return Tensor(np.zeros(shape, dtype))


def ones(shape, dtype=np.float64):
    return Tensor(np.ones(shape, dtype))


def full(shape, fill_value, dtype=np.float64):
    return Tensor(np.full(shape, fill_value, dtype))


def zeros_like(x):
    return Tensor(np.zeros_like(_data(x)))


def ones_like(x):
    return Tensor(np.ones_like(_data(x)))


def arange(*args, dtype=None):
    return Tensor(np.arange(*args, dtype=dtype))


def eye(n, m=None, dtype=np.float64):
    return Tensor(np.eye(n, m, dtype=dtype))


def clip(x, a_min=None, a_max=None):
    if a_min is not None:
        x = maximum(x, a_min)
    if a_max is not None:
        x = minimum(x, a_max)
    return x


def _data(x):
    return x.data if isinstance(x, Tensor) else np.asarray(x)
