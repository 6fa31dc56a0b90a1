"""Rows to cells: one table row per backend cell, its phases side by side.

:func:`cells_table` turns the tidy rows of ``results.jsonl`` (one per phase) into one
row per (problem, size, seed, backend, dtype), ``CELLS_TABLE_COLUMNS`` wide (``family`` and
``mode``, reverse or forward, are the method's, from the folder's ``catalog.json``):

- every finished cell (see :func:`diffcompare.results.folder.finished_cells`) with the
  status and message of its completion row and its measured phases side by side
  (``prepare_s``, ``function_s``, ``gradient_s``, memory, accuracy, expression sizes);
- cells with rows but not finished, as status ``unfinished``;
- cells the run planned (``catalog.json``'s ``planned_cells``) with no row at all, as
  status ``missing``.

Each measured cell says how far its timing is to be trusted: ``cpu_share`` and
``load_per_cpu`` (the machine while it was timed) and ``timing_flags`` (loaded, noisy,
non-monotone in size: :mod:`diffcompare.results.trust`).

Nothing is dropped: a failed or missing cell stays with its status (see
:data:`diffcompare.results.schema.CELL_STATUSES`).

It is the one tidy table of a run: ``results.load(dir).cells``, what
``diffcompare.compare()`` returns and what ``diffcompare export`` writes. Its columns are
documented, with their units, in :data:`CELLS_TABLE_DOCS`, rendered with the phase rows'
into ``docs/results.md`` (:func:`markdown`).

>>> cells_table(None).columns[:6].tolist()
['problem', 'size', 'seed', 'backend', 'dtype', 'family']
"""
from __future__ import annotations

import math

import numpy as np

from ..backends.registry import FAMILIES, MODES
from ..measure import memory
from ..measure.stats import Stats
from .catalog import is_exact
from .folder import finished_cells
from .schema import CELL_COLUMNS, CELL_STATUSES, COLUMNS, OPERATOR_PHASES, READER_STATUSES
from .trust import timing_flags

CELL = list(CELL_COLUMNS)

#: Which column of which phase's ok row becomes which column of the cells table.
PHASE_MEASURES = {
    "prepare": {"time_median_s": "prepare_s", "expr_ops": "expr_ops", "expr_ops_cse": "expr_ops_cse",
                "prepared_bytes": "prepared_bytes"},
    "function": {"time_median_s": "function_s", "timed_path": "timed_path"},
    "gradient": {"time_median_s": "gradient_s", "time_iqr_s": "gradient_iqr_s",
                 "time_min_s": "gradient_min_s", "peak_bytes": "peak_bytes",
                 "memory_source": "memory_source", "saved_graph_bytes": "saved_graph_bytes",
                 "evaluations": "evaluations", "n_inputs": "n_inputs", "error_rel": "error_rel",
                 "error_rho": "error_rho", "reference": "reference", "device": "device",
                 "compute_dtype": "compute_dtype"},
    "hvp": {"time_median_s": "hvp_s"},
}
#: The cells table's columns, in order (``ratio`` = gradient_s / function_s; ``cpu_share`` the
#: lowest and ``load_per_cpu`` the highest of the function's and the gradient's timings;
#: ``timing_flags`` why the cell's timing is not to be trusted, :mod:`.trust`).
CELLS_TABLE_COLUMNS = CELL + ["family", "mode", "exact", "status", "message"] + [
    c for m in PHASE_MEASURES.values() for c in m.values()] + [
    "gradient_q1_s", "gradient_q3_s", "cpu_share", "load_per_cpu", "ratio", "timing_flags"]

