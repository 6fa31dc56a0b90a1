"""A synthetic results folder with every kind of cell and hostile names.

Problem and backend names carry markup (``<script>alert(1)</script>``, an ``<img onerror>``
attribute breakout), messages and study texts carry tags, so a report that forgets to
escape anything shows it.  Cells cover every status the report must show: ok (three sizes,
two seeds, float64 and float32), unsupported (also one raised as ``UnsupportedError``
during measuring), timeout, error, crashed, skipped, an unfinished cell (rows but no
completion row) and a planned cell with no row at all.
"""
from __future__ import annotations

import json
from pathlib import Path

EVIL_PROBLEM = "<script>alert(1)</script>"
EVIL_BACKEND = 'evil"><img src=x onerror=alert(2)>'
EVIL_MESSAGE = "boom <b>not bold</b> & <i>friends</i>"
CATALOG_PROBLEM = "rosenbrock"


def _row(**values):
    from diffcompare.results.schema import make_row

    base = dict(run_id="synthetic-run", seed=0, dtype="float64", family="engine",
                finished_at="2026-01-01T00:00:10.000+00:00")
    base.update(values)
    return make_row(**base)


def _ok_cell(problem, size, backend, family, t_grad, t_func, err, seed=0, dtype="float64",
             peak=None, saved=None, source="tracemalloc"):
    common = dict(problem=problem, size=size, backend=backend, family=family, seed=seed, dtype=dtype)
    return [
        _row(**common, phase="prepare", status="ok", time_median_s=1e-4 if family != "symbolic" else 0.2,
             n_inputs=size, expr_ops=40 * size if family == "symbolic" else None),
        _row(**common, phase="function", status="ok", time_median_s=t_func, n_inputs=size),
        _row(**common, phase="gradient", status="ok", time_median_s=t_grad, time_iqr_s=t_grad / 20,
             peak_bytes=peak or 1000 * size, memory_source=source, saved_graph_bytes=saved,
             evaluations=1 if family != "finite-difference" else size + 1, n_inputs=size,
             error_rel=err, error_rho=err, reference="mpmath-50-digits <ref>"),
        _row(**common, phase="cell", status="ok"),
    ]


def _failed_cell(problem, size, backend, family, status, message):
    return [_row(problem=problem, size=size, backend=backend, family=family, phase="cell",
                 status=status, message=message)]


def rows() -> list:
    out = []
    for size in (4, 16, 64):
        for seed in (0, 1):
            out += _ok_cell(EVIL_PROBLEM, size, "engine", "engine", 2e-5 * size ** 0.5, 5e-6, 0.0,
                            seed=seed, saved=64 * size)
            out += _ok_cell(EVIL_PROBLEM, size, "fd-central", "finite-difference", 1e-6 * size,
                            5e-7, 3e-10 * size, seed=seed)
            out += _ok_cell(EVIL_PROBLEM, size, EVIL_BACKEND, "manual", 1e-6, 2e-6, 1e-16, seed=seed)
        out += _ok_cell(CATALOG_PROBLEM, size, "engine", "engine", 3e-5 * size, 6e-6 * size, 2e-16,
                        saved=32 * size)
        out += _ok_cell(CATALOG_PROBLEM, size, "jax-jit", "jax", 1e-5, 2e-6 * size, 1e-16,
                        source="not-measured", peak=None)
        out += _ok_cell(CATALOG_PROBLEM, size, "engine-jvp", "engine", 4e-5 * size, 6e-6 * size,
                        2e-16)    # forward mode: a JVP per input
    out += _ok_cell(EVIL_PROBLEM, 4, "engine", "engine", 3e-5, 6e-6, 3e-7, dtype="float32", saved=32)
    out += _failed_cell(EVIL_PROBLEM, 4, "sympy", "symbolic", "unsupported", "too many inputs <400>")
    out += _failed_cell(EVIL_PROBLEM, 16, "sympy", "symbolic", "unsupported",
                        "expression swell <huge> (refused while measuring)")
    out += _failed_cell(EVIL_PROBLEM, 64, "sympy", "symbolic", "timeout", "no progress for 30 s")
    out += _failed_cell(CATALOG_PROBLEM, 4, "sympy", "symbolic", "error", f"ValueError: {EVIL_MESSAGE}")
    out += _failed_cell(CATALOG_PROBLEM, 16, "sympy", "symbolic", "crashed", "worker died: SIGKILL")
    out += _failed_cell(CATALOG_PROBLEM, 64, "sympy", "symbolic", "skipped", "a smaller size timed out")
    # unfinished: prepare row written, no completion row
    out.append(_row(problem=CATALOG_PROBLEM, size=64, backend="fd-central", family="finite-difference",
                    phase="prepare", status="ok", time_median_s=1e-5))
    return out


