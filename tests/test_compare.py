"""compare(): a function through the runner into the cells table, with statuses and a plot;
the same table as ``results.load(folder).cells`` and ``diffcompare export``."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import diffcompare
from diffcompare import cli, results
from diffcompare.results.cells import CELLS_TABLE_COLUMNS


def norm_of(xp, x):
    return xp.linalg.norm(x)         # NumPy has it; the engine may not (outside the contract)


@pytest.fixture(scope="module")
def norm_run(tmp_path_factory):
    """One compare() run into a folder kept for the module: (table, folder)."""
    folder = tmp_path_factory.mktemp("norm")
    table = diffcompare.compare(norm_of, inputs=(np.array([3.0, 4.0]),),
                                backends=["fd-central", "engine", "manual"],
                                results_dir=folder, samples=3)
    return table, folder


def test_fixed_inputs_statuses_and_plot(norm_run):
    table, _ = norm_run
    assert list(table.columns) == CELLS_TABLE_COLUMNS and list(table["size"]) == [2, 2, 2]
    rows = table.set_index("backend")
    assert rows.at["fd-central", "status"] == "ok"
    assert rows.at["fd-central", "error_rho"] < 1e-8           # d|x|/dx = x/|x| = [0.6, 0.8]
    assert rows.at["fd-central", "ratio"] == pytest.approx(
        rows.at["fd-central", "gradient_s"] / rows.at["fd-central", "function_s"])
    # one contract, one verdict: a name outside the contract that the engine lacks is an
    # "unsupported" row that says so, not an error (once the engine has it, it runs)
    from diffcompare.problems import contract
    if contract.has_name("engine", "linalg.norm"):
        assert rows.at["engine", "status"] == "ok"
    else:
        assert rows.at["engine", "status"] == "unsupported"
        assert ("xp.linalg.norm is outside diffcompare's xp contract"
                in rows.at["engine", "message"])
    assert rows.at["manual", "status"] == "unsupported"
    html = table._repr_html_()
    assert "norm_of" in html and "no hand-written gradient for norm_of" in html
    import matplotlib
    matplotlib.use("Agg")
    ax = table.plot_against_size("gradient_s")
    ran = sorted(table[table["status"] == "ok"]["backend"])
    assert sorted(line.get_label() for line in ax.get_lines()) == ran


def _comparable(frame) -> dict:
    """column -> its values, empty ones as None, numbers as floats (a CSV's types differ)."""
    out = {}
    for name in frame.columns:
        values = []
        for v in frame[name].astype(object):
            if v is None or (not isinstance(v, str) and pd.isna(v)):
                values.append(None)
            elif isinstance(v, (int, float, np.integer, np.floating)):
                values.append(float(v))
            else:
                values.append(v)
        out[name] = values
    return out


def test_compare_load_and_export_give_one_table(norm_run, tmp_path):
    """One schema for one table: what compare() returns is the folder's cells table, and
    `diffcompare export` writes it, column for column and value for value."""
    table, folder = norm_run
    cells = results.load(folder).cells
    pd.testing.assert_frame_equal(pd.DataFrame(table), cells)
    out = tmp_path / "cells.csv"
    assert cli.main(["export", str(folder), "-o", str(out)]) == 0
    written = pd.read_csv(out)
    assert list(written.columns) == CELLS_TABLE_COLUMNS
    assert _comparable(written) == _comparable(cells)
    phases = tmp_path / "phases.csv"
    assert cli.main(["export", str(folder), "--table", "phases", "-o", str(phases)]) == 0
    assert len(pd.read_csv(phases)) == len(results.load(folder).rows)


def test_bad_arguments_are_clear():
    with pytest.raises(ValueError, match="inputs=.* or make_inputs"):
        diffcompare.compare(norm_of, sizes=[2])
    with pytest.raises(ValueError, match="unknown backend"):
        diffcompare.compare("rosenbrock", sizes=[2], backends=["nope"])
    with pytest.raises(TypeError, match="takes a Problem"):
        diffcompare.compare(42)
    with pytest.raises(KeyError, match="unknown problem"):
        diffcompare.compare("no_such_problem", sizes=[2])
