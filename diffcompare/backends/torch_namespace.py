"""PyTorch as an array namespace with NumPy's names, for ``problem.fn(xp, *args)``.

Built on ``array_api_compat.torch``: where the array API standard (through
array-api-compat) has a contract name with NumPy's meaning, this module re-exports it
(``FROM_COMPAT``: ``xp.sum(x, axis=0, keepdims=True)``, ``xp.max`` as ``torch.amax``, whose
ties share the gradient evenly as in the engine, ``permute_dims``, ``concat``, ``log1p``,
...).  Only what the standard leaves out or spells differently from NumPy is written here,
each with the reason: NumPy's spellings (``concatenate``, ``amax``, ``power``, ``transpose``
with axes, ``dot``), new arrays in float64 where NumPy makes float64 (torch's default is
float32), Python numbers in binary functions, and the engine's gradient conventions.

Functions take tensors (``asarray`` makes them; the torch backend passes tensors) and
reductions take ``axis``/``keepdims`` by keyword, as the standard says; binary functions
also take Python numbers, as NumPy's do.  Operators (``+``, ``*``, ``**``, ``@``) and basic
indexing act on the tensors directly, with torch's type promotion, so float32 stays float32.
NumPy semantics torch does not share stay torch's: negative slice steps (``x[::-1]``) fail,
and tensor *methods* keep torch's meaning (``x.size`` is a method, ``x.max(0)`` returns
values and indices): write ``xp.max(x, axis=0)``.

Get it with ``namespace()``; the module imports without torch or array-api-compat.

>>> import numpy as np
>>> from diffcompare.backends import torch_namespace
>>> try:
...     xp = torch_namespace.namespace()
... except ImportError:
...     xp = None
>>> xp is None or float(xp.sum(xp.asarray(np.array([[1.0, 2.0], [3.0, 4.0]])), axis=0)[1]) == 6.0
True
"""
from __future__ import annotations

import math
import operator
import sys

import numpy as np

try:
    import torch
except ImportError:        # the backend reports "torch is not installed"
    torch = None

#: Contract names taken unchanged from ``array_api_compat.torch`` (its wrappers, or torch's
#: own function where it needs none: ``exp``, ``swapaxes``, ``stack``, ...).
FROM_COMPAT = ("abs", "exp", "log", "log1p", "sqrt", "sin", "cos", "tanh", "square", "negative",
               "sum", "mean", "max", "min", "permute_dims", "swapaxes", "expand_dims", "stack",
               "concat", "zeros_like", "ones_like", "astype", "float64", "float32", "bool")
#: NumPy's spellings of standard names: alias -> the standard name
ALIASES = {"amax": "max", "amin": "min", "concatenate": "concat", "permute": "permute_dims"}

# plain numbers: no torch needed
pi, e, inf, nan = math.pi, math.e, math.inf, math.nan
newaxis = None

_compat = None
COMPAT_MINIMUM = (1, 14)       # expand_dims with a positional and a tuple axis


def namespace():
    """This module with torch and array-api-compat loaded (``ImportError`` if one is missing
    or array-api-compat is older than ``COMPAT_MINIMUM``)."""
    global torch, _compat, matmul
    if _compat is None:
        import array_api_compat
        import array_api_compat.torch as compat
        import torch as _torch

        version = array_api_compat.__version__
        if tuple(int(p) for p in version.split(".")[:2] if p.isdigit()) < COMPAT_MINIMUM:
            raise ImportError(f"array-api-compat {version} is too old for the torch namespace "
                              f"({'.'.join(map(str, COMPAT_MINIMUM))} or later)")

        torch = _torch
        names = globals()
        names.update({n: getattr(compat, n) for n in FROM_COMPAT})
        names.update({alias: getattr(compat, n) for alias, n in ALIASES.items()})
        # torch's own, not compat's: compat re-promotes both dtypes on every call (~10 µs)
        matmul = torch.matmul
        _compat = compat
    return sys.modules[__name__]


