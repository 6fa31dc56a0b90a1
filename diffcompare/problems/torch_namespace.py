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
>>> from diffcompare.problems import torch_namespace
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


def sigmoid(x):
    """``torch.sigmoid`` in one op: the engine's namespace has its own sigmoid too (the
    contract provides one only where a namespace has none)."""
    return torch.sigmoid(x)


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
        return "<torch linalg namespace (diffcompare.problems.torch_namespace.linalg)>"


linalg = _Linalg()


# --- NumPy's wider elementwise names ---------------------------------------------------------

def _floating(x):
    """``x`` as a tensor that NumPy's float functions accept: integers and bools become float64
    (NumPy's result dtype; torch would make float32)."""
    x = asarray(x)
    return x if x.is_floating_point() or x.is_complex() else x.to(torch.float64)


def _float_unary(name, torch_name=None, doc=None):
    def function(x):
        return getattr(torch, torch_name or name)(_floating(x))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc or f"NumPy's ``{name}`` (``torch.{torch_name or name}``; integers give float64)."
    return function


def _float_binary(name, torch_name, doc=None):
    def function(a, b):
        a, b = _pair(a, b)
        if not (a.is_floating_point() or b.is_floating_point()):
            a, b = a.to(torch.float64), b.to(torch.float64)
        return getattr(torch, torch_name)(a, b)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc or f"NumPy's ``{name}`` (``torch.{torch_name}``); Python numbers as NumPy takes them."
    return function


exp2 = _float_unary("exp2")
expm1 = _float_unary("expm1")
log10 = _float_unary("log10")
log2 = _float_unary("log2")
sinh = _float_unary("sinh")
cosh = _float_unary("cosh")
tan = _float_unary("tan")
arcsin = _float_unary("arcsin", "asin")
arccos = _float_unary("arccos", "acos")
arctan = _float_unary("arctan", "atan")
arcsinh = _float_unary("arcsinh", "asinh")
arccosh = _float_unary("arccosh", "acosh")
arctanh = _float_unary("arctanh", "atanh")
ceil = _float_unary("ceil")
floor = _float_unary("floor")
trunc = _float_unary("trunc")
deg2rad = radians = _float_unary("deg2rad")
rad2deg = degrees = _float_unary("rad2deg")
sinc = _float_unary("sinc", doc="NumPy's normalized ``sinc``, ``sin(pi x)/(pi x)`` (``torch.sinc``).")
absolute = fabs = _float_unary("absolute", "abs", "``|x|`` (``torch.abs``).")
arctan2 = _float_binary("arctan2", "atan2")
hypot = _float_binary("hypot", "hypot")
logaddexp = _float_binary("logaddexp", "logaddexp")
logaddexp2 = _float_binary("logaddexp2", "logaddexp2")
fmod = _float_binary("fmod", "fmod", "C's ``fmod``: the remainder has the sign of ``a`` (``torch.fmod``).")
fmax = _float_binary("fmax", "fmax", "NumPy's ``fmax``: the larger, NaN ignored (``torch.fmax``).")
fmin = _float_binary("fmin", "fmin", "NumPy's ``fmin``: the smaller, NaN ignored (``torch.fmin``).")
true_divide = _operator(operator.truediv, "true_divide", "/")


def remainder(a, b):
    """NumPy's ``remainder``/``mod``: the sign of ``b``, as Python's ``%`` (``torch.remainder``)."""
    return torch.remainder(*_pair(a, b))


mod = remainder


def round(x, decimals=0):      # noqa: A001 -- NumPy's name
    """NumPy's ``round``: half to even (``torch.round``), at ``decimals`` places."""
    return torch.round(_floating(x), decimals=decimals)


rint = around = round
fix = trunc                    # NumPy's fix rounds toward zero, as trunc
# the array API's spellings of the inverse functions
asin, acos, atan, asinh, acosh, atanh, atan2 = arcsin, arccos, arctan, arcsinh, arccosh, arctanh, arctan2


