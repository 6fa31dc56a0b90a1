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
import math
import operator

import numpy as np

from .. import grad_mode
from ..function import AccumulateGrad
from ..tensor import Tensor, constant
from .linalg import Einsum, Matmul, parse_einsum
from .nn import LogSoftmax, MseLoss, NllLoss, Softmax
from .reduction import Cumprod, Cumsum, LogSumExp, Max, Mean, Min, Prod, Std, Sum, Var
from .registry import OPS, register
from .shape import (BroadcastTo, Cat, ConstantPadNd, DiagEmbed, Diagonal, Flip, Index, IndexPut,
                    IndexSelect, IndexView, Permute, Reshape, Roll, Sort, Split, Stack, SumTo,
                    TakeAlongAxis, Tile, Tril, Triu, Unbind, is_basic_index)
from . import dual, elementwise as ew


def as_tensor(x, like: Tensor | None = None) -> Tensor:
    """``x`` itself if it is a Tensor, else a constant (numbers take ``like``'s float dtype)."""
    if type(x) is Tensor:
        return x
    if like is not None:
        return constant(x, like)
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
sigmoid = _unary(ew.Sigmoid, methods="sigmoid",                                  xp="sigmoid")
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


# --- linear algebra (ops/linalg.py) ---------------------------------------------------------
# einsum has its own backward (EinsumBackward0: each operand's gradient is another einsum);
# dot, vdot, inner, outer, tensordot, kron, trace, cross and matrix_transpose are composed
# from einsum, matmul, indexing and elementwise ops, so they need no backward of their own.
# The linalg sub-namespace (det, inv, solve, ...) is ops.linalg's, as ``array_api.linalg``.

@register(xp="einsum")
def einsum(subscripts, *operands, optimize=None):
    """NumPy's ``einsum``: any subscripts NumPy accepts in its string form (implicit output,
    repeated labels such as ``'ii->i'``, ``'...'``), size-1 dims broadcast as NumPy does.
    ``optimize`` is accepted for NumPy compatibility; the contraction order is NumPy's
    ``optimize=True`` for three or more operands.  The interleaved form
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` is NumPy's too."""
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved_einsum((subscripts,) + operands)
    tensors = _same_dtype(operands)
    ins, out = parse_einsum(subscripts, [t.shape for t in tensors])
    sizes = {}
    for term, t in zip(ins, tensors):
        seen = {}
        for c, n in zip(term, t.shape):
            if c in seen and seen[c] != n:
                raise ValueError(f"einsum: the label {c!r} repeats in {term!r} with different "
                                 f"sizes {seen[c]} and {n} (operand shape {t.shape}).")
            seen[c] = n
            m = sizes.get(c, 1)
            if m != n and m != 1 and n != 1:
                raise ValueError(f"einsum: the label {c!r} of {subscripts!r} has sizes {m} and {n} "
                                 "in different operands; they must be equal (or 1, to broadcast).")
            sizes[c] = n if m == 1 else m
    tensors = [t if all(sizes[c] == n for c, n in zip(term, t.shape))
               else broadcast_to(t, tuple(sizes[c] for c in term))
               for term, t in zip(ins, tensors)]
    return Einsum.apply(*tensors, ins=ins, out=out)


def _interleaved_einsum(args):
    """NumPy's ``einsum(op0, sublist0, op1, sublist1, ..., [sublistout])`` as a subscripts
    string (sublists of ints 0-51 and ``...``) and the operands."""
    args = list(args)
    out = args.pop() if len(args) % 2 else None
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

    def term(sub):
        try:
            return "".join("..." if s is Ellipsis else letters[operator.index(s)] for s in sub)
        except (TypeError, IndexError):
            raise ValueError(f"einsum: a sublist must hold ints in [0, 52) or Ellipsis, got {sub!r}.") from None

    spec = ",".join(term(sub) for sub in args[1::2])
    if out is not None:
        spec += "->" + term(out)
    return spec, tuple(args[0::2])


_A, _B = "abcdefghijklm", "nopqrstuvwxyz"


@register(xp="dot")
def dot(a, b):
    """NumPy's ``dot``: a product with a 0-d operand; ``matmul`` for 1-D/2-D operands; else the
    sum over a's last axis and b's second-to-last (its last if b is 1-D), the result's shape
    ``a.shape[:-1] + b.shape[:-2] + b.shape[-1:]`` (not matmul's batch broadcasting)."""
    a, b = _pair(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return mul(a, b)
    k = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if a.shape[-1] != k:
        raise ValueError(f"dot: shapes {a.shape} and {b.shape} not aligned: the last dim of a "
                         f"({a.shape[-1]}) must equal the {'only' if b.ndim == 1 else 'second-to-last'}"
                         f" dim of b ({k}).")
    if a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b)
    la, lb = _A[:a.ndim - 1], _B[:b.ndim]
    if b.ndim == 1:
        return Einsum.apply(a, b, ins=(la + "z", "z"), out=la)
    lb = lb[:b.ndim - 2] + "z" + lb[-1]
    return Einsum.apply(a, b, ins=(la + "z", lb), out=la + lb.replace("z", ""))


