"""A SymPy array namespace: run a problem's ``fn(xp, *args)`` on symbols.

Arrays of SymPy expressions are NumPy object arrays (``SymArray``, a thin
subclass); ``sympy_xp`` offers NumPy's function names over them, elementwise,
so the function written once for NumPy, JAX and the engine builds a SymPy
expression here.  The symbolic backend differentiates that expression exactly.

>>> import numpy as np
>>> from diffcompare.problems.symbolic import sympy_xp as sxp, symbols_like
>>> s = symbols_like((np.array([1.0, 2.0]),), wrt=(0,))
>>> x, = s.args
>>> x
SymArray([x0_0, x0_1], dtype=object)
>>> sxp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
(1 - x0_0)**2 + 100*(-x0_0**2 + x0_1)**2
>>> sxp.max(x), sxp.where(x > 0, x, 0)[0]
(Max(x0_0, x0_1), Piecewise((x0_0, x0_0 > 0), (0, True)))

Supported (everything else raises ``NotImplementedError`` naming the function):

- operators ``+ - * / ** @``, unary ``-``, ``abs()``, comparisons ``< <= > >=``
  (give arrays of SymPy relationals, for ``where``), indexing and slicing,
  ``.T``, ``.shape``, ``.ndim``, ``.size``, ``.reshape``, iteration;
- elementwise: ``exp exp2 expm1 log log1p log10 log2 sqrt cbrt square reciprocal sin cos tan
  arcsin arccos arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh sinc hypot deg2rad
  rad2deg degrees radians logaddexp logaddexp2 abs absolute fabs sign ceil floor trunc negative
  positive add subtract multiply divide true_divide power remainder mod fmod maximum minimum fmax
  fmin clip where select real imag conj conjugate`` (``floor``/``ceil``/``trunc`` with
  derivative 0, as torch's; ``cbrt`` the real root);
- reductions (``axis``/``keepdims``): ``sum mean prod var std max min amax amin`` (max/min as
  ``sympy.Max``/``Min``), also as methods (``x.sum()``, ``x.max(axis=0)``); ``cumsum cumprod
  diff trace``;
- linear algebra: ``matmul`` (``@``) for 1-D and 2-D operands; NumPy's ``dot inner outer
  tensordot einsum kron cross trace vdot matrix_transpose`` on object arrays; ``linalg``:
  ``det slogdet inv solve cholesky`` through ``sympy.Matrix`` for n <= 4
  (``SYMBOLIC_LINALG_MAX_N``: a symbolic n x n det has n! terms; larger sizes are refused
  naming that size), ``norm vector_norm matrix_norm matrix_power multi_dot``;
  ``eigh eigvalsh qr svd svdvals pinv`` raise
  ``NotImplementedError`` with the reason (no usable closed form);
- shape: ``reshape transpose permute_dims swapaxes expand_dims squeeze broadcast_to
  stack concatenate concat moveaxis rollaxis ravel repeat tile roll flip flipud fliplr rot90
  diag diagonal tril triu atleast_1d atleast_2d atleast_3d vstack hstack column_stack dstack
  append pad split array_split vsplit hsplit dsplit take`` (NumPy's own, on object arrays);
- creation: ``asarray array zeros ones full zeros_like ones_like arange linspace eye``;
  constants ``pi e inf nan newaxis float64 float32``.

Not given, each for a reason the xp contract's table records
(``diffcompare.problems.contract.LACKS``): ``round`` (half to even has no SymPy function),
``sort`` (needs the values), ``nan_to_num`` (an expression has no NaN to replace).

Numeric (non-object) arguments stay NumPy arrays: ``sympy_xp.exp(np.ones(2))`` is
plain NumPy, so constant inputs are not turned into SymPy numbers needlessly.

Conventions worth knowing: symbols are real, so ``d|x|/dx = sign(x)`` (0 at 0);
``d Max(x, y)/dx = Heaviside(x - y)``, which is ``1/2`` at a tie (also for
``maximum(x, 0)``: relu'(0) = 1/2); an n-way tie in a ``max`` reduction gives
``1/2`` to every tied element (a sum of n/2, not a subgradient); ``where`` becomes
``Piecewise``, whose derivative takes the branch the condition selects.
"""
from __future__ import annotations

import builtins
import dataclasses
import operator

import numpy as np
import sympy

__all__ = ["SymArray", "SymbolicInputs", "symbols_like", "sympy_xp", "SympyNamespace",
           "SUPPORTED_FUNCTIONS", "lift"]


# --- the array type -----------------------------------------------------------------

def _relational(cls):
    return np.frompyfunc(lambda a, b: cls(a, b), 2, 1)


def _elementwise(func):
    return np.frompyfunc(func, 1, 1)


def _square(a):
    return a * a


def _sign(a):
    return sympy.sign(a)


# numpy ufunc -> elementwise sympy function (object-dtype numpy would call a method
# named like the ufunc, ``x.exp()``, which SymPy expressions do not have).
def _unevaluated(func):
    """``func(a)``, without SymPy's automatic evaluation when ``a`` is a compound expression:
    ``tanh(u).eval`` asks assumptions (is ``u`` zero? negative?) of the whole of ``u``, which
    for a long sum costs milliseconds per element and rewrites nothing."""
    def f(a):
        if isinstance(a, sympy.Basic) and a.args:
            return func(a, evaluate=False)
        return func(a)

    return f


_exp, _log = _unevaluated(sympy.exp), _unevaluated(sympy.log)


