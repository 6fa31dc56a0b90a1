"""``run_suite``: a suite's grid through isolated workers into a results folder.

>>> summary = run_suite("smoke", "results/smoke")        # doctest: +SKIP
>>> summary.counts                                        # doctest: +SKIP
{'ok': 6}

Interrupt it and run it again: it resumes, running only the backend cells
without a finished row (pass ``fresh=True`` to start over).

One run at a time writes a results folder (``run.lock``): a second one fails at once,
naming the first. The folder gets ``catalog.json`` (the problems' and methods'
descriptions and the planned cells), so it can be reported on from the folder alone.

After the grid, the suite's ``studies`` run one at a time, each in a supervised worker with the
suite's ``study_timeout_s`` (:func:`diffcompare.runner.studies.run_study_supervised`); their
tables and findings go to ``<results_dir>/studies/``.  A study that raises, hangs or
crashes is recorded there with that status; the grid's rows are already on disk and stay.
Studies run again on every call (a resumed run has new grid rows to analyze).
"""
from __future__ import annotations

import collections
import dataclasses
import time
from pathlib import Path

from . import grid as _grid
from . import modules as _modules
from .environment import capture_environment
from .executor import Executor, LocalExecutor
from .progress import make_progress
from ..results.catalog import snapshot
from ..results.folder import REJECTED_FILE, ResultsError, ResultsLog, RunLock, write_catalog
from ..results.schema import FAULT_STATUSES, cell_key
from .suite import Suite, load_suite
from .supervisor import SETUP_TIMEOUT_S, STARTUP_TIMEOUT_S, GroupRunner, TimeoutMemory


@dataclasses.dataclass
class RunSummary:
    """What one ``run_suite`` call did."""

    suite: str
    run_id: str
    results_path: Path
    counts: dict               # backend cells finished in this call, by status
    total_cells: int           # backend cells in the grid
    resumed_cells: int         # of them, finished by an earlier call (not rerun)
    rows_written: int          # rows appended by this call
    dropped_rows: int          # rows of unfinished cells removed when resuming
    wall_s: float
    studies: dict = dataclasses.field(default_factory=dict)   # study name -> status
    rejected_lines: int = 0    # unreadable lines of results.jsonl set aside (their cells rerun)

    @property
    def studies_failed(self) -> list:
        """Studies that did not complete (error, timeout, crashed)."""
        return [n for n, s in self.studies.items() if s in FAULT_STATUSES]

    @property
    def cells_run(self) -> int:
        return sum(self.counts.values())

    def __str__(self):
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items())) or "nothing to run"
        resumed = f"; {self.resumed_cells} already done" if self.resumed_cells else ""
        studies = ("; studies: " + ", ".join(f"{n} {s}" for n, s in self.studies.items())
                   if self.studies else "")
        rejected = (f"; {self.rejected_lines} unreadable line(s) set aside in {REJECTED_FILE}, "
                    "their cells run again" if self.rejected_lines else "")
        return (f"suite {self.suite}: {self.cells_run} of {self.total_cells} cells ({counts}){resumed}; "
                f"{self.rows_written} rows in {self.wall_s:.1f} s -> {self.results_path}{studies}{rejected}")


#: seconds one NumPy call of a problem's function may take while the run reads which xp
#: names it uses (in the parent process, before any cell): a function that hangs must not
#: hang the run, which has no time limit of its own there
CONTRACT_READ_S = 20.0


def contract_verdicts(groups, find_problem=_modules.find_problem) -> list:
    """For each problem of ``groups`` that uses ``xp`` names outside the xp contract (or that
    a method cannot differentiate: autograd's missing VJPs), the one explanation of which
    methods run it (``contract.Verdict.message``), from one NumPy call at
    its smallest size; the cells of the other methods are ``unsupported`` with the reason.
    ``find_problem(name)``: the problem of a name (a suite's :meth:`~.suite.Suite.find_problem`)."""
    from .. import backends
    from ..measure.budget import OverBudget, time_budget
    from ..problems import contract

    first = {}
    for g in groups:             # ordered by size: the first group of a problem is its smallest
        first.setdefault(g.problem, g)
    methods = {}
    for g in groups:
        methods.setdefault(g.problem, {})
        for b in g.backends:
            methods[g.problem].setdefault(b.name, backends.namespace_of(b.name))
    out = []
    for name, g in first.items():
        try:
            problem = find_problem(name)
            with time_budget(CONTRACT_READ_S):      # the user's function, in this process
                verdict = contract.verdict(problem, problem.inputs(g.size, g.seed))
        except OverBudget:
            out.append(f"problem {name!r}: its function did not return within {CONTRACT_READ_S:g} s "
                       f"on NumPy at size {g.size}, so the xp names it uses were not read before the "
                       "run; its cells run under their own time limits.")
            continue
        except Exception:        # noqa: BLE001 -- a broken problem: its cells say how
            continue
        message = verdict.message(methods[name])
        if message:
            out.append(message)
    return out


def announce_contract(groups, find_problem=_modules.find_problem) -> None:
    """Say once, before any cell runs, which problems use names outside the xp contract
    (a ``contract.ContractWarning`` each; the CLI prints it as a note)."""
    import warnings

    from ..problems import contract

    for message in contract_verdicts(groups, find_problem):
        warnings.warn(message, contract.ContractWarning, stacklevel=3)


