"""The results log: append, tolerate torn lines, resume cleanly, load tidy, export."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from diffcompare.runner import (COLUMN_NAMES, ResultsError, export, load_results, read_run,
                                run_suite)
from diffcompare.results import exports as results_mod
from diffcompare.results.cells import CELLS_TABLE_COLUMNS
from diffcompare.results.folder import ResultsLog, read_rows
from diffcompare.results.schema import COLUMNS, make_row


def _row(backend="engine", phase="cell", status="ok", size=1, **kw):
    return make_row(run_id="r1", problem="p", size=size, seed=0, backend=backend, dtype="float64",
                    phase=phase, status=status, **kw)


def _write(path, rows, tail=b""):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for r in rows:
            f.write((json.dumps(r) + "\n").encode())
        f.write(tail)


def test_half_written_last_line_is_cut_away_before_appending(tmp_path):
    path = tmp_path / "results.jsonl"
    rows = [_row(phase="gradient"), _row()]
    _write(path, rows, tail=b'{"run_id": "r1", "problem": "p", "si')
    log = ResultsLog(tmp_path)
    state = log.open()
    assert state.rows == rows and state.finished == {("p", 1, 0, "engine", "float64")}
    assert state.dropped_bytes == len(b'{"run_id": "r1", "problem": "p", "si') and state.dropped_rows == 0
    log.append(_row(backend="manual"))
    log.close()
    again, good_length, bad = read_rows(path)
    assert [r["backend"] for r in again] == ["engine", "engine", "manual"]
    assert good_length == path.stat().st_size and bad == 0


def test_rows_of_unfinished_cells_and_garbage_lines_are_dropped_on_resume(tmp_path):
    path = tmp_path / "results.jsonl"
    finished = [_row(phase="prepare"), _row()]
    partial = [_row(backend="manual", phase="prepare"), _row(backend="manual", phase="function")]
    _write(path, finished[:1] + partial[:1], tail=b"not json\n")
    with open(path, "ab") as f:
        for r in finished[1:] + partial[1:]:
            f.write((json.dumps(r) + "\n").encode())
    state = ResultsLog(tmp_path).open()
    assert state.bad_lines == 1 and state.dropped_rows == 2
    assert read_rows(path)[0] == finished                 # rewritten without them


def test_load_results_has_the_schema_columns_and_types(tmp_path, rt):
    suite = rt.make_suite([{"backends": ["engine", "manual"], "sizes": [1, 3]}])
    run_suite(suite, tmp_path, progress=False)
    frame = load_results(tmp_path)
    assert list(frame.columns) == COLUMN_NAMES
    assert len(frame) == 2 * 2 * 4
    assert str(frame["size"].dtype) == "Int64" and str(frame["loops"].dtype) == "Int64"
    assert frame["time_median_s"].dtype == "float64"
    gradient = frame[frame.phase == "gradient"].iloc[0]
    assert gradient["time_samples"] == [1e-6, 2e-6] and gradient["extra"] == {"cell": "fast"}
    assert gradient["peak_bytes"] is pd.NA and gradient["finished_at"].endswith("+00:00")
    assert list(load_results(tmp_path / "nothing-here").columns) == COLUMN_NAMES


def test_every_column_is_documented():
    assert all(c.doc and c.kind in ("str", "int", "float", "list", "dict") for c in COLUMNS)
    assert len(COLUMN_NAMES) == len(set(COLUMN_NAMES)) == 35


def test_export_csv_and_parquet_message(tmp_path, rt, monkeypatch):
    run_suite(rt.make_suite([{"backends": ["engine"], "sizes": [1]}]), tmp_path, progress=False)
    cells = pd.read_csv(export(tmp_path, "csv"))                    # the cells table by default
    assert list(cells.columns) == CELLS_TABLE_COLUMNS and len(cells) == 1
    csv = export(tmp_path, "csv", table="phases")
    assert csv.name == "phases.csv"
    back = pd.read_csv(csv)
    assert list(back.columns) == COLUMN_NAMES and len(back) == 4
    assert json.loads(back.loc[back.phase == "gradient", "time_samples"].iloc[0]) == [1e-6, 2e-6]
    assert cells["gradient_s"].iloc[0] == back.loc[back.phase == "gradient", "time_median_s"].iloc[0]
    with pytest.raises(ValueError, match="unknown table 'rows'; use 'cells' or 'phases'"):
        export(tmp_path, "csv", table="rows")
    real_find_spec = results_mod.importlib.util.find_spec
    monkeypatch.setattr(results_mod.importlib.util, "find_spec",
                        lambda name, *a: None if name == "pyarrow" else real_find_spec(name, *a))
    with pytest.raises(ResultsError, match=r"Parquet export needs pyarrow.*pip install pyarrow.*'csv'"):
        export(tmp_path, "parquet")
    with pytest.raises(ValueError, match="unknown export format 'xlsx'"):
        export(tmp_path, "xlsx")


def test_run_json_resume_and_fresh(tmp_path, rt):
    suite = rt.make_suite([{"backends": ["engine"], "sizes": [1]}])
    first = run_suite(suite, tmp_path, progress=False)
    run = read_run(tmp_path)
    assert run["run_id"] == first.run_id and run["suite"]["name"] == "runner-test"
    env = run["environment"]
    for key in ("python", "versions", "cpu_model", "cpu_count", "gpu", "thread_env", "hostname"):
        assert key in env
    assert env["thread_env"]["OMP_NUM_THREADS"] == "1"
    assert "--xla_cpu_multi_thread_eigen=false" in env["thread_env"]["XLA_FLAGS"]
    assert set(env["versions"]) >= {"numpy", "sympy", "jax", "torch"}

    again = run_suite(suite, tmp_path, progress=False)          # resume: nothing left to run
    assert again.run_id == first.run_id and again.counts == {} and again.resumed_cells == 1
    assert len(read_run(tmp_path)["sessions"]) == 2 and read_run(tmp_path)["sessions"][1]["resumed"]
    assert len(load_results(tmp_path)) == 4

    fresh = run_suite(suite, tmp_path, fresh=True, progress=False)
    assert fresh.run_id != first.run_id and fresh.counts == {"ok": 1}
    assert (tmp_path / "results.jsonl.bak").exists() and (tmp_path / "run.json.bak").exists()
    assert len(load_results(tmp_path)) == 4

    other = rt.make_suite([{"backends": ["engine"], "sizes": [1]}], name="another")
    with pytest.raises(ResultsError, match="holds results of suite 'runner-test'.*fresh=True"):
        run_suite(other, tmp_path, progress=False)


def test_resume_after_torn_line_reruns_nothing_finished(tmp_path, rt):
    suite = rt.make_suite([{"backends": ["engine", "manual"], "sizes": [1]}])
    run_suite(suite, tmp_path, progress=False)
    with open(tmp_path / "results.jsonl", "ab") as f:
        f.write(b'{"run_id": "x", "problem": "runner_test_sq')
    summary = run_suite(suite, tmp_path, progress=False)
    assert summary.counts == {} and summary.resumed_cells == 2
    frame = load_results(tmp_path)
    assert len(frame) == 8 and len(set(rt.key_set(frame))) == 8


def test_no_pickle_in_the_runner():
    import re
    from pathlib import Path

    import diffcompare.runner as runner

    uses = re.compile(r"import\s+\w*pickle|from\s+\w*pickle|pickle\.|_pickle\(")
    for path in Path(runner.__file__).parent.glob("*.py"):
        assert not uses.search(path.read_text()), path