def _zero_derivative(base, qualname):
    """``base`` (SymPy's ``floor``/``ceiling``) whose derivative is 0: SymPy leaves
    ``Derivative(floor(x), x)``, which does not evaluate; 0 almost everywhere is torch's and
    JAX's gradient.  The class keeps SymPy's name, so every printer writes ``floor``."""
    return type(base.__name__, (base,), {
        "fdiff": lambda self, argindex=1: sympy.S.Zero, "__qualname__": qualname,
        "__doc__": f"SymPy's ``{base.__name__}`` with derivative 0 (diffcompare)."})


_Floor = _zero_derivative(sympy.floor, "_Floor")        # qualname: pickled by reference
_Ceiling = _zero_derivative(sympy.ceiling, "_Ceiling")


def _trunc(a):
    """Towards zero: ``floor`` for ``a >= 0``, ``ceiling`` below (derivative 0)."""
    return sympy.Piecewise((_Floor(a), a >= 0), (_Ceiling(a), True))


def _cbrt(a):
    """The real cube root (``a**(1/3)`` is SymPy's principal, complex root for ``a < 0``):
    ``+-|a|**(1/3)``, both branches finite everywhere, so a reverse sweep that multiplies the
    unused branch's derivative by 0 gets 0, not NaN (``(-a)**(1/3)`` is NaN for ``a > 0``)."""
    root = sympy.Abs(a) ** sympy.Rational(1, 3)
    return sympy.Piecewise((root, a >= 0), (-root, True))


def _remainder(a, b):
    """NumPy's ``remainder``/``mod``: the sign of ``b`` (Python's ``%``): ``a - b*floor(a/b)``."""
    return a - b * _Floor(a / b)


def _fmod(a, b):
    """C's ``fmod``: the sign of ``a``: ``a - b*trunc(a/b)``."""
    return a - b * _trunc(a / b)


def _sinc(a):
    """NumPy's normalized ``sinc``: ``sin(pi a)/(pi a)``, 1 at 0."""
    return sympy.sinc(sympy.pi * a)


_UNARY = {
    np.exp: _exp, np.log: _log, np.sqrt: sympy.sqrt, np.sin: _unevaluated(sympy.sin),
    np.cos: _unevaluated(sympy.cos), np.tan: _unevaluated(sympy.tan),
    np.tanh: _unevaluated(sympy.tanh), np.sinh: _unevaluated(sympy.sinh),
    np.cosh: _unevaluated(sympy.cosh), np.arctan: _unevaluated(sympy.atan), np.absolute: sympy.Abs,
    np.sign: _sign, np.square: _square, np.log1p: lambda a: _log(1 + a), np.expm1: lambda a: _exp(a) - 1,
    np.fabs: sympy.Abs, np.exp2: lambda a: sympy.Pow(2, a), np.log10: lambda a: _log(a) / sympy.log(10),
    np.log2: lambda a: _log(a) / sympy.log(2), np.arcsin: _unevaluated(sympy.asin),
    np.arccos: _unevaluated(sympy.acos), np.arcsinh: _unevaluated(sympy.asinh),
    np.arccosh: _unevaluated(sympy.acosh), np.arctanh: _unevaluated(sympy.atanh),
    np.floor: _Floor, np.ceil: _Ceiling, np.trunc: _trunc, np.cbrt: _cbrt,
    np.deg2rad: lambda a: a * sympy.pi / 180, np.rad2deg: lambda a: a * 180 / sympy.pi,
    np.reciprocal: lambda a: 1 / a, np.conjugate: sympy.conjugate,
}
_UNARY[np.radians], _UNARY[np.degrees] = _UNARY[np.deg2rad], _UNARY[np.rad2deg]
_UNARY_UFUNCS = {k: _elementwise(v) for k, v in _UNARY.items()}
_BINARY_UFUNCS = {
    np.maximum: np.frompyfunc(sympy.Max, 2, 1), np.fmax: np.frompyfunc(sympy.Max, 2, 1),
    np.minimum: np.frompyfunc(sympy.Min, 2, 1), np.fmin: np.frompyfunc(sympy.Min, 2, 1),
    np.less: _relational(sympy.Lt), np.less_equal: _relational(sympy.Le),
    np.greater: _relational(sympy.Gt), np.greater_equal: _relational(sympy.Ge),
    np.equal: _relational(sympy.Eq), np.not_equal: _relational(sympy.Ne),
    np.arctan2: np.frompyfunc(sympy.atan2, 2, 1),
    np.hypot: np.frompyfunc(lambda a, b: sympy.sqrt(a * a + b * b), 2, 1),
    np.logaddexp: np.frompyfunc(lambda a, b: _log(_exp(a) + _exp(b)), 2, 1),
    np.logaddexp2: np.frompyfunc(lambda a, b: _log(sympy.Pow(2, a) + sympy.Pow(2, b)) / sympy.log(2),
                                 2, 1),
    np.remainder: np.frompyfunc(_remainder, 2, 1), np.fmod: np.frompyfunc(_fmod, 2, 1),
}
# object-dtype loops that call Python operators, which SymPy implements
_PASSTHROUGH = {np.add, np.subtract, np.multiply, np.true_divide, np.divide, np.power,
                np.negative, np.positive, np.float_power}
_REDUCERS = {np.add: sympy.Add, np.multiply: sympy.Mul, np.maximum: sympy.Max,
             np.minimum: sympy.Min, np.fmax: sympy.Max, np.fmin: sympy.Min}


