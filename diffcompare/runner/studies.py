"""Running a suite's studies in the runner's supervised worker processes.

A study runs in a worker (:mod:`.worker`, task ``{"study", "results_dir", "quick"}``),
started, watched and killed by the same :class:`~.supervisor.Worker` as the grid's
cells: its own process group, one thread per library, a lifeline, and a time limit
(``study_timeout_s``; a study reports no progress, so the limit is on its whole run).
What it prints goes to ``<results_dir>/studies/<name>.log``. The study writes its own
findings record; when it is killed at the limit the record says ``timeout``, and when
its process dies without writing one, ``crashed``. A stale record from an earlier run
is moved to ``*.bak`` first, so it never passes for this run's.

>>> status = run_study_supervised("fd_steps", "results/mysuite", timeout_s=300)   # doctest: +SKIP
"""
from __future__ import annotations

import os
import sys
import time

from .supervisor import EOF, TIMEOUT, Worker

DEFAULT_TIMEOUT_S = 900.0


def run_study_supervised(name: str, results_dir, quick: bool = False,
                         timeout_s: float = DEFAULT_TIMEOUT_S, python: str | None = None) -> str:
    """Run study ``name`` in a supervised worker; returns its status
    (:data:`diffcompare.results.schema.STUDY_STATUSES`)."""
    from ..results.studies import read_record, study_paths
    from ..studies import write_record

    _, findings_path = study_paths(results_dir, name)
    findings_path.parent.mkdir(parents=True, exist_ok=True)
    if findings_path.exists():
        os.replace(findings_path, findings_path.with_name(findings_path.name + ".bak"))
    log_path = findings_path.with_name(f"{name}.log")
    task = {"study": name, "results_dir": str(results_dir), "quick": bool(quick)}
    started = time.perf_counter()
    worker = Worker(task, python or sys.executable, stderr_path=log_path)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            event = worker.next_event(deadline - time.monotonic())
            if event is TIMEOUT:
                worker.kill()
                write_record(results_dir, name, status="timeout", quick=quick,
                             wall_s=time.perf_counter() - started,
                             message=f"killed after {timeout_s:g} s (study_timeout_s); output in "
                                     f"{log_path.name}:\n" + worker.stderr_tail(2000))
                return "timeout"
            if event is EOF or event.get("event") == "done":
                break
    finally:
        worker.kill()
        worker.close()
    record = read_record(results_dir, name)
    if record is None:
        write_record(results_dir, name, status="crashed", quick=quick,
                     wall_s=time.perf_counter() - started,
                     message=f"the study process died without writing its findings "
                             f"({worker.exit_description().replace('the worker ', '')}); output in "
                             f"{log_path.name}:\n" + _tail(log_path))
        return "crashed"
    return record.get("status", "crashed")


def _tail(path, max_chars: int = 2000) -> str:
    try:
        data = path.read_bytes()[-max_chars:]
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace").strip()
