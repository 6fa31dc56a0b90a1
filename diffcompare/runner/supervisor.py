"""Running one group in worker processes, and turning every fault into a row.

:class:`GroupRunner` is the ``run_group`` callable an executor calls. For one
group it starts a worker (``python -m diffcompare.runner.worker``, its own
process group, one thread per numerical library; a group of GPU cells first claims a GPU
slot and its workers get the GPU settings of :func:`.environment.worker_env`, one worker
per cell so that each reads its own GPU memory high-water mark), reads the worker's events
with a deadline, and writes each row as it arrives. Then:

- no event for ``timeout_s`` seconds (the backend in progress made no
  progress): the whole process group is killed (``SIGKILL``), a ``timeout``
  row is written for that backend, and a fresh worker runs the backends left;
- the worker dies (signal, exit status, output closed before ``done``): a
  ``crashed`` row with the signal or status and the tail of its stderr, then a
  fresh worker for the backends left;
- the cell function raises: the worker itself writes an ``error`` row and goes on;
- the group's shared work (the cell function's ``prepare_group``) makes no progress for
  ``setup_timeout_s``: the worker is killed and a fresh one runs the cells without it, each
  meeting that work under its own limit; a cell that then times out says both limits;
- a backend that timed out at some size is ``skipped`` at larger sizes of the
  same problem and dtype (the run order puts small sizes first).

Every backend cell that finishes gets exactly one ``phase = "cell"`` row
(written by the cell function, by this module on a fault, or here as the
summary of its phase rows), so "has a cell row" is what finished means when a
run resumes.
"""
from __future__ import annotations

import dataclasses
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from .cpu_slots import Cancelled, gpu_slot
from .environment import worker_env
from .grid import Group
from ..backends.registry import METHODS
from ..results.jsonio import dumps
from ..results.schema import OPERATOR_PHASES, make_row

#: How long a fresh worker may take to import the problem and the cell function.
STARTUP_TIMEOUT_S = 120.0
#: How long a group's shared work (the cell function's ``prepare_group``: library imports,
#: the accuracy reference) may run before it is skipped and each cell meets it alone.
SETUP_TIMEOUT_S = 120.0

#: what ``Worker.next_event`` returns when the worker's output ended, or nothing came in time
EOF = object()
TIMEOUT = object()


@dataclasses.dataclass
class GroupResult:
    """What running one group produced."""

    group: Group
    rows: list                  # every row made, in order
    cells: dict                 # backend name -> status of its cell row
    written: bool               # whether the rows already went to the results sink


class TimeoutMemory:
    """Which (problem, dtype, backend) timed out, at which smallest size (thread-safe)."""

    def __init__(self, items=None):
        self._sizes: dict = dict(items or {})
        self._lock = threading.Lock()

    def record(self, problem, dtype, backend, size):
        with self._lock:
            key = (problem, dtype, backend)
            self._sizes[key] = min(size, self._sizes.get(key, size))

    def blocking_size(self, problem, dtype, backend, size):
        """The smaller size that timed out, if any (then skip this one)."""
        with self._lock:
            timed_out = self._sizes.get((problem, dtype, backend))
        return timed_out if timed_out is not None and timed_out < size else None

    def snapshot(self) -> dict:
        with self._lock:
            return dict(self._sizes)