def __getattr__(name):
    # names from compat resolve lazily, so the module imports without torch
    if name in FROM_COMPAT or name in ALIASES or name == "matmul":
        return getattr(namespace(), name)
    raise AttributeError(f"the torch namespace has no {name!r}; it offers the names of "
                         "diffcompare.engine.array_api")


# --- conversions -----------------------------------------------------------------------

def _dtype(dtype):
    """A torch dtype for a torch, NumPy or Python dtype (None stays None)."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    return torch.from_numpy(np.empty(0, dtype=np.dtype(dtype))).dtype


def asarray(x, dtype=None):
    """``x`` if it is a tensor (graph kept), else a tensor with NumPy's dtype rules
    (compat's makes float32 from Python floats and lists, torch's default)."""
    if isinstance(x, torch.Tensor):
        return x if dtype is None else x.to(_dtype(dtype))
    if isinstance(x, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in x):
        out = torch.stack([asarray(v) for v in x])
    else:
        a = np.asarray(x)
        out = torch.from_numpy(a if a.flags.writeable else a.copy())
    return out if dtype is None else out.to(_dtype(dtype))


def _operands(a, b):
    """For operators: arrays become tensors, plain numbers stay numbers (as in ``x * 2``)."""
    if not isinstance(a, (torch.Tensor, int, float)):
        a = asarray(a)
    if not isinstance(b, (torch.Tensor, int, float)):
        b = asarray(b)
    if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
        a = asarray(a)
    return a, b


def _pair(a, b):
    """Both as tensors; a plain number takes the other's dtype (as the engine's constants do)."""
    if not isinstance(b, torch.Tensor):
        a = asarray(a)
        return a, torch.tensor(b, dtype=a.dtype, device=a.device)
    if not isinstance(a, torch.Tensor):
        return torch.tensor(a, dtype=b.dtype, device=b.device), b
    return a, b


# --- elementwise -------------------------------------------------------------------------

def _operator(op, name, symbol):
    def function(a, b):
        a, b = _operands(a, b)
        return op(a, b)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``a {symbol} b``, Python numbers and NumPy arrays taken as NumPy does."
    return function


# compat's add/.../divide promote float32 by a 0-d float64 constant (array API rules) where the
# operators keep float32, and take no NumPy arrays; NumPy's `power` is the standard's `pow`
add = _operator(operator.add, "add", "+")
subtract = _operator(operator.sub, "subtract", "-")
multiply = _operator(operator.mul, "multiply", "*")
divide = _operator(operator.truediv, "divide", "/")
power = _operator(operator.pow, "power", "**")


def maximum(a, b):
    """Elementwise maximum; ties split the gradient (torch and the engine agree).  Not
    compat's: its scalar and promotion handling costs ~5 µs a call and upcasts float32."""
    return torch.maximum(*_pair(a, b))


def minimum(a, b):
    """As ``maximum`` (not compat's, for the same reasons)."""
    return torch.minimum(*_pair(a, b))


def clip(x, a_min=None, a_max=None):
    """The engine's ``clip``, ``minimum(maximum(x, a_min), a_max)``: ties split the gradient
    (compat's is ``torch.clamp``, which gives the bound's whole gradient to ``x``)."""
    if a_min is not None:
        x = maximum(x, a_min)
    if a_max is not None:
        x = minimum(x, a_max)
    return x


def where(condition, a, b):
    """NumPy's ``where``: two Python numbers make float64 (compat's make torch's float32)."""
    if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
        a = asarray(a)
    if not isinstance(condition, torch.Tensor) or condition.dtype != torch.bool:
        condition = asarray(condition).to(torch.bool)
    return torch.where(condition, a, b)


def sign(x):
    """Not differentiated (its derivative is 0 almost everywhere), as in the engine; compat's
    also writes NaNs back in place, an extra indexing op per call."""
    return torch.sign(x).detach()


# --- reductions --------------------------------------------------------------------------

