"""The report's opening answers: per problem and size, which method was fastest (among the
exact ones), most accurate, and used the least memory — ties kept, never a winner by noise.

The winners come from the results layer's :func:`diffcompare.results.winners` (the one
place they are computed); this module only arranges them for the answers section.
"""
from __future__ import annotations

import pandas as pd

from ..results.winners import CRITERIA  # noqa: F401  (the answers' columns, in order)

#: the unit each criterion's measure is shown in
UNITS = {"gradient_s": "s", "error_rho": "ρ", "peak_bytes": "bytes"}


def answer_rows(winners: pd.DataFrame) -> list[dict]:
    """The results layer's winners frame as one row per (problem, size, dtype), a cell per
    criterion: ``{"winners": [...], "value": best, "unit": ..., "note": ..., "flagged": ...}``
    (``flagged``: the deciding timings the results layer flags, "backend: reasons; ...")."""
    out = []
    if winners is None or winners.empty:
        return out
    for (prob, size, dtype), sub in winners.groupby(["problem", "size", "dtype"], sort=False):
        cells = {}
        for _, r in sub.iterrows():
            cells[r["criterion"]] = {"winners": list(r["winners"]), "value": r["best"],
                                     "unit": UNITS[r["measure"]], "note": r["note"],
                                     "compared": len(r["compared"]),
                                     "flagged": "; ".join(f"{b}: {why}" for b, why
                                                          in r.get("flagged") or ())}
        out.append({"problem": prob, "size": int(size), "dtype": dtype, "cells": cells})
    return out


def tie_rules(winners: pd.DataFrame) -> list[str]:
    """The tie rules the winners frame applied, one "criterion: rule" per distinct rule."""
    if winners is None or winners.empty:
        return []
    pairs = winners[["criterion", "tolerance"]].drop_duplicates()
    return [f"{c}: {t}" for c, t in pairs.itertuples(index=False)]