@register(xp="vdot")
def vdot(a, b):
    """NumPy's ``vdot`` for real arrays: the dot product of the flattened operands."""
    a, b = _pair(a, b)
    if a.size != b.size:
        raise ValueError(f"vdot: the operands have {a.size} and {b.size} elements (shapes {a.shape}"
                         f" and {b.shape}); flattened, they must have the same length.")
    return Einsum.apply(a.reshape(-1), b.reshape(-1), ins=("z", "z"), out="")


@register(xp="inner")
def inner(a, b):
    """NumPy's ``inner``: sum over the last axes, shape ``a.shape[:-1] + b.shape[:-1]``
    (a product when either is 0-d)."""
    a, b = _pair(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return mul(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"inner: the last dims of shapes {a.shape} and {b.shape} differ; they "
                         "must be equal.")
    la, lb = _A[:a.ndim - 1], _B[:b.ndim - 1]
    return Einsum.apply(a, b, ins=(la + "z", lb + "z"), out=la + lb)


@register(xp="outer")
def outer(a, b):
    """NumPy's ``outer``: the operands flattened, ``out[i, j] = a[i] * b[j]``."""
    a, b = _pair(a, b)
    return Einsum.apply(a.reshape(-1), b.reshape(-1), ins=("i", "j"), out="ij")


@register(xp="tensordot")
def tensordot(a, b, axes=2):
    """NumPy's ``tensordot``: ``axes`` an int N (a's last N axes with b's first N) or a pair
    of axis lists (or ints) to contract; the result has a's free axes, then b's."""
    a, b = _pair(a, b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > a.ndim or n > b.ndim:
            raise ValueError(f"tensordot: axes={n} needs operands with at least {n} dims, got "
                             f"shapes {a.shape} and {b.shape}.")
        ax_a, ax_b = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        try:
            ax_a, ax_b = axes
        except (TypeError, ValueError):
            raise ValueError(f"tensordot: axes must be an int or a pair of axis lists, got {axes!r}.") from None
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
        if len(ax_a) != len(ax_b):
            raise ValueError(f"tensordot: axes {axes!r} pair {len(ax_a)} axes of a with "
                             f"{len(ax_b)} of b; give as many of each.")
        ax_a = [x % a.ndim for x in ax_a] if a.ndim else ax_a
        ax_b = [x % b.ndim for x in ax_b] if b.ndim else ax_b
    la, lb = list(_A[:a.ndim]), list(_B[:b.ndim])
    for i, j in zip(ax_a, ax_b):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"tensordot: shape mismatch: axis {i} of a {a.shape} has "
                             f"{a.shape[i]} entries, axis {j} of b {b.shape} has {b.shape[j]}.")
        lb[j] = la[i]
    contracted = set(la[i] for i in ax_a)
    out = "".join(c for c in la if c not in contracted) + "".join(c for c in lb if c not in contracted)
    return Einsum.apply(a, b, ins=("".join(la), "".join(lb)), out=out)


@register(xp="kron")
def kron(a, b):
    """NumPy's ``kron``: the block product, operands padded with leading 1-dims to equal
    ndim; ``out[i*nb + k, ...] = a[i, ...] * b[k, ...]``."""
    a, b = _pair(a, b)
    nd = builtins.max(a.ndim, b.ndim)
    a = a.reshape((1,) * (nd - a.ndim) + a.shape)
    b = b.reshape((1,) * (nd - b.ndim) + b.shape)
    la, lb = _A[:nd], _B[:nd]
    out = Einsum.apply(a, b, ins=(la, lb), out="".join(x + y for x, y in zip(la, lb)))
    return out.reshape(tuple(m * n for m, n in zip(a.shape, b.shape)))


@register(xp="cross")
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """NumPy's ``cross`` of 3-vectors along ``axisa``/``axisb`` (``axis`` sets all three),
    broadcast over the other axes; the result's vector axis is ``axisc``."""
    a, b = _pair(a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = _move_last(a, axisa, "a", "axisa")
    b = _move_last(b, axisb, "b", "axisb")
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    c = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    nd = c.ndim
    if not -nd <= axisc < nd:
        raise ValueError(f"cross: axisc {axisc} is out of bounds for the result's {nd} dims.")
    axisc %= nd
    if axisc != nd - 1:
        order = list(range(nd - 1))
        order.insert(axisc, nd - 1)
        c = permute(c, order)
    return c


def _move_last(x, ax, name, arg):
    if not -x.ndim <= ax < x.ndim if x.ndim else True:
        raise ValueError(f"cross: {arg}={ax} is out of bounds for {name} of shape {x.shape}.")
    ax %= x.ndim
    if x.shape[ax] != 3:
        raise ValueError(f"cross: {name} has {x.shape[ax]} entries along its vector axis ({arg}="
                         f"{ax}, shape {x.shape}); the engine's cross takes 3-vectors (NumPy 2 "
                         "deprecates 2-vectors: pad them with a 0 third entry).")
    if ax != x.ndim - 1:
        x = permute(x, [i for i in range(x.ndim) if i != ax] + [ax])
    return x


@register(xp="matrix_transpose")
def matrix_transpose(x):
    """The last two axes swapped (``x.mT``)."""
    x = as_tensor(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose needs at least 2 dims, got shape {x.shape}.")
    return swapaxes(x, -1, -2)


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


# --- NumPy's reductions and scans (issue 19) ----------------------------------------

@register(kind="reduction", methods="prod", xp="prod")
def prod(x, axis=None, keepdims=False):
    """Product over axes (``ProdBackward0`` / ``ProdBackward1``); zeros handled exactly, as
    PyTorch: a slice's only zero gets the product of the others, the rest of it 0."""
    return Prod.apply(as_tensor(x), axis=axis, keepdims=keepdims)


@register(xp="var")   # method: PyTorch's t.var(dim, unbiased, keepdim, correction=) (methods)
def var(x, axis=None, *, ddof=0, keepdims=False):
    """NumPy's variance: ``sum((x - mean)**2) / (N - ddof)`` (``VarBackward0``)."""
    return Var.apply(as_tensor(x), axis=axis, keepdims=keepdims, ddof=ddof)


@register(xp="std")   # method: PyTorch's t.std(dim, unbiased, keepdim, correction=) (methods)
def std(x, axis=None, *, ddof=0, keepdims=False):
    """NumPy's standard deviation (``StdBackward0``); where it is 0 its gradient is 0, as
    PyTorch's (not nan)."""
    return Std.apply(as_tensor(x), axis=axis, keepdims=keepdims, ddof=ddof)


def _scan(cls, x, axis):
    x = as_tensor(x)
    if axis is None:   # NumPy: over the flattened array
        x, axis = Reshape.apply(x, shape=(-1,)), 0
    return cls.apply(x, axis=_axis(axis, x.ndim, cls.__name__.lower()))


def _axis(axis, ndim, what):
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what}: axis {axis} is out of bounds for a tensor of dimension "
                         f"{ndim}; use an axis in [{-ndim}, {ndim - 1}].")
    return int(axis) % ndim


@register(methods="cumsum", xp="cumsum")
def cumsum(x, axis=None):
    """Cumulative sum along ``axis`` (flattened if None): ``CumsumBackward0``."""
    return _scan(Cumsum, x, axis)


@register(methods="cumprod", xp="cumprod")
def cumprod(x, axis=None):
    """Cumulative product along ``axis`` (``CumprodBackward0``), exact with zeros: see
    ``reduction.Cumprod``."""
    return _scan(Cumprod, x, axis)


@register(kind="reduction", methods="nansum", xp="nansum")
def nansum(x, axis=None, keepdims=False):
    """Sum ignoring NaNs (composed: ``sum(where(isnan(x), 0, x))``; NaNs get gradient 0)."""
    x = as_tensor(x)
    # the mask as a Tensor of the data's type: under compile it is traced, not a constant
    return sum(where(Tensor._make(np.isnan(x.data)), 0.0, x), axis, keepdims)


@register(kind="reduction", methods="nanmean", xp="nanmean")
def nanmean(x, axis=None, keepdims=False):
    """Mean ignoring NaNs (composed: ``nansum / count``; NaNs get gradient 0)."""
    x = as_tensor(x)
    count = np.sum(~np.isnan(x.data), axis=axis, keepdims=keepdims)
    return nansum(x, axis, keepdims) / Tensor._make(count.astype(x.dtype))


@register(xp="average")
def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """NumPy's weighted average (composed: ``sum(a * w) / sum(w)``; ``weights`` may be a
    Tensor, differentiated too; 1-D weights along one ``axis`` as NumPy)."""
    a = as_tensor(a)
    if weights is None:
        out = mean(a, axis, keepdims)
        if not returned:
            return out
        n = a.size if axis is None else math.prod(a.shape[i] for i in _axes_of(axis, a.ndim))
        return out, as_tensor(np.full(out.shape, n, a.dtype), a)
    w = as_tensor(weights, a)
    if w.shape != a.shape:
        if axis is None or w.ndim != 1 or not isinstance(axis, (int, np.integer)):
            raise ValueError(f"average: weights of shape {w.shape} differ from a's {a.shape}; "
                             "give weights of a's shape, or 1-D weights with one int axis.")
        ax = _axis(axis, a.ndim, "average")
        if w.shape[0] != a.shape[ax]:
            raise ValueError(f"average: {w.shape[0]} weights for axis {ax} of length {a.shape[ax]}.")
        w = reshape(w, (1,) * ax + (w.shape[0],) + (1,) * (a.ndim - ax - 1))
    total = sum(broadcast_to(w, np.broadcast_shapes(w.shape, a.shape)), axis, keepdims)
    out = sum(a * w, axis, keepdims) / total
    return (out, total) if returned else out


def _axes_of(axis, ndim):
    return range(ndim) if axis is None else (
        [axis % ndim] if isinstance(axis, (int, np.integer)) else [ax % ndim for ax in axis])


@register(methods="trace", xp="trace")
def trace(x, offset=0, axis1=0, axis2=1):
    """Sum of a diagonal (composed: ``sum(diagonal(x, offset, axis1, axis2), -1)``; PyTorch
    records one ``TraceBackward0``, this records ``DiagonalBackward0`` and ``SumBackward``)."""
    return sum(diagonal(x, offset, axis1, axis2), -1)


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
        if split_size_or_sections <= 0 and not (split_size_or_sections == 0 and n == 0):
            raise ValueError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                             f"size of {n} and split_size {split_size_or_sections}; give a "
                             "positive chunk size, or a list of section sizes.")
        if split_size_or_sections == 0:
            return (x,)
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


