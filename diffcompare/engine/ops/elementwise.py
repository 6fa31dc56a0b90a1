"""Elementwise ops: forward and backward side by side.

The unary ops whose rule is a formula of one saved tensor are rows of a table
(as HIPS autograd's ``numpy_vjps.py`` and PyTorch's ``derivatives.yaml``): the op's
forward on arrays, what it saves (the input, torch's ``self``, or the output,
torch's ``result``) and its backward, a formula of ``g`` and that tensor.  Each row
makes a ``Function`` class with the row's name (``Exp``, whose node is
``ExpBackward0``).  The formulas are written with operators and ``dual``'s
functions, so one formula serves an ordinary backward (arrays), a
``create_graph`` backward (Tensors, recorded again) and ``compile`` (Tracers).

Written as classes, where a row would read worse: the binary ops (they
broadcast, and save only what the gradients actually needed use: ``Mul`` keeps
``b`` only if ``a`` needs a gradient), ``Pow`` / ``PowTensor`` (an exponent
parameter; zero-exponent and zero-base cases), ``Maximum`` / ``Minimum`` (ties
split between two inputs), ``Where`` (a condition parameter) and ``AsType`` (a
dtype parameter).  ``Relu`` too, for speed: it is in every MLP's hot path, and
as a row its constant ``0`` and its mask would cost two more Python calls per
use (measured ~1% per op; the other rows are no slower than the classes they
replaced).  Binary ops' gradients are summed back to each input's shape by
``Function`` (``broadcasts = True``), not here.

Subgradients at kinks (documented, tested): relu'(0) = 0, abs'(0) = 0,
maximum/minimum split a tie 1/2 - 1/2 between the two inputs.

NumPy's wider elementwise math (issue 19) follows: more rows (exp2 ... imag, with
torch's formulas, saved tensors and node names: ``Arcsin`` is torch's
``AsinBackward0``), and classes for the binary ones (``Arctan2``, ``Logaddexp``,
``Remainder``, ``Fmax``, ``Hypot`` ...) and those with parameters (``Round``,
``NanToNum``).  Their conventions, as torch's unless said: ceil, floor, round, rint,
trunc and sign have a zero gradient everywhere (also at their jumps); sinc'(0) = 0;
arcsin, arccos, arctanh, arccosh and cbrt have infinite derivatives at their domain's
edge (cbrt: as JAX, torch has none); arctan2's gradient at the origin is 0, hypot's NaN;
remainder's d/db = -floor(a / b), fmod's -trunc(a / b); fmax/fmin ignore NaN and split a
tie as maximum does (torch gives it all to the first input); nan_to_num passes the
gradient only where the input is finite.  ``power`` and ``power_by_table`` compute
integer powers by multiplication (see there).
"""
from __future__ import annotations

import operator

import numpy as np

from ..function import Function
from ..tensor import Tensor
from .. import kernels
from . import dual
from ..kernels import binary


#: name -> the Function class each row of the table below made
RULES: dict = {}


def unary_rule(name: str, forward, saves, backward, doc: str | None = None,
               node_name: str | None = None) -> type:
    """A ``Function`` class ``name`` from one row of the table below.

    ``forward(x)`` maps the input's array to the output's; ``saves`` is ``"self"``
    (the input), ``"result"`` (the output) or None; ``backward(g, saved)`` (or
    ``backward(g)`` when nothing is saved) gives the input's gradient.  The methods
    close over the two formulas: a call costs what a hand-written class's does.
    ``node_name``: PyTorch's node name where it is not ``name + "Backward0"`` (NumPy's
    ``arcsin`` is torch's ``asin``: ``AsinBackward0``).
    """
    if saves == "self":
        def forward_method(self, a):
            self.save_for_backward(self=a)
            return forward(a.data)

        def backward_method(self, g):
            return backward(g, self.saved_value("self"))
    elif saves == "result":
        def forward_method(self, a):
            return forward(a.data)

        def backward_method(self, g):
            return backward(g, self.saved_value("result"))
    elif saves is None:
        def forward_method(self, a):
            return forward(a.data)

        def backward_method(self, g):
            return backward(g)
    else:
        raise ValueError(f"{name}: saves must be 'self', 'result' or None, not {saves!r}.")
    namespace = {"forward": forward_method, "backward": backward_method,
                 "saves_result": saves == "result", "__module__": __name__,
                 "__qualname__": name, "__doc__": doc or f"Elementwise {name.lower()}."}
    if node_name is not None:
        namespace["name"] = lambda self: node_name
    cls = RULES[name] = type(name, (Function,), namespace)
    return dual.records(name.lower())(cls)


