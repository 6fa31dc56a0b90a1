"""Where the engine's ops have no derivative: the rule of each op, applied at given values.

An op reaches its kink when it is evaluated exactly at a point where it is not
differentiable: ``abs`` at 0, ``maximum`` at a tie, ``floor`` at an integer, a comparison
(``x > 0`` selecting a branch) at equality.  There every method returns a convention, not a
derivative (the ``kinks`` study shows whose is which), so methods may legitimately disagree.
Only exact points count: ``abs`` at 1e-300 is differentiable, and so is ``maximum`` of two
numbers one ulp apart.

:data:`RULES` maps an engine node's class name to a :class:`Rule`; :func:`reached` applies
it to the op's input arrays, parameters and outputs (what :mod:`.validity`'s evaluation sees
when the op is applied) and says how many of its elements sit on a kink.

>>> import numpy as np
>>> RULES["Maximum"].count([np.array([1.0, 2.0, 3.0]), np.array(2.0)], {}, None)
(1, 3)
>>> RULES["Abs"].count([np.array([0.0, 1e-300])], {}, None)
(1, 2)
>>> RULES["Floor"].count([np.array([3.0, np.nextafter(3.0, 4.0)])], {}, None)
(1, 2)
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np


@dataclasses.dataclass(frozen=True)
class Rule:
    """An op's kink: ``op`` (its name), ``where`` (the points, in words) and ``mask``, a
    function of ``(inputs, params, outputs)`` giving a boolean array, True at each element
    (or slice, for a reduction) that sits on a kink."""

    op: str
    where: str
    mask: Callable

    def count(self, inputs, params, outputs) -> tuple:
        """``(elements on a kink, elements judged)``."""
        with np.errstate(all="ignore"):
            hit = np.asarray(self.mask(inputs, params, outputs))
        return int(np.count_nonzero(hit)), int(hit.size)


def _at_zero(inputs, params, outputs):
    return inputs[0] == 0


def _tie(inputs, params, outputs):
    a, b = np.broadcast_arrays(inputs[0], inputs[1])
    return a == b


def _integer(inputs, params, outputs):
    x = inputs[0]
    return np.isfinite(x) & (x == np.floor(x))


def _nonzero_integer(inputs, params, outputs):
    return _integer(inputs, params, outputs) & (inputs[0] != 0)


def _half_integer(x):
    return np.isfinite(x) & (x - np.floor(x) == 0.5)


def _rounds_a_half(inputs, params, outputs):
    decimals = params.get("decimals", 0) or 0
    return _half_integer(inputs[0] * 10.0 ** decimals)


def _extreme_tie(inputs, params, outputs):
    """Slices of a max/min reduction whose extreme value is attained more than once."""
    x, axis = inputs[0], params.get("axis")
    if x.ndim == 0:
        return np.zeros((), bool)
    top = np.max(x, axis=axis, keepdims=True)
    bottom = np.min(x, axis=axis, keepdims=True)
    return (np.sum(x == top, axis=axis) > 1), (np.sum(x == bottom, axis=axis) > 1)


def _max_tie(inputs, params, outputs):
    return _extreme_tie(inputs, params, outputs)[0]


def _min_tie(inputs, params, outputs):
    return _extreme_tie(inputs, params, outputs)[1]


def _adjacent_equal(values, axis=-1):
    values = np.asarray(values)
    if values.ndim == 0 or values.shape[axis] < 2:
        return np.zeros((), bool)
    return np.diff(values, axis=axis) == 0


def _sort_tie(inputs, params, outputs):
    return _adjacent_equal(np.sort(inputs[0], axis=params.get("axis", -1)), params.get("axis", -1))


def _repeated_eigenvalue(inputs, params, outputs):
    return _adjacent_equal(outputs[0])


def _singular_tie_or_zero(inputs, params, outputs):
    s = np.asarray(outputs[1])
    tie = _adjacent_equal(s)
    return np.concatenate([np.ravel(tie), np.ravel(s == 0)])


def _norm_kink(inputs, params, outputs):
    """A p-norm with p > 1 has its kink at the zero vector only; p <= 1 at every zero
    element (|x| inside); the max-norm where the largest |x| is attained twice."""
    x, p, axis = inputs[0], params.get("ord", 2), params.get("axis")
    if p == 0:
        return np.zeros((), bool)              # a count: piecewise constant, gradient 0
    if np.isinf(p):
        a = np.abs(x)
        top = np.max(a, axis=axis, keepdims=True) if p > 0 else np.min(a, axis=axis, keepdims=True)
        return (np.sum(a == top, axis=axis) > 1) | np.all(a == 0, axis=axis)
    if p <= 1:
        return x == 0
    return np.all(x == 0, axis=axis)


def _remainder_jump(inputs, params, outputs):
    return np.asarray(outputs[0]) == 0


def _fmod_jump(inputs, params, outputs):
    a = np.broadcast_to(inputs[0], np.shape(outputs[0]))
    return (np.asarray(outputs[0]) == 0) & (a != 0)


def _origin(inputs, params, outputs):
    a, b = np.broadcast_arrays(inputs[0], inputs[1])
    return (a == 0) & (b == 0)


_TIE = "a tie (both arguments equal)"

#: engine node class name -> where that op is not differentiable
RULES = {
    "Abs": Rule("abs", "x = 0", _at_zero),
    "Sign": Rule("sign", "x = 0 (its jump)", _at_zero),
    "Relu": Rule("relu", "x = 0", _at_zero),
    "Maximum": Rule("maximum", _TIE, _tie),
    "Minimum": Rule("minimum", _TIE, _tie),
    "Fmax": Rule("fmax", _TIE, _tie),
    "Fmin": Rule("fmin", _TIE, _tie),
    "Max": Rule("max", "a tie for the maximum", _max_tie),
    "Min": Rule("min", "a tie for the minimum", _min_tie),
    "Sort": Rule("sort", "tied values", _sort_tie),
    "Floor": Rule("floor", "an integer (its jump)", _integer),
    "Ceil": Rule("ceil", "an integer (its jump)", _integer),
    "Trunc": Rule("trunc", "a nonzero integer (its jump)", _nonzero_integer),
    "Rint": Rule("rint", "a half-integer (its jump)", lambda i, p, o: _half_integer(i[0])),
    "Round": Rule("round", "a half-way point (its jump)", _rounds_a_half),
    "Remainder": Rule("remainder", "a multiple of the divisor (its jump)", _remainder_jump),
    "Fmod": Rule("fmod", "a nonzero multiple of the divisor (its jump)", _fmod_jump),
    "Hypot": Rule("hypot", "the origin (0, 0)", _origin),
    "VectorNorm": Rule("norm", "zero (or, for the max-norm, a tie)", _norm_kink),
    "Eigh": Rule("eigh", "a repeated eigenvalue", _repeated_eigenvalue),
    "Svd": Rule("svd", "a repeated or zero singular value", _singular_tie_or_zero),
}

#: the comparisons (NumPy's ufunc name -> its symbol): a branch chosen by one switches at equality
COMPARISONS = {"less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
               "equal": "==", "not_equal": "!="}


def comparison_rule(ufunc_name: str) -> Rule:
    """The rule of a comparison ``a <op> b`` of a differentiated value: a kink where a == b
    (the branch it selects, in ``where`` or as a 0/1 mask, switches there)."""
    symbol = COMPARISONS.get(ufunc_name, ufunc_name)
    return Rule(f"comparison {symbol}", "equality (both sides equal)", _tie)


__all__ = ["Rule", "RULES", "COMPARISONS", "comparison_rule"]
