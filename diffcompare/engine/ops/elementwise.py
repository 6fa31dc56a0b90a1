"""Elementwise ops: forward and backward side by side.

The unary ops whose rule is a formula of one saved tensor are rows of a table
(as HIPS autograd's ``numpy_vjps.py`` and PyTorch's ``derivatives.yaml``): the op's
forward on arrays, what it saves (the input, torch's ``self``, or the output,
torch's ``result``) and its backward, a formula of ``g`` and that tensor.  Each row
makes a ``Function`` class with the row's name (``Exp``, whose node is
``ExpBackward0``).  The formulas are written with operators and ``dual``'s
functions, so one formula serves an ordinary backward (arrays), a
``create_graph`` backward (Tensors, recorded again) and ``compile`` (Tracers).

Written as classes, where a row would read worse: the binary ops (they
broadcast, and save only what the gradients actually needed use: ``Mul`` keeps
``b`` only if ``a`` needs a gradient), ``Pow`` / ``PowTensor`` (an exponent
parameter; zero-exponent and zero-base cases), ``Maximum`` / ``Minimum`` (ties
split between two inputs), ``Where`` (a condition parameter) and ``AsType`` (a
dtype parameter).  ``Relu`` too, for speed: it is in every MLP's hot path, and
as a row its constant ``0`` and its mask would cost two more Python calls per
use (measured ~1% per op; the other rows are no slower than the classes they
replaced).  Binary ops' gradients are summed back to each input's shape by
``Function`` (``broadcasts = True``), not here.

Subgradients at kinks (documented, tested): relu'(0) = 0, abs'(0) = 0,
maximum/minimum split a tie 1/2 - 1/2 between the two inputs.
"""
from __future__ import annotations

import operator

import numpy as np

from ..function import Function
from ..tensor import Tensor
from . import dual
from .broadcasting import binary, leading_repeat_size


#: name -> the Function class each row of the table below made
RULES: dict = {}


def unary_rule(name: str, forward, saves, backward, doc: str | None = None) -> type:
    """A ``Function`` class ``name`` from one row of the table below.

    ``forward(x)`` maps the input's array to the output's; ``saves`` is ``"self"``
    (the input), ``"result"`` (the output) or None; ``backward(g, saved)`` (or
    ``backward(g)`` when nothing is saved) gives the input's gradient.  The methods
    close over the two formulas: a call costs what a hand-written class's does.
    """
    if saves == "self":
        def forward_method(self, a):
            self.save_for_backward(self=a)
            return forward(a.data)

        def backward_method(self, g):
            return backward(g, self.saved_value("self"))
    elif saves == "result":
        def forward_method(self, a):
            return forward(a.data)

        def backward_method(self, g):
            return backward(g, self.saved_value("result"))
    elif saves is None:
        def forward_method(self, a):
            return forward(a.data)

        def backward_method(self, g):
            return backward(g)
    else:
        raise ValueError(f"{name}: saves must be 'self', 'result' or None, not {saves!r}.")
    namespace = {"forward": forward_method, "backward": backward_method,
                 "saves_result": saves == "result", "__module__": __name__,
                 "__qualname__": name, "__doc__": doc or f"Elementwise {name.lower()}."}
    cls = RULES[name] = type(name, (Function,), namespace)
    return dual.records(name.lower())(cls)


def _sigmoid(x):
    # exp of a non-positive number only, so large |x| neither overflows nor warns
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _sqrt_backward(g, result):
    with np.errstate(divide="ignore"):
        return g / (2 * result)


_copy = operator.methodcaller("copy")


def _data(t):
    """The array of a saved tensor (a Tensor during a create_graph backward)."""
    return t.data if type(t) is Tensor else t


#                                forward       saves     backward: the input's gradient
Neg     = unary_rule("Neg",     operator.neg, None,     operator.neg)
Exp     = unary_rule("Exp",     np.exp,       "result", lambda g, result: g * result)
Log     = unary_rule("Log",     np.log,       "self",   lambda g, self: g / self)
Sqrt    = unary_rule("Sqrt",    np.sqrt,      "result", _sqrt_backward,
                     "d sqrt(x) = 1 / (2 sqrt x): inf at 0, as NumPy's division gives.")
