"""The one test that runs the real measuring code: the `smoke` suite end to end."""
from __future__ import annotations

import importlib.util

import pytest

from diffcompare.runner import COLUMN_NAMES, load_results, load_suite, run_suite


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.skipif(not _has("diffcompare.measure.cell"),
                    reason="diffcompare.measure.cell (the default cell function) is not written yet")
def test_smoke_suite_with_the_real_cell_function(tmp_path):
    suite = load_suite("smoke")
    summary = run_suite(suite, tmp_path, progress=False)
    frame = load_results(tmp_path)
    assert list(frame.columns) == COLUMN_NAMES
    cells = frame[frame.phase == "cell"]
    n_cells = sum(len(b.backends) * len(b.sizes) for b in suite.grid)
    assert len(cells) == summary.total_cells == n_cells
    # Real backends may be unavailable here, but none may time out, crash or fail.
    assert set(cells.status) <= {"ok", "unsupported", "unavailable"}, \
        cells[["backend", "size", "status", "message"]].to_string()
    ok = frame[(frame.phase == "gradient") & (frame.status == "ok")]
    assert len(ok) and ok.time_median_s.gt(0).all() and ok.family.notna().all()