def logsumexp(x, axis=None, keepdims=False):
    """``torch.logsumexp`` in one op; not in the standard, and torch's needs its axes."""
    return torch.logsumexp(x, dim=tuple(range(x.ndim)) if axis is None else axis, keepdim=keepdims)


# --- shapes ------------------------------------------------------------------------------

def reshape(x, shape):
    """NumPy's ``reshape``, which also takes an int (compat passes it to torch, which refuses it)."""
    return torch.reshape(x, (shape,) if isinstance(shape, int) else tuple(shape))


def broadcast_to(x, shape):
    """As ``reshape``: an int shape is NumPy's, torch refuses it."""
    return torch.broadcast_to(x, (shape,) if isinstance(shape, int) else tuple(shape))


def transpose(x, axes=None):
    """NumPy's ``transpose``: reverse the axes, or permute them by ``axes`` (torch's swaps two)."""
    return x.permute(*(reversed(range(x.ndim)) if axes is None else axes))


def squeeze(x, axis=None):
    """NumPy's ``squeeze``: ``axis=None`` drops every length-1 axis (the standard needs axis)."""
    return torch.squeeze(x) if axis is None else _compat.squeeze(x, axis)


# --- new arrays: float64 by default, as NumPy (torch's default is float32) -----------------

def zeros(shape, dtype=np.float64):
    return torch.zeros(shape, dtype=_dtype(dtype))


def ones(shape, dtype=np.float64):
    return torch.ones(shape, dtype=_dtype(dtype))


def full(shape, fill_value, dtype=np.float64):
    return torch.full((shape,) if isinstance(shape, int) else tuple(shape), fill_value,
                      dtype=_dtype(dtype))


def arange(*args, dtype=None):
    """NumPy's dtype: int64 for ints, float64 for floats."""
    return asarray(np.arange(*args), dtype=dtype)


def eye(n, m=None, dtype=np.float64):
    return asarray(np.eye(n, m), dtype=dtype)


# --- linear algebra: NumPy's meanings (torch's dot, solve, cross... differ) -----------------

