"""PyTorch as an array namespace with NumPy's names, for ``problem.fn(xp, *args)``.

It offers the names of the engine's namespace (``diffcompare.engine.array_api``),
which is what a problem may use: ``xp.sum(x, axis=0, keepdims=True)`` becomes
``torch.sum(x, dim=0, keepdim=True)``, ``xp.max`` is ``torch.amax`` (ties share the
gradient evenly, as in the engine), ``xp.transpose(x)`` reverses the axes as NumPy
does, and anything that makes new numbers (``asarray``, ``zeros``, ``arange``,
``full``, ...) makes float64 where NumPy would, not torch's float32 default.
Operators (``+``, ``*``, ``**``, ``@``) and basic indexing act on the tensors
directly.  NumPy semantics torch does not share stay torch's: negative slice
steps (``x[::-1]``) fail, and tensor *methods* keep torch's meaning (``x.size``
is a method, ``x.max(0)`` returns values and indices): write ``xp.max(x, axis=0)``.

Get it with ``namespace()``; the module imports without torch.

>>> import numpy as np
>>> from diffcompare.backends import torch_namespace
>>> try:
...     xp = torch_namespace.namespace()
... except ImportError:
...     xp = None
>>> xp is None or float(xp.sum(xp.asarray(np.array([[1.0, 2.0], [3.0, 4.0]])), axis=0)[1]) == 6.0
True
"""
from __future__ import annotations

import builtins
import math
import sys

import numpy as np

try:
    import torch
except ImportError:        # the backend reports "torch is not installed"
    torch = None

pi, e, inf, nan = math.pi, math.e, math.inf, math.nan
newaxis = None


def namespace():
    """This module, with torch imported (``ImportError`` if torch is missing)."""
    global torch
    if torch is None:
        import torch as _torch
        torch = _torch
    return sys.modules[__name__]


def __getattr__(name):
    # dtypes resolve lazily, so the module imports without torch
    if name in ("float64", "float32", "bool"):
        return getattr(namespace().torch, name)
    raise AttributeError(f"the torch namespace has no {name!r}; it offers the names of "
                         "diffcompare.engine.array_api")


# --- conversions -----------------------------------------------------------------------

def _dtype(dtype):
    """A torch dtype for a torch, NumPy or Python dtype (None stays None)."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if dtype is builtins.bool:
        return torch.bool
    return torch.from_numpy(np.empty(0, dtype=np.dtype(dtype))).dtype


def asarray(x, dtype=None):
    """``x`` if it is a tensor (graph kept), else a tensor with NumPy's dtype rules."""
    if isinstance(x, torch.Tensor):
        return x if dtype is None else x.to(_dtype(dtype))
    if isinstance(x, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in x):
        out = stack(x)
    else:
        a = np.asarray(x)
        out = torch.from_numpy(a if a.flags.writeable else a.copy())
    return out if dtype is None else out.to(_dtype(dtype))


def _t(x, like=None):
    """A tensor; plain numbers take ``like``'s dtype (as the engine's constants do)."""
    if isinstance(x, torch.Tensor):
        return x
    if like is not None and isinstance(x, (int, float, np.number)):
        return torch.tensor(x, dtype=like.dtype, device=like.device)
    return asarray(x)


def _pair(a, b):
    """Both as tensors (for torch functions that take no plain numbers)."""
    if isinstance(a, torch.Tensor):
        return a, _t(b, a)
    if isinstance(b, torch.Tensor):
        return _t(a, b), b
    a = asarray(a)
    return a, _t(b, a)


def _operands(a, b):
    """For operators: arrays become tensors, plain numbers stay numbers (as in ``x * 2``)."""
    if not isinstance(a, (torch.Tensor, int, float)):
        a = asarray(a)
    if not isinstance(b, (torch.Tensor, int, float)):
        b = asarray(b)
    if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
        a = asarray(a)
    return a, b


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def _all_axes(x, axis):
    return tuple(range(x.ndim)) if axis is None else _axis(axis)


# --- elementwise -------------------------------------------------------------------------

def exp(x):
    return torch.exp(_t(x))


def log(x):
    return torch.log(_t(x))


def sqrt(x):
    return torch.sqrt(_t(x))


def sin(x):
    return torch.sin(_t(x))


def cos(x):
    return torch.cos(_t(x))


def tanh(x):
    return torch.tanh(_t(x))


def abs(x):
    return torch.abs(_t(x))


def sign(x):
    """Not differentiated (its derivative is 0 almost everywhere)."""
    return torch.sign(_t(x)).detach()


def square(x):
    return torch.square(_t(x))


