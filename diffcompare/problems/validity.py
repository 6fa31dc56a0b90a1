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
  comparisons compare complex numbers by real part first, which is right away from a tie.

>>> import numpy as np
>>> from diffcompare.problems.problem import Problem
>>> ridge_l1 = Problem("ridge_l1", lambda xp, w: xp.sum(w ** 2) + xp.sum(xp.abs(w)),
...                    lambda size, seed: (np.linspace(-1, 1, size),), "ridge + L1", sizes=(3,))
>>> [use.op for use in facts(ridge_l1).non_analytic]
['abs']
"""
from __future__ import annotations

import dataclasses
import os
import sys

import numpy as np

#: backward-node class names whose complex extension (as NumPy computes it) is not analytic
NON_ANALYTIC = frozenset({"Abs", "Fabs", "Sign", "Real", "Imag", "Conj", "Angle"})
#: ... and any node whose class name contains one of these (Hermitian linear algebra)
NON_ANALYTIC_PARTS = ("Norm", "Eigh", "Eigvalsh", "Svd", "Cholesky", "Qr", "Pinv")

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # diffcompare/
#: frames that are not the function's own code: the engine, NumPy, the contract's wrappers
_NOT_USER = (os.path.join(_PACKAGE, "engine"), os.path.dirname(np.__file__),
             os.path.join(_PACKAGE, "problems", "contract.py"), os.path.abspath(__file__))


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
class Facts:
    """What one evaluation on the engine showed; ``ran`` is False when the engine could not
    evaluate the function (``error`` says why) and then nothing else is known."""

    ran: bool
    ops: tuple = ()
    error: str = ""

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


def _user_line(frame) -> str:
    """``file:line`` of the innermost frame outside the engine, NumPy and the contract's
    wrappers: the function's own code (a user's file, or the catalog's)."""
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_NOT_USER):
            return f"{os.path.basename(path)}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


def ops_applied(fn, args, wrt) -> tuple:
    """Run ``fn(xp, *args)`` on the engine (the arguments at ``wrt`` requiring grad) and
    return ``(output Tensor, [OpUse, ...])``: every op applied to a tensor in the graph."""
    from ..engine import Function, Tensor, array_api

    tensors = [Tensor(a, requires_grad=i in wrt) for i, a in enumerate(args)]
    apply_code = Function.apply.__func__.__code__
    uses = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is apply_code:
            inputs = frame.f_locals.get("inputs", ())
            if any(getattr(t, "_requires_grad", False) for t in inputs):
                uses.append(OpUse(frame.f_locals["cls"].__name__, _user_line(frame.f_back)))

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        out = fn(array_api, *tensors)
    finally:
        sys.setprofile(previous)
    return out, uses


_CACHE: dict = {}


def facts(problem, size=None) -> Facts:
    """The :class:`Facts` of ``problem`` at ``size`` (default: its smallest), computed once."""
    size = min(problem.sizes) if size is None else size
    key = (problem.name, problem.fn, size)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    try:
        _, uses = ops_applied(problem.fn, problem.inputs(size, 0), problem.wrt)
        result = Facts(True, tuple(uses))
    except Exception as exc:   # noqa: BLE001 - the engine cannot run it: nothing is known
        result = Facts(False, error=f"{type(exc).__name__}: {exc}")
    _CACHE[key] = result
    return result