class SymArray(np.ndarray):
    """A NumPy object array of SymPy expressions.

    Differs from a plain object array only where NumPy would need Python truth
    values or methods SymPy lacks: comparisons give arrays of relationals,
    ``maximum``/``minimum``/``max``/``min`` use ``sympy.Max``/``Min``, ``exp``/``log``/...
    use SymPy's functions, ``sum`` uses one n-ary ``sympy.Add`` (linear, where numpy's
    pairwise ``+`` would be quadratic), ``@`` builds each element with one ``Add``.
    """

    __array_priority__ = 100.0

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        plain = tuple(i.view(np.ndarray) if isinstance(i, SymArray) else i for i in inputs)
        if method == "__call__":
            if ufunc is np.matmul:
                result = _matmul(*plain)
            elif ufunc in _UNARY_UFUNCS:
                result = _UNARY_UFUNCS[ufunc](*plain, **kwargs)
            elif ufunc in _BINARY_UFUNCS:
                result = _BINARY_UFUNCS[ufunc](*plain, **kwargs)
            elif ufunc in _PASSTHROUGH:
                result = ufunc(*(_as_object(p) for p in plain), **kwargs)
            else:
                raise NotImplementedError(
                    f"numpy.{ufunc.__name__} is not supported on symbolic (SymPy) arrays; "
                    f"supported functions: {', '.join(SUPPORTED_FUNCTIONS)}.")
        elif method == "reduce" and ufunc in _REDUCERS:
            result = _reduce(plain[0], kwargs.get("axis", 0), kwargs.get("keepdims", False),
                             _REDUCERS[ufunc])
        else:
            raise NotImplementedError(
                f"numpy.{ufunc.__name__}.{method} is not supported on symbolic (SymPy) arrays.")
        if out is not None:
            target = out[0] if isinstance(out, tuple) else out
            target[...] = result
            return target
        return _wrap(result)


def _as_object(a):
    if isinstance(a, np.ndarray) and a.dtype != object:
        return a.astype(object)
    return a


def _wrap(result):
    """Object arrays as ``SymArray``; 0-d results unwrapped to their element."""
    if isinstance(result, np.ndarray):
        if result.ndim == 0:
            return result[()]
        if result.dtype == object and not isinstance(result, SymArray):
            return result.view(SymArray)
    return result


def lift(x):
    """``x`` as a ``SymArray`` if it holds SymPy objects, else unchanged (numeric stays numeric)."""
    if isinstance(x, SymArray):
        return x
    if isinstance(x, sympy.Basic):
        a = np.empty((), dtype=object)
        a[()] = x
        return a.view(SymArray)
    if isinstance(x, np.ndarray) and x.dtype == object:
        return x.view(SymArray)
    if isinstance(x, (list, tuple)) and _holds_symbolic(x):
        a = np.empty(np.shape(np.asarray(x, dtype=object)), dtype=object)
        a[...] = np.asarray(x, dtype=object)
        return a.view(SymArray)
    return x


def _holds_symbolic(x) -> bool:
    if isinstance(x, (list, tuple)):
        return builtins.any(_holds_symbolic(i) for i in x)
    return isinstance(x, sympy.Basic) or (isinstance(x, np.ndarray) and x.dtype == object)


def _is_symbolic(x) -> bool:
    return isinstance(x, sympy.Basic) or (isinstance(x, np.ndarray) and x.dtype == object)


# --- reductions and matmul ----------------------------------------------------------

def _normalize_axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for ax in axes:
        ax = operator.index(ax)
        if not -ndim <= ax < ndim:
            raise np.exceptions.AxisError(ax, ndim)
        out.append(ax % ndim)
    return tuple(sorted(set(out)))


def _reduce(x, axis, keepdims, combine):
    """Reduce over ``axis`` with one n-ary SymPy call (``Add``, ``Mul``, ``Max``, ``Min``) per output."""
    a = np.asarray(x, dtype=object)
    axes = _normalize_axes(axis, a.ndim)
    kept = [d for d in range(a.ndim) if d not in axes]
    moved = np.transpose(a, kept + list(axes))
    kept_shape = tuple(a.shape[d] for d in kept)
    rows = moved.reshape(kept_shape + (-1,))
    if rows.shape[-1] == 0 and combine in (sympy.Max, sympy.Min):
        raise ValueError("zero-size array to reduction operation max/min which has no identity")
    out = np.empty(kept_shape, dtype=object)
    for idx in np.ndindex(*kept_shape):
        out[idx] = combine(*rows[idx])
    if keepdims:
        out = out.reshape(tuple(1 if d in axes else n for d, n in enumerate(a.shape)))
    return out


