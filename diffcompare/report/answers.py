"""The report's opening answers: per problem and size, which method was fastest (among the
exact ones), most accurate, and used the least memory — ties kept, never a winner by noise.

:func:`winners_for_report` computes the winners frame; the answers section only renders
it.  It is a stand-in: the results layer's tie-aware ``winners()`` (one function for
every reader) replaces it, with the same columns.
"""
from __future__ import annotations

import math

import pandas as pd

from .data import FD_FAMILY, is_exact, problem_order

CRITERIA = ("fastest exact", "most accurate", "least memory")
COLUMNS = ["problem", "size", "dtype", "criterion", "winners", "value", "unit", "note"]

#: relative tolerances within which two measurements are a tie
TIME_TIE = 0.05          # besides overlapping interquartile ranges
MEMORY_TIE = 0.05        # or 4 KiB, whichever is larger
ERROR_TIE = 2.0          # errors within a factor 2, or both at rounding level (4 ulp)


def _ulp(dtype) -> float:
    return 1.2e-7 if str(dtype) == "float32" else 2.2e-16


def _tied_min(sub, column: str, tie) -> tuple[tuple, float]:
    """The rows of ``sub`` tied with the smallest ``column`` (``tie(best_row, row)``)."""
    sub = sub[sub[column].notna()]
    if sub.empty:
        return (), math.nan
    sub = sub.sort_values([column, "backend"])
    best = sub.iloc[0]
    names = tuple(r["backend"] for _, r in sub.iterrows() if tie(best, r))
    return names, float(best[column])


def winners_for_report(data) -> pd.DataFrame:
    """One row per (problem, size, dtype, criterion): the tied winners and the best value.

    Columns ``[problem, size, dtype, criterion, winners, value, unit, note]``;
    ``criterion`` is one of :data:`CRITERIA`, ``winners`` a tuple of backend names (ties
    in name order after the best).  To be replaced by the results layer's ``winners()``,
    which returns the same columns.

    Ties: two times tie when their interquartile ranges overlap or they are within 5 %;
    two errors when within a factor 2 or both at rounding level; two peaks when within
    5 % or 4 KiB.
    """
    ok = data.ok(None)
    rows = []
    if ok is None or ok.empty:
        return pd.DataFrame(columns=COLUMNS)

    def time_tie(best, r):
        b, v = best["gradient_s"], r["gradient_s"]
        bi = best.get("gradient_iqr_s") if pd.notna(best.get("gradient_iqr_s")) else 0.0
        vi = r.get("gradient_iqr_s") if pd.notna(r.get("gradient_iqr_s")) else 0.0
        return v - vi / 2 <= b + bi / 2 or v <= b * (1 + TIME_TIE)

    for (prob, size, dtype), sub in ok.groupby(["problem", "size", "dtype"], sort=False):
        exact = sub[sub["family"].map(is_exact)]
        names, best = _tied_min(exact, "gradient_s", time_tie)
        if names:
            rows.append([prob, size, dtype, "fastest exact", names, best, "s",
                         "median of one gradient call, exact methods only"])
        floor = 4 * _ulp(dtype)
        names, best = _tied_min(
            sub, "error_rho", lambda b, r: r["error_rho"] <= max(ERROR_TIE * b["error_rho"], floor))
        if names:
            fd = [n for n in names if (sub[sub["backend"] == n]["family"] == FD_FAMILY).any()]
            rows.append([prob, size, dtype, "most accurate", names, best, "ρ",
                         "includes an approximation" if fd else "against the high-precision reference"])
        names, best = _tied_min(
            sub, "peak_bytes",
            lambda b, r: r["peak_bytes"] <= max(b["peak_bytes"] * (1 + MEMORY_TIE), b["peak_bytes"] + 4096))
        if names:
            src = sub[sub["backend"] == names[0]]["memory_source"].dropna()
            rows.append([prob, size, dtype, "least memory", names, best, "bytes",
                         f"peak of one gradient ({src.iloc[0]})" if len(src) else "peak of one gradient"])
    out = pd.DataFrame(rows, columns=COLUMNS)
    order = {p: i for i, p in enumerate(problem_order(out["problem"]))}
    return out.sort_values(["problem", "size", "dtype"], key=lambda c: c.map(order) if c.name == "problem"
                           else c, kind="stable").reset_index(drop=True)


def answer_rows(winners: pd.DataFrame) -> list[dict]:
    """The winners frame as one row per (problem, size, dtype), a cell per criterion."""
    out = []
    if winners is None or winners.empty:
        return out
    for (prob, size, dtype), sub in winners.groupby(["problem", "size", "dtype"], sort=False):
        cells = {}
        for _, r in sub.iterrows():
            cells[r["criterion"]] = {"winners": list(r["winners"]), "value": r["value"], "unit": r["unit"],
                                     "note": r["note"]}
        out.append({"problem": prob, "size": int(size), "dtype": dtype, "cells": cells})
    return out