def _sigmoid(x):
    """``1 / (1 + exp(-x))`` as ``exp(-logaddexp(0, -x))``: four NumPy calls (the compiled
    program's four steps), no overflow or warning at any |x| (``logaddexp`` is NumPy's stable
    ``log(1 + exp(-x))``), and relatively accurate in the far tail too (sigmoid(-40) = 4.2e-18
    to a few ulps, sigmoid(-800) = 0 as in torch), so ``log(sigmoid(x))`` stays finite where
    sigmoid is. (``tanh(x / 2) / 2 + 1 / 2``, as many calls, rounds to 0 from x ~ -38.)"""
    return np.exp(-np.logaddexp(0.0, -x))


def _sqrt_backward(g, result):
    with np.errstate(divide="ignore"):
        return g / (2 * result)


_copy = operator.methodcaller("copy")


def _data(t):
    """The array of a saved tensor (a Tensor during a create_graph backward)."""
    return t.data if type(t) is Tensor else t


#                                forward       saves     backward: the input's gradient
Neg     = unary_rule("Neg",     operator.neg, None,     operator.neg)
Exp     = unary_rule("Exp",     np.exp,       "result", lambda g, result: g * result)
Log     = unary_rule("Log",     np.log,       "self",   lambda g, self: g / self)
Sqrt    = unary_rule("Sqrt",    np.sqrt,      "result", _sqrt_backward,
                     "d sqrt(x) = 1 / (2 sqrt x): inf at 0, as NumPy's division gives.")
Sin     = unary_rule("Sin",     np.sin,       "self",   lambda g, self: g * dual.cos(self))
Cos     = unary_rule("Cos",     np.cos,       "self",   lambda g, self: -g * dual.sin(self))
Tanh    = unary_rule("Tanh",    np.tanh,      "result", lambda g, result: g * (1 - result * result))
Sigmoid = unary_rule("Sigmoid", _sigmoid,     "result", lambda g, result: g * (result * (1 - result)))
Abs     = unary_rule("Abs",     np.abs,       "self",   lambda g, self: g * np.sign(_data(self)),
                     "abs'(0) = 0 (sign(0) = 0).")
Clone   = unary_rule("Clone",   _copy,        None,     lambda g: g,
                     "A copy with its own memory and version; the gradient passes through.")


# --- NumPy's elementwise math (issue 19): the formulas of torch's derivatives.yaml ---------
_LN2, _LN10 = float(np.log(2.0)), float(np.log(10.0))   # Python floats: float32 stays float32
_DEG = np.pi / 180.0


def _zero_grad(g):
    """The gradient of a piecewise-constant op (ceil, floor, round, trunc, sign): zeros,
    as torch's ``zeros_like(grad)`` (also where g is inf or NaN)."""
    return dual.zeros(g.shape, g)


def _real_only(what):
    def forward(x):
        if x.dtype.kind == "c":
            raise TypeError(f"{what} of a complex array: the engine differentiates real arrays "
                            "only; keep the real and imaginary parts as two real arrays.")
        return np.zeros_like(x)
    return forward


def _sinc_backward(g, self):
    # d/dx sin(pi x)/(pi x) = (pi x cos(pi x) - sin(pi x)) / (pi x^2), and 0 at x = 0 (torch's
    # masked_fill; the true derivative there is 0 too)
    x = _data(self)
    with np.errstate(divide="ignore", invalid="ignore"):
        px = np.pi * self
        d = (px * dual.cos(px) - dual.sin(px)) / (px * self)
        return dual.where(x != 0, g * d)


def _div_ignore(num, den):
    with np.errstate(divide="ignore", invalid="ignore"):
        return num / den


#                                forward       saves     backward: the input's gradient
Exp2    = unary_rule("Exp2",    np.exp2,      "result", lambda g, result: g * (result * _LN2))
Expm1   = unary_rule("Expm1",   np.expm1,     "result", lambda g, result: g * (result + 1),
                     "``exp(x) - 1``, accurate near 0 (NumPy's ``expm1``).")
Log2    = unary_rule("Log2",    np.log2,      "self",   lambda g, self: g / (self * _LN2))
Log10   = unary_rule("Log10",   np.log10,     "self",   lambda g, self: g / (self * _LN10))
Log1p   = unary_rule("Log1p",   np.log1p,     "self",   lambda g, self: g / (self + 1),
                     "``log(1 + x)``, accurate near 0 (NumPy's ``log1p``).",
                     node_name="Log1PBackward0")
