"""The results log: ``<results_dir>/results.jsonl`` (rows) and ``run.json`` (the run).

Rows are appended one JSON line at a time as they finish (append mode, flush
per row, optional fsync), so a run that is killed loses at most the line being
written. Resuming reads the rows back, cuts away a half-written last line and
the rows of backend cells that had not finished (a cell is finished when it
has its ``phase = "cell"`` row, see :mod:`diffcompare.runner.schema`), and
tells the runner which cells are done.

JSON only, no pickle: the files are safe to read from anywhere.

>>> import tempfile
>>> from diffcompare.runner.schema import make_row
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
import importlib.util
import json
import os
import secrets
import threading
from pathlib import Path

from .schema import COLUMN_NAMES, COLUMNS, cell_key, now_iso

RESULTS_FILE = "results.jsonl"
RUN_FILE = "run.json"


class ResultsError(RuntimeError):
    """The results folder cannot be used as asked (another suite's results, ...)."""


@dataclasses.dataclass
class ResumeState:
    """What an existing results file says about a run."""

    rows: list                       # the rows kept
    finished: set                    # cell keys (problem, size, seed, backend, dtype) with a cell row
    dropped_rows: int = 0            # rows of unfinished cells, removed
    dropped_bytes: int = 0           # a half-written last line, cut away
    bad_lines: int = 0               # unreadable lines in the middle, ignored


def read_rows(path) -> tuple[list, int, int]:
    """Rows of a JSONL file: ``(rows, good_length, bad_lines)``.

    ``good_length`` is the byte length of the file up to the end of its last
    complete, readable line; anything after (a half-written line) is not a row.
    An unreadable line followed by good ones is skipped and counted."""
    path = Path(path)
    if not path.exists():
        return [], 0, 0
    data = path.read_bytes()
    rows, good_length, bad, pending, offset = [], 0, 0, 0, 0
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
            pending += 1                            # bad, unless good lines follow
            continue
        rows.append(row)
        bad, pending, good_length = bad + pending, 0, offset
    return rows, good_length, bad


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
            for p in (self.path, self.run_path):
                if p.exists():
                    os.replace(p, p.with_name(p.name + ".bak"))
        rows, good_length, bad = read_rows(self.path)
        size = self.path.stat().st_size if self.path.exists() else 0
        state = ResumeState(rows=[], finished=set(), dropped_bytes=size - good_length, bad_lines=bad)
        state.finished = {cell_key(r) for r in rows if r.get("phase") == "cell"}
        state.rows = [r for r in rows if cell_key(r) in state.finished]
        state.dropped_rows = len(rows) - len(state.rows)
        if state.dropped_rows or bad:
            self._rewrite(state.rows)               # atomically, without the partial cells
        elif state.dropped_bytes:
            with open(self.path, "r+b") as f:       # cut the half-written line away
                f.truncate(good_length)
        self._file = open(self.path, "a", encoding="utf-8")
        return state

    def _rewrite(self, rows):
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, allow_nan=False) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def append(self, row: dict) -> None:
        """Write one row as one line, now (thread-safe)."""
        line = json.dumps(row, allow_nan=False) + "\n"
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
                f"{suite_info.get('name')!r}; use another results folder or start over with fresh=True.")
        if run is None:
            stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            run = {"run_id": f"{suite_info.get('name')}-{stamp}-{secrets.token_hex(3)}",
                   "started_at": started, "suite": suite_info, "environment": environment,
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
        tmp.write_text(json.dumps(run, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, self.run_path)


def read_run(results_dir) -> dict | None:
    """The ``run.json`` of a results folder, or ``None``."""
    path = Path(results_dir) / RUN_FILE
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


# --- tidy loading and export -----------------------------------------------------

def load_results(results_dir):
    """All rows of ``<results_dir>/results.jsonl`` as a pandas DataFrame whose
    columns are the schema's, in order (integers as nullable ``Int64``)."""
    import pandas as pd

    rows, _, _ = read_rows(Path(results_dir) / RESULTS_FILE)
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


def export(results_dir, fmt: str = "csv", path=None) -> Path:
    """Write the results as ``results.csv`` or ``results.parquet`` (next to the
    JSONL unless ``path`` is given) and return the path. List and dict columns
    become JSON text in CSV (and ``extra`` also in Parquet). Parquet needs pyarrow."""
    fmt = fmt.lower().lstrip(".")
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"unknown export format {fmt!r}; use 'csv' or 'parquet'.")
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise ResultsError("Parquet export needs pyarrow, which is not installed "
                           "(pip install pyarrow); CSV export works without it: export(results_dir, 'csv').")
    frame = load_results(results_dir)
    target = Path(path) if path is not None else Path(results_dir) / f"results.{fmt}"
    as_json = [c.name for c in COLUMNS if c.kind == "dict" or (fmt == "csv" and c.kind == "list")]
    for name in as_json:
        frame[name] = frame[name].map(lambda v: None if v is None else json.dumps(v))
    if fmt == "csv":
        frame.to_csv(target, index=False)
    else:
        frame.to_parquet(target, index=False)
    return target
