"""What a method must know about a function before it runs it, read from one evaluation.

A catalog problem carries hand-set tags (``nonsmooth``, ``not-complex-analytic``); a
user's own function carries none.  Instead of trusting tags, run the function once on the
engine's Tensors at its smallest size: every differentiable op it applies is a backward
node, and a profile hook notes the line of the user's code that applied it.  From that
record a method can tell whether it applies:

- the complex step needs a function that stays analytic when NumPy evaluates it on complex
  numbers; ``abs`` (the modulus), ``sign`` (z/|z|), ``real``/``imag``/``conj`` and the
  Hermitian linear algebra (norms, ``eigh``, ``cholesky``, ``svd``, ``qr``) are not, and give
  silently wrong derivatives (``NON_ANALYTIC``).  Ops that NumPy refuses on complex input
  (``floor``, ``hypot``, ...) fail loudly and need no check; ``maximum``, ``where`` and
  comparisons compare complex numbers by real part first, which is right away from a tie;
- every method needs to know whether the inputs put an op exactly on its kink (``abs`` at 0,
  a tie of ``maximum``, a comparison at equality: the rules are :mod:`.kinks`'): there each
  method returns its own convention, so the cell's rows carry :attr:`Facts.kink_note` and
  their disagreement is not scored (:func:`at_kink` reads the note back);
- a symbolic backend names the op and line of what it cannot derive (:func:`uses_of`).

Evaluated at a cell's own inputs (:func:`facts_at`), the record is bounded: inputs above
``MAX_ELEMENTS`` elements or an evaluation past ``BUDGET_S`` seconds give "unknown", as a
function the engine cannot run does.

>>> import numpy as np
>>> from diffcompare.problems.problem import Problem
>>> ridge_l1 = Problem("ridge_l1", lambda xp, w: xp.sum(w ** 2) + xp.sum(xp.abs(w)),
...                    lambda size, seed: (np.linspace(-1, 1, size),), "ridge + L1", sizes=(3,))
>>> [use.op for use in facts(ridge_l1).non_analytic]
['abs']
>>> print(facts_at(ridge_l1, (np.array([0.0, 0.5]),), key="at zero").kinks[0])
abs at x = 0 (1 of 2 elements) at <doctest diffcompare.problems.validity[2]>:1
"""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
import time

import numpy as np

from . import kinks as _kinks

#: backward-node class names whose complex extension (as NumPy computes it) is not analytic
NON_ANALYTIC = frozenset({"Abs", "Fabs", "Sign", "Real", "Imag", "Conj", "Angle"})
#: ... and any node whose class name contains one of these (Hermitian linear algebra)
NON_ANALYTIC_PARTS = ("Norm", "Eigh", "Eigvalsh", "Svd", "Cholesky", "Qr", "Pinv")

#: the evaluation at a cell's inputs is skipped above this many input elements, and given up
#: after this many seconds: its facts are then unknown
MAX_ELEMENTS = 2 ** 25
BUDGET_S = 20.0

#: the start of :attr:`Facts.kink_note`, which :func:`at_kink` recognises in a row's message
KINK_NOTE = "kink reached at these inputs"


def _library_dir(name: str) -> str:
    spec = importlib.util.find_spec(name)
    locations = getattr(spec, "submodule_search_locations", None) if spec else None
    return os.path.abspath(list(locations)[0]) if locations else "//nowhere"


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # diffcompare/
_HERE = os.path.dirname(os.path.abspath(__file__))
#: frames that are not the function's own code: the engine, the namespaces the function is
#: evaluated on (NumPy, SymPy, the contract's wrappers), the backends and this module
_NOT_USER = (os.path.join(_PACKAGE, "engine"), os.path.join(_PACKAGE, "backends"),
             os.path.dirname(np.__file__), _library_dir("sympy"), _library_dir("symengine"),
             os.path.join(_HERE, "contract.py"), os.path.join(_HERE, "symbolic.py"),
             os.path.join(_HERE, "torch_namespace.py"), os.path.join(_HERE, "kinks.py"),
             os.path.abspath(__file__))


