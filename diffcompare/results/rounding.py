"""The rounding level of a cell: how far exact methods fall from the true derivative by float
rounding alone, measured as the median ρ of the exact methods that ran it.

Every exact method (reverse mode, symbolic, hand-written) computes the true derivative, so what
separates their ρ from zero is rounding: of sums over many terms, in whatever order each
library sums.  A median needs ``MIN_EXACT_METHODS`` of them, so one wrong rule cannot raise it.
The winners table ties accuracy within a few times this level; the accuracy study bounds every
exact method's ρ by a larger multiple of it.

>>> rounding_level({"engine": 1e-12, "torch": 2e-12, "jax-jit": 3e-12, "fd-central": 1e-7},
...                {"engine": True, "torch": True, "jax-jit": True, "fd-central": False})
2e-12
>>> rounding_level({"engine": 1e-12, "torch": 1e-6}, {"engine": True, "torch": True}) is None
True
"""
from __future__ import annotations

import math

import numpy as np

MIN_EXACT_METHODS = 3


def rounding_level(rho_by_backend, exact_by_backend) -> float | None:
    """The median ρ of the exact methods among ``rho_by_backend`` (a mapping or Series,
    backend -> ρ; ``exact_by_backend`` says which are exact: the cells table's ``exact``),
    or None when fewer than ``MIN_EXACT_METHODS`` exact methods have a ρ."""
    values = [float(rho) for backend, rho in dict(rho_by_backend).items()
              if exact_by_backend.get(backend) and rho is not None
              and not math.isnan(float(rho))]
    if len(values) < MIN_EXACT_METHODS:
        return None
    return float(np.median(values))