def _matmul(a, b):
    """``a @ b`` for 1-D/2-D operands, each element one ``sympy.Add`` of products."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: input operand does not have enough dimensions (use * for scalars)")
    if a.ndim > 2 or b.ndim > 2:
        raise NotImplementedError("matmul on symbolic arrays supports 1-D and 2-D operands only; "
                                  f"got shapes {a.shape} and {b.shape}.")
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    if a2.shape[1] != b2.shape[0]:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} are not aligned "
                         f"({a2.shape[1]} != {b2.shape[0]}).")
    a2, b2 = _as_object(a2), _as_object(b2)
    out = np.empty((a2.shape[0], b2.shape[1]), dtype=object)
    for i in range(a2.shape[0]):
        row = a2[i]
        for j in range(b2.shape[1]):
            out[i, j] = sympy.Add(*(row * b2[:, j]))
    if a.ndim == 1:
        out = out[0]
    if b.ndim == 1:
        out = out[..., 0]
    return out


# --- the namespace ----------------------------------------------------------------

def _unary(name, ufunc):
    def f(x):
        if _is_symbolic(x):
            return _wrap(ufunc(lift(x)))
        return ufunc(x)

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` (SymPy's on symbolic arrays, NumPy's on numbers)."
    return f


def _binary(name, ufunc):
    def f(a, b):
        if _is_symbolic(a) or _is_symbolic(b):
            return _wrap(ufunc(lift(a), lift(b)))
        return ufunc(a, b)

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` with broadcasting."
    return f


def _reduction(name, ufunc):
    def f(x, axis=None, keepdims=False):
        if _is_symbolic(x):
            return _wrap(_reduce(x, axis, keepdims, _REDUCERS[ufunc]))
        return ufunc.reduce(np.asarray(x), axis=axis, keepdims=keepdims)

    f.__name__ = name
    f.__doc__ = f"``{name}`` over ``axis`` (one n-ary SymPy node per output element)."
    return f


def _shape_fn(name, func):
    def f(*args, **kwargs):
        args = tuple(lift(a) if i == 0 else a for i, a in enumerate(args))
        return _wrap(func(*args, **kwargs))

    f.__name__ = name
    return f


def _sequence_fn(name, func):
    def f(arrays, axis=0):
        arrays = list(arrays)
        if builtins.any(_is_symbolic(a) for a in arrays):
            arrays = [_as_object(np.asarray(lift(a))) if not isinstance(a, SymArray) else a
                      for a in arrays]
            return _wrap(func([np.asarray(a) for a in arrays], axis=axis))
        return func(arrays, axis=axis)

    f.__name__ = name
    return f


def _mean(x, axis=None, keepdims=False):
    if not _is_symbolic(x):
        return np.mean(x, axis=axis, keepdims=keepdims)
    a = np.asarray(lift(x))
    count = int(np.prod([a.shape[d] for d in _normalize_axes(axis, a.ndim)]))
    total = _wrap(_reduce(a, axis, keepdims, sympy.Add))
    return _wrap(total / count)


def _where(condition, a, b):
    if not (_is_symbolic(condition) or _is_symbolic(a) or _is_symbolic(b)):
        return np.where(condition, a, b)
    cond, x, y = np.broadcast_arrays(*(np.asarray(v, dtype=object) for v in (condition, a, b)))
    return _wrap(_piecewise(cond, x, y))


def _pick(c, a, b):
    if isinstance(c, (bool, np.bool_)):
        return a if c else b
    if c is sympy.true:
        return a
    if c is sympy.false:
        return b
    return sympy.Piecewise((a, c), (b, True))


_piecewise = np.frompyfunc(_pick, 3, 1)


def _clip(x, a_min=None, a_max=None):
    if a_min is not None:
        x = maximum(x, a_min)
    if a_max is not None:
        x = minimum(x, a_max)
    return x


def _asarray(x, dtype=None):
    if _holds_symbolic(x) if isinstance(x, (list, tuple)) else _is_symbolic(x):
        return lift(x)
    return np.asarray(x, dtype=dtype)

def _plain(x):
    """``x`` as NumPy's functions should see it: a plain object array if symbolic (a
    ``SymArray`` would route their ufuncs back here), sequences element by element."""
    if isinstance(x, (list, tuple)) and _holds_symbolic(x):
        return [_plain(v) for v in x]
    if _is_symbolic(x):
        return np.asarray(lift(x)).view(np.ndarray)
    return x


_sympified = np.frompyfunc(sympy.sympify, 1, 1)


def _rewrap(result):
    if isinstance(result, (list, tuple)):
        return [_rewrap(r) for r in result]
    if isinstance(result, np.ndarray) and result.dtype == object:
        result = _sympified(result) if result.ndim else _sympified(result[()])
    return _wrap(result)


def _object_fn(name, func, symbolic_args=None):
    """NumPy's ``func`` on object arrays of expressions (its loops call Python's operators,
    which SymPy implements); numbers alone go to NumPy unchanged."""
    def f(*args, **kwargs):
        if not builtins.any(_holds_symbolic(a) if isinstance(a, (list, tuple)) else _is_symbolic(a)
                            for a in args):
            return func(*args, **kwargs)
        args = [[_as_object(np.asarray(v)) for v in _plain(a)]
                if isinstance(a, (list, tuple)) and _holds_symbolic(a) else _plain(a)
                if _is_symbolic(a) else a for a in args]       # indices etc. stay numbers
        return _rewrap(func(*args, **kwargs))

    f.__name__ = name
    f.__doc__ = f"NumPy's ``{name}`` on arrays of SymPy expressions."
    return f


def _accumulate(name, func):
    def f(x, axis=None):
        if not _is_symbolic(x):
            return func(x, axis=axis)
        a = _as_object(_plain(x))
        return _rewrap(func(a.reshape(-1) if axis is None else a, axis=0 if axis is None else axis))

    f.__name__ = name
    f.__doc__ = f"``{name}`` along ``axis`` (flattened for None), as NumPy's."
    return f


def _var(x, axis=None, ddof=0, keepdims=False):
    """NumPy's ``var``: the mean squared deviation, over ``n - ddof``."""
    if not _is_symbolic(x):
        return np.var(x, axis=axis, ddof=ddof, keepdims=keepdims)
    a = np.asarray(lift(x))
    count = int(np.prod([a.shape[d] for d in _normalize_axes(axis, a.ndim)]))
    d = lift(x) - _mean(x, axis=axis, keepdims=True)
    return _wrap(_wrap(_reduce(d * d, axis, keepdims, sympy.Add)) / (count - ddof))


