"""A real cluster: `dask scheduler` and two `dask worker` processes on 127.0.0.1, a suite run
through `diffcompare run --scheduler`, one worker killed while it runs a group. Every cell of
the grid must be in the results exactly once, with the statuses of a local run."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="the dask executor needs distributed (pip install 'diffcompare[dask]')")
psutil = pytest.importorskip("psutil", reason="finding the worker to kill needs psutil (a distributed dependency)")

from diffcompare.runner import load_results, load_suite, run_suite  # noqa: E402

DASK = Path(sys.executable).with_name("dask")
REPO = Path(__file__).resolve().parents[2]
GROUP_WORKER = "diffcompare.runner.worker"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc):
    """SIGKILL the process group of ``proc`` (it was started in a session of its own), reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


@pytest.fixture
def cluster(tmp_path):
    """``(address, [worker Popen, worker Popen])``; everything is killed afterwards, pass or fail."""
    if not DASK.exists():
        pytest.skip(f"no `dask` command next to {sys.executable}")
    import distributed

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    address = f"tcp://127.0.0.1:{_free_port()}"
    procs = []

    def start(*args, log):
        procs.append(subprocess.Popen([str(DASK), *args], cwd=REPO, env=env, start_new_session=True,
                                      stdout=subprocess.DEVNULL, stderr=open(tmp_path / log, "wb")))
        return procs[-1]

    try:
        start("scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1], "--no-dashboard",
              log="scheduler.log")
        workers = [start("worker", address, "--nthreads", "1", "--nworkers", "1", "--no-dashboard",
                         "--memory-limit", "0", "--death-timeout", "60", log=f"worker{i}.log")
                   for i in range(2)]
        with distributed.Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
        yield address, workers
    finally:
        for proc in reversed(procs):
            _stop(proc)


def _suite_file(path, rt) -> str:
    path.write_text(f'''
name = "dask-cluster-test"
timeout_s = 30
cell_function = "{rt.SCRIPTED}"
problem_modules = ["{rt.PROBLEMS}"]

[[grid]]
problems = ["{rt.PROBLEM}"]
sizes = [1, 2, 3, 4, 5]
backends = ["engine", "manual"]
[grid.options.engine]
phase_s = 0.15
[grid.options.manual]
phase_s = 0.15
''')
    return str(path)


def _running_group(worker):
    """The pid of a group's worker process under this `dask worker`, or None."""
    try:
        for child in psutil.Process(worker.pid).children(recursive=True):
            if GROUP_WORKER in " ".join(child.cmdline()):
                return child.pid
    except psutil.Error:
        pass
    return None


def _cells(frame):
    cells = frame[frame.phase == "cell"]
    return sorted(zip(cells.problem, cells["size"], cells.seed, cells.backend, cells.dtype, cells.status))


def test_a_worker_killed_mid_run_loses_no_cell_and_writes_none_twice(tmp_path, rt, cluster):
    address, workers = cluster
    suite = _suite_file(tmp_path / "suite.toml", rt)
    run = subprocess.Popen([sys.executable, "-m", "diffcompare", "run", "--suite", suite, "--results",
                            str(tmp_path / "dask"), "--scheduler", address, "--quiet"],
                           cwd=REPO, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline, victim, group_pid = time.monotonic() + 120, None, None
        while victim is None and time.monotonic() < deadline and run.poll() is None:
            for worker in workers:
                group_pid = _running_group(worker)
                if group_pid is not None:
                    victim = worker
                    break
            time.sleep(0.05)
        assert victim is not None, "no group ever ran on the cluster"
        os.killpg(victim.pid, signal.SIGKILL)            # the worker and its nanny, mid-group
        out, _ = run.communicate(timeout=180)
    finally:
        _stop(run)
    assert run.returncode == 0, out.decode(errors="replace")[-3000:]

    # The killed worker's group process ended too (its lifeline is the dead worker's pipe).
    deadline = time.monotonic() + 30
    while psutil.pid_exists(group_pid) and psutil.Process(group_pid).status() != psutil.STATUS_ZOMBIE \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not psutil.pid_exists(group_pid) or psutil.Process(group_pid).status() == psutil.STATUS_ZOMBIE

    # Every cell of a local run, each exactly once, all rerun to ok (one death < allowed failures).
    run_suite(load_suite(suite), tmp_path / "local", progress=False)
    local, dask = load_results(tmp_path / "local"), load_results(tmp_path / "dask")
    assert _cells(dask) == _cells(local) and len(_cells(dask)) == 10
    keys = list(zip(dask.problem, dask["size"], dask.seed, dask.backend, dask.dtype, dask.phase))
    assert len(keys) == len(set(keys)) == len(local)
    assert set(dask.executor) == {"dask"} and dask.host.notna().all()
