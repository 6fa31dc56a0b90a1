"""Studies as a suite runs them: the registry, the files, the command line, and isolation
(a study that raises, hangs or dies is recorded, and the grid's results stay)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from diffcompare import studies
from diffcompare.runner import Suite, SuiteError, load_results, run_suite
from diffcompare.runner.studies import run_study_supervised

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:                 # "tests.studies.sample_studies", in this process too
    sys.path.insert(0, str(REPO))


@pytest.fixture(autouse=True)
def _children_import_tests(monkeypatch):
    """The runner's workers and the studies' child processes import ``tests.*``."""
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(REPO) + (os.pathsep + path if path else ""))

SAMPLE = "tests.studies.sample_studies"
RUNNER_PROBLEMS = str(REPO / "tests" / "runner" / "problems_for_tests.py")


def test_registry():
    assert set(studies.STUDIES) == {"fd_steps", "expression_swell", "scaling", "breakeven", "accuracy", "kinks",
                                    "saved_bytes", "seeds"}
    for name, module in studies.STUDIES.items():
        assert module.NAME == name and module.TITLE and len(module.EXPECTED) > 100
        assert callable(module.check) and (hasattr(module, "run") != hasattr(module, "analyze"))
    assert studies.kind(studies.get("scaling")) == "analyze" and studies.kind(studies.get("kinks")) == "run"
    assert studies.get(f"{SAMPLE}:GOOD").NAME == "good"
    with pytest.raises(KeyError, match="unknown study 'nope'; known studies: fd_steps"):
        studies.get("nope")
    with pytest.raises(KeyError, match="lacks"):
        studies.get("json:dumps")


def test_run_study_writes_its_table_and_findings(tmp_path):
    outcome = studies.run_study(f"{SAMPLE}:GOOD", tmp_path, quick=True)
    assert outcome.status == "ok" and outcome.csv_path.read_text().startswith("a,b,sum,quick")
    record = studies.read_record(tmp_path, f"{SAMPLE}:GOOD")
    assert record["status"] == "ok" and record["expected"] == "two plus two is four" and record["quick"]
    assert record["findings"] == [{"name": "sum", "expected": "4", "measured": "4", "ok": True}]


def test_an_analyze_study_reads_the_results_folder(tmp_path):
    from synthetic import cell_rows

    with open(tmp_path / "results.jsonl", "w") as f:
        for row in cell_rows("p", 1, "engine", function_s=1e-5, gradient_s=1e-5):
            f.write(json.dumps(row) + "\n")
    outcome = studies.run_study(f"{SAMPLE}:COUNTS_CELLS", tmp_path)
    assert outcome.status == "ok" and int(outcome.frame.cells.iloc[0]) == 1


def test_run_study_records_an_error_and_raises(tmp_path):
    with pytest.raises(RuntimeError, match="broken on purpose"):
        studies.run_study(f"{SAMPLE}:RAISES", tmp_path)
    record = studies.read_record(tmp_path, f"{SAMPLE}:RAISES")
    assert record["status"] == "error" and "broken on purpose" in record["message"]
    assert "Traceback" in record["message"]


def test_command_line(tmp_path):
    listing = subprocess.run([sys.executable, "-m", "diffcompare.studies", "--list"],
                             capture_output=True, text=True, check=True).stdout
    assert "fd_steps" in listing and "analyze" in listing
    bad = subprocess.run([sys.executable, "-m", "diffcompare.studies", "nope", str(tmp_path)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown study 'nope'" in bad.stderr


def _suite(study_names, timeout=120.0):
    return Suite.from_dict({
        "name": "with-studies", "timeout_s": 20, "cell_function": "tests.runner.cells:fast",
        "problem_modules": [RUNNER_PROBLEMS], "studies": study_names, "study_timeout_s": timeout,
        "quick_studies": True,
        "grid": [{"problems": ["runner_test_square"], "backends": ["engine", "fd-central"], "sizes": [1, 3]}]})


def test_a_suite_runs_its_studies_after_the_grid_and_survives_their_failures(tmp_path):
    # a generous limit: only the study that hangs may reach it (it is tested below, alone)
    names = [f"{SAMPLE}:{n}" for n in ("GOOD", "RAISES", "CRASHES", "COUNTS_CELLS")]
    summary = run_suite(_suite(names), tmp_path, progress=False)
    assert summary.counts == {"ok": 4}
    assert summary.studies == dict(zip(names, ["ok", "error", "crashed", "ok"]))
    assert summary.studies_failed == names[1:3] and "studies: " in str(summary)
    # the grid is intact
    frame = load_results(tmp_path)
    assert len(frame[frame.phase == "cell"]) == 4 and set(frame.status) == {"ok"}
    # each failure is recorded with why
    records = studies.read_records(tmp_path)
    assert records[names[1]]["status"] == "error" and "broken on purpose" in records[names[1]]["message"]
    assert records[names[2]]["status"] == "crashed" and "exited with status 7" in records[names[2]]["message"]
    assert records[names[0]]["quick"] is True
    assert (tmp_path / "studies" / f"{names[1]}.log").read_text().count("broken on purpose") >= 1
    assert records[names[3]]["findings"][0]["measured"] == "4"      # it saw the whole grid


def test_a_study_that_hangs_is_killed_at_its_limit(tmp_path):
    name = f"{SAMPLE}:HANGS"
    assert run_study_supervised(name, tmp_path, timeout_s=3) == "timeout"
    record = studies.read_record(tmp_path, name)
    assert record["status"] == "timeout" and "killed after 3 s" in record["message"]


def test_an_old_record_never_passes_for_a_new_run(tmp_path):
    name = f"{SAMPLE}:CRASHES"
    studies.write_record(tmp_path, name, status="ok")            # left by an earlier run
    assert run_study_supervised(name, tmp_path, timeout_s=30) == "crashed"
    assert studies.read_record(tmp_path, name)["status"] == "crashed"
    assert (tmp_path / "studies" / f"{name}.findings.json.bak").exists()


def test_suite_keys_for_studies(tmp_path):
    suite = _suite(["fd_steps"])
    assert suite.studies == ("fd_steps",) and suite.study_timeout_s == 120.0 and suite.quick_studies
    with pytest.raises(SuiteError, match="unknown study 'fd_step'; known studies: fd_steps"):
        _suite(["fd_step"])
    with pytest.raises(SuiteError, match="`quick_studies` must be true or false"):
        Suite.from_dict({"name": "x", "studies": ["kinks"], "quick_studies": "yes"})
    only = Suite.from_dict({"name": "only-studies", "studies": ["kinks"]})      # no grid needed
    assert only.grid == () and only.study_timeout_s == 900
    with pytest.raises(SuiteError, match="at least one"):
        Suite.from_dict({"name": "empty"})
