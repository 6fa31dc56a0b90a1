"""The ``xp`` contract: the names a problem's ``fn(xp, *args)`` may use.

A problem is written once and runs on five namespaces: NumPy (finite differences, the
hand-written gradients), ``jax.numpy``, the engine's namespace, SymPy's
(``diffcompare.problems.symbolic.sympy_xp``) and PyTorch's
(``diffcompare.problems.torch_namespace``, built on array-api-compat).  ``NAMES`` lists what
works on all five, with NumPy's meaning (``axis``/``keepdims`` for reductions, given by keyword
as in the array API standard; float64 for new arrays).

A few names NumPy lacks are provided by diffcompare (``PROVIDED``) wherever a namespace
has no name of its own, written with contract names only:

- ``logsumexp(x, axis=None, keepdims=False)``: ``m + log(sum(exp(x - m)))`` with ``m`` the
  maximum (stable; the shift's gradient cancels exactly); SymPy gets the plain
  ``log(sum(exp(x)))``, whose derivative has no ``Max``/``Heaviside`` in it;
- ``sigmoid(x) = 1 / (1 + exp(-x))``, computed as ``exp(-logaddexp(0, -x))`` (no overflow,
  and relatively accurate in the tail, as the engine's and torch's own: ``(1 + tanh(x / 2)) / 2``
  rounds to 0 from x ~ -38, so ``log(sigmoid(-40))`` was -inf on NumPy and JAX alone; complex
  input, the complex step's, takes that analytic form);
- ``softplus(x) = log(1 + exp(x))``, computed as ``maximum(x, 0) + log(1 + exp(-|x|))``
  (SymPy: the plain form);
- ``log1p(x) = log(1 + x)`` where a namespace has none (the engine).

Every problem's ``fn`` is called through :func:`bind` (``Problem`` does it), so on every
namespace ``xp`` has these names.  A name that is neither the namespace's own nor provided
raises ``MissingName`` (an ``AttributeError``) naming the name, the namespace and the contract:

>>> import numpy as np
>>> xp = namespace(np)
>>> float(xp.logsumexp(np.array([0.0, 0.0])))    # log 2
0.6931471805599453
>>> float(xp.sigmoid(np.array(0.0)))
0.5
>>> from diffcompare.engine import array_api
>>> namespace(array_api).fft
Traceback (most recent call last):
...
diffcompare.problems.contract.MissingName: xp.fft is not available on the engine (diffcompare.engine.array_api): it is not in diffcompare's xp contract; use the names in diffcompare.problems.contract.NAMES (abs, absolute, add, ...).

Names outside the contract that a namespace has (``np.fft`` on NumPy) still work there,
so a problem meant for one method is not refused; ``tests/problems/test_contract.py`` checks
that the shipped catalog uses contract names only.

The contract is one table (``CANDIDATES`` by kind, ``LACKS``: per name and namespace, why
that namespace cannot give it with NumPy's meaning; the engine's column read from the engine).
``NAMES`` and ``GROUPS`` are what no namespace lacks; ``markdown()`` (docs/contract.md) and
``text()`` (``diffcompare list contract``) print the table;
``tests/problems/test_contract_table.py`` calls every name on every namespace against NumPy.

One contract, one verdict: ``verdict(problem, inputs)`` calls the problem's function once on
a recording NumPy namespace and finds the names it uses outside the contract (``xp.linalg.x``
too) and which namespaces have them.  Before any cell runs the runner says so once (a
``ContractWarning``; the CLI prints it as a note); a method whose namespace lacks a name gets
an ``unsupported`` row with the same explanation as every other such method, and the methods
whose namespace has it run normally:

>>> v = Verdict("demo", ["sum", "wiggle"], {"wiggle": ("numpy", "jax")})   # a made-up name
>>> v.outside, v.runs_on("jax"), v.runs_on("engine")
(('wiggle',), True, False)
>>> print(v.reason("engine"))
xp.wiggle is outside diffcompare's xp contract (diffcompare.problems.contract.NAMES; `diffcompare list contract`), so only the methods whose namespace has it run it: xp.wiggle is on NumPy, jax.numpy only.
"""
from __future__ import annotations

