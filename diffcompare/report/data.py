"""Load a results folder and shape it for the report.

A results folder holds ``results.jsonl`` (tidy rows, :mod:`diffcompare.runner.schema`),
``run.json`` (the suite and the machine) and ``studies/<name>.csv`` +
``<name>.findings.json`` (:mod:`diffcompare.studies`).  :func:`load` reads all of it
into a :class:`ReportData`, whose ``cells`` table has one row per backend cell:

- every cell with a ``phase == "cell"`` completion row, its status and message, and its
  measured phases side by side (``prepare_s``, ``function_s``, ``gradient_s``, memory,
  accuracy, expression sizes);
- cells with rows but no completion row, as status ``unfinished``;
- cells the suite planned (``run.json``) that have no row at all, as status ``missing``.

Nothing is dropped: a failed or missing cell stays in the table with its status, so the
report can show it as such.

>>> import tempfile
>>> d = load(tempfile.mkdtemp())
>>> len(d.cells), d.suite_name
(0, None)
"""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np

CELL = ["problem", "size", "seed", "backend", "dtype"]

#: Statuses the report adds to the schema's: a cell that started but has no completion
#: row, and a cell the suite planned that has no row at all.
EXTRA_STATUSES = {
    "unfinished": "rows were written but no completion row: the run stopped inside this cell",
    "missing": "planned by the suite (run.json) but absent from the results",
}

#: Backend families whose gradients are exact up to rounding.
EXACT_FAMILIES = ("engine", "manual", "symbolic", "jax", "torch", "autograd")
FD_FAMILY = "finite-difference"

_MEASURES = {
    "prepare": {"time_median_s": "prepare_s", "expr_ops": "expr_ops", "expr_ops_cse": "expr_ops_cse"},
    "function": {"time_median_s": "function_s"},
    "gradient": {"time_median_s": "gradient_s", "time_iqr_s": "gradient_iqr_s",
                 "time_min_s": "gradient_min_s", "peak_bytes": "peak_bytes",
                 "memory_source": "memory_source", "saved_graph_bytes": "saved_graph_bytes",
                 "evaluations": "evaluations", "n_inputs": "n_inputs", "error_rel": "error_rel",
                 "error_rho": "error_rho", "reference": "reference", "device": "device"},
    "hvp": {"time_median_s": "hvp_s"},
}
CELL_COLUMNS = CELL + ["family", "status", "message"] + [
    c for m in _MEASURES.values() for c in m.values()]


# --------------------------------------------------------------------------- ordering

def _known_backends() -> list:
    try:
        from .. import backends
        return backends.names()
    except Exception:                       # pragma: no cover - the package is broken
        return []


def backend_order(names) -> list:
    """``names`` (deduplicated) in the registry's order, unknown ones after, alphabetically."""
    known = _known_backends()
    names = list(dict.fromkeys(str(n) for n in names if n is not None))
    rank = {n: i for i, n in enumerate(known)}
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))


def problem_order(names, rows=None) -> list:
    """``names`` in the catalog's order (unknown ones after, alphabetically)."""
    try:
        from .. import problems
        known = [p.name for p in problems.all_problems()]
    except Exception:                       # pragma: no cover
        known = []
    rank = {n: i for i, n in enumerate(known)}
    names = list(dict.fromkeys(str(n) for n in names if n is not None))
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))


def problem_info(name: str) -> dict:
    """Description, tags and size meaning of a catalog problem (empty if unknown)."""
    try:
        from .. import problems
        p = problems.get(name)
    except Exception:
        return {}
    return {"description": p.description, "tags": sorted(p.tags), "size_meaning": p.size_meaning,
            "smooth": p.smooth}


# --------------------------------------------------------------------------- studies

@dataclasses.dataclass
class Study:
    """One study's files: its findings record and its rows (either may be missing)."""

    name: str
    record: dict | None
    frame: object | None          # pandas DataFrame of <name>.csv, or None
    note: str = ""                # why a file is missing or unreadable

    @property
    def status(self) -> str:
        if self.record is None:
            return "missing"
        return str(self.record.get("status") or "unknown")

    @property
    def title(self) -> str:
        return (self.record or {}).get("title") or self.name

    @property
    def findings(self) -> list:
        return list((self.record or {}).get("findings") or [])