@dataclasses.dataclass(frozen=True)
class OpUse:
    """One op the function applied: its node class (``Abs``), its name (``abs``) and where."""

    node: str
    line: str

    @property
    def op(self) -> str:
        return self.node.lower()

    def __str__(self):
        return f"{self.op} at {self.line}"


@dataclasses.dataclass(frozen=True)
class KinkReached:
    """An op the evaluation applied exactly on its kink: ``count`` of its ``total`` elements
    (slices, for a reduction) sit at ``where`` (:data:`.kinks.RULES`)."""

    op: str
    where: str
    count: int
    total: int
    line: str

    def __str__(self):
        unit = "element" if self.total == 1 else "elements"
        return f"{self.op} at {self.where} ({self.count} of {self.total} {unit}) at {self.line}"


@dataclasses.dataclass(frozen=True)
class Facts:
    """What one evaluation on the engine showed; ``ran`` is False when the engine could not
    evaluate the function (``error`` says why) and then nothing else is known."""

    ran: bool
    ops: tuple = ()
    error: str = ""
    kinks: tuple = ()

    @property
    def kink_note(self):
        """The note every row of a cell whose inputs reach a kink carries (None if none)."""
        if not self.kinks:
            return None
        return (f"{KINK_NOTE}: {'; '.join(map(str, self.kinks))}: the derivative there is a "
                "convention, not a derivative (each method has its own: see the kinks study), "
                "so methods may legitimately differ and their disagreement is not scored")

    @property
    def non_analytic(self) -> tuple:
        """The ops (first use of each) that break the complex step."""
        seen, out = set(), []
        for use in self.ops:
            if use.node in seen:
                continue
            if use.node in NON_ANALYTIC or any(p in use.node for p in NON_ANALYTIC_PARTS):
                seen.add(use.node)
                out.append(use)
        return tuple(out)

    def uses_of(self, nodes) -> tuple:
        """The first use of each op whose node class is in ``nodes``, in order of use."""
        seen, out = set(), []
        for use in self.ops:
            if use.node in nodes and use.node not in seen:
                seen.add(use.node)
                out.append(use)
        return tuple(out)


def at_kink(message) -> bool:
    """Whether a row's (or cell's) ``message`` carries the kink note: its inputs put an op
    on its kink, so the methods' answers there are conventions (not scored, not crowned).

    >>> at_kink(f"{KINK_NOTE}: abs at x = 0 (1 of 4 elements) at model.py:3: ..."), at_kink(None)
    (True, False)
    """
    return isinstance(message, str) and KINK_NOTE in message


def with_note(message, note):
    """``message`` with ``note`` after it (either may be None)."""
    return "; ".join(m for m in (message, note) if m) or None


def raised_at(exc: BaseException) -> str:
    """``file:line`` of the function's own code where ``exc`` was raised (the innermost frame
    of its traceback outside the engine, the namespaces and the backends)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return _user_line(tb.tb_frame) if tb is not None else "<unknown>"


def _user_line(frame) -> str:
    """``file:line`` of the innermost frame outside the engine, NumPy and the contract's
    wrappers: the function's own code (a user's file, or the catalog's)."""
    while frame is not None:
        name = _USER_FILE.get(frame.f_code.co_filename)
        if name is None:
            path = os.path.abspath(frame.f_code.co_filename)
            name = _USER_FILE[frame.f_code.co_filename] = (
                "" if path.startswith(_NOT_USER) else os.path.basename(path))
        if name:
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


_USER_FILE: dict = {}     # co_filename -> its base name, or "" when it is not the user's code


class OverBudget(Exception):
    """The evaluation ran past its deadline (raised from the profile hook)."""