import functools
import types
import warnings

#: The namespaces a problem runs on: key -> what the tables call it.
NAMESPACES = {"engine": "engine", "numpy": "NumPy", "jax": "jax.numpy", "torch": "torch",
              "sympy": "SymPy"}

#: Every name the contract considers, by kind: NumPy's names that a person's function uses.
#: A name is in the contract (``NAMES``) when every namespace gives it with NumPy's meaning;
#: ``LACKS`` says why one cannot.  The engine's column is read from the engine itself
#: (``diffcompare.engine.array_api``), so a name joins the contract as the engine gains it.
CANDIDATES = {
    "elementwise": ("abs", "absolute", "fabs", "exp", "exp2", "expm1", "log", "log1p", "log10",
                    "log2", "sqrt", "cbrt", "square", "reciprocal", "sin", "cos", "tan",
                    "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "arcsinh",
                    "arccosh", "arctanh", "sinc", "hypot", "deg2rad", "rad2deg", "degrees",
                    "radians", "logaddexp", "logaddexp2", "sign", "ceil", "floor", "round",
                    "trunc", "negative", "positive", "add", "subtract", "multiply", "divide",
                    "true_divide", "power", "remainder", "mod", "fmod", "maximum", "minimum",
                    "fmax", "fmin", "clip", "where", "select", "real", "imag", "conj",
                    "conjugate", "nan_to_num", "sigmoid", "softplus"),
    "reductions": ("sum", "mean", "max", "min", "amax", "amin", "logsumexp", "prod", "var",
                   "std", "cumsum", "cumprod", "trace", "diff", "sort"),
    "linear algebra": ("matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum", "kron",
                       "cross", "matrix_transpose", "linalg.det", "linalg.slogdet", "linalg.inv",
                       "linalg.solve", "linalg.cholesky", "linalg.eigh", "linalg.eigvalsh",
                       "linalg.norm", "linalg.qr", "linalg.matrix_power", "linalg.multi_dot",
                       "linalg.svd", "linalg.svdvals", "linalg.pinv"),
    "shapes": ("reshape", "transpose", "permute_dims", "swapaxes", "expand_dims", "squeeze",
               "broadcast_to", "stack", "concatenate", "concat", "moveaxis", "rollaxis", "ravel",
               "repeat", "tile", "roll", "flip", "flipud", "fliplr", "rot90", "diag", "diagonal",
               "tril", "triu", "atleast_1d", "atleast_2d", "atleast_3d", "vstack", "hstack",
               "column_stack", "dstack", "append", "pad", "split", "array_split", "vsplit",
               "hsplit", "dsplit", "take"),
    "new arrays": ("asarray", "array", "zeros", "ones", "full", "zeros_like", "ones_like",
                   "arange", "linspace", "eye"),
    "constants": ("pi", "e", "inf", "nan", "newaxis", "float64", "float32"),
}

#: name -> {namespace: why it cannot give the name with NumPy's meaning} (the engine's
#: column is added from the engine: see ``lacks``).  One table: ``NAMES``, the docs table
#: (docs/contract.md) and ``diffcompare list contract`` are generated from it.
LACKS = {
    "round": {"sympy": "NumPy rounds halves to even; SymPy has no such rounding function of a "
                       "symbol (floor(x + 1/2) rounds 2.5 to 3, not 2)"},
    "nan_to_num": {"sympy": "a symbolic expression has no NaN or infinity to replace: the NaN "
                            "appears only when the derivative is evaluated"},
    "sort": {"sympy": "sorting needs the values: the order of symbols is unknown (a sorted "
                      "array of n symbols is a piecewise expression over n! orderings)"},
    # SymPy's det, slogdet, inv, solve and cholesky go through sympy.Matrix up to n = 4
    # (symbolic.SYMBOLIC_LINALG_MAX_N: an n x n determinant has n! terms; larger n is refused
    # with the predicted size); these have no usable closed form at all:
    "linalg.eigh": {"sympy": "no usable closed form for the eigenvectors (roots of the "
                             "degree-n characteristic polynomial)"},
    "linalg.eigvalsh": {"sympy": "no closed form beyond n = 4 (roots of the characteristic "
                                 "polynomial)"},
    "linalg.qr": {"sympy": "nested square roots grow too fast, and LAPACK's sign convention "
                           "has no symbolic counterpart"},
    "linalg.svd": {"sympy": "no usable closed form for singular values"},
    "linalg.svdvals": {"sympy": "no usable closed form for singular values"},
    "linalg.pinv": {"sympy": "needs the singular values (no usable closed form)"},
}

