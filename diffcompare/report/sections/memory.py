"""Memory: peak bytes of one gradient, the engine's saved-graph bytes, what the graph keeps as the
batch grows (the saved_bytes study), and expression swell (:func:`memory_data` computes,
``templates/memory.html.j2`` renders)."""
from __future__ import annotations

from .. import plots
from ..fmt import fmt_bytes, fmt_num, fmt_seconds
from ..fragments import badge, figure, name, table
from ..templates import render
from . import Section, saved_bytes, size_labels, study_figures


def memory_data(data) -> dict:
    """What the section shows, as plain values and fragments; ``plots``: how many were drawn."""
    ok = data.ok("float64")
    measured = ok[ok["peak_bytes"].notna() & (ok["peak_bytes"] > 0)]
    peak = plots.peak_memory(measured, size_labels=size_labels(data), catalog=data.catalog)
    saved = plots.engine_saved_bytes(ok, catalog=data.catalog)
    batch, n_batch = saved_bytes.part(data)
    swell, n_swell = _swell(data)
    return {"peak": figure(peak, "Peak bytes of one gradient (float64), by the source in the table below."
                                 + _unmeasured(data, measured),
                           empty="no problem has peak-memory measurements at two or more sizes."),
            "sources": _sources(data),
            "saved": figure(saved, "Saved-graph bytes of the engine against size, per problem.",
                            empty="no engine cell recorded saved-graph bytes at two or more sizes."),
            "saved_table": _saved_table(data, ok), "saved_bytes": batch, "swell": swell,
            "plots": plots.drawn(peak) + plots.drawn(saved) + n_batch + n_swell}


def build(data) -> Section:
    d = memory_data(data)
    return Section("memory", "Memory", render("memory.html.j2", **d), plots=d["plots"])


def _unmeasured(data, measured) -> str:
    ok = data.cells[data.cells["status"] == "ok"]
    missing = [b for b in data.backend_order(ok["backend"]) if b not in set(measured["backend"])]
    return (f" Not drawn (no peak-memory measurement): {', '.join(missing)}." if missing else "")


def _sources(data):
    cells = data.cells[data.cells["status"] == "ok"]
    if cells.empty:
        return None
    rows = []
    for b in data.backend_order(cells["backend"]):
        sub = cells[cells["backend"] == b]
        srcs = sub["memory_source"].fillna("(none recorded)").astype(str).value_counts()
        rows.append([name(b), ", ".join(f"{s} ({n} cells)" for s, n in srcs.items()),
                     fmt_bytes(sub["peak_bytes"].min()), fmt_bytes(sub["peak_bytes"].max()),
                     fmt_bytes(sub["prepared_bytes"].max()) if "prepared_bytes" in sub else "—"])
    return table(["method", "memory source", "smallest peak", "largest peak",
                  "prepared state keeps (largest)"], rows, num_cols={2, 3, 4}, cls="compact")


def _saved_table(data, ok):
    eng = ok[(ok["backend"] == "engine") & ok["saved_graph_bytes"].notna()]
    if eng.empty:
        return None
    rows = []
    for prob in data.problem_order(eng["problem"]):
        sub = eng[eng["problem"] == prob].sort_values("size")
        rows.append([name(prob),
                     ", ".join(f"{int(s)}: {fmt_bytes(b)}" for s, b in zip(sub["size"], sub["saved_graph_bytes"])),
                     ", ".join(fmt_bytes(b) for b in sub["peak_bytes"])])
    return table(["problem", "size: saved-graph bytes", "peak bytes of the gradient (same sizes)"],
                 rows, cls="compact")


def _swell(data):
    """The expression_swell study: ``({"status", "note"} or {"figures", "table"}, plots drawn)``."""
    st = data.study("expression_swell")
    frame = st.frame
    if frame is None or frame.empty:
        return {"status": st.status, "note": st.note}, 0
    figures, n = study_figures(data, "expression_swell")
    size_rows = frame[frame["kind"] == "size"] if "kind" in frame else frame
    rows = []
    for r in size_rows.sort_values("k").itertuples():
        status = getattr(r, "status", "ok")
        rows.append([int(r.k), fmt_num(r.ops_gradient), fmt_num(r.ops_gradient_cse),
                     fmt_num(getattr(r, "dag_nodes_gradient", None)), fmt_num(r.engine_nodes),
                     fmt_bytes(r.engine_saved_bytes), fmt_seconds(getattr(r, "prepare_sympy_s", None)),
                     fmt_seconds(getattr(r, "prepare_sympy_cse_s", None)),
                     badge(status) if status == status else "",
                     getattr(r, "message", "") if isinstance(getattr(r, "message", ""), str) else ""])
    return {"figures": figures,
            "table": table(["k", "SymPy ops", "SymPy ops with CSE", "distinct subexpressions",
                            "engine nodes", "engine saved bytes", "SymPy prepare", "SymPy+CSE prepare",
                            "status", "note"], rows, num_cols={0, 1, 2, 3, 4, 5, 6, 7}, cls="compact")}, n
