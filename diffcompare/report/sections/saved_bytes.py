"""The saved_bytes study in the Memory section: how much the graph keeps as the batch grows.

A view of what :mod:`diffcompare.studies.saved_bytes` recorded during the run: its figure of
saved and parameter bytes against the batch, the sentence the seed 000 thread wanted for each
model (table ``answers``), and the bytes per sample of every saved tensor (``per-sample``).
"""
from __future__ import annotations

from ..fmt import fmt_bytes
from ..html import code, join, p, scroll, table, tag
from . import study_figures, study_table

NAME = "saved_bytes"


def part(data):
    """``(Markup, plots drawn)`` for the Memory section."""
    st = data.study(NAME)
    head = tag("h3", "How much the graph keeps as the batch grows", id="saved-bytes")
    frame = st.frame
    if frame is None or frame.empty or "kind" not in frame:
        return join(head, p("The saved_bytes study is ", st.status, (f" ({st.note})" if st.note else ""), ".",
                            class_="muted")), 0
    figures, n = study_figures(data, NAME)
    parts = [head,
             p("From the ", code("saved_bytes"), " study: seed 000 asks whether all batch_size activations are "
               "saved during the forward step. Each seed model is built at several batch sizes (float32) on the "
               "engine and on PyTorch; what each graph saves for backward is counted per node (the engine's ",
               code("node.saved"), ", PyTorch's ", code("_saved_*"), ") and in total, shared memory once "
               "(PyTorch's total through ", code("torch.autograd.graph.saved_tensors_hooks"), ", by storage)."),
             *figures]
    answers = study_table(data, NAME, "answers")
    parts += [p(text) for text in (answers["text"] if answers is not None else ())]
    if "torch" in set(frame["library"]):
        parts += [p(f.get("name", ""), ": ", f.get("measured", ""), class_="muted")
                  for f in st.findings if "engine and torch" in f.get("name", "")]
    rows = []
    per_sample = study_table(data, NAME, "per-sample")
    for r in per_sample.itertuples() if per_sample is not None else ():
        rows.append([tag("span", r.model, class_="name"), r.library, r.node, r.tensor,
                     fmt_bytes(r.per_sample) if r.per_sample else "—",
                     fmt_bytes(r.constant) if r.constant else "—",
                     "; ".join(x for x, on in (("same memory as an earlier node's", r.shared),
                                               ("a parameter", r.parameter)) if on)])
    if rows:
        parts.append(scroll(table(["model", "library", "node", "saved tensor", "bytes per sample",
                                   "bytes whatever the batch", "note"], rows, num_cols={4, 5}, cls="compact")))
    return join(*parts), n