class Worker:
    """One worker process and a thread that reads its events into a queue."""

    def __init__(self, task: dict, python: str, stderr_path=None, env=None):
        self._stderr = open(stderr_path, "w+b") if stderr_path else tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [python, "-m", "diffcompare.runner.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            start_new_session=True, env=env if env is not None else worker_env())
        self._events: queue.Queue = queue.Queue()
        self._kill_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True, name=f"worker-{self.proc.pid}")
        self._reader.start()
        try:
            self.proc.stdin.write((dumps(task) + "\n").encode())
            self.proc.stdin.flush()       # stdin stays open: it is the worker's lifeline
        except OSError:
            pass                          # it died already; the reader reports EOF

    def _read(self):
        try:
            for line in self.proc.stdout:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue              # not protocol (cannot happen: prints go to stderr)
                if isinstance(event, dict):
                    self._events.put(event)
        except (OSError, ValueError):
            pass
        self._events.put(EOF)

    def next_event(self, timeout_s: float):
        try:
            return self._events.get(timeout=max(timeout_s, 0.0))
        except queue.Empty:
            return TIMEOUT

    def kill(self):
        """SIGKILL the whole process group (the worker and anything it started), then reap.

        The group is killed only while the worker is not yet reaped: until then its
        pid (= the group id) cannot belong to anyone else."""
        with self._kill_lock:
            if self.proc.returncode is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                self.proc.wait()
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            self._reader.join(timeout=2)
            if not self._reader.is_alive():   # else a process that left the group holds the pipe
                self.proc.stdout.close()

    def exit_description(self) -> str:
        code = self.proc.wait()
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = "signal"
            return f"the worker was killed by {name} (signal {-code})"
        return f"the worker exited with status {code}"

    def stderr_tail(self, max_chars: int = 1500) -> str:
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - max_chars))
            text = self._stderr.read().decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
        return text.strip()[-max_chars:]

    def close(self):
        try:
            self._stderr.close()
        except OSError:
            pass


class GroupRunner:
    """``run_group(group) -> GroupResult``: runs a group's backends in workers.

    ``sink(row)`` receives each row as it finishes (thread-safe; the results
    log). ``on_cell_start(group, backend)`` and ``on_cell_end(group, backend,
    status)`` report progress. A distributed executor that cannot reach the
    sink from its workers runs :meth:`detached` copies and writes the returned
    rows itself (``GroupResult.written`` is then false).
    """

    def __init__(self, *, run_id: str, cell_function: str, problem_modules=(), base_dir=None,
                 memory_limit_mb=None, sink=None, timeouts: TimeoutMemory | None = None,
                 on_cell_start=None, on_cell_end=None, startup_timeout_s: float = STARTUP_TIMEOUT_S,
                 setup_timeout_s: float = SETUP_TIMEOUT_S,
                 python: str | None = None, executor: str = "local"):
        self.run_id = run_id
        self.executor = executor            # recorded in every row, with the host
        self.cell_function = cell_function
        self.problem_modules = list(problem_modules)
        self.base_dir = None if base_dir is None else str(base_dir)
        self.memory_limit_mb = memory_limit_mb
        self.sink = sink
        self.timeouts = timeouts if timeouts is not None else TimeoutMemory()
        self.on_cell_start = on_cell_start
        self.on_cell_end = on_cell_end
        self.startup_timeout_s = startup_timeout_s
        self.setup_timeout_s = setup_timeout_s
        self.python = python or sys.executable
        self._active: set = set()
        self._lock = threading.Lock()
        #: set by :meth:`cancel`; executors wait on it for a CPU or GPU slot
        self.cancelled = threading.Event()

    # --- executor-facing -----------------------------------------------------

    def detached(self) -> "GroupRunner":
        """A copy without sink, hooks or shared state: picklable, for remote workers."""
        clone = object.__new__(GroupRunner)
        clone.__dict__.update(self.__dict__)
        clone.sink = clone.on_cell_start = clone.on_cell_end = None
        clone.timeouts = TimeoutMemory(self.timeouts.snapshot())
        clone._active = set()
        clone._lock, clone.cancelled = threading.Lock(), threading.Event()
        return clone

    def __getstate__(self):
        state = self.detached().__dict__.copy()
        state["timeouts"] = state["timeouts"].snapshot()
        del state["_lock"], state["cancelled"]
        return state

    def __setstate__(self, state):
        state["timeouts"] = TimeoutMemory(state["timeouts"])
        self.__dict__.update(state, _lock=threading.Lock(), cancelled=threading.Event())

    def cancel(self):
        """Stop: kill every running worker; groups in progress raise :class:`Cancelled`."""
        self.cancelled.set()
        with self._lock:
            active = list(self._active)
        for worker in active:
            worker.kill()

    def __call__(self, group: Group) -> GroupResult:
        if group.device != "gpu":
            return _GroupRun(self, group, worker_env(device="cpu")).run()

        # the group's shared work (accuracy references: CPU work, minutes at the gpu suite's
        # sizes) before the GPU is held, so GPU groups queue for the GPU only with their cells
        _GroupRun(self, group, worker_env(device="cpu")).shared_work()
        with gpu_slot(self.cancelled) as gpu:    # one group per GPU at a time, host-wide
            return _GroupRun(self, group, worker_env(device="gpu", gpu=gpu)).run()

    # --- helpers used by _GroupRun ---------------------------------------------

    def task(self, group: Group, backends) -> dict:
        return {"problem": group.problem, "size": group.size, "seed": group.seed, "dtype": group.dtype,
                "backends": [b.to_json() for b in backends], "cell_function": self.cell_function,
                "problem_modules": self.problem_modules, "base_dir": self.base_dir,
                "memory_limit_mb": self.memory_limit_mb}

    def start_worker(self, task, env=None) -> Worker:
        if self.cancelled.is_set():
            raise Cancelled()
        worker = Worker(task, self.python, env=env)
        with self._lock:
            self._active.add(worker)
        return worker

    def stop_worker(self, worker: Worker):
        worker.kill()
        worker.close()
        with self._lock:
            self._active.discard(worker)


