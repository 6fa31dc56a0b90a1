"""Memory: peak bytes of one gradient, the engine's saved-graph bytes, what the graph keeps as the
batch grows (the saved_bytes study), and expression swell."""
from __future__ import annotations

from .. import plots
from ..fmt import fmt_bytes, fmt_num, fmt_seconds
from ..html import Markup, badge, code, figure, join, p, scroll, table, tag
from . import Section, saved_bytes, size_labels, study_figures


def build(data) -> Section:
    ok = data.ok("float64")
    n_plots = 0
    measured = ok[ok["peak_bytes"].notna() & (ok["peak_bytes"] > 0)]
    svg = plots.peak_memory(measured, size_labels=size_labels(data), catalog=data.catalog)
    n_plots += plots.drawn(svg)
    parts = [tag("h3", "Peak memory of one gradient"),
             p("Peak bytes allocated during one gradient call, per method, against the problem size "
               "(log-log). How it was measured differs by method — the ", code("memory_source"),
               " column, listed under the plot: ", code("memray-native"), " tracks every allocation, "
               "native ones included, so NumPy, XLA (JAX on the CPU) and torch are on one scale; "
               "without memray only ", code("tracemalloc"), " measures, which sees NumPy's "
               "allocations but not JAX's or torch's; where no source could measure, the cell says so. "
               "The last column is what the prepared state keeps between calls (compiled "
               "executables, generated code, device copies)."),
             figure(svg, join("Peak bytes of one gradient (float64), by the source in the table below.",
                              _unmeasured(data, measured)),
                    empty="no problem has peak-memory measurements at two or more sizes."),
             _sources(data)]
    svg = plots.engine_saved_bytes(ok, catalog=data.catalog)
    n_plots += plots.drawn(svg)
    parts += [tag("h3", "What the engine's graph keeps", id="saved-graph"),
              p("Bytes of the tensors the engine's graph saved for backward (",
                code("saved_graph_bytes"), ", shared memory counted once): what backward needs and "
                "forward already computed, kept until backward frees it."),
              figure(svg, "Saved-graph bytes of the engine against size, per problem.",
                     empty="no engine cell recorded saved-graph bytes at two or more sizes."),
              _saved_table(data, ok)]
    batch_part, k = saved_bytes.part(data)
    n_plots += k
    parts.append(batch_part)
    swell_parts, k = _swell(data)
    n_plots += k
    parts += swell_parts
    return Section("memory", "Memory", join(*parts), plots=n_plots)


def _unmeasured(data, measured) -> str:
    ok = data.cells[data.cells["status"] == "ok"]
    missing = [b for b in data.backend_order(ok["backend"]) if b not in set(measured["backend"])]
    return (f" Not drawn (no peak-memory measurement): {', '.join(missing)}." if missing else "")


def _sources(data) -> Markup:
    cells = data.cells[data.cells["status"] == "ok"]
    if cells.empty:
        return Markup("")
    rows = []
    for b in data.backend_order(cells["backend"]):
        sub = cells[cells["backend"] == b]
        srcs = sub["memory_source"].fillna("(none recorded)").astype(str).value_counts()
        rows.append([tag("span", b, class_="name"),
                     ", ".join(f"{s} ({n} cells)" for s, n in srcs.items()),
                     fmt_bytes(sub["peak_bytes"].min()), fmt_bytes(sub["peak_bytes"].max()),
                     fmt_bytes(sub["prepared_bytes"].max()) if "prepared_bytes" in sub else "—"])
    return scroll(table(["method", "memory source", "smallest peak", "largest peak",
                         "prepared state keeps (largest)"], rows, num_cols={2, 3, 4}, cls="compact"))


def _saved_table(data, ok) -> Markup:
    eng = ok[(ok["backend"] == "engine") & ok["saved_graph_bytes"].notna()]
    if eng.empty:
        return Markup("")
    rows = []
    for prob in data.problem_order(eng["problem"]):
        sub = eng[eng["problem"] == prob].sort_values("size")
        rows.append([tag("span", prob, class_="name"),
                     ", ".join(f"{int(s)}: {fmt_bytes(b)}" for s, b in zip(sub["size"], sub["saved_graph_bytes"])),
                     ", ".join(fmt_bytes(b) for b in sub["peak_bytes"])])
    return scroll(table(["problem", "size: saved-graph bytes", "peak bytes of the gradient (same sizes)"],
                        rows, cls="compact"))


def _swell(data):
    st = data.study("expression_swell")
    frame = st.frame
    parts = [tag("h3", "Symbolic expression size against the engine's graph", id="swell")]
    if frame is None or frame.empty:
        parts.append(p("The expression_swell study is ", st.status, (f" ({st.note})" if st.note else ""),
                       ".", class_="warn"))
        return parts, 0
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
    parts += [p("From the ", code("expression_swell"), " study: the derivative of k steps of the logistic "
                "map x ← r·x·(1−x). Differentiating the expression without sharing copies each x_j into "
                "both factors of the next step, so SymPy's operation count grows exponentially; common-"
                "subexpression elimination (CSE) restores the sharing; the engine records a fixed number "
                "of nodes per step, whatever the formula would look like written out."),
              *figures,
              scroll(table(["k", "SymPy ops", "SymPy ops with CSE", "distinct subexpressions",
                            "engine nodes", "engine saved bytes", "SymPy prepare", "SymPy+CSE prepare",
                            "status", "note"], rows, num_cols={0, 1, 2, 3, 4, 5, 6, 7}, cls="compact"))]
    return parts, n
