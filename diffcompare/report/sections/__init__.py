"""The report's sections; each module has ``build(data) -> Section``, and :data:`PAGE` lists
them, in page order, once.  A section computes plain data (strings, numbers and
:mod:`~diffcompare.report.fragments`) and renders its template, ``templates/<id>.html.j2``."""
from __future__ import annotations

import dataclasses

from markupsafe import Markup

from ..fragments import code, figure


@dataclasses.dataclass
class Section:
    id: str                 # the anchor, e.g. "overview"
    title: str              # the heading and the navigation entry
    body: Markup            # the section's HTML (already safe)
    plots: int = 0          # how many plots it holds (the page check counts them)


#: The page's sections in order, each ``(id, title, what it holds)``: the id is its module
#: here and its anchor; the answers link to the evidence (every section after the seeds) with
#: the title and what it holds. Answers first, then the seed questions, then the evidence
#: (what ran, accuracy, speed, operators, memory), then the machine.
PAGE = (("answers", "Answers", "which method to pick, per problem and size"),
        ("seeds", "Seed questions", "the forum threads' code on the engine and on PyTorch"),
        ("overview", "What ran", "the problems, methods, the capability table and the studies' findings"),
        ("accuracy", "Accuracy", "errors against 50-digit references, finite-difference steps"),
        ("speed", "Speed", "gradient time against size, gradient ÷ function, preparation"),
        ("operators", "Operators", "Jacobians, Hessians and HVPs, dense and sparse: which "
                                   "method computes which, their time, colours and error"),
        ("memory", "Memory", "peak memory of one gradient, saved graphs, expression swell"),
        ("environment", "Environment", "the machine and library versions"))


def builder(section_id: str):
    """The ``build`` function of section ``section_id`` (its module here)."""
    import importlib

    return importlib.import_module(f"{__name__}.{section_id}").build


def size_labels(data) -> dict:
    """problem -> x-axis label of its size (``size (batch)``, ``size (k steps)``, ...)."""
    out = {}
    for p in data.problems:
        meaning = data.problem_info(p).get("size_meaning")
        # "size" everywhere; its meaning in parentheses when it is more than a count ("n")
        out[p] = f"size ({meaning})" if meaning and meaning != "n" else "size"
    return out


def study_figures(data, name: str, keys=None) -> tuple[list, int]:
    """The figures study ``name`` recorded in ``data``'s folder (those of ``keys``, in that
    order, when given) as :func:`~diffcompare.report.fragments.figure` data, each drawn by the
    plot it names with the caption it declares, and how many were drawn; where there is none to
    draw, ``{"why": ...}``: one line that says why (the ``figures`` macro shows both)."""
    from .. import plots

    st = data.study(name)
    if not st.records_views:
        why = (f"The {name} study's record was written before runs recorded a study's figures: run it again"
               if st.record is not None and st.status not in ("error", "timeout", "crashed") else
               f"The {name} study is {st.status}{f' ({st.note})' if st.note else ''}: run it")
        return [{"why": [why, " (", code(f"python -m diffcompare.studies {name} <results-dir>"),
                         ") to draw its figures."]}], 0
    views = {v.key: v for v in st.figures}
    out, n = [], 0
    for key in keys if keys is not None else list(views):
        view = views.get(key)
        if view is None:
            out.append({"why": f"The {name} study recorded no figure {key!r}."})
            continue
        svg = plots.study_figure(view, data.catalog)
        n += plots.drawn(svg)
        out.append(figure(svg, view.caption, empty=f"the {name} study has no rows for it "
                                                   f"({st.status}{'; ' + st.note if st.note else ''})."))
    return out, n


def study_table(data, name: str, key: str):
    """The derived table ``key`` study ``name`` recorded (a DataFrame), or None."""
    return data.study(name).tables.get(key)
