"""Speed: gradient time against size, the gradient/function ratio against the cheap-gradient
bound, and preparation against evaluation (the break-even study).  Operators beyond the
gradient have their own section (:mod:`.operators`)."""
from __future__ import annotations

import math

from .. import plots
from ..fmt import fmt_count, fmt_error, fmt_ratio, fmt_seconds, shorten
from ...results.provenance import mixed_hosts_message
from ..html import Markup, code, figure, join, p, scroll, table, tag
from . import Section, flag_mark, size_labels


def build(data) -> Section:
    ok = data.ok("float64")
    labels = size_labels(data)
    n_plots = 0
    svg = plots.time_vs_size(ok, size_labels=labels, catalog=data.catalog)
    n_plots += plots.drawn(svg)
    parts = [tag("h3", "Gradient time against problem size"),
             p("Median seconds of one gradient call (after preparation; JAX after compiling), per "
               "method, on log-log axes: a slope of 1 means time grows in proportion to the size."),
             figure(svg, "One gradient call, median over the timing samples, float64.",
                    empty="no problem ran at two or more sizes."),
             _trust(data),
             _time_table(data, ok)]
    svg = plots.ratio_vs_size(ok, size_labels=labels, catalog=data.catalog)
    n_plots += plots.drawn(svg)
    lo, hi = plots.CHEAP_GRADIENT_BAND
    parts += [tag("h3", "Cost of a gradient relative to the function", id="ratio"),
              p("Gradient time divided by the time of one function evaluation with the same method, "
                "both timed on the same path (jitted for a jitted gradient, eager for an eager one: "
                "the table names it). A ratio near 1 means both calls are mostly a fixed per-call "
                "cost (a compiled executable's dispatch, a few µs), not operations. "
                "The green band is the ", tag("em", "cheap gradient principle"),
                f" (Griewank & Walther, Evaluating Derivatives, 2008): reverse mode computes a whole "
                f"gradient in at most about {lo:g}–{hi:g} times the operations of the function, "
                "whatever the number of inputs n. Finite differences need n+1 (forward) or 2n (central) "
                "evaluations, so their ratio grows with n; an interpreted engine adds Python overhead "
                "per node on top of the operation count."),
              figure(svg, "Gradient time ÷ function time per method; green band: the cheap-gradient "
                          f"bound {lo:g}–{hi:g}×.",
                     empty="no problem ran at two or more sizes with both timings."),
              _ratio_table(data, ok)]
    mode_parts, k = _forward_vs_reverse(data, ok)
    n_plots += k
    parts += mode_parts
    prep_parts, k = _preparation(data, ok)
    n_plots += k
    parts += prep_parts
    hosts = mixed_hosts_message(data.rows)      # a Dask run over several hosts
    return Section("speed", "Speed", join(p(hosts, class_="warn") if hosts else "", *parts), plots=n_plots)


def _largest(ok, prob):
    sub = ok[ok["problem"] == prob]
    return int(sub["size"].max()) if not sub.empty else None


def _trust(data) -> Markup:
    """How many timings the results layer flags (``timing_flags``), why, and which."""
    from ...results import trust

    summary = trust.flag_summary(data.cells)
    if not summary:
        return Markup("")
    flagged = data.cells[data.cells["timing_flags"].fillna("") != ""]
    rows = [[tag("span", r["problem"], class_="name"), int(r["size"]), r["seed"], r["dtype"],
             r["backend"], fmt_seconds(r["gradient_s"]), r["timing_flags"]]
            for r in flagged.to_dict("records")]
    why = (f"Flagged: loaded — the worker had its CPU less than {trust.MIN_CPU_SHARE:.0%} of the "
           f"time it was timed (on a GPU, where that share says nothing: the host's load over "
           f"{trust.MAX_LOAD_PER_CPU:g} per CPU); "
           f"noisy — the samples' interquartile range is over {trust.MAX_IQR_FRACTION:.0%} of "
           f"their median; non-monotone — the same method was faster at a size "
           f"{trust.SIZE_STEP}× larger, by more than both interquartile ranges and "
           f"{trust.MONOTONE_RTOL:.0%}. Read these times, and the ratios and answers made from "
           "them, with care (marked ⚠ in the tables; hover for the reasons).")
    return join(p(tag("strong", summary), ". ", why, class_="warn", id="flagged-timings"),
                tag("details", tag("summary", "which timings, and why"),
                    table(["problem", "size", "seed", "dtype", "method", "gradient", "why"], rows,
                          num_cols={1, 2, 5}, cls="compact")))