def reciprocal(x):
    """``1/x``; integers give float64 as NumPy's float result (torch's gives float32)."""
    return 1 / _floating(x)


def cbrt(x):
    """The real cube root (torch has none): ``sign(x) |x|**(1/3)``."""
    x = _floating(x)
    return torch.sign(x) * torch.abs(x) ** (1.0 / 3.0)


def positive(x):
    return torch.positive(asarray(x))


def real(x):
    """The real part (``x`` itself for a real tensor)."""
    x = asarray(x)
    return torch.real(x)


def imag(x):
    """The imaginary part: zeros for a real tensor (``torch.imag`` refuses real tensors)."""
    x = asarray(x)
    return torch.imag(x) if x.is_complex() else torch.zeros_like(x)


def conj(x):
    """The complex conjugate (``x`` itself for a real tensor)."""
    x = asarray(x)
    return torch.conj_physical(x) if x.is_complex() else x


conjugate = conj


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NumPy's ``nan_to_num`` (``torch.nan_to_num``): NaN to ``nan``, infinities to the
    dtype's largest finite numbers (or ``posinf``/``neginf``)."""
    return torch.nan_to_num(asarray(x), nan=nan, posinf=posinf, neginf=neginf)


# --- reductions and scans -----------------------------------------------------------------

def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return tuple(sorted(operator.index(a) % ndim for a in axes))


def prod(x, axis=None, keepdims=False):
    """NumPy's ``prod`` over an axis, a tuple of axes or all (torch's takes one dim)."""
    x = asarray(x)
    out = x
    for ax in reversed(_axes(axis, x.ndim)):
        out = torch.prod(out, dim=ax, keepdim=True)
    if keepdims:
        return out
    return out.reshape([n for d, n in enumerate(x.shape) if d not in _axes(axis, x.ndim)])


def var(x, axis=None, ddof=0, keepdims=False):
    """NumPy's ``var``: ``ddof=0`` by default (torch's default divides by ``n - 1``)."""
    return _compat.var(asarray(x), axis=axis, correction=ddof, keepdims=keepdims)


def std(x, axis=None, ddof=0, keepdims=False):
    """NumPy's ``std`` (``ddof=0`` by default)."""
    return _compat.std(asarray(x), axis=axis, correction=ddof, keepdims=keepdims)


def nansum(x, axis=None, keepdims=False):
    """NumPy's ``nansum``: NaNs count as zero (``torch.nansum`` over NumPy's axes)."""
    x = asarray(x)
    return torch.nansum(x, dim=_axes(axis, x.ndim), keepdim=keepdims)


def nanmean(x, axis=None, keepdims=False):
    """NumPy's ``nanmean``: the mean of the non-NaN elements."""
    x = asarray(x)
    return torch.nanmean(x, dim=_axes(axis, x.ndim), keepdim=keepdims)


def average(x, axis=None, weights=None):
    """NumPy's ``average``: the mean, or ``sum(x w) / sum(w)`` with ``weights`` (the same
    shape as ``x``, or 1-D along ``axis``)."""
    x = asarray(x)
    if weights is None:
        return torch.mean(x, dim=_axes(axis, x.ndim))
    w = asarray(weights)
    if w.ndim == 1 and x.ndim > 1:
        if axis is None:
            raise TypeError("average: 1-D weights need an axis (as NumPy).")
        w = w.reshape([-1 if d == axis % x.ndim else 1 for d in range(x.ndim)])
    dims = _axes(axis, x.ndim)
    return torch.sum(x * w, dim=dims) / torch.sum(torch.broadcast_to(w, x.shape), dim=dims)


def take_along_axis(arr, indices, axis):
    """NumPy's ``take_along_axis`` (``torch.take_along_dim``; ``axis=None`` flattens)."""
    return torch.take_along_dim(asarray(arr), torch.as_tensor(indices), dim=axis)


