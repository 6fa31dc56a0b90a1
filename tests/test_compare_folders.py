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