def _time_table(data, ok) -> Markup:
    """Gradient time per method at each problem's largest size (statuses where not ok)."""
    cells = data.cells[data.cells["dtype"] == "float64"]
    backends = data.backend_order(cells["backend"])
    rows = []
    for prob in data.problem_order(cells["problem"]):
        size = cells[cells["problem"] == prob]["size"].max()
        row = [tag("span", prob, class_="name"), int(size)]
        for b in backends:
            c = cells[(cells["problem"] == prob) & (cells["backend"] == b) & (cells["size"] == size)]
            if c.empty:
                row.append(tag("span", "·", class_="muted"))
            elif (c["status"] == "ok").all() and c["gradient_s"].notna().any():
                flags = "; ".join(f for f in c["timing_flags"] if isinstance(f, str) and f)
                row.append(join(fmt_seconds(c["gradient_s"].median()), flag_mark(flags)))
            else:
                from ..html import badge
                row.append(join(*[badge(s) for s in sorted(set(c["status"]))]))
        rows.append(row)
    if not rows:
        return Markup("")
    return join(p("Gradient time at each problem's largest size:"),
                scroll(table(["problem", "size"] + backends, rows, cls="compact numbers")))


def _ratio_table(data, ok) -> Markup:
    ok = ok[ok["ratio"].notna()]
    if ok.empty:
        return Markup("")
    rows = []
    for b in data.backend_order(ok["backend"]):
        sub = ok[ok["backend"] == b]
        big = sub[sub["size"] == sub.groupby("problem")["size"].transform("max")]
        flags = [f for f in sub["timing_flags"] if isinstance(f, str) and f]
        paths = sorted(set(sub["timed_path"].dropna().astype(str)))
        rows.append([tag("span", b, class_="name"), fmt_ratio(sub["ratio"].min()),
                     fmt_ratio(sub["ratio"].median()), fmt_ratio(sub["ratio"].max()),
                     fmt_ratio(big["ratio"].median()),
                     join(f"{len(flags)} of {len(sub)}", flag_mark("; ".join(dict.fromkeys(flags))))
                     if flags else tag("span", f"0 of {len(sub)}", class_="muted"),
                     "; ".join(paths) or tag("span", "not recorded", class_="muted")])
    return scroll(table(["method", "smallest ratio", "median", "largest",
                         "median at each problem's largest size", "timings flagged",
                         "both timed as"], rows, num_cols={1, 2, 3, 4}, cls="compact"))


def _forward_vs_reverse(data, ok):
    """Forward-mode methods (a JVP per input) against the reverse-mode ones (a backward pass
    per output) on each problem where a forward-mode method ran, time against n inputs."""
    forward = ok[(ok["mode"] == "forward") & ok["gradient_s"].notna()]
    problems = data.problem_order(forward["problem"])
    parts = [tag("h3", "Forward against reverse mode", id="forward-mode")]
    if not problems:
        return parts + [p("No forward-mode method (", code("jax-jacfwd"), ", ", code("engine-jvp"),
                          ") ran in these results.", class_="muted")], 0
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
        rows.append([tag("span", prob, class_="name"), int(n), tag("span", f["backend"], class_="name"),
                     fmt_seconds(f["gradient_s"]), tag("span", r["backend"], class_="name"),
                     fmt_seconds(r["gradient_s"]), fmt_ratio(f["gradient_s"] / r["gradient_s"])])
    parts += [p("Reverse mode pays one backward pass per output, forward mode one Jacobian-vector "
                "product per input: for a scalar loss of n inputs forward mode does about n times "
                "the work, and its line climbs with n while reverse mode's stays near flat. Forward "
                "mode wins when outputs outnumber inputs (a Jacobian of a few parameters)."),
              figure(svg, "One gradient per method against the number of differentiated inputs n, "
                          "log-log; forward-mode methods beside the reverse-mode ones.",
                     empty="no problem ran a forward-mode method at two or more sizes.")]
    if rows:
        parts.append(scroll(table(["problem", "n inputs", "fastest forward", "time",
                                   "fastest reverse", "time", "forward ÷ reverse"], rows,
                                  num_cols={1, 3, 5, 6}, cls="compact")))
    return parts, plots.drawn(svg)