#: Where the engine's column is read from.
_ENGINE_MODULE = "diffcompare.engine.array_api"


def _engine_reason(name):
    """Why the engine lacks ``name`` (None if it has it or the contract provides it)."""
    import importlib

    engine = importlib.import_module(_ENGINE_MODULE)
    if name in PROVIDED or _has_path(engine, name):
        return None
    return f"not on the engine's namespace ({_ENGINE_MODULE}) yet"


def _has_path(obj, dotted: str) -> bool:
    """Whether ``obj.a.b`` exists for ``dotted`` = ``"a.b"`` (a sub-namespace's name)."""
    for part in dotted.split("."):
        try:
            obj = getattr(obj, part)
        except (AttributeError, NotImplementedError):
            return False
    return True


def lacks(name) -> dict:
    """``{namespace: reason}`` for the namespaces that cannot give ``name`` (empty: every one
    can, so it is in ``NAMES``)."""
    out = dict(LACKS.get(name, {}))
    engine = _engine_reason(name)
    if engine is not None and "engine" not in out:
        out["engine"] = engine
    return out


def _groups():
    return {group: tuple(n for n in names if not lacks(n)) for group, names in CANDIDATES.items()}



# --- names diffcompare provides where a namespace lacks them -----------------------------

def _symbolic(xp) -> bool:
    from .symbolic import SympyNamespace

    return isinstance(xp, SympyNamespace)


def _logsumexp(xp):
    if _symbolic(xp):
        return lambda x, axis=None, keepdims=False: xp.log(xp.sum(xp.exp(x), axis=axis,
                                                                  keepdims=keepdims))

    def logsumexp(x, axis=None, keepdims=False):
        m = xp.max(x, axis=axis, keepdims=True)
        out = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
        if keepdims:
            return out
        return xp.reshape(out, ()) if axis is None else xp.squeeze(out, axis=axis)

    return logsumexp


def _sigmoid(xp):
    if _symbolic(xp):
        return lambda x: 1 / (1 + xp.exp(-x))

    def sigmoid(x):
        if getattr(getattr(x, "dtype", None), "kind", "f") == "c":
            # complex step: logaddexp takes no complex numbers; the tanh form is analytic
            return 0.5 * (1 + xp.tanh(0.5 * x))
        return xp.exp(-xp.logaddexp(0.0, -x))

    return sigmoid


def _softplus(xp):
    if _symbolic(xp):
        return lambda x: xp.log(1 + xp.exp(x))
    return lambda x: xp.maximum(x, 0) + xp.log(1 + xp.exp(-xp.abs(x)))


def _log1p(xp):
    return lambda x: xp.log(1 + x)


#: name -> (xp -> function), used only where the namespace has no such name
PROVIDED = {"logsumexp": _logsumexp, "sigmoid": _sigmoid, "softplus": _softplus, "log1p": _log1p}

#: The contract, by kind: the names that work on NumPy, jax.numpy, the engine, SymPy and
#: torch with NumPy's meaning (every candidate that no namespace lacks).
GROUPS = _groups()
NAMES = tuple(sorted(n for group in GROUPS.values() for n in group))


# --- the bound namespace -------------------------------------------------------------

def _label(xp) -> str:
    name = getattr(xp, "__name__", None)
    labels = {"numpy": "NumPy (numpy)", "jax.numpy": "JAX (jax.numpy)",
              "diffcompare.engine.array_api": "the engine (diffcompare.engine.array_api)",
              "diffcompare.problems.torch_namespace": "torch (diffcompare.problems.torch_namespace)"}
    if name in labels:
        return labels[name]
    if type(xp).__name__ == "SympyNamespace":
        return "SymPy (diffcompare.problems.symbolic.sympy_xp)"
    return name or repr(xp)


