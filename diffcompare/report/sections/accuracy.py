"""Accuracy: each method's error against the reference, the finite-difference V, float32
against float64, and what each method returns at kinks (:func:`accuracy_data` computes,
``templates/accuracy.html.j2`` renders)."""
from __future__ import annotations

import math

from .. import plots
from ..fmt import fmt_error, fmt_num, fmt_ratio, fmt_step
from ..fragments import badge, figure, lines, muted, name, note, table, warn
from ..templates import render
from . import Section, study_figures


def accuracy_data(data) -> dict:
    """What the section shows, as plain values and fragments; ``plots``: how many were drawn."""
    ok = data.ok("float64")
    svg = plots.accuracy_strip(ok, catalog=data.catalog)
    st = data.study("fd_steps")
    fd_figures, n_fd = study_figures(data, "fd_steps", ["fd-steps"])
    f32_figures, n_f32 = study_figures(data, "fd_steps", ["float32-vs-float64"])
    return {"ranges": _ranges(data, ok),
            "strip": figure(svg, "Largest error per method and problem against the reference named below.",
                            empty="no float64 cell has an accuracy measurement."),
            "references": _reference_table(data), "errors": _error_table(data, ok),
            "fd_reference": _first(st.frame, "reference"), "fd_figures": fd_figures,
            "fd_minima": _fd_minima(st.frame), "float32": _float32(data),
            "float32_figures": f32_figures, "grid_float32": _grid_float32(data), "kinks": _kinks(data),
            "plots": plots.drawn(svg) + n_fd + n_f32}


def build(data) -> Section:
    d = accuracy_data(data)
    return Section("accuracy", "Accuracy", render("accuracy.html.j2", **d), plots=d["plots"])


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


def _reference_table(data):
    """problem -> the references its errors are measured against (None: no cell recorded one)."""
    ok = data.cells[data.cells["reference"].notna()]
    if ok.empty:
        return None
    rows = [[name(prob), lines(*sorted(set(ok[ok["problem"] == prob]["reference"].astype(str))))]
            for prob in data.problem_order(ok["problem"])]
    return table(["problem", "reference"], rows, cls="compact")


def _error_table(data, ok):
    """problem x method: largest rho over sizes with the accuracy study's bound there, or the
    cell's failure status."""
    cells = data.cells[data.cells["dtype"] == "float64"]
    if cells.empty:
        return None
    bounds = _bounds(data.study("accuracy").frame)
    backends = data.backend_order(cells["backend"])
    rows = []
    for prob in data.problem_order(cells["problem"]):
        row = [name(prob)]
        for b in backends:
            c = cells[(cells["problem"] == prob) & (cells["backend"] == b)]
            o = ok[(ok["problem"] == prob) & (ok["backend"] == b)]["error_rho"].dropna()
            if c.empty:
                row.append(muted("·"))
            elif not o.empty:
                bad = sorted(set(c["status"]) - {"ok"})
                row.append([fmt_error(o.max()), _bound_note(bounds.get((prob, b))),
                            *[[" ", badge(s)] for s in bad]])
            else:
                row.append([badge(s) for s in sorted(set(c["status"]))])
        rows.append(row)
    return table(["problem"] + backends, rows, cls="compact numbers")


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


def _bound_note(bound) -> list:
    """The bound under a ρ (how the study set it on hover), and "outside" where ρ exceeds it."""
    if bound is None:
        return []
    value, within, basis = bound
    out = [note(f"≤ {fmt_error(value)}", title=basis)]
    return out if within else out + [badge("fails", "outside")]


def _fd_minima(frame):
    if frame is None or frame.empty or "rel_error" not in frame:
        return None
    rows = []
    for m in dict.fromkeys(frame["method"]):               # the study's order
        for d in ("float64", "float32"):
            sub = frame[(frame["method"] == m) & (frame["dtype"] == d) & frame["rel_error"].notna()]
            if sub.empty:
                continue
            i = sub["rel_error"].idxmin()
            small = sub[sub["h"] <= 1e-15]
            rows.append([name(m), d, fmt_error(sub.loc[i, "rel_error"]), fmt_step(sub.loc[i, "h"]),
                         fmt_error(small["rel_error"].max()) if not small.empty else "—"])
    return table(["method", "dtype", "smallest error", "at step h", "largest error at h ≤ 1e-15"],
                 rows, num_cols={2, 3, 4}, cls="compact")


