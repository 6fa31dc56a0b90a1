"""Shape ops: reshape, permute, broadcast, indexing, unbind/split, stack/concatenate, and
NumPy's flip, roll, tile, repeat (index select), take_along_axis, sort, diagonal, diag,
tril/triu and constant padding.

These move values around without arithmetic, so each backward moves the
gradient back the same way.  Views (reshape, permute, basic indexing, unbind,
split) share memory and the version counter with their input, as in PyTorch.
Multi-output ops (``Unbind``, ``Split``) are one node; each output tensor
knows its ``output_nr``.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..function import Function
from .. import kernels
from . import dual


class Reshape(Function):
    is_view = True

    def forward(self, a, shape):
        self.in_shape = a.shape
        return a.data.reshape(shape)

    def backward(self, g):
        return g.reshape(self.in_shape)


@dual.records("permute")
class Permute(Function):
    is_view = True

    def forward(self, a, axes):
        ndim = a.ndim
        if axes is None:   # reverse the dims (x.T): always a permutation
            self.axes = tuple(range(ndim - 1, -1, -1))
            return a.data.transpose()
        self.axes = tuple(ax % ndim for ax in axes) if ndim else ()
        if sorted(self.axes) != list(range(ndim)):
            raise ValueError(
                f"permute needs a permutation of all {ndim} dims of shape {a.shape}; got {axes}."
            )
        return a.data.transpose(self.axes)

    def backward(self, g):
        inverse = [0] * len(self.axes)
        for i, ax in enumerate(self.axes):
            inverse[ax] = i
        return dual.permute(g, tuple(inverse))


@dual.records("broadcast_to")
class BroadcastTo(Function):
    def forward(self, a, shape):
        self.in_shape = a.shape
        return np.broadcast_to(a.data, shape)

    def backward(self, g):
        return dual.sum_to(g, self.in_shape)


@dual.records("sum_to")
class SumTo(Function):
    """Sum a broadcast array back to ``shape`` (the adjoint of ``BroadcastTo``)."""

    def forward(self, a, shape):
        self.in_shape = a.shape
        return dual.sum_to(a.data, shape)

    def backward(self, g):
        return dual.broadcast_to(g, self.in_shape)


def is_basic_index(key) -> bool:
    """True for keys made of ints, slices, None and Ellipsis (NumPy returns a view)."""
    for k in (key if isinstance(key, tuple) else (key,)):
        if not (type(k) is slice or type(k) is int or k is None or k is Ellipsis
                or isinstance(k, (int, np.integer))):
            return False
    return True


class Index(Function):
    """``a[key]`` with advanced indexing (a copy); ``IndexView`` is basic indexing."""

    basic = False   # advanced indices may repeat: the backward sums them

    def forward(self, a, key):
        self.key = key
        self.in_shape = a.shape
        return kernels.take_rows(a.data, key)

    def backward(self, g):
        return dual.index_add(g, self.key, self.in_shape, accumulate=not self.basic)


class IndexView(Index):
    """Basic indexing (ints, slices): a NumPy view, so it shares the version counter."""

    is_view = True
    basic = True

    def forward(self, a, key):
        # x[2] is a scalar copy in NumPy; x[2, ...] is a 0-d view of the same memory
        if type(key) is tuple:
            if Ellipsis not in key:
                key = key + (Ellipsis,)
        elif key is not Ellipsis:
            key = (key, Ellipsis)
        self.key = key
        self.in_shape = a.shape
        return a.data[key]

    def name(self):
        return "IndexBackward0"


@dual.records("index_add")
class IndexAdd(Function):
    """Zeros of ``shape`` with the input added at ``key``: the backward of ``Index``."""

    def forward(self, a, key, shape, accumulate):
        self.key = key
        return kernels.index_add(a.data, key, shape, accumulate)

    def backward(self, g):
        return g[self.key]


class IndexPut(Function):
    """``a`` with ``a[key] = value``: what item assignment records (PyTorch's CopySlices)."""

    broadcasts = True

    def forward(self, a, value, key):
        self.key = key
        out = a.data.copy()
        out[key] = value.data
        return out

    def backward(self, g):
        need_a, need_v = self.needs_input_grad
        ga = None
        if need_a:
            mask = np.ones(g.shape, dtype=bool)
            mask[self.key] = False
            ga = dual.where(mask, g)
        gv = g[self.key] if need_v else None
        return ga, gv


@dual.records("unbind")
class Unbind(Function):
    """One node, one output per slice along ``axis``; output i is ``output_nr`` i."""

    is_view = True

    def forward(self, a, axis=0):
        self.axis = axis
        moved = np.moveaxis(a.data, axis, 0)
        out = tuple(moved[i, ...] for i in range(len(moved)))   # views, also when 0-d
        self.out_shapes = [o.shape for o in out]
        return out

    def backward(self, *grads):
        return dual.stack(_fill_zeros(grads, self.out_shapes), self.axis)


@dual.records("split_at")
class Split(Function):
    """Split along ``axis`` at cut points ``indices``; one node, several outputs."""

    is_view = True

    def forward(self, a, indices, axis=0):
        self.axis = axis
        out = tuple(np.split(a.data, indices, axis))
        self.out_shapes = [o.shape for o in out]
        return out

    def backward(self, *grads):
        return dual.concatenate(_fill_zeros(grads, self.out_shapes), self.axis)


@dual.records("stack")
class Stack(Function):
    def forward(self, *tensors, axis=0):
        self.axis = axis
        return np.stack([t.data for t in tensors], axis)

    def backward(self, g):
        return dual.unbind(g, self.axis)


@dual.records("concatenate")
class Cat(Function):
    def forward(self, *tensors, axis=0):
        self.axis = axis
        data = [t.data for t in tensors]
        if self.needs_input_grad:   # where backward splits the gradient
            self.cuts = tuple(itertools.accumulate([d.shape[axis] for d in data[:-1]]))
        return np.concatenate(data, axis)

    def backward(self, g):
        return dual.split_at(g, self.cuts, self.axis)


def _fill_zeros(grads, shapes):
    """Outputs that received no gradient contribute zeros of their shape."""
    like = next(g for g in grads if g is not None)
    return [g if g is not None else dual.zeros(shape, like) for g, shape in zip(grads, shapes)]


# --- NumPy's shape functions with their own nodes -------------------------------------------
#
# Each backward moves the gradient back with operators, ``dual`` helpers or the op itself
# (applied to Tensors in a create_graph backward), so it runs on arrays, Tensors and
# compile's Tracers alike.

def _copy(out):
    """A NumPy view made into a copy (the op's result owns its memory, as PyTorch's flip does)."""
    return out.copy() if type(out) is np.ndarray else out


class Flip(Function):
    """Reverse the order along ``axes``: ``FlipBackward0``; the gradient is flipped back."""

    def forward(self, a, axes):
        self.axes = axes
        return _copy(np.flip(a.data, axes))

    def backward(self, g):
        return Flip.apply(g, axes=self.axes) if dual.is_tensor(g) else np.flip(g, self.axes)


class Roll(Function):
    """``np.roll`` (``RollBackward0``); the gradient is rolled back by ``-shift``."""

    def forward(self, a, shift, axis):
        self.shift, self.axis = shift, axis
        return np.roll(a.data, shift, axis)

    def backward(self, g):
        back = tuple(-s for s in self.shift) if isinstance(self.shift, tuple) else -self.shift
        if dual.is_tensor(g):
            return Roll.apply(g, shift=back, axis=self.axis)
        return np.roll(g, back, self.axis)


class Tile(Function):
    """``np.tile`` with one repetition count per axis (PyTorch's ``repeat``: ``RepeatBackward0``).

    The gradient sums the copies: ``g`` seen as ``(r0, n0, r1, n1, ...)`` summed over the r's.
    """

    def forward(self, a, reps):
        self.in_shape = a.shape
        self.reps = reps
        return np.tile(a.data, reps)

    def name(self):
        return "RepeatBackward0"

    def backward(self, g):
        split = tuple(v for r, n in zip(self.reps, self.in_shape) for v in (r, n))
        return g.reshape(split).sum(axis=tuple(range(0, len(split), 2)))


class IndexSelect(Index):
    """Entries ``idx`` along ``axis`` (``np.take``, ``np.repeat``): PyTorch's
    ``IndexSelectBackward0``; repeated entries' gradients are summed."""

    def forward(self, a, idx, axis):
        # along axis 0 the key is the index array itself: the backward's row scatter
        self.key = idx if axis == 0 else (slice(None),) * axis + (idx,)
        self.in_shape = a.shape
        return np.take(a.data, idx, axis)

    def name(self):
        return "IndexSelectBackward0"


def along_axis_key(indices, axis: int, shape: tuple) -> tuple:
    """The advanced-indexing key of ``np.take_along_axis(x, indices, axis)``."""
    key = []
    for i, n in enumerate(shape):
        if i == axis:
            key.append(indices)
        else:
            key.append(np.arange(n).reshape((1,) * i + (n,) + (1,) * (len(shape) - i - 1)))
    return tuple(key)


class TakeAlongAxis(Index):
    """``np.take_along_axis`` (PyTorch's gather: ``GatherBackward0``): the gradient is
    scattered back, repeated indices summed."""

    def forward(self, a, indices, axis):
        self.in_shape = a.shape
        self.key = along_axis_key(indices, axis, a.shape)
        return np.take_along_axis(a.data, indices, axis)

    def name(self):
        return "GatherBackward0"


class Sort(Index):
    """``np.sort`` along ``axis`` (``SortBackward0``): each value's gradient goes back to the
    element it came from.  Ties keep their order (a stable sort, as ``torch.sort(stable=True)``),
    so the first of equal elements gets the first of their gradients."""

    basic = True   # a permutation: the scatter back needs no accumulation

    def forward(self, a, axis, descending=False):
        x = a.data
        self.in_shape = x.shape
        if not self.needs_input_grad and not descending:
            return np.sort(x, axis, kind="stable")
        order = sort_order(x, axis, descending)
        self.key = along_axis_key(order, axis, x.shape)
        return np.take_along_axis(x, order, axis)

    def name(self):
        return "SortBackward0"


def sort_order(x, axis, descending=False):
    """The stable sorting permutation along ``axis`` (descending: the largest first, ties
    still in their order)."""
    return np.argsort(-x if descending else x, axis, kind="stable")


class Diagonal(Function):
    """``np.diagonal(x, offset, axis1, axis2)`` (the diagonal as the last axis):
    ``DiagonalBackward0``; the gradient is zeros with ``g`` written on the diagonal."""

    def forward(self, a, offset, axis1, axis2):
        nd = a.ndim
        rest = [i for i in range(nd) if i not in (axis1, axis2)]
        self.perm = tuple(rest + [axis1, axis2])
        self.moved_shape = tuple(a.shape[i] for i in self.perm)
        out = _copy(np.diagonal(a.data, offset, axis1, axis2))
        k = out.shape[-1]
        rows = np.arange(k) + max(-offset, 0)
        self.key = (Ellipsis, rows, rows + offset)
        return out

    def backward(self, g):
        full = dual.index_add(g, self.key, self.moved_shape, False)
        inverse = [0] * len(self.perm)
        for i, ax in enumerate(self.perm):
            inverse[ax] = i
        return dual.permute(full, tuple(inverse))



class DiagEmbed(IndexAdd):
    """A vector on the ``k``-th diagonal of a square matrix of zeros (``np.diag`` of a
    vector): ``DiagEmbedBackward0``; the gradient is ``g``'s diagonal."""


class Tril(Function):
    """``np.tril(x, k)`` (``TrilBackward0``): the gradient is ``tril(g, k)``."""

    fn = staticmethod(np.tril)

    def forward(self, a, k):
        self.k = k
        return type(self).fn(a.data, k)

    def backward(self, g):
        return type(self).apply(g, k=self.k) if dual.is_tensor(g) else type(self).fn(g, self.k)


class Triu(Tril):
    """``np.triu(x, k)`` (``TriuBackward0``): the gradient is ``triu(g, k)``."""

    fn = staticmethod(np.triu)


class ConstantPadNd(Function):
    """``np.pad(x, pad_width, constant_values=c)`` (``ConstantPadNdBackward0``): the
    gradient is ``g`` without the padding."""

    def forward(self, a, pad_width, value):
        self.key = tuple(slice(before, before + n) for (before, _), n in zip(pad_width, a.shape))
        return np.pad(a.data, pad_width, mode="constant", constant_values=value)

    def backward(self, g):
        return g[self.key]
