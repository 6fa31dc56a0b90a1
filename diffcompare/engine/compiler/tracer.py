"""``Tracer``: an array stand-in that records every NumPy operation made on it.

While ``compile`` traces a function, the engine's Tensors hold Tracers as their
``data``, so the engine's own forward *and* backward formulas (``ops/*``,
``ops/dual.py``) run unchanged and each NumPy call they make becomes one
``Step`` of a straight-line program.  A Tracer also carries the concrete value
of the trace's inputs, which gives shapes and dtypes, folds constants, and
decides Python branches -- each such decision on a traced value is recorded as
a guard that the generated program checks on every call.

Constants (plain arrays and numbers) never become steps: an operation whose
operands are all constants is computed by NumPy at trace time (constant folding).
"""
from __future__ import annotations

import operator
import os
import sys

import numpy as np


class TraceError(RuntimeError):
    """A function cannot be compiled: the message names the operation and the line."""


class GuardFailed(Exception):
    """Raised by a generated program when a traced branch decision flips; ``index`` is the
    ``file:line`` of the branch."""

    def __init__(self, index):
        super().__init__(index)
        self.index = index


_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # diffcompare/engine
_NUMPY = os.path.dirname(np.__file__)


def user_line() -> str:
    """``file:line`` of the innermost frame outside the engine and NumPy (the user's code)."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not (path.startswith(_HERE) or path.startswith(_NUMPY)):
            return f"{os.path.basename(path)}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


class Step:
    """One operation: ``outs = op(*args, **kwargs)``; ``op`` is a key of ``codegen.PRINTERS``
    or ``('call', name)`` / ``('ufunc', name, method)`` / ``('method', name)``."""

    __slots__ = ("op", "args", "kwargs", "outs", "phase", "line", "index")

    def __init__(self, op, args, kwargs, phase, line=None):
        self.op, self.args, self.kwargs, self.phase, self.line = op, args, kwargs, phase, line
        self.outs = []
        self.index = -1

    def tracers(self):
        """The Tracers this step reads (also inside lists and tuples)."""
        return [a for a in flatten((self.args, tuple(self.kwargs.values()))) if type(a) is Tracer]


class Trace:
    """The steps recorded so far, hash-consed (common subexpressions merged)."""

    def __init__(self):
        self.steps: list[Step] = []
        self.args: list[Tracer] = []
        self.guards: list[Step] = []
        self.phase = "forward"
        self._memo = {}
        self._keep = []          # constants referenced by memo keys stay alive (ids stay unique)

    def record(self, op, args, kwargs, value, cse=True):
        """The Tracer(s) for ``op(*args, **kwargs)`` whose concrete result is ``value``."""
        key = None
        if cse:
            try:
                key = (op, _freeze(args, self._keep), _freeze(kwargs, self._keep))
                hit = self._memo.get(key)
            except TypeError:
                key = hit = None
            if hit is not None:
                return hit
        step = Step(op, args, kwargs, self.phase)
        step.index = len(self.steps)
        self.steps.append(step)
        if step.index == LONG_TRACE:
            _warn_long_trace(step.index)
        if isinstance(value, (list, tuple)):
            out = type(value)(Tracer(self, v, step) for v in value)
            step.outs = list(out)
        else:
            out = Tracer(self, value, step)
            step.outs = [out]
        if key is not None:
            self._memo[key] = out
        return out

    def argument(self, value, name):
        t = Tracer(self, np.asarray(value), None)
        t.name = name
        self.args.append(t)
        return t

    def release_values(self):
        """Drop the trace's concrete arrays (keep shapes and dtypes): a compiled function
        should not hold a copy of every intermediate of its first call."""
        self._memo.clear()
        self._keep.clear()
        for t in self.args + [t for s in self.steps for t in s.outs]:
            if t.value.ndim:
                t.value = np.broadcast_to(np.zeros((), t.value.dtype), t.value.shape)

    def guard(self, cond, expected: bool):
        step = Step("guard", (cond, expected), {}, self.phase, line=user_line())
        step.index = len(self.steps)
        self.steps.append(step)
        self.guards.append(step)


#: a trace this long is a Python loop unrolled: compiling it takes minutes and GBs
LONG_TRACE = 50_000


def _warn_long_trace(steps):
    import warnings

    warnings.warn(
        f"compile: the trace has passed {steps:,} steps at {user_line()}: a Python loop is being "
        "unrolled into one straight-line program, which can take minutes and several times the "
        "eager engine's memory to generate (a 100k-step loop: ~90 s, ~3 GB). Run it eagerly, or "
        "compile one step of the loop and loop over the compiled step.", UserWarning, stacklevel=2)


def _freeze(x, keep):
    """A hashable key for an argument: Tracers and arrays by identity, the rest by value."""
    t = type(x)
    if t is Tracer:
        return ("T", id(x))
    if t is np.ndarray:
        if x.size <= 1:
            return ("a", x.dtype.str, x.shape, x.tobytes())
        keep.append(x)
        return ("A", id(x))
    if t in (tuple, list):
        return (t.__name__,) + tuple(_freeze(v, keep) for v in x)
    if t is dict:
        return tuple(sorted((k, _freeze(v, keep)) for k, v in x.items()))
    if t is slice:
        return ("slice", x.start, x.stop, x.step)
    if isinstance(x, np.generic):
        return ("g", x.dtype.str, x.tobytes())
    if isinstance(x, np.dtype):
        return ("dtype", x.str)
    hash(x)
    return (t.__name__, x)


def flatten(x):
    """The items of nested lists and tuples, in order (anything else is one item)."""
    if type(x) in (list, tuple):
        for v in x:
            yield from flatten(v)
    else:
        yield x


def concrete(x):
    """``x`` with every Tracer replaced by its concrete value."""
    t = type(x)
    if t is Tracer:
        return x.value
    if t in (list, tuple):
        return t(concrete(v) for v in x)
    return x


def trace_of(items):
    """The :class:`Trace` of the first Tracer among ``items`` (nested lists and tuples),
    None when there is none."""
    for a in flatten(items):
        if type(a) is Tracer:
            return a.trace
    return None


def traced_call(op, fn, args, kwargs=None):
    """Run ``fn`` on concrete values; record a step ``op`` if any operand is a Tracer (every
    traced NumPy call, and tracing's recording kernels, come through here)."""
    kwargs = kwargs or {}
    trace = trace_of((args, tuple(kwargs.values())))
    value = fn(*concrete(args), **{k: concrete(v) for k, v in kwargs.items()})
    if trace is None:
        return value
    simple = _simplify(op, args, value)
    if simple is not None:
        return simple
    return trace.record(op, tuple(args), kwargs, value)


_IDENTITY_RIGHT = {"mul": 1, "truediv": 1, "add": 0, "sub": 0, "pow": 1}
_IDENTITY_LEFT = {"mul": 1, "add": 0}


def _simplify(op, args, value):
    """``x * 1``, ``x + 0``, ``x ** 1``... are ``x`` itself (exactly, in IEEE arithmetic)."""
    if op == "mul" and len(args) == 2:             # x * -1 is -x
        for other, const in ((args[0], args[1]), (args[1], args[0])):
            if (type(other) is Tracer and type(const) is not Tracer
                    and other.value.shape == np.shape(value) and other.value.dtype == np.result_type(value)):
                c = np.asarray(const)
                if c.size and is_uniform(c) and c.flat[0] == -1:
                    return -other
    if op in _IDENTITY_RIGHT and len(args) == 2:
        for other, const, table in ((args[0], args[1], _IDENTITY_RIGHT), (args[1], args[0], _IDENTITY_LEFT)):
            if (type(other) is Tracer and op in table and type(const) is not Tracer
                    and other.value.shape == np.shape(value) and other.value.dtype == np.result_type(value)):
                c = np.asarray(const)
                if c.size and is_uniform(c) and c.flat[0] == table[op]:
                    return other
    return None


def is_uniform(a: np.ndarray) -> bool:
    """All elements equal (a broadcast scalar): cheap for broadcast views."""
    if a.size <= 1:
        return True
    if not any(a.strides):
        return True
    first = a.flat[0]
    return bool(np.all(a == first)) if not np.isnan(first) else False


def _binop(name, fn, reflected=False):
    if reflected:
        def method(self, other):
            return traced_call(name, fn, (other, self))
    else:
        def method(self, other):
            return traced_call(name, fn, (self, other))
    return method


def _unop(name, fn):
    def method(self):
        return traced_call(name, fn, (self,))
    return method


def _no_inplace(name):
    def method(self, *args, **kwargs):
        raise TraceError(f"compile: in-place operation `{name}` on a traced value at {user_line()}; "
                         "a compiled program is written out of place: use `x = x + y` instead of "
                         "`x += y` (and `x.clone()` before an item assignment).")
    return method


class Tracer:
    """A traced array: its concrete value at trace time and the ``Step`` that made it."""

    __slots__ = ("trace", "value", "step", "name")
    __array_priority__ = 1000
    __hash__ = object.__hash__

    def __init__(self, trace, value, step):
        self.trace = trace
        self.value = value if type(value) is np.ndarray else np.asarray(value)
        self.step = step
        self.name = None

    # --- array facts ---------------------------------------------------------------
    shape = property(lambda self: self.value.shape)
    ndim = property(lambda self: self.value.ndim)
    dtype = property(lambda self: self.value.dtype)
    size = property(lambda self: self.value.size)
    nbytes = property(lambda self: self.value.nbytes)
    strides = property(lambda self: self.value.strides)

    @property
    def flags(self):
        # The engine reads ``data.flags`` only to check an in-place write (``+=``, ``x[i] = v``).
        _no_inplace("an in-place update such as `+=`, `x[i] = v` or `.add_()`")(self)

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        return f"Tracer(shape={self.shape}, dtype={self.dtype})"

    # --- arithmetic ------------------------------------------------------------------
    __add__ = _binop("add", operator.add)
    __radd__ = _binop("add", operator.add, True)
    __sub__ = _binop("sub", operator.sub)
    __rsub__ = _binop("sub", operator.sub, True)
    __mul__ = _binop("mul", operator.mul)
    __rmul__ = _binop("mul", operator.mul, True)
    __truediv__ = _binop("truediv", operator.truediv)
    __rtruediv__ = _binop("truediv", operator.truediv, True)
    __pow__ = _binop("pow", operator.pow)
    __rpow__ = _binop("pow", operator.pow, True)
    __matmul__ = _binop("matmul", operator.matmul)
    __rmatmul__ = _binop("matmul", operator.matmul, True)
    __lt__ = _binop("lt", operator.lt)
    __le__ = _binop("le", operator.le)
    __gt__ = _binop("gt", operator.gt)
    __ge__ = _binop("ge", operator.ge)
    __eq__ = _binop("eq", operator.eq)
    __ne__ = _binop("ne", operator.ne)
    __and__ = _binop("and", operator.and_)
    __rand__ = _binop("and", operator.and_, True)
    __or__ = _binop("or", operator.or_)
    __ror__ = _binop("or", operator.or_, True)
    __neg__ = _unop("neg", operator.neg)
    __invert__ = _unop("invert", operator.invert)
    __abs__ = _unop(("ufunc", "absolute", "__call__"), np.absolute)
    __iadd__ = _no_inplace("+=")
    __isub__ = _no_inplace("-=")
    __imul__ = _no_inplace("*=")
    __itruediv__ = _no_inplace("/=")

    @property
    def T(self):
        return traced_call(("method", "T"), lambda a: a.T, (self,))

    # --- methods NumPy arrays have ---------------------------------------------------
    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 else shape
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        if shape == self.shape:
            return self
        return traced_call(("method", "reshape"), lambda a, s: a.reshape(s), (self, shape))

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 else (axes or None)
        if axes is not None and tuple(axes) == tuple(range(self.ndim)):
            return self
        if axes is None or (self.ndim == 2 and tuple(axes) == (1, 0)):
            return self.T
        return traced_call(("method", "transpose"), lambda a, ax: a.transpose(ax), (self, tuple(axes)))

    def swapaxes(self, a1, a2):
        if self.ndim == 2 and {a1 % 2, a2 % 2} == {0, 1}:
            return self.T
        return traced_call(("method", "swapaxes"), lambda a, i, j: a.swapaxes(i, j), (self, a1, a2))

    def _reduce(self, name, axis=None, keepdims=False, **kw):
        if kw:
            raise TraceError(f"compile: `{name}` with {sorted(kw)} is not supported ({user_line()}).")
        if isinstance(axis, (list, tuple)):
            axis = tuple(int(a) % max(self.ndim, 1) for a in axis)
            if axis == tuple(range(self.ndim)):
                axis = None
            elif len(axis) == 1:
                axis = axis[0]
        return traced_call(("reduce", name), lambda a, ax, kd: getattr(a, name)(axis=ax, keepdims=kd),
                      (self, axis, bool(keepdims)))

    def sum(self, axis=None, keepdims=False, **kw):
        return self._reduce("sum", axis, keepdims, **kw)

    def max(self, axis=None, keepdims=False, **kw):
        return self._reduce("max", axis, keepdims, **kw)

    def min(self, axis=None, keepdims=False, **kw):
        return self._reduce("min", axis, keepdims, **kw)

    def all(self, axis=None, keepdims=False):
        return self._reduce("all", axis, keepdims)

    def any(self, axis=None, keepdims=False):
        return self._reduce("any", axis, keepdims)

    def astype(self, dtype, copy=True, **kw):
        dtype = np.dtype(dtype)
        if dtype == self.dtype and not copy:
            return self
        return traced_call(("method", "astype"), lambda a, d: a.astype(d), (self, dtype))

    def copy(self):
        return traced_call(("method", "copy"), lambda a: a.copy(), (self,), None)

    def __getitem__(self, key):
        if type(key) is Tracer or (type(key) is tuple and any(type(k) is Tracer for k in key)):
            raise TraceError(f"compile: indexing with a traced array at {user_line()} is not "
                             "supported; index with constants (ints, slices, fixed index arrays).")
        return traced_call("getitem", operator.getitem, (self, key))

    def __setitem__(self, key, value):
        _no_inplace(f"x[{_key_text(key)}] = ...")(self)

    # --- leaving the trace: guards or errors -----------------------------------------
    def __bool__(self):
        result = bool(self.value)
        self.trace.guard(self, result)
        return result

    def _escape(self, what):
        raise TraceError(
            f"compile: `{what}` of a traced value at {user_line()} turns it into a Python "
            "constant, which a compiled program cannot follow. Keep it an array (use the "
            "engine's ops), or compute it outside the compiled function.")

    def __float__(self):
        self._escape("float()")

    def __int__(self):
        self._escape("int()")

    def __index__(self):
        self._escape("int()/index")

    def item(self, *a):
        self._escape(".item()")

    def tolist(self):
        self._escape(".tolist()")

    def __array__(self, dtype=None, copy=None):
        self._escape("np.asarray()")

    # --- NumPy's protocols: ufuncs and array functions -------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            _no_inplace(f"np.{ufunc.__name__}(..., out=...)")(self)
        if method == "__call__":
            op = _UFUNC_OPERATORS.get(ufunc.__name__, ("ufunc", ufunc.__name__, "__call__"))
            return traced_call(op, ufunc, inputs, kwargs)
        if method == "reduce" and ufunc.__name__ in _REDUCE_METHODS:
            (a,) = inputs
            return Tracer._reduce(a, _REDUCE_METHODS[ufunc.__name__], kwargs.get("axis", 0),
                                  kwargs.get("keepdims", False))
        if method == "at":
            _no_inplace(f"np.{ufunc.__name__}.at")(self)
        return traced_call(("ufunc", ufunc.__name__, method), getattr(ufunc, method), inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        name = func.__name__
        if name in _CONCRETE_FUNCTIONS:              # facts about shape and dtype
            return func(*concrete(args), **kwargs)
        if name in _INPLACE_FUNCTIONS:   # the engine's in-place ops (+=, x[i] = v, add_) end here
            _no_inplace(f"np.{name}: an in-place update such as `+=`, `x[i] = v` or `.add_()`")(self)
        if getattr(func, "__module__", "") == "numpy.linalg":
            if name not in _LINALG_FUNCTIONS:
                raise TraceError(f"compile: np.linalg.{name} on a traced value ({user_line()}) is "
                                 "not supported by the tracer; write it with the engine's ops.")
            # results such as eigh's (w, v) are named tuples: record a plain tuple of Tracers
            return traced_call(("call", "linalg." + name), _plain_tuple(func), args, kwargs)
        if name not in _NUMPY_FUNCTIONS:
            raise TraceError(f"compile: np.{name} on a traced value ({user_line()}) is not "
                             "supported by the tracer; write it with the engine's ops.")
        if name == "broadcast_to" and tuple(np.shape(concrete(args[0]))) == tuple(args[1]):
            return args[0]
        return traced_call(("call", name), func, args, kwargs)


_UFUNC_OPERATORS = {"add": "add", "subtract": "sub", "multiply": "mul", "true_divide": "truediv",
                    "divide": "truediv", "power": "pow", "matmul": "matmul", "negative": "neg",
                    "less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge",
                    "equal": "eq", "not_equal": "ne", "logical_and": "and", "bitwise_and": "and",
                    "logical_or": "or", "bitwise_or": "or", "invert": "invert",
                    "logical_not": "invert"}
_REDUCE_METHODS = {"add": "sum", "maximum": "max", "minimum": "min",
                   "logical_and": "all", "logical_or": "any"}
_CONCRETE_FUNCTIONS = {"shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj"}
_INPLACE_FUNCTIONS = {"copyto", "put", "place", "putmask", "fill_diagonal"}
_NUMPY_FUNCTIONS = {"where", "broadcast_to", "transpose", "stack", "concatenate", "split",
                    "moveaxis", "max", "min", "amax", "amin", "sum", "all", "any", "vdot", "dot",
                    "sign", "isfinite", "exp", "log", "outer", "squeeze", "expand_dims",
                    "zeros_like", "ones_like", "reshape", "swapaxes", "clip", "copy",
                    "array_split", "unstack",
                    # NumPy's reductions, scans, sorting and shape functions (issue 19)
                    "prod", "cumsum", "cumprod", "flip", "roll", "tile", "take",
                    "take_along_axis", "argsort", "sort", "diagonal", "tril", "triu", "pad",
                    # linear algebra (issue 19)
                    "einsum", "tensordot", "kron", "inner", "cross", "trace", "matrix_transpose"}
#: np.linalg functions the engine's linalg ops call (printed as ``np.linalg.<name>``)
_LINALG_FUNCTIONS = {"det", "slogdet", "inv", "solve", "cholesky", "eigh", "eigvalsh", "qr",
                     "norm", "vector_norm", "matrix_norm", "matrix_power", "multi_dot", "svd", "svdvals", "pinv"}


def _plain_tuple(func):
    def call(*args, **kwargs):
        out = func(*args, **kwargs)
        return tuple(out) if isinstance(out, tuple) else out
    return call


def _key_text(key):
    items = key if isinstance(key, tuple) else (key,)
    return ", ".join("..." if k is Ellipsis else (":" if isinstance(k, slice) else repr(k)) for k in items)


# NumPy functions (not ufuncs, which are recorded generically) that the elementwise ops of
# issue 19 call in their formulas: round/around/fix, sinc, nan_to_num, and cumprod and take
# for integer exponent arrays (ops.elementwise.power_by_table)
_NUMPY_FUNCTIONS |= {"round", "around", "fix", "sinc", "nan_to_num", "cumprod", "take"}