Sin     = unary_rule("Sin",     np.sin,       "self",   lambda g, self: g * dual.cos(self))
Cos     = unary_rule("Cos",     np.cos,       "self",   lambda g, self: -g * dual.sin(self))
Tanh    = unary_rule("Tanh",    np.tanh,      "result", lambda g, result: g * (1 - result * result))
Sigmoid = unary_rule("Sigmoid", _sigmoid,     "result", lambda g, result: g * result * (1 - result))
Abs     = unary_rule("Abs",     np.abs,       "self",   lambda g, self: g * np.sign(_data(self)),
                     "abs'(0) = 0 (sign(0) = 0).")
Clone   = unary_rule("Clone",   _copy,        None,     lambda g: g,
                     "A copy with its own memory and version; the gradient passes through.")


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


class Add(Function):
    broadcasts = True
    commutes = True   # `3 + a` is recorded as a.add(3), as PyTorch does

    def forward(self, a, b):
        return binary(np.add, a.data, b.data)

    def backward(self, g):
        return g, g


class Sub(Function):
    broadcasts = True

    def forward(self, a, b):
        return binary(np.subtract, a.data, b.data)

    def backward(self, g):
        if not self.needs_input_grad[1]:
            return g, None
        shapes = self._input_shapes
        if shapes is not None and shapes[1] != g.shape:
            # b was broadcast: sum back to its shape first, then negate the fewer elements
            # (-sum(g) is sum(-g) exactly: rounding is symmetric in sign)
            return g, -dual.sum_to(g, shapes[1])
        return g, -g


class Mul(Function):
    broadcasts = True
    commutes = True

    def forward(self, a, b):
        self.save_for_backward(self=a if self.needs(1) else None,
                               other=b if self.needs(0) else None)
        return binary(np.multiply, a.data, b.data)

    def backward(self, g):
        need_a, need_b = self.needs_input_grad
        shapes = self._input_shapes
        if shapes is None:
            return (g * self.saved_value("other") if need_a else None,
                    g * self.saved_value("self") if need_b else None)
        return (_times_summed(g, self.saved_value("other"), shapes[0]) if need_a else None,
                _times_summed(g, self.saved_value("self"), shapes[1]) if need_b else None)


def _times_summed(g, x, shape):
    """``g * x``, the gradient of an operand of ``shape``; summed back to ``shape`` in one
    ``np.einsum`` (no ``g * x`` temporary, 37 us instead of 66 for (1000, 10, 10) ->
    (10, 10)) when the operand was broadcast over leading axes of large arrays ``g`` and
    ``x`` of one shape.  Otherwise the product as it is: autograd sums it back."""
    if (type(g) is np.ndarray and type(x) is np.ndarray and g.shape == x.shape
            and g.size >= _LARGE_GRAD and g.dtype == x.dtype and g.dtype.kind == "f"
            and g.flags.c_contiguous and x.flags.c_contiguous):
        kept = leading_repeat_size(shape, g.shape)
        if kept:
            rows = (g.size // kept, kept)
            return np.einsum("ij,ij->j", g.reshape(rows), x.reshape(rows)).reshape(shape)
    return g * x


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
            if type(g) is np.ndarray and g.size >= _LARGE_GRAD and _broadcast_last(g, a):
                # g spread along the last axis (sum(d ** 2, axis=-1)'s backward): NumPy's loop
                # over a zero stride is slow, so double g's own elements, repeat them into a
                # fresh array and multiply by a in place (the same (g * 2) * a; 88 -> 57 us
                # for (1000, 10, 10))
                out = np.repeat(g[..., :1] * 2.0, g.shape[-1], axis=-1)
                return np.multiply(out, a, out=out)
            return g * 2.0 * a   # exactly, and folds into one step when compile traces a constant g
        if e == 0:
            return dual.zeros(a.shape, g)
        return g * (a ** (e - 1) * e)


def _broadcast_last(g, a) -> bool:
    """g (an array) repeats each element along its last axis only (stride 0 there, not on
    the others: a scalar spread everywhere is NumPy's fast scalar loop), with a's shape
    and dtype."""
    return (g.ndim > 1 and g.strides[-1] == 0 and g.shape[-1] > 1
            and 0 not in g.strides[:-1] and type(a) is np.ndarray and a.shape == g.shape
            and a.dtype == g.dtype)


_LARGE_GRAD = 4096


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


class AsType(Function):
    """Change float precision; the gradient is cast back to the input's dtype."""

    def forward(self, a, dtype):
        self.in_dtype = a.dtype
        return a.data.astype(dtype)

    def backward(self, g):
        if dual._is_tensor(g):
            return AsType.apply(g, dtype=self.in_dtype)
        return g.astype(self.in_dtype)
