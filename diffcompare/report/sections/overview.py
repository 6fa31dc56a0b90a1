"""Overview: what ran on what machine, the capability table, headline findings, and the
studies' expected-versus-measured findings."""
from __future__ import annotations

from ..data import EXTRA_STATUSES, FD_FAMILY, backend_fact
from ..fmt import fmt_error, fmt_ratio, fmt_seconds, shorten
from ..html import Markup, badge, code, join, p, scroll, slug, table, tag
from . import Section

STATUS_ORDER = ("ok", "unsupported", "unavailable", "skipped", "timeout", "error", "crashed",
                "unfinished", "missing")


def build(data) -> Section:
    parts = [_what_ran(data), _status_counts(data), _capability(data), _headlines(data),
             _studies(data)]
    return Section("overview", "What ran", join(*parts))


# --------------------------------------------------------------------------- what ran

def _sizes_text(sizes) -> str:
    return ", ".join(str(int(s)) for s in sorted({int(s) for s in sizes if s is not None and s == s}))


def _what_ran(data) -> Markup:
    cells, env = data.cells, data.environment
    if cells.empty:
        return p("This results folder holds no cells: nothing ran yet, or ",
                 code("results.jsonl"), " is missing. Run ", code("diffcompare run --suite smoke"),
                 " to make one.", class_="warn")
    machine = ", ".join(x for x in [
        env.get("cpu_model") and f"{env['cpu_model']}",
        env.get("cpu_count") and f"{env['cpu_count']} CPU cores",
        f"GPU: {env['gpu']}" if env.get("gpu") else "no GPU",
        env.get("python") and f"Python {env['python']}",
        env.get("platform")] if x) or "not recorded (no run.json)"
    dtypes = ", ".join(sorted(set(cells["dtype"].dropna().astype(str))))
    seeds = ", ".join(str(int(s)) for s in sorted(set(cells["seed"].dropna())))
    intro = p(
        "Suite ", tag("strong", data.suite_name or "(unknown)"), " — ",
        (data.suite.get("description") or "").rstrip(". ") + ". ", "Run ", code(data.run_id or "(no run id)"), ": ",
        f"{len(cells)} backend cells (problem × size × seed × method × dtype), "
        f"{len(data.problems)} problems, {len(data.backends)} methods, dtype {dtypes}, seed {seeds}. ",
        "Machine: ", machine, ".")
    rows = []
    for name in data.problems:
        sub = cells[cells["problem"] == name]
        info = data.problem_info(name)
        rows.append([tag("span", name, class_="name"), info.get("description", "(not in this catalog)"),
                     _sizes_text(sub["size"]), info.get("size_meaning", ""),
                     ", ".join(info.get("tags", [])), f"{(sub['status'] == 'ok').sum()} / {len(sub)}"])
    problems = table(["problem", "what it computes", "sizes run", "size counts", "tags", "cells ok"],
                     rows, caption="Problems", cls="compact")
    rows = []
    for b in data.backends:
        sub = cells[cells["backend"] == b]
        fam = sub["family"].iloc[0] if len(sub) else ""
        kind = ("exact (up to rounding)" if len(sub) and bool(sub["exact"].iloc[0])
                else "approximation" if fam == FD_FAMILY
                else "reduced precision (TF32)"
                if backend_fact(b, "accuracy", data.catalog) == "reduced-precision"
                else "")
        rows.append([tag("span", b, class_="name"), fam, kind,
                     f"{(sub['status'] == 'ok').sum()} / {len(sub)}"])
    methods = table(["method", "family", "kind", "cells ok"], rows, caption="Methods", cls="compact")
    return join(tag("h3", "Problems and methods"), intro, scroll(problems), scroll(methods))


def _status_counts(data) -> Markup:
    counts = data.cells["status"].value_counts()
    if counts.empty:
        return Markup("")
    items = []
    for s in list(STATUS_ORDER) + sorted(set(counts.index) - set(STATUS_ORDER)):
        if s in counts:
            items.append(join(badge(s), f" {int(counts[s])}  "))
    return p("Cells by status: ", *items)


# --------------------------------------------------------------------------- capability