class MissingName(AttributeError, NotImplementedError):
    """A problem used a name its namespace lacks (an ``AttributeError``, and a
    ``NotImplementedError`` as the SymPy namespace has always raised for such names)."""


class ContractNamespace(types.SimpleNamespace):
    """``xp`` as a problem sees it: the namespace's own names, plus ``PROVIDED`` where
    missing; a missing name raises ``AttributeError`` naming it and the namespace."""

    def __getattr__(self, name):
        # only reached for names the namespace lacks
        if name.startswith("__"):
            raise AttributeError(name)
        label = self.__dict__.get("_label", "this namespace")
        where = ("it is in diffcompare's xp contract but missing here (a bug: please report it)"
                 if name in NAMES else "it is not in diffcompare's xp contract")
        why = lacks(name) if name in _CANDIDATES else {}
        if why:
            where += " (" + "; ".join(f"{NAMESPACES[k]}: {r}" for k, r in why.items()) + ")"
        raise MissingName(f"xp.{name} is not available on {label}: {where}; use the names in "
                             f"diffcompare.problems.contract.NAMES ({', '.join(NAMES[:3])}, ...).")


_CACHE: dict = {}
_CANDIDATES = frozenset(n for names in CANDIDATES.values() for n in names)


def namespace(xp) -> ContractNamespace:
    """``xp`` with the contract's names (built once per namespace)."""
    if isinstance(xp, ContractNamespace):
        return xp
    key = id(xp)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is xp:
        return hit[1]
    attrs = {}
    with warnings.catch_warnings():       # reading every name touches deprecated ones
        warnings.simplefilter("ignore")
        for name in dir(xp):
            if name.startswith("_"):
                continue
            try:
                attrs[name] = getattr(xp, name)
            except (AttributeError, NotImplementedError, ImportError):
                continue
    for name in NAMES:              # names a namespace resolves lazily (torch's dtypes)
        if name not in attrs:
            try:
                attrs[name] = getattr(xp, name)
            except (AttributeError, NotImplementedError):
                if name in PROVIDED:
                    attrs[name] = PROVIDED[name](xp)
    ns = ContractNamespace(**attrs)
    ns.__dict__["_label"] = _label(xp)
    _CACHE[key] = (xp, ns)
    return ns


def missing(xp) -> list:
    """Contract names that ``xp`` cannot give (empty for the five supported namespaces)."""
    ns = namespace(xp)
    return [n for n in NAMES if not _has_path(ns, n)]


class ContractFunction:
    """A problem's ``fn`` called with ``namespace(xp)``; otherwise looks like ``fn``
    (``__code__``, ``__module__``, ``__name__``, ``__wrapped__``), so caches keyed by the
    function's code and pickling by reference keep working."""

    def __init__(self, fn):
        self.__wrapped__ = fn
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, xp, *args):
        return self.__wrapped__(namespace(xp), *args)

    def __getattr__(self, name):
        if name == "__wrapped__":
            raise AttributeError(name)
        return getattr(self.__wrapped__, name)

    def __reduce__(self):
        return (ContractFunction, (self.__wrapped__,))

    def __eq__(self, other):
        return isinstance(other, ContractFunction) and other.__wrapped__ == self.__wrapped__

    def __hash__(self):
        return hash(self.__wrapped__)

    def __repr__(self):
        return f"<problem function {getattr(self.__wrapped__, '__qualname__', self.__wrapped__)!r}>"


def bind(fn) -> ContractFunction:
    """``fn`` called with the contract namespace (idempotent)."""
    return fn if isinstance(fn, ContractFunction) else ContractFunction(fn)


# --- the table, for people: docs/contract.md and `diffcompare list contract` ------------

CHECK = "\u2713"


def table() -> list:
    """One row per candidate name: ``(group, name, {namespace: CHECK or the reason})``."""
    rows = []
    for group, names in CANDIDATES.items():
        for name in names:
            why = lacks(name)
            rows.append((group, name, {k: why.get(k, CHECK) for k in NAMESPACES}))
    return rows


