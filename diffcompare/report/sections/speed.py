"""Speed: gradient time against size, the gradient/function ratio against the cheap-gradient
bound, and preparation against evaluation (the break-even study).  Operators beyond the
gradient have their own section (:mod:`.operators`).  :func:`speed_data` computes,
``templates/speed.html.j2`` renders."""
from __future__ import annotations

import math

from .. import plots
from ..fmt import fmt_count, fmt_ratio, fmt_seconds
from ...results.provenance import mixed_hosts_message
from ..fragments import badge, figure, flag, hover, muted, name, strong, table
from ..templates import render
from . import Section, size_labels


def speed_data(data) -> dict:
    """What the section shows, as plain values and fragments; ``plots``: how many were drawn."""
    ok = data.ok("float64")
    labels = size_labels(data)
    time_svg = plots.time_vs_size(ok, size_labels=labels, catalog=data.catalog)
    ratio_svg = plots.ratio_vs_size(ok, size_labels=labels, catalog=data.catalog)
    lo, hi = plots.CHEAP_GRADIENT_BAND
    modes, n_modes = _forward_vs_reverse(data, ok)
    prep, n_prep = _preparation(data, ok)
    return {"hosts": mixed_hosts_message(data.rows),       # a Dask run over several hosts
            "time": figure(time_svg, "One gradient call, median over the timing samples, float64.",
                           empty="no problem ran at two or more sizes."),
            "trust": _trust(data), "time_table": _time_table(data, ok),
            "band": f"{lo:g}–{hi:g}",
            "ratio": figure(ratio_svg, "Gradient time ÷ function time per method; green band: the "
                                       f"cheap-gradient bound {lo:g}–{hi:g}×.",
                            empty="no problem ran at two or more sizes with both timings."),
            "ratio_table": _ratio_table(data, ok), "modes": modes, "preparation": prep,
            "plots": plots.drawn(time_svg) + plots.drawn(ratio_svg) + n_modes + n_prep}


def build(data) -> Section:
    d = speed_data(data)
    return Section("speed", "Speed", render("speed.html.j2", **d), plots=d["plots"])


def _trust(data):
    """How many timings the results layer flags (``timing_flags``), the thresholds it flags
    them by, and which."""
    from ...results import trust

    summary = trust.flag_summary(data.cells)
    if not summary:
        return None
    flagged = data.cells[data.cells["timing_flags"].fillna("") != ""]
    rows = [[name(r["problem"]), int(r["size"]), r["seed"], r["dtype"],
             r["backend"], fmt_seconds(r["gradient_s"]), r["timing_flags"]]
            for r in flagged.to_dict("records")]
    return {"summary": summary, "min_cpu_share": f"{trust.MIN_CPU_SHARE:.0%}",
            "max_load": f"{trust.MAX_LOAD_PER_CPU:g}", "max_iqr": f"{trust.MAX_IQR_FRACTION:.0%}",
            "size_step": trust.SIZE_STEP, "monotone_rtol": f"{trust.MONOTONE_RTOL:.0%}",
            "table": table(["problem", "size", "seed", "dtype", "method", "gradient", "why"], rows,
                           num_cols={1, 2, 5}, cls="compact")}


def _time_table(data, ok):
    """Gradient time per method at each problem's largest size (statuses where not ok)."""
    cells = data.cells[data.cells["dtype"] == "float64"]
    backends = data.backend_order(cells["backend"])
    rows = []
    for prob in data.problem_order(cells["problem"]):
        size = cells[cells["problem"] == prob]["size"].max()
        row = [name(prob), int(size)]
        for b in backends:
            c = cells[(cells["problem"] == prob) & (cells["backend"] == b) & (cells["size"] == size)]
            if c.empty:
                row.append(muted("·"))
            elif (c["status"] == "ok").all() and c["gradient_s"].notna().any():
                flags = "; ".join(f for f in c["timing_flags"] if isinstance(f, str) and f)
                row.append([fmt_seconds(c["gradient_s"].median()), flag(flags)])
            else:
                row.append([badge(s) for s in sorted(set(c["status"]))])
        rows.append(row)
    return table(["problem", "size"] + backends, rows, cls="compact numbers") if rows else None


def _ratio_table(data, ok):
    ok = ok[ok["ratio"].notna()]
    if ok.empty:
        return None
    rows = []
    for b in data.backend_order(ok["backend"]):
        sub = ok[ok["backend"] == b]
        big = sub[sub["size"] == sub.groupby("problem")["size"].transform("max")]
        flags = [f for f in sub["timing_flags"] if isinstance(f, str) and f]
        paths = sorted(set(sub["timed_path"].dropna().astype(str)))
        rows.append([name(b), fmt_ratio(sub["ratio"].min()),
                     fmt_ratio(sub["ratio"].median()), fmt_ratio(sub["ratio"].max()),
                     fmt_ratio(big["ratio"].median()),
                     [f"{len(flags)} of {len(sub)}", flag("; ".join(dict.fromkeys(flags)))]
                     if flags else muted(f"0 of {len(sub)}"),
                     "; ".join(paths) or muted("not recorded")])
    return table(["method", "smallest ratio", "median", "largest",
                  "median at each problem's largest size", "timings flagged",
                  "both timed as"], rows, num_cols={1, 2, 3, 4}, cls="compact")


