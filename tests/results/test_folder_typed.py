"""Reading a results folder by the schema: a row that does not fit is set aside and counted,
never read as another cell, never dropped without a word; a corrupt run.json is one line."""
from __future__ import annotations

import json
import warnings

import pytest

from diffcompare import results
from diffcompare.cli import main as cli
from diffcompare.results.exports import export
from diffcompare.results.folder import (REJECTED_FILE, RESULTS_FILE, RUN_FILE, SCHEMA_VERSION,
                                        ResultsCorrupt, ResultsLog, ResultsWarning,
                                        load_results, read_run)
from diffcompare.results.schema import make_row


def cell_rows(size, backend="engine"):
    common = dict(run_id="r", problem="rosenbrock", size=size, seed=0, backend=backend,
                  dtype="float64", family="engine")
    return [make_row(**common, phase="gradient", status="ok", time_median_s=1e-5, peak_bytes=100),
            make_row(**common, phase="cell", status="ok", extra={"phase_rows": 1})]


def write(folder, rows_or_lines):
    with open(folder / RESULTS_FILE, "w") as f:
        for item in rows_or_lines:
            f.write((item if isinstance(item, str) else json.dumps(item)) + "\n")


def test_a_key_of_another_type_is_set_aside_and_its_cell_runs_again(tmp_path):
    good = cell_rows(4)
    stringly = [dict(r, size="4") for r in cell_rows(4, backend="torch")]
    write(tmp_path, good + stringly)
    state = ResultsLog(tmp_path).open()
    assert state.bad_lines == 2
    assert state.finished == {("rosenbrock", 4, 0, "engine", "float64")}   # torch runs again
    aside = (tmp_path / REJECTED_FILE).read_text().splitlines()
    assert [json.loads(line)["why"] for line in aside] == ["column 'size' is '4', not an int"] * 2
    kept = [json.loads(l) for l in (tmp_path / RESULTS_FILE).read_text().splitlines()]
    assert [r["backend"] for r in kept] == ["engine", "engine"]


def test_readers_warn_about_lines_they_leave_out(tmp_path):
    write(tmp_path, cell_rows(4)[:1] + ["{not json"] + cell_rows(4)[1:])
    with pytest.warns(ResultsWarning, match="1 line"):
        frame = load_results(tmp_path)
    assert len(frame) == 2
    with pytest.warns(ResultsWarning):
        export(tmp_path, "csv")


def test_an_integer_beyond_int64_is_off_schema_not_a_crash(tmp_path):
    rows = cell_rows(4)
    rows[0]["peak_bytes"] = 2 ** 70
    write(tmp_path, rows + cell_rows(16))
    with pytest.warns(ResultsWarning):
        frame = load_results(tmp_path)
    assert sorted(frame["size"].tolist()) == [4, 16, 16]
    with pytest.warns(ResultsWarning):
        assert export(tmp_path, "csv").exists()


def test_clean_folders_read_without_warnings(tmp_path):
    write(tmp_path, cell_rows(4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(load_results(tmp_path)) == 2


@pytest.mark.parametrize("text", ['{"run_id": "r", "suite": {"na', "[1, 2]", "\x00\x01"])
def test_a_corrupt_run_json_is_one_line_everywhere(tmp_path, text, capsys):
    write(tmp_path, cell_rows(4))
    (tmp_path / RUN_FILE).write_text(text)
    with pytest.raises(ResultsCorrupt, match="run.json"):
        read_run(tmp_path)
    with pytest.raises(ResultsCorrupt):
        results.load(tmp_path)
    with pytest.raises(ResultsCorrupt):                # resuming
        ResultsLog(tmp_path).start_run({"name": "quick"}, {})
    assert cli(["report", str(tmp_path), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "run.json" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_run_json_records_the_schema_version(tmp_path):
    run = ResultsLog(tmp_path).start_run({"name": "quick"}, {"hostname": "h"})
    assert run["schema_version"] == SCHEMA_VERSION == read_run(tmp_path)["schema_version"]


def test_another_suites_folder_names_the_cli_flag(tmp_path):
    from diffcompare.results.folder import ResultsError

    ResultsLog(tmp_path).start_run({"name": "quick"}, {})
    with pytest.raises(ResultsError, match="--fresh on the command line, fresh=True in Python"):
        ResultsLog(tmp_path).start_run({"name": "smoke"}, {})