def markdown() -> str:
    """The contract's table as Markdown (``diffcompare list contract --markdown`` prints it;
    docs/contract.md is this text)."""
    lines = ["# The xp contract", "",
             "<!-- generated by `diffcompare list contract --markdown > docs/contract.md` from "
             "diffcompare/problems/contract.py; do not edit -->", "",
             "A problem's `fn(xp, *args)` runs on five namespaces.  A name is in the contract "
             f"(`diffcompare.problems.contract.NAMES`, {len(NAMES)} names) when every one gives "
             "it with NumPy's meaning; otherwise the table says why one cannot.  A function "
             "that uses a name outside the contract runs on the methods whose namespace has it, "
             "and every other method reports `unsupported`, naming the name (said once before "
             "the cells run).", ""]
    head = "| group | name | " + " | ".join(NAMESPACES.values()) + " |"
    lines += [head, "|" + "---|" * (2 + len(NAMESPACES))]
    for group, name, cells in table():
        mark = f"`{name}`" if name in NAMES else f"`{name}` (outside)"
        lines.append(f"| {group} | {mark} | " + " | ".join(cells[k] for k in NAMESPACES) + " |")
    return "\n".join(lines) + "\n"


def text(width: int = 100) -> str:
    """The contract's table as text: names down, namespaces across, reasons as footnotes."""
    import textwrap

    name_w = max(len(n) for names in CANDIDATES.values() for n in names) + 2
    col_w = max(len(v) for v in NAMESPACES.values()) + 2
    lines = [f"diffcompare's xp contract: {len(NAMES)} names work on every namespace with "
             f"NumPy's meaning ({CHECK}); numbers are footnotes saying why a namespace lacks one.",
             ""]
    lines.append("name".ljust(name_w) + "".join(v.rjust(col_w) for v in NAMESPACES.values()))
    notes: dict = {}
    group_now = None
    for group, name, cells in table():
        if group != group_now:
            lines += ["", f"[{group}]"]
            group_now = group
        marks = []
        for k in NAMESPACES:
            cell = cells[k]
            if cell != CHECK:
                cell = str(notes.setdefault(cell, len(notes) + 1))
            marks.append(cell.rjust(col_w))
        lines.append(name.ljust(name_w) + "".join(marks))
    if notes:
        lines += ["", "footnotes:"]
        for reason, number in notes.items():
            lines += textwrap.wrap(f"{number:>3}  {reason}", width, subsequent_indent="     ")
    return "\n".join(lines)


# --- one contract, one verdict ---------------------------------------------------------------

class ContractWarning(UserWarning):
    """A problem uses names outside the xp contract: said once, before any cell runs."""


#: every namespace a method may run a problem on: key -> label
RUNS_ON = {**NAMESPACES, "autograd": "autograd.numpy"}


def namespace_object(key):
    """The namespace ``key`` (a ``RUNS_ON`` key) names; ``ImportError`` if its library is missing."""
    if key == "numpy":
        import numpy
        return numpy
    if key == "engine":
        import importlib
        return importlib.import_module(_ENGINE_MODULE)
    if key == "jax":
        import jax.numpy
        return jax.numpy
    if key == "torch":
        from . import torch_namespace
        return torch_namespace.namespace()
    if key == "sympy":
        from .symbolic import sympy_xp
        return sympy_xp
    if key == "autograd":
        import autograd.numpy
        return autograd.numpy
    raise KeyError(f"unknown namespace {key!r}; known: {', '.join(RUNS_ON)}")


def in_contract(name: str) -> bool:
    """Whether ``name`` (``"exp"``, or ``"linalg.inv"`` for a sub-namespace's) is a contract
    name; a sub-namespace (``"linalg"``) is, when it holds contract names."""
    return name in NAMES or any(n.startswith(name + ".") for n in NAMES)


def has_name(key, name: str) -> bool:
    """Whether namespace ``key`` gives ``name`` (dotted for a sub-namespace: ``linalg.inv``),
    differentiably where the namespace says (autograd.numpy: ``autograd_gap``)."""
    try:
        obj = namespace(namespace_object(key))
    except ImportError:
        return False
    for part in name.split("."):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                obj = getattr(obj, part)
        except (AttributeError, NotImplementedError, ImportError):
            return False
    return key != "autograd" or autograd_gap(name) is None