def _preparation(data, ok):
    parts = [tag("h3", "Preparation against evaluation", id="preparation"),
             p("Some methods do work once before the first gradient: SymPy derives, simplifies (CSE) "
               "and compiles the derivative; ", code("jax.jit"), " traces and compiles. The question is "
               "after how many gradient calls that one-off cost has paid for itself.")]
    n_plots = 0
    pick = _showcase(ok)
    if pick is not None:
        prob, size = pick
        rows = ok[(ok["problem"] == prob) & (ok["size"] == size)]
        rows = rows.set_index("backend").loc[data.backend_order(rows["backend"])].reset_index()
        svg = plots.prepare_vs_evaluate(rows, f"{prob}, size {size}")
        n_plots += plots.drawn(svg)
        parts.append(figure(svg, f"One-off preparation and one gradient call per method ({prob}, size "
                                 f"{size}: the problem and size with the most methods ok), log scale."))
        svg = plots.cost_of_calls(rows, f"{prob}, size {size}", catalog=data.catalog)
        n_plots += plots.drawn(svg)
        parts.append(figure(svg, "Total time of N gradient calls including preparation: where two lines "
                                 "cross, the method that prepares more has paid for itself (break-even)."))
    st = data.study("breakeven")
    frame = st.frame
    if frame is None or frame.empty:
        parts.append(p("The breakeven study is ", st.status, (f" ({st.note})" if st.note else ""), ".",
                       class_="warn"))
        return parts, n_plots
    pairs = list(dict.fromkeys(zip(frame["method"], frame["baseline"])))
    keys = list(dict.fromkeys(zip(frame["problem"], frame["size"])))
    order = {q: i for i, q in enumerate(data.problem_order(frame["problem"]))}
    keys.sort(key=lambda k: (order.get(k[0], 0), int(k[1])))
    rows = []
    for prob, size in keys:
        sub = frame[(frame["problem"] == prob) & (frame["size"] == size)]
        row = [tag("span", prob, class_="name"), int(size)]
        for m, b in pairs:
            r = sub[(sub["method"] == m) & (sub["baseline"] == b)]
            if r.empty:
                row.append(tag("span", "·", class_="muted"))
                continue
            n_star = r["breakeven_calls"].iloc[0]
            row.append(tag("span", fmt_count(n_star if n_star == n_star else math.inf),
                           title=f"prepare {fmt_seconds(r['prepare_s'].iloc[0])}, per call "
                                 f"{fmt_seconds(r['t_method_s'].iloc[0])} against "
                                 f"{fmt_seconds(r['t_baseline_s'].iloc[0])}"))
        rows.append(row)
    summary = ["median N*", ""]
    for m, b in pairs:
        v = frame[(frame["method"] == m) & (frame["baseline"] == b)]["breakeven_calls"].astype(float)
        fin = v[v.apply(math.isfinite)]
        never = int((~v.apply(math.isfinite)).sum())
        summary.append(join(fmt_count(fin.median()) if len(fin) else "—",
                            f" ({never} never)" if never else ""))
    rows.append([tag("strong", x) if isinstance(x, str) and x else x for x in summary])
    parts += [p("From the ", code("breakeven"), " study: the number of gradient calls N* after which "
                "each method has paid for its preparation against a baseline, "
                "N* = (prepare − baseline prepare) ÷ (baseline per call − method per call); “never” "
                "where the method is not faster per call (hover a number for its times)."),
              scroll(table(["problem", "size"] + [f"{m} vs {b}" for m, b in pairs], rows,
                           num_cols=set(range(1, len(pairs) + 2)), cls="compact"))]
    return parts, n_plots


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