#: Every column of the cells table, in order: ``column -> (unit, meaning)``.  The one place
#: the table is documented (``docs/results.md`` is rendered from it by :func:`markdown`; a
#: test keeps its keys equal to ``CELLS_TABLE_COLUMNS``).  A measured value is empty (NaN)
#: unless that phase was ``ok``.
CELLS_TABLE_DOCS = {
    "problem": ("", "Problem name from the catalog (or the function's name, from `compare()`)."),
    "size": ("problem's `size_meaning`", "Problem size: what it counts is the problem's own "
             "(`n` scalars, a batch, steps)."),
    "seed": ("", "Seed of the problem's inputs."),
    "backend": ("", "The method: a backend name, e.g. `engine`, `fd-central`, `jax-jit`."),
    "dtype": ("", "Floating dtype the cell ran in, e.g. `float64`."),
    "family": ("", f"The method's family: {', '.join(FAMILIES)}."),
    "mode": ("", f"{' or '.join(f'`{m}`' for m in MODES)} mode, empty for methods that are neither."),
    "exact": ("", "Whether the method is exact up to rounding (AD, symbolic, hand-written), as "
              "`catalog.json` describes it; not finite differences, nor a reduced-precision "
              "variant (`jax-jit-tf32`). A folder that does not describe it: by its family."),
    "status": ("", "The cell's status: ok, unsupported, unavailable, timeout, error, crashed, "
               "skipped, or unfinished / missing (a cell the run did not finish / never reached)."),
    "message": ("", "Why the status is not ok (exception, signal, limit, reason); else a note "
                "or empty."),
    "prepare_s": ("s", "Seconds of the one call that prepares the method (derive, generate code, "
                  "trace, compile)."),
    "expr_ops": ("operations", "Symbolic methods: expression size before common-subexpression "
                 "elimination."),
    "expr_ops_cse": ("operations", "Symbolic methods: expression size after common-subexpression "
                     "elimination."),
    "prepared_bytes": ("bytes", "Memory the prepared method keeps between calls (compiled code, "
                       "device copies)."),
    "function_s": ("s", "Median seconds of one call of the plain function, as this method runs it."),
    "timed_path": ("", "What the function's and the gradient's timed calls ran, alike (e.g. "
                   "`XLA executables (jax.jit, compiled in prepare)`): `ratio` compares like "
                   "with like."),
    "gradient_s": ("s", "Median seconds of one gradient call (a vector-Jacobian product for vector "
                   "outputs)."),
    "gradient_iqr_s": ("s", "Interquartile range of the gradient's per-call seconds."),
    "gradient_min_s": ("s", "Fastest per-call seconds of the gradient seen."),
    "peak_bytes": ("bytes", "Peak memory of one gradient call (how it was measured: `memory_source`)."),
    "memory_source": ("", f"How `peak_bytes` was measured: {memory.sources_in_words()}."),
    "saved_graph_bytes": ("bytes", "The engine: bytes of tensors its graph saved for backward."),
    "evaluations": ("count", "Function evaluations one gradient makes (finite differences: n+1, "
                    "2n, ...)."),
    "n_inputs": ("count", "Number of differentiated scalars."),
    "error_rel": ("1 (ratio)", "Largest relative error of the gradient against `reference`."),
    "error_rho": ("1 (ratio)", "Largest rho = abs(x - y) / max(1, abs(x) + abs(y)) of the gradient "
                  "against `reference`."),
    "reference": ("", "What the accuracy was measured against: `sympy-reverse-exact@50digits`, "
                  "an `extended-precision gradient: ...` (long double), or the `float64 "
                  "agreement of exact methods (...)`, each saying how it was made."),
    "device": ("", "Where the gradient was computed, as read back from its output, e.g. `cpu`, "
               "`gpu:0 NVIDIA H200`."),
    "compute_dtype": ("", "Dtype the method computed in: `float64` in a `float32` cell means it "
                      "upcast."),
    "hvp_s": ("s", "Median seconds of one Hessian-vector product, where measured."),
    "gradient_q1_s": ("s", "First quartile of the gradient's per-call seconds."),
    "gradient_q3_s": ("s", "Third quartile of the gradient's per-call seconds."),
    "cpu_share": ("1 (ratio)", "The lowest CPU time ÷ wall time of the function's and the "
                  "gradient's timing samples: below 1, the process waited for its CPU."),
    "load_per_cpu": ("1 (ratio)", "The highest 1-minute load average ÷ CPUs of the host around "
                     "those samples."),
    "ratio": ("1 (ratio)", "`gradient_s / function_s`: the gradient's cost in function calls."),
    "timing_flags": ("", "Why the cell's timing is not to be trusted (`loaded`, `noisy`, "
                     "`non-monotone`, each with its numbers; `results.trust`), else empty."),
}
_NUMERIC = ("prepare_s", "function_s", "gradient_s", "gradient_iqr_s", "gradient_min_s", "hvp_s",
            "gradient_q1_s", "gradient_q3_s", "cpu_share", "load_per_cpu",
            "peak_bytes", "prepared_bytes", "saved_graph_bytes", "evaluations", "n_inputs", "error_rel", "error_rho",
            "expr_ops", "expr_ops_cse")