Sinh    = unary_rule("Sinh",    np.sinh,      "self",   lambda g, self: g * dual.cosh(self))
Cosh    = unary_rule("Cosh",    np.cosh,      "self",   lambda g, self: g * dual.sinh(self))
Tan     = unary_rule("Tan",     np.tan,       "result", lambda g, result: g * (1 + result * result))
Arcsin  = unary_rule("Arcsin",  np.arcsin,    "self",
                     lambda g, self: _div_ignore(g, dual.sqrt(1 - self * self)),
                     "d arcsin(x) = 1 / sqrt(1 - x^2): inf at |x| = 1, as torch.",
                     node_name="AsinBackward0")
Arccos  = unary_rule("Arccos",  np.arccos,    "self",
                     lambda g, self: _div_ignore(-g, dual.sqrt(1 - self * self)),
                     "d arccos(x) = -1 / sqrt(1 - x^2): -inf at |x| = 1, as torch.",
                     node_name="AcosBackward0")
Arctan  = unary_rule("Arctan",  np.arctan,    "self",   lambda g, self: g / (1 + self * self),
                     node_name="AtanBackward0")
Arcsinh = unary_rule("Arcsinh", np.arcsinh,   "self",
                     lambda g, self: g / dual.sqrt(self * self + 1), node_name="AsinhBackward0")
Arccosh = unary_rule("Arccosh", np.arccosh,   "self",
                     lambda g, self: _div_ignore(g, dual.sqrt(self * self - 1)),
                     "d arccosh(x) = 1 / sqrt(x^2 - 1): inf at x = 1, as torch.",
                     node_name="AcoshBackward0")
Arctanh = unary_rule("Arctanh", np.arctanh,   "self",
                     lambda g, self: _div_ignore(g, 1 - self * self),
                     "d arctanh(x) = 1 / (1 - x^2): inf at |x| = 1, as torch.",
                     node_name="AtanhBackward0")
Ceil    = unary_rule("Ceil",    np.ceil,      None,     _zero_grad, "Zero gradient, as torch.")
Floor   = unary_rule("Floor",   np.floor,     None,     _zero_grad, "Zero gradient, as torch.")
Rint    = unary_rule("Rint",    np.rint,      None,     _zero_grad,
                     "Round half to even (torch.round); zero gradient.", node_name="RoundBackward0")
Trunc   = unary_rule("Trunc",   np.trunc,     None,     _zero_grad, "Zero gradient, as torch.")
Sign    = unary_rule("Sign",    np.sign,      None,     _zero_grad,
                     "sign(0) = 0; zero gradient everywhere (torch's SignBackward0).")
Deg2Rad = unary_rule("Deg2Rad", np.deg2rad,   None,     lambda g: g * _DEG)
Rad2Deg = unary_rule("Rad2Deg", np.rad2deg,   None,     lambda g: g * (180.0 / np.pi))
Reciprocal = unary_rule("Reciprocal", np.reciprocal, "result",
                        lambda g, result: -g * (result * result))
Sinc    = unary_rule("Sinc",    np.sinc,      "self",   _sinc_backward,
                     "NumPy's normalized sinc, sin(pi x) / (pi x); sinc'(0) = 0.")
Cbrt    = unary_rule("Cbrt",    np.cbrt,      "result",
                     lambda g, result: _div_ignore(g, 3 * (result * result)),
                     "d cbrt(x) = 1 / (3 cbrt(x)^2): inf at 0 (as JAX; torch has no cbrt).")
Imag    = unary_rule("Imag",    _real_only("imag"), None, _zero_grad,
                     "The imaginary part of a real array: zeros, with a zero gradient.")


class Relu(Function):
    """relu'(0) = 0, as in PyTorch (the gradient flows only where x > 0).

    The backward multiplies by the mask, as a hand-written backward does (and
    5x faster than ``np.where`` on large arrays); so an infinite incoming
    gradient where x <= 0 gives NaN, as ``inf * 0`` does in NumPy.
    """

    saves_result = True

    def forward(self, a):
        return np.maximum(a.data, 0)

    def backward(self, g):
        y = self.saved_value("result")
        return g * ((y.data if dual.is_tensor(y) else y) > 0)


