"""The Tensor's operator and method surface, made from the ops' tables.

``tensor.py`` holds what a tensor *is* (data, gradient, version, its place in the
graph) and imports no op; the ops never import this module.  Here, above both,
each operator and method is generated from one table entry and set on ``Tensor``
(as tinygrad's op mixins and HIPS autograd's ``ArrayBox`` get theirs), so an op
name is written in few places: its ``Function`` in ``ops``, its function in
``ops.__all__`` (which makes the package's names), its method here, and - if it is
part of the ``xp`` contract every namespace offers - ``array_api``'s import list.

>>> from diffcompare.engine import Tensor
>>> a = Tensor([1.0, 2.0], requires_grad=True)
>>> (3 * a).grad_fn.name(), (a ** 2).grad_fn.name(), a.exp().grad_fn.name()
('MulBackward0', 'PowBackward0', 'ExpBackward0')
"""
from __future__ import annotations

import numpy as np

from . import array_api, autograd, ops
from .ops import elementwise as _ew
from .ops.linalg import Matmul
from .tensor import _NUMBERS, Tensor, _const, _data

# --- binary operators: name -> (Function, commutes, has an in-place form) -------------
BINARY = {
    "add": (_ew.Add, True, True),
    "sub": (_ew.Sub, False, True),
    "mul": (_ew.Mul, True, True),
    "truediv": (_ew.Div, False, True),
    "matmul": (Matmul, False, False),
}
# Unary ops whose method is the op itself: ``t.exp()`` is ``Exp.apply(t)``.
UNARY = {"exp": _ew.Exp, "log": _ew.Log, "sqrt": _ew.Sqrt, "sin": _ew.Sin, "cos": _ew.Cos,
         "tanh": _ew.Tanh, "sigmoid": _ew.Sigmoid, "relu": _ew.Relu, "abs": _ew.Abs}
# Reductions, taking NumPy's (axis, keepdims) and PyTorch's (dim, keepdim) spellings.
REDUCTIONS = ("sum", "mean", "max", "min")
# Comparisons give boolean tensors outside the graph.
COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")
# Methods that are the op function of the same name with the tensor first.
SAME_AS_FUNCTION = ("softmax", "log_softmax", "logsumexp", "swapaxes", "broadcast_to", "unbind",
                    "split", "astype", "clone")


def _binary(fn_cls, commutes):
    def forward(self, other):
        return fn_cls.apply(self, other if type(other) is Tensor else _const(other, self))

    if commutes:   # `3 * a` is recorded as a.mul(3), as PyTorch does: the tensor first
        def reflected(self, other):
            return fn_cls.apply(self, _const(other, self))
    else:
        def reflected(self, other):
            return fn_cls.apply(_const(other, self), self)

    def in_place(self, other):
        return ops.inplace(self, fn_cls, other)

    return forward, reflected, in_place


def _unary(fn_cls):
    def method(self):
        return fn_cls.apply(self)
    return method


def _reduction(fn):
    def method(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return fn(self, axis if dim is None else dim, keepdims if keepdim is None else keepdim)
    return method


def _comparison(compare):
    def method(self, other):
        return Tensor._make(compare(self.data, _data(other)))
    return method


def _pow(self, other):
    if type(other) is Tensor:
        return _ew.PowTensor.apply(self, other)
    if isinstance(other, _NUMBERS):   # PowBackward0: the exponent is kept as a number
        return _ew.Pow.apply(self, exponent=other)
    return _ew.PowTensor.apply(self, _const(other, self))


def _rpow(self, other):
    return _ew.PowTensor.apply(_const(other, self), self)


def _reshape(self, *shape):
    return ops.reshape(self, shape[0] if len(shape) == 1 else shape)


def _transpose(self, *axes):
    """``t.transpose(d0, d1)`` swaps two dims (PyTorch); ``t.transpose()`` reverses them."""
    if len(axes) == 2:
        return ops.swapaxes(self, axes[0], axes[1])
    return ops.permute(self, axes[0] if len(axes) == 1 else (axes or None))


def _permute(self, *dims):
    return ops.permute(self, dims[0] if len(dims) == 1 else dims)


def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(self)/d(leaf) into each leaf's ``.grad``.

    ``gradient`` is the vector of the vector-Jacobian product: required when
    ``self`` is not a scalar, it weights each element's derivative
    (``y.backward(v)`` gives ``leaf.grad = v @ dy/dleaf``).
    """
    autograd.backward(self, gradient, retain_graph, create_graph, inputs)


def _array_namespace(self, api_version=None):
    return array_api


def install(cls=Tensor) -> None:
    """Set every operator and method on ``cls``."""
    for name, (fn_cls, commutes, has_in_place) in BINARY.items():
        forward, reflected, in_place = _binary(fn_cls, commutes)
        setattr(cls, f"__{name}__", forward)
        setattr(cls, f"__r{name}__", reflected)
        if has_in_place:
            setattr(cls, f"__i{name}__", in_place)
            setattr(cls, "div_" if name == "truediv" else f"{name}_", in_place)
    for name, fn_cls in UNARY.items():
        setattr(cls, name, _unary(fn_cls))
    for name in REDUCTIONS:
        setattr(cls, name, _reduction(getattr(ops, name)))
    for name in COMPARISONS:
        setattr(cls, f"__{name}__", _comparison(getattr(np, {"eq": "equal", "ne": "not_equal",
                                                              "lt": "less", "le": "less_equal",
                                                              "gt": "greater",
                                                              "ge": "greater_equal"}[name])))
    for name in SAME_AS_FUNCTION:
        setattr(cls, name, getattr(ops, name))
    cls.__pow__, cls.__rpow__, cls.pow = _pow, _rpow, _pow
    cls.matmul = cls.__matmul__
    cls.__neg__ = _unary(_ew.Neg)
    cls.__abs__ = cls.abs
    cls.__pos__ = lambda self: self
    cls.__getitem__ = ops.index
    cls.__setitem__ = ops.index_put_
    cls.__iter__ = lambda self: iter(ops.unbind(self, 0))
    cls.zero_ = lambda self: ops.inplace(self, _ew.Mul, 0.0)
    cls.reshape = cls.view = _reshape
    cls.flatten = lambda self: ops.reshape(self, (-1,))
    cls.unsqueeze = ops.expand_dims
    cls.squeeze = ops.squeeze
    cls.transpose, cls.permute = _transpose, _permute
    cls.t = lambda self: ops.permute(self, None)
    cls.T = property(lambda self: ops.permute(self, None))
    cls.mT = property(lambda self: ops.swapaxes(self, -1, -2))
    cls.backward = _backward
    cls.__array_namespace__ = _array_namespace
    cls.__hash__ = object.__hash__   # __eq__ is elementwise; identity hashing stays


install()