# --------------------------------------------------------------------------- names

def _ordered(names, known) -> list:
    names = list(dict.fromkeys(str(n) for n in names if n is not None))
    rank = {n: i for i, n in enumerate(known)}
    return sorted(names, key=lambda n: rank.get(n, len(rank)))      # stable: the rest as given


def backend_order(names, catalog: dict | None = None) -> list:
    """``names`` (deduplicated) in the order the run listed its methods (``catalog.json``),
    unknown ones after, in the order given."""
    return _ordered(names, (catalog or {}).get("backends") or ())


def problem_order(names, catalog: dict | None = None) -> list:
    """``names`` in the order the run listed its problems (``catalog.json``), unknown ones
    after, in the order given."""
    return _ordered(names, (catalog or {}).get("problems") or ())


def problem_info(name: str, catalog: dict | None = None) -> dict:
    """Description, tags, size meaning and smoothness of problem ``name`` as the results
    folder's ``catalog`` stores it (``{}`` where it does not: a folder from before
    ``catalog.json``, or a problem it does not list)."""
    return dict(((catalog or {}).get("problems") or {}).get(name) or {})


def backend_fact(backend, key: str, catalog: dict | None = None):
    """``key`` of :func:`~diffcompare.results.catalog.describe_backend` for ``backend`` as
    ``catalog`` stores it; None where it does not (older folders lack some keys)."""
    return (((catalog or {}).get("backends") or {}).get(str(backend)) or {}).get(key)


def family_of(backend, catalog: dict | None = None) -> str:
    """The family of ``backend`` from ``catalog``, else ``"unknown"``."""
    return backend_fact(backend, "family", catalog) or "unknown"


# --------------------------------------------------------------------------- the table

def exact_of(backend, family, catalog: dict | None = None) -> bool:
    """Whether ``backend`` is exact up to rounding: ``catalog``'s description of it, else
    its ``family`` (:func:`~diffcompare.results.catalog.is_exact`).

    >>> exact_of("jax-jit-tf32", "jax", {"backends": {"jax-jit-tf32": {"exact": False}}})
    False
    >>> exact_of("my-method", "jax"), exact_of("fd-central", "finite-difference")
    (True, False)
    """
    stated = backend_fact(backend, "exact", catalog)
    return bool(stated) if stated is not None else is_exact(family)


def planned_cells(catalog: dict | None) -> list:
    """The (problem, size, seed, backend, dtype) keys the run planned (``catalog.json``)."""
    out = []
    for key in (catalog or {}).get("planned_cells") or []:
        p, size, seed, b, dtype = key
        out.append((p, int(size), int(seed), b, dtype))
    return list(dict.fromkeys(out))