def _capability(data) -> Markup:
    cells = data.cells
    if cells.empty:
        return Markup("")
    notes: dict = {}

    def note(status, message) -> int:
        key = (status, shorten(message, 400) or "(no message)")
        return notes.setdefault(key, len(notes) + 1)

    rows = []
    for prob in data.problems:
        sub = cells[cells["problem"] == prob]
        n_sizes = sub["size"].nunique()
        row = [tag("span", prob, class_="name")]
        for b in data.backends:
            c = sub[sub["backend"] == b]
            if c.empty:
                row.append(tag("span", "·", class_="muted", title="not in this suite's grid"))
                continue
            parts = []
            for status in [s for s in STATUS_ORDER if s in set(c["status"])] + sorted(
                    set(c["status"]) - set(STATUS_ORDER)):
                g = c[c["status"] == status]
                label = status
                if n_sizes > 1 and len(set(c["status"])) > 1:
                    label = f"{status} @ {_sizes_text(g['size'])}"
                bits = [badge(status, label)]
                if status != "ok":
                    refs = sorted({note(status, m) for m in g["message"]})
                    bits.append(tag("sup", ",".join(f"[{r}]" for r in refs)))
                parts.append(tag("div", *bits))
            row.append(join(*parts))
        rows.append(row)
    cap = table(["problem \\ method"] + data.backends, rows, cls="capability")
    legend = []
    for (status, message), k in sorted(notes.items(), key=lambda kv: kv[1]):
        legend.append(tag("li", tag("span", f"[{k}] ", class_="muted"), badge(status), " ", message,
                          id=f"note-{k}"))
    explain = p("Every backend cell the suite planned, by its completion row (",
                code("phase == 'cell'"), "): ", badge("ok"), " measured; ",
                badge("unsupported"), " the method refused, with its reason; ",
                badge("timeout"), " / ", badge("error"), " / ", badge("crashed"),
                " it failed; ", badge("unfinished"), " ", EXTRA_STATUSES["unfinished"], "; ",
                badge("missing"), " ", EXTRA_STATUSES["missing"], ". ",
                "Where a method's status differs between sizes, the sizes are given; “·”: the suite did "
                "not pair this method with this problem. Numbers in brackets point to the reasons below.")
    return join(tag("h3", "Capability: which method ran which problem", id="capability"), explain,
                scroll(cap), tag("ol", *legend, class_="notes") if legend else "")


# --------------------------------------------------------------------------- headlines

