"""The results folder on disk: ``results.jsonl`` (rows), ``run.json`` (the run),
``catalog.json`` (what the problems and methods were), ``run.lock`` (who is writing).

Rows are appended one JSON line at a time as they finish (append mode, flush
per row, optional fsync), so a run that is killed loses at most the line being
written. Resuming reads the rows back and keeps only finished backend cells: a
cell is finished when it has its ``phase = "cell"`` row and that row's
``extra.phase_rows`` (how many phase rows the runner wrote before it) matches
the phase rows found. A half-written last line is cut away; an unreadable line
in the middle is set aside in ``results.rejected.jsonl`` (never silently dropped),
counted, and its cell, now incomplete, runs again.

One run at a time writes a folder: :class:`RunLock` holds ``run.lock`` (an
``flock``, so a dead run's lock is free again, whatever the file says).

JSON only, no pickle: the files are safe to read from anywhere.

>>> import tempfile
>>> from diffcompare.results.schema import make_row
>>> d = tempfile.mkdtemp()
>>> log = ResultsLog(d)
>>> state = log.open()
>>> log.append(make_row(run_id="r", problem="p", size=1, seed=0, backend="b",
...                     dtype="float64", phase="cell", status="ok"))
>>> log.close()
>>> load_results(d)[["problem", "status"]].values.tolist()
[['p', 'ok']]
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import secrets
import socket
import threading
from pathlib import Path

from .jsonio import dumps, now_iso
from .schema import COLUMN_NAMES, COLUMNS, cell_key, off_schema

#: written to run.json; raised when the rows' schema changes incompatibly
SCHEMA_VERSION = 1

RESULTS_FILE = "results.jsonl"
RUN_FILE = "run.json"
CATALOG_FILE = "catalog.json"
REJECTED_FILE = "results.rejected.jsonl"
LOCK_FILE = "run.lock"


class ResultsError(RuntimeError):
    """The results folder cannot be used as asked (another suite's results, ...)."""


class ResultsCorrupt(ResultsError, ValueError):
    """A file of the results folder cannot be read (truncated, not JSON, not the schema)."""


class ResultsWarning(UserWarning):
    """Rows of a results folder were left out of what was read (unreadable, off-schema)."""


class ResultsLocked(ResultsError):
    """Another run is writing this results folder."""


@dataclasses.dataclass
class ResumeState:
    """What an existing results file says about a run."""

    rows: list                       # the rows kept
    finished: set                    # cell keys (problem, size, seed, backend, dtype) with a cell row
    dropped_rows: int = 0            # rows of unfinished cells, removed
    dropped_bytes: int = 0           # a half-written last line, cut away
    bad_lines: int = 0               # unreadable lines in the middle, set aside in REJECTED_FILE


def read_rows(path) -> tuple[list, int, int]:
    """Rows of a JSONL file: ``(rows, good_length, bad_lines)`` (see :func:`scan_rows`)."""
    rows, good_length, bad = scan_rows(path)
    return rows, good_length, len(bad)


def scan_rows(path) -> tuple[list, int, list]:
    """Rows of a JSONL file: ``(rows, good_length, bad_lines)``.

    ``good_length`` is the byte length of the file up to the end of its last
    complete, readable line; anything after (a half-written line) is not a row.
    An unreadable line followed by good ones is not a row either, nor is a complete
    line whose row does not fit the schema (``schema.off_schema``: a ``size`` written
    as ``"4"`` would name a cell of its own): each is returned in ``bad_lines`` (its
    text), for the caller to set aside and count."""
    path = Path(path)
    if not path.exists():
        return [], 0, []
    data = path.read_bytes()
    rows, good_length, bad, pending, offset = [], 0, [], [], 0
    while True:
        end = data.find(b"\n", offset)
        if end < 0:
            break                                   # no newline after it: half-written
        line = data[offset:end].strip()
        offset = end + 1
        if not line:
            if not pending:
                good_length = offset
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not isinstance(row, dict):
            pending.append(line.decode("utf-8", errors="replace"))   # bad, if good lines follow
            continue
        if off_schema(row) is not None:            # whole, but not a row of this schema
            bad, pending, good_length = bad + pending + [line.decode("utf-8", "replace")], [], offset
            continue
        rows.append(row)
        bad, pending, good_length = bad + pending, [], offset
    return rows, good_length, bad


def _why_rejected(text: str) -> str:
    try:
        row = json.loads(text)
    except ValueError:
        return "not JSON"
    return off_schema(row) or "not a row"


def finished_cells(rows) -> set:
    """Cell keys (problem, size, seed, backend, dtype) of the finished cells among ``rows``:
    a ``phase = "cell"`` row, and as many phase rows as it says were written before it
    (``extra.phase_rows``; rows written before that count existed are taken as complete)."""
    phases: dict = {}
    done: dict = {}
    for r in rows:
        key = cell_key(r)
        if r.get("phase") == "cell":
            done[key] = (r.get("extra") or {}).get("phase_rows")
        else:
            phases[key] = phases.get(key, 0) + 1
    return {k for k, n in done.items() if n is None or n == phases.get(k, 0)}


class RunLock:
    """``<results_dir>/run.lock``: one run at a time in a results folder.

    ``acquire()`` takes an exclusive ``flock`` on the file and writes who holds it
    (pid, host, start). A second run finds the lock held and raises
    :class:`ResultsLocked` naming the first; the kernel releases the lock when its
    holder dies, so a lock file left by a dead run is simply taken over.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> with RunLock(d):
    ...     RunLock(d).acquire()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    diffcompare.results.folder.ResultsLocked: ...
    """

    def __init__(self, results_dir, what: str = "diffcompare run"):
        self.path = Path(results_dir) / LOCK_FILE
        self.what = what
        self._fd = None

    def acquire(self) -> "RunLock":
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read_lock(fd)
            os.close(fd)
            who = (f"pid {holder.get('pid')} on {holder.get('hostname')}, started {holder.get('started_at')}"
                   if holder else "another process")
            raise ResultsLocked(f"{self.path.parent} is in use by a running {holder.get('what', 'run')} "
                                f"({who}); wait for it to end or use another results folder.") from None
        os.ftruncate(fd, 0)
        os.write(fd, dumps({"pid": os.getpid(), "hostname": socket.gethostname(),
                            "started_at": now_iso(), "what": self.what}).encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)      # nobody holds it now (the file may stay)
            finally:
                os.close(self._fd)             # closing releases the flock
                self._fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def _read_lock(fd) -> dict:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return json.loads(os.read(fd, 4096) or b"{}")
    except (OSError, ValueError):
        return {}


class ResultsLog:
    """Append-only writer of ``results.jsonl`` plus the ``run.json`` record."""

    def __init__(self, results_dir, fsync: bool = False):
        self.dir = Path(results_dir)
        self.path = self.dir / RESULTS_FILE
        self.run_path = self.dir / RUN_FILE
        self.fsync = fsync
        self._file = None
        self._lock = threading.Lock()
        self.rows_written = 0

    def open(self, fresh: bool = False) -> ResumeState:
        """Get ready to append. ``fresh`` moves old results to ``*.bak``; else the
        existing rows are read and cleaned for resuming (see :class:`ResumeState`)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if fresh:
            for p in (self.path, self.run_path, self.dir / CATALOG_FILE, self.dir / REJECTED_FILE):
                if p.exists():
                    os.replace(p, p.with_name(p.name + ".bak"))
        if self.path.exists() and not self.path.is_file():
            raise ResultsError(f"{self.path} is not a file; remove it or use another results folder.")
        rows, good_length, bad = scan_rows(self.path)
        size = self.path.stat().st_size if self.path.exists() else 0
        state = ResumeState(rows=[], finished=set(), dropped_bytes=size - good_length, bad_lines=len(bad))
        if bad:
            self._set_aside(bad)
        state.finished = finished_cells(rows)
        state.rows = [r for r in rows if cell_key(r) in state.finished]
        state.dropped_rows = len(rows) - len(state.rows)
        if state.dropped_rows or bad:
            self._rewrite(state.rows)               # atomically, without the partial cells
        elif state.dropped_bytes:
            with open(self.path, "r+b") as f:       # cut the half-written line away
                f.truncate(good_length)
        self._file = open(self.path, "a", encoding="utf-8")
        return state

    def _set_aside(self, lines):
        """Append unreadable lines to ``results.rejected.jsonl`` (each as a JSON record with
        the reason)."""
        with open(self.dir / REJECTED_FILE, "a", encoding="utf-8") as f:
            for text in lines:
                f.write(dumps({"rejected_at": now_iso(), "why": _why_rejected(text),
                                    "text": text}) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _rewrite(self, rows):
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(dumps(row) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def append(self, row: dict) -> None:
        """Write one row as one line, now (thread-safe)."""
        line = dumps(row) + "\n"
        with self._lock:
            if self._file is None:
                raise ResultsError("the results log is not open; call open() first.")
            self._file.write(line)
            self._file.flush()
            if self.fsync:
                os.fsync(self._file.fileno())
            self.rows_written += 1

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    # --- run.json ------------------------------------------------------------------

    def start_run(self, suite_info: dict, environment: dict) -> dict:
        """Create ``run.json`` (new run) or add this session to it (resumed run).

        A results folder holds one suite: resuming another suite's results
        raises :class:`ResultsError`."""
        started = now_iso()
        session = {"started_at": started, "hostname": environment.get("hostname"), "pid": os.getpid()}
        run = read_run(self.dir)
        if run is not None and run.get("suite", {}).get("name") != suite_info.get("name"):
            raise ResultsError(
                f"{self.dir} holds results of suite {run.get('suite', {}).get('name')!r}, not "
                f"{suite_info.get('name')!r}; use another results folder or start over "
                "(--fresh on the command line, fresh=True in Python).")
        if run is not None and run.get("suite", {}).get("device", "cpu") != suite_info.get("device", "cpu"):
            raise ResultsError(
                f"{self.dir} holds results measured with device {run['suite'].get('device', 'cpu')!r}, "
                f"not {suite_info.get('device', 'cpu')!r}: the rows of one method would come from two "
                "devices. Use another results folder (--results) or start over (--fresh).")
        if run is None:
            stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            run = {"run_id": f"{suite_info.get('name')}-{stamp}-{secrets.token_hex(3)}",
                   "schema_version": SCHEMA_VERSION, "started_at": started, "suite": suite_info, "environment": environment,
                   "sessions": []}
        else:
            session["resumed"] = True
            if environment != run.get("environment"):
                session["environment"] = environment   # the machine changed between sessions
            run["suite"] = suite_info
        run["sessions"].append(session)
        self.write_run(run)
        return run

    def write_run(self, run: dict) -> None:
        tmp = self.run_path.with_name(self.run_path.name + ".tmp")
        tmp.write_text(dumps(run, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self.run_path)


def read_run(results_dir) -> dict | None:
    """The ``run.json`` of a results folder, or ``None``."""
    path = Path(results_dir) / RUN_FILE
    if not path.exists():
        return None
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ResultsCorrupt(f"{path} cannot be read ({type(exc).__name__}: {exc}); it may be "
                             "truncated. Restore it, or start the run over in a new folder "
                             "(the rows in results.jsonl are still readable).") from None
    if not isinstance(run, dict) or not isinstance(run.get("suite", {}), dict):
        raise ResultsCorrupt(f"{path} is not a run description (a JSON object with the run's "
                             "suite, environment and sessions); restore it or use a new folder.")
    return run


def write_catalog(results_dir, catalog: dict) -> Path:
    """Write ``catalog.json``: ``{"problems": {name: {...}}, "backends": {name: {...}},
    "operator_capabilities": {operator: {method: "native: ..." | "unsupported: ..."}},
    "planned_cells": [[problem, size, seed, backend, dtype], ...]}`` (see
    :mod:`diffcompare.results.catalog`), merged over an existing one (a resumed run
    keeps what the earlier sessions described)."""
    path = Path(results_dir) / CATALOG_FILE
    old = read_catalog(results_dir)
    merged = {"problems": {**old.get("problems", {}), **catalog.get("problems", {})},
              "backends": {**old.get("backends", {}), **catalog.get("backends", {})},
              "operator_capabilities": _merged_capabilities(old, catalog),
              "planned_cells": catalog.get("planned_cells", old.get("planned_cells", []))}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(dumps(merged, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def _merged_capabilities(old, new) -> dict:
    """operator -> method -> capability, a resumed run's methods over the earlier ones'."""
    a, b = old.get("operator_capabilities", {}), new.get("operator_capabilities", {})
    return {op: {**a.get(op, {}), **b.get(op, {})} for op in dict.fromkeys([*a, *b])}


def read_catalog(results_dir) -> dict:
    """The folder's ``catalog.json`` (``{}`` when absent or unreadable)."""
    path = Path(results_dir) / CATALOG_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def rejected_lines(results_dir) -> int:
    """How many unreadable lines of ``results.jsonl`` were set aside, in total."""
    path = Path(results_dir) / REJECTED_FILE
    try:
        return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    except OSError:
        return 0


# --- tidy loading and export -----------------------------------------------------

def load_results(results_dir):
    """All rows of ``<results_dir>/results.jsonl`` as a pandas DataFrame whose
    columns are the schema's, in order (integers as nullable ``Int64``)."""
    import pandas as pd

    path = Path(results_dir) / RESULTS_FILE
    rows, _, bad = scan_rows(path)
    if bad:   # never dropped without a word; `diffcompare run` sets them aside for good
        import warnings

        warnings.warn(f"{path}: {len(bad)} line(s) are unreadable or do not fit the results "
                      "schema and were left out of the table (they stay in the file; resuming "
                      "the run sets them aside in results.rejected.jsonl and runs their cells "
                      "again).", ResultsWarning, stacklevel=2)
    frame = pd.DataFrame.from_records([{c: r.get(c) for c in COLUMN_NAMES} for r in rows],
                                      columns=COLUMN_NAMES)
    for column in COLUMNS:
        if column.kind == "int":
            frame[column.name] = pd.to_numeric(frame[column.name], errors="coerce").astype("Int64")
        elif column.kind == "float":
            frame[column.name] = pd.to_numeric(frame[column.name], errors="coerce").astype("float64")
        elif column.kind in ("list", "dict"):
            frame[column.name] = frame[column.name].astype(object)
    return frame
