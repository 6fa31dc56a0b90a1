"""A PyTorch-compatible face of the engine: ``import diffcompare.engine.torch as torch``.

Learners paste PyTorch code; the seed threads (``../shared/seeds`` beside the repository) are PyTorch code.
This module gives that code the names it uses, over the engine's own :class:`Tensor` (the
same class, no subclass: the engine's fast paths check ``type(x) is Tensor``), so a
thread's code runs unchanged and prints what PyTorch prints:

>>> import diffcompare.engine.torch as torch
>>> T = torch.arange (10.) + 1.
>>> T.requires_grad = True
>>> T
tensor([ 1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10.], requires_grad=True)
>>> scalar_result = (1 / T).mean()
>>> scalar_result
tensor(0.2929, grad_fn=<MeanBackward0>)
>>> T.dtype == torch.float32, T.size(), T.shape
(True, torch.Size([10]), torch.Size([10]))

Floating-point data is float32 by default, as in PyTorch (``torch.tensor([1., 2.])``,
``arange(10.)``, ``FloatTensor``), integers int64; ``float64`` on request (``dtype=``,
``.double()``, ``DoubleTensor``) or from a float64 NumPy array.

:func:`as_torch` lends this module the name ``torch`` for a block of code, so that code's
own ``import torch`` and ``from torch.autograd import Variable`` find it (how the seed
examples run the threads' code on the engine without changing a character).

Where the face and PyTorch differ (each is what the engine is, not an oversight):

- ``t.data`` is the engine's storage, a NumPy array, not a tensor: ``t.data.zero_()``
  and ``t.data.norm()`` fail (NumPy has no such methods); write ``t.grad.zero_()``,
  ``t.detach().norm()``, or ``torch.no_grad()`` blocks. (Seed 002's ``Variable`` example
  calls ``x.grad.data.zero_()``: that one line cannot run on the face.)
- ``t.dtype`` is a NumPy dtype: it compares equal to ``torch.float32`` but prints as
  ``float32``, not ``torch.float32``.
- A float64 tensor prints without PyTorch's ``dtype=torch.float64`` suffix (the engine's
  NumPy-style default is float64; see :mod:`diffcompare.engine._tensor_str`).
- ``manual_seed`` seeds NumPy's generator (PCG64), not PyTorch's (Mersenne Twister with
  its own transforms): ``rand``/``randn`` after ``manual_seed(0)`` are repeatable on the
  face, but are not PyTorch's numbers.
- ``empty`` returns zeros (PyTorch's memory is uninitialised); ``pin_memory=True`` fails
  as it does on a PyTorch install without an accelerator.
- Backward node names are the engine's: ``MatmulBackward0`` where PyTorch says
  ``MmBackward0`` for a 2-D ``@``; casts (``.float()``) record ``AsTypeBackward0``, not
  ``ToCopyBackward0``.
- ``x.squeeze(d)`` on a dim whose size is not 1 raises (the engine's NumPy rule) where
  PyTorch returns ``x`` unchanged; ``torch.squeeze(x, d)`` follows PyTorch.
- Complex tensors cannot require gradients (the engine differentiates real tensors only).
- ``x.shape`` echoes as ``torch.Size([2, 3])`` but ``print(x.shape)`` shows ``(2, 3)``
  (its ``str`` stays the tuple's, so the engine's messages read as before).
- Only what the seed threads and the common code around them use is here; any other
  name raises an ``AttributeError`` that says so.
"""
from __future__ import annotations

import builtins as _b
import contextlib as _contextlib
import sys as _sys

import numpy as _np

from .. import autograd as _autograd_engine  # noqa: F401  (the engine's backward)
from .. import ops as _ops
from ..grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ..tensor import Size
from ..tensor import Tensor as _Tensor

__version__ = "diffcompare-engine (a torch face, not PyTorch)"

# --------------------------------------------------------------------------- dtypes

float32 = _np.dtype(_np.float32)
float64 = _np.dtype(_np.float64)
float16 = _np.dtype(_np.float16)
int64 = _np.dtype(_np.int64)
int32 = _np.dtype(_np.int32)
int16 = _np.dtype(_np.int16)
int8 = _np.dtype(_np.int8)
uint8 = _np.dtype(_np.uint8)
complex64 = _np.dtype(_np.complex64)
complex128 = _np.dtype(_np.complex128)
globals().update({"float": float32, "double": float64, "half": float16, "long": int64,
                  "int": int32, "short": int16, "bool": _np.dtype(_np.bool_),
                  "cfloat": complex64, "cdouble": complex128})
dtype = _np.dtype

_default_dtype = float32


