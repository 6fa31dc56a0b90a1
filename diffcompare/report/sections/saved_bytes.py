"""The saved_bytes study in the Memory section: how much the graph keeps as the batch grows.

A view of what :mod:`diffcompare.studies.saved_bytes` recorded during the run: its figure of
saved and parameter bytes against the batch, the sentence the seed 000 thread wanted for each
model (table ``answers``), and the bytes per sample of every saved tensor (``per-sample``);
``templates/saved_bytes.html.j2`` renders it.
"""
from __future__ import annotations

from ..fmt import fmt_bytes
from ..fragments import name, table
from ..templates import render
from . import study_figures, study_table

NAME = "saved_bytes"


def saved_bytes_data(data) -> tuple[dict, int]:
    """What the part shows, as plain values and fragments, and how many plots it drew."""
    st = data.study(NAME)
    frame = st.frame
    if frame is None or frame.empty or "kind" not in frame:
        return {"status": st.status, "note": st.note}, 0
    figures, n = study_figures(data, NAME)
    answers = study_table(data, NAME, "answers")
    rows = []
    per_sample = study_table(data, NAME, "per-sample")
    for r in per_sample.itertuples() if per_sample is not None else ():
        rows.append([name(r.model), r.library, r.node, r.tensor,
                     fmt_bytes(r.per_sample) if r.per_sample else "—",
                     fmt_bytes(r.constant) if r.constant else "—",
                     "; ".join(x for x, on in (("same memory as an earlier node's", r.shared),
                                               ("a parameter", r.parameter)) if on)])
    return {"figures": figures,
            "answers": list(answers["text"]) if answers is not None else [],
            "findings": ([f"{f.get('name', '')}: {f.get('measured', '')}" for f in st.findings
                          if "engine and torch" in f.get("name", "")]
                         if "torch" in set(frame["library"]) else []),
            "table": table(["model", "library", "node", "saved tensor", "bytes per sample",
                            "bytes whatever the batch", "note"], rows, num_cols={4, 5}, cls="compact")
            if rows else None}, n


def part(data):
    """``(Markup, plots drawn)`` for the Memory section."""
    d, n = saved_bytes_data(data)
    return render("saved_bytes.html.j2", **d), n