def _product_note(rows):
    """The cell row's note on derivative products that were not measured (None if all were)."""
    notes = [f"{r['phase']} {r['status']}" for r in rows
             if r["phase"] in OPERATOR_PHASES and r["status"] != "ok"]
    return f"gradient ok; {', '.join(notes)} (see its row)" if notes else None


def _ok_note(rows):
    """The message of a cell whose phases were ok: the notes its ok phase rows carry (the
    kinks its inputs reach: ``measure.cell``), then :func:`_product_note` (None if neither)."""
    notes = dict.fromkeys(r["message"] for r in rows if r["status"] == "ok" and r.get("message"))
    return "; ".join([*notes, *filter(None, [_product_note(rows)])]) or None


class _GroupRun:
    """The state of running one group: rows so far, the backend in progress."""

    def __init__(self, runner: GroupRunner, group: Group, env=None):
        self.runner, self.group, self.env = runner, group, env
        self.result = GroupResult(group, [], {}, written=runner.sink is not None)
        self.phase_rows: dict = {}           # backend -> its rows so far
        self.skip_setup = False              # the group's shared work timed out once
        self.setup_note = ""                 # then: what a timeout row says of it

    def run(self) -> GroupResult:
        todo = []
        for spec in self.group.backends:
            blocked = self.runner.timeouts.blocking_size(self.group.problem, self.group.dtype,
                                                         spec.name, self.group.size)
            if blocked is None:
                todo.append(spec)
            else:
                self._cell_start(spec.name)
                self._finish(spec.name, "skipped", f"skipped: a smaller size timed out (size {blocked})")
        while todo:
            if self.group.device == "gpu":
                # a worker per GPU cell: the GPU allocator's high-water mark cannot be reset, so
                # each cell's peak is read in a process no other cell has raised it in
                todo = self._run_worker(todo[:1]) + todo[1:]
            else:
                todo = self._run_worker(todo)
        return self.result

    def shared_work(self) -> None:
        """Only the group's shared work (the cell function's ``prepare_group``: its results are
        cached on disk, e.g. the accuracy references), in a worker of its own that runs no cell.
        Whatever happens here costs nothing: a worker that fails or outlasts the startup and
        setup limits is stopped, and the cells' workers then meet the same work themselves."""
        runner = self.runner
        worker = runner.start_worker({**runner.task(self.group, self.group.backends),
                                      "setup_only": True}, self.env)
        deadline = time.monotonic() + runner.startup_timeout_s + runner.setup_timeout_s
        try:
            while True:
                event = worker.next_event(deadline - time.monotonic())
                if runner.cancelled.is_set():
                    raise Cancelled()
                if event is TIMEOUT or event is EOF or event.get("event") in ("done", "fatal"):
                    return
        finally:
            runner.stop_worker(worker)

    # One worker: runs backends until it finishes, times out or dies; returns those left.
    def _run_worker(self, todo: list) -> list:
        runner = self.runner
        worker = runner.start_worker({**runner.task(self.group, todo), "skip_setup": self.skip_setup},
                                     self.env)
        left = list(todo)
        current = None            # the backend in progress (None between backends)
        ready = False
        in_setup = False
        last_phase = None
        last_progress = time.monotonic()
        try:
            while True:
                if not ready:
                    limit = runner.setup_timeout_s if in_setup else runner.startup_timeout_s
                elif current is not None:
                    limit = current.timeout_s
                else:                     # between backends, or all ended and "done" is next
                    limit = left[0].timeout_s if left else runner.startup_timeout_s
                event = worker.next_event(last_progress + limit - time.monotonic())
                if runner.cancelled.is_set():
                    raise Cancelled()
                if event is TIMEOUT:
                    worker.kill()
                    if not ready and in_setup and not self.skip_setup:
                        self.skip_setup = True    # the shared work hangs: let each cell meet it
                        self.setup_note = (
                            " The group's shared setup had timed out first (the methods' "
                            f"imports, the accuracy reference: no progress for {limit:g} s, the "
                            "setup limit); each cell then met that work under its own limit.")
                        return left
                    if not ready:
                        self._finish_all(left, "error", f"the worker did not start within {limit:g} s "
                                         f"(importing the problem and {runner.cell_function}).")
                        return []
                    if not left:
                        return []         # everything ended; only "done" was missing
                    spec = current or left[0]
                    after = f" after phase {last_phase!r}" if last_phase else ""
                    self._finish(spec.name, "timeout",
                                 f"timeout: no progress for {limit:g} s (the cell limit) in backend "
                                 f"{spec.name!r}{after}; "
                                 f"the worker's process group was killed.{self.setup_note}",
                                 stderr_tail=worker.stderr_tail() or None)
                    runner.timeouts.record(self.group.problem, self.group.dtype, spec.name, self.group.size)
                    return [b for b in left if b is not spec]
                if event is EOF:
                    worker.kill()
                    what = worker.exit_description()
                    tail = worker.stderr_tail()
                    tail = f"; stderr tail:\n{tail}" if tail else ""
                    if not ready:
                        self._finish_all(left, "crashed", f"crashed: {what} while starting{tail}")
                        return []
                    if not left:
                        return []
                    spec = current or left[0]
                    after = f" after phase {last_phase!r}" if last_phase else ""
                    self._finish(spec.name, "crashed",
                                 f"crashed: {what} in backend {spec.name!r}{after}{tail}")
                    return [b for b in left if b is not spec]
                last_progress = time.monotonic()
                kind = event.get("event")
                if kind == "setup":
                    in_setup = True
                elif kind == "ready":
                    ready = True
                elif kind == "fatal":
                    self._finish_all(left, "error",
                                     f"the worker could not run the group: {event.get('message')}")
                    return []
                elif kind == "start":
                    current = next((b for b in left if b.name == event.get("backend")), None)
                    last_phase = None
                    if current is not None:
                        self._cell_start(current.name)
                elif kind == "row" and current is not None:
                    row = event.get("row") or {}
                    last_phase = row.get("phase", last_phase)
                    self._row(current.name, row)
                elif kind == "end" and current is not None:
                    self._end(current.name, event.get("wall_s"))
                    left = [b for b in left if b is not current]
                    current = None
                elif kind == "done":
                    self._finish_all(left, "error", "the worker finished without running this backend.")
                    return []
        finally:
            runner.stop_worker(worker)

    # --- rows ---------------------------------------------------------------------

    def _base(self, backend: str) -> dict:
        g = self.group
        return {"run_id": self.runner.run_id, "problem": g.problem, "size": g.size, "seed": g.seed,
                "backend": backend, "dtype": g.dtype,
                "family": METHODS[backend].family if backend in METHODS else None,
                "host": socket.gethostname(), "executor": self.runner.executor}

    def _options(self, backend: str) -> dict:
        spec = next(b for b in self.group.backends if b.name == backend)
        return spec.options

    def _emit(self, row: dict):
        self.result.rows.append(row)
        self.phase_rows.setdefault(row["backend"], []).append(row)
        if self.runner.sink is not None:
            self.runner.sink(row)

    def _row(self, backend: str, raw: dict):
        """A row from the cell function, completed and checked against the schema."""
        values = dict(raw)
        base = self._base(backend)
        for key in ("run_id", "problem", "size", "seed", "backend", "dtype", "host", "executor"):
            values[key] = base[key]                       # the grid names the row, not the cell
        values.setdefault("family", base["family"])
        values.setdefault("status", "ok")
        if not values.get("phase"):
            values["phase"] = "cell"
        extra = dict(values.get("extra") or {})
        if self._options(backend):
            extra.setdefault("options", self._options(backend))
        if values["phase"] == "cell":
            extra["phase_rows"] = self._phase_count(backend)
        values["extra"] = extra
        try:
            row = make_row(**values)
        except ValueError as exc:
            bad = {k: values.get(k) for k in ("phase", "status", "message")}
            row = make_row(**{**base, "phase": values["phase"], "status": "error",
                              "message": f"the cell function yielded a bad row ({exc})",
                              "extra": {"row": bad}})
        self._emit(row)

    def _phase_count(self, backend: str) -> int:
        """Phase rows of ``backend`` written so far (a cell row records it: see
        ``diffcompare.results.folder.finished_cells``)."""
        return sum(1 for r in self.phase_rows.get(backend, ()) if r["phase"] != "cell")

    def _end(self, backend: str, wall_s):
        rows = self.phase_rows.get(backend, [])
        cell = next((r for r in rows if r["phase"] == "cell"), None)
        if cell is not None:
            self._cell_done(backend, cell["status"])
            return
        if not rows:
            self._finish(backend, "error", "the cell function returned without yielding any rows.",
                         wall_s=wall_s)
            return
        # a derivative product's status is its own row's: the cell's is the gradient's phases'
        failed = next((r for r in rows if r["status"] != "ok" and r["phase"] not in OPERATOR_PHASES),
                      None)
        status = failed["status"] if failed else "ok"
        message = failed["message"] if failed else _ok_note(rows)
        kinks = next((r["extra"]["kinks"] for r in rows if (r.get("extra") or {}).get("kinks")), None)
        self._finish(backend, status, message, wall_s=wall_s, phases=[r["phase"] for r in rows],
                     kinks=kinks)

    def _finish(self, backend: str, status: str, message, **extra):
        """Write the backend's cell row."""
        options = self._options(backend)
        if options:
            extra["options"] = options
        extra["phase_rows"] = self._phase_count(backend)
        extra = {k: v for k, v in extra.items() if v is not None}
        self._emit(make_row(**self._base(backend), phase="cell", status=status, message=message,
                            extra=extra))
        self._cell_done(backend, status)

    def _finish_all(self, specs, status, message):
        for spec in specs:
            self._cell_start(spec.name)
            self._finish(spec.name, status, message)

    def _cell_start(self, backend):
        if self.runner.on_cell_start is not None:
            self.runner.on_cell_start(self.group, backend)

    def _cell_done(self, backend, status):
        self.result.cells[backend] = status
        if self.runner.on_cell_end is not None:
            self.runner.on_cell_end(self.group, backend, status)
