"""Accuracy: each method's error against the reference, the finite-difference V, float32
against float64, and what each method returns at kinks."""
from __future__ import annotations

import math

from .. import plots
from ..fmt import fmt_error, fmt_num, fmt_ratio, fmt_step
from ..html import Markup, badge, code, figure, join, p, scroll, table, tag
from . import Section, study_figures


def build(data) -> Section:
    n_plots = 0
    parts = []
    ok = data.ok("float64")
    svg = plots.accuracy_strip(ok, catalog=data.catalog)
    n_plots += plots.drawn(svg)
    parts += [tag("h3", "Error of each method, per problem"),
              p("Each marker is one method's largest ρ = |x−y| / max(1, |x|+|y|) over the problem's "
                "sizes (float64), on a log scale; lower is better; exact zeros sit on the dotted floor "
                "line as hollow markers. ", _ranges(data, ok)),
              figure(svg, "Largest error per method and problem against the reference named below.",
                     empty="no float64 cell has an accuracy measurement."),
              _reference_table(data), _error_table(data, ok)]
    st = data.study("fd_steps")
    figures, k = study_figures(data, "fd_steps", ["fd-steps"])
    n_plots += k
    ref = _first(st.frame, "reference")
    parts += [tag("h3", "Finite differences: error against step size", id="fd-steps"),
              p("From the ", code("fd_steps"), " study: each method differentiates "
                "f(x) = eˣ/√(sin³x + cos³x) at x = 1.5 with steps h = 10⁻¹ … 10⁻²⁰, against ",
                ref or "(reference not recorded)", ". Forward and central differences trace the V of "
                "truncation (falls with h) against rounding (grows as h shrinks); the complex step "
                "subtracts nothing, so it has no rounding branch. Hollow circles: where the error "
                "model (from f and its derivatives at x) puts each V's bottom."),
              *figures, _fd_minima(data, st.frame)]
    figures, k = study_figures(data, "fd_steps", ["float32-vs-float64"])
    n_plots += k
    parts += [tag("h3", "float32 against float64", id="float32"), _float32(data),
              *figures, _grid_float32(data)]
    parts += [_kinks(data)]
    return Section("accuracy", "Accuracy", join(*parts), plots=n_plots)


def _ranges(data, ok) -> str:
    """One sentence: the error range of exact methods and of each finite-difference method."""
    from ..data import FD_FAMILY

    ok = ok[ok["error_rho"].notna()]
    if ok.empty:
        return ""
    parts = []
    exact = ok[ok["exact"].fillna(False).astype(bool)]["error_rho"]
    if len(exact):
        zeros = int((exact == 0).sum())
        parts.append(f"In this run the exact methods' ρ is at most {fmt_error(exact.max())} "
                     f"({zeros} of {len(exact)} cells exactly 0)")
    fd = ok[ok["family"] == FD_FAMILY]
    for b in data.backend_order(fd["backend"]):
        e = fd[fd["backend"] == b]["error_rho"]
        parts.append(f"{b} ranges from {fmt_error(e.min())} to {fmt_error(e.max())}")
    return "; ".join(parts) + "."


def _first(frame, column):
    if frame is None or column not in frame or frame[column].dropna().empty:
        return None
    return str(frame[column].dropna().iloc[0])


def _reference_table(data) -> Markup:
    ok = data.cells[data.cells["reference"].notna()]
    if ok.empty:
        return p("No cell recorded a reference (the ", code("reference"), " column is empty).",
                 class_="warn")
    rows = []
    for prob in data.problem_order(ok["problem"]):
        refs = sorted(set(ok[ok["problem"] == prob]["reference"].astype(str)))
        rows.append([tag("span", prob, class_="name"), join(*[tag("div", r) for r in refs])])
    return join(p("The reference each error is measured against (the ", code("reference"),
                  " column of the results; one per problem and size):"),
                scroll(table(["problem", "reference"], rows, cls="compact")))


