"""The experiment grid runner: suites, isolated workers, timeouts, a results log.

- :mod:`.suite` reads experiment definitions (``experiments/suites/*.toml``);
  :func:`.suite.grid_suite` builds a one-block suite (``diffcompare run --problems``,
  ``compare()``), which may carry problems as objects (``Suite.given_problems``);
- :mod:`.grid` expands one into groups of cells (one group = one worker process);
- :mod:`.supervisor` runs a group's backends in workers and turns timeouts,
  crashes and exceptions into rows; :mod:`.worker` is the worker process;
- the results folder (rows, run, catalog, lock) and the row schema are defined in
  :mod:`diffcompare.results` (:mod:`~diffcompare.results.folder`, :mod:`~diffcompare.results.schema`);
- :mod:`.studies` runs a suite's studies in the same supervised workers;
- :mod:`.executor` decides where groups run; :mod:`.progress` shows how far it got;
- :func:`run_suite` ties them together.
"""
from .executor import Executor, LocalExecutor
from .grid import BackendSpec, Group, build_groups
from .progress import Progress, make_progress
from ..results.exports import export
from ..results.folder import ResultsError, load_results, read_run
from ..results.schema import COLUMN_NAMES, STATUSES, make_row
from .run import RunSummary, run_suite
from .suite import Suite, SuiteError, grid_suite, list_suites, load_suite

__all__ = ["run_suite", "RunSummary", "Suite", "SuiteError", "grid_suite", "load_suite", "list_suites",
           "Group", "BackendSpec", "build_groups", "Executor", "LocalExecutor", "Progress",
           "make_progress", "load_results", "export", "read_run", "ResultsError",
           "COLUMN_NAMES", "STATUSES", "make_row"]
