"""The tidy results schema: one row per (problem, size, seed, backend, dtype, phase).

This module is the single source of the column names, their meaning, the key
columns and every status (of a row, of a cell in a table, of a study); the
runner, the results folder, the report and the studies all read it.

Every row has every column; a value that does not apply is ``None`` (JSON
``null``). Rows are written as JSON lines, so values must be JSON values:
:func:`~diffcompare.results.jsonio.jsonable` turns NumPy scalars and arrays into plain numbers and
lists (:mod:`.jsonio` writes every file of the folder).

>>> row = make_row(problem="rosenbrock", size=4, seed=0, backend="engine",
...                dtype="float64", phase="gradient", status="ok", time_median_s=1e-5)
>>> list(row) == COLUMN_NAMES
True
>>> row["peak_bytes"] is None
True
>>> make_row(problem="p", size=1, seed=0, backend="b", dtype="float64",
...          phase="cell", status="ok", speedup=3)["extra"]
{'speedup': 3}
"""
from __future__ import annotations

import dataclasses

from ..backends.registry import FAMILIES
from ..measure import memory
from ..problems.problem import MEASURED_OPERATORS
from .jsonio import iso_from_epoch, jsonable, now_iso

#: Outcomes of one (backend, phase) or of a whole backend cell.
STATUSES = {
    "ok": "measured",
    "unsupported": "the backend cannot do this problem (its supports() said why)",
    "unavailable": "the backend cannot run on this machine (library missing, no GPU, ...)",
    "timeout": "the runner killed the worker: no progress for timeout_s seconds",
    "error": "an exception was raised (type and message in `message`)",
    "crashed": "the worker process died (signal or exit status in `message`)",
    "skipped": "not run: a smaller size of the same backend timed out",
}

#: Statuses a reader adds for cells without a completion row (never written as rows).
READER_STATUSES = {
    "unfinished": "rows were written but no completion row: the run stopped inside this cell",
    "missing": "planned by the suite but absent from the results",
}

#: Every status a cell can have in a table of cells (``diffcompare.results.cells``).
CELL_STATUSES = {**STATUSES, **READER_STATUSES}

#: Statuses saying the method was tried and something went wrong (as opposed to
#: ``unsupported``/``unavailable``/``skipped``: not tried, for a stated reason).
#: The same three words mean the same for a study.
FAULT_STATUSES = frozenset({"timeout", "error", "crashed"})

#: A study's status (in ``studies/<name>.findings.json``).
STUDY_STATUSES = {
    "ok": "every finding that could be measured holds",
    "checks-failed": "at least one finding does not hold",
    "no-data": "nothing to measure (a grid study on results without its cells)",
    "error": "the study raised an exception (traceback tail in `message`)",
    "timeout": "the study ran past its time limit and was killed",
    "crashed": "the study's process died without writing its findings",
}

#: Phases a row can describe. ``cell`` is the whole backend cell: its status
#: summarises the backend's phases (``ok`` when all were), and the runner
#: writes exactly one ``cell`` row per finished backend cell, so "has a cell
#: row" is what "finished" means when a run resumes.
#: The measured derivative operators (``diffcompare.problems.MEASURED_OPERATORS``:
#: ``jacobian``, ``hessian``, ``hvp``, ...) are phases of their own, named after them,
#: measured after the gradient for the problems that declare them or a run that asks; their
#: status is their row's and never the cell's.
OPERATOR_PHASES = tuple(MEASURED_OPERATORS)
PHASES = ("prepare", "function", "gradient", *OPERATOR_PHASES, "cell")

#: The columns that name a row; no two rows of one run share them.
KEY_COLUMNS = ("problem", "size", "seed", "backend", "dtype", "phase")

#: The columns that name a backend cell (a row key without the phase).
CELL_COLUMNS = ("problem", "size", "seed", "backend", "dtype")


