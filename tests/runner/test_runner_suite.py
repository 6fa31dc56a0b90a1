"""Suite files: loading, the grid they make, and errors that name what is known."""
from __future__ import annotations

import pytest

from diffcompare import backends
from diffcompare.runner import SuiteError, build_groups, list_suites, load_suite
from diffcompare.runner.suite import find_experiments_dir


def _write(folder, name, text):
    (folder / "suites").mkdir(parents=True, exist_ok=True)
    path = folder / "suites" / f"{name}.toml"
    path.write_text(text)
    return path


GOOD = '''
name = "mine"
description = "a test suite"
seeds = [0, 1]
dtypes = ["float64", "float32"]
timeout_s = 5
problem_modules = ["{problems}"]
cell_function = "tests.runner.cells:fast"
[cell_options]
samples = 3

[[grid]]
problems = ["runner_test_square"]
backends = ["engine", "fd-central"]
sizes = "default"
[grid.options.fd-central]
backend_options = {{ step = 1e-6 }}
samples = 5

[[grid]]
problems = ["runner_test_square"]
backends = ["manual"]
sizes = [2]
timeout_s = 1
'''


def test_load_a_suite_and_build_its_groups(tmp_path, rt):
    _write(tmp_path, "mine", GOOD.format(problems=rt.PROBLEMS))
    assert list_suites(tmp_path) == ["mine"]
    suite = load_suite("mine", tmp_path)
    assert suite.seeds == (0, 1) and suite.dtypes == ("float64", "float32") and suite.timeout_s == 5
    groups = build_groups(suite)
    # default sweep (1, 3) plus size 2 from block 2; x 2 dtypes x 2 seeds; small sizes first
    assert [(g.dtype, g.size, g.seed) for g in groups] == [
        (d, s, seed) for d in ("float64", "float32") for s in (1, 2, 3) for seed in (0, 1)]
    by_size = {g.size: g for g in groups if g.dtype == "float64" and g.seed == 0}
    assert [b.name for b in by_size[1].backends] == ["engine", "fd-central"]
    assert [b.name for b in by_size[2].backends] == ["manual"]
    fd = by_size[1].backends[1]
    assert fd.options == {"samples": 5, "backend_options": {"step": 1e-6}} and fd.timeout_s == 5
    assert by_size[1].backends[0].options == {"samples": 3}
    assert by_size[2].backends[0].timeout_s == 1


def test_unknown_suite_names_the_known_ones(tmp_path, rt):
    _write(tmp_path, "alpha", GOOD.format(problems=rt.PROBLEMS))
    _write(tmp_path, "beta", GOOD.format(problems=rt.PROBLEMS))
    with pytest.raises(SuiteError, match=r"unknown suite 'gamma'; known suites in .*: alpha, beta"):
        load_suite("gamma", tmp_path)
    with pytest.raises(SuiteError, match="does not exist"):
        load_suite(tmp_path / "nowhere.toml")


def test_unknown_backend_and_problem_name_the_known_ones(tmp_path, rt):
    text = GOOD.format(problems=rt.PROBLEMS)
    path = _write(tmp_path, "badbackend", text.replace('"fd-central"]', '"fd-centre"]'))
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    message = str(info.value)
    assert "block 1: unknown backend 'fd-centre'; known backends:" in message
    assert all(name in message for name in backends.names())

    path = _write(tmp_path, "badproblem", text.replace('["runner_test_square"]\nbackends = ["manual"]',
                                                       '["no_such_problem"]\nbackends = ["manual"]'))
    with pytest.raises(SuiteError, match=r"block 2: unknown problem 'no_such_problem'; known problems: "
                                         r".*runner_test_square"):
        load_suite(path)


@pytest.mark.parametrize("change, message", [
    (("sizes = [2]", "size = [2]"), r"unknown keys \['size'\]; allowed keys"),
    (("timeout_s = 5", "timeout_s = -1"), "`timeout_s` must be a positive number"),
    (('dtypes = ["float64", "float32"]', 'dtypes = ["int32"]'), "'int32' is not a floating dtype"),
    (("seeds = [0, 1]", 'seeds = ["zero"]'), "`seeds` must be a non-empty list of integers"),
    (('cell_function = "tests.runner.cells:fast"', 'cell_function = "nocolon"'), "cell_function must be"),
    (("[grid.options.fd-central]", "[grid.options.engine2]"), "options given for backend 'engine2'"),
    (("name = \"mine\"", "name = \"mine\"\nfoo = 1"), r"unknown keys \['foo'\]"),
    (("[[grid]]", "[[grid]]\n[[grid]]"), "missing `problems`"),
    (('problems = ["runner_test_square"]\nbackends = ["manual"]', 'problems = []\nbackends = ["manual"]'),
     "`problems` is empty"),
])
def test_malformed_suites_say_where_and_why(tmp_path, rt, change, message):
    text = GOOD.format(problems=rt.PROBLEMS)
    assert change[0] in text
    path = _write(tmp_path, "bad", text.replace(change[0], change[1], 1))
    with pytest.raises(SuiteError, match=message):
        load_suite(path)


def test_bad_toml_and_problem_module(tmp_path, rt):
    path = _write(tmp_path, "broken", "name = ")
    with pytest.raises(SuiteError, match="is not valid TOML"):
        load_suite(path)
    path = _write(tmp_path, "nomodule", GOOD.format(problems="missing_problems.py"))
    with pytest.raises(SuiteError, match="importing problem_modules failed.*missing_problems.py"):
        load_suite(path)


def test_same_backend_twice_with_other_options_is_refused(tmp_path, rt):
    text = GOOD.format(problems=rt.PROBLEMS).replace('backends = ["manual"]\nsizes = [2]',
                                                     'backends = ["fd-central"]\nsizes = [1]')
    suite = load_suite(_write(tmp_path, "twice", text))
    with pytest.raises(SuiteError,
                       match="backend 'fd-central' already runs problem 'runner_test_square' at size 1"):
        build_groups(suite)


def test_experiments_folder_resolution(tmp_path, monkeypatch):
    from pathlib import Path

    import diffcompare

    monkeypatch.chdir(tmp_path)
    assert find_experiments_dir() == Path(diffcompare.__file__).resolve().parents[1] / "experiments"
    assert "smoke" in list_suites()                              # the repository's own suites
    _write(tmp_path / "experiments", "local", "")
    assert find_experiments_dir() == tmp_path / "experiments"  # ./experiments wins when it has suites
    assert list_suites() == ["local"]
    assert find_experiments_dir(tmp_path / "x") == tmp_path / "x"


def test_the_smoke_suite_is_well_formed():
    suite = load_suite("smoke", validate=False)
    assert suite.name == "smoke" and suite.grid and suite.timeout_s > 0
    assert set(suite.grid[0].backends) <= set(backends.names())