def _error_table(data, ok) -> Markup:
    """problem x method: largest rho over sizes with the accuracy study's bound there, or the
    cell's failure status."""
    cells = data.cells[data.cells["dtype"] == "float64"]
    if cells.empty:
        return Markup("")
    bounds = _bounds(data.study("accuracy").frame)
    backends = data.backend_order(cells["backend"])
    rows = []
    for prob in data.problem_order(cells["problem"]):
        row = [tag("span", prob, class_="name")]
        for b in backends:
            c = cells[(cells["problem"] == prob) & (cells["backend"] == b)]
            o = ok[(ok["problem"] == prob) & (ok["backend"] == b)]["error_rho"].dropna()
            if c.empty:
                row.append(tag("span", "·", class_="muted"))
            elif not o.empty:
                bad = sorted(set(c["status"]) - {"ok"})
                row.append(join(fmt_error(o.max()), _bound_note(bounds.get((prob, b))),
                                *[join(" ", badge(s)) for s in bad]))
            else:
                row.append(join(*[badge(s) for s in sorted(set(c["status"]))]))
        rows.append(row)
    return join(p("The same numbers as a table: the largest ρ over sizes and, under it, the bound the "
                  "accuracy study judged it by at the size closest to its bound (exact methods and the "
                  "complex step: a multiple of the cell's rounding level, with a floor; finite "
                  "differences: their error model times |f|; hover a bound for how the study set it); ",
                  tag("span", "outside", class_="badge st-error"),
                  " marks a ρ above it. A status shows where a cell did not finish ok, so nothing is "
                  "silently left out."),
                scroll(table(["problem"] + backends, rows, cls="compact numbers")))


def _bounds(frame) -> dict:
    """(problem, backend) -> (bound, within, basis) at the checked size where ρ is closest to its
    bound (``basis``: how the study set it, where its table says)."""
    if frame is None or frame.empty or "bound" not in frame:
        return {}
    judged = frame[frame["checked"].astype(str) == "True"].copy()
    if judged.empty:
        return {}
    judged["share"] = judged["error_rho"].astype(float) / judged["bound"].astype(float)
    worst = judged.sort_values("share").groupby(["problem", "backend"]).tail(1)
    basis = worst["bound_basis"] if "bound_basis" in worst else [None] * len(worst)
    return {(r.problem, r.backend): (float(r.bound), str(r.within) == "True", b if isinstance(b, str) else None)
            for r, b in zip(worst.itertuples(), basis)}


def _bound_note(bound) -> Markup:
    if bound is None:
        return Markup("")
    value, within, basis = bound
    note = tag("div", f"≤ {fmt_error(value)}", class_="muted", title=basis)
    return note if within else join(note, tag("span", "outside", class_="badge st-error"))


def _fd_minima(data, frame) -> Markup:
    if frame is None or frame.empty or "rel_error" not in frame:
        return Markup("")
    rows = []
    for m in dict.fromkeys(frame["method"]):               # the study's order
        for d in ("float64", "float32"):
            sub = frame[(frame["method"] == m) & (frame["dtype"] == d) & frame["rel_error"].notna()]
            if sub.empty:
                continue
            i = sub["rel_error"].idxmin()
            small = sub[sub["h"] <= 1e-15]
            rows.append([tag("span", m, class_="name"), d, fmt_error(sub.loc[i, "rel_error"]),
                         fmt_step(sub.loc[i, "h"]),
                         fmt_error(small["rel_error"].max()) if not small.empty else "—"])
    return scroll(table(["method", "dtype", "smallest error", "at step h", "largest error at h ≤ 1e-15"],
                        rows, num_cols={2, 3, 4}, cls="compact"))