def autograd_gap(name: str):
    """Why HIPS autograd cannot differentiate ``autograd.numpy.<name>`` (None if it can): a
    primitive with no VJP (``fmod``, ``flip``, ``cbrt``, ...) fails only at the gradient.
    New arrays (``zeros``, ``arange``, ...) are made from constants: not asked."""
    if name in CANDIDATES["new arrays"]:
        return None
    try:
        import autograd.numpy as anp
        from autograd.core import VJPNode, primitive_vjps
        from autograd.tracer import notrace_primitives
    except ImportError:
        return None
    obj = anp
    for part in name.split("."):
        obj = getattr(obj, part, None)
    if obj is None or not getattr(obj, "_is_autograd_primitive", False):
        return None                 # a Python function of primitives, or not there at all
    if obj in primitive_vjps or obj in notrace_primitives[VJPNode]:
        return None
    return f"HIPS autograd defines no gradient (VJP) for autograd.numpy.{name}"


#: namespaces that may give a contract name yet not differentiate it: checked per name used
_CHECKED_FOR_CONTRACT_NAMES = ("autograd",)


class _Recorder:
    """NumPy's contract namespace that notes every ``xp`` name a function reads (a
    sub-namespace's as ``linalg.<name>``); a name NumPy lacks is noted, then raised."""

    def __init__(self, ns, prefix="", used=None):
        self._ns, self._prefix = ns, prefix
        self.used = [] if used is None else used

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        full = self._prefix + name
        if full not in self.used:
            self.used.append(full)
        value = getattr(self._ns, name)
        if isinstance(value, types.ModuleType) or type(value).__name__ == "ContractNamespace":
            return _Recorder(value, full + ".", self.used)
        return value


def names_used(fn, args) -> list:
    """The ``xp`` names ``fn(xp, *args)`` reads, from one call on NumPy (in order).  A
    failure of the call stops the reading there (the names so far are kept): the cells
    themselves report it."""
    import numpy

    fn = getattr(fn, "__wrapped__", fn) if isinstance(fn, ContractFunction) else fn
    recorder = _Recorder(namespace(numpy))
    with warnings.catch_warnings(), numpy.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            fn(recorder, *args)
        except Exception:                     # noqa: BLE001 -- the cells report it
            pass
    return list(recorder.used)


