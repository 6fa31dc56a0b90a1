"""Loading and shaping results for the report: nothing is dropped, statuses are kept."""
from __future__ import annotations

import fake_results as fake
import pytest

from diffcompare.report import data


@pytest.fixture
def loaded(synthetic_results):
    return data.load(synthetic_results)


def _status(d, problem, size, backend, dtype="float64"):
    c = d.cells
    sel = c[(c.problem == problem) & (c["size"] == size) & (c.backend == backend) & (c.dtype == dtype)]
    return sorted(set(sel.status))


def test_every_status_is_kept(loaded):
    statuses = set(loaded.cells.status)
    assert {"ok", "unsupported", "timeout", "error", "crashed", "skipped", "unfinished",
            "missing"} <= statuses


def test_unsupported_error_raised_while_measuring_counts_as_unsupported(loaded):
    assert _status(loaded, fake.EVIL_PROBLEM, 16, "sympy") == ["unsupported"]
    c = loaded.cells
    msg = c[(c.problem == fake.EVIL_PROBLEM) & (c["size"] == 16) & (c.backend == "sympy")].message.iloc[0]
    assert msg == "expression swell <huge> (refused while measuring)"


def test_unfinished_and_missing_cells(loaded):
    # rows but no completion row
    assert _status(loaded, fake.CATALOG_PROBLEM, 64, "fd-central") == ["unfinished"]
    # planned by run.json, no row at all
    assert _status(loaded, fake.CATALOG_PROBLEM, 4, "torch") == ["missing"]
    assert _status(loaded, fake.CATALOG_PROBLEM, 4, "fd-central") == ["missing"]


def test_measures_side_by_side(loaded):
    c = loaded.cells
    row = c[(c.problem == fake.CATALOG_PROBLEM) & (c["size"] == 16) & (c.backend == "engine")].iloc[0]
    assert row.gradient_s == pytest.approx(3e-5 * 16)
    assert row.function_s == pytest.approx(6e-6 * 16)
    assert row.ratio == pytest.approx(5.0)
    assert row.saved_graph_bytes == 32 * 16
    assert row.memory_source == "tracemalloc"


def test_ok_takes_median_over_seeds_and_filters_dtype(loaded):
    ok = loaded.ok("float64")
    assert set(ok.dtype) == {"float64"}
    sub = ok[(ok.problem == fake.EVIL_PROBLEM) & (ok.backend == "engine")]
    assert sorted(sub["size"]) == [4, 16, 64]          # two seeds -> one row per size
    assert set(loaded.ok("float32").dtype) == {"float32"}


def test_orders_follow_the_catalog(loaded):
    assert loaded.backends[:3] == ["engine", "sympy", "fd-central"]
    assert loaded.backends[-1] == fake.EVIL_BACKEND          # unknown names last
    assert loaded.problems[0] == fake.CATALOG_PROBLEM        # catalog problems first


def test_studies_planned_but_absent_are_missing(loaded):
    assert loaded.study("fd_steps").status == "checks-failed"
    assert loaded.study("breakeven").status == "error"
    assert loaded.study("scaling").status == "missing"
    assert loaded.study("fd_steps").frame is not None


def test_empty_folder(tmp_path):
    d = data.load(tmp_path)
    assert d.cells.empty and d.run is None and d.studies == {}
    assert d.time_span() == (None, None)
