"""Build the report: ``build_report(results_dir, out_path)`` writes one offline HTML file.

>>> import tempfile, pathlib
>>> out = build_report(tempfile.mkdtemp(), pathlib.Path(tempfile.mkdtemp()) / "r.html", seeds=False)
>>> out.read_text().startswith("<!DOCTYPE html>")
True
"""
from __future__ import annotations

from pathlib import Path

from . import data as _data
from .fragments import code
from .sections import PAGE, Section, builder


def build_sections(report_data, include_seeds: bool = True) -> list:
    """Every section of :data:`~diffcompare.report.sections.PAGE`, in its order, with its title."""
    out = []
    for sid, title, _ in PAGE:
        if sid == "seeds" and not include_seeds:
            continue
        try:
            section = builder(sid)(report_data)
            out.append(Section(sid, title, section.body, section.plots))
        except Exception as exc:        # one broken section must not hide the others
            import traceback

            from .templates import render
            out.append(Section(sid, title, render(
                "broken.html.j2", error=f"{type(exc).__name__}: {exc}\n\n{traceback.format_exc(limit=4)}")))
    return out


def render(results_dir, seeds: bool = True) -> str:
    """The report of ``results_dir`` as HTML text (the same data gives the same text)."""
    from .page import page

    d = _data.load(results_dir)
    title = f"diffcompare report — {d.suite_name}" if d.suite_name else "diffcompare report"
    subtitle = ("Which way of computing derivatives to use, and how autograd works: the engine, "
                "SymPy, finite differences, JAX and torch on the same problems — accuracy, speed "
                "and memory.")
    chips = _chips(results_dir, d)
    footer = ["Written by ", code("diffcompare report"), " from ", code("results.jsonl"), ", ",
              code("run.json"), ", ", code("catalog.json"), " and ", code("studies/"), " alone. "
              "Self-contained: no scripts, fonts or images are fetched."]
    return page(title, subtitle, build_sections(d, include_seeds=seeds), footer, chips)


def _chips(results_dir, d) -> list:
    """The facts under the title: folder, run, how much ran, where."""
    env = d.environment
    cells = d.cells
    n_ok = int((cells["status"] == "ok").sum()) if len(cells) else 0
    return [f"results: {Path(results_dir).name}", f"run {d.run_id or '—'}",
            f"{len(d.problems)} problem{'' if len(d.problems) == 1 else 's'} × {len(d.backends)} methods", f"{n_ok} of {len(cells)} cells ok",
            f"{env.get('cpu_count', '?')} CPU cores" + (f", GPU {env['gpu']}" if env.get("gpu") else ", no GPU")]


def build_report(results_dir, out_path, seeds: bool = True) -> Path:
    """Write the report of ``results_dir`` to ``out_path`` (folders created) and return it."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise FileNotFoundError(f"results folder {results_dir} does not exist; run "
                                "`diffcompare run --suite quick --results <folder>` first.")
    text = render(results_dir, seeds=seeds)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out_path)
    return out_path
