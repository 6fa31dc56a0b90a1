"""The answers block: winners per problem and size, ties kept, rendered first."""
from __future__ import annotations

import pandas as pd

from diffcompare.report.answers import COLUMNS, winners_for_report
from diffcompare.report.sections import answers


class _Data:
    def __init__(self, frame):
        self.frame = frame

    def ok(self, dtype=None):
        return self.frame


def _rows():
    base = dict(problem="rosenbrock", size=8, dtype="float64", memory_source="tracemalloc")
    return pd.DataFrame([
        dict(base, backend="engine", family="engine", gradient_s=1.00e-3, gradient_iqr_s=0.2e-3,
             error_rho=1e-16, peak_bytes=20_000),
        dict(base, backend="torch", family="torch", gradient_s=1.05e-3, gradient_iqr_s=0.1e-3,
             error_rho=3e-16, peak_bytes=50_000),
        dict(base, backend="sympy", family="symbolic", gradient_s=2.0e-3, gradient_iqr_s=0.1e-3,
             error_rho=0.0, peak_bytes=19_000),
        dict(base, backend="fd-central", family="finite-difference", gradient_s=0.1e-3,
             gradient_iqr_s=0.0, error_rho=1e-10, peak_bytes=2_000),
    ])


def test_winners_keep_ties_and_leave_approximations_out_of_fastest_exact():
    w = winners_for_report(_Data(_rows())).set_index("criterion")
    assert list(winners_for_report(_Data(_rows())).columns) == COLUMNS
    # fd-central is faster but approximate; engine and torch overlap within their IQRs
    assert w.loc["fastest exact", "winners"] == ("engine", "torch")
    assert w.loc["fastest exact", "value"] == 1.00e-3 and w.loc["fastest exact", "unit"] == "s"
    # 0, 1e-16 and 3e-16 are all at rounding level (4 ulp); 1e-10 is not
    assert w.loc["most accurate", "winners"] == ("sympy", "engine", "torch")
    assert w.loc["least memory", "winners"] == ("fd-central",)
    assert w.loc["least memory", "value"] == 2_000


def test_answers_section_renders_a_given_winners_frame():
    frame = pd.DataFrame([["rosenbrock", 8, "float64", "fastest exact", ("engine", "torch"), 1e-3, "s", ""]],
                         columns=COLUMNS)
    body = str(answers.build(_Data(_rows()), winners=frame).body)
    assert "engine</span><span class=\"tie\"> = </span>" in body and "1 ms" in body
    assert 'href="#seed-003"' in body and 'href="#accuracy"' in body