class Add(Function):
    broadcasts = True
    commutes = True   # `3 + a` is recorded as a.add(3), as PyTorch does

    def forward(self, a, b):
        return binary(np.add, a.data, b.data)

    def backward(self, g):
        return g, g


class Sub(Function):
    broadcasts = True

    def forward(self, a, b):
        return binary(np.subtract, a.data, b.data)

    def backward(self, g):
        if not self.needs_input_grad[1]:
            return g, None
        shapes = self._input_shapes
        if shapes is not None and shapes[1] != g.shape:
            # b was broadcast: sum back to its shape first, then negate the fewer elements
            # (-sum(g) is sum(-g) exactly: rounding is symmetric in sign)
            return g, -dual.sum_to(g, shapes[1])
        return g, -g


class Mul(Function):
    broadcasts = True
    commutes = True

    def forward(self, a, b):
        self.save_for_backward(self=a if self.needs(1) else None,
                               other=b if self.needs(0) else None)
        return binary(np.multiply, a.data, b.data)

    def backward(self, g):
        need_a, need_b = self.needs_input_grad
        shapes = self._input_shapes
        if shapes is None:
            return (g * self.saved_value("other") if need_a else None,
                    g * self.saved_value("self") if need_b else None)
        if type(g) is Tensor:    # create_graph: the product, summed back by autograd
            return (g * self.saved_value("other") if need_a else None,
                    g * self.saved_value("self") if need_b else None)
        return (_times(g, self.saved_value("other"), shapes[0]) if need_a else None,
                _times(g, self.saved_value("self"), shapes[1]) if need_b else None)


def _times(g, x, shape):
    """``g * x`` summed back to an operand's ``shape``: ``binary`` (a large broadcast of
    ``x`` repeats first) where nothing is summed, else the kernel ``mul_sum_to``."""
    return binary(np.multiply, g, x) if g.shape == shape else kernels.mul_sum_to(g, x, shape)


class Div(Function):
    broadcasts = True

    def forward(self, a, b):
        self.save_for_backward(self=a if self.needs(1) else None, other=b)
        return binary(np.true_divide, a.data, b.data)

    def backward(self, g):
        b = self.saved_value("other")
        need_a, need_b = self.needs_input_grad
        ga = g / b if need_a else None
        if not need_b:
            return ga, None
        a = self.saved_value("self")
        shapes = self._input_shapes
        if shapes is not None and shapes[1] != g.shape:
            # b was broadcast (a softmax's e / sum(e)): sum g * a back to b's shape first, then
            # divide the fewer elements by b**2 (two full-size passes fewer)
            return ga, -dual.sum_to(g * a, shapes[1]) / (b * b)
        return ga, -g * a / (b * b)


class Pow(Function):
    """``a ** exponent`` for a number ``exponent`` (PyTorch's ``PowBackward0``).

    Saves what PyTorch saves: the base, and the exponent as a number (``node.exponent``,
    torch's ``_saved_exponent``).  d/da = exponent * a ** (exponent - 1), and 0 for
    exponent 0 (a**0 is constant, also at a = 0).
    """

    _lower = None   # a ** (k - 1), kept by a forward that multiplied (see power_with_lower)

    def forward(self, a, exponent):
        self.exponent = exponent
        self.save_for_backward(self=a)
        if exponent == 2:   # the common square: NumPy's own fast path, no dispatch here
            return a.data ** 2
        if self.needs_input_grad:
            out, self._lower = power_with_lower(a.data, exponent)
            return out
        return power(a.data, exponent)

    def backward(self, g):
        e = self.exponent
        a = self.saved_value("self")
        # used once, then freed (a retained graph's next backward computes a ** (e - 1) again;
        # a create_graph backward records it as a Tensor op)
        lower, self._lower = self._lower, None
        if lower is not None and type(a) is not Tensor:
            return g * (lower * e)
        if e == 2:   # the common square: no power at all.  (g * 2) * a equals g * (a * 2)
            # Tensors, and a constant g (a NumPy scalar; a 0-d traced value): the product itself,
            # exactly, which folds into one step when compile traces a constant g (an array g
            # needs no np.ndim: the kernel's plain form is that product)
            if type(g) is not np.ndarray and (type(g) is Tensor or np.ndim(g) == 0) or type(a) is Tensor:
                return g * 2.0 * a
            return kernels.double_product(g, a)
        if e == 0:
            return dual.zeros(a.shape, g)
        return g * (power(a, e - 1) * e)