def _std(x, axis=None, ddof=0, keepdims=False):
    if not _is_symbolic(x):
        return np.std(x, axis=axis, ddof=ddof, keepdims=keepdims)
    return sqrt_(_var(x, axis=axis, ddof=ddof, keepdims=keepdims))


def _select(condlist, choicelist, default=0):
    """NumPy's ``select``: the first true condition's choice, else ``default``
    (a ``Piecewise`` per element, as ``where``)."""
    out = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = _where(cond, choice, out)
    if not builtins.any(_is_symbolic(v) for v in (*condlist, *choicelist, default)):
        return np.select(condlist, choicelist, default)
    shape = np.broadcast_shapes(*(np.shape(v) for v in (*condlist, *choicelist, default)))
    return _wrap(np.broadcast_to(np.asarray(lift(out), dtype=object), shape).copy())


def _direct(name, func, numeric, doc):
    """Elementwise ``func`` (a SymPy function) where NumPy's ``numeric`` is no ufunc."""
    loop = _elementwise(func)

    def f(x):
        if _is_symbolic(x):
            return _wrap(loop(np.asarray(lift(x)).view(np.ndarray)))
        return numeric(x)

    f.__name__, f.__doc__ = name, doc
    return f


_real = _direct("real", sympy.re, np.real, "The real part: ``x`` itself for real symbols.")
_imag = _direct("imag", sympy.im, np.imag, "The imaginary part: 0 for real symbols.")
_sinc_fn = _direct("sinc", _sinc, np.sinc, "NumPy's normalized ``sinc``, ``sin(pi x)/(pi x)``.")


def _array(x, dtype=None):
    """NumPy's ``array``: a copy (of expressions, or of numbers)."""
    if _holds_symbolic(x) if isinstance(x, (list, tuple)) else _is_symbolic(x):
        return _wrap(np.array(lift(x)).view(np.ndarray).copy())
    return np.array(x, dtype=dtype)


#: NumPy functions that work on object arrays of expressions as they are
_OBJECT_FUNCTIONS = ("trace", "diag", "diagonal", "tril", "triu", "moveaxis", "rollaxis", "ravel",
                     "repeat", "tile", "diff", "roll", "flip", "flipud", "fliplr", "rot90",
                     "atleast_1d", "atleast_2d", "atleast_3d", "vstack", "hstack", "column_stack",
                     "dstack", "append", "pad", "split", "array_split", "vsplit", "hsplit", "dsplit",
                     "take")


maximum = _binary("maximum", np.maximum)
minimum = _binary("minimum", np.minimum)
sqrt_ = _unary("sqrt", np.sqrt)


# --- linear algebra beyond matmul ------------------------------------------------------

def _products(name, func):
    """NumPy's ``func`` (dot, einsum, tensordot, kron, cross, ...) on object arrays: its sums
    and products are SymPy's; numeric operands stay NumPy."""
    def f(*args, **kwargs):
        if not builtins.any(_is_symbolic(a) for a in args):
            return func(*args, **kwargs)
        plain = [_as_object(np.asarray(a, dtype=object)).view(np.ndarray)
                 if _is_symbolic(a) or isinstance(a, np.ndarray) else a for a in args]
        return _wrap(func(*plain, **kwargs))

    f.__name__ = f.__qualname__ = name
    return f


def _dot(a, b):
    """NumPy's ``dot``: ``matmul`` (one n-ary ``Add`` per element) for 1-D/2-D operands, as
    before; NumPy's object ``dot`` for a 0-d or N-D operand."""
    if 1 <= np.ndim(a) <= 2 and 1 <= np.ndim(b) <= 2:
        return sympy_xp.matmul(a, b)
    return _products("dot", np.dot)(a, b)


def _vdot(a, b):
    """``vdot`` of real arrays: the flattened operands' dot product (no conjugate)."""
    a, b = np.ravel(np.asarray(a, dtype=object)), np.ravel(np.asarray(b, dtype=object))
    if a.size != b.size:
        raise ValueError(f"vdot: the operands have {a.size} and {b.size} elements.")
    return sympy.Add(*(a * b))


def _matrix_transpose(x):
    return _wrap(np.swapaxes(np.asarray(x), -1, -2))


#: the largest n for which an n x n symbolic det/inv/solve/cholesky is attempted: a det of a
#: general n x n symbolic matrix expands to n! terms (720 at n = 6)
SYMBOLIC_LINALG_MAX_N = 4


def _matrices(name, a):
    """The matrices (last two axes) of ``a`` as SymPy Matrices, batched; refuses sizes whose
    expansion is infeasible, naming the predicted size."""
    a = np.asarray(a, dtype=object)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError(f"sympy_xp.linalg.{name} needs square matrices (..., n, n), "
                                    f"got shape {a.shape}.")
    n = a.shape[-1]
    if n > SYMBOLIC_LINALG_MAX_N:
        import math
        raise NotImplementedError(
            f"sympy_xp.linalg.{name} of a {n} x {n} symbolic matrix is refused: a general "
            f"symbolic determinant expands to n! = {math.factorial(n)} terms (the inverse's and "
            f"a solve's entries to (n-1)! each), beyond the SymPy namespace's limit n <= "
            f"{SYMBOLIC_LINALG_MAX_N} (SYMBOLIC_LINALG_MAX_N); use a numeric method.")
    return a, n


