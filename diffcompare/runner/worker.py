"""The worker process: runs the backends of one group, one after another.

Started by the runner as ``python -m diffcompare.runner.worker`` in a process
group of its own. Protocol (JSON, one object per line):

stdin
    line 1: the task, ``{"problem", "size", "seed", "dtype", "backends": [{"name",
    "options", "timeout_s"}, ...], "cell_function", "problem_modules", "base_dir",
    "memory_limit_mb"}``. The runner then keeps stdin open as a lifeline: when
    it reads EOF before the work is done (the runner died), the worker kills
    its own process group.
stdout (flushed line by line)
    ``{"event": "setup"}`` before the group's shared work, when the cell function has
    a ``prepare_group(problem, size, seed, dtype, options, backend_names=[...])``
    attribute (library imports, the accuracy reference: work no single backend's
    cell should be charged with, so a cell's
    time and limit do not depend on which backend happened to run first; skipped
    when the task says ``"skip_setup": true``);
    ``{"event": "ready"}`` once the problem and the cell function are imported (a task
    saying ``"setup_only": true`` then ends with ``done``: the shared work alone);
    per backend ``{"event": "start", "backend"}``, then one
    ``{"event": "row", "backend", "row"}`` per (backend, phase) as it finishes,
    then ``{"event": "end", "backend", "wall_s"}``; finally ``{"event": "done"}``.
    ``{"event": "fatal", "message"}`` if the task cannot run at all.

A task ``{"study", "results_dir", "quick"}`` runs one study instead
(:func:`run_study_task`), under the same supervision (:mod:`.studies`).

The cell function, ``measure_cell(problem_name, size, seed, backend_name, dtype,
options)``, yields row dicts (see :mod:`diffcompare.results.schema`); an
exception it raises becomes an ``error`` row and the worker goes on with the
next backend. Anything the cell function prints goes to stderr, so it cannot
corrupt the protocol on stdout.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import traceback

from .environment import pin_to_one_cpu
from ..results.jsonio import dumps


class _Channel:
    """The protocol stream: the original stdout, which nothing else can write to."""

    def __init__(self):
        fd = os.dup(1)
        os.dup2(2, 1)                      # prints (Python or C) now go to stderr
        self._out = os.fdopen(fd, "w", encoding="utf-8")
        self._lock = threading.Lock()

    def send(self, **message):
        line = dumps(message)
        with self._lock:
            self._out.write(line + "\n")
            self._out.flush()


def _lifeline(finished: threading.Event):
    """Kill this process group if the runner goes away before the work is done."""
    try:
        while sys.stdin.buffer.read(65536):
            pass
    except (OSError, ValueError):
        pass
    if not finished.is_set():
        os.killpg(os.getpgrp(), signal.SIGKILL)


def _limit_memory(megabytes):
    if megabytes:
        import resource

        limit = int(megabytes) * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _rows(result):
    if result is None:
        return ()
    if isinstance(result, dict):
        return (result,)
    return result


def _error_row(exc: BaseException, backend: str, started: float) -> dict:
    """The cell row of an exception: ``unsupported`` (with the reason) when the backend
    refused (an ``UnsupportedError``: a declared limit hit while measuring), else ``error``."""
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    from ..backends.base import UnsupportedError

    if isinstance(exc, UnsupportedError):
        return {"phase": "cell", "status": "unsupported",
                "message": f"{exc.reason} (refused while measuring)",
                "extra": {"exception": type(exc).__name__, "wall_s": time.perf_counter() - started}}
    return {"phase": "cell", "status": "error", "message": f"{type(exc).__name__}: {exc}",
            "extra": {"exception": type(exc).__name__, "traceback": "".join(tb)[-4000:],
                      "wall_s": time.perf_counter() - started}}


def run_study_task(task: dict, channel: _Channel) -> None:
    """Run one study (``{"study", "results_dir", "quick"}``): ``ready``, ``end`` with its
    status, ``done``. ``run_study`` writes the findings (also ``error`` when it raises)."""
    from ..studies import run_study

    channel.send(event="ready", pid=os.getpid())
    try:
        outcome = run_study(task["study"], task["results_dir"], quick=bool(task.get("quick")))
        status = outcome.status
        print(f"study {task['study']}: {status} ({len(outcome.frame)} rows, {outcome.wall_s:.1f} s)",
              file=sys.stderr)
        for finding in outcome.findings:
            print(f"  {finding}", file=sys.stderr)
    except Exception:
        traceback.print_exc()
        status = "error"
    channel.send(event="end", status=status)
    channel.send(event="done")


def run_task(task: dict, channel: _Channel) -> None:
    from .modules import find_problem, import_problem_modules, load_cell_function

    try:
        _limit_memory(task.get("memory_limit_mb"))
        import_problem_modules(task.get("problem_modules") or (), task.get("base_dir"))
        cell_function = load_cell_function(task["cell_function"])
        find_problem(task["problem"])             # fail early, naming the known problems
    except Exception as exc:
        channel.send(event="fatal", message=f"{type(exc).__name__}: {exc}",
                     traceback="".join(traceback.format_exc())[-4000:])
        return
    setup = getattr(cell_function, "prepare_group", None)
    if setup is not None and not task.get("skip_setup"):
        channel.send(event="setup")
        try:
            options = dict((task["backends"][0].get("options") or {}) if task["backends"] else {})
            setup(task["problem"], task["size"], task["seed"], task["dtype"], options,
                  backend_names=[b["name"] for b in task["backends"]])
        except Exception:        # the cells meet the same problem and record it as theirs
            traceback.print_exc()
    channel.send(event="ready", pid=os.getpid())
    if task.get("setup_only"):          # the group's shared work alone (before a GPU is held)
        channel.send(event="done")
        return
    for spec in task["backends"]:
        name = spec["name"]
        channel.send(event="start", backend=name)
        started = time.perf_counter()
        try:
            rows = _rows(cell_function(task["problem"], task["size"], task["seed"], name,
                                       task["dtype"], dict(spec.get("options") or {})))
            for row in rows:
                if not isinstance(row, dict):
                    raise TypeError(f"the cell function yielded a {type(row).__name__}, not a row dict")
                channel.send(event="row", backend=name, row=row)
        except Exception as exc:
            channel.send(event="row", backend=name, row=_error_row(exc, name, started))
        channel.send(event="end", backend=name, wall_s=time.perf_counter() - started)
    channel.send(event="done")


def main() -> int:
    if os.environ.get("DIFFCOMPARE_PIN_CPU", "1") != "0":
        pin_to_one_cpu()
    channel = _Channel()
    line = sys.stdin.buffer.readline()
    try:
        task = json.loads(line)
    except ValueError:
        channel.send(event="fatal", message=f"the worker could not read its task (got {line[:200]!r})")
        return 2
    finished = threading.Event()
    threading.Thread(target=_lifeline, args=(finished,), daemon=True, name="lifeline").start()
    try:
        (run_study_task if "study" in task else run_task)(task, channel)
    finally:
        finished.set()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    # Skip interpreter teardown: library threads (XLA, BLAS) must not delay or
    # crash the exit after all rows are out.
    os._exit(code)