def cumsum(x, axis=None):
    """NumPy's ``cumsum``: ``axis=None`` runs over the flattened array."""
    x = asarray(x)
    return torch.cumsum(x.reshape(-1) if axis is None else x, dim=0 if axis is None else axis)


def cumprod(x, axis=None):
    """NumPy's ``cumprod``: ``axis=None`` runs over the flattened array."""
    x = asarray(x)
    return torch.cumprod(x.reshape(-1) if axis is None else x, dim=0 if axis is None else axis)


def diag(v, k=0):
    """NumPy's ``diag``: a 1-D array to a matrix, a matrix to its ``k``-th diagonal."""
    return torch.diag(asarray(v), k)


def diagonal(x, offset=0, axis1=0, axis2=1):
    """NumPy's ``diagonal`` (the diagonal's axis last, as torch's)."""
    return torch.diagonal(asarray(x), offset, axis1, axis2)


def tril(x, k=0):
    return torch.tril(asarray(x), k)


def triu(x, k=0):
    return torch.triu(asarray(x), k)


def diff(x, n=1, axis=-1):
    """NumPy's ``diff``: the ``n``-th difference along ``axis``."""
    return torch.diff(asarray(x), n=n, dim=axis)


def sort(x, axis=-1):
    """NumPy's ``sort`` (values; ``axis=None`` sorts the flattened array)."""
    x = asarray(x)
    return torch.sort(x.reshape(-1) if axis is None else x, dim=-1 if axis is None else axis).values


# --- shapes ---------------------------------------------------------------------------------

def moveaxis(x, source, destination):
    return torch.movedim(asarray(x), source, destination)


def rollaxis(x, axis, start=0):
    """NumPy's ``rollaxis``: ``axis`` moved to before ``start``."""
    x = asarray(x)
    n = x.ndim
    axis = operator.index(axis) % n
    start = start + n if start < 0 else start
    if axis < start:
        start -= 1
    if axis == start:
        return x
    order = [d for d in range(n) if d != axis]
    order.insert(start, axis)
    return x.permute(*order)


def ravel(x):
    return torch.ravel(asarray(x))


def repeat(x, repeats, axis=None):
    """NumPy's ``repeat``: each element ``repeats`` times (``axis=None``: flattened)."""
    x = asarray(x)
    if not isinstance(repeats, int):
        repeats = asarray(repeats).to(torch.int64)
    return torch.repeat_interleave(x.reshape(-1) if axis is None else x, repeats,
                                   dim=0 if axis is None else axis)


def tile(x, reps):
    return torch.tile(asarray(x), (reps,) if isinstance(reps, int) else tuple(reps))


def roll(x, shift, axis=None):
    """NumPy's ``roll`` (``axis=None``: over the flattened array, the shape kept)."""
    return torch.roll(asarray(x), shift, axis)


def flip(x, axis=None):
    """NumPy's ``flip``: every axis for ``axis=None`` (torch's needs its dims)."""
    x = asarray(x)
    return torch.flip(x, _axes(axis, x.ndim))


def flipud(x):
    return torch.flipud(asarray(x))


def fliplr(x):
    return torch.fliplr(asarray(x))


def rot90(x, k=1, axes=(0, 1)):
    return torch.rot90(asarray(x), k, tuple(axes))


def _at_least(fn, arrays):
    out = [fn(asarray(a)) for a in arrays]
    return out[0] if len(out) == 1 else out


def atleast_1d(*arrays):
    return _at_least(torch.atleast_1d, arrays)


def atleast_2d(*arrays):
    return _at_least(torch.atleast_2d, arrays)


def atleast_3d(*arrays):
    """NumPy's ``atleast_3d``: ``(N,)`` becomes ``(1, N, 1)``, ``(M, N)`` becomes ``(M, N, 1)``."""
    def three(x):
        if x.ndim == 0:
            return x.reshape(1, 1, 1)
        if x.ndim == 1:
            return x.reshape(1, -1, 1)
        return x[..., None] if x.ndim == 2 else x

    return _at_least(three, arrays)