def _batched(a, n, one):
    out = None
    for idx in np.ndindex(*a.shape[:-2]):
        r = one(sympy.Matrix(a[idx]))          # a SymPy scalar, or a matrix as nested lists
        shape = (n, n) if isinstance(r, list) else ()
        if out is None:
            out = np.empty(a.shape[:-2] + shape, dtype=object)
        if shape:
            out[idx] = _object_array(r)
        else:
            out[idx] = r
    return _wrap(out)


def _object_array(rows):
    out = np.empty((len(rows), len(rows[0])), dtype=object)
    for i, row in enumerate(rows):
        for j, v in enumerate(row):
            out[i, j] = v
    return out


def _det(a):
    a, n = _matrices("det", a)
    return _batched(a, n, lambda m: m.det(method="berkowitz"))


def _slogdet(a):
    d = np.asarray(_det(a), dtype=object)
    sign = np.frompyfunc(sympy.sign, 1, 1)(d)
    logabs = np.frompyfunc(lambda v: sympy.log(sympy.Abs(v)), 1, 1)(d)
    return _wrap(sign), _wrap(logabs)


def _inv(a):
    a, n = _matrices("inv", a)

    def one(m):
        d = m.det(method="berkowitz")
        if d == 0:
            raise np.linalg.LinAlgError("sympy_xp.linalg.inv: the matrix is singular.")
        return (m.adjugate() / d).tolist()
    return _batched(a, n, one)