def negative(x):
    return torch.neg(_t(x))


def add(a, b):
    a, b = _operands(a, b)
    return a + b


def subtract(a, b):
    a, b = _operands(a, b)
    return a - b


def multiply(a, b):
    a, b = _operands(a, b)
    return a * b


def divide(a, b):
    a, b = _operands(a, b)
    return a / b


def power(a, b):
    a, b = _operands(a, b)
    return a ** b


def maximum(a, b):
    """Elementwise maximum; at ties each side gets half the gradient (torch and the engine agree)."""
    return torch.maximum(*_pair(a, b))


def minimum(a, b):
    return torch.minimum(*_pair(a, b))


def clip(x, a_min=None, a_max=None):
    """As the engine's ``clip``: ``minimum(maximum(x, a_min), a_max)`` (so ties split the gradient)."""
    x = _t(x)
    if a_min is not None:
        x = maximum(x, a_min)
    if a_max is not None:
        x = minimum(x, a_max)
    return x


def where(condition, a, b):
    cond = condition if isinstance(condition, torch.Tensor) else asarray(condition)
    a, b = _pair(a, b)
    return torch.where(cond.to(torch.bool), a, b)


def astype(x, dtype):
    return _t(x).to(_dtype(dtype))


# --- reductions --------------------------------------------------------------------------

def sum(x, axis=None, keepdims=False):
    return torch.sum(_t(x), dim=_axis(axis), keepdim=keepdims)


def mean(x, axis=None, keepdims=False):
    return torch.mean(_t(x), dim=_axis(axis), keepdim=keepdims)


def max(x, axis=None, keepdims=False):
    """``torch.amax``: ties share the gradient evenly."""
    x = _t(x)
    return torch.amax(x, dim=_all_axes(x, axis), keepdim=keepdims)


def min(x, axis=None, keepdims=False):
    x = _t(x)
    return torch.amin(x, dim=_all_axes(x, axis), keepdim=keepdims)


amax, amin = max, min


def logsumexp(x, axis=None, keepdims=False):
    x = _t(x)
    return torch.logsumexp(x, dim=_all_axes(x, axis), keepdim=keepdims)


# --- linear algebra ----------------------------------------------------------------------

def matmul(a, b):
    return torch.matmul(*_pair(a, b))


def dot(a, b):
    """NumPy's ``dot`` for vectors and matrices (``matmul`` for ndim <= 2), as in the engine."""
    return matmul(a, b)


# --- shapes ------------------------------------------------------------------------------

def reshape(x, shape):
    return torch.reshape(_t(x), (shape,) if isinstance(shape, int) else tuple(shape))


def transpose(x, axes=None):
    """NumPy's ``transpose``: reverse the axes, or permute them by ``axes``."""
    x = _t(x)
    return x.permute(*(reversed(range(x.ndim)) if axes is None else axes))


permute = permute_dims = transpose


def swapaxes(x, axis1, axis2):
    return torch.swapaxes(_t(x), axis1, axis2)


def expand_dims(x, axis):
    x = _t(x)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = x.ndim + len(axes)
    for a in sorted(a % ndim for a in axes):
        x = torch.unsqueeze(x, a)
    return x


def squeeze(x, axis=None):
    x = _t(x)
    return torch.squeeze(x) if axis is None else torch.squeeze(x, _axis(axis))


def broadcast_to(x, shape):
    return torch.broadcast_to(_t(x), (shape,) if isinstance(shape, int) else tuple(shape))


def stack(arrays, axis=0):
    return torch.stack([_t(a) for a in arrays], dim=axis)


def concatenate(arrays, axis=0):
    arrays = [_t(a) for a in arrays]
    if axis is None:
        arrays = [a.reshape(-1) for a in arrays]
        axis = 0
    return torch.cat(arrays, dim=axis)


concat = concatenate


# --- new arrays (float64 by default, as NumPy) ------------------------------------------

def zeros(shape, dtype=np.float64):
    return torch.zeros(shape, dtype=_dtype(dtype))


def ones(shape, dtype=np.float64):
    return torch.ones(shape, dtype=_dtype(dtype))


def full(shape, fill_value, dtype=np.float64):
    return torch.full((shape,) if isinstance(shape, int) else tuple(shape), fill_value,
                      dtype=_dtype(dtype))


def zeros_like(x):
    return torch.zeros_like(_t(x))


def ones_like(x):
    return torch.ones_like(_t(x))


def arange(*args, dtype=None):
    return asarray(np.arange(*args), dtype=dtype)


def eye(n, m=None, dtype=np.float64):
    return asarray(np.eye(n, m), dtype=dtype)