def _float32(data):
    """Each finite-difference method's V bottom in float64 and float32, from the fd_steps
    study's recorded ``float32-vs-float64`` figure (None: not recorded)."""
    view = next((v for v in data.study("fd_steps").figures if v.key == "float32-vs-float64"), None)
    best = view.frame if view is not None else None
    if best is None or best.empty or "dtype" not in best:
        return None
    out = []
    for m in dict.fromkeys(best["method"]):                # the study's order
        b64 = best[(best["method"] == m) & (best["dtype"] == "float64")]
        b32 = best[(best["method"] == m) & (best["dtype"] == "float32")]
        if len(b64) and len(b32):
            e64, e32 = b64["best_error"].iloc[0], b32["best_error"].iloc[0]
            out.append({"method": m, "e64": fmt_error(e64), "h64": fmt_step(b64["h"].iloc[0]),
                        "e32": fmt_error(e32), "h32": fmt_step(b32["h"].iloc[0]),
                        "worse": fmt_ratio(e32 / e64 if e64 else math.inf)})
    return out


def _grid_float32(data) -> dict:
    """The grid's cells run in both dtypes: ``{"table", "failed"}``, or ``{"dtypes"}`` (the
    dtypes run) where it ran no float32 cell."""
    cells = data.cells
    if not (cells["dtype"] == "float32").any():
        return {"dtypes": ", ".join(sorted(set(cells["dtype"].dropna().astype(str)))) or "none"}
    ok = data.ok(None)
    rows = []
    for (prob, size, b), g in ok.groupby(["problem", "size", "backend"], sort=False):
        e64 = g[g["dtype"] == "float64"]["error_rho"]
        f32 = g[g["dtype"] == "float32"]
        if len(e64) and len(f32):
            computed = str(f32["compute_dtype"].iloc[0]) if "compute_dtype" in f32 else "float32"
            # a float32 cell the method computed in float64 is not a float32 result: say so
            upcast = (warn(f" (computed in {computed})")
                      if computed not in ("float32", "nan", "None") else "")
            rows.append([name(prob), int(size), b, fmt_error(e64.iloc[0]),
                         [fmt_error(f32["error_rho"].iloc[0]), upcast]])
    failed = cells[(cells["dtype"] == "float32") & (cells["status"] != "ok")]
    return {"table": table(["problem", "size", "method", "float64 ρ", "float32 ρ"], rows,
                           num_cols={1, 3, 4}, cls="compact"),
            "failed": ", ".join(f"{r.problem}/{r.size}/{r.backend} ({r.status})" for r in failed.itertuples()),
            "n_failed": len(failed)}


def _kinks(data):
    """What each method returned at the kinks (the kinks study): ``{"table"}``, ``{"status"}``
    where the study has no rows, or None where it has none at a kink."""
    st = data.study("kinks")
    frame = st.frame
    if frame is None or frame.empty or "kink" not in frame:
        return {"status": st.status}
    at = frame[(frame["kink"].astype(str) == "True") & (frame["source"] == "problem")]
    if at.empty:
        return None
    rows = []
    backends = list(dict.fromkeys(at["backend"]))          # the study's order
    for prob in data.problem_order(at["problem"]):
        row = [name(prob)]
        for b in backends:
            sub = at[(at["problem"] == prob) & (at["backend"] == b)]
            vals = sorted({round(float(v), 4) for v in sub["derivative"].dropna()})
            bad = sorted(set(sub["status"].astype(str)) - {"ok"})
            row.append([", ".join(fmt_num(v, 4) for v in vals) if vals else "—",
                        *[[" ", badge(s)] for s in bad]])
        rows.append(row)
    return {"table": table(["problem"] + backends, rows, cls="compact numbers")}