def _read_studies(results_dir: Path, planned=()) -> dict:
    import pandas as pd

    folder = results_dir / "studies"
    names = list(planned)
    if folder.is_dir():
        names += sorted(p.name[: -len(".findings.json")] for p in folder.glob("*.findings.json"))
        names += sorted(p.stem for p in folder.glob("*.csv"))
    out = {}
    for name in dict.fromkeys(names):
        record, frame, notes = None, None, []
        fpath, cpath = folder / f"{name}.findings.json", folder / f"{name}.csv"
        if fpath.exists():
            try:
                record = json.loads(fpath.read_text(encoding="utf-8"))
            except ValueError as exc:
                notes.append(f"{fpath.name} is not valid JSON ({exc})")
        else:
            notes.append(f"no {fpath.name}")
        if cpath.exists():
            try:
                frame = pd.read_csv(cpath)
            except Exception as exc:     # empty or corrupt CSV: say so, keep going
                notes.append(f"{cpath.name} unreadable ({type(exc).__name__})")
        out[name] = Study(name, record, frame, "; ".join(notes))
    return out


# --------------------------------------------------------------------------- cells

def _unsupported_reason(message) -> str | None:
    """The reason of an ``UnsupportedError`` raised while measuring (then the cell is
    unsupported, not an error: the backend refused, e.g. expression swell)."""
    if not isinstance(message, str) or not message.startswith("UnsupportedError"):
        return None
    _, _, rest = message.partition("unsupported: ")
    return f"{rest.strip() or message} (refused while measuring)"


def _planned_cells(run: dict | None) -> list:
    """The (problem, size, seed, backend, dtype) keys ``run.json``'s suite planned."""
    suite = (run or {}).get("suite") or {}
    seeds = suite.get("seeds") or [0]
    dtypes = suite.get("dtypes") or ["float64"]
    keys = []
    for block in suite.get("grid") or []:
        sizes = block.get("sizes")
        for p in block.get("problems") or []:
            these = sizes
            if sizes == "default" or sizes is None:
                try:
                    from .. import problems
                    these = problems.get(p).sizes
                except Exception:
                    continue                   # unknown problem: cannot enumerate its sizes
            for size in these:
                for dtype in dtypes:
                    for seed in seeds:
                        for b in block.get("backends") or []:
                            keys.append((p, int(size), int(seed), b, dtype))
    return list(dict.fromkeys(keys))


def build_cells(rows, run: dict | None = None):
    """One row per backend cell (see the module docstring), ``CELL_COLUMNS`` wide."""
    import pandas as pd

    if rows is None or len(rows) == 0:
        table = pd.DataFrame(columns=CELL_COLUMNS)
    else:
        rows = rows.copy()
        rows["size"] = pd.to_numeric(rows["size"], errors="coerce").astype("Int64")
        rows["seed"] = pd.to_numeric(rows["seed"], errors="coerce").astype("Int64")
        done = rows[rows["phase"] == "cell"].drop_duplicates(subset=CELL, keep="last")
        table = done[CELL + ["family", "status", "message"]].copy()
        reasons = table["message"].map(_unsupported_reason)
        refused = reasons.notna()
        table.loc[refused, "status"] = "unsupported"
        table.loc[refused, "message"] = reasons[refused]
        # cells with rows but without a completion row
        started = rows[rows["phase"] != "cell"].drop_duplicates(subset=CELL, keep="last")
        open_ = started.merge(done[CELL], on=CELL, how="left", indicator=True)
        open_ = open_[open_["_merge"] == "left_only"][CELL + ["family"]].copy()
        if len(open_):
            open_["status"] = "unfinished"
            open_["message"] = EXTRA_STATUSES["unfinished"]
            table = pd.concat([table, open_], ignore_index=True)
        for phase, mapping in _MEASURES.items():
            part = rows[(rows["phase"] == phase) & (rows["status"] == "ok")]
            part = part.drop_duplicates(subset=CELL, keep="last")[CELL + list(mapping)]
            table = table.merge(part.rename(columns=mapping), on=CELL, how="left")
    # planned but absent
    present = set(map(tuple, table[CELL].astype(object).values.tolist())) if len(table) else set()
    absent = [k for k in _planned_cells(run) if k not in present]
    if absent:
        extra = pd.DataFrame(absent, columns=CELL)
        extra["family"] = extra["backend"].map(_family_of_name)
        extra["status"] = "missing"
        extra["message"] = EXTRA_STATUSES["missing"]
        table = pd.concat([table, extra], ignore_index=True)
    for c in CELL_COLUMNS:
        if c not in table:
            table[c] = None
    table = table[CELL_COLUMNS].copy()
    for c in ("prepare_s", "function_s", "gradient_s", "gradient_iqr_s", "gradient_min_s", "hvp_s",
              "peak_bytes", "saved_graph_bytes", "evaluations", "n_inputs", "error_rel", "error_rho",
              "expr_ops", "expr_ops_cse"):
        table[c] = pd.to_numeric(table[c], errors="coerce").astype("float64")
    table["size"] = pd.to_numeric(table["size"], errors="coerce").astype("Int64")
    table["seed"] = pd.to_numeric(table["seed"], errors="coerce").astype("Int64")
    table["family"] = [f if isinstance(f, str) and f else _family_of_name(b)
                       for f, b in zip(table["family"], table["backend"])]
    table["ratio"] = table["gradient_s"] / table["function_s"]
    return _sorted(table)