def cells_table(rows, catalog: dict | None = None):
    """One row per backend cell (see the module docstring), ``CELLS_TABLE_COLUMNS`` wide."""
    import pandas as pd

    if rows is None or len(rows) == 0:
        table = pd.DataFrame(columns=CELLS_TABLE_COLUMNS[:-1])
    else:
        rows = rows.copy()
        rows["size"] = pd.to_numeric(rows["size"], errors="coerce").astype("Int64")
        rows["seed"] = pd.to_numeric(rows["seed"], errors="coerce").astype("Int64")
        finished = finished_cells(rows.to_dict("records"))
        keys = list(map(tuple, rows[CELL].astype(object).values.tolist()))
        is_done = pd.Series([k in finished for k in keys], index=rows.index)
        done = rows[(rows["phase"] == "cell") & is_done].drop_duplicates(subset=CELL, keep="last")
        table = done[CELL + ["family", "status", "message"]].copy()
        open_ = rows[~is_done].drop_duplicates(subset=CELL, keep="last")[CELL + ["family"]].copy()
        if len(open_):
            open_["status"] = "unfinished"
            open_["message"] = READER_STATUSES["unfinished"]
            table = pd.concat([table, open_], ignore_index=True)
        for phase, mapping in PHASE_MEASURES.items():
            part = rows[(rows["phase"] == phase) & (rows["status"] == "ok") & is_done]
            part = part.drop_duplicates(subset=CELL, keep="last").reindex(columns=CELL + list(mapping))
            table = table.merge(part.rename(columns=mapping), on=CELL, how="left")
        # a cell refused after preparing has its count of inputs on the prepare row only
        prep = rows[(rows["phase"] == "prepare") & rows["n_inputs"].notna() & is_done]
        prep = prep.drop_duplicates(subset=CELL, keep="last")[CELL + ["n_inputs"]]
        table = table.merge(prep.rename(columns={"n_inputs": "_n_prepare"}), on=CELL, how="left")
        table["n_inputs"] = table["n_inputs"].fillna(table.pop("_n_prepare"))
        grad = rows[(rows["phase"] == "gradient") & (rows["status"] == "ok") & is_done]
        grad = grad.drop_duplicates(subset=CELL, keep="last")
        quartiles = [_sample_quartiles(s) for s in grad["time_samples"]]
        grad = grad[CELL].assign(gradient_q1_s=[q[0] for q in quartiles],
                                 gradient_q3_s=[q[1] for q in quartiles])
        table = table.merge(grad, on=CELL, how="left")
        table = table.merge(_timing_conditions(rows[is_done]), on=CELL, how="left")
    present = set(map(tuple, table[CELL].astype(object).values.tolist())) if len(table) else set()
    absent = [k for k in planned_cells(catalog) if k not in present]
    if absent:
        extra = pd.DataFrame(absent, columns=CELL)
        extra["status"] = "missing"
        extra["message"] = READER_STATUSES["missing"]
        table = pd.concat([table, extra], ignore_index=True)
    for c in CELLS_TABLE_COLUMNS:
        if c not in table:
            table[c] = None
    table = table[CELLS_TABLE_COLUMNS].copy()
    for c in _NUMERIC:
        table[c] = pd.to_numeric(table[c], errors="coerce").astype("float64")
    table["size"] = pd.to_numeric(table["size"], errors="coerce").astype("Int64")
    table["seed"] = pd.to_numeric(table["seed"], errors="coerce").astype("Int64")
    table["family"] = [f if isinstance(f, str) and f else family_of(b, catalog)
                       for f, b in zip(table["family"], table["backend"])]
    modes = {b: backend_fact(b, "mode", catalog) for b in table["backend"].unique()}
    table["mode"] = table["backend"].map(modes)
    table["exact"] = [exact_of(b, f, catalog) for b, f in zip(table["backend"], table["family"])]
    table["ratio"] = table["gradient_s"] / table["function_s"]
    table["timing_flags"] = timing_flags(table)
    return sort_cells(table, catalog)


def _timing_conditions(rows):
    """Per finished cell, how undisturbed its function and gradient timings were: the lowest
    ``cpu_share`` and the highest ``load_per_cpu`` of the two (folders from before these
    columns: none)."""
    import pandas as pd

    timed = rows[rows["phase"].isin(["function", "gradient"]) & (rows["status"] == "ok")]
    timed = timed.drop_duplicates(subset=CELL + ["phase"], keep="last")
    columns = {"cpu_share": "min", "load_per_cpu": "max"}
    out = timed[CELL].copy()
    for c in columns:
        out[c] = pd.to_numeric(timed[c], errors="coerce") if c in timed else np.nan
    if out.empty:
        return pd.DataFrame(columns=CELL + list(columns))
    return out.groupby(CELL, as_index=False, sort=False, dropna=False).agg(columns)


