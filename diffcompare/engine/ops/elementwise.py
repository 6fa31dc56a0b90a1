"""Elementwise ops: forward and backward side by side.

Binary ops broadcast like NumPy; their gradients are summed back to each
input's shape by ``Function`` (``broadcasts = True``), not here.  Each op saves
only what the gradients that are actually needed use.

Subgradients at kinks (documented, tested): relu'(0) = 0, abs'(0) = 0,
maximum/minimum split a tie 1/2 - 1/2 between the two inputs.
"""
from __future__ import annotations

import numpy as np

from ..function import Function
from . import dual
from .broadcasting import binary


class Add(Function):
    broadcasts = True

    def forward(self, a, b):
        return binary(np.add, a.data, b.data)

    def backward(self, g):
        return g, g


class Sub(Function):
    broadcasts = True

    def forward(self, a, b):
        return binary(np.subtract, a.data, b.data)

    def backward(self, g):
        return g, (-g if self.needs_input_grad[1] else None)


class Mul(Function):
    broadcasts = True

    def forward(self, a, b):
        self.save_for_backward(self=a if self.needs(1) else None,
                               other=b if self.needs(0) else None)
        return binary(np.multiply, a.data, b.data)

    def backward(self, g):
        need_a, need_b = self.needs_input_grad
        return (g * self.saved_value("other") if need_a else None,
                g * self.saved_value("self") if need_b else None)


class Div(Function):
    broadcasts = True

    def forward(self, a, b):
        self.save_for_backward(self=a if self.needs(1) else None, other=b)
        return binary(np.true_divide, a.data, b.data)

    def backward(self, g):
        b = self.saved_value("other")
        need_a, need_b = self.needs_input_grad
        return (g / b if need_a else None,
                -g * self.saved_value("self") / (b * b) if need_b else None)


class Neg(Function):
    def forward(self, a):
        return -a.data

    def backward(self, g):
        return -g


class Pow(Function):
    """``a ** exponent`` for a number ``exponent`` (PyTorch's ``PowBackward0``).

    Saves what PyTorch saves: the base, and the exponent as a number (``node.exponent``,
    torch's ``_saved_exponent``).  d/da = exponent * a ** (exponent - 1), and 0 for
    exponent 0 (a**0 is constant, also at a = 0).
    """

    def forward(self, a, exponent):
        self.exponent = exponent
        self.save_for_backward(self=a)
        return a.data ** exponent

    def backward(self, g):
        e = self.exponent
        a = self.saved_value("self")
        if e == 2:   # the common square: no power at all.  (g * 2) * a equals g * (a * 2)
            return g * 2.0 * a   # exactly, and folds into one step when compile traces a constant g
        if e == 0:
            return dual.zeros(a.shape, g)
        return g * (a ** (e - 1) * e)


class PowTensor(Function):
    """``a ** b`` with a tensor exponent (PyTorch's ``PowBackward1``).  As in PyTorch and
    JAX, d/da is 0 where b == 0 (a**0 is constant, also at a = 0) and d/db is 0 where
    a == 0 and b >= 0 (instead of 0 * log 0)."""

    broadcasts = True
    saves_result = True

    def name(self) -> str:
        return "PowBackward1"

    def forward(self, a, b):
        self.save_for_backward(self=a, exponent=b)
        return a.data ** b.data

    def backward(self, g):
        a, b, result = self.saved_tensors
        a_data, b_data = (t.data if dual._is_tensor(t) else t for t in (a, b))
        need_a, need_b = self.needs_input_grad
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if need_a:
                ga = _zero_where_not(b_data != 0, g * b * a ** (b - 1))
            if need_b:
                gb = _zero_where_not((a_data != 0) | (b_data < 0), g * result * dual.log(a))
        return ga, gb


def _zero_where_not(keep, grad):
    """``grad`` with zeros where ``keep`` is False (no extra node when it holds everywhere)."""
    return grad if np.all(keep) else dual.where(keep, grad)


@dual.records("exp")
class Exp(Function):
    saves_result = True

    def forward(self, a):
        return np.exp(a.data)

    def backward(self, g):
        (y,) = self.saved_tensors
        return g * y


@dual.records("log")
class Log(Function):
    def forward(self, a):
        self.save_for_backward(self=a)
        return np.log(a.data)

    def backward(self, g):
        (a,) = self.saved_tensors
        return g / a


