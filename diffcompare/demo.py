"""The demo: the seed threads' examples (:mod:`diffcompare.seeds`), their graphs and outputs.

Prints each seed thread's own code, statement by statement, with what it printed on the
engine's torch face and on PyTorch; then, for each closer look, the graph the engine
recorded (nodes, saved tensors and their bytes) and every line it recorded next to
PyTorch's (when torch is installed), whole arrays included, row under row; writes each
graph as DOT and SVG for both libraries, and an ``index.html`` that is the report's seed
section on its own page, in the report's style, followed by an evaluation trace (the classic
primal / tangent / adjoint table of AD, :mod:`diffcompare.engine.evaluation_trace`).  ``diffcompare demo`` runs it.
"""
from __future__ import annotations

import pathlib

from . import seeds
from .viz.libs import libs
from .engine import graph


def _hang(text: str, indent: int) -> str:
    """``text`` with every line after the first indented by ``indent``: a whole array,
    its rows under each other."""
    lines = text.split("\n")
    return "\n".join([lines[0]] + [" " * indent + line for line in lines[1:]])


def _print_pair(head: str, engine: str, torch: str | None, same, note: str, echo):
    """A value on the engine and on torch, whole (every row of a multi-line array, each
    under the one above): once when the two agree, both and a flag when they differ."""
    if same in (True, None):
        echo(f"{head}{_hang(engine, len(head))}" + ("   (torch: the same)" if same else ""))
        return
    flag = "   <-- differs" + (f" ({note})" if note else "")
    engine, torch = engine or "(prints nothing)", torch or "(prints nothing)"
    if "\n" not in engine and "\n" not in (torch or ""):
        echo(f"{head}{engine}   | torch: {torch}{flag}")
        return
    echo(f"{head}engine: {_hang(engine, len(head) + 8)}")
    echo(f"{' ' * len(head)}torch:  {_hang(torch or '', len(head) + 8)}{flag}")


def _print_example(example, records, echo):
    echo(f"== {example.key}: {example.doc}")
    for g in records["engine"].graphs:
        echo(graph.summary_text(g.root, names=g.names))
    for row in seeds.side_by_side(example, records):
        _print_pair(f"  {row.label}: ", row.engine, row.torch, row.same, row.note, echo)
    echo("")


def _print_code(block, runs, echo):
    """A thread's code block, statement by statement, with what each printed."""
    echo(f"== {block.key}: {block.title} (the thread's code{', as a >>> session' if block.repl else ''})")
    for row in seeds.compare_code(block, runs):
        mark = "   " if row.part == "thread" else f"   [ours: {row.part}] "
        prompt = ">>> " if block.repl and row.part == "thread" else ""
        for k, line in enumerate(row.source.split("\n")):
            echo(f"{mark}{(prompt if k == 0 else '... ' if prompt else '')}{line}")
        if row.engine or (row.torch or "") or row.same is False:
            _print_pair("      -> ", row.engine, row.torch, row.same, row.note, echo)
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
    from .report.fragments import code
    from .report.page import page
    from .report.sections import seeds as seed_section
    from .studies import seeds as seed_study
    from .report.sections import trace as trace_section
    from .engine.evaluation_trace import BAYDIN_INPUTS, baydin, evaluation_trace

    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for block in seeds.THREAD_CODE:
        _print_code(block, seeds.run_blocks(block), echo)
    for example in seeds.EXAMPLES:
        records = {lib.name: seeds.run(example, lib) for lib in libs()}
        _print_example(example, records, echo)
        _write_graphs(example, records, out_dir)
    echo(evaluation_trace(baydin, BAYDIN_INPUTS).text())
    echo("")
    index = out_dir / "index.html"
    section = seed_section.build(demo_link=False, record=seed_study.record())
    index.write_text(page("diffcompare demo — the seed questions",
                          "The forum threads' examples on diffcompare's engine and on PyTorch, side by "
                          "side; the graphs are also in this folder as DOT and SVG.",
                          [section, trace_section.build()],
                          ["Written by ", code("diffcompare demo"), ". Self-contained: no scripts, fonts or "
                           "images are fetched."]), encoding="utf-8")
    echo(f"Graph drawings written to {out_dir}/ (open {index})")
    return index
