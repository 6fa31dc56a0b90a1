"""The engine's differentiable ops, as functions of Tensors, arrays or numbers.

Each function turns its arguments into Tensors and applies one ``Function``
(its backward node).  Composite functions (``cross_entropy``, ``expand_dims``)
are built from those, so they need no backward of their own.

Each op is entered in the table ``OPS`` (``registry``) where it is defined, with
the Tensor attributes and array-namespace names it gives; ``__all__`` (set at the
end), the Tensor's methods (``methods``) and ``array_api`` are made from it.  An
elementwise op is one line below plus its ``Function``.
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import grad_mode
from ..function import AccumulateGrad
from ..tensor import Tensor, _const, _register_on_node, _unregister_from_node
from .linalg import Matmul
from .nn import LogSoftmax, MseLoss, NllLoss, Softmax
from .reduction import LogSumExp, Max, Mean, Min, Sum
from .registry import OPS, register
from .shape import (BroadcastTo, Cat, Index, IndexPut, IndexView, Permute, Reshape, Split, Stack,
                    SumTo, Unbind, is_basic_index)
from . import dual, elementwise as ew


def as_tensor(x, like: Tensor | None = None) -> Tensor:
    """``x`` itself if it is a Tensor, else a constant (numbers take ``like``'s float dtype)."""
    if type(x) is Tensor:
        return x
    if like is not None:
        return _const(x, like)
    return Tensor(x)


def _pair(a, b):
    if type(a) is Tensor:
        return a, as_tensor(b, a)
    if type(b) is Tensor:
        return as_tensor(a, b), b
    a = Tensor(a)
    return a, as_tensor(b, a)


def _unary(cls, methods="", xp=""):
    def op(x):
        return cls.apply(as_tensor(x))

    op.__name__ = op.__qualname__ = cls.__name__.lower()
    op.__doc__ = f"Elementwise {op.__name__} (backward node ``{cls.__name__}Backward0``)."
    return register(op, kind="unary", node=cls, methods=methods, xp=xp)


def _binary(cls, methods="", xp=""):
    def op(a, b):
        return cls.apply(*_pair(a, b))

    op.__name__ = op.__qualname__ = cls.__name__.lower()
    op.__doc__ = f"Elementwise {op.__name__} with broadcasting (``{cls.__name__}Backward0``)."
    return register(op, kind="binary", node=cls, methods=methods, xp=xp)


# --- elementwise ops: one row each, made from their Function ------------------------------
#         made from      the Tensor attributes it gives                         array namespace
neg     = _unary(ew.Neg,     methods="__neg__",                                  xp="negative")
exp     = _unary(ew.Exp,     methods="exp",                                      xp="exp")
log     = _unary(ew.Log,     methods="log",                                      xp="log")
sqrt    = _unary(ew.Sqrt,    methods="sqrt",                                     xp="sqrt")
sin     = _unary(ew.Sin,     methods="sin",                                      xp="sin")
cos     = _unary(ew.Cos,     methods="cos",                                      xp="cos")
tanh    = _unary(ew.Tanh,    methods="tanh",                                     xp="tanh")
sigmoid = _unary(ew.Sigmoid, methods="sigmoid")   # xp: the contract's (problems/contract.py)
relu    = _unary(ew.Relu,    methods="relu")
abs     = _unary(ew.Abs,     methods="abs __abs__ absolute",                     xp="abs absolute fabs")
clone   = _unary(ew.Clone,   methods="clone")
add     = _binary(ew.Add,    methods="__add__ __radd__ __iadd__ add_",           xp="add")
sub     = _binary(ew.Sub,    methods="__sub__ __rsub__ __isub__ sub_",           xp="subtract")
mul     = _binary(ew.Mul,    methods="__mul__ __rmul__ __imul__ mul_",           xp="multiply")
div     = _binary(ew.Div,    methods="__truediv__ __rtruediv__ __itruediv__ div_", xp="divide true_divide")
maximum = _binary(ew.Maximum,                                                    xp="maximum")
minimum = _binary(ew.Minimum,                                                    xp="minimum")
matmul  = _binary(Matmul,    methods="__matmul__ __rmatmul__ matmul",            xp="matmul")


@register(xp="power")   # the operator and method are methods._pow (PowBackward0 or 1)
def pow(a, b):
    """``a ** b``: ``PowBackward0`` for a number exponent, ``PowBackward1`` for a tensor one."""
    if type(a) is not Tensor:
        a = Tensor(a) if type(b) is not Tensor else as_tensor(a, b)
    return a ** b


@register(xp="where")
def where(condition, a, b):
    """Elements of ``a`` where ``condition`` holds, else of ``b`` (condition is not differentiated)."""
    cond = condition.data if isinstance(condition, Tensor) else np.asarray(condition)
    a, b = _pair(a, b)
    return ew.Where.apply(a, b, condition=cond.astype(bool, copy=False))


@register(methods="astype", xp="astype")
def astype(x, dtype):
    x = as_tensor(x)
    return x if x.dtype == np.dtype(dtype) else ew.AsType.apply(x, dtype=np.dtype(dtype))


# NumPy's elementwise math (issue 19).  Formulas and node names: torch's (ops/elementwise.py).
exp2       = _unary(ew.Exp2,       methods="exp2",                    xp="exp2")
expm1      = _unary(ew.Expm1,      methods="expm1",                   xp="expm1")
log2       = _unary(ew.Log2,       methods="log2",                    xp="log2")
log10      = _unary(ew.Log10,      methods="log10",                   xp="log10")
log1p      = _unary(ew.Log1p,      methods="log1p",                   xp="log1p")
sinh       = _unary(ew.Sinh,       methods="sinh",                    xp="sinh")
cosh       = _unary(ew.Cosh,       methods="cosh",                    xp="cosh")
tan        = _unary(ew.Tan,        methods="tan",                     xp="tan")
arcsin     = _unary(ew.Arcsin,     methods="arcsin asin",             xp="arcsin asin")
arccos     = _unary(ew.Arccos,     methods="arccos acos",             xp="arccos acos")
arctan     = _unary(ew.Arctan,     methods="arctan atan",             xp="arctan atan")
arcsinh    = _unary(ew.Arcsinh,    methods="arcsinh asinh",           xp="arcsinh asinh")
arccosh    = _unary(ew.Arccosh,    methods="arccosh acosh",           xp="arccosh acosh")
arctanh    = _unary(ew.Arctanh,    methods="arctanh atanh",           xp="arctanh atanh")
ceil       = _unary(ew.Ceil,       methods="ceil",                    xp="ceil")
floor      = _unary(ew.Floor,      methods="floor",                   xp="floor")
rint       = _unary(ew.Rint,                                          xp="rint")
trunc      = _unary(ew.Trunc,      methods="trunc fix",               xp="trunc fix")
sign       = _unary(ew.Sign,       methods="sign",                    xp="sign")
deg2rad    = _unary(ew.Deg2Rad,    methods="deg2rad",                 xp="deg2rad radians")
rad2deg    = _unary(ew.Rad2Deg,    methods="rad2deg",                 xp="rad2deg degrees")
reciprocal = _unary(ew.Reciprocal, methods="reciprocal",              xp="reciprocal")
sinc       = _unary(ew.Sinc,       methods="sinc",                    xp="sinc")
cbrt       = _unary(ew.Cbrt,                                          xp="cbrt")
arctan2    = _binary(ew.Arctan2,   methods="arctan2 atan2",           xp="arctan2 atan2")
logaddexp  = _binary(ew.Logaddexp, methods="logaddexp",               xp="logaddexp")
logaddexp2 = _binary(ew.Logaddexp2, methods="logaddexp2",             xp="logaddexp2")
remainder  = _binary(ew.Remainder, methods="__mod__ __rmod__ __imod__ remainder remainder_",
                     xp="remainder mod")
fmod       = _binary(ew.Fmod,      methods="fmod fmod_",              xp="fmod")
fmax       = _binary(ew.Fmax,      methods="fmax",                    xp="fmax")
fmin       = _binary(ew.Fmin,      methods="fmin",                    xp="fmin")
hypot      = _binary(ew.Hypot,     methods="hypot",                   xp="hypot")
imag       = _unary(ew.Imag,                                          xp="imag")   # zeros; complex refused


@register(methods="square", xp="square")
def square(x):
    """``x * x`` as torch's ``square``: ``a ** 2``, its ``PowBackward0`` node (and fast path)."""
    return ew.Pow.apply(as_tensor(x), exponent=2)


@register(methods="round", xp="round around")
def round(x, decimals=0):
    """NumPy's ``round`` (halves to even); zero gradient (``RoundBackward0``, or 1 with decimals)."""
    if not isinstance(decimals, (int, np.integer)) or isinstance(decimals, bool):
        raise TypeError(f"round: decimals must be an int (the number of decimal places; negative "
                        f"rounds to tens, hundreds...), not {decimals!r}.")
    return ew.Round.apply(as_tensor(x), decimals=int(decimals))


@register(methods="nan_to_num", xp="nan_to_num")
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """NaN -> ``nan``, +-inf -> ``posinf`` / ``neginf`` (the dtype's largest finite numbers by
    default).  The gradient passes where x is finite, 0 where an element was replaced."""
    return ew.NanToNum.apply(as_tensor(x), nan=nan, posinf=posinf, neginf=neginf)


def _refuse_complex(x, what):
    x = as_tensor(x)
    if x.dtype.kind == "c":
        raise TypeError(f"{what} of a complex array: the engine differentiates real arrays "
                        "only; keep the real and imaginary parts as two real arrays.")
    return x


@register(methods="positive", xp="positive")
def positive(x):
    """``+x``: ``x`` itself (no node, as torch's ``positive``); composed, no backward of its own."""
    return as_tensor(x)


@register(xp="real")
def real(x):
    """The real part of a real array: ``x`` itself (torch's ``real``); complex input is refused."""
    return _refuse_complex(x, "real")


@register(methods="conj conjugate", xp="conj conjugate")
def conj(x):
    """The complex conjugate of a real array: ``x`` itself (torch's ``conj``); complex input is
    refused."""
    return _refuse_complex(x, "conj")


# --- reductions -------------------------------------------------------------------

@register(kind="reduction", methods="sum", xp="sum")
def sum(x, axis=None, keepdims=False):
    return Sum.apply(as_tensor(x), axis=axis, keepdims=keepdims)


@register(kind="reduction", methods="mean", xp="mean")
def mean(x, axis=None, keepdims=False):
    return Mean.apply(as_tensor(x), axis=axis, keepdims=keepdims)


@register(kind="reduction", methods="max", xp="max amax")
def max(x, axis=None, keepdims=False):
    """Maximum over axes; tied maxima share the gradient evenly."""
    return Max.apply(as_tensor(x), axis=axis, keepdims=keepdims)


@register(kind="reduction", methods="min", xp="min amin")
def min(x, axis=None, keepdims=False):
    """Minimum over axes; tied minima share the gradient evenly."""
    return Min.apply(as_tensor(x), axis=axis, keepdims=keepdims)


@register(methods="logsumexp", xp="logsumexp")
def logsumexp(x, axis=None, keepdims=False):
    return LogSumExp.apply(as_tensor(x), axis=axis, keepdims=keepdims)


@register(methods="softmax")
def softmax(x, axis=-1):
    return Softmax.apply(as_tensor(x), axis=axis)


@register(methods="log_softmax")
def log_softmax(x, axis=-1):
    return LogSoftmax.apply(as_tensor(x), axis=axis)


# --- losses -----------------------------------------------------------------------

@register
def mse_loss(input, target, reduction="mean"):
    """Mean squared error ``mean((input - target)**2)`` (``reduction``: mean / sum / none)."""
    return MseLoss.apply(*_pair(input, target), reduction=reduction)


@register
def nll_loss(log_probs, target, reduction="mean"):
    """Negative log-likelihood of integer class indices ``target``."""
    target = target.data if isinstance(target, Tensor) else np.asarray(target)
    return NllLoss.apply(as_tensor(log_probs), target=target, reduction=reduction)


@register
def cross_entropy(logits, target, reduction="mean"):
    """Softmax cross-entropy over the last axis: ``nll_loss(log_softmax(logits), target)``.

    ``target`` holds integer classes, or probabilities with the logits' shape.
    """
    logp = log_softmax(logits, axis=-1)
    target_data = target.data if isinstance(target, Tensor) else np.asarray(target)
    if target_data.dtype.kind in "iu":
        return nll_loss(logp, target_data, reduction)
    per_sample = -sum(logp * as_tensor(target, logp), axis=-1)
    return per_sample if reduction == "none" else (mean(per_sample) if reduction == "mean"
                                                   else sum(per_sample))


# --- shape ------------------------------------------------------------------------

@register(xp="reshape")   # methods: t.reshape(*shape) / t.view (methods._reshape)
def reshape(x, shape):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return Reshape.apply(as_tensor(x), shape=shape)


@register(xp="permute permute_dims")   # method: t.permute(*dims) (methods._permute)
def permute(x, axes=None):
    return Permute.apply(as_tensor(x), axes=None if axes is None else tuple(axes))


@register(xp="transpose")   # method: PyTorch's t.transpose(d0, d1) (methods._transpose)
def transpose(x, axes=None):
    """NumPy's ``transpose``: permute dims by ``axes`` (reverse them by default)."""
    return permute(x, axes)


@register(methods="swapaxes", xp="swapaxes")
def swapaxes(x, axis1, axis2):
    x = as_tensor(x)
    axes = list(range(x.ndim))
    axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
    return Permute.apply(x, axes=tuple(axes))


@register(methods="unsqueeze", xp="expand_dims")
def expand_dims(x, axis):
    x = as_tensor(x)
    if not -(x.ndim + 1) <= axis <= x.ndim:
        raise ValueError(f"axis {axis} is out of bounds for expand_dims of a tensor of "
                         f"dimension {x.ndim}; use an axis in [{-(x.ndim + 1)}, {x.ndim}].")
    shape = list(x.shape)
    shape.insert(axis % (x.ndim + 1), 1)
    return Reshape.apply(x, shape=tuple(shape))


@register(methods="squeeze", xp="squeeze")
def squeeze(x, axis=None):
    x = as_tensor(x)
    if axis is None:
        shape = tuple(n for n in x.shape if n != 1)
    else:
        axis = axis % x.ndim
        if x.shape[axis] != 1:
            raise ValueError(f"cannot squeeze axis {axis} of shape {x.shape}: its size is not 1.")
        shape = x.shape[:axis] + x.shape[axis + 1:]
    return Reshape.apply(x, shape=shape)


@register(methods="broadcast_to", xp="broadcast_to")
def broadcast_to(x, shape):
    return BroadcastTo.apply(as_tensor(x), shape=tuple(shape))


def sum_to(x, shape):
    """Sum ``x`` down to ``shape`` (the adjoint of ``broadcast_to``)."""
    return SumTo.apply(as_tensor(x), shape=tuple(shape))


@register(methods="unbind")
def unbind(x, dim=0):
    """Slices along ``dim`` as separate tensors: one ``UnbindBackward0`` node, output i is slice i."""
    return Unbind.apply(as_tensor(x), axis=dim)


@register(methods="split")
def split(x, split_size_or_sections, dim=0):
    """PyTorch's split: chunks of ``split_size`` (an int) or of the given sizes (a list)."""
    x = as_tensor(x)
    n = x.shape[dim]
    if isinstance(split_size_or_sections, (int, np.integer)):
        sizes = [split_size_or_sections] * (n // split_size_or_sections)
        if n % split_size_or_sections:
            sizes.append(n % split_size_or_sections)
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise ValueError(f"split sizes {sizes} must add up to the dim's size {n}.")
    cuts = tuple(np.cumsum(sizes)[:-1])
    return Split.apply(x, indices=cuts, axis=dim)


@register(xp="stack")
def stack(tensors, axis=0):
    tensors = _same_dtype(tensors)
    return Stack.apply(*tensors, axis=axis)


@register(xp="concatenate concat")
def concatenate(tensors, axis=0):
    tensors = _same_dtype(tensors)
    return Cat.apply(*tensors, axis=axis)


def _same_dtype(tensors):
    tensors = list(tensors)
    like = next((t for t in tensors if type(t) is Tensor), None)
    return [as_tensor(t, like) for t in tensors]


# --- indexing and in-place --------------------------------------------------------

def _normalize_key(key):
    if isinstance(key, Tensor):
        return key.data
    if isinstance(key, tuple):
        return tuple(k.data if isinstance(k, Tensor) else k for k in key)
    if isinstance(key, list):
        return np.asarray(key)
    return key


def index(x, key):
    key = _normalize_key(key)
    return (IndexView if is_basic_index(key) else Index).apply(x, key=key)


def _check_inplace(t: Tensor, recording: bool):
    if not t.data.flags.writeable:
        # broadcast_to (PyTorch's expand) makes several elements share one memory location
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to "
            f"a single memory location (shape {t.shape}, e.g. a broadcast_to result). Please "
            "clone() the tensor before performing the operation."
        )
    if not recording:
        return
    if t.grad_fn is None and t._requires_grad:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation. "
            "Do it under no_grad() (as an optimizer step does), or write it out of place: "
            "x = x + 1."
        )
    if t.grad_fn is not None and t.grad_fn.is_view:
        # Writing through a view would change its base behind the base's grad_fn;
        # PyTorch rewrites the base's history for this, this engine refuses.
        leaf = _view_base_node(t.grad_fn)
        what = ("a view of a leaf Variable that requires grad" if isinstance(leaf, AccumulateGrad)
                else f"a view ({t.grad_fn.name()}) of a tensor that requires grad")
        raise RuntimeError(
            f"{what} is being used in an in-place operation, which this engine does not "
            "support. Modify a copy instead (v = v.clone(); v += 1), or write it out of "
            "place (v = v + 1)."
        )


