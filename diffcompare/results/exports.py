"""Export a results folder's tables as CSV or Parquet (:func:`export`).

>>> from diffcompare.results import export           # doctest: +SKIP
>>> export("results/quick")                           # doctest: +SKIP
PosixPath('results/quick/cells.csv')
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from .cells import cells_table
from .folder import ResultsError, load_results, read_catalog
from .jsonio import dumps
from .schema import COLUMNS

#: The tables :func:`export` writes (``docs/results.md`` documents both).
EXPORT_TABLES = ("cells", "phases")


def export(results_dir, fmt: str = "csv", path=None, table: str = "cells") -> Path:
    """Write one of the folder's two tables as CSV or Parquet and return the path:
    ``table="cells"``, one row per backend cell (what ``results.load(results_dir).cells``
    and ``compare()`` give), or ``"phases"``, the phase rows of ``results.jsonl`` (list and
    dict columns as JSON text in CSV, ``extra`` also in Parquet). The file goes to
    ``path``, by default ``<results_dir>/<table>.<fmt>``. Parquet needs pyarrow."""
    fmt = fmt.lower().lstrip(".")
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"unknown export format {fmt!r}; use 'csv' or 'parquet'.")
    if table not in EXPORT_TABLES:
        raise ValueError(f"unknown table {table!r}; use {' or '.join(map(repr, EXPORT_TABLES))}.")
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise ResultsError("Parquet export needs pyarrow, which is not installed "
                           "(pip install pyarrow); CSV export works without it: export(results_dir, 'csv').")
    frame = load_results(results_dir)
    if table == "cells":
        frame = cells_table(frame, read_catalog(results_dir))
    else:
        as_json = [c.name for c in COLUMNS if c.kind == "dict" or (fmt == "csv" and c.kind == "list")]
        for name in as_json:
            frame[name] = frame[name].map(lambda v: None if v is None else dumps(v))
    target = Path(path) if path is not None else Path(results_dir) / f"{table}.{fmt}"
    if fmt == "csv":
        frame.to_csv(target, index=False)
    else:
        frame.to_parquet(target, index=False)
    return target
