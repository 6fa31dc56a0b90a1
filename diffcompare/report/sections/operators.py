"""Operators: derivatives beyond the gradient -- which method computes which operator
natively (the capability table the run recorded in ``catalog.json``), and the operators
measured per problem and size (``Results.operators()``: time with prepare apart, colours and
passes of the sparse ones, error against the row's reference), and the second-order
operators' growth with the size (time against size per method, its fitted exponent).
:func:`operators_data` computes, ``templates/operators.html.j2`` renders."""
from __future__ import annotations

import numpy as np

from ..fmt import fmt_error, fmt_ratio, fmt_seconds, shorten
from ..fragments import badge, capability, muted, name, table, vertical
from ..templates import render
from . import Section


def operators_data(data) -> dict:
    """What the section shows, as plain values and fragments (None: a part with nothing to show)."""
    return {"capabilities": _capabilities(data.catalog.get("operator_capabilities") or {}),
            "measured": _measured(data), "growth": _growth(data)}


def build(data) -> Section:
    return Section("operators", "Operators", render("operators.html.j2", **operators_data(data)))


def _capabilities(caps: dict):
    """method × operator: ✓ native (how on hover), – unsupported (why on hover)."""
    methods = list(dict.fromkeys(m for row in caps.values() for m in row))
    if not methods:
        return None

    # a method a row, an operator a column: six columns fit any width, sixteen methods did not
    rows = [[name(m, whole=True), *[capability(caps[op].get(m)) for op in caps]] for m in methods]
    heads = ["method", *[vertical(op) for op in caps]]
    return table(heads, rows, cls="compact caps")


def _measured(data):
    """``{"table", "skipped"}``: a row per operator measured (float64), and per problem the
    operators not measured because they need the other kind of output."""
    frame = data.operators()
    frame = frame[frame["dtype"] == "float64"]
    if frame.empty:
        return None
    # an operator for the other kind of output says so on every method: one line, not a row each
    other_kind = frame["message"].fillna("").str.contains(" needs a (?:vector|scalar) output")
    skipped = frame[other_kind].groupby("problem", sort=False)["operator"].unique()
    frame = frame[~other_kind]
    rows = []
    for r in frame.to_dict("records"):
        ok = r["status"] == "ok"
        sparse = ok and r["colours"] == r["colours"]
        colours = (f"{r['colours']:.0f} (≥ {r['colour_lower_bound']:.0f}) / {r['passes']:.0f}"
                   if sparse else "")
        note = r["reference"] if ok else r["message"]
        rows.append([name(r["problem"]), int(r["size"]), name(r["backend"], whole=True),
                     name(r["operator"], whole=True),
                     fmt_seconds(r["evaluate_s"]) if ok else badge(r["status"]),
                     fmt_seconds(r["prepare_s"]) if ok else "",
                     fmt_ratio(r["ratio"]) if ok else "", colours,
                     fmt_error(r["error_rho"]) if ok and r["error_rho"] == r["error_rho"] else "",
                     muted(shorten(note or "", 36 if ok else 90), title=note or "")])
    return {"table": table(["problem", "size", "method", "operator", "time", "prepare",
                            "÷ gradient", "colours / passes", "error ρ", "reference or note"],
                           rows, num_cols={1, 4, 5, 6, 8}, cls="compact"),
            "skipped": [{"problem": prob, "operators": ", ".join(ops)} for prob, ops in skipped.items()]}


#: the second-order operators whose growth with the size the section shows
GROWTH_OPERATORS = ("hessian", "hessian_sparse", "hvp")


def _growth(data) -> list:
    """Per problem measured at two sizes or more (``{"problem", "table"}``): each method's
    median seconds of a Hessian, sparse Hessian or HVP at each size, and the exponent p of
    t ~ size^p fitted over them (n reverse passes, forward over reverse and a closed form part
    by orders of magnitude)."""
    frame = data.operators()
    ok = frame[(frame["dtype"] == "float64") & (frame["status"] == "ok")
               & frame["operator"].isin(GROWTH_OPERATORS) & (frame["evaluate_s"] > 0)]
    out = []
    for prob in dict.fromkeys(ok["problem"]):
        sub = ok[ok["problem"] == prob]
        sizes = sorted(int(s) for s in sub["size"].unique())
        if len(sizes) < 2:
            continue
        rows = []
        for (op, method), g in sub.groupby(["operator", "backend"], sort=False):
            t = g.groupby("size")["evaluate_s"].median()
            slope = (np.polyfit(np.log(t.index.astype(float)), np.log(t.values), 1)[0]
                     if len(t) >= 2 else None)
            fit = "" if slope is None else f"{round(float(slope), 2) + 0.0:.2f}"   # no "-0.00"
            rows.append([name(op, whole=True), name(method, whole=True),
                         *[fmt_seconds(t[n]) if n in t.index else "" for n in sizes], fit])
        out.append({"problem": prob,
                    "table": table(["operator", "method", *[f"size {n}" for n in sizes], "p"], rows,
                                   num_cols=set(range(2, len(sizes) + 3)), cls="compact")})
    return out