def _headlines(data) -> Markup:
    ok = data.ok("float64")
    if ok.empty:
        return join(tag("h3", "Headline findings"), p("No float64 cell finished ok, so there is nothing "
                                                      "to compare.", class_="warn"))
    from ...results import winners
    from ...results.winners import method_label

    w = winners(data.cells[data.cells["dtype"] == "float64"])
    rows = []
    for prob in data.problems:
        sub = ok[ok["problem"] == prob]
        if sub.empty:
            rows.append([tag("span", prob, class_="name"), "—", badge("missing", "no ok cell"), "", "", "", ""])
            continue
        # the largest size where exact methods were compared; both criteria at that size
        fast_rows = w[(w["problem"] == prob) & (w["criterion"] == "fastest exact")]
        size = int(fast_rows["size"].max()) if not fast_rows.empty else int(sub["size"].max())
        at = w[(w["problem"] == prob) & (w["size"] == size)].set_index("criterion")
        devices = sub[sub["size"] == size].groupby("backend")["device"].apply(list).to_dict() \
            if "device" in sub else {}

        def named(methods):                  # "jax-jit (gpu)" beside CPU methods
            return ", ".join(method_label(m, devices.get(m, ())) for m in methods)

        if "fastest exact" not in at.index:
            fastest, t_fast, eng, ratio = "no exact method ok", None, None, None
        else:
            fastest, t_fast = named(at.loc["fastest exact", "winners"]), at.loc["fastest exact", "best"]
            e = sub[(sub["size"] == size) & (sub["backend"] == "engine")]["gradient_s"]
            eng = e.iloc[0] if len(e) else None
            ratio = eng / t_fast if eng is not None and t_fast else None
        if "most accurate" not in at.index:
            best_txt, best_val = "no accuracy measured", None
        else:
            best_txt, best_val = named(at.loc["most accurate", "winners"]), at.loc["most accurate", "best"]
        rows.append([tag("span", prob, class_="name"), size, fastest, fmt_seconds(t_fast),
                     fmt_seconds(eng), fmt_ratio(ratio), best_txt, fmt_error(best_val)])
    fastest = table(["problem", "size", "fastest exact (ties listed)", "its gradient time",
                     "engine", "engine ÷ fastest", "most accurate (ties listed)", "its largest ρ"],
                    rows, num_cols={1, 3, 4, 5, 7}, cls="compact")
    fd_rows = []
    fd = ok[(ok["family"] == FD_FAMILY) & ok["error_rho"].notna()]
    for b in [b for b in data.backends if b in set(fd["backend"])]:
        sub = fd[fd["backend"] == b]
        i = sub["error_rho"].idxmax()
        smooth = sub[sub["problem"].map(lambda q: data.problem_info(q).get("smooth", True))]
        j = smooth["error_rho"].idxmax() if not smooth.empty else None
        fd_rows.append([tag("span", b, class_="name"), fmt_error(sub.loc[i, "error_rho"]),
                        f"{sub.loc[i, 'problem']} (size {int(sub.loc[i, 'size'])})",
                        fmt_error(sub.loc[i, "error_rel"]),
                        fmt_error(smooth.loc[j, "error_rho"]) if j is not None else "—",
                        f"{smooth.loc[j, 'problem']} (size {int(smooth.loc[j, 'size'])})" if j is not None else "—",
                        fmt_error(sub["error_rho"].median())])
    fd_table = (table(["finite-difference method", "largest ρ", "where", "its relative error",
                       "largest ρ on smooth problems", "where", "median ρ"], fd_rows,
                      num_cols={1, 3, 4, 6}, cls="compact")
                if fd_rows else p("No finite-difference cell finished ok.", class_="warn"))
    return join(
        tag("h3", "Headline findings", id="headlines"),
        p("Computed by ", code("diffcompare.results.winners"), " from the float64 cells, at the "
          "problem's largest size where exact methods ran, comparing only methods (and seeds) that "
          "all ran there. “Fastest” compares the median time of one gradient call (preparation "
          "excluded: see Speed); methods whose timing interquartile ranges overlap the fastest's are "
          "tied. “Most accurate” compares each method's largest ρ = |x−y| / max(1, |x|+|y|) against "
          "the ", code("reference"), " column (see Accuracy); within 4 ulps of the best is a tie."),
        scroll(fastest),
        p("Largest error of each finite-difference method, over every problem and size "
          "(nonsmooth problems included: at a kink a difference quotient straddles two slopes):"),
        scroll(fd_table))


# --------------------------------------------------------------------------- studies

def _finding_badge(ok) -> Markup:
    if ok is None:
        return badge("no data")
    return badge("holds") if ok else badge("fails", "FAILS")


def studies_block(data, names=None, heading: str = "Studies: expected versus measured") -> Markup:
    names = names or list(data.studies)
    if not names:
        return join(tag("h3", heading),
                    p("No studies in this results folder (a suite lists them under ",
                      code("studies"), ").", class_="muted"))
    summary_rows, blocks = [], []
    for name in names:
        st = data.study(name)
        summary_rows.append([tag("a", st.title, href=f"#study-{slug(name)}"), badge(st.status),
                             sum(1 for f in st.findings if f.get("ok") is True),
                             sum(1 for f in st.findings if f.get("ok") is False),
                             sum(1 for f in st.findings if f.get("ok") is None)])
        rows = [[f.get("name", ""), f.get("expected", ""), f.get("measured", ""),
                 _finding_badge(f.get("ok"))] for f in st.findings]
        body = [tag("h4", st.title, " ", badge(st.status), id=f"study-{slug(name)}")]
        if st.record and st.record.get("expected"):
            body.append(p(tag("em", "Expected: "), st.record["expected"], class_="expected"))
        if st.record is None:
            body.append(p("No findings file: ", st.note or "the study did not run.", class_="warn"))
        elif st.record.get("message"):
            body.append(tag("pre", st.record["message"], class_="message"))
        if rows:
            body.append(scroll(table(["finding", "expected", "measured", "result"], rows,
                                     cls="findings")))
        blocks.append(tag("div", *body, class_="study"))
    summary = table(["study", "status", "hold", "fail", "no data"], summary_rows,
                    num_cols={2, 3, 4}, cls="compact")
    return join(tag("h3", heading, id="studies"),
                p("Each study states a textbook expectation and checks it against what it "
                  "measured; a failed check is a finding too, shown as such."),
                summary, *blocks)


def _studies(data) -> Markup:
    return studies_block(data)