def vstack(arrays):
    return torch.vstack([asarray(a) for a in arrays])


def hstack(arrays):
    return torch.hstack([asarray(a) for a in arrays])


def column_stack(arrays):
    return torch.column_stack([asarray(a) for a in arrays])


def dstack(arrays):
    return torch.dstack([asarray(a) for a in arrays])


def append(x, values, axis=None):
    """NumPy's ``append``: both flattened for ``axis=None``, else concatenated along it."""
    x, values = asarray(x), asarray(values)
    if axis is None:
        return torch.cat([x.reshape(-1), values.reshape(-1)])
    return torch.cat([x, values], dim=axis)


def pad(x, pad_width, mode="constant", constant_values=0):
    """NumPy's ``pad``, ``mode="constant"`` (another mode is refused, naming it)."""
    if mode != "constant":
        raise NotImplementedError(f"the torch namespace's pad takes mode='constant' only, not "
                                  f"{mode!r}.")
    x = asarray(x)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2))
    flat = [int(w) for pair in reversed(widths.tolist()) for w in pair]
    return torch.nn.functional.pad(x, flat, mode="constant", value=float(constant_values))


def select(condlist, choicelist, default=0):
    """NumPy's ``select``: the first true condition's choice, else ``default``."""
    choices = [asarray(c) for c in choicelist]
    if isinstance(default, torch.Tensor):
        out = default
    else:       # a number takes the choices' dtype (as NumPy's result_type of them and it)
        dtype = choices[0].dtype if choices else torch.float64
        for c in choices[1:]:
            dtype = torch.promote_types(dtype, c.dtype)
        out = torch.tensor(default, dtype=torch.promote_types(
            dtype, torch.tensor(default).dtype) if not isinstance(default, float) else dtype)
    for cond, choice in reversed(list(zip(condlist, choices))):
        out = where(cond, choice, out)
    return out


def split(x, indices_or_sections, axis=0):
    """NumPy's ``split``: ``n`` equal parts (refused if they cannot be equal) or at indices."""
    x = asarray(x)
    if isinstance(indices_or_sections, int) and x.shape[axis] % indices_or_sections:
        raise ValueError("array split does not result in an equal division")
    return array_split(x, indices_or_sections, axis)


def array_split(x, indices_or_sections, axis=0):
    """NumPy's ``array_split`` (``torch.tensor_split``): parts may differ by one."""
    sections = (indices_or_sections if isinstance(indices_or_sections, int)
                else [int(i) for i in indices_or_sections])
    return list(torch.tensor_split(asarray(x), sections, dim=axis))


def vsplit(x, indices_or_sections):
    return split(x, indices_or_sections, axis=0)


def hsplit(x, indices_or_sections):
    x = asarray(x)
    return split(x, indices_or_sections, axis=1 if x.ndim > 1 else 0)


def dsplit(x, indices_or_sections):
    return split(x, indices_or_sections, axis=2)


def take(x, indices, axis=None):
    """NumPy's ``take``: elements of the flattened array, or along ``axis``."""
    x = asarray(x)
    index = indices if isinstance(indices, torch.Tensor) else torch.as_tensor(np.asarray(indices))
    if axis is None:
        return x.reshape(-1)[index]
    return x[(slice(None),) * (operator.index(axis) % x.ndim) + (index,)]


# --- new arrays -------------------------------------------------------------------------------

def linspace(start, stop, num=50, endpoint=True, dtype=None):
    """NumPy's ``linspace``, float64."""
    return asarray(np.linspace(start, stop, num, endpoint=endpoint), dtype=dtype)


def array(x, dtype=None):
    """NumPy's ``array``: a copy (of a tensor, its graph kept, as ``clone``)."""
    if isinstance(x, torch.Tensor):
        out = x.clone()
        return out if dtype is None else out.to(_dtype(dtype))
    out = asarray(x, dtype=dtype)
    return out.clone() if isinstance(x, (list, tuple)) else asarray(np.array(x), dtype=dtype)