def _float32(data) -> Markup:
    """Each finite-difference method's V bottom in float64 and float32, from the fd_steps
    study's recorded ``float32-vs-float64`` figure."""
    view = next((v for v in data.study("fd_steps").figures if v.key == "float32-vs-float64"), None)
    best = view.frame if view is not None else None
    if best is None or best.empty or "dtype" not in best:
        return p("No float32 comparison recorded by the fd_steps study.", class_="warn")
    sentences = []
    for m in dict.fromkeys(best["method"]):                # the study's order
        b64 = best[(best["method"] == m) & (best["dtype"] == "float64")]
        b32 = best[(best["method"] == m) & (best["dtype"] == "float32")]
        if len(b64) and len(b32):
            e64, e32 = b64["best_error"].iloc[0], b32["best_error"].iloc[0]
            sentences.append(tag("li", tag("span", m, class_="name"), f": V bottom {fmt_error(e64)} at h = "
                                 f"{fmt_step(b64['h'].iloc[0])} in float64, {fmt_error(e32)} at h = "
                                 f"{fmt_step(b32['h'].iloc[0])} in float32 "
                                 f"({fmt_ratio(e32 / e64 if e64 else math.inf)} worse)."))
    text = join(p("float32 has ε ≈ 1.2e-7 instead of 2.2e-16, so rounding dominates sooner: the bottom "
                  "of each finite-difference V moves to a larger step and a larger error. Left of the "
                  "bottom a float32 curve is rounding noise whose values differ between CPUs, so each "
                  "bottom is located on the curve's 3-step envelope (the largest error among a step and "
                  "its neighbouring decades), not on a single lucky point."),
                tag("ul", *sentences) if sentences else "")
    return text


def _grid_float32(data) -> Markup:
    cells = data.cells
    if not (cells["dtype"] == "float32").any():
        dtypes = ", ".join(sorted(set(cells["dtype"].dropna().astype(str)))) or "none"
        return p("The grid itself ran no float32 cells (dtypes in this run: ", dtypes,
                 "); add ", code('dtypes = ["float64", "float32"]'), " to a suite to compare every "
                 "method in both.", class_="muted")
    ok = data.ok(None)
    rows = []
    for (prob, size, b), g in ok.groupby(["problem", "size", "backend"], sort=False):
        e64 = g[g["dtype"] == "float64"]["error_rho"]
        f32 = g[g["dtype"] == "float32"]
        if len(e64) and len(f32):
            computed = str(f32["compute_dtype"].iloc[0]) if "compute_dtype" in f32 else "float32"
            # a float32 cell the method computed in float64 is not a float32 result: say so
            upcast = (tag("span", f" (computed in {computed})", class_="warn")
                      if computed not in ("float32", "nan", "None") else "")
            rows.append([tag("span", prob, class_="name"), int(size), b, fmt_error(e64.iloc[0]),
                         join(fmt_error(f32["error_rho"].iloc[0]), upcast)])
    failed = cells[(cells["dtype"] == "float32") & (cells["status"] != "ok")]
    extra = (p(f"{len(failed)} float32 cells did not finish ok: ",
               ", ".join(f"{r.problem}/{r.size}/{r.backend} ({r.status})" for r in failed.itertuples()))
             if len(failed) else "")
    return join(p("Grid cells run in both dtypes (largest ρ):"),
                scroll(table(["problem", "size", "method", "float64 ρ", "float32 ρ"], rows,
                             num_cols={1, 3, 4}, cls="compact")), extra)


def _kinks(data) -> Markup:
    st = data.study("kinks")
    frame = st.frame
    head = tag("h3", "At kinks: conventions, not derivatives", id="kinks")
    if frame is None or frame.empty or "kink" not in frame:
        return join(head, p("The kinks study is ", st.status, ".", class_="muted"))
    at = frame[(frame["kink"].astype(str) == "True") & (frame["source"] == "problem")]
    if at.empty:
        return Markup("")
    rows = []
    backends = list(dict.fromkeys(at["backend"]))          # the study's order
    for prob in data.problem_order(at["problem"]):
        row = [tag("span", prob, class_="name")]
        for b in backends:
            sub = at[(at["problem"] == prob) & (at["backend"] == b)]
            vals = sorted({round(float(v), 4) for v in sub["derivative"].dropna()})
            bad = sorted(set(sub["status"].astype(str)) - {"ok"})
            row.append(join(", ".join(fmt_num(v, 4) for v in vals) if vals else "—",
                            *[join(" ", badge(s)) for s in bad]))
        rows.append(row)
    return join(head,
                p("What each method returns exactly at the kinks of relu (maximum(x, 0) at 0), |x| at 0 "
                  "and max over tied elements (kinks study; every distinct value seen). No answer "
                  "is “the” derivative there: each is a convention (a subgradient) or, for finite "
                  "differences, whatever the difference quotient straddles."),
                scroll(table(["problem"] + backends, rows, cls="compact numbers")))