def power(x, exponent):
    """``x ** exponent`` for a number ``exponent``; ``x`` an array, a Tracer or a Tensor.

    An integral exponent 3 <= |k| <= ``INT_POW_MAX`` on a float array is computed by
    repeated squaring and multiplying (JAX's ``integer_pow``; a negative k as 1 / x**|k|)
    where a micro-benchmark (``benchmarks/integer_power.py``) shows it pays: NumPy's
    ``power`` is fast (SIMD) for non-negative bases but calls ``pow`` element by element,
    40-60 ns each, as soon as one base is negative (10000 elements: 610 us against 12 us
    for k = 3, 57 us for k = 127).  So: multiplication for |k| <= 4 (2 products, quicker
    for any base once there are ~100 elements), and for larger |k| where a base is negative
    and the array has at least 16 elements per product (fewer: NumPy's one call is cheaper
    than the products' per-call overhead, ~0.7 us each).  Compiled code (``x`` a Tracer)
    decides by size alone and multiplies whatever the signs of later inputs.

    Not bit-for-bit NumPy's: within 1 ulp for k = 3, 4 and |k| ulps at most (measured: 4
    ulps for k = 7, 43 for k = 64, 88 for k = 127), about the error a one-ulp change of x
    makes in x**k.  k in (0, 1, 2, -1), other exponents and integer arrays: NumPy's
    ``power`` (its exact fast paths for 2, 1, 0, -1).  A Tensor (a create_graph backward)
    takes ``**``, recorded as ``PowBackward0``, whose forward is this.
    """
    if type(x) is Tensor:
        return x ** exponent
    k = _integral(exponent)
    if not _multiplies(x, k):
        return x ** exponent
    dtype = np.result_type(x, exponent)   # NumPy's promotion (a float64 scalar exponent, NEP 50)
    acc = _product_power(x if dtype == x.dtype else x.astype(dtype), abs(k))
    return 1.0 / acc if k < 0 else acc


def power_with_lower(x, exponent):
    """``(x ** k, x ** (k - 1))`` for an array or Tracer ``x``: where ``power`` multiplies
    and k >= 3, x**(k-1) by products and x**k as one more (``Pow``'s backward reuses it
    instead of a second power: the Vandermonde stack of 128 ``t ** j`` 30% quicker);
    else ``(power(x, exponent), None)``."""
    k = _integral(exponent)
    if k is None or k < 3 or not _multiplies(x, k):
        return power(x, exponent), None
    dtype = np.result_type(x, exponent)
    if dtype != x.dtype:
        x = x.astype(dtype)
    lower = _product_power(x, k - 1)
    return lower * x, lower


def _multiplies(x, k) -> bool:
    """Whether ``power`` computes x ** k by products (see there)."""
    if k is None or k in (0, 1, 2, -1) or abs(k) > INT_POW_MAX or x.dtype.kind != "f":
        return False
    n = abs(k)
    if n <= 4:
        return True
    products = n.bit_length() + bin(n).count("1") - 2
    if x.size < 16 * products:
        return False
    # a Tracer: compiled code multiplies whatever the signs of later inputs
    return type(x) is not np.ndarray or bool(np.minimum.reduce(x, axis=None) < 0)


def _product_power(x, n):
    """x ** n (n >= 1) by squaring and multiplying: n's binary digits, lowest first."""
    acc, base = None, x
    while True:
        if n & 1:
            acc = base if acc is None else acc * base
        n >>= 1
        if not n:
            return acc
        base = base * base


INT_POW_MAX = 128       # exponents up to a degree-127 Vandermonde's
INT_POW_MIN_SIZE = 32   # power_by_table: smaller outputs take NumPy's one call


def _integral(e):
    """``e`` as a Python int if it is an integral number (``3``, ``3.0``), else None."""
    if isinstance(e, (int, np.integer)) and not isinstance(e, (bool, np.bool_)):
        return int(e)
    if isinstance(e, (float, np.floating)) and np.isfinite(e) and float(e).is_integer():
        return int(e)
    return None


