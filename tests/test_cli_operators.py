"""``diffcompare run --operators`` and ``compare(operator=..., sparse=True)``."""
from __future__ import annotations

import numpy as np
import pytest

import diffcompare
from diffcompare import cli
from diffcompare.problems import Problem


def test_the_operators_flag_adds_to_the_suite_and_refuses_bad_names(monkeypatch, capsys):
    seen = {}

    def fake_run_suite(suite, *a, **k):
        seen["operators"] = suite.operators
        return "ran"

    import diffcompare.runner as runner

    monkeypatch.setattr(runner, "run_suite", fake_run_suite)
    assert cli.main(["run", "--problems", "rosenbrock", "--backends", "engine", "--sizes", "3",
                     "--operators", "hessian, hvp,hessian", "--quiet"]) == 0
    assert seen["operators"] == ("hessian", "hvp")
    assert cli.main(["run", "--problems", "rosenbrock", "--operators", "jacobian,hesian"]) == 2
    err = capsys.readouterr().err
    assert "--operators: unknown operator(s) 'hesian'" in err
    assert "jacobian, jacobian_sparse, hessian, hessian_sparse, hvp, hessian_diagonal" in err


def _banded(xp, x):
    return x[1:] * x[:-1] + xp.sin(x[1:])


def test_compare_measures_a_sparse_jacobian_on_each_method():
    p = Problem("t_cmp_banded", _banded, lambda n, s: (np.linspace(0.1, 1.0, n),), "banded",
                tags={"smooth", "vector-output"}, make_cotangent=lambda n, s: np.ones(n - 1))
    table = diffcompare.compare(p, sizes=[7], backends=["engine", "fd-central"],
                                operator="jacobian", sparse=True, samples=2, min_sample_s=0.001)
    assert list(table["status"]) == ["ok", "ok"]                  # the gradients, as before
    ops = table.operators.set_index("backend")
    assert list(ops["operator"]) == ["jacobian_sparse"] * 2 and set(ops["status"]) == {"ok"}
    assert ops.loc["engine", "error_rho"] < 1e-10 and ops.loc["fd-central", "error_rho"] < 1e-6
    assert (ops["colours"] == 2).all() and (ops["colour_lower_bound"] == 2).all()
    with pytest.raises(ValueError, match="sparse=True is for the jacobian and the hessian"):
        diffcompare.compare(p, sizes=[7], backends=["engine"], operator="hvp", sparse=True)
