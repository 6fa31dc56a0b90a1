"""``Tensor``: a NumPy array plus what autograd needs to differentiate through it.

A tensor the user creates is a *leaf* (``grad_fn is None``); a tensor produced
by an op on inputs that require grad is a *non-leaf* whose ``grad_fn`` is that
op's backward node.  Tensors that depend only on leaves with
``requires_grad=False`` are not in the graph at all.

>>> from diffcompare.engine import Tensor
>>> T = Tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
>>> L = (1 / T).mean()
>>> L
tensor(0.5208, grad_fn=<MeanBackward0>)
>>> L.backward()
>>> T.grad
tensor([-0.2500, -0.0625, -0.0278, -0.0156])

It prints as PyTorch prints (four decimals; see ``_tensor_str``); ``T.size`` is NumPy's
element count and ``T.size()`` PyTorch's shape (see :class:`SizeInt`).

Python numbers and lists become float64 (float32 on request); a NumPy array
keeps its dtype and is not copied; a Tensor is copied (as ``torch.tensor(t)``).
"""
from __future__ import annotations

import warnings

import numpy as np


_new = object.__new__


class _VersionCounter:
    """Counts in-place modifications; shared by a tensor and its views."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


def _as_array(data, dtype=None) -> np.ndarray:
    if isinstance(data, Tensor):
        # A copy, as torch.tensor(t) makes: sharing the memory under a new version
        # counter would let `c = Tensor(x); c += 1` change values x's graph saved.
        return np.array(data.data, dtype=dtype)
    if isinstance(data, np.ndarray):
        return data if dtype is None else data.astype(dtype, copy=False)
    arr = np.asarray(data, dtype=dtype)
    if dtype is None and arr.dtype.kind in "iu":
        arr = arr.astype(np.float64)
    return arr


#: Array stand-ins that ``Tensor._make`` keeps as ``data`` instead of converting them
#: with ``np.asarray``: type -> ``adopt(data, grad_fn, output_nr)``, called as such a
#: tensor is made.  ``engine.compile`` registers its ``Tracer`` here, so that the
#: engine's own formulas run on traced values; ndarrays never get this far.
data_types: dict = {}


def _as_data(data, grad_fn, output_nr):
    adopt = data_types.get(type(data))
    if adopt is None:
        return np.asarray(data)
    adopt(data, grad_fn, output_nr)
    return data


class Size(tuple):
    """A tensor's shape as PyTorch has it (``torch.Size``): a tuple of ints, so NumPy-style
    code (``x.shape == (2, 3)``, ``np.zeros(x.shape)``) keeps working, printed as
    ``torch.Size([2, 3])``.

    >>> Size((2, 3)), Size((2, 3)) == (2, 3), Size((2, 3)).numel()
    (torch.Size([2, 3]), True, 6)
    >>> f"shape {Size((2,))}"
    'shape (2,)'

    Its ``repr`` (what the REPL echoes) is PyTorch's; its ``str`` stays the tuple's, so the
    engine's error messages (``... has shape (2,)``) read as before. (PyTorch's
    ``print(x.shape)`` shows ``torch.Size([2])``; the engine's shows ``(2,)``.)
    """

    __slots__ = ()

    def __repr__(self):
        return f"torch.Size({list(self)})"

    __str__ = tuple.__repr__

    def numel(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n


class SizeInt(int):
    """``t.size``: NumPy's ``size`` (the number of elements, an ``int``) that can also be
    called as PyTorch's ``t.size()`` (the shape, a :class:`Size`) or ``t.size(dim)``.

    One Tensor serves NumPy-style code (the array namespace reads ``x.size`` as an int)
    and torch-style code pasted from a forum (``x.size()``, ``x.size(0)``); this int is
    both.

    >>> s = SizeInt._of((2, 3), 6)
    >>> s, s + 1, s(), s(0), s(-1)
    (6, 7, torch.Size([2, 3]), 2, 3)
    """

    @classmethod
    def _of(cls, shape, n):
        s = int.__new__(cls, n)
        s._shape = shape
        return s

    def __call__(self, dim=None):
        shape = self._shape
        if dim is None:
            return Size(shape)
        if not isinstance(dim, (int, np.integer)) or not -len(shape) <= dim < max(len(shape), 1):
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-len(shape)}, "
                f"{len(shape) - 1}], but got {dim}); pass a dim below the tensor's "
                f"{len(shape)} dimensions, or no dim for the whole shape.")
        return shape[dim]

    def __reduce__(self):                        # pickles as the plain int it is
        return (int, (int(self),))


class Tensor:
    """An n-dimensional array that records the ops applied to it for backward.

    Like a PyTorch tensor, it takes any attribute a user sets (``inp.g = out.g @ w.t()``,
    seed 001), kept in its ``__dict__``; the engine's own attributes are slots.
    """

    __slots__ = ("data", "_requires_grad", "grad_fn", "output_nr", "_grad", "_vc",
                 "_retains_grad", "_accum_ref", "_hooks", "__weakref__", "__dict__")
    __array_ufunc__ = None   # make `ndarray * Tensor` call Tensor.__rmul__

    def __init__(self, data, requires_grad: bool = False, dtype=None):
        self.data = _as_array(data, dtype)
        self.grad_fn = None
        self.output_nr = 0
        self._grad = None
        self._vc = None
        self._retains_grad = False
        self._accum_ref = None
        self._hooks = None
        self._requires_grad = False
        if requires_grad:
            self.requires_grad = True

    @classmethod
    def _make(cls, data, grad_fn=None, output_nr=0, vc=None):
        """Fast constructor used by ops (no validation): a constant, or output
        ``output_nr`` of node ``grad_fn`` (then it requires grad); ``vc`` is a
        version counter to share (views)."""
        t = _new(cls)
        t.data = data if type(data) is np.ndarray else _as_data(data, grad_fn, output_nr)
        t._requires_grad = grad_fn is not None
        t.grad_fn = grad_fn
        t.output_nr = output_nr
        t._grad = None
        t._vc = vc
        t._retains_grad = False
        t._accum_ref = None
        t._hooks = None
        return t

    # --- autograd attributes ----------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool):
        value = bool(value)
        if self.grad_fn is not None:
            if not value:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you "
                    "want to use a computed variable in a subgraph that doesn't require "
                    "differentiation use var_no_grad = var.detach()."
                )
            return
        if value and self.data.dtype.kind == "c":
            raise RuntimeError(
                f"the engine differentiates real floating-point tensors only; this one is "
                f"{self.data.dtype} (PyTorch's complex autograd is not implemented here). "
                "Split it into real and imaginary parts (two float tensors) to differentiate.")
        if value and self.data.dtype.kind != "f":
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients "
                f"(this one is {self.data.dtype}). Convert it first: t.float() or "
                "t.double(), or create it from floats (torch.tensor([1., 2.]), "
                "Tensor(data, dtype=np.float64, requires_grad=True))."
            )
        self._requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad(self):
        if self.grad_fn is not None and not self._retains_grad and self._grad is None:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being "
                "accessed. Its .grad attribute won't be populated during "
                "autograd.backward(). If you indeed want the .grad field to be populated "
                "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.",
                UserWarning,
                stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            value = value if isinstance(value, Tensor) else Tensor(value, dtype=self.dtype)
            if value.shape != self.shape:
                raise RuntimeError(
                    f"assigned grad has shape {value.shape} but the tensor has shape "
                    f"{self.shape}; a gradient must have the tensor's shape."
                )
        self._grad = value

    @property
    def _version(self) -> int:
        return 0 if self._vc is None else self._vc.value

    def _vc_or_new(self) -> _VersionCounter:
        vc = self._vc
        if vc is None:
            vc = self._vc = _VersionCounter()
        return vc

    def _bump_version(self):
        self._vc_or_new().value += 1

    def retain_grad(self) -> None:
        """Keep this non-leaf's gradient in ``.grad`` after backward (no-op on leaves)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is not None and not self._retains_grad:
            self._retains_grad = True
            self.grad_fn.hook_tensor(self)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned
        tensor replaces the gradient.  Returns a handle with ``remove()``."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._hooks is None:
            self._hooks = []
            if self.grad_fn is not None:
                self.grad_fn.hook_tensor(self)
            else:   # a leaf: its AccumulateGrad, if a graph has one (else it registers when made)
                ref = self._accum_ref
                acc = ref() if ref is not None else None
                if acc is not None:
                    acc.hook_tensor(self)
        self._hooks.append(hook)
        return _HookHandle(self._hooks, hook)

    def detach(self) -> "Tensor":
        """A new leaf sharing this tensor's data (and version counter), outside the graph."""
        return Tensor._make(self.data, vc=self._vc_or_new())

    def detach_(self) -> "Tensor":
        if self.grad_fn is not None and self.grad_fn.is_view:
            # detaching a view in place would cut its base's history too (PyTorch refuses)
            raise RuntimeError("Can't detach views in-place. Use detach() instead: "
                               "v = v.detach() makes a new tensor outside the graph.")
        self.grad_fn = None
        self.output_nr = 0
        self._requires_grad = False
        return self

    # --- array facts --------------------------------------------------------------
    @property
    def shape(self) -> Size:
        """The shape, a tuple (a :class:`Size`, printed as ``torch.Size([2, 3])``)."""
        return Size(self.data.shape)

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def size(self) -> SizeInt:
        """The number of elements, an int as NumPy's ``size``; callable as PyTorch's
        ``size()`` (the shape) and ``size(dim)``: see :class:`SizeInt`."""
        data = self.data
        return SizeInt._of(data.shape, data.size)

    def numel(self) -> int:
        return self.data.size

    def dim(self) -> int:
        return self.data.ndim

    @property
    def nbytes(self) -> int:
        return self.data.nbytes

    def __len__(self):
        return len(self.data)

    def item(self) -> float:
        return self.data.item()

    def tolist(self):
        return self.data.tolist()

    def numpy(self) -> np.ndarray:
        if self._requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
            )
        return self.data

    def __array__(self, dtype=None, copy=None):
        return self.numpy() if dtype is None else self.numpy().astype(dtype)

    def _one_element(self):
        data = self.data
        if data.size != 1:
            raise TypeError(
                f"only one element tensors can be converted to Python scalars; this one has "
                f"shape {data.shape}. Index one element first (t[0]) or reduce (t.sum()).")
        return data.item() if data.ndim else data

    def __float__(self):
        return float(self._one_element())

    def __int__(self):
        return int(self._one_element())

    def __index__(self):
        """An integer tensor of one element as an index (``x[:k]``), as in PyTorch."""
        if self.data.size != 1 or self.data.dtype.kind not in "iu":
            raise TypeError(
                f"only integer tensors of a single element can be converted to an index; "
                f"this one has shape {self.shape} and dtype {self.dtype}. Use int(t) to "
                "truncate a float tensor."
            )
        return int(self.data.item())

    def __bool__(self):
        return bool(self.data)

    __hash__ = object.__hash__

    # __repr__ (PyTorch's printing, diffcompare.engine._tensor_str) is set by methods.py.


class _HookHandle:
    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def constant(value, like: Tensor) -> Tensor:
    """``value`` as a constant operand (outside the graph) of an op whose other operand is
    ``like``: an array as it is; a number (or a list) in ``like``'s dtype when that is a
    float dtype, so ``x * 3`` stays float32 for a float32 ``x``, as in PyTorch."""
    if isinstance(value, np.ndarray):
        return Tensor._make(value)
    dtype = like.data.dtype if like.data.dtype.kind == "f" else None
    return Tensor._make(np.asarray(value, dtype=dtype))


def tensor(data, requires_grad: bool = False, dtype=None) -> Tensor:
    """Create a leaf tensor (a copy of ``data``), like ``torch.tensor``."""
    return Tensor(np.array(_as_array(data, dtype)), requires_grad=requires_grad)