def _view_base_node(node):
    """Follow a chain of view nodes back to the node that made the viewed tensor."""
    while getattr(node, "is_view", False):
        node = node.next_functions[0][0]
    return node


def _write_back(t: Tensor, result: Tensor, recording: bool):
    """Store ``result`` in ``t``'s memory, bump its version and, if recording,
    make ``t`` the output of the new node (PyTorch 'rebases' its history)."""
    if result.shape != t.shape:
        raise RuntimeError(
            f"output with shape {t.shape} doesn't match the broadcast shape {result.shape}; "
            "an in-place op cannot change a tensor's shape."
        )
    np.copyto(t.data, result.data, casting="same_kind")
    t._bump_version()
    if recording:
        hooked = t._retains_grad or t._hooks
        if hooked:
            _unregister_from_node(t)
        t.grad_fn, t.output_nr, t._requires_grad = result.grad_fn, 0, True
        if hooked:
            _register_on_node(t)


def inplace(t: Tensor, op, other):
    """``t op= other`` in place (``+=``, ``mul_``...): values change, the version goes up."""
    other = as_tensor(other, t)
    recording = grad_mode.is_grad_enabled() and (t._requires_grad or other._requires_grad)
    _check_inplace(t, recording)
    if recording:
        result = op.apply(t, other)
    else:
        with grad_mode.no_grad():
            result = op.apply(t, other)
    _write_back(t, result, recording)
    return t


def index_put_(t: Tensor, key, value):
    """``t[key] = value``: recorded as ``IndexPutBackward0`` when gradients flow through."""
    key = _normalize_key(key)
    value = as_tensor(value, t)
    recording = grad_mode.is_grad_enabled() and (t._requires_grad or value._requires_grad)
    _check_inplace(t, recording)
    if recording:
        _write_back(t, IndexPut.apply(t, value, key=key), recording)
    else:
        t.data[key] = value.data
        t._bump_version()
    return t


#: The op functions: the table's names (``from .ops import *`` makes the engine package's).
__all__ = sorted(OPS)