@dataclasses.dataclass(frozen=True)
class Column:
    name: str
    kind: str      # "str" | "int" | "float" | "list" | "dict"
    doc: str
    unit: str = ""     # "s", "bytes", "count", ...; "" for names and text


COLUMNS = (
    Column("run_id", "str", "Identifier of the run that wrote the row (also in run.json)."),
    Column("problem", "str", "Problem name from the catalog."),
    Column("size", "int", "Problem size (its meaning is the problem's `size_meaning`).",
           unit="problem's `size_meaning`"),
    Column("seed", "int", "Seed of the problem's inputs."),
    Column("backend", "str", "Backend name, e.g. 'engine', 'fd-central', 'jax-jit'."),
    Column("family", "str", f"Backend family: {' | '.join(FAMILIES)}."),
    Column("dtype", "str", "Floating dtype the cell ran in, e.g. 'float64'."),
    Column("phase", "str", "What was measured: 'prepare' | 'function' | 'gradient', a "
                           f"derivative operator ({' | '.join(repr(o) for o in OPERATOR_PHASES)}), "
                           "or 'cell' for the whole backend cell (one per finished cell)."),
    Column("status", "str", "ok | unsupported | unavailable | timeout | error | crashed | skipped."),
    Column("message", "str", "Why the status is not ok (exception, signal, reason); else a note or null."),
    Column("time_median_s", "float", "Median seconds per call over the timing samples.", unit="s"),
    Column("time_iqr_s", "float", "Interquartile range of the per-call seconds.", unit="s"),
    Column("time_min_s", "float", "Fastest per-call seconds seen.", unit="s"),
    Column("time_samples", "list", "Raw per-call seconds of every sample (each the mean of "
                                   "`loops` calls).", unit="s"),
    Column("loops", "int", "Calls per timing sample (calibrated so a sample is long enough).",
           unit="count"),
    Column("peak_bytes", "int", "Peak memory of one call, in bytes (source in `memory_source`).",
           unit="bytes"),
    Column("cpu_share", "float", "This process's CPU time ÷ wall time while the samples were "
                                 "taken: near 1 when the (single-threaded) call kept its CPU; "
                                 "lower when another process took it, so the samples include "
                                 "waiting (on a GPU also the wait for the device).", unit="1 (ratio)"),
    Column("load_per_cpu", "float", "The host's 1-minute load average ÷ its CPUs, the higher of "
                                    "before and after the samples: above 1, more runnable "
                                    "processes than CPUs.", unit="1 (ratio)"),
    Column("timed_path", "str", "Function rows: what the timed calls ran, the function's and the "
                                "gradient's alike (e.g. 'XLA executables (jax.jit, compiled in "
                                "prepare)'), so gradient ÷ function compares like with like."),
    Column("memory_source", "str", f"How peak_bytes was measured: {memory.sources_in_words()}."),
    Column("prepared_bytes", "int", "Bytes the prepared state keeps between calls (compiled "
                                    "executables, generated code, device copies; parts in "
                                    "`extra`).", unit="bytes"),
    Column("compute_dtype", "str", "Dtype the method computed in (of the function's value as it "
                                   "computed it): float64 in a float32 cell means it upcast."),
    Column("saved_graph_bytes", "int", "Bytes of tensors the engine's graph saved for backward.",
           unit="bytes"),
    Column("expr_ops", "int", "Symbolic expression size (operation count) before CSE.",
           unit="operations"),
    Column("expr_ops_cse", "int", "Symbolic expression size (operation count) after CSE.",
           unit="operations"),
    Column("evaluations", "int", "Function evaluations made for one gradient (FD: n+1, 2n, ...).",
           unit="count"),
    Column("n_inputs", "int", "Number of differentiated scalars.", unit="count"),
    Column("error_rel", "float", "Largest relative error against the reference.", unit="1 (ratio)"),
    Column("error_rho", "float", "Largest rho = |x-y| / max(1, |x|+|y|) against the reference.",
           unit="1 (ratio)"),
    Column("reference", "str", "What the accuracy was measured against, e.g. 'mpmath-50-digits'."),
    Column("device", "str", "Where it ran, e.g. 'cpu', 'cuda:0'."),
    Column("host", "str", "Host name of the machine whose worker process made the row."),
    Column("executor", "str", "Executor that ran the row's group: 'local' or 'dask'."),
    Column("extra", "dict", "Anything else worth keeping (backend options, wall time, traceback tail; "
                            "on a cell row `phase_rows`, the number of phase rows written before it)."),
    Column("finished_at", "str", "UTC time the row was recorded, ISO 8601.", unit="ISO 8601, UTC"),
)