def get_default_dtype():
    """The dtype of floating-point data given as Python numbers: float32, as in PyTorch."""
    return _default_dtype


def set_default_dtype(d) -> None:
    """Make ``d`` (float32 or float64) the default floating-point dtype of the face."""
    global _default_dtype
    d = _np.dtype(d)
    if d not in (float32, float64):
        raise TypeError(f"only floating-point types are supported as the default type, got {d}; "
                        "pass torch.float32 or torch.float64.")
    _default_dtype = d


# --------------------------------------------------------------------------- making tensors

def _infer(data, dtype=None) -> _np.ndarray:
    """``data`` as a new array in the dtype PyTorch would give it."""
    if isinstance(data, _Tensor):
        arr = data.data
    elif isinstance(data, (list, tuple)) and any(isinstance(x, _Tensor) for x in _flat(data)):
        arr = _np.array([_infer(x) for x in data])
    else:
        arr = _np.asarray(data)
    if dtype is not None:
        return _np.array(arr, dtype=_np.dtype(dtype))
    if isinstance(data, (_Tensor, _np.ndarray, _np.generic)) or (
            isinstance(data, (list, tuple)) and data and all(isinstance(x, _np.generic) for x in _flat(data))):
        return _np.array(arr)                      # NumPy data keeps its dtype
    kind = arr.dtype.kind
    if kind == "b":
        return _np.array(arr, dtype=_np.bool_)
    if kind in "iu":
        return _np.array(arr, dtype=_np.int64)
    if kind == "c":
        return _np.array(arr, dtype=complex64 if _default_dtype == float32 else complex128)
    if kind == "f":
        return _np.array(arr, dtype=_default_dtype)
    raise TypeError(f"can't make a tensor from {type(data).__name__} data of dtype {arr.dtype}; "
                    "pass numbers, (nested) lists of numbers, a NumPy array or a tensor.")


def _flat(data):
    for x in data:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def _leaf(arr: _np.ndarray, requires_grad: _b.bool) -> _Tensor:
    return _Tensor(arr, requires_grad=requires_grad)


def _check_pin(pin_memory) -> None:
    if pin_memory:
        raise RuntimeError(
            "pin_memory=True requires a CUDA or other accelerator backend; no pinned memory "
            "allocator is available on this system. (The engine has no accelerator: leave "
            "pin_memory out.)")


def _check_device(device) -> None:
    if device is not None and str(device).split(":")[0] != "cpu":
        raise RuntimeError(f"the engine runs on the CPU only; it has no device {device!r}. "
                           "Leave the device out, or use 'cpu'.")


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False) -> _Tensor:
    """A new leaf holding a copy of ``data`` (``torch.tensor``): Python floats become
    float32, ints int64, bools bool; a NumPy array or tensor keeps its dtype."""
    _check_device(device)
    _check_pin(pin_memory)
    return _leaf(_infer(data, dtype), requires_grad)


def as_tensor(data, dtype=None, device=None) -> _Tensor:
    """``data`` as a tensor, sharing a NumPy array's memory when the dtype allows."""
    _check_device(device)
    if isinstance(data, _Tensor) and (dtype is None or data.dtype == _np.dtype(dtype)):
        return data
    if isinstance(data, _np.ndarray) and (dtype is None or data.dtype == _np.dtype(dtype)):
        return _Tensor(data)
    return _leaf(_infer(data, dtype), False)


def from_numpy(array: _np.ndarray) -> _Tensor:
    """A tensor sharing ``array``'s memory (``torch.from_numpy``)."""
    if not isinstance(array, _np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__}); use torch.tensor(data) "
                        "for other data.")
    return _Tensor(array)


