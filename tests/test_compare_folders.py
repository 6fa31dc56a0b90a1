"""compare() and its results folder: never sets another run's results aside, leaves no
temporary folder behind."""
from __future__ import annotations

import tempfile

import numpy as np
import pytest

import diffcompare


def square_sum(xp, x):
    return xp.sum(x * x)


def test_a_folder_holding_a_run_is_refused_and_left_as_it_was(tmp_path):
    x = np.array([1.0, 2.0])
    first = diffcompare.compare(square_sum, inputs=(x,), backends=["fd-central"],
                                results_dir=tmp_path, samples=1)
    assert first.results_dir == str(tmp_path) and list(first["status"]) == ["ok"]
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    for _ in range(2):   # twice: a second call used to overwrite the first call's .bak
        with pytest.raises(ValueError, match="already holds a run .*results.jsonl"):
            diffcompare.compare(square_sum, inputs=(x,), backends=["fd-central"],
                                results_dir=tmp_path, samples=1)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before
    assert not any(name.endswith(".bak") for name in after)


def test_a_file_as_the_folder_is_refused(tmp_path):
    target = tmp_path / "results.txt"
    target.write_text("notes")
    with pytest.raises(ValueError, match="is a file"):
        diffcompare.compare(square_sum, inputs=(np.ones(2),), backends=["fd-central"],
                            results_dir=target)


def test_the_temporary_folder_is_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    table = diffcompare.compare(square_sum, inputs=(np.ones(3),), backends=["fd-central"],
                                samples=1)
    assert list(table["status"]) == ["ok"] and table.results_dir is None
    assert list(tmp_path.iterdir()) == []


def test_a_closure_over_a_large_array_is_written_at_its_size(tmp_path):
    """The problem goes to the workers as a binary pickle beside a small module: as a bytes
    literal inside the module, a closure over a 160 MB array made a 554 MB file."""
    from diffcompare import problems
    from diffcompare.comparison import _as_problem, _write_problem_module
    from diffcompare.runner.modules import import_problem_modules

    weights = np.random.default_rng(0).standard_normal(1_000_000)      # 8 MB

    def weighted(xp, x):
        return xp.sum(x * weights[: x.shape[0]])

    problem, _ = _as_problem(weighted, None, lambda size, seed: (np.ones(size),), [3], (0,),
                             "weighted_by_a_big_array")
    module = _write_problem_module(problem, tmp_path)
    written = {p.name: p.stat().st_size for p in tmp_path.iterdir()}
    assert set(written) == {"compare_problem.py", "compare_problem.pkl"}
    assert written["compare_problem.py"] < 2000
    assert weights.nbytes <= written["compare_problem.pkl"] < 1.1 * weights.nbytes
    assert sum(written.values()) < 1.3 * weights.nbytes
    try:                              # the module registers the problem, as in a worker
        import_problem_modules([str(module)])
        loaded = problems.get("weighted_by_a_big_array")
        assert float(loaded.fn(np, np.ones(3))) == pytest.approx(float(weights[:3].sum()))
    finally:
        problems.unregister("weighted_by_a_big_array")