def power_by_table(x, b):
    """``x ** b`` for a constant integer-valued exponent array ``b`` (|b| <= ``INT_POW_MAX``),
    or None where NumPy's ``power`` is used: the powers x**0 .. x**max|b| of each element by
    one cumulative product, then each output picks its own (x**-j is 1 / x**j).

    For a Vandermonde matrix ``t[:, None] ** np.arange(128)`` of mixed-sign t (1000 x 128;
    the table is the answer, no gather) this takes 0.5-2 ms against NumPy's 12-21 ms (a
    product over the exponents' bits: 2.6 ms; ``benchmarks/integer_power.py``), within
    |b| / 2 ulps of NumPy's ``power`` (measured: at most 20 ulps for b <= 127).  Used when
    a base is negative (NumPy's SIMD ``power`` of non-negative bases is quicker than the
    table: 0.8 ms), the table is no larger than twice the output (the base repeats along
    the exponent's axes) and the output has at least ``INT_POW_MIN_SIZE`` elements.  In
    compiled code (``x`` a Tracer) whatever the signs.
    """
    if (type(b) is not np.ndarray or b.dtype.kind not in "iuf" or b.size == 0
            or x.dtype.kind != "f"):
        return None
    shape = np.broadcast_shapes(x.shape, b.shape)
    out_size = int(np.prod(shape))
    if out_size < INT_POW_MIN_SIZE or (type(x) is np.ndarray
                                       and not np.minimum.reduce(x, axis=None) < 0):
        return None
    m = np.abs(b).max()
    if not np.isfinite(m) or m > INT_POW_MAX or x.size * (m + 1) > 2 * out_size:
        return None
    if b.dtype.kind == "f" and not np.array_equal(b, np.trunc(b)):
        return None
    m = int(m)
    dtype = np.result_type(x, b)
    if dtype != x.dtype:
        x = x.astype(dtype)
    # table[..., j] = x ** j: the running product of x repeated (NumPy's cumprod over a
    # broadcast view is 2x quicker than over a copy), after a column of ones
    table = np.concatenate([np.ones(x.shape + (1,), dtype),
                            np.cumprod(np.broadcast_to(x[..., None], x.shape + (m,)), axis=-1)],
                           axis=-1)
    column = np.abs(b).astype(np.intp)   # (a float exponent array's integers as indices)
    if b.ndim == 1 and len(shape) == x.ndim and x.shape[-1:] == (1,):
        # x[:, None] ** b: one row of the table per x, its columns picked by b
        table = table.reshape(x.shape[:-1] + (m + 1,))
        out = table if np.array_equal(b, np.arange(m + 1)) else np.take(table, column, axis=-1)
    else:   # each output's row of the table (its x) and column (its |b|), as one flat index
        rows = np.broadcast_to(np.arange(x.size).reshape(x.shape), shape)
        flat = rows * (m + 1) + np.broadcast_to(column, shape)
        out = np.take(table.reshape(-1), flat)
    negative = np.broadcast_to(b < 0, shape)
    if negative.any():
        with np.errstate(divide="ignore"):
            out = np.where(negative, 1.0 / out, out)
    return out




class PowTensor(Function):
    """``a ** b`` with a tensor exponent (PyTorch's ``PowBackward1``).  As in PyTorch and
    JAX, d/da is 0 where b == 0 (a**0 is constant, also at a = 0) and d/db is 0 where
    a == 0 and b >= 0 (instead of 0 * log 0)."""

    broadcasts = True
    saves_result = True

    def name(self) -> str:
        return "PowBackward1"

    def forward(self, a, b):
        self.save_for_backward(self=a, exponent=b)
        out = power_by_table(a.data, b.data)
        return a.data ** b.data if out is None else out

    def backward(self, g):
        a, b, result = self.saved_tensors
        a_data, b_data = (t.data if dual.is_tensor(t) else t for t in (a, b))
        need_a, need_b = self.needs_input_grad
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if need_a:
                # (b - 1 where b != 0: the b == 0 entries are zeroed, and need no 1 / a)
                e = np.where(b == 0, 0, b - 1) if type(b) is np.ndarray else b - 1
                ga = _zero_where_not(b_data != 0, g * b * _power_tensor(a, e))
            if need_b:
                gb = _zero_where_not((a_data != 0) | (b_data < 0), g * result * dual.log(a))
        return ga, gb


def _power_tensor(a, b):
    """``a ** b`` for an exponent array ``b``: by ``power_by_table`` where it applies (a
    Tensor ``a`` goes through ``**``, recorded, whose forward uses it)."""
    if type(a) is not Tensor and type(b) is not Tensor:
        out = power_by_table(a, b)
        if out is not None:
            return out
    return a ** b


def _zero_where_not(keep, grad):
    """``grad`` with zeros where ``keep`` is False (no extra node when it holds everywhere)."""
    return grad if np.all(keep) else dual.where(keep, grad)