def _shape(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    for n in size:
        if not isinstance(n, (_b.int, _np.integer)) or n < 0:
            raise TypeError(f"a size is made of non-negative ints, got {size!r}; pass e.g. "
                            "torch.zeros(2, 3) or torch.zeros((2, 3)).")
    return tuple(_b.int(n) for n in size)


def _filled(fill, size, dtype, requires_grad, device=None, pin_memory=False):
    _check_device(device)
    _check_pin(pin_memory)
    return _leaf(_np.full(_shape(size), fill, dtype=_np.dtype(dtype or _default_dtype)),
                 requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, pin_memory=False, out=None):
    return _filled(0, size, dtype, requires_grad, device, pin_memory)


def ones(*size, dtype=None, device=None, requires_grad=False, pin_memory=False, out=None):
    return _filled(1, size, dtype, requires_grad, device, pin_memory)


def empty(*size, dtype=None, device=None, requires_grad=False, pin_memory=False, out=None):
    """Zeros: PyTorch leaves the memory uninitialised; the face makes it repeatable."""
    return _filled(0, size, dtype, requires_grad, device, pin_memory)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """``size`` filled with ``fill_value``; the dtype follows the value (float → float32)."""
    if dtype is None:
        dtype = _infer(fill_value).dtype
    return _filled(fill_value, (size,), dtype, requires_grad, device)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    _check_device(device)
    return _leaf(_np.eye(n, m, dtype=_np.dtype(dtype or _default_dtype)), requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """``arange(10.)`` is float32 (a float argument), ``arange(10)`` int64, as in PyTorch."""
    _check_device(device)
    if end is None:
        start, end = 0, start
    if dtype is None:
        floats = any(isinstance(v, (_b.float, _np.floating)) for v in (start, end, step))
        dtype = _default_dtype if floats else int64
    return _leaf(_np.arange(start, end, step, dtype=_np.dtype(dtype)), requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    _check_device(device)
    return _leaf(_np.linspace(start, end, steps).astype(_np.dtype(dtype or _default_dtype)),
                 requires_grad)


def _like(fn, t, dtype=None, requires_grad=False, **kwargs):
    return fn(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad, **kwargs)


def zeros_like(input, dtype=None, requires_grad=False, device=None):
    return _like(zeros, input, dtype, requires_grad)


def ones_like(input, dtype=None, requires_grad=False, device=None):
    return _like(ones, input, dtype, requires_grad)


def empty_like(input, dtype=None, requires_grad=False, device=None):
    return _like(empty, input, dtype, requires_grad)


def full_like(input, fill_value, dtype=None, requires_grad=False, device=None):
    return full(tuple(input.shape), fill_value, dtype=dtype or input.dtype,
                requires_grad=requires_grad)


# --------------------------------------------------------------------------- random numbers

class Generator:
    """The face's random state: NumPy's PCG64 seeded by :func:`manual_seed`.  Its numbers
    are not PyTorch's (a different generator), only as repeatable."""

    def __init__(self, seed=None):
        self.manual_seed(seed)

    def manual_seed(self, seed):
        self._seed = seed
        self.rng = _np.random.default_rng(seed)
        return self

    def initial_seed(self):
        return self._seed


default_generator = Generator()


def manual_seed(seed) -> Generator:
    """Seed the face's generator (NumPy's PCG64): ``rand``/``randn`` repeat after the same
    seed, but are not the numbers PyTorch gives after ``torch.manual_seed(seed)``."""
    return default_generator.manual_seed(_b.int(seed))


def seed():
    return default_generator.manual_seed(None)


def _random(draw, size, generator, dtype, requires_grad, device):
    _check_device(device)
    rng = (generator or default_generator).rng
    arr = _np.asarray(draw(rng, _shape(size)), dtype=_np.dtype(dtype or _default_dtype))
    return _leaf(arr, requires_grad)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform on [0, 1) from the face's generator (not PyTorch's numbers: see manual_seed)."""
    return _random(lambda r, s: r.random(s), size, generator, dtype, requires_grad, device)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal from the face's generator (not PyTorch's numbers: see manual_seed)."""
    return _random(lambda r, s: r.standard_normal(s), size, generator, dtype, requires_grad,
                   device)


def rand_like(input, dtype=None, requires_grad=False):
    return rand(*input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def randn_like(input, dtype=None, requires_grad=False):
    return randn(*input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


# --------------------------------------------------------------------------- legacy constructors

class _TensorType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _Tensor) and (cls._dtype is None or obj.dtype == cls._dtype)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _Tensor)


def _legacy(args, dtype):
    if len(args) == 1 and not isinstance(args[0], (_b.int, _np.integer, Size)):
        return _leaf(_infer(args[0], dtype), False)          # FloatTensor([0.1, 1.0])
    return zeros(*args, dtype=dtype)                         # FloatTensor(2, 3): zeros


class Tensor(metaclass=_TensorType):
    """``torch.Tensor([1, 2])`` makes a float32 tensor (``torch.Tensor(2, 3)``: a 2×3 one,
    zeros on the face); ``isinstance(t, torch.Tensor)`` is true of every engine tensor."""

    _dtype = None

    def __new__(cls, *args):
        return _legacy(args, cls._dtype or _default_dtype)


class FloatTensor(Tensor):
    _dtype = float32


class DoubleTensor(Tensor):
    _dtype = float64


class LongTensor(Tensor):
    _dtype = int64


def is_tensor(obj) -> _b.bool:
    return isinstance(obj, _Tensor)


def numel(input) -> _b.int:
    return _b.int(input.data.size)


# --------------------------------------------------------------------------- functions

def _t(x):
    """``x`` as a tensor (a number or list becomes one, as PyTorch's functions take them)."""
    return x if isinstance(x, _Tensor) else tensor(x)


def add(input, other, *, alpha=1):
    return _t(input) + (other if alpha == 1 else alpha * _t(other))


def sub(input, other, *, alpha=1):
    return _t(input) - (other if alpha == 1 else alpha * _t(other))


def mul(input, other):
    return _t(input) * other


def div(input, other):
    return _t(input) / other


def matmul(input, other):
    return _t(input) @ other


def mm(input, mat2):
    return _t(input).mm(mat2)


def dot(input, other):
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors; "
                           "use matmul for other shapes.")
    return input @ other


def pow(input, exponent):
    return _t(input) ** exponent


def neg(input):
    return -input


def exp(input):
    return input.exp()


def log(input):
    return input.log()


def sqrt(input):
    return input.sqrt()


def sin(input):
    return input.sin()


def cos(input):
    return input.cos()


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def relu(input):
    return input.relu()


def abs(input):
    return input.abs()


def sum(input, dim=None, keepdim=False, *, dtype=None):
    x = input if dtype is None else input.to(dtype)
    return x.sum(dim=dim, keepdim=keepdim)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    x = input if dtype is None else input.to(dtype)
    return x.mean(dim=dim, keepdim=keepdim)


def logsumexp(input, dim, keepdim=False):
    return input.logsumexp(dim=dim, keepdim=keepdim)


def softmax(input, dim):
    return _ops.softmax(input, axis=dim)


def log_softmax(input, dim):
    return _ops.log_softmax(input, axis=dim)


def maximum(input, other):
    return _ops.maximum(input, other)


def minimum(input, other):
    return _ops.minimum(input, other)


def where(condition, input, other):
    return _ops.where(condition, input, other)


def stack(tensors, dim=0):
    return _ops.stack(list(tensors), axis=dim)


def cat(tensors, dim=0):
    return _ops.concatenate(list(tensors), axis=dim)


concat = cat


def reshape(input, shape):
    return input.reshape(shape)


def squeeze(input, dim=None):
    """PyTorch's rule: a ``dim`` whose size is not 1 leaves ``input`` as it is."""
    if dim is None:
        return input.squeeze()
    return input.squeeze(dim) if input.shape[dim] == 1 else input


def unsqueeze(input, dim):
    return input.unsqueeze(dim)


def transpose(input, dim0, dim1):
    return input.transpose(dim0, dim1)


def t(input):
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D; "
                           "use transpose(d0, d1) or permute.")
    return input.t()