COLUMN_NAMES = [c.name for c in COLUMNS]
_KINDS = {c.name: c.kind for c in COLUMNS}


def describe() -> str:
    """The schema as a text table (column, kind, unit, meaning)."""
    width = max(len(c.name) for c in COLUMNS)
    unit_width = max(len(c.unit) for c in COLUMNS)
    return "\n".join(f"{c.name:<{width}}  {c.kind:<5}  {c.unit:<{unit_width}}  {c.doc}"
                     for c in COLUMNS)


def make_row(**values) -> dict:
    """A complete row: every schema column in order, missing ones ``None``.

    Keys that are not columns go into ``extra`` instead of being lost.
    ``status`` must be one of :data:`STATUSES`.
    """
    extra = dict(values.pop("extra", None) or {})
    row = {}
    for name in COLUMN_NAMES:
        row[name] = jsonable(values.pop(name, None))
    extra.update(values)
    row["extra"] = jsonable(extra) if extra else None
    if row["status"] not in STATUSES:
        raise ValueError(f"status {row['status']!r} is not one of {', '.join(STATUSES)}")
    if row["finished_at"] is None:
        row["finished_at"] = now_iso()
    elif isinstance(row["finished_at"], (int, float)) and not isinstance(row["finished_at"], bool):
        row["finished_at"] = iso_from_epoch(row["finished_at"])   # time.time() -> ISO 8601
    return row


_INT64 = (-2 ** 63, 2 ** 63 - 1)
_KIND_CHECKS = {
    "str": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool) and _INT64[0] <= v <= _INT64[1],
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "list": lambda v: isinstance(v, list),
    "dict": lambda v: isinstance(v, dict),
}


def off_schema(row) -> str | None:
    """Why ``row`` (read back from JSON) does not fit the schema, or None if it does: a
    key column missing or of another type (a ``size`` written as ``"4"`` would name another
    cell), an unknown status or phase, a value of the wrong kind (an integer beyond int64).

    >>> off_schema(make_row(problem="p", size=4, seed=0, backend="b", dtype="float64",
    ...                     phase="cell", status="ok")) is None
    True
    >>> off_schema({**make_row(problem="p", size=4, seed=0, backend="b", dtype="float64",
    ...                        phase="cell", status="ok"), "size": "4"})
    "column 'size' is '4', not an int"
    """
    if not isinstance(row, dict):
        return f"a JSON {type(row).__name__}, not an object"
    for name in KEY_COLUMNS:
        if row.get(name) is None:
            return f"key column {name!r} is missing"
    if row.get("status") not in STATUSES:
        return f"status {row.get('status')!r} is not one of {', '.join(STATUSES)}"
    if row["phase"] not in PHASES:
        return f"phase {row['phase']!r} is not one of {', '.join(PHASES)}"
    for name, kind in _KINDS.items():
        value = row.get(name)
        if value is not None and not _KIND_CHECKS[kind](value):
            return f"column {name!r} is {value!r:.40}, not {'an' if kind == 'int' else 'a'} {kind}"
    return None


def cell_key(row: dict) -> tuple:
    """The (problem, size, seed, backend, dtype) key of a row's backend cell."""
    return tuple(row.get(c) for c in CELL_COLUMNS)
