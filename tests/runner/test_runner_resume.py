"""A run killed midway resumes to the same rows, without duplicates and without orphans."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from diffcompare.runner import load_results, load_suite, run_suite

RUN = ("import sys; from diffcompare.runner import run_suite; "
       "run_suite(sys.argv[1], sys.argv[2], progress=False)")


def _suite_file(path, rt, backends_toml: str, timeout_s=1.5) -> str:
    path.write_text(f'''
name = "resume-test"
timeout_s = {timeout_s}
cell_function = "{rt.SCRIPTED}"
problem_modules = ["{rt.PROBLEMS}"]

[[grid]]
problems = ["{rt.PROBLEM}"]
sizes = [1, 2, 3, 4]
{backends_toml}
''')
    return str(path)


def _start(suite_path, results_dir):
    return subprocess.Popen([sys.executable, "-c", RUN, suite_path, str(results_dir)],
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _count_lines(path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def test_killed_run_resumes_to_the_same_rows(tmp_path, rt):
    suite_path = _suite_file(tmp_path / "resume.toml", rt, '''
backends = ["engine", "manual", "fd-forward"]
[grid.options.engine]
phase_s = 0.03
[grid.options.manual]
phase_s = 0.03
[grid.options.fd-forward]
behavior = "timeout_from_size"
hang_from_size = 3
phase_s = 0.03
''')
    whole = run_suite(load_suite(suite_path), tmp_path / "whole", progress=False)
    assert whole.counts == {"ok": 10, "timeout": 1, "skipped": 1}
    expected = load_results(tmp_path / "whole")

    results = tmp_path / "interrupted"
    proc = _start(suite_path, results)
    deadline = time.time() + 30
    while _count_lines(results / "results.jsonl") < 6 and time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    landed = _count_lines(results / "results.jsonl")
    assert 6 <= landed < len(expected)

    resumed = run_suite(suite_path, results, progress=False)
    assert resumed.resumed_cells >= 1 and resumed.cells_run == 12 - resumed.resumed_cells
    got = load_results(results)
    keys = rt.key_set(got)
    assert len(keys) == len(set(keys)), "duplicate rows after resuming"
    assert set(keys) == set(rt.key_set(expected))
    status = dict(zip(keys, got.status))
    assert status == dict(zip(rt.key_set(expected), expected.status))
    assert got.run_id.nunique() == 1


def test_workers_die_with_a_killed_runner(tmp_path, rt):
    pidfile = tmp_path / "worker.pid"
    suite_path = _suite_file(tmp_path / "orphan.toml", rt, f'''
backends = ["engine"]
[grid.options.engine]
behavior = "write_pid_and_sleep"
pidfile = "{pidfile}"
''', timeout_s=60)
    proc = _start(suite_path, tmp_path / "results")
    deadline = time.time() + 30
    while not pidfile.exists() or not pidfile.read_text():
        assert time.time() < deadline and proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.01)
    worker = int(pidfile.read_text())
    os.killpg(proc.pid, signal.SIGKILL)                 # the runner only: workers have own groups
    proc.wait()
    deadline = time.time() + 5
    while _alive(worker) and time.time() < deadline:
        time.sleep(0.02)
    assert not _alive(worker), "the worker outlived its runner"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