def flatten(input):
    return input.flatten()


def clone(input):
    return input.clone()


def unbind(input, dim=0):
    return _ops.unbind(input, dim)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> _b.bool:
    return _b.bool(_np.allclose(input.data, _data(other), rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal(input, other) -> _b.bool:
    return input.shape == other.shape and _b.bool(_np.array_equal(input.data, other.data))


def isfinite(input):
    return _Tensor(_np.isfinite(input.data))


def _data(x):
    return x.data if isinstance(x, _Tensor) else _np.asarray(x)


inference_mode = no_grad


# --------------------------------------------------------------------------- submodules

from . import autograd, nn  # noqa: E402  (they use the names above)

_SUBMODULES = ("autograd", "nn", "nn.functional")


@_contextlib.contextmanager
def as_torch():
    """Within the block, ``import torch`` (and ``torch.autograd``, ``torch.nn``,
    ``torch.nn.functional``) gives this face; the previous modules come back after.

    >>> import diffcompare.engine.torch as face
    >>> with face.as_torch():
    ...     import torch
    ...     torch is face
    True
    """
    names = ["torch"] + [f"torch.{n}" for n in _SUBMODULES]
    mods = [_sys.modules[__name__]] + [_sys.modules[f"{__name__}.{n}"] for n in _SUBMODULES]
    saved = {n: _sys.modules.get(n) for n in names}
    _sys.modules.update(zip(names, mods))
    try:
        yield _sys.modules[__name__]
    finally:
        for n, m in saved.items():
            if m is None:
                _sys.modules.pop(n, None)
            else:
                _sys.modules[n] = m


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"the engine's torch face (diffcompare.engine.torch) has no {name!r}: it covers what the "
        "seed threads and the code around them use. Look for a NumPy-named op in "
        f"diffcompare.engine (diffcompare.engine.{name}, or the tensor's methods), or run this "
        "code on PyTorch.")