def dot(a, b):
    """NumPy's ``dot``: a product with a 0-d operand, ``matmul`` for 1-D/2-D operands, else
    the sum over a's last axis and b's second-to-last (torch.dot takes 1-D only)."""
    a, b = _pair(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.ndim <= 2 and b.ndim <= 2:
        return torch.matmul(a, b)
    return torch.tensordot(a, b, dims=([a.ndim - 1], [b.ndim - 2 if b.ndim > 1 else 0]))


def vdot(a, b):
    """NumPy's ``vdot`` of real arrays: the flattened operands' dot product."""
    a, b = _pair(a, b)
    return torch.dot(a.reshape(-1), b.reshape(-1))


def inner(a, b):
    """NumPy's ``inner`` (torch's has the same meaning)."""
    return torch.inner(*_pair(a, b))


def outer(a, b):
    """NumPy's ``outer``: the operands flattened (torch's takes 1-D only)."""
    a, b = _pair(a, b)
    return torch.outer(a.reshape(-1), b.reshape(-1))


def tensordot(a, b, axes=2):
    """NumPy's ``tensordot`` (torch's ``dims`` wants lists where NumPy also takes ints)."""
    a, b = _pair(a, b)
    if not isinstance(axes, int):
        axes = tuple([x] if isinstance(x, int) else list(x) for x in axes)
    return torch.tensordot(a, b, dims=axes)


def einsum(subscripts, *operands, optimize=None):
    """``torch.einsum`` (NumPy's string subscripts; ``optimize`` is accepted and ignored)."""
    return torch.einsum(subscripts, *[asarray(o) for o in operands])


def kron(a, b):
    return torch.kron(*_pair(a, b))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """NumPy's ``cross`` of 3-vectors: its axis arguments, operands broadcast (torch's
    ``linalg.cross`` needs equal ndim)."""
    a, b = _pair(a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = torch.broadcast_tensors(torch.movedim(a, axisa, -1), torch.movedim(b, axisb, -1))
    return torch.movedim(torch.linalg.cross(a, b), -1, axisc)


def trace(x, offset=0, axis1=0, axis2=1):
    """NumPy's ``trace`` (over the first two axes by default; torch's takes 2-D only)."""
    return torch.diagonal(asarray(x), offset, axis1, axis2).sum(-1)


def matrix_transpose(x):
    return asarray(x).mT


class _Linalg:
    """``xp.linalg`` with NumPy's meanings over ``torch.linalg``."""

    @staticmethod
    def det(a):
        return torch.linalg.det(asarray(a))

    @staticmethod
    def slogdet(a):
        """``(sign, logabsdet)``, as NumPy's."""
        sign, logabs = torch.linalg.slogdet(asarray(a))
        return sign, logabs

    @staticmethod
    def inv(a):
        return torch.linalg.inv(asarray(a))

    @staticmethod
    def solve(a, b):
        """NumPy 2's rule: ``b`` is a vector only if 1-D, else matrices (..., n, k) (torch
        also takes ``b`` of shape ``a.shape[:-1]`` as a batch of vectors)."""
        a, b = _pair(a, b)
        if b.ndim == 1:
            return torch.linalg.solve(a, b.expand(a.shape[:-2] + b.shape).unsqueeze(-1)).squeeze(-1)
        if b.ndim == a.ndim - 1:
            b = b.unsqueeze(0)     # same broadcast batch; no longer torch's vector case
        return torch.linalg.solve(a, b)

    @staticmethod
    def cholesky(a, upper=False):
        return torch.linalg.cholesky(asarray(a), upper=upper)

    @staticmethod
    def eigh(a, UPLO="L"):
        w, v = torch.linalg.eigh(asarray(a), UPLO=UPLO)
        return w, v

    @staticmethod
    def eigvalsh(a, UPLO="L"):
        return torch.linalg.eigvalsh(asarray(a), UPLO=UPLO)

    @staticmethod
    def qr(a, mode="reduced"):
        q, r = torch.linalg.qr(asarray(a), mode=mode)
        return q, r

    @staticmethod
    def norm(x, ord=None, axis=None, keepdims=False):
        """``np.linalg.norm``'s signature over ``torch.linalg.norm``."""
        x = asarray(x)
        if axis is None and ord is not None and x.ndim > 2:
            raise ValueError(f"norm: improper number of dimensions ({x.ndim}) for ord={ord!r}.")
        return torch.linalg.norm(x, ord, dim=axis, keepdim=keepdims)

    @staticmethod
    def vector_norm(x, axis=None, keepdims=False, ord=2):
        return torch.linalg.vector_norm(asarray(x), ord, dim=axis, keepdim=keepdims)

    @staticmethod
    def matrix_norm(x, ord="fro", keepdims=False):
        return torch.linalg.matrix_norm(asarray(x), ord, keepdim=keepdims)

    @staticmethod
    def svd(a, full_matrices=True, compute_uv=True):
        """NumPy's ``svd``: ``(U, S, Vh)``, or ``S`` alone with ``compute_uv=False``."""
        if not compute_uv:
            return torch.linalg.svdvals(asarray(a))
        u, s, vh = torch.linalg.svd(asarray(a), full_matrices=full_matrices)
        return u, s, vh

    @staticmethod
    def svdvals(a):
        return torch.linalg.svdvals(asarray(a))

    @staticmethod
    def pinv(a, rcond=None, hermitian=False):
        """NumPy's ``rcond`` (default 1e-15, relative to the largest singular value) is
        torch's ``rtol``."""
        return torch.linalg.pinv(asarray(a), rtol=1e-15 if rcond is None else rcond,
                                 hermitian=hermitian)

    @staticmethod
    def matrix_power(a, n):
        return torch.linalg.matrix_power(asarray(a), n)

    @staticmethod
    def multi_dot(arrays):
        return torch.linalg.multi_dot([asarray(a) for a in arrays])

    def __repr__(self):
        return "<torch linalg namespace (diffcompare.backends.torch_namespace.linalg)>"


linalg = _Linalg()
