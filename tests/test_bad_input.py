"""Bad input gets one clear line: a NaN function value, a `wrt` beyond the arguments, a
suite with size 0, a broken suite among good ones, `--results` naming a file."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from diffcompare import backends
from diffcompare.problems import Problem
from diffcompare.runner.suite import Suite, SuiteError

REPO = Path(__file__).resolve().parents[1]


def _problem(fn, **kw):
    return Problem(name="bad_input_test", fn=fn, description="test",
                   make_inputs=lambda size, seed: (np.linspace(-1.0, 1.0, size),), **kw)


@pytest.mark.parametrize("name", ["fd-complex-step", "fd-central", "engine"])
def test_a_gradient_where_the_function_is_not_finite_is_refused(name):
    p = _problem(lambda xp, x: xp.sum(xp.log(x)))           # log of negative numbers: NaN
    backend = backends.get(name)
    with pytest.raises(backends.BackendError,
                       match=rf"problem 'bad_input_test' on backend '{name}': the function value "
                             r"is not finite \(nan .*check the inputs"):
        with np.errstate(all="ignore"):
            backends.compute_gradient(backend, p, p.inputs(4))


def test_wrt_beyond_the_arguments_is_refused_when_the_problem_is_made():
    with pytest.raises(ValueError, match=r"wrt index 1 is beyond the arguments of fn\(xp, \.\.\.\), "
                                         r"which has 1 \(0: x\)"):
        _problem(lambda xp, x: xp.sum(x), wrt=(0, 1))
    with pytest.raises(ValueError, match="wrt must be argument indices"):
        _problem(lambda xp, x: xp.sum(x), wrt=(-1,))
    assert _problem(lambda xp, *args: xp.sum(args[0]), wrt=(0,)).wrt == (0,)   # cannot tell: allowed


def test_a_suite_with_size_zero_is_refused():
    with pytest.raises(SuiteError, match=r"block 1: sizes must be 1 or more .* got \[0, 4\]"):
        Suite.from_dict({"name": "z", "grid": [{"problems": ["rosenbrock"], "backends": ["engine"],
                                                "sizes": [0, 4]}]}, validate=False)


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "diffcompare", *args], capture_output=True, text=True,
                          cwd=cwd)


def test_list_suites_shows_the_good_ones_and_names_the_broken_one(tmp_path):
    (tmp_path / "suites").mkdir()
    shutil.copy(REPO / "experiments" / "suites" / "smoke.toml", tmp_path / "suites" / "smoke.toml")
    (tmp_path / "suites" / "broken.toml").write_text("name = 'broken'\n[[grid]\n")
    out = _cli("list", "suites", "--experiments", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 2
    assert out.stdout.startswith("smoke ") and "broken" not in out.stdout
    assert out.stderr.count("\n") == 1 and "broken.toml is not valid TOML" in out.stderr


def test_results_pointing_at_a_file_is_one_line(tmp_path):
    target = tmp_path / "results.txt"
    target.write_text("not a folder")
    out = _cli("run", "--suite", "smoke", "--results", str(target), cwd=REPO)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert f"results folder {target} is a file" in out.stderr
    assert target.read_text() == "not a folder"
