"""Nonsmooth functions evaluated exactly at their kinks and next to them.

The inputs repeat ``KINK_POINTS`` (exact zeros, and points 1e-8 and 1e-3 away) or, for
``max_kink``, ``TIE_ROWS`` (a unique max, a 2-way tie, a 3-way tie, a near tie).
What each method returns at the kink is a convention, not a derivative:
the engine and JAX give maximum(x, 0)'(0) = 1/2 (ties split), abs'(0) = 0, and split a
k-way max tie 1/k each; SymPy gives Heaviside(0) = 1/2 to *every* tied element (a 3-way
tie sums to 3/2); finite differences straddle the kink when the step exceeds |x|.
"""
from __future__ import annotations

import numpy as np

from ..problem import Problem
from .. import register

KINK_POINTS = np.array([-1.0, -1e-3, -1e-8, 0.0, 0.0, 1e-8, 1e-3, 1.0])
TIE_ROWS = np.array([[1.0, 0.0, -1.0],       # unique max
                     [1.0, 1.0, 0.0],        # 2-way tie
                     [1.0, 1.0, 1.0],        # 3-way tie
                     [1.0, 1.0 - 1e-8, 0.0]])  # near tie


def relu_kink(xp, x):
    """Σ maximum(x, 0)."""
    return xp.sum(xp.maximum(x, 0))


def abs_kink(xp, x):
    """Σ |x|."""
    return xp.sum(xp.abs(x))


def _kink_points(size, seed):
    return (np.resize(KINK_POINTS, size),)


def max_kink(xp, x):
    """Σ over rows of the row maximum (x has 3 columns)."""
    return xp.sum(xp.max(x, axis=1))


def _tie_rows(size, seed):
    return (TIE_ROWS[np.arange(size) % len(TIE_ROWS)].copy(),)


register(Problem(
    name="relu_kink", fn=relu_kink, make_inputs=_kink_points,
    description="Σ maximum(x, 0) at x in {±1, ±1e-3, ±1e-8, 0 (twice)}, repeated",
    sizes=(8, 32, 128, 512), tags={"nonsmooth"}))

register(Problem(
    name="abs_kink", fn=abs_kink, make_inputs=_kink_points,
    description="Σ |x| at x in {±1, ±1e-3, ±1e-8, 0 (twice)}, repeated",
    sizes=(8, 32, 128, 512), tags={"nonsmooth"}))

register(Problem(
    name="max_kink", fn=max_kink, make_inputs=_tie_rows,
    description="Σ_rows max(row) over rows with a unique max, a 2-way tie, a 3-way tie, a near tie",
    sizes=(4, 16, 64, 256), tags={"nonsmooth"}, size_meaning="rows (3 columns)"))
