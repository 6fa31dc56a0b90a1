"""The demo: the seed threads' examples (:mod:`diffcompare.seeds`), their graphs and outputs.

Prints, for each example, the graph the engine recorded (nodes, saved tensors and their
bytes) and every line it recorded next to PyTorch's (when torch is installed), writes each
graph as DOT and SVG for both libraries, and an ``index.html`` that is the report's seed
section on its own page, in the report's style.  ``diffcompare demo`` runs it.
"""
from __future__ import annotations

import pathlib

from . import seeds
from .viz.libs import libs
from .engine import graph


def _print_example(example, records, echo):
    echo(f"== {example.key}: {example.doc}")
    for g in records["engine"].graphs:
        echo(graph.summary_text(g.root, names=g.names))
    for row in seeds.side_by_side(example, records):
        flag = "" if row.same in (True, None) else "   <-- differs" + (f" ({row.note})" if row.note else "")
        theirs = "" if row.torch is None else f"   | torch: {row.torch.splitlines()[0]}"
        echo(f"  {row.label}: {row.engine.splitlines()[0]}{theirs}{flag}")
    echo("")


def _write_graphs(example, records, out_dir) -> list:
    written = []
    for lib_name, rec in records.items():
        for k, g in enumerate(rec.graphs):
            stem = out_dir / f"{example.key}-{k}-{lib_name}"
            for ext, text in (("dot", g.dot), ("svg", g.svg)):
                path = stem.with_suffix(f".{ext}")
                path.write_text(text, encoding="utf-8")
                written.append(path)
    return written


def run(out_dir: str | pathlib.Path = "reports/engine-demo", echo=print) -> pathlib.Path:
    """Run every seed example, print it, write DOT/SVG drawings and an index page."""
    from .report.html import code, join
    from .report.page import page
    from .report.sections import seeds as seed_section

    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for example in seeds.EXAMPLES:
        records = {lib.name: seeds.run(example, lib) for lib in libs()}
        _print_example(example, records, echo)
        _write_graphs(example, records, out_dir)
    index = out_dir / "index.html"
    section = seed_section.build()
    index.write_text(page("diffcompare demo — the seed questions",
                          join("The forum threads' examples on diffcompare's engine and on PyTorch, side by "
                               "side; the graphs are also in this folder as DOT and SVG."),
                          [section], join("Written by ", code("diffcompare demo"), ". Self-contained: no "
                                          "scripts, fonts or images are fetched.")), encoding="utf-8")
    echo(f"Graph drawings written to {out_dir}/ (open {index})")
    return index