def run_suite(suite, results_dir, fresh: bool = False, executor: Executor | None = None,
              progress=None, *, experiments_dir=None, cell_function: str | None = None,
              fsync: bool = False, startup_timeout_s: float = STARTUP_TIMEOUT_S,
              setup_timeout_s: float = SETUP_TIMEOUT_S,
              run_studies: bool = True) -> RunSummary:
    """Run every cell of ``suite`` (a :class:`Suite`, a suite name or a TOML path).

    Rows go to ``<results_dir>/results.jsonl`` as they finish; ``run.json`` holds
    the run id and the environment. Resumes by default; ``fresh=True`` starts over
    (old files kept as ``*.bak``). ``executor`` defaults to one group at a time;
    ``progress`` is None (auto), True, False or a :class:`~.progress.Progress`.
    ``cell_function`` overrides the suite's measuring function. ``run_studies=False``
    skips the suite's studies."""
    started = time.perf_counter()
    suite = suite if isinstance(suite, Suite) else load_suite(suite, experiments_dir)
    if cell_function is not None:
        suite = dataclasses.replace(suite, cell_function=cell_function)
    groups = _grid.build_groups(suite)
    announce_contract(groups, suite.find_problem)
    executor = executor if executor is not None else LocalExecutor()
    if Path(results_dir).exists() and not Path(results_dir).is_dir():
        raise ResultsError(f"results folder {results_dir} is a file; give a folder (new or one "
                           "a run wrote) to --results.")
    lock = RunLock(results_dir, what=f"diffcompare run --suite {suite.name}").acquire()
    show = make_progress(progress)
    log = ResultsLog(results_dir, fsync=fsync)
    summary = None
    try:
        state = log.open(fresh=fresh)
        run = log.start_run(_suite_info(suite), capture_environment())
        write_catalog(results_dir, snapshot(groups, suite.find_problem))
        timeouts = TimeoutMemory()
        for row in state.rows:
            if row.get("phase") == "cell" and row.get("status") == "timeout":
                timeouts.record(row["problem"], row["dtype"], row["backend"], row["size"])
        todo, resumed = [], 0
        for group in groups:
            left = [b for b in group.backends if group.cell_key(b.name) not in state.finished]
            resumed += len(group.backends) - len(left)
            if left:
                todo.append(group.with_backends(left))

        counts = collections.Counter()
        runner = GroupRunner(
            run_id=run["run_id"], cell_function=suite.cell_function,
            problem_modules=suite.problem_modules + suite.worker_modules, base_dir=suite.base_dir,
            memory_limit_mb=suite.memory_limit_mb, sink=log.append, timeouts=timeouts,
            on_cell_start=lambda g, b: show.cell_started(f"{g.problem}/{g.size}/{b}"),
            on_cell_end=lambda g, b, status: show.cell_finished(f"{g.problem}/{g.size}/{b}", status),
            startup_timeout_s=startup_timeout_s, setup_timeout_s=setup_timeout_s)
        show.start(total=_grid.count_cells(groups), done=resumed, title=suite.name)
        written_cells = set(state.finished)
        results = executor.map_groups(todo, runner)
        try:
            for result in results:
                if not result.written:
                    for row in _unwritten(result.rows, written_cells):
                        log.append(row)
                    for backend, status in result.cells.items():
                        show.cell_finished(f"{result.group.problem}/{result.group.size}/{backend}", status)
                        if status == "timeout":
                            timeouts.record(result.group.problem, result.group.dtype, backend,
                                            result.group.size)
                counts.update(result.cells.values())
        except BaseException:
            runner.cancel()
            getattr(results, "close", lambda: None)()    # the executor stops its remote work
            raise
        log.close()                  # the grid's rows are on disk before any study starts
        study_status = _run_studies(suite, results_dir, show) if run_studies else {}
        summary = RunSummary(suite=suite.name, run_id=run["run_id"], results_path=log.path,
                             counts=dict(counts), total_cells=_grid.count_cells(groups),
                             resumed_cells=resumed, rows_written=log.rows_written,
                             dropped_rows=state.dropped_rows, wall_s=time.perf_counter() - started,
                             studies=study_status, rejected_lines=state.bad_lines)
        return summary
    finally:
        log.close()
        lock.release()
        show.close(summary)


def _unwritten(rows, written_cells: set) -> list:
    """The rows of cells not yet in the log, and those cells added to ``written_cells``:
    appends are idempotent per cell, so a group an executor delivers twice (a Dask task
    rerun after its worker died) cannot write a cell twice."""
    fresh = [row for row in rows if cell_key(row) not in written_cells]
    written_cells.update(cell_key(row) for row in fresh if row.get("phase") == "cell")
    return fresh


def _run_studies(suite: Suite, results_dir, show) -> dict:
    """Each of the suite's studies in a supervised worker; ``{name: status}``. Never raises
    for a study's failure: whatever goes wrong is recorded in its findings file."""
    if not suite.studies:
        return {}
    from ..studies import write_record
    from .studies import run_study_supervised

    statuses = {}
    for name in suite.studies:
        show.cell_started(f"study {name}")       # the bar shows it; studies are not cells
        try:
            status = run_study_supervised(name, results_dir, quick=suite.quick_studies,
                                          timeout_s=suite.study_timeout_s)
        except Exception as exc:     # could not even start it: record, go on
            status = "error"
            try:
                write_record(results_dir, name, status="error",
                             message=f"could not run the study: {type(exc).__name__}: {exc}")
            except Exception:
                pass
        statuses[name] = status
    return statuses


def _suite_info(suite: Suite) -> dict:
    info = dataclasses.asdict(dataclasses.replace(suite, given_problems=()))
    info["given_problems"] = [p.name for p in suite.given_problems]     # objects: their names
    info["path"] = None if suite.path is None else str(suite.path)
    info["grid"] = [dataclasses.asdict(b) for b in suite.grid]
    return info