class Maximum(Function):
    """Elementwise maximum; where a == b each input gets half the gradient."""

    broadcasts = True

    def forward(self, a, b):
        self.save_for_backward(self=a, other=b)
        return np.maximum(a.data, b.data)

    def backward(self, g):
        a, b = (t.data if dual.is_tensor(t) else t for t in self.saved_tensors)
        share_a = (a > b) + 0.5 * (a == b)
        return _split_by_share(self, g, share_a)


class Minimum(Function):
    """Elementwise minimum; where a == b each input gets half the gradient."""

    broadcasts = True

    def forward(self, a, b):
        self.save_for_backward(self=a, other=b)
        return np.minimum(a.data, b.data)

    def backward(self, g):
        a, b = (t.data if dual.is_tensor(t) else t for t in self.saved_tensors)
        share_a = (a < b) + 0.5 * (a == b)
        return _split_by_share(self, g, share_a)


def _split_by_share(node, g, share_a):
    need_a, need_b = node.needs_input_grad
    share_a = share_a.astype(g.dtype, copy=False)
    return (g * share_a if need_a else None,
            g * (1 - share_a) if need_b else None)


@dual.records("where")
class Where(Function):
    """``where(condition, a, b)`` with a constant boolean condition."""

    broadcasts = True

    def forward(self, a, b, condition):
        self.condition = condition
        return np.where(condition, a.data, b.data)

    def backward(self, g):
        need_a, need_b = self.needs_input_grad
        c = self.condition
        return (dual.where(c, g) if need_a else None,
                dual.where(~c, g) if need_b else None)


class AsType(Function):
    """Change float precision; the gradient is cast back to the input's dtype."""

    def forward(self, a, dtype):
        self.in_dtype = a.dtype
        return a.data.astype(dtype)

    def backward(self, g):
        if dual.is_tensor(g):
            return AsType.apply(g, dtype=self.in_dtype)
        return g.astype(self.in_dtype)


# --- NumPy's binary elementwise math (issue 19) ---------------------------------------------

def _saved_pair(node):
    a, b = node.saved_value("self"), node.saved_value("other")
    return a, b, _data(a), _data(b)


class Arctan2(Function):
    """``arctan2(a, b)``, the angle of (b, a) (torch's ``atan2``).  d/da = b / (a^2 + b^2),
    d/db = -a / (a^2 + b^2); 0 at a = b = 0, as torch (which masks the infinite 1 / 0)."""

    broadcasts = True

    def name(self) -> str:
        return "Atan2Backward0"

    def forward(self, a, b):
        self.save_for_backward(self=a, other=b)
        return np.arctan2(a.data, b.data)

    def backward(self, g):
        a, b, _, _ = _saved_pair(self)
        need_a, need_b = self.needs_input_grad
        with np.errstate(divide="ignore", invalid="ignore"):
            r2 = a * a + b * b
            gr = g / r2
            nonzero = _data(r2) != 0
            if type(nonzero) is not np.ndarray or not nonzero.all():   # the origin: 0
                gr = dual.where(nonzero, gr)
            return (gr * b if need_a else None, -gr * a if need_b else None)


class Logaddexp(Function):
    """``log(exp(a) + exp(b))`` without overflow (NumPy's: max + log1p(exp(-|a - b|))).
    d/da = 1 / (1 + exp(b - a)) (torch's formula; an overflowing exp gives 0, exactly)."""

    broadcasts = True

    def forward(self, a, b):
        self.save_for_backward(self=a, other=b)
        return np.logaddexp(a.data, b.data)

    def backward(self, g):
        a, b, _, _ = _saved_pair(self)
        need_a, need_b = self.needs_input_grad
        with np.errstate(over="ignore"):
            return (g / (1 + dual.exp(b - a)) if need_a else None,
                    g / (1 + dual.exp(a - b)) if need_b else None)


class Logaddexp2(Function):
    """``log2(2**a + 2**b)`` without overflow (NumPy's).  d/da = 1 / (1 + 2**(b - a))."""

    broadcasts = True

    def forward(self, a, b):
        self.save_for_backward(self=a, other=b)
        return np.logaddexp2(a.data, b.data)

    def backward(self, g):
        a, b, _, _ = _saved_pair(self)
        need_a, need_b = self.needs_input_grad
        with np.errstate(over="ignore"):
            return (g / (1 + dual.exp2(b - a)) if need_a else None,
                    g / (1 + dual.exp2(a - b)) if need_b else None)