def _family_of_name(backend) -> str:
    try:
        from .. import backends
        return backends.get(str(backend)).family
    except Exception:
        return "unknown"


def _sorted(table):
    if table.empty:
        return table.reset_index(drop=True)
    p_rank = {p: i for i, p in enumerate(problem_order(table["problem"]))}
    b_rank = {b: i for i, b in enumerate(backend_order(table["backend"]))}
    key = table.assign(_p=table["problem"].map(p_rank), _b=table["backend"].map(b_rank))
    key = key.sort_values(["_p", "size", "seed", "dtype", "_b"], kind="mergesort")
    return key.drop(columns=["_p", "_b"]).reset_index(drop=True)


def median_over_seeds(cells):
    """Ok cells averaged over seeds: one row per (problem, size, backend, dtype), medians."""
    ok = cells[cells["status"] == "ok"]
    if ok.empty:
        return ok.drop(columns=["seed"])
    numeric = [c for c in ok.columns if ok[c].dtype.kind == "f"]
    first = [c for c in ("family", "status", "message", "memory_source", "reference", "device")
             if c in ok.columns]
    agg = {c: "median" for c in numeric}
    agg.update({c: "first" for c in first})
    out = ok.groupby(["problem", "size", "backend", "dtype"], as_index=False, sort=False,
                     dropna=False).agg(agg)
    return _sorted(out.assign(seed=0)).drop(columns=["seed"])


# --------------------------------------------------------------------------- the whole

@dataclasses.dataclass
class ReportData:
    results_dir: Path
    rows: object                     # every row (pandas DataFrame, the schema's columns)
    run: dict | None                 # run.json
    cells: object                    # build_cells(rows, run)
    studies: dict                    # name -> Study

    @property
    def environment(self) -> dict:
        return (self.run or {}).get("environment") or {}

    @property
    def suite(self) -> dict:
        return (self.run or {}).get("suite") or {}

    @property
    def suite_name(self):
        return self.suite.get("name")

    @property
    def run_id(self):
        if self.run and self.run.get("run_id"):
            return self.run["run_id"]
        ids = [r for r in self.rows["run_id"].dropna().unique()] if len(self.rows) else []
        return ids[0] if ids else None

    @property
    def problems(self) -> list:
        return problem_order(self.cells["problem"])

    @property
    def backends(self) -> list:
        return backend_order(self.cells["backend"])

    def ok(self, dtype: str | None = "float64"):
        """Ok cells (of ``dtype``, all dtypes with None), medians over seeds."""
        cells = self.cells if dtype is None else self.cells[self.cells["dtype"] == dtype]
        return median_over_seeds(cells)

    def study(self, name: str) -> Study:
        return self.studies.get(name) or Study(name, None, None, "not run")

    def time_span(self) -> tuple:
        """(first, last) time (``datetime``, UTC) among run.json's start and sessions, the rows'
        ``finished_at`` and the studies' ``finished_at``; ``(None, None)`` if none is known."""
        stamps = list(self.rows["finished_at"].dropna().astype(str)) if len(self.rows) else []
        stamps.append((self.run or {}).get("started_at"))
        stamps += [s.get("started_at") for s in (self.run or {}).get("sessions") or []]
        stamps += [(st.record or {}).get("finished_at") for st in self.studies.values()]
        times = [t for t in map(parse_time, stamps) if t is not None]
        return (min(times), max(times)) if times else (None, None)


def load(results_dir) -> ReportData:
    """Everything the report needs from ``results_dir`` (missing files are empty, not errors)."""
    from ..runner.results import load_results, read_run

    results_dir = Path(results_dir)
    rows = load_results(results_dir)
    try:
        run = read_run(results_dir)
    except ValueError:
        run = None
    planned = ((run or {}).get("suite") or {}).get("studies") or []
    return ReportData(results_dir, rows, run, build_cells(rows, run),
                      _read_studies(results_dir, planned))


def parse_time(value):
    """An ISO 8601 time as an aware UTC ``datetime`` (naive times taken as UTC), or None."""
    import datetime as _dt

    if not value:
        return None
    try:
        t = _dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)


def finite(values) -> list:
    """The finite floats among ``values``."""
    out = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            out.append(f)
    return out


def is_exact(family) -> bool:
    return family in EXACT_FAMILIES


def geometric_mean(values) -> float:
    v = [x for x in finite(values) if x > 0]
    return float(np.exp(np.mean(np.log(v)))) if v else math.nan