def ops_applied(fn, args, wrt, deadline=None) -> tuple:
    """Run ``fn(xp, *args)`` on the engine (the arguments at ``wrt`` requiring grad) and
    return ``(output Tensor, [OpUse, ...], [KinkReached, ...])``: every op applied to a
    tensor in the graph, and those applied exactly on their kink (one entry per op and
    line, counts summed).  Past ``deadline`` (``time.monotonic()``) it raises OverBudget."""
    from ..engine import Function, Tensor, array_api

    tensors = [Tensor(a, requires_grad=i in wrt) for i, a in enumerate(args)]
    apply_code = Function.apply.__func__.__code__
    compare_code = Tensor.__lt__.__code__       # one method body for all six comparisons
    uses, reached = [], {}

    def note(rule, inputs, params, outputs, frame):
        count, total = rule.count(inputs, params, outputs)
        if count:
            key = (rule.op, rule.where, _user_line(frame.f_back))
            seen = reached.get(key, (0, 0))
            reached[key] = (seen[0] + count, seen[1] + total)

    def profile(frame, event, arg):
        code = frame.f_code
        if code is apply_code:
            local = frame.f_locals
            inputs = local.get("inputs", ())
            if not any(getattr(t, "_requires_grad", False) for t in inputs):
                return
            node = local["cls"].__name__
            if event == "call":
                if deadline is not None and time.monotonic() > deadline:
                    raise OverBudget()
                uses.append(OpUse(node, _user_line(frame.f_back)))
            elif event == "return" and arg is not None and node in _kinks.RULES:
                outputs = [o.data for o in (arg if isinstance(arg, tuple) else (arg,))]
                note(_kinks.RULES[node], [getattr(t, "data", t) for t in inputs],
                     local.get("params", {}), outputs, frame)
        elif code is compare_code and event == "call":
            local = frame.f_locals
            a, b = local["self"], local["other"]
            if getattr(a, "_requires_grad", False) or getattr(b, "_requires_grad", False):
                note(_kinks.comparison_rule(local["compare"].__name__),
                     [a.data, getattr(b, "data", b)], {}, None, frame)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        out = fn(array_api, *tensors)
        intact = sys.getprofile() is profile
    finally:
        sys.setprofile(previous)
    if not intact:     # the hook raised (the deadline) and the function swallowed it
        raise OverBudget()
    kinks = [KinkReached(op, where, count, total, line)
             for (op, where, line), (count, total) in reached.items()]
    return out, uses, kinks


_CACHE: dict = {}


def facts(problem, size=None) -> Facts:
    """The :class:`Facts` of ``problem`` at ``size`` (default: its smallest), seed 0."""
    size = min(problem.sizes) if size is None else size
    return facts_at(problem, lambda: problem.inputs(size, 0), key=(size, 0))


def facts_at(problem, inputs, key) -> Facts:
    """The :class:`Facts` of ``problem`` evaluated at ``inputs`` (the arrays, or a function
    making them), computed once per ``key`` (what names the inputs: a cell's size, seed and
    dtype).  Unknown (``ran`` False) above ``MAX_ELEMENTS`` input elements or past
    ``BUDGET_S`` seconds."""
    cache_key = (problem.name, problem.fn, key)
    hit = _CACHE.get(cache_key)
    if hit is not None:
        return hit
    try:
        args = inputs() if callable(inputs) else inputs
        n = sum(int(np.size(a)) for a in args)
        if n > MAX_ELEMENTS:
            result = Facts(False, error=f"not evaluated: {n} input elements > {MAX_ELEMENTS}")
        else:
            _, uses, kinks = ops_applied(problem.fn, args, problem.wrt,
                                         deadline=time.monotonic() + BUDGET_S)
            result = Facts(True, tuple(uses), kinks=tuple(kinks))
    except OverBudget:
        result = Facts(False, error=f"not evaluated: over its {BUDGET_S:g} s budget")
    except Exception as exc:   # noqa: BLE001 - the engine cannot run it: nothing is known
        result = Facts(False, error=f"{type(exc).__name__}: {exc}")
    _CACHE[cache_key] = result
    return result