class _Modulo(Function):
    """The shared backward of ``remainder`` and ``fmod``: d/da = 1, d/db = -q with q the
    quotient the op rounds (a constant: piecewise, its derivative is 0).  Node names as
    torch: ``...Backward0`` for a number divisor, ``...Backward1`` for a tensor one."""

    broadcasts = True

    def name(self) -> str:
        return type(self).__name__ + ("Backward0" if self.scalar_divisor else "Backward1")

    def forward(self, a, b):
        self.scalar_divisor = b.data.ndim == 0 and not self.needs(1)
        self.save_for_backward(self=a if self.needs(1) else None,
                               other=b if self.needs(1) else None)
        return self.ufunc(a.data, b.data)

    def backward(self, g):
        need_a, need_b = self.needs_input_grad
        gb = None
        if need_b:
            _, _, a, b = _saved_pair(self)
            with np.errstate(divide="ignore", invalid="ignore"):
                gb = -g * self.quotient(a, b)
        return (g if need_a else None), gb


class Remainder(_Modulo):
    """NumPy's ``remainder`` (``%``, ``mod``): the floor remainder, with the divisor's sign.
    d/da = 1, d/db = -floor(a / b) (torch's ``RemainderBackward``)."""

    ufunc = staticmethod(np.remainder)
    quotient = staticmethod(np.floor_divide)


class Fmod(_Modulo):
    """C's ``fmod``: the truncated remainder, with the dividend's sign.
    d/da = 1, d/db = -trunc(a / b) (torch's ``FmodBackward``)."""

    ufunc = staticmethod(np.fmod)
    quotient = staticmethod(lambda a, b: np.trunc(a / b))


class Fmax(Function):
    """Elementwise maximum ignoring NaN (NaN only where both are).  The gradient goes to the
    input the result came from; a tie a == b is split 1/2 - 1/2 as ``maximum``'s (HIPS
    autograd's rule; torch's fmax gives a whole tie to ``a``); where b is NaN all to a."""

    broadcasts = True

    def forward(self, a, b):
        self.save_for_backward(self=a, other=b)
        return np.fmax(a.data, b.data)

    def backward(self, g):
        _, _, a, b = _saved_pair(self)
        share_a = (a > b) + 0.5 * (a == b) + np.isnan(b)
        return _split_by_share(self, g, share_a)


class Fmin(Function):
    """Elementwise minimum ignoring NaN; ties split 1/2 - 1/2, where b is NaN all to a
    (see ``Fmax``)."""

    broadcasts = True

    def forward(self, a, b):
        self.save_for_backward(self=a, other=b)
        return np.fmin(a.data, b.data)

    def backward(self, g):
        _, _, a, b = _saved_pair(self)
        share_a = (a < b) + 0.5 * (a == b) + np.isnan(b)
        return _split_by_share(self, g, share_a)


class Hypot(Function):
    """``sqrt(a^2 + b^2)`` without overflow (NumPy's).  d/da = a / hypot: NaN at a = b = 0,
    as torch."""

    broadcasts = True
    saves_result = True

    def forward(self, a, b):
        self.save_for_backward(self=a, other=b)
        return np.hypot(a.data, b.data)

    def backward(self, g):
        a, b, result = self.saved_tensors
        need_a, need_b = self.needs_input_grad
        with np.errstate(divide="ignore", invalid="ignore"):
            gr = g / result
            return (gr * a if need_a else None, gr * b if need_b else None)


class Round(Function):
    """NumPy's ``round`` to ``decimals`` (halves to even); zero gradient, as torch's
    ``RoundBackward0`` (``RoundBackward1`` with decimals)."""

    def name(self) -> str:
        return "RoundBackward1" if self.decimals else "RoundBackward0"

    def forward(self, a, decimals):
        self.decimals = decimals
        return np.round(a.data, decimals)

    def backward(self, g):
        return _zero_grad(g)


class NanToNum(Function):
    """NaN and infinities replaced by numbers (NumPy's ``nan_to_num``).  The gradient passes
    where the input is finite and is 0 where an element was replaced (torch, HIPS autograd)."""

    def forward(self, a, nan, posinf, neginf):
        self.save_for_backward(self=a)
        return np.nan_to_num(a.data, nan=nan, posinf=posinf, neginf=neginf)

    def backward(self, g):
        return dual.where(np.isfinite(_data(self.saved_value("self"))), g)
