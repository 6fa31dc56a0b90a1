"""The HTML report: one offline page of tables, plots and engine graph drawings.

``diffcompare report <results-dir> -o reports/<name>.html`` (or :func:`build_report`)
reads a results folder (``results.jsonl``, ``run.json``, ``catalog.json``, ``studies/``) and
nothing else (no problem or method is looked up, nothing is run) and writes a single
HTML file that opens from disk with nothing fetched: inline CSS, matplotlib plots as
inline SVG (reproducible: the same data gives the same file), and the engine's graph
drawings.  Sections: overview (what ran, the capability table, headline findings, the
studies' findings), accuracy, speed, memory, the seed questions (as the seed study
recorded them) and the environment.

Modules: :mod:`.data` loads and shapes the results, :mod:`.plots` draws (via
:mod:`.svg`), :mod:`.sections` holds one module per section (it computes plain data:
strings formatted by :mod:`.fmt`, and :mod:`.fragments`) and ``templates/`` one Jinja2
template per section (their shared pieces in ``macros.html.j2``), :mod:`.page` the page
template, :mod:`.build` puts them together.
"""
from .build import build_report, render

__all__ = ["build_report", "render"]