class Verdict:
    """Which ``xp`` names a problem uses outside the contract, and which namespaces have them.

    ``used``: the names its function reads; ``outside``: those outside the contract (in order
    of use); ``have(name)``: the ``RUNS_ON`` keys whose namespace has it.  ``runs_on(key)``
    says whether a method on namespace ``key`` can run the problem -- for autograd.numpy also
    whether it differentiates the contract names used; ``reason(key)`` why not (its
    ``unsupported`` row's message, the same on every such method); ``message(methods)`` the
    one explanation said before any cell runs.  Namespaces are asked lazily, once each."""

    def __init__(self, problem_name, used, have=None):
        self.problem = problem_name
        self.used = tuple(n for n in used if not _is_sub(n))
        self.outside = tuple(n for n in self.used if not in_contract(n))
        self._has = {(k, n): (k in keys) for n, keys in (have or {}).items() for k in RUNS_ON}

    def __bool__(self):                 # true when names outside the contract are used
        return bool(self.outside)

    def _gives(self, key, name) -> bool:
        if (key, name) not in self._has:
            self._has[(key, name)] = has_name(key, name)
        return self._has[(key, name)]

    def have(self, name) -> tuple:
        return tuple(k for k in RUNS_ON if self._gives(k, name))

    def missing_on(self, key) -> list:
        missing = [n for n in self.outside if not self._gives(key, n)]
        if key in _CHECKED_FOR_CONTRACT_NAMES:
            missing += [n for n in self.used if n not in self.outside and not self._gives(key, n)]
        return missing

    def runs_on(self, key) -> bool:
        return not self.missing_on(key)

    @staticmethod
    def _names(names) -> str:
        return ", ".join(f"xp.{n}" for n in names)

    def _where(self, name) -> str:
        keys = self.have(name)
        if not keys:
            return (f"xp.{name} exists on none of the namespaces ("
                    f"{', '.join(RUNS_ON.values())}): check its spelling")
        why = dict(LACKS.get(name, {}))
        if "autograd" not in keys and autograd_gap(name):
            why["autograd"] = autograd_gap(name)
        lacking = [k for k in RUNS_ON if k not in keys]
        text = f"xp.{name} is on {', '.join(RUNS_ON[k] for k in keys)}" + (" only" if lacking else "")
        if why:
            text += " (" + "; ".join(f"{RUNS_ON[k]}: {r}" for k, r in why.items()) + ")"
        return text

    def reason(self, key) -> str:
        """The ``unsupported`` message for a method on namespace ``key`` ("" if it runs)."""
        missing = self.missing_on(key)
        outside = [n for n in missing if n in self.outside]
        parts = []
        if outside:
            parts.append(f"{self._names(outside)} {'is' if len(outside) == 1 else 'are'} outside "
                         "diffcompare's xp contract (diffcompare.problems.contract.NAMES; "
                         "`diffcompare list contract`), so only the methods whose namespace has "
                         "it run it: " + "; ".join(self._where(n) for n in outside) + ".")
        gaps = [n for n in missing if n not in self.outside]
        if gaps:
            parts.append(f"{RUNS_ON[key]} cannot differentiate {self._names(gaps)}: "
                         + "; ".join(autograd_gap(n) or f"not on {RUNS_ON[key]}" for n in gaps)
                         + ".")
        return " ".join(parts)

    def message(self, methods=None) -> str:
        """Said once before the cells run ("" if there is nothing to say): the names outside
        the contract and which of ``methods`` (``{method: namespace key}``) still run the
        problem; or which methods cannot differentiate a contract name it uses."""
        methods = dict(methods or {})
        refused = [m for m, k in methods.items() if not self.runs_on(k)]
        if not self.outside and not refused:
            return ""
        if self.outside:
            text = (f"problem {self.problem!r} uses {self._names(self.outside)}, outside "
                    "diffcompare's xp contract (`diffcompare list contract`): "
                    + "; ".join(self._where(n) for n in self.outside) + ".")
        else:
            text = f"problem {self.problem!r}: " + " ".join(
                dict.fromkeys(self.reason(methods[m]) for m in refused))
        if methods:
            run = [m for m in methods if m not in refused]
            text += (f" Methods that run it: {', '.join(run) or 'none'}; methods that report it "
                     f"unsupported: {', '.join(refused) or 'none'}.")
        return text


_VERDICTS: dict = {}


def verdict(problem, inputs) -> Verdict:
    """The contract's verdict on ``problem`` at ``inputs`` (its fn called once on NumPy)."""
    fn = problem.fn
    key = (problem.name, getattr(fn, "__wrapped__", fn),
           tuple((getattr(a, "shape", None), str(getattr(a, "dtype", type(a)))) for a in inputs))
    try:
        hit = _VERDICTS.get(key)
    except TypeError:                 # an unhashable fn: no cache
        key, hit = None, None
    if hit is not None:
        return hit
    result = Verdict(problem.name, names_used(fn, inputs))
    if key is not None:
        _VERDICTS[key] = result
    return result


def _is_sub(name) -> bool:
    """A sub-namespace itself (``linalg``): its names are judged, not it."""
    import numpy

    return "." not in name and isinstance(getattr(numpy, name, None), types.ModuleType)


def method_namespace(backend) -> str:
    """The ``RUNS_ON`` key of the namespace a backend instance runs problems on (its
    description's ``namespace``)."""
    return getattr(backend, "xp_namespace", "numpy")


__all__ = ["NAMES", "GROUPS", "CANDIDATES", "LACKS", "NAMESPACES", "lacks", "table", "markdown",
           "text", "Verdict", "verdict", "names_used", "ContractWarning", "RUNS_ON", "PROVIDED", "namespace", "bind", "missing", "MissingName",
           "ContractNamespace",
           "ContractFunction"]