def run_json() -> dict:
    return {
        "run_id": "synthetic-run",
        "started_at": "2026-01-01T00:00:00.000+00:00",
        "suite": {
            "name": "synthetic <suite>", "description": "hostile <em>names</em>",
            "seeds": [0], "dtypes": ["float64"], "timeout_s": 30, "cell_options": {},
            "studies": ["fd_steps", "breakeven", "scaling"],
            "grid": [
                {"problems": [EVIL_PROBLEM], "backends": ["engine", "fd-central", EVIL_BACKEND, "sympy"],
                 "sizes": [4, 16, 64]},
                {"problems": [CATALOG_PROBLEM], "backends": ["engine", "jax-jit", "sympy", "fd-central",
                                                             "torch", "engine-jvp"],
                 "sizes": [4, 16, 64]},
            ],
        },
        "environment": {"python": "3.11.7", "platform": "Linux <x86_64>", "cpu_model": "CPU <i>fast</i>",
                        "cpu_count": 2, "cpu_affinity": 2, "gpu": None,
                        "versions": {"numpy": "2.0 <dev>"}, "thread_env": {"OMP_NUM_THREADS": "1"},
                        "hostname": "host<1>"},
        "sessions": [{"started_at": "2026-01-01T00:00:00.000+00:00", "hostname": "host<1>", "pid": 1}],
    }


def catalog_json() -> dict:
    """What the runner stores about the run's problems, methods and planned cells."""
    planned = [[block["problems"][0], size, 0, b, "float64"]
               for block in run_json()["suite"]["grid"] for size in block["sizes"] for b in block["backends"]]
    from diffcompare.results.catalog import describe_backend, describe_problem
    from diffcompare import problems

    # the run's order: rosenbrock first; the evil backend is not described (unknown: last)
    return {"problems": {CATALOG_PROBLEM: describe_problem(problems.get(CATALOG_PROBLEM)),
                         EVIL_PROBLEM: {"description": "evil <b>problem</b>", "tags": ["smooth"],
                                        "size_meaning": "n", "smooth": True, "sizes": [4, 16, 64]}},
            "backends": {b: describe_backend(b) for b in ("engine", "sympy", "fd-central", "jax-jit",
                                                          "torch", "engine-jvp")},
            "planned_cells": planned}


def fd_steps_rows() -> list:
    out = []
    for method, floor, bottom in (("fd-forward", 1e-8, 8), ("fd-central", 1e-10, 5),
                                  ("fd-complex-step", 0.0, 8)):
        for dtype, scale in (("float64", 1.0), ("float32", 1e8)):
            for k in range(1, 21):
                h = 10.0 ** -k
                if method == "fd-complex-step":
                    err = 0.0 if k >= bottom else h * h
                else:
                    err = floor * scale * (10.0 ** abs(k - bottom))
                out.append({"method": method, "dtype": dtype, "k": k, "h": h, "x": 1.5, "gradient": 4.0,
                            "exact": 4.05, "abs_error": err * 4, "rel_error": min(err, 1.0), "status": "ok",
                            "message": "", "reference": "exact <50 digits>", "model_best_h": 1e-8,
                            "model_best_error": floor or float("nan")})
    return out


def write(folder) -> Path:
    """Write the synthetic results folder (results.jsonl, run.json, studies/) and return it."""
    import pandas as pd

    folder = Path(folder)
    (folder / "studies").mkdir(parents=True, exist_ok=True)
    with open(folder / "results.jsonl", "w", encoding="utf-8") as f:
        for r in rows():
            f.write(json.dumps(r) + "\n")
    (folder / "run.json").write_text(json.dumps(run_json(), indent=2), encoding="utf-8")
    (folder / "catalog.json").write_text(json.dumps(catalog_json(), indent=2), encoding="utf-8")
    from diffcompare.studies import fd_steps, record_views

    frame = pd.DataFrame(fd_steps_rows())
    frame.to_csv(folder / "studies" / "fd_steps.csv", index=False)
    (folder / "studies" / "fd_steps.findings.json").write_text(json.dumps({
        "study": "fd_steps", "title": "FD <steps>", "kind": "run", "expected": "a V <shape>",
        "status": "checks-failed", "message": None, **record_views(folder, "fd_steps", fd_steps, frame),
        "findings": [{"name": "forward <min>", "expected": "1e-8 <x>", "measured": "2e-8 <y>", "ok": True},
                     {"name": "central", "expected": "1e-10", "measured": "1e-6 <bad>", "ok": False},
                     {"name": "float32", "expected": "worse", "measured": "no data: <none>", "ok": None}],
    }), encoding="utf-8")
    (folder / "studies" / "breakeven.findings.json").write_text(json.dumps({
        "study": "breakeven", "title": "Break-even", "kind": "analyze", "expected": "pays off",
        "status": "error", "message": "Traceback: KeyError <'prepare_s'>", "findings": [],
    }), encoding="utf-8")
    # scaling is planned by the suite but wrote nothing: the report must say it is missing
    return folder
