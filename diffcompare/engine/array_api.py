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
from .ops import registry as _registry
from .tensor import data_types as _data_types
from .tensor import Tensor

_IMPORTED = set(globals())

# The op functions under their NumPy names (``subtract`` is ``ops.sub``): the ``xp``
# column of the ops' table (``grep 'xp=' ops/__init__.py``); ``__all__`` lists them all.
globals().update(_registry.namespace())

float32 = np.float32
float64 = np.float64
bool = np.bool_
pi, e, inf, nan = np.pi, np.e, np.inf, np.nan
newaxis = None


def asarray(x, dtype=None) -> Tensor:
    """``x`` if it is already a Tensor (graph kept); a (nested) list of Tensors and numbers
    stacked, differentiable (``array``); else a constant Tensor."""
    if isinstance(x, Tensor):
        return x if dtype is None else ops.astype(x, dtype)
    if isinstance(x, (list, tuple)) and ops.array_has_tensor(x):
        return ops.array(x, dtype)
    return Tensor(x, dtype=dtype)




def zeros(shape, dtype=np.float64):
    return Tensor(np.zeros(shape, dtype))


def ones(shape, dtype=np.float64):
    return Tensor(np.ones(shape, dtype))


def full(shape, fill_value, dtype=None):
    """An array of ``shape`` filled with ``fill_value``; a Tensor fill value is broadcast
    (differentiable: its gradient is the sum over the filled array, as HIPS autograd's)."""
    if isinstance(fill_value, Tensor):
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        value = fill_value if dtype is None else ops.astype(fill_value, dtype)
        return ops.broadcast_to(value, shape)
    return Tensor(np.full(shape, fill_value, np.float64 if dtype is None else dtype))


def zeros_like(x):
    """Zeros shaped like ``x`` (a constant: no gradient flows through it)."""
    return _constant(np.zeros_like(_data(x)))


def ones_like(x):
    """Ones shaped like ``x`` (a constant: no gradient flows through it)."""
    return _constant(np.ones_like(_data(x)))


def arange(*args, dtype=None):
    return Tensor(np.arange(*args, dtype=dtype))


def eye(n, m=None, dtype=np.float64):
    return Tensor(np.eye(n, m, dtype=dtype))


def clip(x, a_min=None, a_max=None):
    if a_min is not None:
        x = ops.maximum(x, a_min)
    if a_max is not None:
        x = ops.minimum(x, a_max)
    return x


class _Linalg:
    """The ``linalg`` sub-namespace (``xp.linalg.det(x)``): ``ops.linalg``'s functions under
    NumPy's names (``LINALG_NAMES``), each recorded for backward."""

    def __init__(self):
        from .ops import linalg as _l
        for name in _l.LINALG_NAMES:
            setattr(self, name, getattr(_l, name))
        self.__all__ = list(_l.LINALG_NAMES)

    def __repr__(self):
        return "<the engine's linalg namespace: " + ", ".join(self.__all__) + ">"


linalg = _Linalg()


def _data(x):
    return x.data if isinstance(x, Tensor) else np.asarray(x)


def _constant(value) -> Tensor:
    """A constant Tensor of ``value``, NumPy's result on ``_data(x)``.  Under
    ``engine.compile`` that result is a traced value (the tracer recorded the NumPy call):
    it is kept as the Tensor's data as the ops keep theirs, not turned into a Python
    constant by ``np.asarray``."""
    if type(value) in _data_types:
        return Tensor._make(value)
    return Tensor(value)


#: The namespace's names: the ops' (from the table) and the functions and constants above.
__all__ = sorted(name for name in globals() if name not in _IMPORTED and not name.startswith("_"))
__doc__ += f"\nIts names: {', '.join(__all__)}.\n"