# --- NumPy's shape functions (issue 19) ---------------------------------------------
# Pure conveniences are composed from the ops above (their nodes are the primitives':
# moveaxis is PermuteBackward0, ravel ViewBackward0...); flip, roll, tile, repeat, sort,
# diagonal, tril/triu and constant padding have Functions of their own (ops/shape.py).

def _axes_tuple(axis, ndim, what):
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = tuple(_axis(ax, ndim, what) for ax in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: repeated axis in {axis}.")
    return out


@register(methods="moveaxis movedim", xp="moveaxis")
def moveaxis(x, source, destination):
    """Move axes to new positions (composed: ``permute``, node ``PermuteBackward0``)."""
    x = as_tensor(x)
    src = _axes_tuple(source, x.ndim, "moveaxis")
    dst = _axes_tuple(destination, x.ndim, "moveaxis")
    if len(src) != len(dst):
        raise ValueError("moveaxis: `source` and `destination` must have the same number of "
                         f"elements; got {source} and {destination}.")
    order = [i for i in range(x.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return Permute.apply(x, axes=tuple(order))


@register(xp="rollaxis")
def rollaxis(x, axis, start=0):
    """NumPy's ``rollaxis`` (composed: ``permute``)."""
    x = as_tensor(x)
    n = x.ndim
    axis = _axis(axis, n, "rollaxis")
    if not -n <= start <= n:
        raise ValueError(f"rollaxis: start {start} is out of bounds; use one in [{-n}, {n}].")
    start = start % (n + 1) if start < 0 else start
    if axis < start:
        start -= 1
    if axis == start:
        return x
    order = [i for i in range(n) if i != axis]
    order.insert(start, axis)
    return Permute.apply(x, axes=tuple(order))


@register(xp="ravel")   # method: PyTorch's t.flatten(start_dim, end_dim) and t.ravel() (methods)
def ravel(x):
    """The elements as 1-D (composed: ``reshape(x, -1)``)."""
    return Reshape.apply(as_tensor(x), shape=(-1,))


def _atleast(x, n):
    x = as_tensor(x)
    shape = x.shape
    if x.ndim >= n:
        return x
    if n == 1 or x.ndim == 0:
        shape = (1,) * (n - x.ndim) + shape
    elif n == 2:
        shape = (1,) + shape
    else:   # atleast_3d: (n,) -> (1, n, 1), (m, n) -> (m, n, 1)
        shape = (1,) + shape + (1,) if x.ndim == 1 else shape + (1,)
    return Reshape.apply(x, shape=shape)


def _each(n, arys):
    out = [_atleast(a, n) for a in arys]
    return out[0] if len(out) == 1 else out


@register(xp="atleast_1d")
def atleast_1d(*arys):
    """NumPy's ``atleast_1d`` (composed: ``reshape``); several arguments give a list."""
    return _each(1, arys)


@register(xp="atleast_2d")
def atleast_2d(*arys):
    """NumPy's ``atleast_2d``: a 1-D ``(n,)`` becomes ``(1, n)`` (composed: ``reshape``)."""
    return _each(2, arys)


@register(xp="atleast_3d")
def atleast_3d(*arys):
    """NumPy's ``atleast_3d``: ``(n,)`` -> ``(1, n, 1)``, ``(m, n)`` -> ``(m, n, 1)``."""
    return _each(3, arys)


@register(xp="vstack")
def vstack(tup):
    """Stack rows (composed: ``concatenate`` of ``atleast_2d``)."""
    return concatenate([_atleast(t, 2) for t in _same_dtype(tup)], 0)


@register(xp="hstack")
def hstack(tup):
    """Stack columns: along axis 1, or axis 0 of 1-D arrays (composed: ``concatenate``)."""
    tensors = [_atleast(t, 1) for t in _same_dtype(tup)]
    return concatenate(tensors, 0 if tensors and tensors[0].ndim == 1 else 1)


@register(xp="dstack")
def dstack(tup):
    """Stack along axis 2 (composed: ``concatenate`` of ``atleast_3d``)."""
    return concatenate([_atleast(t, 3) for t in _same_dtype(tup)], 2)


@register(xp="column_stack")
def column_stack(tup):
    """1-D arrays as columns, 2-D ones as they are (composed: ``concatenate`` along axis 1)."""
    cols = [Reshape.apply(t, shape=(t.shape[0], 1)) if t.ndim == 1 else _atleast(t, 2)
            for t in _same_dtype(tup)]
    return concatenate(cols, 1)


@register(xp="append")
def append(arr, values, axis=None):
    """NumPy's ``append`` (composed: ``concatenate``; flattened when ``axis`` is None)."""
    arr, values = _pair(arr, values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


@register(xp="flip")   # method: PyTorch's t.flip(dims) (methods)
def flip(x, axis=None):
    """Reverse the order along ``axis`` (all axes if None): ``FlipBackward0``."""
    x = as_tensor(x)
    axes = tuple(range(x.ndim)) if axis is None else _axes_tuple(axis, x.ndim, "flip")
    return Flip.apply(x, axes=axes)


@register(methods="flipud", xp="flipud")
def flipud(x):
    """Flip axis 0 (composed: ``flip``)."""
    x = as_tensor(x)
    if x.ndim < 1:
        raise ValueError("flipud needs an array of at least 1 dimension.")
    return flip(x, 0)


@register(methods="fliplr", xp="fliplr")
def fliplr(x):
    """Flip axis 1 (composed: ``flip``)."""
    x = as_tensor(x)
    if x.ndim < 2:
        raise ValueError(f"fliplr needs an array of at least 2 dimensions; got shape {x.shape}.")
    return flip(x, 1)


@register(methods="rot90", xp="rot90")
def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane ``axes`` (composed: ``flip`` and
    ``permute``, as NumPy's own ``rot90``)."""
    m = as_tensor(m)
    if len(axes) != 2:
        raise ValueError("rot90: `axes` must name 2 axes.")
    if m.ndim < 2 or axes[0] % m.ndim == axes[1] % m.ndim:
        raise ValueError(f"rot90: axes {axes} must be two different axes of an array of at "
                         f"least 2 dimensions (shape {m.shape}).")
    a0, a1 = _axes_tuple(axes, m.ndim, "rot90")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(m, (a0, a1))
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return Permute.apply(flip(m, a1), axes=tuple(perm))
    return flip(Permute.apply(m, axes=tuple(perm)), a1)


@register(methods="roll", xp="roll")
def roll(x, shift, axis=None):
    """NumPy's ``roll`` (``RollBackward0``): ``shift`` and ``axis`` ints or tuples; with no
    axis over the flattened array.  PyTorch's ``t.roll(shifts, dims)`` is the same call."""
    x = as_tensor(x)
    if axis is None:
        return Roll.apply(x, shift=_shift(shift), axis=None)
    if isinstance(axis, (int, np.integer)):
        axis = _axis(axis, x.ndim, "roll")
        if not isinstance(shift, (int, np.integer)):
            axis = (axis,) * len(shift)
    else:
        axis = tuple(_axis(a, x.ndim, "roll") for a in axis)
    return Roll.apply(x, shift=_shift(shift), axis=axis)


def _shift(shift):
    return int(shift) if isinstance(shift, (int, np.integer)) else tuple(int(s) for s in shift)


@register(xp="tile")
def tile(x, reps):
    """NumPy's ``tile`` (PyTorch's ``repeat``: ``RepeatBackward0``)."""
    x = as_tensor(x)
    reps = (int(reps),) if isinstance(reps, (int, np.integer)) else tuple(int(r) for r in reps)
    if x.ndim < len(reps):
        x = Reshape.apply(x, shape=(1,) * (len(reps) - x.ndim) + x.shape)
    reps = (1,) * (x.ndim - len(reps)) + reps
    return Tile.apply(x, reps=reps)


@register(xp="repeat")   # method: PyTorch's t.repeat_interleave(repeats, dim) (methods)
def repeat(x, repeats, axis=None):
    """NumPy's ``repeat``: each element ``repeats`` times (an int, or one count per element)
    along ``axis`` (flattened if None): ``IndexSelectBackward0``, repeats' gradients summed."""
    x = as_tensor(x)
    if axis is None:
        x, axis = Reshape.apply(x, shape=(-1,)), 0
    axis = _axis(axis, x.ndim, "repeat")
    counts = np.asarray(repeats.data if isinstance(repeats, Tensor) else repeats)
    if counts.dtype.kind not in "iub" or (counts < 0).any():
        raise ValueError(f"repeat: repeats must be non-negative integers; got {repeats!r}.")
    if counts.ndim > 1 or (counts.ndim == 1 and counts.size not in (1, x.shape[axis])):
        raise ValueError(f"repeat: {counts.size} counts for an axis of length "
                         f"{x.shape[axis]}; give one count, or one per element.")
    idx = np.repeat(np.arange(x.shape[axis]), counts.reshape(-1) if counts.ndim else counts)
    return IndexSelect.apply(x, idx=idx, axis=axis)


@register
def repeat_interleave(x, repeats, dim=None):
    """PyTorch's ``repeat_interleave`` (NumPy's ``repeat``)."""
    return repeat(x, repeats, dim)


@register(methods="diff", xp="diff")
def diff(a, n=1, axis=-1, prepend=None, append=None):
    """n-th discrete difference along ``axis`` (composed: slices and ``sub``, as PyTorch's)."""
    a = as_tensor(a)
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative; got {n}.")
    axis = _axis(axis, a.ndim, "diff")
    parts = []
    for extra in (prepend, a, append):
        if extra is None:
            continue
        t = as_tensor(extra, a)
        if t.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            t = broadcast_to(t, tuple(shape))
        parts.append(t)
    if len(parts) > 1:
        a = concatenate(parts, axis)
    lead = (slice(None),) * axis
    for _ in range(n):
        a = a[lead + (slice(1, None),)] - a[lead + (slice(None, -1),)]
    return a


def _sections(x, indices_or_sections, axis, equal):
    n = x.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        s = int(indices_or_sections)
        if s <= 0:
            raise ValueError(f"split: the number of sections must be positive; got {s}.")
        if equal and n % s:
            raise ValueError(f"array split does not result in an equal division: {n} elements "
                             f"in {s} sections; use array_split for unequal sections.")
        sizes = [n // s + 1] * (n % s) + [n // s] * (s - n % s)
        cuts = tuple(np.cumsum(sizes)[:-1].tolist())
    else:
        cuts = tuple(builtins.min(builtins.max(int(i) + (n if i < 0 else 0), 0), n)
                     for i in indices_or_sections)
        if any(b < a for a, b in zip(cuts, cuts[1:])):
            raise ValueError(f"split: cut indices {list(indices_or_sections)} must be increasing.")
    return list(Split.apply(x, indices=cuts, axis=axis)) if cuts else [x[...]]


@register(xp="split")   # the torch-style op `split` (the Tensor method) keeps its meaning
def numpy_split(x, indices_or_sections, axis=0):
    """NumPy's ``split``: ``sections`` equal parts (an int), or cut at the given indices
    (``SplitBackward0``)."""
    x = as_tensor(x)
    return _sections(x, indices_or_sections, _axis(axis, x.ndim, "split"), True)


@register(xp="array_split")
def array_split(x, indices_or_sections, axis=0):
    """NumPy's ``array_split``: like ``split``, the first ``n % sections`` parts one longer."""
    x = as_tensor(x)
    return _sections(x, indices_or_sections, _axis(axis, x.ndim, "array_split"), False)


@register(xp="vsplit")
def vsplit(x, indices_or_sections):
    x = as_tensor(x)
    if x.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions.")
    return numpy_split(x, indices_or_sections, 0)


@register(xp="hsplit")
def hsplit(x, indices_or_sections):
    x = as_tensor(x)
    if x.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions.")
    return numpy_split(x, indices_or_sections, 1 if x.ndim > 1 else 0)


@register(xp="dsplit")
def dsplit(x, indices_or_sections):
    x = as_tensor(x)
    if x.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions.")
    return numpy_split(x, indices_or_sections, 2)


@register(xp="sort")   # method: PyTorch's t.sort(dim, descending) -> (values, indices) (methods)
def sort(x, axis=-1, *, descending=False):
    """Sorted along ``axis`` (flattened if None), stable: ``SortBackward0``; ties keep their
    order (also ``descending``, as ``torch.sort(stable=True)``)."""
    x = as_tensor(x)
    if axis is None:
        x, axis = Reshape.apply(x, shape=(-1,)), 0
    return Sort.apply(x, axis=_axis(axis, x.ndim, "sort"), descending=descending)


@register(methods="take", xp="take")
def take(x, indices, axis=None):
    """NumPy's ``take`` (composed: ``IndexSelectBackward0`` on the flattened array when
    ``axis`` is None); repeated indices' gradients are summed."""
    x = as_tensor(x)
    idx = np.asarray(indices.data if isinstance(indices, Tensor) else indices)
    if idx.size == 0:
        idx = idx.astype(np.intp)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"take: indices must be integers; got dtype {idx.dtype}.")
    if axis is None:
        x, axis = Reshape.apply(x, shape=(-1,)), 0
    axis = _axis(axis, x.ndim, "take")
    n = x.shape[axis]
    if idx.size and (idx.max() >= n or idx.min() < -n):
        raise IndexError(f"take: index out of bounds for an axis of length {n}.")
    flat = IndexSelect.apply(x, idx=idx.reshape(-1) % builtins.max(n, 1), axis=axis)
    if idx.ndim == 1:
        return flat
    return reshape(flat, x.shape[:axis] + idx.shape + x.shape[axis + 1:])


@register(xp="take_along_axis")
def take_along_axis(x, indices, axis):
    """NumPy's ``take_along_axis`` (PyTorch's gather: ``GatherBackward0``)."""
    x = as_tensor(x)
    idx = np.asarray(indices.data if isinstance(indices, Tensor) else indices)
    if axis is None:
        x, axis = Reshape.apply(x, shape=(-1,)), 0
    if idx.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices of {idx.ndim} dims for an array of "
                         f"{x.ndim}; they must have the same number of dimensions.")
    return TakeAlongAxis.apply(x, indices=idx, axis=_axis(axis, x.ndim, "take_along_axis"))


@register(methods="diagonal", xp="diagonal")
def diagonal(x, offset=0, axis1=0, axis2=1):
    """NumPy's ``diagonal``: the diagonal as the last axis (``DiagonalBackward0``).  PyTorch's
    ``t.diagonal(offset, dim1, dim2)`` is the same call."""
    x = as_tensor(x)
    if x.ndim < 2:
        raise ValueError(f"diagonal needs at least 2 dimensions; got shape {x.shape}.")
    a1, a2 = _axis(axis1, x.ndim, "diagonal"), _axis(axis2, x.ndim, "diagonal")
    if a1 == a2:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same.")
    return Diagonal.apply(x, offset=int(offset), axis1=a1, axis2=a2)


@register(xp="diag")
def diag(v, k=0):
    """NumPy's ``diag``: a 1-D ``v`` on the ``k``-th diagonal of a square matrix
    (``DiagEmbedBackward0``), or the ``k``-th diagonal of a 2-D ``v`` (``DiagonalBackward0``)."""
    v = as_tensor(v)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError(f"diag: input must be 1-D or 2-D; got shape {v.shape}.")
    k = int(k)
    n = v.shape[0] + builtins.abs(k)
    rows = np.arange(v.shape[0]) + builtins.max(-k, 0)
    return DiagEmbed.apply(v, key=(rows, rows + k), shape=(n, n), accumulate=False)


@register(methods="tril", xp="tril")
def tril(x, k=0):
    """Lower triangle (``TrilBackward0``); the rest zeros."""
    x = as_tensor(x)
    if x.ndim < 2:
        raise ValueError(f"tril needs at least 2 dimensions; got shape {x.shape}.")
    return Tril.apply(x, k=int(k))


@register(methods="triu", xp="triu")
def triu(x, k=0):
    """Upper triangle (``TriuBackward0``); the rest zeros."""
    x = as_tensor(x)
    if x.ndim < 2:
        raise ValueError(f"triu needs at least 2 dimensions; got shape {x.shape}.")
    return Triu.apply(x, k=int(k))


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


@register(xp="pad")
def pad(x, pad_width, mode="constant", constant_values=0):
    """NumPy's ``pad`` in modes constant (``ConstantPadNdBackward0``; ``constant_values`` a
    number or per-axis (before, after) pairs) and edge / reflect / symmetric / wrap
    (composed: a gather of the edge elements per axis, ``IndexSelectBackward0``, the
    gradients of repeated elements summed)."""
    x = as_tensor(x)
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode {mode!r} is not supported; use one of {_PAD_MODES}.")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2))
    if (widths < 0).any():
        raise ValueError(f"pad: pad widths must be non-negative; got {pad_width!r}.")
    widths = tuple((int(b), int(a)) for b, a in widths)
    if mode == "constant":
        values = np.broadcast_to(np.asarray(constant_values, dtype=x.dtype), (x.ndim, 2))
        if (values == values.flat[0]).all():
            return ConstantPadNd.apply(x, pad_width=widths, value=values.flat[0])
        for ax in range(x.ndim):   # different values per side: one axis at a time, as NumPy
            w = tuple(widths[ax] if i == ax else (0, 0) for i in range(x.ndim))
            before = ConstantPadNd.apply(x, pad_width=w, value=values[ax, 0])
            x = where(np.arange(before.shape[ax]).reshape((-1,) + (1,) * (x.ndim - ax - 1))
                      < widths[ax][0] + x.shape[ax], before,
                      as_tensor(np.asarray(values[ax, 1], x.dtype), x))
        return x
    for ax, (b, a) in enumerate(widths):
        if b == 0 and a == 0:
            continue
        n = x.shape[ax]
        if n == 0:
            raise ValueError(f"pad: can't extend the empty axis {ax} in mode {mode!r}.")
        idx = np.pad(np.arange(n), (b, a), mode=mode)
        x = IndexSelect.apply(x, idx=idx, axis=ax)
    return x


@register(xp="select")
def select(condlist, choicelist, default=0):
    """NumPy's ``select``: where the first true condition picks its choice, else ``default``
    (composed: ``where``, conditions not differentiated)."""
    if len(condlist) != len(choicelist):
        raise ValueError("select: list of cases must be same length as list of conditions.")
    like = next((c for c in choicelist if type(c) is Tensor), None)
    out = as_tensor(default, like)
    for cond, choice in zip(reversed(condlist), reversed(choicelist)):
        out = where(cond, choice, out)
    return out


@register(xp="linspace")
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """NumPy's ``linspace``, differentiable in ``start`` and ``stop`` when they are Tensors
    (composed: ``start + t * (stop - start)``, ``t = arange(num) / div``; with ``endpoint``
    the last value is ``stop`` exactly).  Array-valued start/stop put the samples on ``axis``."""
    num = int(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative.")
    if type(start) is not Tensor and type(stop) is not Tensor:
        out = Tensor(np.linspace(_plain(start), _plain(stop), num, endpoint, dtype=dtype, axis=axis))
        if retstep:
            return out, np.linspace(_plain(start), _plain(stop), num, endpoint, True, axis=axis)[1]
        return out
    start, stop = _pair(start, stop)
    div = (num - 1) if endpoint else num
    shape = np.broadcast_shapes(start.shape, stop.shape)
    frac = np.arange(num, dtype=start.dtype).reshape((-1,) + (1,) * len(shape))
    if div > 0:
        frac = frac / div
    delta = stop - start
    out = start + as_tensor(frac, start) * delta
    if endpoint and num > 1:
        last = np.zeros((num,) + (1,) * len(shape), bool)
        last[-1] = True
        out = where(last, broadcast_to(stop, shape), out)
    if axis != 0:
        out = moveaxis(out, 0, axis)
    if dtype is not None:
        out = astype(out, dtype)
    if retstep:
        return out, (delta / div if div > 0 else delta * np.nan)
    return out


def _plain(x):
    return x.data if isinstance(x, Tensor) else x


@register(xp="array")
def array(object, dtype=None):
    """A Tensor from a Tensor, an array, or a (nested) list of Tensors and numbers: the
    Tensors are stacked, so the result is differentiated through them (HIPS autograd's
    ``array_from_args``); without any Tensor, a constant (a copy)."""
    if isinstance(object, Tensor):
        out = object
    elif isinstance(object, (list, tuple)) and array_has_tensor(object):
        out = _stack_nested(object, _first_tensor(object))
    elif isinstance(object, np.ndarray):
        return Tensor(object.copy(), dtype=dtype)
    else:   # numbers and lists of numbers as the Tensor constructor takes them
        return Tensor(object, dtype=dtype)
    return out if dtype is None else astype(out, dtype)


def array_has_tensor(obj):
    if isinstance(obj, Tensor):
        return True
    return isinstance(obj, (list, tuple)) and builtins.any(array_has_tensor(o) for o in obj)


def _first_tensor(obj):
    if isinstance(obj, Tensor):
        return obj
    for o in obj:
        t = _first_tensor(o) if isinstance(o, (list, tuple, Tensor)) else None
        if t is not None:
            return t
    return None


def _stack_nested(obj, like):
    if isinstance(obj, (list, tuple)):
        if not array_has_tensor(obj):
            return as_tensor(np.asarray(obj, dtype=like.dtype), like)
        parts = [_stack_nested(o, like) for o in obj]
        shapes = {p.shape for p in parts}
        if len(shapes) > 1:
            raise ValueError(f"array: the nested sequence is ragged (shapes {sorted(shapes)}); "
                             "every element at one level must have the same shape.")
        return Stack.apply(*parts, axis=0)
    return obj if isinstance(obj, Tensor) else as_tensor(np.asarray(obj, dtype=like.dtype), like)


# --- indexing and in-place --------------------------------------------------------

def _normalize_key(key):
    if isinstance(key, Tensor):
        return _index_data(key)
    if isinstance(key, tuple):
        return tuple(_index_data(k) if isinstance(k, Tensor) else k for k in key)
    if isinstance(key, list):
        return np.asarray(key)
    return key


def _index_data(t: Tensor):
    """An index tensor's array; a float one is refused as PyTorch refuses it."""
    if t.dtype.kind not in "iub":
        raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors; this "
                         f"one is {t.dtype} (Tensor([...]) makes floats): index with integers, "
                         "e.g. x[Tensor(np.array([0, 1, 1]))] or x[[0, 1, 1]].")
    return t.data


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
        if hooked and t.grad_fn is not None:
            t.grad_fn.unhook_tensor(t)
        t.grad_fn, t.output_nr, t._requires_grad = result.grad_fn, 0, True
        if hooked:
            t.grad_fn.hook_tensor(t)


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