#: The operators table (:func:`operators_table`), column by column: ``name -> (unit, meaning)``.
OPERATORS_TABLE_DOCS = {
    **{c: CELLS_TABLE_DOCS[c] for c in CELL},
    "operator": ("", "The measured operator (`diffcompare.problems.MEASURED_OPERATORS`): "
                 "`jacobian`, `jacobian_sparse`, `hessian`, `hessian_sparse`, `hvp` or "
                 "`hessian_diagonal`; its phase rows are named after it."),
    "status": ("", "The operator row's own status (never the cell's): `ok`, `unsupported` (the "
               "method has no native way, or the operator needs the other kind of output), "
               "`error`, ..."),
    "message": ("", "Why the status is not ok (the method's reason, the exception)."),
    "how": ("", "How the method computed it (`diffcompare.operators.capabilities()`'s words; "
            "the sparse ones: mode and colours)."),
    "prepare_s": ("s", "Seconds of the operator's prepare phase, once: the method's preparation "
                  "(tracing, compiling, deriving) and, for a sparse operator, detecting and "
                  "colouring the pattern."),
    "evaluate_s": ("s", "Median seconds of one evaluation after preparation (a sparse one: its "
                   "compressed products and the decompression)."),
    "gradient_s": ("s", "Median seconds of the same cell's gradient, for scale."),
    "ratio": ("1 (ratio)", "evaluate_s ÷ gradient_s."),
    "peak_bytes": ("bytes", "Peak memory of one evaluation."),
    "error_rho": ("1 (ratio)", "Largest rho error against `reference`."),
    "reference": ("", "What the error is measured against: an exact value from the inputs, cᵀJ "
                  "against the reference VJP for a Jacobian, central differences of the exact "
                  "gradient program at 100 digits for a Hessian (its columns) or H v."),
    "colours": ("count", "Sparse operators: colours of the pattern used (compressed products); "
                "empty for a symbolic method's nonzero entries (no colouring)."),
    "colour_lower_bound": ("count", "Sparse operators: colours no colouring of its kind beats -- "
                           "the most nonzeros in one row (column) of the pattern (equal to "
                           "colours is optimal), 2 for a Hessian's star colouring."),
    "passes": ("count", "Sparse operators: products (or function calls) made per evaluation."),
    "pattern_nnz": ("count", "Sparse operators: nonzeros of the detected sparsity pattern (a "
                    "symbolic method's: of its nonzero entries)."),
    "mode": ("", "Sparse operators: the direction taken (forward, reverse, differences, "
             "the HVP's way and colouring kind, symbolic nonzero entries)."),
    "detect_s": ("s", "Sparse operators: seconds detecting the pattern (part of prepare_s)."),
    "colour_s": ("s", "Sparse operators: seconds colouring it (part of prepare_s)."),
    "conservative": ("", "Sparse operators: the ops whose pattern was over-approximated "
                     "(comma-separated), else empty."),
}

#: Columns of :func:`operators_table`.
OPERATORS_TABLE_COLUMNS = list(OPERATORS_TABLE_DOCS)

#: the operators table's columns read from a row's ``extra``
_FROM_EXTRA = ("how", "prepare_s", "colours", "colour_lower_bound", "passes", "pattern_nnz",
               "mode", "detect_s", "colour_s", "conservative")


