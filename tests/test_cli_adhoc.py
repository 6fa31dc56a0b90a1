"""The command line without a TOML file: `run --problems ...`, `export`, `list capabilities`."""
from __future__ import annotations

import textwrap

import pandas as pd
import pytest

from diffcompare import cli, problems
from diffcompare.results.cells import CELLS_TABLE_COLUMNS
from diffcompare.runner import load_results

USER_PROBLEMS = textwrap.dedent('''
    import numpy as np
    from diffcompare.problems import Problem, register

    register(Problem(name="cli_cube_sum", fn=lambda xp, x: xp.sum(x ** 3),
                     make_inputs=lambda size, seed: (np.random.default_rng(seed).standard_normal(size),),
                     description="sum of cubes"), replace=True)
''')


def _error_line(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_run_problems_backends_sizes_and_a_problem_module(tmp_path, capsys):
    module = tmp_path / "my_problems.py"
    module.write_text(USER_PROBLEMS)
    results = tmp_path / "out"
    try:
        code = cli.main(["run", "--problems", "rosenbrock,cli_cube_sum", "--backends", "engine",
                         "--sizes", "2,3", "--problem-module", str(module), "--results", str(results),
                         "--quiet"])
    finally:
        if "cli_cube_sum" in {p.name for p in problems.all_problems()}:
            problems.unregister("cli_cube_sum")
    assert code == 0
    frame = load_results(results)
    cells = frame[frame.phase == "cell"]
    assert sorted(zip(cells.problem, cells.backend, cells["size"])) == sorted(
        (p, "engine", s) for p in ("rosenbrock", "cli_cube_sum") for s in (2, 3))
    assert set(cells.status) == {"ok"}

    assert cli.main(["export", str(results), "--format", "csv"]) == 0     # the cells table
    table = pd.read_csv(results / "cells.csv")
    assert len(table) == len(cells) and set(table.problem) == {"rosenbrock", "cli_cube_sum"}
    out = tmp_path / "rows.csv"
    assert cli.main(["export", str(results), "--table", "phases", "-o", str(out)]) == 0
    table = pd.read_csv(out)
    assert len(table) == len(frame) and set(table.problem) == {"rosenbrock", "cli_cube_sum"}
    pytest.importorskip("pyarrow", reason="parquet export needs pyarrow (the 'parquet' extra)")
    pq = tmp_path / "rows.parquet"
    assert cli.main(["export", str(results), "--format", "parquet", "--table", "phases",
                     "-o", str(pq)]) == 0
    back = pd.read_parquet(pq)
    assert len(back) == len(frame) and list(back.columns) == list(frame.columns)
    assert cli.main(["export", str(results), "--format", "parquet", "-o", str(pq)]) == 0
    assert list(pd.read_parquet(pq).columns) == CELLS_TABLE_COLUMNS


@pytest.mark.parametrize("argv, expected", [
    (["--problems", "rosenbrok", "--backends", "engine"], r"unknown problem 'rosenbrok'; known problems: .*gmm"),
    (["--problems", "rosenbrock", "--backends", "engin"], r"unknown backend 'engin'; known backends: .*jax-jit"),
    (["--problems", "rosenbrock", "--sizes", "4,x"], r"--sizes must be integers"),
    (["--backends", "engine"], r"need --problems"),
    (["--suite", "quick", "--problems", "rosenbrock"], r"either --suite or --problems"),
])
def test_bad_run_arguments_are_one_line(tmp_path, capsys, argv, expected):
    import re

    assert cli.main(["run", *argv, "--results", str(tmp_path / "r"), "--quiet"]) == 2
    assert re.search(expected, _error_line(capsys))
    assert not (tmp_path / "r" / "results.jsonl").exists()


def test_export_of_a_missing_folder_is_one_line(tmp_path, capsys):
    assert cli.main(["export", str(tmp_path / "nothing"), "--format", "csv"]) == 2
    assert "not a results folder" in _error_line(capsys)


def test_list_capabilities_fits_100_columns_with_footnotes(capsys):
    assert cli.main(["list", "capabilities"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 100
    legend = " ".join(lines[:lines.index("")]).split()          # the letters' legend, names whole
    from diffcompare import backends
    assert {f"{chr(ord('a') + i)}={b}" for i, b in enumerate(backends.names())} <= set(legend)
    rows = {line.split()[0]: line.split()[1:] for line in lines
            if line and line.split()[0] in {p.name for p in problems.all_problems()}}
    assert rows["rosenbrock"][0] == "ok" and len(rows) == len(problems.all_problems())
    gmm_sympy = rows["gmm"][2]                       # column c = sympy
    assert gmm_sympy.isdigit()
    note = next(line for line in lines if line.strip().startswith(f"{gmm_sympy}  "))
    assert "sympy" in note and "large-expression" in out
