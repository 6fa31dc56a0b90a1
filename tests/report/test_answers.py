"""The answers block: the results layer's winners per problem and size, ties kept, rendered first."""
from __future__ import annotations

import pandas as pd

from diffcompare.report.answers import answer_rows, tie_rules
from diffcompare.report.sections import answers
from diffcompare.results import Study, winners


class _Data:
    catalog: dict = {}

    def __init__(self, frame):
        self.cells = frame

    def winners(self, **kw):
        return winners(self.cells, **kw)

    def problem_info(self, name):
        return {}

    def study(self, name):
        questions = {"000": "q0", "003": "q3", "sym": "symbolic?"}
        return Study(name, None, None, data={"questions": questions} if name == "seeds" else None)


def _rows():
    base = dict(problem="rosenbrock", size=8, seed=0, dtype="float64", status="ok",
                memory_source="memray-native")
    return pd.DataFrame([
        dict(base, backend="engine", family="engine", gradient_s=1.00e-3, gradient_q1_s=0.9e-3,
             gradient_q3_s=1.1e-3, error_rho=1e-16, peak_bytes=20_000),
        dict(base, backend="torch", family="torch", gradient_s=1.05e-3, gradient_q1_s=1.0e-3,
             gradient_q3_s=1.1e-3, error_rho=3e-16, peak_bytes=50_000),
        dict(base, backend="sympy", family="symbolic", gradient_s=2.0e-3, gradient_q1_s=1.95e-3,
             gradient_q3_s=2.05e-3, error_rho=0.0, peak_bytes=19_000),
        dict(base, backend="fd-central", family="finite-difference", gradient_s=0.1e-3,
             gradient_q1_s=0.1e-3, gradient_q3_s=0.1e-3, error_rho=1e-10, peak_bytes=2_000),
    ])


def test_answer_rows_arrange_the_results_layers_winners():
    rows = answer_rows(winners(_rows()))
    assert len(rows) == 1 and rows[0]["problem"] == "rosenbrock" and rows[0]["size"] == 8
    cells = rows[0]["cells"]
    # fd-central is faster but approximate; engine and torch overlap within their IQRs
    assert cells["fastest exact"]["winners"] == ["engine", "torch"]
    assert cells["fastest exact"]["value"] == 1.00e-3 and cells["fastest exact"]["unit"] == "s"
    assert cells["most accurate"]["winners"][0] == "sympy" and "fd-central" not in cells["most accurate"]["winners"]
    assert cells["least memory"]["winners"] == ["fd-central"] and cells["least memory"]["unit"] == "bytes"
    assert any(rule.startswith("fastest exact: tied when the interquartile ranges")
               for rule in tie_rules(winners(_rows())))


def test_answers_section_renders_the_winners_first():
    body = str(answers.build(_Data(_rows())).body)
    assert "engine</span><span class=\"tie\"> = </span>" in body and "1 ms" in body
    assert 'href="#seed-003"' in body and 'href="#accuracy"' in body
    assert "Methods are compared only on the cells they all ran" in body


def test_every_tie_is_printed_not_only_on_hover():
    frame = _rows().assign(peak_bytes=20_000)          # all four tie on memory
    body = str(answers.build(_Data(frame)).body)
    least = body.split("</tr>")[1].split("<td>")[-1]  # the last cell of the row: least memory
    assert least.count('class="method"') == 3 and '<span class="more"> = also tied: fd-central</span>' in least
    assert "title=" not in body                        # nothing hides in a tooltip


def test_when_every_method_compared_ties_the_cell_says_so_in_one_line():
    """Rounding-level accuracy and interpreter-sized memory tie most methods: the cell says
    that every other method compared ties, instead of naming a dozen (the first three keep
    their swatches); a partial tie keeps every name."""
    from diffcompare.report.sections.answers import ALL_TIED_AFTER, SHOWN

    n = SHOWN + ALL_TIED_AFTER + 1
    names = [f"m{i}" for i in range(n)]
    frame = pd.DataFrame([{"problem": "p", "size": 4, "dtype": "float64", "criterion": c,
                           "measure": m, "winners": tuple(names), "best": 1.0, "tolerance": "t",
                           "compared": tuple(names) + extra, "seeds": (0,), "note": ""}
                          for c, m, extra in (("fastest exact", "gradient_s", ()),
                                              ("most accurate", "error_rho", ("m-last",)),
                                              ("least memory", "peak_bytes", ()))])
    body = str(answers.build(None, winners=frame).body)
    assert body.count(f"every other method compared (all {n} tie)") == 2
    assert "also tied: " + ", ".join(names[SHOWN:]) in body      # most accurate: not all tied
