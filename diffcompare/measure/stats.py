"""Statistics of timing samples: one :class:`Stats`, shared by the measurement and the reader.

As pytest-benchmark's ``Stats``: built from a list of samples, each statistic a cached
property.  Quartiles interpolate linearly between order statistics (NumPy's default
``percentile``, ``statistics.quantiles(method="inclusive")``), so a single sample has
``q1 == q3 ==`` that sample and an IQR of 0.

>>> s = Stats([4.0, 1.0, 3.0, 2.0, 10.0])
>>> s.n, s.min, s.max, s.median, s.q1, s.q3, s.iqr
(5, 1.0, 10.0, 3.0, 2.0, 4.0, 2.0)
"""
from __future__ import annotations

import math
from functools import cached_property


class Stats:
    """``n``, ``min``, ``max``, ``median``, ``q1``, ``q3``, ``iqr`` of ``samples`` (numbers;
    at least one, every one finite)."""

    def __init__(self, samples):
        self.samples = sorted(float(s) for s in samples)
        if not self.samples:
            raise ValueError("Stats needs at least one sample, got none.")
        if not all(math.isfinite(s) for s in self.samples):
            raise ValueError(f"Stats needs finite samples, got {self.samples!r:.200}.")

    def quantile(self, p: float) -> float:
        """The ``p`` quantile (0 <= p <= 1), linear between order statistics."""
        if not 0 <= p <= 1:
            raise ValueError(f"a quantile's p is between 0 and 1, got {p!r}.")
        x = self.samples
        h = (len(x) - 1) * p
        lo = math.floor(h)
        hi = min(lo + 1, len(x) - 1)
        return x[lo] + (h - lo) * (x[hi] - x[lo])

    @cached_property
    def n(self) -> int:
        return len(self.samples)

    @cached_property
    def min(self) -> float:
        return self.samples[0]

    @cached_property
    def max(self) -> float:
        return self.samples[-1]

    @cached_property
    def median(self) -> float:
        return self.quantile(0.5)

    @cached_property
    def q1(self) -> float:
        return self.quantile(0.25)

    @cached_property
    def q3(self) -> float:
        return self.quantile(0.75)

    @cached_property
    def iqr(self) -> float:
        return self.q3 - self.q1

    def __repr__(self) -> str:
        return (f"Stats(n={self.n}, min={self.min:.4g}, q1={self.q1:.4g}, median={self.median:.4g}, "
                f"q3={self.q3:.4g}, max={self.max:.4g})")
