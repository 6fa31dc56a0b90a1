"""compare(): a function through the runner into a tidy table, with statuses and a plot."""
from __future__ import annotations

import numpy as np
import pytest

import diffcompare
from diffcompare.comparison import COLUMNS


def norm_of(xp, x):
    return xp.linalg.norm(x)         # NumPy has it; the engine may not (outside the contract)


def test_fixed_inputs_statuses_and_plot(tmp_path):
    x = np.array([3.0, 4.0])
    table = diffcompare.compare(norm_of, inputs=(x,), backends=["fd-central", "engine", "manual"],
                                results_dir=tmp_path, samples=3)
    assert list(table.columns) == COLUMNS and list(table["size"]) == [2, 2, 2]
    rows = table.set_index("method")
    assert rows.at["fd-central", "status"] == "ok"
    assert rows.at["fd-central", "error_rho"] < 1e-8           # d|x|/dx = x/|x| = [0.6, 0.8]
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
    ax = table.plot_against_size("time_s")
    ran = sorted(table[table["status"] == "ok"]["method"])
    assert sorted(line.get_label() for line in ax.get_lines()) == ran


def test_bad_arguments_are_clear():
    with pytest.raises(ValueError, match="inputs=.* or make_inputs"):
        diffcompare.compare(norm_of, sizes=[2])
    with pytest.raises(ValueError, match="unknown backend"):
        diffcompare.compare("rosenbrock", sizes=[2], backends=["nope"])
    with pytest.raises(TypeError, match="takes a Problem"):
        diffcompare.compare(42)
    with pytest.raises(KeyError, match="unknown problem"):
        diffcompare.compare("no_such_problem", sizes=[2])
