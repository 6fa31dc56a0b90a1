"""The Tensor's operator and method surface, made from the ops' table.

``tensor.py`` holds what a tensor *is* (data, gradient, version, its place in the
graph) and imports no op; the ops never import this module.  Here, above both,
each operator and method is generated from the ``methods`` column of the ops'
table (``ops.OPS``, see ``ops/registry.py``) and set on ``Tensor`` (as tinygrad's
op mixins and HIPS autograd's ``ArrayBox`` get theirs).  Only the methods whose
signature differs from any op function's (``t.reshape(*shape)``, PyTorch's
``t.transpose(d0, d1)``, ``**`` choosing PowBackward0 or 1...) are written here.

>>> from diffcompare.engine import Tensor
>>> a = Tensor([1.0, 2.0], requires_grad=True)
>>> (3 * a).grad_fn.name(), (a ** 2).grad_fn.name(), a.exp().grad_fn.name()
('MulBackward0', 'PowBackward0', 'ExpBackward0')
"""
from __future__ import annotations

import numpy as np

from . import _tensor_str, array_api, autograd, ops
from .ops import elementwise as _ew
from .ops.shape import sort_order
from .tensor import Tensor, constant

_NUMBERS = (int, float, np.integer, np.floating)

# Comparisons give boolean tensors outside the graph: operator -> NumPy function.
COMPARISONS = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
               "eq": np.equal, "ne": np.not_equal}


def _binary(fn_cls, commutes):
    apply = fn_cls.apply

    def forward(self, other):
        return apply(self, other if type(other) is Tensor else constant(other, self))

    if commutes:   # `3 * a` is recorded as a.mul(3), as PyTorch does: the tensor first
        def reflected(self, other):
            return apply(self, constant(other, self))
    else:
        def reflected(self, other):
            return apply(constant(other, self), self)

    def in_place(self, other):
        return ops.inplace(self, fn_cls, other)

    return forward, reflected, in_place


def _unary(fn_cls):
    apply = fn_cls.apply

    def method(self):
        return apply(self)
    return method


