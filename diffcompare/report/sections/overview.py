"""Overview: what ran on what machine, the capability table, headline findings, and the
studies' expected-versus-measured findings (:func:`overview_data` computes,
``templates/overview.html.j2`` renders)."""
from __future__ import annotations

import re

from ..data import EXTRA_STATUSES, FD_FAMILY, backend_fact
from ..fmt import fmt_error, fmt_ratio, fmt_seconds, shorten
from ..fragments import badge, lines, link, muted, name, refs, table
from ..templates import render
from . import Section

STATUS_ORDER = ("ok", "unsupported", "unavailable", "skipped", "timeout", "error", "crashed",
                "unfinished", "missing")


def overview_data(data) -> dict:
    """What the section shows, as plain values and fragments."""
    return {"ran": _what_ran(data), "statuses": _status_counts(data),
            "capability": _capability(data), "headlines": _headlines(data),
            "studies": studies_data(data), "extra_statuses": EXTRA_STATUSES}


def build(data) -> Section:
    return Section("overview", "What ran", render("overview.html.j2", **overview_data(data)))


def slug(text: str) -> str:
    """An id-safe version of ``text``."""
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "x"


# --------------------------------------------------------------------------- what ran

def _sizes_text(sizes) -> str:
    return ", ".join(str(int(s)) for s in sorted({int(s) for s in sizes if s is not None and s == s}))


def _what_ran(data):
    """The suite, the run and the machine in one paragraph; the problems' and methods' tables
    (None: no cells)."""
    cells, env = data.cells, data.environment
    if cells.empty:
        return None
    machine = ", ".join(x for x in [
        env.get("cpu_model") and f"{env['cpu_model']}",
        env.get("cpu_count") and f"{env['cpu_count']} CPU cores",
        f"GPU: {env['gpu']}" if env.get("gpu") else "no GPU",
        env.get("python") and f"Python {env['python']}",
        env.get("platform")] if x) or "not recorded (no run.json)"
    rows = []
    for prob in data.problems:
        sub = cells[cells["problem"] == prob]
        info = data.problem_info(prob)
        rows.append([name(prob), info.get("description", "(not in this catalog)"),
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
        rows.append([name(b), fam, kind, f"{(sub['status'] == 'ok').sum()} / {len(sub)}"])
    return {"suite": data.suite_name or "(unknown)",
            "description": (data.suite.get("description") or "").rstrip(". ") + ". ",
            "run_id": data.run_id or "(no run id)", "n_cells": len(cells),
            "n_problems": len(data.problems), "n_methods": len(data.backends),
            "dtypes": ", ".join(sorted(set(cells["dtype"].dropna().astype(str)))),
            "seeds": ", ".join(str(int(s)) for s in sorted(set(cells["seed"].dropna()))),
            "machine": machine, "problems": problems,
            "methods": table(["method", "family", "kind", "cells ok"], rows, caption="Methods",
                             cls="compact")}


def _status_counts(data) -> list:
    """``[(badge, count)]``: the cells by status, in :data:`STATUS_ORDER` then the rest."""
    counts = data.cells["status"].value_counts()
    return [(badge(s), int(counts[s])) for s in list(STATUS_ORDER) + sorted(set(counts.index) - set(STATUS_ORDER))
            if s in counts]


# --------------------------------------------------------------------------- capability

def _capability(data):
    """problem × method: each status the cells had (at which sizes, where they differ) with
    numbered notes on why; ``{"table", "notes"}``, None without cells."""
    cells = data.cells
    if cells.empty:
        return None
    notes: dict = {}

    def note(status, message) -> int:
        key = (status, shorten(message, 400) or "(no message)")
        return notes.setdefault(key, len(notes) + 1)

    rows = []
    for prob in data.problems:
        sub = cells[cells["problem"] == prob]
        n_sizes = sub["size"].nunique()
        row = [name(prob)]
        for b in data.backends:
            c = sub[sub["backend"] == b]
            if c.empty:
                row.append(muted("·", title="not in this suite's grid"))
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
                    numbers = sorted({note(status, m) for m in g["message"]})
                    bits.append(refs(numbers))
                parts.append(bits)
            row.append(lines(*parts))
        rows.append(row)
    return {"table": table(["problem \\ method"] + data.backends, rows, cls="capability"),
            "notes": [{"n": k, "badge": badge(status), "message": message}
                      for (status, message), k in sorted(notes.items(), key=lambda kv: kv[1])]}


# --------------------------------------------------------------------------- headlines

def _headlines(data):
    """The fastest exact and the most accurate method per problem, and each finite-difference
    method's largest error: ``{"fastest", "fd"}`` tables, None where no float64 cell is ok."""
    ok = data.ok("float64")
    if ok.empty:
        return None
    from ...results import winners
    from ...results.winners import method_label

    w = winners(data.cells[data.cells["dtype"] == "float64"])
    rows = []
    for prob in data.problems:
        sub = ok[ok["problem"] == prob]
        if sub.empty:
            rows.append([name(prob), "—", badge("missing", "no ok cell"), "", "", "", ""])
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
        rows.append([name(prob), size, fastest, fmt_seconds(t_fast),
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
        fd_rows.append([name(b), fmt_error(sub.loc[i, "error_rho"]),
                        f"{sub.loc[i, 'problem']} (size {int(sub.loc[i, 'size'])})",
                        fmt_error(sub.loc[i, "error_rel"]),
                        fmt_error(smooth.loc[j, "error_rho"]) if j is not None else "—",
                        f"{smooth.loc[j, 'problem']} (size {int(smooth.loc[j, 'size'])})" if j is not None else "—",
                        fmt_error(sub["error_rho"].median())])
    return {"fastest": fastest,
            "fd": table(["finite-difference method", "largest ρ", "where", "its relative error",
                         "largest ρ on smooth problems", "where", "median ρ"], fd_rows,
                        num_cols={1, 3, 4, 6}, cls="compact") if fd_rows else None}


# --------------------------------------------------------------------------- studies

def _finding_badge(ok) -> dict:
    if ok is None:
        return badge("no data")
    return badge("holds") if ok else badge("fails", "FAILS")


def studies_data(data, names=None):
    """Each study (``names``, default all in ``data``'s folder) with its title, status,
    expectation, message and findings (``studies``), and a ``summary`` table of its counts of
    findings that hold, fail and have no data; None without studies."""
    out = []
    for study in names or list(data.studies):
        st = data.study(study)
        record = st.record
        out.append({"id": f"study-{slug(study)}", "title": st.title, "badge": badge(st.status),
                    "hold": sum(1 for f in st.findings if f.get("ok") is True),
                    "fail": sum(1 for f in st.findings if f.get("ok") is False),
                    "no_data": sum(1 for f in st.findings if f.get("ok") is None),
                    "recorded": record is not None,
                    "expected": (record or {}).get("expected"),
                    "note": st.note or "the study did not run.",
                    "message": (record or {}).get("message"),
                    "findings": table(["finding", "expected", "measured", "result"],
                                      [[f.get("name", ""), f.get("expected", ""), f.get("measured", ""),
                                        _finding_badge(f.get("ok"))] for f in st.findings],
                                      cls="findings") if st.findings else None})
    if not out:
        return None
    summary = [[link(s["title"], f"#{s['id']}"), s["badge"], s["hold"], s["fail"], s["no_data"]] for s in out]
    return {"studies": out, "summary": table(["study", "status", "hold", "fail", "no data"], summary,
                                             num_cols={2, 3, 4}, cls="compact")}
