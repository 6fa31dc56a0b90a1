"""Operators: derivatives beyond the gradient -- which method computes which operator
natively (the capability table the run recorded in ``catalog.json``), and the operators
measured per problem and size (``Results.operators()``: time with prepare apart, colours and
passes of the sparse ones, error against the row's reference), and the second-order
operators' growth with the size (time against size per method, its fitted exponent)."""
from __future__ import annotations

import numpy as np

from ..fmt import fmt_error, fmt_ratio, fmt_seconds, shorten
from ..html import badge, join, p, scroll, table, tag
from . import Section


def build(data) -> Section:
    parts = (_capabilities(data.catalog.get("operator_capabilities") or {}) + _measured(data)
             + _growth(data))
    if not parts:
        parts = [p("No derivative operators were measured and the run recorded no capability "
                   "table (add some with ", tag("code", "diffcompare run --operators jacobian"),
                   ").", class_="muted")]
    return Section("operators", "Operators", join(*parts))


def _capabilities(caps: dict) -> list:
    """method × operator: ✓ native (how on hover), – unsupported (why on hover)."""
    methods = list(dict.fromkeys(m for row in caps.values() for m in row))
    if not methods:
        return []

    def mark(text):
        kind, _, why = str(text or "").partition(": ")
        symbol = {"native": "✓", "unavailable": "○"}.get(kind, "–")
        return tag("span", symbol, title=f"{kind}: {why}", class_=f"cap cap-{kind}")

    # a method a row, an operator a column: six columns fit any width, sixteen methods did not
    rows = [[tag("span", m, class_="name whole"), *[mark(caps[op].get(m)) for op in caps]]
            for m in methods]
    heads = ["method", *[tag("span", op, class_="vhead", title=op) for op in caps]]
    return [tag("h3", "Which method computes which operator", id="operator-capabilities"),
            p("✓ the method computes the operator itself (hover for how), – it does not (hover for "
              "why): no method borrows another's answer. Recorded by the runner from ",
              tag("code", "diffcompare.operators.capabilities()"), " for this run's methods."),
            scroll(table(heads, rows, cls="compact caps"))]


def _measured(data) -> list:
    frame = data.operators()
    frame = frame[frame["dtype"] == "float64"]
    if frame.empty:
        return []
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
        rows.append([tag("span", r["problem"], class_="name"), int(r["size"]),
                     tag("span", r["backend"], class_="name whole"),
                     tag("span", r["operator"], class_="name whole"), fmt_seconds(r["evaluate_s"]) if ok else badge(r["status"]),
                     fmt_seconds(r["prepare_s"]) if ok else "",
                     fmt_ratio(r["ratio"]) if ok else "", colours,
                     fmt_error(r["error_rho"]) if ok and r["error_rho"] == r["error_rho"] else "",
                     tag("span", shorten(r["reference"] or "", 36), title=r["reference"] or "",
                         class_="muted") if ok else
                     tag("span", shorten(r["message"] or "", 90), title=r["message"] or "",
                         class_="muted")])
    return [tag("h3", "Operators measured", id="operators-measured"),
            p("Per problem, size and method: median seconds of one evaluation after preparation, "
              "the preparation once (a sparse operator's includes detecting and colouring its "
              "pattern), the ratio to the same method's gradient, a sparse operator's colours "
              "(≥ the pattern's lower bound) / products per evaluation, and ρ against the "
              "reference named in the last column (hover for all of it): cᵀJ against the "
              "reference VJP for a Jacobian, central differences of the exact gradient program at "
              "100 digits for a Hessian or H v, the exact 2 × cluster counts for k-means."),
            scroll(table(["problem", "size", "method", "operator", "time", "prepare",
                          "÷ gradient", "colours / passes", "error ρ", "reference or note"],
                         rows, num_cols={1, 4, 5, 6, 8}, cls="compact")),
            *[p(tag("span", prob, class_="name"), ": ", ", ".join(ops), " not measured: ",
                "they need the other kind of output (a Jacobian a vector output, a Hessian or "
                "HVP a scalar one).", class_="muted") for prob, ops in skipped.items()]]


#: the second-order operators whose growth with the size the section shows
GROWTH_OPERATORS = ("hessian", "hessian_sparse", "hvp")


def _growth(data) -> list:
    """Per problem measured at two sizes or more: each method's median seconds of a Hessian,
    sparse Hessian or HVP at each size, and the exponent p of t ~ size^p fitted over them
    (n reverse passes, forward over reverse and a closed form part by orders of magnitude)."""
    frame = data.operators()
    ok = frame[(frame["dtype"] == "float64") & (frame["status"] == "ok")
               & frame["operator"].isin(GROWTH_OPERATORS) & (frame["evaluate_s"] > 0)]
    tables = []
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
            rows.append([tag("span", op, class_="name whole"),
                         tag("span", method, class_="name whole"),
                         *[fmt_seconds(t[n]) if n in t.index else "" for n in sizes], fit])
        tables += [p(tag("span", prob, class_="name"), ":"),
                   scroll(table(["operator", "method", *[f"size {n}" for n in sizes], "p"], rows,
                                num_cols=set(range(2, len(sizes) + 3)), cls="compact"))]
    if not tables:
        return []
    return [tag("h3", "Hessian growth with the size", id="hessian-growth"),
            p("Median seconds of one evaluation per size, and the exponent p of time ~ size^p "
              "fitted over the sizes measured (small sizes are mostly overhead): a dense "
              "Hessian by n reverse passes grows a power faster than a sparse one with a "
              "fixed number of colours, or than one Hessian-vector product."),
            *tables]