def operators_table(rows, catalog: dict | None = None):
    """One row per derivative operator measured in a finished cell (``OPERATOR_PHASES``),
    columns ``OPERATORS_TABLE_DOCS``: status and reason, how, prepare apart from evaluate,
    the evaluation beside the cell's gradient (``ratio``), memory, error and reference, and
    a sparse operator's colours, bound, passes and pattern.

    >>> operators_table(None).columns[5:9].tolist()
    ['operator', 'status', 'message', 'how']
    """
    import pandas as pd

    if rows is None or len(rows) == 0:
        return pd.DataFrame(columns=OPERATORS_TABLE_COLUMNS)
    finished = finished_cells(rows.to_dict("records"))
    done = rows[[k in finished for k in map(tuple, rows[CELL].astype(object).values.tolist())]]
    part = done[done["phase"].isin(OPERATOR_PHASES)].drop_duplicates(subset=CELL + ["phase"],
                                                                    keep="last")
    grad = done[(done["phase"] == "gradient") & (done["status"] == "ok")]
    grad = grad.drop_duplicates(subset=CELL, keep="last")[CELL + ["time_median_s"]]
    table = part.rename(columns={"phase": "operator", "time_median_s": "evaluate_s"}).merge(
        grad.rename(columns={"time_median_s": "gradient_s"}), on=CELL, how="left")
    extras = [e if isinstance(e, dict) else {} for e in table.get("extra", [None] * len(table))]
    for c in _FROM_EXTRA:
        table[c] = [e.get(c) for e in extras]
    table["conservative"] = [", ".join(c) if isinstance(c, list) else c
                             for c in table["conservative"]]
    table.loc[table["status"] != "ok", "evaluate_s"] = None
    for c in ("evaluate_s", "gradient_s", "error_rho", "peak_bytes", "prepare_s", "detect_s",
              "colour_s", "colours", "colour_lower_bound", "passes", "pattern_nnz"):
        table[c] = pd.to_numeric(table[c], errors="coerce").astype("float64")
    table["ratio"] = table["evaluate_s"] / table["gradient_s"]
    table = sort_cells(table[OPERATORS_TABLE_COLUMNS].copy(), catalog) if len(table) else table
    return table[OPERATORS_TABLE_COLUMNS].reset_index(drop=True)


def _sample_quartiles(samples) -> tuple:
    """(q1, q3) of a row's timing samples (:class:`~diffcompare.measure.stats.Stats`);
    (nan, nan) without samples."""
    values = finite(samples) if isinstance(samples, (list, tuple, np.ndarray)) else []
    if not values:
        return math.nan, math.nan
    stats = Stats(values)
    return stats.q1, stats.q3


def sort_cells(table, catalog: dict | None = None):
    """Cells in the run's order of problems and of backends (``catalog``), then size, seed, dtype."""
    if table.empty:
        return table.reset_index(drop=True)
    p_rank = {p: i for i, p in enumerate(problem_order(table["problem"], catalog))}
    b_rank = {b: i for i, b in enumerate(backend_order(table["backend"], catalog))}
    key = table.assign(_p=table["problem"].map(p_rank), _b=table["backend"].map(b_rank))
    key = key.sort_values(["_p", "size", "seed", "dtype", "_b"], kind="mergesort")
    return key.drop(columns=["_p", "_b"]).reset_index(drop=True)


def median_over_seeds(cells, catalog: dict | None = None):
    """Ok cells averaged over seeds: one row per (problem, size, backend, dtype), medians, in
    the run's order (``catalog``)."""
    ok = cells[cells["status"] == "ok"]
    if ok.empty:
        return ok.drop(columns=["seed"])
    keys = ["problem", "size", "backend", "dtype"]
    numeric = [c for c in ok.columns if ok[c].dtype.kind == "f"]
    agg = {c: "median" if c in numeric else "first"          # text: the method's facts
           for c in ok.columns if c not in keys and c != "seed"}
    if "timing_flags" in agg:                                # every seed's reasons
        agg["timing_flags"] = _joined_flags
    out = ok.groupby(keys, as_index=False, sort=False, dropna=False).agg(agg)
    return sort_cells(out.assign(seed=0), catalog).drop(columns=["seed"])


# --------------------------------------------------------------------------- documentation

#: Where :func:`markdown` is kept, from the repository's root.
DOCS_PAGE = "docs/results.md"


