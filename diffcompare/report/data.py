"""The report's view of a results folder: everything comes from :mod:`diffcompare.results`.

Kept so report code can say ``from ..data import ...``; nothing is defined here.
``load(dir)`` is :func:`diffcompare.results.load` (a :class:`~diffcompare.results.Results`,
whose ``cells`` table has one row per backend cell, every status kept).

>>> import tempfile
>>> d = load(tempfile.mkdtemp())
>>> len(d.cells), d.suite_name
(0, None)
"""
from __future__ import annotations

from ..results import (CELL, CELLS_TABLE_COLUMNS, EXACT_FAMILIES, FD_FAMILY, Results, Study,
                       backend_order, is_exact, load, median_over_seeds, parse_time, problem_info,
                       problem_order, winners)
from ..results import READER_STATUSES as EXTRA_STATUSES
from ..results.cells import cells_table as build_cells
from ..results.cells import backend_fact, finite, geometric_mean

ReportData = Results
CELL_COLUMNS = CELLS_TABLE_COLUMNS

__all__ = ["load", "ReportData", "Results", "Study", "build_cells", "median_over_seeds", "winners",
           "backend_order", "problem_order", "problem_info", "EXTRA_STATUSES", "EXACT_FAMILIES",
           "FD_FAMILY", "is_exact", "backend_fact", "finite", "geometric_mean", "parse_time", "CELL", "CELL_COLUMNS"]
