"""The saved_bytes study in the Memory section: how much the graph keeps as the batch grows.

A view of ``<results>/studies/saved_bytes.csv`` (written by :mod:`diffcompare.studies.saved_bytes`
during the run): the figure of saved and parameter bytes against the batch, the sentence the
seed 000 thread wanted for each model, and the bytes per sample of every saved tensor.
"""
from __future__ import annotations

from .. import plots
from ..fmt import fmt_bytes
from ..html import Markup, code, figure, join, p, scroll, table, tag


def part(data):
    """``(Markup, plots drawn)`` for the Memory section."""
    from ...studies import saved_bytes as study

    st = data.study(study.NAME)
    head = tag("h3", "How much the graph keeps as the batch grows", id="saved-bytes")
    frame = st.frame
    if frame is None or frame.empty or "kind" not in frame:
        return join(head, p("The saved_bytes study is ", st.status, (f" ({st.note})" if st.note else ""), ".",
                            class_="muted")), 0
    totals = study.totals(frame)
    svg = plots.saved_bytes_vs_batch(totals)
    parts = [head,
             p("From the ", code("saved_bytes"), " study: seed 000 asks whether all batch_size activations are "
               "saved during the forward step. Each seed model is built at several batch sizes (float32) on the "
               "engine and on PyTorch; what each graph saves for backward is counted per node (the engine's ",
               code("node.saved"), ", PyTorch's ", code("_saved_*"), ") and in total, shared memory once "
               "(PyTorch's total through ", code("torch.autograd.graph.saved_tensors_hooks"), ", by storage)."),
             figure(svg, "Bytes the graph saves for backward and the parameters' bytes against the batch size "
                         "(log-log), per seed model; the engine solid, PyTorch dashed.",
                    empty="the saved_bytes study has fewer than two batch sizes.")]
    models = list(dict.fromkeys(frame["model"]))
    libraries = [lib for lib in ("engine", "torch") if lib in set(frame["library"])]
    parts += [p(study.sentence(frame, m, lib)) for m in models for lib in libraries[:1]]
    if "torch" in libraries:
        parts += [p(f.get("name", ""), ": ", f.get("measured", ""), class_="muted")
                  for f in st.findings if "engine and torch" in f.get("name", "")]
    rows = []
    for m in models:
        for lib in libraries:
            for r in study.per_sample(frame, m, lib).itertuples():
                rows.append([tag("span", m, class_="name"), lib, r.node, r.tensor,
                             fmt_bytes(r.per_sample) if r.per_sample else "—",
                             fmt_bytes(r.constant) if r.constant else "—",
                             "; ".join(x for x, on in (("same memory as an earlier node's", r.shared),
                                                       ("a parameter", r.parameter)) if on)])
    if rows:
        parts.append(scroll(table(["model", "library", "node", "saved tensor", "bytes per sample",
                                   "bytes whatever the batch", "note"], rows, num_cols={4, 5}, cls="compact")))
    return join(*parts), int(plots.drawn(svg))