def markdown() -> str:
    """``docs/results.md``: the cells table and the phase rows, column by column with units,
    rendered from ``CELLS_TABLE_DOCS`` and the row schema (``schema.COLUMNS``)."""
    def cell(text):
        return str(text).replace("|", "\\|") or " "

    origin = {target: f"`{source}` of the `{phase}` row" for phase, mapping in PHASE_MEASURES.items()
              for source, target in mapping.items()}
    origin.update({   # the columns cells_table derives rather than copies
        "status": "`status` of the `cell` row", "message": "`message` of the `cell` row",
        "n_inputs": origin["n_inputs"] + " (else of the `prepare` row)",
        "gradient_q1_s": "`time_samples` of the `gradient` row",
        "gradient_q3_s": "`time_samples` of the `gradient` row",
        "ratio": "`gradient_s` / `function_s`"})
    lines = [
        "# The results tables",
        "",
        "<!-- generated by diffcompare.results.cells.markdown(); regenerate with",
        "     python -c \"from diffcompare.results.cells import markdown; print(markdown(), end='')\""
        " > docs/results.md -->",
        "",
        "A run's results come as two tables with one schema each.",
        "",
        "## The cells table",
        "",
        "One row per backend cell -- one method on one (problem, size, seed, dtype) -- its phases "
        "side by side. The same table, with the same columns, whichever way it is read:",
        "",
        "- `diffcompare.compare(...)` returns it (a `Comparison`, a pandas DataFrame);",
        "- `diffcompare.results.load(DIR).cells` reads it from a results folder;",
        "- `diffcompare export DIR` writes it as CSV (or `--format parquet`).",
        "",
        "Nothing is dropped: a cell that failed, or that the run never finished or reached, stays "
        "with its `status`. A measured column is empty (NaN) unless its phase was `ok`; the column "
        "it comes from in the phase rows is named under *from*.",
        "",
        "| column | unit | meaning | from |",
        "|---|---|---|---|",
    ]
    for name, (unit, meaning) in CELLS_TABLE_DOCS.items():
        lines.append(f"| `{name}` | {cell(unit)} | {cell(meaning)} | {cell(origin.get(name, ''))} |")
    lines += ["", "A cell's `status`:", ""]
    lines += [f"- `{status}`: {meaning}" for status, meaning in CELL_STATUSES.items()]
    lines += [
        "",
        "## The operators table",
        "",
        "One row per derivative operator measured beyond the gradient in a finished cell: those "
        "a problem declares (`Problem.operators`) and those a run asks for (`diffcompare run "
        "--operators`, a suite's `operators`, `compare(..., operator=...)`).",
        "",
        "- `diffcompare.results.load(DIR).operators()` reads it from a results folder;",
        "- `diffcompare.compare(..., operator=...)` returns the cells table with it as its "
        "`operators` attribute.",
        "",
        "| column | unit | meaning |",
        "|---|---|---|",
    ]
    for name, (unit, meaning) in OPERATORS_TABLE_DOCS.items():
        lines.append(f"| `{name}` | {cell(unit)} | {cell(meaning)} |")
    lines += [
        "",
        "## The phase rows",
        "",
        "The long table the cells table is made from: one row per (problem, size, seed, backend, "
        "dtype, phase), phase `prepare`, `function`, `gradient`, a derivative operator "
        f"({', '.join(f'`{p}`' for p in OPERATOR_PHASES)}) or `cell` (one per finished cell, "
        "its status the cell's). It is what `results.jsonl` holds, one JSON object a line; "
        "`diffcompare.results.load(DIR).rows` reads it and `diffcompare export DIR --table phases` "
        "writes it (list and dict columns as JSON text). Every row has every column; a value "
        "that does not apply is empty.",
        "",
        "| column | kind | unit | meaning |",
        "|---|---|---|---|",
    ]
    lines += [f"| `{c.name}` | {c.kind} | {cell(c.unit)} | {cell(c.doc)} |" for c in COLUMNS]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- small helpers

def _joined_flags(flags):
    """The distinct timing flags of several seeds' cells, joined as one cell's are."""
    from .trust import SEPARATOR

    reasons = [r for f in flags if isinstance(f, str) and f for r in f.split(SEPARATOR)]
    return SEPARATOR.join(dict.fromkeys(reasons)) or None


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


def geometric_mean(values) -> float:
    v = [x for x in finite(values) if x > 0]
    return float(np.exp(np.mean(np.log(v)))) if v else math.nan


__all__ = ["CELL", "CELLS_TABLE_COLUMNS", "CELLS_TABLE_DOCS", "PHASE_MEASURES", "markdown",
           "cells_table", "median_over_seeds",
           "OPERATORS_TABLE_COLUMNS", "OPERATORS_TABLE_DOCS", "operators_table",
           "planned_cells", "backend_order", "problem_order", "problem_info", "family_of",
           "sort_cells", "finite", "geometric_mean", "is_exact"]