def _forward_vs_reverse(data, ok):
    """Forward-mode methods (a JVP per input) against the reverse-mode ones (a backward pass
    per output) on each problem where a forward-mode method ran, time against n inputs:
    ``(None or {"figure", "table"}, plots drawn)``."""
    forward = ok[(ok["mode"] == "forward") & ok["gradient_s"].notna()]
    problems = data.problem_order(forward["problem"])
    if not problems:
        return None, 0
    shown = ok[ok["problem"].isin(problems) & ok["mode"].isin(["forward", "reverse"])]
    svg = plots.time_vs_size(shown, key="forward-vs-reverse", x="n_inputs",
                             size_labels={q: "differentiated inputs n" for q in problems},
                             catalog=data.catalog)
    rows = []
    for prob in problems:
        sub = shown[shown["problem"] == prob]
        n = sub[sub["mode"] == "forward"]["n_inputs"].max()
        at_n = sub[sub["n_inputs"] == n]
        fwd, rev = at_n[at_n["mode"] == "forward"], at_n[at_n["mode"] == "reverse"]
        if fwd.empty or rev.empty:
            continue
        f, r = fwd.loc[fwd["gradient_s"].idxmin()], rev.loc[rev["gradient_s"].idxmin()]
        rows.append([name(prob), int(n), name(f["backend"]), fmt_seconds(f["gradient_s"]),
                     name(r["backend"]), fmt_seconds(r["gradient_s"]),
                     fmt_ratio(f["gradient_s"] / r["gradient_s"])])
    return {"figure": figure(svg, "One gradient per method against the number of differentiated "
                                  "inputs n, log-log; forward-mode methods beside the reverse-mode ones.",
                             empty="no problem ran a forward-mode method at two or more sizes."),
            "table": table(["problem", "n inputs", "fastest forward", "time", "fastest reverse",
                            "time", "forward ÷ reverse"], rows, num_cols={1, 3, 5, 6}, cls="compact")
            if rows else None}, plots.drawn(svg)


def _preparation(data, ok):
    """The showcase's preparation figures and the breakeven study's table:
    ``({"figures", "study", "table"}, plots drawn)``."""
    figures, n_plots = [], 0
    pick = _showcase(ok)
    if pick is not None:
        prob, size = pick
        rows = ok[(ok["problem"] == prob) & (ok["size"] == size)]
        rows = rows.set_index("backend").loc[data.backend_order(rows["backend"])].reset_index()
        svg = plots.prepare_vs_evaluate(rows, f"{prob}, size {size}")
        n_plots += plots.drawn(svg)
        figures.append(figure(svg, f"One-off preparation and one gradient call per method ({prob}, size "
                                   f"{size}: the problem and size with the most methods ok), log scale."))
        svg = plots.cost_of_calls(rows, f"{prob}, size {size}", catalog=data.catalog)
        n_plots += plots.drawn(svg)
        figures.append(figure(svg, "Total time of N gradient calls including preparation: where two "
                                   "lines cross, the method that prepares more has paid for itself "
                                   "(break-even)."))
    st = data.study("breakeven")
    frame = st.frame
    if frame is None or frame.empty:
        return {"figures": figures, "status": st.status, "note": st.note, "table": None}, n_plots
    pairs = list(dict.fromkeys(zip(frame["method"], frame["baseline"])))
    keys = list(dict.fromkeys(zip(frame["problem"], frame["size"])))
    order = {q: i for i, q in enumerate(data.problem_order(frame["problem"]))}
    keys.sort(key=lambda k: (order.get(k[0], 0), int(k[1])))
    rows = []
    for prob, size in keys:
        sub = frame[(frame["problem"] == prob) & (frame["size"] == size)]
        row = [name(prob), int(size)]
        for m, b in pairs:
            r = sub[(sub["method"] == m) & (sub["baseline"] == b)]
            if r.empty:
                row.append(muted("·"))
                continue
            n_star = r["breakeven_calls"].iloc[0]
            row.append(hover(fmt_count(n_star if n_star == n_star else math.inf),
                             f"prepare {fmt_seconds(r['prepare_s'].iloc[0])}, per call "
                             f"{fmt_seconds(r['t_method_s'].iloc[0])} against "
                             f"{fmt_seconds(r['t_baseline_s'].iloc[0])}"))
        rows.append(row)
    summary = [strong("median N*"), ""]
    for m, b in pairs:
        v = frame[(frame["method"] == m) & (frame["baseline"] == b)]["breakeven_calls"].astype(float)
        fin = v[v.apply(math.isfinite)]
        never = int((~v.apply(math.isfinite)).sum())
        summary.append(strong([fmt_count(fin.median()) if len(fin) else "—", f" ({never} never)" if never else ""]))
    rows.append(summary)            # the medians in bold
    return {"figures": figures, "table": table(["problem", "size"] + [f"{m} vs {b}" for m, b in pairs],
                                               rows, num_cols=set(range(1, len(pairs) + 2)),
                                               cls="compact")}, n_plots


def _showcase(ok):
    """(problem, size) with the most methods that have both prepare and gradient times."""
    both = ok[ok["prepare_s"].notna() & ok["gradient_s"].notna()]
    if both.empty:
        return None
    counts = both.groupby(["problem", "size"]).size()
    best = counts.max()
    cands = sorted([k for k, v in counts.items() if v == best], key=lambda k: (-int(k[1]), str(k[0])))
    prob, size = cands[0]
    return prob, int(size)
