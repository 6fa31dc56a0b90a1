"""Reductions over axes (with ``keepdims``): sum, mean, max, min, logsumexp, prod, var,
std; and the scans cumsum and cumprod.

The backward of a reduction puts the reduced axes back (as size 1) and
broadcasts the gradient over them.  ``max``/``min`` with ties split the
gradient evenly between the tied elements.
"""
from __future__ import annotations

import math

import numpy as np

from ..function import Function
from ..tensor import Tensor
from .. import kernels
from . import dual
from .shape import Flip


def normalize_axes(axis, ndim: int):
    """``axis`` as a sorted tuple of non-negative ints (``None`` = all axes)."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for ax in axes:
        if not -ndim <= ax < max(ndim, 1):
            raise ValueError(
                f"axis {ax} is out of bounds for a tensor of dimension {ndim}; "
                f"use an axis in [{-ndim}, {ndim - 1}]."
            )
        out.append(int(ax) % max(ndim, 1))
    return tuple(sorted(set(out)))


class _Reduction(Function):
    """Shared bookkeeping: the input shape and the keepdims shape of the result."""

    def _setup(self, a, axis, keepdims):
        self.in_shape = shape = a.data.shape
        self.keepdims = keepdims
        if axis is None:   # the common full reduction, without the general bookkeeping
            self.axes = axes = tuple(range(len(shape)))
            self.keep_shape = (1,) * len(shape)
            return axes
        ndim = len(shape)
        if type(axis) is int and -ndim <= axis < ndim:   # one axis (sum(x, axis=1)): no loops
            ax = axis % ndim
            self.axes = axes = (ax,)
            self.keep_shape = shape[:ax] + (1,) + shape[ax + 1:]
            return axes
        self.axes = axes = normalize_axes(axis, ndim)
        self.keep_shape = tuple(1 if i in axes else n for i, n in enumerate(shape))
        return axes

    def _drop_axes(self, out):
        """A keepdims result without the reduced axes."""
        shape, axes = self.in_shape, self.axes
        if len(axes) == 1:
            return out.reshape(shape[:axes[0]] + shape[axes[0] + 1:])
        return out.reshape([n for i, n in enumerate(shape) if i not in axes])

    def _expand(self, g):
        """The output gradient broadcast back over the reduced axes."""
        if type(g) in _ONE_ELEMENT_TYPES and g.size == 1:
            # a full reduction's gradient (a NumPy scalar after `g / count`): spread by
            # zero strides, no reshape needed
            return kernels.broadcast_to(g, self.in_shape)
        if not self.keepdims:
            g = g.reshape(self.keep_shape)
        return dual.broadcast_to(g, self.in_shape)


_ONE_ELEMENT_TYPES = (np.ndarray, np.float64, np.float32, np.float16, np.longdouble)


class Sum(_Reduction):
    def forward(self, a, axis=None, keepdims=False):
        return kernels.add_reduce(a.data, self._setup(a, axis, keepdims), keepdims)

    def backward(self, g):
        return self._expand(g)


class Mean(_Reduction):
    def forward(self, a, axis=None, keepdims=False):
        axes = self._setup(a, axis, keepdims)
        self.count = count = a.data.size if axis is None else math.prod(a.shape[i] for i in axes)
        total = kernels.add_reduce(a.data, axes, keepdims)
        if count == 0:   # the mean of nothing is nan (PyTorch, NumPy), without NumPy's warning
            return np.full_like(total, np.nan)
        # add.reduce / count is what ndarray.mean does, without its Python wrapper
        return total / count

    def backward(self, g):
        if not self.count:   # nothing was averaged: the (empty) gradient is zeros
            return dual.zeros(self.in_shape, g)
        return self._expand(g / self.count)


class _Extremum(_Reduction):
    """max/min over axes; tied elements share the gradient evenly."""

    ufunc = None

    def forward(self, a, axis=None, keepdims=False):
        axes = self._setup(a, axis, keepdims)
        x = a.data
        out = kernels.extreme_reduce(x, axes, type(self).ufunc)
        if self.needs_input_grad:
            hit = x == out
            if type(hit) is np.ndarray and np.count_nonzero(hit) == out.size and not np.isnan(out).any():
                self.share = hit   # no ties (each maximum hit once): the mask is the share
            else:
                self.share = hit / hit.sum(axis=axes, keepdims=True)
        return out if keepdims else self._drop_axes(out)

    def backward(self, g):
        share = self.share
        if share.dtype != bool:
            share = share.astype(g.dtype, copy=False)
        return self._expand(g) * share


class Max(_Extremum):
    ufunc = np.maximum


class Min(_Extremum):
    ufunc = np.minimum


class LogSumExp(_Reduction):
    """log(sum(exp(x))) computed stably (shifted by the max).

    Saves what PyTorch saves (``self``, ``result``) and, for an ordinary backward,
    what the forward has at hand: ``exp`` = exp(x - max) and its sum ``sum_exp``,
    so that the gradient softmax * g is ``exp * (g / sum_exp)``: PyTorch's backward
    recomputes exp(x - result), one exp per element, the costliest step of the op,
    and dividing by the sum in the output's shape (not x's) saves a pass over x.
    A backward with ``create_graph`` uses the recorded formula on ``self`` and
    ``result`` instead.
    """

    saves_result = True

    def forward(self, a, axis=None, keepdims=False):
        axes = self._setup(a, axis, keepdims)
        self.save_for_backward(self=a)
        x = a.data
        # initial=-inf: over a zero-size axis the max is -inf and the result log(0) = -inf
        m = kernels.extreme_reduce(x, axes, np.maximum, initial=-np.inf)
        if type(m) is np.ndarray and math.isfinite(np.add.reduce(m, axis=None)):
            # every max finite (a finite sum says so): exp(x - m) <= 1 with a 1 in each
            # slice, so the sum is >= 1 and neither the log nor the division can warn
            out = self._log_sum(x, m, axes)
        else:   # an inf or nan max, or an empty axis: shift by 0 there, and log(0) = -inf
            self.finite = False
            m = np.where(np.isfinite(m), m, 0)
            with np.errstate(divide="ignore"):
                out = self._log_sum(x, m, axes)
        return out if self.keepdims else self._drop_axes(out)

    finite = True   # every max was finite: the sums are >= 1, the backward cannot warn

    def _log_sum(self, x, m, axes):
        e = kernels.exp_in_place(x - m)
        total = kernels.add_reduce(e, axes, True)
        if self.needs_input_grad and np.ndim(e):
            # (a traced forward saves them too: the compiled backward reads exp, not recomputes it)
            self.save_for_backward(exp=Tensor._make(e), sum_exp=Tensor._make(total))
        return np.log(total) + m

    def backward(self, g):
        if self._as_tensor:   # create_graph: recorded ops on the input and the result
            a = self.saved_value("self")
            out = self.saved_value("result")
            if not self.keepdims:
                out = out.reshape(self.keep_shape)
            return self._expand(g) * dual.exp(a - out)
        if not self.keepdims:
            g = g.reshape(self.keep_shape)
        saved = self.saved_tensors          # checks every saved tensor's version
        if "exp" in self._saved:
            if self.finite:
                return saved[1] * (g / saved[2])
            with np.errstate(divide="ignore", invalid="ignore"):   # 0/0 as exp(x - out) gives
                return saved[1] * (g / saved[2])
        a, out = saved
        if not self.keepdims:
            out = out.reshape(self.keep_shape)
        return kernels.exp_in_place(a - out) * g   # softmax(a) * g


# --- prod, var/std and the scans cumsum/cumprod (NumPy's differentiable reductions) ---------
#
# Each backward is written with operators and the array-or-Tensor helpers below, so one
# formula serves an ordinary backward (arrays), create_graph (Tensors, recorded again) and
# compile (Tracers: np.cumsum, np.cumprod, np.flip are on the tracer's whitelist).

def _data(x):
    """The array of a Tensor (masks of a create_graph backward are constants), else ``x``."""
    return x.data if type(x) is Tensor else x


def _ones(shape, like):
    ones = np.ones(shape, like.dtype)
    return Tensor._make(ones) if type(like) is Tensor else ones


def flip(x, axes: tuple):
    """``np.flip`` of an array or Tracer; ``FlipBackward0`` recorded on a Tensor."""
    return Flip.apply(x, axes=axes) if type(x) is Tensor else np.flip(x, axes)


def cumsum(x, axis: int):
    return Cumsum.apply(x, axis=axis) if type(x) is Tensor else np.cumsum(x, axis)


def cumprod(x, axis: int):
    return Cumprod.apply(x, axis=axis) if type(x) is Tensor else np.cumprod(x, axis)


def reverse_cumsum(x, axis: int):
    """``out[i] = sum(x[i:])`` along ``axis`` (exactly: the flipped cumsum, no subtraction)."""
    return flip(cumsum(flip(x, (axis,)), axis), (axis,))


class Prod(_Reduction):
    """Product over axes (``ProdBackward0`` over all elements, ``ProdBackward1`` over axes,
    as PyTorch names them).

    Gradient: without zeros ``g * prod / x``; with zeros (PyTorch's ``prod_backward``) the
    exact product of the other elements of each slice, as the exclusive cumulative
    products from the left times those from the right: an element that is a slice's only
    zero gets the product of the rest, every other element of a slice with a zero gets 0,
    and with two or more zeros all get 0.  No division by zero anywhere.
    """

    saves_result = True

    def forward(self, a, axis=None, keepdims=False):
        axes = self._setup(a, axis, keepdims)
        self.full = axis is None
        self.save_for_backward(self=a)
        out = np.prod(a.data, axis=axes, keepdims=True)
        return out if keepdims else self._drop_axes(out)

    def name(self):
        return "ProdBackward0" if self.full else "ProdBackward1"

    def backward(self, g):
        x = self.saved_value("self")
        ge = self._expand(g)
        if not (_data(x) == 0).any():   # (on a Tracer: a guard, the branch is re-checked)
            y = self.saved_value("result")
            if not self.keepdims:
                y = y.reshape(self.keep_shape)
            return ge * (y / x)
        return ge * _others_product(x, self.axes)


def _others_product(x, axes):
    """For each element, the product of the other elements of its slice over ``axes``."""
    nd = x.ndim
    rest = [i for i in range(nd) if i not in axes]
    perm = tuple(rest + list(axes))
    xm = dual.permute(x, perm)
    moved = xm.shape
    lead = moved[:len(rest)]
    xm = xm.reshape(lead + (math.prod(moved[len(rest):]),))
    left = _exclusive_cumprod(xm)
    right = flip(_exclusive_cumprod(flip(xm, (-1,))), (-1,))
    out = (left * right).reshape(moved)
    inverse = [0] * nd
    for i, ax in enumerate(perm):
        inverse[ax] = i
    return dual.permute(out, tuple(inverse))


def _exclusive_cumprod(x):
    """``out[..., i] = prod(x[..., :i])`` along the last axis (1 first)."""
    ones = _ones(x.shape[:-1] + (1,), x)
    return cumprod(dual.concatenate([ones, x[..., :-1]], -1), -1)


class Cumsum(Function):
    """Cumulative sum along ``axis``; the gradient is the reversed cumulative sum of ``g``."""

    def forward(self, a, axis):
        self.axis = axis
        return np.cumsum(a.data, axis)

    def backward(self, g):
        return reverse_cumsum(g, self.axis)


class Cumprod(Function):
    """Cumulative product along ``axis``, zeros handled exactly (PyTorch's ``cumprod_backward``).

    ``dy_i/dx_k = prod(x[j] for j <= i if j != k)`` for ``i >= k``.  Without zeros the
    gradient is ``reverse_cumsum(g * y) / x``.  With a zero, per slice, at its first zero
    ``z``: before ``z`` the same formula (those x are not zero); at ``z`` the reversed
    cumulative sum of ``g * cumprod(x with x[z] = 1)``; after ``z`` zero, as PyTorch.
    """

    saves_result = True

    def forward(self, a, axis):
        self.axis = axis
        self.save_for_backward(self=a)
        return np.cumprod(a.data, axis)

    def backward(self, g):
        return _cumprod_grad(g, self.saved_value("self"), self.saved_value("result"), self.axis)


def _cumprod_grad(g, x, y, axis):
    """The gradient of ``sum(g * y)``, ``y = cumprod(x, axis)``, in ``x`` (see ``Cumprod``)."""
    zero = _data(x) == 0
    if not zero.any():
        return reverse_cumsum(g * y, axis) / x
    seen = np.cumsum(zero, axis)
    before = seen == 0                      # constant masks (Tracers when compiled)
    first = zero & (seen == 1)
    out = dual.where(before, reverse_cumsum(g * y, axis) / dual.where(before, x, 1.0))
    x1 = dual.where(~first, x, 1.0)         # x with its first zero set to 1
    y1 = cumprod(x1, axis)
    out = out + dual.where(first, reverse_cumsum(g * y1, axis))
    if type(x) is Tensor:
        # create_graph: after the first zero the gradient is x[z] * (x1's gradient there),
        # 0 in value but not in its derivative in x[z] (a second derivative torch has too)
        xz = dual.where(first, x).sum(axis=axis, keepdims=True)
        out = out + dual.where((seen > 0) & ~first, xz * _cumprod_grad(g, x1, y1, axis))
    return out


class Var(_Reduction):
    """Variance over axes with ``ddof`` (NumPy's; PyTorch's ``correction``): ``VarBackward0``.

    Gradient ``g * 2 (x - mean) / (N - ddof)``.
    """

    def forward(self, a, axis=None, keepdims=False, ddof=0):
        axes = self._setup(a, axis, keepdims)
        x = a.data
        self.count = n = math.prod(x.shape[i] for i in axes)
        self.denom = n - ddof
        self.save_for_backward(self=a)
        with np.errstate(divide="ignore", invalid="ignore"):   # NumPy's nan/inf, no warning
            d = x - kernels.add_reduce(x, axes, True) / n
            out = kernels.add_reduce(d * d, axes, True) / self.denom
            out = self._finish(out)
        return out if keepdims else self._drop_axes(out)

    def _finish(self, var):
        return var

    def _centered(self):
        x = self.saved_value("self")
        return x - dual.sum(x, self.axes, True) / self.count

    def backward(self, g):
        with np.errstate(divide="ignore", invalid="ignore"):
            return self._expand(g) * self._centered() * (2.0 / self.denom if self.denom else np.inf)


class Std(Var):
    """Standard deviation over axes with ``ddof``: ``StdBackward0``.

    Gradient ``g * (x - mean) / ((N - ddof) * std)``; where the std is 0 (all elements of
    the slice equal) the gradient is 0, as PyTorch's (it masks that slice), not nan.
    """

    saves_result = True

    def _finish(self, var):
        return np.sqrt(var)

    def backward(self, g):
        std = self.saved_value("result")
        if not self.keepdims:
            g = g.reshape(self.keep_shape)
            std = std.reshape(self.keep_shape)
        flat = _data(std) == 0
        denom = self.denom if self.denom else np.inf
        coef = dual.where(~flat, g / (dual.where(~flat, std, 1.0) * denom))
        return self._expand(coef) * self._centered()