def _reduction(fn):
    def method(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return fn(self, axis if dim is None else dim, keepdims if keepdim is None else keepdim)
    return method


def _comparison(compare):
    def method(self, other):
        return Tensor._make(compare(self.data, other.data if isinstance(other, Tensor) else other))
    return method


def _pow(self, other):
    if type(other) is Tensor:
        return _ew.PowTensor.apply(self, other)
    if isinstance(other, _NUMBERS):   # PowBackward0: the exponent is kept as a number
        return _ew.Pow.apply(self, exponent=other)
    return _ew.PowTensor.apply(self, constant(other, self))


def _rpow(self, other):
    return _ew.PowTensor.apply(constant(other, self), self)


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


def _table_methods(op) -> dict:
    """``{attribute: function}`` for one row of the ops' table (see ``registry.Op``)."""
    if op.kind == "unary":
        return dict.fromkeys(op.methods, _unary(op.node))
    if op.kind == "binary":
        forward, reflected, in_place = _binary(op.node, getattr(op.node, "commutes", False))
        stem = next((n[2:-2] for n in op.methods if n.startswith("__")), None)
        made = {}
        for name in op.methods:
            if name == f"__r{stem}__":
                made[name] = reflected
            elif name == f"__i{stem}__" or (name.endswith("_") and not name.startswith("__")):
                made[name] = in_place
            else:
                made[name] = forward
        return made
    return dict.fromkeys(op.methods, _reduction(op.function) if op.kind == "reduction"
                         else op.function)


# PyTorch's spellings of NumPy's reductions and shape functions (issue 19): torch's keywords
# (dim, keepdim, unbiased / correction, dims, shifts) and torch's defaults (t.var() is the
# unbiased variance, correction=1, as torch.var; the array namespace's var is NumPy's, ddof=0).
def _correction(unbiased, correction, ddof):
    if ddof is not None:
        return ddof
    if correction is not None:
        return correction
    return 0 if unbiased is False else 1


def _var(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,
         ddof=None, keepdims=None):
    return ops.var(self, dim if axis is None else axis, ddof=_correction(unbiased, correction, ddof),
                   keepdims=keepdim if keepdims is None else keepdims)


def _std(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,
         ddof=None, keepdims=None):
    return ops.std(self, dim if axis is None else axis, ddof=_correction(unbiased, correction, ddof),
                   keepdims=keepdim if keepdims is None else keepdims)


def _flatten(self, start_dim=0, end_dim=-1):
    """PyTorch's ``t.flatten(start_dim, end_dim)``: those dims merged into one."""
    if self.ndim == 0:
        return ops.reshape(self, (1,))
    start, end = start_dim % self.ndim, end_dim % self.ndim
    return ops.reshape(self, self.shape[:start] + (-1,) + self.shape[end + 1:])


def _scan_method(fn):
    def method(self, dim=None, *, axis=None):
        return fn(self, dim if axis is None else axis)
    return method


def _torch_methods(cls):
    cls.var, cls.std, cls.flatten = _var, _std, _flatten
    cls.ravel = ops.ravel
    cls.cumsum, cls.cumprod = _scan_method(ops.cumsum), _scan_method(ops.cumprod)
    cls.flip = lambda self, *dims: ops.flip(self, dims[0] if len(dims) == 1 else dims)
    cls.roll = lambda self, shifts, dims=None: ops.roll(self, shifts, dims)
    cls.repeat_interleave = lambda self, repeats, dim=None: ops.repeat(self, repeats, dim)
    cls.diagonal = lambda self, offset=0, dim1=0, dim2=1: ops.diagonal(self, offset, dim1, dim2)
    cls.tile = lambda self, *reps: ops.tile(self, reps[0] if len(reps) == 1 else reps)
    cls.repeat = _repeat
    cls.sort = _sort


def _sort(self, dim=-1, descending=False, stable=True):
    """PyTorch's ``t.sort(dim, descending)``: ``(values, indices)``, stably (ties in order;
    ``stable`` is accepted and always holds).  The array namespace's ``sort`` is NumPy's."""
    values = ops.sort(self, dim, descending=descending)
    return values, Tensor._make(sort_order(self.data, dim, descending))


def _repeat(self, *sizes):
    """PyTorch's ``t.repeat(*sizes)``: copies along each dim (NumPy's ``tile``; NumPy's
    ``repeat``, each element repeated, is ``t.repeat_interleave``)."""
    sizes = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
    if len(sizes) < self.ndim:
        raise RuntimeError(f"Number of dimensions of repeat dims ({len(sizes)}) can not be "
                           f"smaller than number of dimensions of tensor ({self.ndim}); give "
                           "one count per dim, or use np.tile's rule with xp.tile.")
    return ops.tile(self, sizes)


def _astype_method(dtype):
    def method(self):
        return ops.astype(self, dtype)
    method.__doc__ = f"This tensor as {np.dtype(dtype).name} (differentiable), as PyTorch's."
    return method


def _to(self, *args, **kwargs):
    """``t.to(dtype)`` (or ``t.to("cpu")``, ``t.to(other)``): a dtype change; the engine has
    one device, the CPU, so a device argument changes nothing."""
    dtype = kwargs.get("dtype")
    for a in args:
        if isinstance(a, Tensor):
            dtype = a.dtype
        elif not (isinstance(a, str) or type(a).__name__ == "device"):
            dtype = a
    device = kwargs.get("device")
    for d in [device, *(a for a in args if isinstance(a, str))]:
        if d is not None and str(d).split(":")[0] != "cpu":
            raise RuntimeError(f"the engine runs on the CPU only; it has no device {d!r}. "
                               "Leave the device out, or use 'cpu'.")
    return self if dtype is None else ops.astype(self, dtype)


def _mm(self, other):
    """``t.mm(m)``: the product of two matrices (2-D only, as PyTorch's ``mm``)."""
    if self.ndim != 2 or getattr(other, "ndim", None) != 2:
        raise RuntimeError(f"mm multiplies two matrices (2-D tensors), got {self.ndim}-D and "
                           f"{getattr(other, 'ndim', '?')}-D; use matmul (@) for other shapes.")
    return ops.matmul(self, other)


def _repr(self):
    """As PyTorch prints a tensor (``tensor(0.2929, grad_fn=<MeanBackward0>)``); see
    :mod:`diffcompare.engine._tensor_str` for the rules and the one difference."""
    return _tensor_str.tensor_repr(self.data, None if self.grad_fn is None else self.grad_fn.name(),
                                   self._requires_grad)


def _torch_face_methods(cls) -> None:
    """The methods PyTorch code calls that NumPy's names do not cover: dtype casts
    (``float()``, ``double()``, ``to``), ``mm``, and ``mul``/``add``/``sub``/``div`` where the
    ops' table has not given them."""
    cls.__repr__ = _repr
    cls.float = _astype_method(np.float32)
    cls.double = _astype_method(np.float64)
    cls.half = _astype_method(np.float16)
    cls.long = _astype_method(np.int64)
    cls.int = _astype_method(np.int32)
    cls.bool = _astype_method(np.bool_)
    cls.to = _to
    cls.type_as = lambda self, other: ops.astype(self, other.dtype)
    cls.mm = _mm
    for name, stem in (("mul", "mul"), ("add", "add"), ("sub", "sub"), ("div", "truediv"),
                       ("matmul", "matmul")):
        if name not in cls.__dict__:
            setattr(cls, name, getattr(cls, f"__{stem}__"))


def install(cls=Tensor) -> None:
    """Set every operator and method on ``cls``."""
    for op in ops.OPS.values():
        for name, method in _table_methods(op).items():
            setattr(cls, name, method)
    for name, compare in COMPARISONS.items():
        setattr(cls, f"__{name}__", _comparison(compare))
    cls.__pow__, cls.__rpow__, cls.pow = _pow, _rpow, _pow
    cls.__pos__ = lambda self: self
    cls.__getitem__ = ops.index
    cls.__setitem__ = ops.index_put_
    cls.__iter__ = lambda self: iter(ops.unbind(self, 0))
    cls.zero_ = lambda self: ops.inplace(self, _ew.Mul, 0.0)
    cls.reshape = cls.view = _reshape
    _torch_methods(cls)
    cls.transpose, cls.permute = _transpose, _permute
    cls.t = lambda self: ops.permute(self, None)
    cls.T = property(lambda self: ops.permute(self, None))
    cls.mT = property(lambda self: ops.swapaxes(self, -1, -2))
    cls.backward = _backward
    cls.__array_namespace__ = _array_namespace
    cls.__hash__ = object.__hash__   # __eq__ is elementwise; identity hashing stays
    _torch_face_methods(cls)


install()