class Sqrt(Function):
    """d sqrt(x) = 1 / (2 sqrt x): inf at 0, as NumPy's division gives."""

    saves_result = True

    def forward(self, a):
        return np.sqrt(a.data)

    def backward(self, g):
        (y,) = self.saved_tensors
        with np.errstate(divide="ignore"):
            return g / (2 * y)


@dual.records("sin")
class Sin(Function):
    def forward(self, a):
        self.save_for_backward(self=a)
        return np.sin(a.data)

    def backward(self, g):
        (a,) = self.saved_tensors
        return g * dual.cos(a)


@dual.records("cos")
class Cos(Function):
    def forward(self, a):
        self.save_for_backward(self=a)
        return np.cos(a.data)

    def backward(self, g):
        (a,) = self.saved_tensors
        return -g * dual.sin(a)


class Tanh(Function):
    saves_result = True

    def forward(self, a):
        return np.tanh(a.data)

    def backward(self, g):
        (y,) = self.saved_tensors
        return g * (1 - y * y)


class Sigmoid(Function):
    saves_result = True

    def forward(self, a):
        x = a.data
        # exp of a non-positive number only, so large |x| neither overflows nor warns
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))

    def backward(self, g):
        (y,) = self.saved_tensors
        return g * y * (1 - y)


class Relu(Function):
    """relu'(0) = 0, as in PyTorch (the gradient flows only where x > 0).

    The backward multiplies by the mask, as a hand-written backward does (and
    5x faster than ``np.where`` on large arrays); so an infinite incoming
    gradient where x <= 0 gives NaN, as ``inf * 0`` does in NumPy.
    """

    saves_result = True

    def forward(self, a):
        return np.maximum(a.data, 0)

    def backward(self, g):
        y = self.saved_value("result")
        return g * ((y.data if dual._is_tensor(y) else y) > 0)


class Abs(Function):
    """abs'(0) = 0 (sign(0) = 0)."""

    def forward(self, a):
        self.save_for_backward(self=a)
        return np.abs(a.data)

    def backward(self, g):
        (a,) = self.saved_tensors
        return g * np.sign(a.data if dual._is_tensor(a) else a)


class Maximum(Function):
    """Elementwise maximum; where a == b each input gets half the gradient."""

    broadcasts = True

    def forward(self, a, b):
        self.save_for_backward(self=a, other=b)
        return np.maximum(a.data, b.data)

    def backward(self, g):
        a, b = (t.data if dual._is_tensor(t) else t for t in self.saved_tensors)
        share_a = (a > b) + 0.5 * (a == b)
        return _split_by_share(self, g, share_a)


class Minimum(Function):
    """Elementwise minimum; where a == b each input gets half the gradient."""

    broadcasts = True

    def forward(self, a, b):
        self.save_for_backward(self=a, other=b)
        return np.minimum(a.data, b.data)

    def backward(self, g):
        a, b = (t.data if dual._is_tensor(t) else t for t in self.saved_tensors)
        share_a = (a < b) + 0.5 * (a == b)
        return _split_by_share(self, g, share_a)


def _split_by_share(node, g, share_a):
    need_a, need_b = node.needs_input_grad
    share_a = share_a.astype(g.dtype, copy=False)
    return (g * share_a if need_a else None,
            g * (1 - share_a) if need_b else None)


@dual.records("where")
class Where(Function):
    """``where(condition, a, b)`` with a constant boolean condition."""

    broadcasts = True

    def forward(self, a, b, condition):
        self.condition = condition
        return np.where(condition, a.data, b.data)

    def backward(self, g):
        need_a, need_b = self.needs_input_grad
        c = self.condition
        return (dual.where(c, g) if need_a else None,
                dual.where(~c, g) if need_b else None)


class Clone(Function):
    def forward(self, a):
        return a.data.copy()

    def backward(self, g):
        return g


class AsType(Function):
    """Change float precision; the gradient is cast back to the input's dtype."""

    def forward(self, a, dtype):
        self.in_dtype = a.dtype
        return a.data.astype(dtype)

    def backward(self, g):
        if dual._is_tensor(g):
            return AsType.apply(g, dtype=self.in_dtype)
        return g.astype(self.in_dtype)
