"""Faults around the results folder: two runs at once (a lock), a corrupted line, a resumed
run that must not change a result, the worker's own `unsupported`, and a report that needs
nothing but the folder."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from diffcompare import results as R
from diffcompare.results.folder import REJECTED_FILE, ResultsLocked, RunLock
from diffcompare.runner import load_results, run_suite


def _cells(frame):
    return frame[frame.phase == "cell"]


def test_a_second_run_into_the_same_folder_fails_at_once_naming_the_first(tmp_path, rt):
    suite_file = tmp_path / "one.toml"
    suite_file.write_text(f'''name = "one"
timeout_s = 20
cell_function = "tests.runner.cells:fast"
problem_modules = ["{rt.PROBLEMS}"]
[[grid]]
problems = ["{rt.PROBLEM}"]
backends = ["engine"]
sizes = [1]
''')
    results = tmp_path / "res"
    with RunLock(results):                         # "the first run" holds the folder
        with pytest.raises(ResultsLocked, match=rf"in use by a running .*pid {os.getpid()} on "):
            run_suite(str(suite_file), results, progress=False)
        assert not (results / "results.jsonl").exists()       # it wrote nothing
        cli = subprocess.run([sys.executable, "-m", "diffcompare", "run", "--suite", str(suite_file),
                              "--results", str(results)], capture_output=True, text=True)
    assert cli.returncode == 2
    assert cli.stderr.count("\n") == 1 and f"pid {os.getpid()}" in cli.stderr


def test_a_lock_left_by_a_dead_run_is_taken_over(tmp_path, rt):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    (tmp_path / "run.lock").write_text(json.dumps({"pid": int(dead), "hostname": "here"}))
    suite = rt.make_suite([{"backends": ["engine"], "sizes": [1]}], cell_function="tests.runner.cells:fast")
    assert run_suite(suite, tmp_path, progress=False).counts == {"ok": 1}
    RunLock(tmp_path).acquire().release()          # and it was released at the end


def _two_cell_run(tmp_path, rt):
    suite = rt.make_suite([{"backends": ["engine", "manual"], "sizes": [1, 3]}],
                          cell_function="tests.runner.cells:fast")
    assert run_suite(suite, tmp_path, progress=False).counts == {"ok": 4}
    return suite


@pytest.mark.parametrize("phase", ["gradient", "cell"])
def test_a_corrupted_line_is_set_aside_counted_and_its_cell_rerun(tmp_path, rt, phase):
    suite = _two_cell_run(tmp_path, rt)
    before = load_results(tmp_path)
    path = tmp_path / "results.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    hit = next(i for i, line in enumerate(lines)
               if json.loads(line)["phase"] == phase and json.loads(line)["size"] == 1
               and json.loads(line)["backend"] == "manual")
    assert 0 < hit < len(lines) - 1                # in the middle of the file
    lines[hit] = lines[hit][:40] + "\x00garbage\n"
    path.write_text("".join(lines))
    # a reader sees that cell as unfinished, not as a complete ok cell
    cells = R.load(tmp_path).cells
    assert cells.set_index(["size", "backend"]).loc[(1, "manual"), "status"] == "unfinished"
    assert R.load(tmp_path).rejected_lines == 0    # nothing set aside yet: only a run does that
    summary = run_suite(suite, tmp_path, progress=False)
    assert summary.counts == {"ok": 1} and summary.rejected_lines == 1
    assert "1 unreadable line(s) set aside" in str(summary)
    rejected = [json.loads(x) for x in (tmp_path / REJECTED_FILE).read_text().splitlines()]
    assert len(rejected) == 1 and "garbage" in rejected[0]["text"]
    after = load_results(tmp_path)
    assert sorted(rt.key_set(after)) == sorted(rt.key_set(before))      # nothing lost, nothing twice
    assert R.load(tmp_path).rejected_lines == 1


def test_the_worker_records_unsupported_itself(tmp_path, rt):
    suite = rt.make_suite([{"backends": ["engine"], "sizes": [1],
                            "options": rt.behaviors({"engine": "refuses_while_measuring"})}])
    assert run_suite(suite, tmp_path, progress=False).counts == {"unsupported": 1}
    cell = _cells(load_results(tmp_path)).iloc[0]
    assert cell.message == "expression swell past 1000 operations (refused while measuring)"


def _setup_suite(rt, tmp_path, setup_s, backends=("engine", "manual", "fd-forward")):
    options = {b: {"setup_s": setup_s, "setup_log": str(tmp_path / "setup.log"), "phase_s": 0.05}
               for b in backends}
    return rt.make_suite([{"backends": list(backends), "sizes": [1], "options": options}],
                         cell_function="tests.runner.cells:with_group_setup", timeout_s=1.5)


def test_shared_work_of_a_group_is_charged_to_no_cell(tmp_path, rt):
    # the shared work (2 s) is longer than a cell's limit (1.5 s): it runs before the cells,
    # once, so every cell is ok whichever backend comes first, and so after a resume
    suite = _setup_suite(rt, tmp_path, 2.0)
    assert run_suite(suite, tmp_path / "clean", progress=False).counts == {"ok": 3}
    resumed = tmp_path / "resumed"
    first = _setup_suite(rt, tmp_path, 2.0, backends=("engine",))
    run_suite(first, resumed, progress=False)
    assert run_suite(suite, resumed, progress=False).counts == {"ok": 2}
    assert set(_cells(load_results(resumed)).status) == {"ok"}
    assert (tmp_path / "setup.log").read_text().splitlines() == [     # once per worker, told its backends
        f"{rt.PROBLEM}/1 engine,manual,fd-forward", f"{rt.PROBLEM}/1 engine", f"{rt.PROBLEM}/1 manual,fd-forward"]


def test_shared_work_that_hangs_is_skipped_and_the_cells_still_run(tmp_path, rt):
    suite = _setup_suite(rt, tmp_path, -1, backends=("engine", "manual"))
    summary = run_suite(suite, tmp_path, progress=False, setup_timeout_s=2)
    assert summary.counts == {"ok": 2}


def test_the_report_needs_only_the_folder(tmp_path, rt):
    module = tmp_path / "my_problems.py"
    module.write_text('''
import numpy as np
from diffcompare.problems import Problem, register
register(Problem(name="vanishing_cubic", fn=lambda xp, x: xp.sum(x * x * x),
                 make_inputs=lambda size, seed: (np.random.default_rng(seed).standard_normal(size),),
                 description="sum of cubes, from a module deleted after the run"), replace=True)
''')
    suite = rt.make_suite([{"problems": ["vanishing_cubic"], "backends": ["engine"], "sizes": [2]}],
                          cell_function="tests.runner.cells:fast", problem_modules=[str(module)])
    run_suite(suite, tmp_path / "res", progress=False)
    module.unlink()
    code = ("import sys; from diffcompare import results; r = results.load(sys.argv[1]); "
            "print(r.problem_info('vanishing_cubic')['description']); print(r.cells.family.iloc[0])")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "res")], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out == ["sum of cubes, from a module deleted after the run", "engine"]
    html = tmp_path / "r.html"
    subprocess.run([sys.executable, "-m", "diffcompare", "report", str(tmp_path / "res"), "-o", str(html),
                    "--no-seeds"], capture_output=True, text=True, check=True)
    assert "sum of cubes, from a module deleted after the run" in html.read_text()
