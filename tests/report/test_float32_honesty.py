"""A float32 cell a method computed in float64 is never shown as a float32 result."""
from __future__ import annotations

import pandas as pd

from diffcompare.report.sections.accuracy import _grid_float32
from diffcompare.report.templates import render_string


class _Data:
    def __init__(self, cells):
        self.cells = cells

    def ok(self, dtype=None):
        return self.cells[self.cells["status"] == "ok"]


def test_upcast_float32_cells_say_what_they_computed_in():
    base = dict(problem="rosenbrock", size=4, status="ok")
    cells = pd.DataFrame([
        dict(base, backend="torch", dtype="float64", error_rho=1e-16, compute_dtype="float64"),
        dict(base, backend="torch", dtype="float32", error_rho=3e-8, compute_dtype="float32"),
        dict(base, backend="sympy", dtype="float64", error_rho=0.0, compute_dtype="float64"),
        dict(base, backend="sympy", dtype="float32", error_rho=1e-16, compute_dtype="float64"),
    ])
    html = str(render_string('{% import "macros.html.j2" as m %}{{ m.table(t) }}',
                             t=_grid_float32(_Data(cells))["table"]))
    assert html.count("computed in float64") == 1
    sympy_row = html[html.index(">sympy<"):]
    assert "computed in float64" in sympy_row.split("</tr>")[0]
