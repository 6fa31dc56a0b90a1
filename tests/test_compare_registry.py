"""compare() is an ordinary client of the runner: the user's problem travels in the suite,
never in this process's problem registry, so a function named like a catalog problem does
not shadow the catalog here, during the run or after it (or after a call that raised)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import diffcompare
from diffcompare import problems, results

PARENT = os.getpid()
SEEN_IN_PARENT = []          # what the parent's registry said while the user's function ran


def shadowing_rosenbrock(xp, x):
    """A "rosenbrock" that is not the catalog's: the sum of cubes."""
    if os.getpid() == PARENT:           # the parent reads its xp names with one NumPy call
        SEEN_IN_PARENT.append(problems.get("rosenbrock").description)
    return xp.sum(x * x * x)


def _registry():
    return {p.name: p for p in problems.all_problems()}


def _user_modules():
    return {m for m in sys.modules if m.startswith("diffcompare_user_problems_")}


def test_a_user_problem_named_like_a_catalog_problem_does_not_shadow_it(tmp_path):
    before, modules = _registry(), _user_modules()
    catalog_description = before["rosenbrock"].description
    x = np.array([1.0, 2.0, 3.0])
    table = diffcompare.compare(shadowing_rosenbrock, inputs=(x,), name="rosenbrock",
                                backends=["engine", "fd-central"], results_dir=tmp_path,
                                samples=1, min_sample_s=0.001)
    assert list(table["status"]) == ["ok", "ok"] and list(table["problem"]) == ["rosenbrock"] * 2
    assert table["error_rho"].max() < 1e-6        # against the reference of x³, not Rosenbrock's
    # the parent used the user's function, yet its registry still held the catalog's problem
    assert SEEN_IN_PARENT and set(SEEN_IN_PARENT) == {catalog_description}
    assert _registry() == before and all(_registry()[n] is p for n, p in before.items())
    assert _user_modules() == modules             # no module registered it in this process
    # the folder describes the problem that ran
    stored = results.load(tmp_path).catalog["problems"]["rosenbrock"]
    assert stored["description"] == "rosenbrock (from compare())"


def test_a_call_that_raises_leaves_the_registry_as_it_was(tmp_path):
    before = _registry()
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        diffcompare.compare(shadowing_rosenbrock, inputs=(np.ones(2),), name="rosenbrock",
                            backends=["nope"], results_dir=tmp_path / "a")
    (tmp_path / "b" / "results.jsonl").parent.mkdir()
    (tmp_path / "b" / "results.jsonl").write_text("")
    with pytest.raises(ValueError, match="already holds a run"):
        diffcompare.compare(shadowing_rosenbrock, inputs=(np.ones(2),), name="new_name",
                            backends=["fd-central"], results_dir=tmp_path / "b")
    assert _registry() == before and all(_registry()[n] is p for n, p in before.items())
