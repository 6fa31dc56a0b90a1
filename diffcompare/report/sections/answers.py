"""Answers first: which method to pick, per problem and size, and links to the questions.

The winners are the results layer's (:func:`diffcompare.results.winners`); this module
formats them and renders ``templates/answers.html.j2``.
"""
from __future__ import annotations

from ..answers import CRITERIA, answer_rows, tie_rules
from ..fmt import fmt_bytes, fmt_error, fmt_seconds
from ..plots import method_style
from ..templates import render
from . import PAGE, Section

_FORMAT = {"s": fmt_seconds, "ρ": lambda v: f"ρ {fmt_error(v)}", "bytes": fmt_bytes}

SHOWN = 3          # tied winners with a swatch in a cell; the rest printed as "= also tied: …"
ALL_TIED_AFTER = 3  # more than this many further ties, all of them: "every other method compared"

#: the evidence the answers link to: every section after the seed questions
EVIDENCE = PAGE[[sid for sid, _, _ in PAGE].index("seeds") + 1:]


def build(data, winners=None) -> Section:
    """``winners``: a winners frame (default: the results layer's, ``data.winners()``)."""
    from ...results.trust import flag_summary

    catalog = getattr(data, "catalog", None)

    frame = data.winners() if winners is None else winners
    rows = []
    for r in answer_rows(frame):
        meaning = (data.problem_info(r["problem"]) if data is not None else {}).get("size_meaning")
        cells = {c: {"winners": [{"name": w, "colour": method_style(w, None, catalog).colour}
                                 for w in cell["winners"]],
                     # every method compared tied, and naming the rest would take lines
                     "all_tied": len(cell["winners"]) == cell["compared"] > SHOWN + ALL_TIED_AFTER,
                     "value": _FORMAT.get(cell["unit"], str)(cell["value"]),
                     "flagged": cell["flagged"]}
                 for c, cell in r["cells"].items()}
        rows.append(dict(r, cells=cells, meaning=meaning if meaning and meaning != "n" else None))
    lead = ("What this run found, per problem and size: the fastest method among the exact ones (AD and "
            "symbolic; finite differences approximate), the most accurate method of all, and the one "
            "whose gradient needed the least memory. Methods joined by “=” are tied: their difference "
            "is within the measurement's noise; every tied method is named.")
    body = render("answers.html.j2", rows=rows, criteria=CRITERIA, lead=lead, shown=SHOWN,
                  show_dtype=len({r["dtype"] for r in rows}) > 1,
                  tie_note="Ties — " + "; ".join(tie_rules(frame)) + ". Methods are compared only on "
                           "the cells they all ran. Time is the median of one gradient call after "
                           "preparation; ρ = |x−y| / max(1, |x|+|y|) against the reference named in "
                           "Accuracy.",
                  flag_summary=flag_summary(data.cells) if data is not None else "",
                  questions=_questions(data),
                  evidence=[{"id": i, "title": t, "what": w} for i, t, w in EVIDENCE])
    return Section("answers", "Answers", body)


def _questions(data) -> list:
    """The seed questions as the seed study recorded them (``[]`` where it did not: the seed
    section then says how to record them)."""
    study = data.study("seeds") if data is not None else None
    record = (study.data if study is not None else None) or {}
    return [{"seed": k, "text": v} for k, v in (record.get("questions") or {}).items()]
