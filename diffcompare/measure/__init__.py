"""Measurements: timing (``timing``; its samples' statistics, ``stats.Stats``), peak memory (``memory``), accuracy against a
high-precision reference (``accuracy``), and ``cell.measure_cell``, which the
runner's workers call for one backend on one (problem, size, seed, dtype)."""
