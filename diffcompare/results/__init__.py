"""The results layer: the one place that defines and reads a results folder.

A results folder (what ``diffcompare run`` writes) holds ``results.jsonl`` (tidy rows,
:mod:`.schema`), ``run.json`` (the suite, the machine, the sessions), ``catalog.json``
(the problems' and methods' descriptions and the planned cells, :mod:`.catalog`) and
``studies/`` (each study's rows and checked findings, :mod:`.studies`). The runner writes
it through :mod:`.folder`; the report, the studies and users read it through here:

- :func:`load` -> :class:`Results`: rows, run, catalog, the cells table
  (:func:`.cells.cells_table`, one row per backend cell, every status kept: the table
  ``compare()`` returns and ``export`` writes, columns in ``docs/results.md``) and studies;
- :func:`.winners.winners`: who is fastest / most accurate / least memory, with ties.

>>> import tempfile
>>> r = load(tempfile.mkdtemp())
>>> len(r.cells), r.suite_name, r.rejected_lines
(0, None, 0)
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from .catalog import EXACT_FAMILIES, FD_FAMILY, is_exact
from .cells import (CELL, CELLS_TABLE_COLUMNS, backend_order, cells_table, family_of,
                    median_over_seeds, problem_info, problem_order, operators_table)
from .exports import export
from .jsonio import parse_time
from .folder import (ResultsError, ResultsLocked, load_results, read_catalog, read_run,
                     rejected_lines)
from .schema import (CELL_COLUMNS, CELL_STATUSES, COLUMN_NAMES, FAULT_STATUSES, KEY_COLUMNS,
                     READER_STATUSES, STATUSES, STUDY_STATUSES)
from .studies import Study, read_studies
from .winners import CRITERIA, WINNER_COLUMNS, winners


@dataclasses.dataclass
class Results:
    """Everything in one results folder (missing files are empty, not errors)."""

    results_dir: Path
    rows: object                     # every row (pandas DataFrame, the schema's columns)
    run: dict | None                 # run.json
    catalog: dict                    # catalog.json ({} for folders written before it existed)
    cells: object                    # cells_table(rows, catalog)
    studies: dict                    # name -> Study
    rejected_lines: int = 0          # unreadable lines of results.jsonl set aside

    @property
    def environment(self) -> dict:
        return (self.run or {}).get("environment") or {}

    @property
    def suite(self) -> dict:
        return (self.run or {}).get("suite") or {}

    @property
    def suite_name(self):
        return self.suite.get("name")

    @property
    def run_id(self):
        if self.run and self.run.get("run_id"):
            return self.run["run_id"]
        ids = [r for r in self.rows["run_id"].dropna().unique()] if len(self.rows) else []
        return ids[0] if ids else None

    @property
    def problems(self) -> list:
        return self.problem_order(self.cells["problem"])

    @property
    def backends(self) -> list:
        return self.backend_order(self.cells["backend"])

    def problem_order(self, names) -> list:
        """``names`` in the order this run listed its problems (:func:`.cells.problem_order`)."""
        return problem_order(names, self.catalog)

    def backend_order(self, names) -> list:
        """``names`` in the order this run listed its methods (:func:`.cells.backend_order`)."""
        return backend_order(names, self.catalog)

    def problem_info(self, name: str) -> dict:
        """Description, tags, size meaning, smoothness of ``name``, from this folder first."""
        return problem_info(name, self.catalog)

    def ok(self, dtype: str | None = "float64"):
        """Ok cells (of ``dtype``, all dtypes with None), medians over seeds."""
        cells = self.cells if dtype is None else self.cells[self.cells["dtype"] == dtype]
        return median_over_seeds(cells, self.catalog)

    def operators(self):
        """The derivative operators measured beyond the gradient (:func:`.cells.operators_table`)."""
        return operators_table(self.rows, self.catalog)

    def winners(self, **kwargs):
        """:func:`.winners.winners` over this folder's cells."""
        return winners(self.cells, **kwargs)

    def study(self, name: str) -> Study:
        return self.studies.get(name) or Study(name, None, None, "not run")

    def time_span(self) -> tuple:
        """(first, last) time (``datetime``, UTC) among run.json's start and sessions, the rows'
        ``finished_at`` and the studies' ``finished_at``; ``(None, None)`` if none is known."""
        stamps = list(self.rows["finished_at"].dropna().astype(str)) if len(self.rows) else []
        stamps.append((self.run or {}).get("started_at"))
        stamps += [s.get("started_at") for s in (self.run or {}).get("sessions") or []]
        stamps += [(st.record or {}).get("finished_at") for st in self.studies.values()]
        times = [t for t in map(parse_time, stamps) if t is not None]
        return (min(times), max(times)) if times else (None, None)


def load(results_dir) -> Results:
    """Read ``results_dir`` (see the module docstring)."""
    results_dir = Path(results_dir)
    rows = load_results(results_dir)
    run = read_run(results_dir)     # a corrupt run.json: ResultsCorrupt, one line saying so
    catalog = read_catalog(results_dir)
    planned = ((run or {}).get("suite") or {}).get("studies") or []
    return Results(results_dir, rows, run, catalog, cells_table(rows, catalog),
                   read_studies(results_dir, planned), rejected_lines(results_dir))


__all__ = ["Results", "load", "winners", "cells_table", "operators_table", "median_over_seeds", "read_studies", "Study",
           "load_results", "read_run", "read_catalog", "export", "ResultsError", "ResultsLocked",
           "STATUSES", "CELL_STATUSES", "READER_STATUSES", "FAULT_STATUSES", "STUDY_STATUSES",
           "KEY_COLUMNS", "CELL_COLUMNS", "COLUMN_NAMES", "CELL", "CELLS_TABLE_COLUMNS", "CRITERIA",
           "WINNER_COLUMNS", "EXACT_FAMILIES", "FD_FAMILY", "is_exact", "backend_order",
           "problem_order", "problem_info", "family_of", "parse_time"]
