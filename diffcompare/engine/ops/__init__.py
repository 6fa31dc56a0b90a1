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
import operator

import numpy as np

from .. import grad_mode
from ..function import AccumulateGrad
from ..tensor import Tensor, _const, _register_on_node, _unregister_from_node
from .linalg import Einsum, Matmul, parse_einsum
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
abs     = _unary(ew.Abs,     methods="abs __abs__",                              xp="abs")
clone   = _unary(ew.Clone,   methods="clone")
add     = _binary(ew.Add,    methods="__add__ __radd__ __iadd__ add_",           xp="add")
sub     = _binary(ew.Sub,    methods="__sub__ __rsub__ __isub__ sub_",           xp="subtract")
mul     = _binary(ew.Mul,    methods="__mul__ __rmul__ __imul__ mul_",           xp="multiply")
div     = _binary(ew.Div,    methods="__truediv__ __rtruediv__ __itruediv__ div_", xp="divide")
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


@register(xp="trace")
def trace(x, offset=0, axis1=0, axis2=1):
    """NumPy's ``trace``: the sum of the diagonal (``offset`` from the main one) over
    ``axis1``/``axis2`` (default the first two, as NumPy; PyTorch's is the 2-D case)."""
    x = as_tensor(x)
    if x.ndim < 2:
        raise ValueError(f"trace needs at least 2 dims, got shape {x.shape}.")
    a1, a2 = axis1 % x.ndim, axis2 % x.ndim
    if a1 == a2:
        raise ValueError("trace: axis1 and axis2 must be different axes.")
    rest = [i for i in range(x.ndim) if i not in (a1, a2)]
    x = permute(x, rest + [a1, a2])
    n1, n2 = x.shape[-2:]
    lo, hi = (0, offset) if offset >= 0 else (-offset, 0)
    m = builtins.max(0, builtins.min(n1 - lo, n2 - hi))
    x = x[..., lo:lo + m, hi:hi + m]
    labels = _A[:len(rest)]
    return Einsum.apply(x, ins=(labels + "zz",), out=labels)


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