def _solve(a, b):
    """NumPy 2's ``solve``: ``b`` a vector if 1-D, else matrices (..., n, k); batch axes
    broadcast."""
    inv = np.asarray(_inv(a), dtype=object)
    b = np.asarray(b, dtype=object)
    if b.ndim == 1:
        return _wrap(np.asarray(_products("matmul", np.matmul)(inv, b), dtype=object))
    batch = np.broadcast_shapes(inv.shape[:-2], b.shape[:-2])
    inv = np.broadcast_to(inv, batch + inv.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    out = np.empty(batch + (inv.shape[-1], b.shape[-1]), dtype=object)
    for idx in np.ndindex(*batch):
        out[idx] = _matmul(inv[idx], b[idx])
    return _wrap(out)


def _cholesky(a, upper=False):
    a, n = _matrices("cholesky", a)
    # NumPy reads only the lower triangle: the matrix is that triangle mirrored
    out = _batched(a, n, lambda m: sympy.Matrix(n, n, lambda i, j: m[max(i, j), min(i, j)])
                   .cholesky(hermitian=False).tolist())
    return _matrix_transpose(out) if upper else out


def _matrix_power(a, n):
    """``a`` (2-D) times itself ``n`` times (negative ``n``: of ``inv(a)``)."""
    a = np.asarray(a, dtype=object)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise NotImplementedError("sympy_xp.linalg.matrix_power supports one square 2-D matrix; "
                                  f"got shape {a.shape}.")
    if n < 0:
        a, n = np.asarray(_inv(a), dtype=object), -n
    out = np.eye(a.shape[0], dtype=int).astype(object)
    for _ in range(n):
        out = _matmul(out, a)
    return _wrap(out)


def _multi_dot(arrays):
    out = arrays[0]
    for a in arrays[1:]:
        out = _wrap(_matmul(out, a))
    return out


def _infeasible(name, reason):
    def f(*args, **kwargs):
        raise NotImplementedError(f"sympy_xp.linalg.{name} is not supported by the SymPy "
                                  f"namespace: {reason}")
    f.__name__ = name
    return f


_EIG_REASON = ("a symmetric matrix's eigen-decomposition needs the roots of its degree-n "
               "characteristic polynomial, which have no closed form beyond n = 4 and are "
               "unwieldy (nested radicals, branch choices for the ordering) beyond n = 2; use a "
               "numeric method.")
_SVD_REASON = ("singular values are square roots of the eigenvalues of A^T A, roots of a "
               "degree-n polynomial with no usable closed form (and singular vectors add sign "
               "and rotation choices); use a numeric method.")
_QR_REASON = ("Gram-Schmidt builds nested square roots of sums at every column, whose "
              "expressions (and their derivatives) grow too fast to be useful, and the sign "
              "convention of LAPACK's R is not expressible symbolically; use a numeric method.")


def _vector_norm(x, axis=None, keepdims=False, ord=2):
    x = lift(x)
    if ord == 2:
        return sympy_xp.sqrt(sympy_xp.sum(x * x, axis=axis, keepdims=keepdims))
    a = sympy_xp.abs(x)
    if ord == 1:
        return sympy_xp.sum(a, axis=axis, keepdims=keepdims)
    if ord == np.inf:
        return sympy_xp.max(a, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return sympy_xp.min(a, axis=axis, keepdims=keepdims)
    if isinstance(ord, str) or ord == 0:
        raise NotImplementedError(f"sympy_xp.linalg.vector_norm: ord={ord!r} is not supported "
                                  "symbolically (use 2, 1, inf, -inf or p > 0).")
    return sympy_xp.power(sympy_xp.sum(a ** ord, axis=axis, keepdims=keepdims), sympy.Rational(1) / ord)


def _norm(x, ord=None, axis=None, keepdims=False):
    """``np.linalg.norm``: vector norms (None/2, 1, inf, -inf, p) and matrix norms ('fro', 1,
    -1, inf, -inf); 'nuc' and 2/-2 of a matrix need singular values: refused."""
    x = lift(x)
    nd = np.ndim(x)
    if axis is None:
        if ord is None or (ord == "fro" and nd == 2):
            return _vector_norm(x, None, keepdims)
        axis = (0,) if nd == 1 else (0, 1) if nd == 2 else None
        if axis is None:
            raise ValueError(f"norm: improper number of dimensions ({nd}) for ord={ord!r}.")
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(axes) == 1:
        return _vector_norm(x, axes[0], keepdims, 2 if ord is None else ord)
    if ord in (None, "fro"):
        return _vector_norm(x, axes, keepdims)
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(f"sympy_xp.linalg.norm: the matrix norm ord={ord!r} needs "
                                  "singular values, which are not supported symbolically.")
    row, col = (a % nd for a in axes)
    summed, reduced = (row, col) if ord in (1, -1) else (col, row)
    s = sympy_xp.sum(sympy_xp.abs(x), axis=summed, keepdims=True)
    out = (sympy_xp.max if ord > 0 else sympy_xp.min)(s, axis=reduced, keepdims=True)
    if keepdims:
        return out
    return sympy_xp.reshape(out, tuple(n for i, n in enumerate(np.shape(x)) if i not in (row, col)))


class _SympyLinalg:
    """``sympy_xp.linalg``: det, slogdet, inv, solve, cholesky (SymPy Matrices, n <=
    ``SYMBOLIC_LINALG_MAX_N``), norm/vector_norm/matrix_norm; eigh, eigvalsh and qr raise
    ``NotImplementedError`` with the reason."""

    def __init__(self):
        self.det, self.slogdet, self.inv, self.solve = _det, _slogdet, _inv, _solve
        self.cholesky = _cholesky
        self.norm, self.vector_norm = _norm, _vector_norm
        self.matrix_norm = lambda x, ord="fro", keepdims=False: _norm(x, ord, (-2, -1), keepdims)
        self.matrix_power = _matrix_power
        self.multi_dot = _multi_dot
        self.eigh = _infeasible("eigh", _EIG_REASON)
        self.eigvalsh = _infeasible("eigvalsh", _EIG_REASON)
        self.qr = _infeasible("qr", _QR_REASON)
        self.svd = _infeasible("svd", _SVD_REASON)
        self.svdvals = _infeasible("svdvals", _SVD_REASON)
        self.pinv = _infeasible("pinv", _SVD_REASON)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotImplementedError(f"sympy_xp.linalg.{name} is not supported by the SymPy "
                                  "array namespace.")

    def __repr__(self):
        return "<SymPy linalg namespace (diffcompare.problems.symbolic.sympy_xp.linalg)>"


class SympyNamespace:
    """NumPy's names over SymPy object arrays.  ``sympy_xp.<name>`` for an unsupported
    name raises ``NotImplementedError`` naming it."""

    def __init__(self):
        for name, uf in [("exp", np.exp), ("log", np.log), ("log1p", np.log1p), ("expm1", np.expm1),
                         ("sqrt", np.sqrt), ("sin", np.sin), ("cos", np.cos), ("tan", np.tan),
                         ("tanh", np.tanh), ("sinh", np.sinh), ("cosh", np.cosh),
                         ("arctan", np.arctan), ("abs", np.absolute), ("absolute", np.absolute),
                         ("sign", np.sign), ("square", np.square), ("negative", np.negative),
                         ("positive", np.positive), ("fabs", np.fabs), ("exp2", np.exp2),
                         ("log10", np.log10), ("log2", np.log2), ("arcsin", np.arcsin),
                         ("arccos", np.arccos), ("arcsinh", np.arcsinh), ("arccosh", np.arccosh),
                         ("arctanh", np.arctanh), ("ceil", np.ceil), ("floor", np.floor),
                         ("trunc", np.trunc), ("deg2rad", np.deg2rad), ("rad2deg", np.rad2deg),
                         ("radians", np.radians), ("degrees", np.degrees),
                         ("reciprocal", np.reciprocal), ("cbrt", np.cbrt),
                         ("conj", np.conjugate), ("conjugate", np.conjugate)]:
            setattr(self, name, _unary(name, uf))
        self.real, self.imag, self.sinc = _real, _imag, _sinc_fn
        self.atan = self.arctan
        for name, uf in [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
                         ("divide", np.true_divide), ("true_divide", np.true_divide),
                         ("power", np.power), ("pow", np.power), ("maximum", np.maximum),
                         ("minimum", np.minimum), ("matmul", np.matmul), ("less", np.less),
                         ("less_equal", np.less_equal), ("greater", np.greater),
                         ("greater_equal", np.greater_equal), ("arctan2", np.arctan2),
                         ("hypot", np.hypot), ("logaddexp", np.logaddexp),
                         ("logaddexp2", np.logaddexp2), ("remainder", np.remainder),
                         ("mod", np.remainder), ("fmod", np.fmod), ("fmax", np.fmax),
                         ("fmin", np.fmin)]:
            setattr(self, name, _binary(name, uf))
        for name in ("inner", "outer", "tensordot", "einsum", "kron", "cross", "trace"):
            setattr(self, name, _products(name, getattr(np, name)))
        self.dot = _dot
        self.vdot = _vdot
        self.matrix_transpose = _matrix_transpose
        self.linalg = _SympyLinalg()
        for name, uf in [("sum", np.add), ("prod", np.multiply), ("max", np.maximum),
                         ("min", np.minimum)]:
            setattr(self, name, _reduction(name, uf))
        self.amax, self.amin = self.max, self.min
        self.mean = _mean
        self.var, self.std = _var, _std
        self.cumsum = _accumulate("cumsum", np.cumsum)
        self.cumprod = _accumulate("cumprod", np.cumprod)
        for name in _OBJECT_FUNCTIONS:
            setattr(self, name, _object_fn(name, getattr(np, name)))
        self.select = _select
        self.array = _array
        self.where = _where
        self.clip = _clip
        self.asarray = _asarray
        for name in ("reshape", "transpose", "swapaxes", "expand_dims", "squeeze", "broadcast_to"):
            setattr(self, name, _shape_fn(name, getattr(np, name)))
        self.permute_dims = self.transpose
        self.stack = _sequence_fn("stack", np.stack)
        self.concatenate = self.concat = _sequence_fn("concatenate", np.concatenate)
        for name in ("zeros", "ones", "full", "zeros_like", "ones_like", "arange", "eye", "linspace"):
            setattr(self, name, getattr(np, name))
        self.float64, self.float32, self.bool = np.float64, np.float32, np.bool_
        self.pi, self.e = sympy.pi, sympy.E
        self.inf, self.nan, self.newaxis = np.inf, np.nan, None

    def __getattr__(self, name):
        # only called for names not set in __init__
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotImplementedError(
            f"sympy_xp.{name} is not supported by the SymPy array namespace; supported: "
            f"{', '.join(SUPPORTED_FUNCTIONS)}.")

    def __repr__(self):
        return "<SymPy array namespace (diffcompare.problems.symbolic.sympy_xp)>"


sympy_xp = SympyNamespace()
SUPPORTED_FUNCTIONS = tuple(sorted(n for n in vars(sympy_xp) if not n.startswith("_")))


# --- symbols for a problem's inputs -----------------------------------------------

@dataclasses.dataclass
class SymbolicInputs:
    """A problem's arguments with symbols in place of numbers.

    ``args``: the argument list to call ``fn(sympy_xp, *args)`` with;
    ``wrt_symbols``: one ``SymArray`` per differentiated argument (``problem.wrt`` order);
    ``constant_symbols``: likewise for the other arguments when they were made symbols
    (``constants="symbols"``), else empty; ``wrt`` / ``constant_indices``: argument indices.
    Unpacks as ``wrt_symbols, args = symbols_like(...)``.
    """

    args: list
    wrt: tuple
    wrt_symbols: list
    constant_indices: tuple
    constant_symbols: list

    def __iter__(self):
        return iter((self.wrt_symbols, self.args))

    @property
    def wrt_flat(self) -> list:
        return [s for a in self.wrt_symbols for s in np.asarray(a).reshape(-1)]

    @property
    def constant_flat(self) -> list:
        return [s for a in self.constant_symbols for s in np.asarray(a).reshape(-1)]

    @property
    def all_flat(self) -> list:
        """Every symbol: the differentiated ones first, then the constants (lambdify's order)."""
        return self.wrt_flat + self.constant_flat

    def values(self, inputs) -> list:
        """The numbers for ``all_flat``, from the problem's numeric ``inputs``, as NumPy
        float64 scalars (so division by zero etc. follow NumPy, not Python floats)."""
        parts = [np.asarray(inputs[i], dtype=np.float64).reshape(-1)
                 for i in self.wrt + self.constant_indices]
        return list(np.concatenate(parts)) if parts else []


def _symbol_array(index: int, value) -> SymArray:
    a = np.asarray(value)
    out = np.empty(a.shape, dtype=object)
    for idx in np.ndindex(*a.shape):
        name = f"x{index}" + "".join(f"_{i}" for i in idx)
        out[idx] = sympy.Symbol(name, real=True)
    return out.view(SymArray) if out.ndim else lift(out[()])


def _is_integral(value) -> bool:
    """An integer or boolean argument (a Python int/bool or an array of such)."""
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        return True
    return isinstance(value, np.ndarray) and value.dtype.kind in "biu"


def symbols_like(args, wrt, constants: str = "numbers") -> SymbolicInputs:
    """Real SymPy symbols shaped like the differentiated ``args`` (named ``x<arg>_<i>_<j>``).

    The other arguments stay numbers (``constants="numbers"``: they are baked into the
    expression as constants) or become symbols too (``constants="symbols"``: still not
    differentiated, but given at evaluation time, so one derivation serves any data).
    Integer and boolean arguments that are not differentiated stay numbers either way:
    they are indices, counts and masks (``X[obs]``, ``int(k)``, ``range(n)``), which the
    function needs as values to build its expression.
    A 0-d argument becomes a single symbol (``x<arg>``) in a 0-d ``SymArray``.
    """
    if constants not in ("numbers", "symbols"):
        raise ValueError(f"constants must be 'numbers' or 'symbols', got {constants!r}.")
    wrt = tuple(wrt)
    out, wrt_syms, const_idx, const_syms = list(args), [], [], []
    for i, a in enumerate(args):
        if i in wrt or (constants == "symbols" and not _is_integral(a)):
            s = _symbol_array(i, a)
            out[i] = s
            if i in wrt:
                wrt_syms.append(s)
            else:
                const_idx.append(i)
                const_syms.append(s)
    # wrt order as given (may differ from argument order)
    wrt_syms = [out[i] for i in wrt]
    return SymbolicInputs(out, wrt, wrt_syms, tuple(const_idx), const_syms)
