"""Run a study in a subprocess with a time limit, so a failing, hanging or crashing study
is recorded and never takes the caller (a suite run and its grid results) with it.

>>> status = run_isolated("fd_steps", "results/mysuite", timeout_s=300)   # doctest: +SKIP

The child is ``python -m diffcompare.studies <name> <results_dir> [--quick]`` in a session
of its own, with the workers' single-thread environment; its output goes to
``<results_dir>/studies/<name>.log``.  The child writes its own findings (status ``ok``,
``checks-failed``, ``no-data`` or ``error``); when it is killed at the time limit the
findings record says ``timeout``, and when it dies without writing them, ``crashed``.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from . import read_record, study_paths, write_record

DEFAULT_TIMEOUT_S = 900.0


def run_isolated(name: str, results_dir, quick: bool = False, timeout_s: float = DEFAULT_TIMEOUT_S,
                 python: str | None = None, env: dict | None = None) -> str:
    """Run study ``name`` in a child process; returns its status (see ``studies.STATUSES``)."""
    from ..runner.environment import worker_env

    _, findings_path = study_paths(results_dir, name)
    findings_path.parent.mkdir(parents=True, exist_ok=True)
    if findings_path.exists():              # a stale record must not pass for this run's
        os.replace(findings_path, findings_path.with_name(findings_path.name + ".bak"))
    log_path = findings_path.with_name(f"{name}.log")
    command = [python or sys.executable, "-m", "diffcompare.studies", name, str(results_dir)]
    if quick:
        command.append("--quick")
    started = time.perf_counter()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env if env is not None else worker_env())
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            write_record(results_dir, name, status="timeout", quick=quick,
                         wall_s=time.perf_counter() - started,
                         message=f"killed after {timeout_s:g} s (study_timeout_s); output in {log_path.name}:\n"
                                 + _log_tail(log_path))
            return "timeout"
        except BaseException:
            _kill_group(proc)
            raise
    record = read_record(results_dir, name)
    if record is None:
        why = (f"killed by signal {-code}" if code < 0 else f"exited with status {code}")
        write_record(results_dir, name, status="crashed", quick=quick,
                     wall_s=time.perf_counter() - started,
                     message=f"the study process {why} without writing its findings; output in "
                             f"{log_path.name}:\n" + _log_tail(log_path))
        return "crashed"
    return record.get("status", "crashed")


def _kill_group(proc):
    """SIGKILL the child's session (its pid is the group id while it is unreaped), then reap."""
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()


def _log_tail(path, max_chars: int = 2000) -> str:
    try:
        data = path.read_bytes()[-max_chars:]
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace").strip()
