"""Synthetic grid results in the runner's schema, for the grid studies' tests."""
from __future__ import annotations

import json
from pathlib import Path


def cell_rows(problem, size, backend, *, family="engine", n_inputs=None, prepare_s=1e-5,
              function_s=None, gradient_s=None, status="ok", **gradient_fields):
    """The rows the runner writes for one backend cell: prepare, function, gradient and the
    ``cell`` completion row (only the cell row when ``status`` is not ok)."""
    from diffcompare.results.schema import make_row

    base = dict(run_id="synthetic", problem=problem, size=size, seed=0, backend=backend,
                family=family, dtype="float64")
    if status != "ok":
        return [make_row(**base, phase="cell", status=status, message=f"{backend} says no")]
    rows = [make_row(**base, phase="prepare", status="ok", time_median_s=prepare_s, n_inputs=n_inputs,
                     expr_ops=gradient_fields.pop("expr_ops", None))]
    if function_s is not None:
        rows.append(make_row(**base, phase="function", status="ok", time_median_s=function_s,
                             n_inputs=n_inputs))
    if gradient_s is not None:
        rows.append(make_row(**base, phase="gradient", status="ok", time_median_s=gradient_s,
                             n_inputs=n_inputs, **gradient_fields))
    rows.append(make_row(**base, phase="cell", status="ok"))
    return rows


def results_frame(tmp_path, rows):
    """``rows`` written as a results log and read back with ``load_results``."""
    from diffcompare.runner import load_results

    folder = Path(tmp_path) / "synthetic-results"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "results.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return load_results(folder)
