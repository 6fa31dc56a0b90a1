"""The Dask executor on a LocalCluster: the same cells, statuses and exact gradients as the
local executor; faults stay rows; interrupted runs resume with either executor; a group
whose Dask worker dies is a row; CPU slots; the command line's flags."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed", reason="the dask executor needs distributed "
                                                        "(pip install 'diffcompare[dask]')")

from diffcompare import cli  # noqa: E402
from diffcompare.runner import load_results, load_suite, run_suite  # noqa: E402
from diffcompare.runner.cpu_slots import cpu_slot, usable_cpus  # noqa: E402
from diffcompare.runner.dask_executor import DaskExecutor  # noqa: E402
from diffcompare.runner.progress import Progress  # noqa: E402
from diffcompare.runner.supervisor import Cancelled  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DASK_SCRIPTED = "tests.runner.dask_cells:scripted"


@pytest.fixture(scope="module")
def dask_executor():
    """Two worker processes; a group whose worker dies once is given up (allowed-failures 0),
    so the dead-worker test needs a single death."""
    import dask

    with pytest.MonkeyPatch.context() as mp:
        path = os.environ.get("PYTHONPATH")
        mp.setenv("PYTHONPATH", str(REPO) + (os.pathsep + path if path else ""))
        with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
            executor = DaskExecutor.local(n_workers=2)
    try:
        yield executor
    finally:
        executor.close()


def _cells(frame):
    cells = frame[frame.phase == "cell"]
    return sorted(zip(cells.problem, cells["size"], cells.backend, cells.dtype, cells.status))


def _row_keys(frame):
    return sorted(zip(frame.problem, frame["size"], frame.seed, frame.backend, frame.dtype, frame.phase))


def test_smoke_suite_on_a_local_cluster_matches_the_local_executor(tmp_path, dask_executor):
    from diffcompare.report.data import is_exact

    suite = load_suite("smoke")
    run_suite(suite, tmp_path / "local", progress=False)
    summary = run_suite(suite, tmp_path / "dask", progress=False, executor=dask_executor)
    local, dask = load_results(tmp_path / "local"), load_results(tmp_path / "dask")
    assert summary.cells_run == summary.total_cells == len(dask[dask.phase == "cell"])
    assert _cells(local) == _cells(dask) and _row_keys(local) == _row_keys(dask)
    assert set(local.executor) == {"local"} and set(dask.executor) == {"dask"}
    assert set(dask.host) == {socket.gethostname()}
    # Exact methods compute the same gradient in either executor: the same error, to the bit.
    grad = ["problem", "size", "backend", "dtype"]
    a = local[(local.phase == "gradient") & local.family.map(is_exact)].sort_values(grad)
    b = dask[(dask.phase == "gradient") & dask.family.map(is_exact)].sort_values(grad)
    assert len(a) >= 2 and a[grad].values.tolist() == b[grad].values.tolist()
    assert a.error_rel.tolist() == b.error_rel.tolist() and a.error_rho.tolist() == b.error_rho.tolist()


def _fault_suite(rt):
    return rt.make_suite([{"backends": ["engine", "manual", "fd-forward", "fd-central"], "sizes": [1, 2],
                        "options": {"manual": {"behavior": "raise_error"},
                                    "fd-forward": {"behavior": "sigkill_self"},
                                    "fd-central": {"behavior": "timeout_from_size", "hang_from_size": 2}}}],
                      timeout_s=1.5)


def test_faults_are_rows_as_with_the_local_executor(tmp_path, dask_executor, rt):
    # The same outcomes as test_runner_faults checks for the local executor, size by size.
    summary = run_suite(_fault_suite(rt), tmp_path, progress=False, executor=dask_executor)
    assert summary.counts == {"ok": 3, "error": 2, "crashed": 2, "timeout": 1}
    frame = load_results(tmp_path)
    assert _cells(frame) == sorted(
        [(rt.PROBLEM, size, "engine", "float64", "ok") for size in (1, 2)]
        + [(rt.PROBLEM, size, "manual", "float64", "error") for size in (1, 2)]
        + [(rt.PROBLEM, size, "fd-forward", "float64", "crashed") for size in (1, 2)]
        + [(rt.PROBLEM, 1, "fd-central", "float64", "ok"), (rt.PROBLEM, 2, "fd-central", "float64", "timeout")])
    crashed = frame[(frame.phase == "cell") & (frame.status == "crashed")]
    assert crashed.message.str.contains("SIGKILL").all() and set(crashed.executor) == {"dask"}
    assert len(_row_keys(frame)) == len(set(_row_keys(frame)))


class _StopAfter(Progress):
    """Ctrl-C after ``n`` finished cells."""

    def __init__(self, n):
        self.n = n

    def cell_finished(self, name, status):
        self.n -= 1
        if self.n == 0:
            raise KeyboardInterrupt


def _resume_suite(rt):
    return rt.make_suite([{"backends": ["engine", "manual"], "sizes": [1, 2, 3, 4],
                        "options": {"engine": {"phase_s": 0.02}, "manual": {"phase_s": 0.02}}}])


@pytest.mark.parametrize("first, then", [("dask", "local"), ("local", "dask")])
def test_an_interrupted_run_resumes_with_either_executor(tmp_path, dask_executor, rt, first, then):
    executors = {"dask": dask_executor, "local": None}
    with pytest.raises(KeyboardInterrupt):
        run_suite(_resume_suite(rt), tmp_path, progress=_StopAfter(3), executor=executors[first])
    part = load_results(tmp_path)
    assert 0 < len(part[part.phase == "cell"]) < 8
    resumed = run_suite(_resume_suite(rt), tmp_path, progress=False, executor=executors[then])
    frame = load_results(tmp_path)
    assert resumed.resumed_cells + resumed.cells_run == resumed.total_cells == 8
    every_row_once = sorted((rt.PROBLEM, size, 0, backend, "float64", phase) for size in (1, 2, 3, 4)
                            for backend in ("engine", "manual")
                            for phase in ("prepare", "function", "gradient", "cell"))
    assert _row_keys(frame) == every_row_once
    assert set(frame[frame.phase == "cell"].status) == {"ok"}
    assert set(frame.executor) == {"dask", "local"}


def test_a_group_whose_dask_worker_dies_is_recorded_as_crashed(tmp_path, dask_executor, rt):
    suite = rt.make_suite([{"backends": ["engine", "manual"], "sizes": [1, 2, 3],
                         "options": {"engine": {"behavior": "kill_dask_worker", "at_size": 2}}}],
                       cell_function=DASK_SCRIPTED)
    summary = run_suite(suite, tmp_path, progress=False, executor=dask_executor)
    frame = load_results(tmp_path)
    cells = frame[frame.phase == "cell"]
    assert summary.counts == {"ok": 4, "crashed": 2}
    assert len(cells) == len(set(zip(cells["size"], cells.backend))) == 6       # each cell once
    dead = cells[cells["size"] == 2]
    assert set(dead.status) == {"crashed"} and dead.message.str.contains("Dask worker").all()
    assert not (frame[frame["size"] == 2].phase != "cell").any()    # no rows of the lost run
    dask_executor.client.wait_for_workers(2, timeout=120)          # the nanny restarts it


def test_cpu_slots_are_one_per_cpu_and_pin_the_worker_process():
    cpus = usable_cpus()
    cancelled = threading.Event()
    cancelled.set()
    with contextlib.ExitStack() as stack:
        held = [stack.enter_context(cpu_slot()) for _ in cpus]
        assert sorted(held) == sorted(cpus)
        with pytest.raises(Cancelled):                  # every CPU held: it would wait
            stack.enter_context(cpu_slot(cancelled))
    with cpu_slot() as cpu:
        if hasattr(os, "sched_getaffinity"):
            out = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                                 capture_output=True, text=True, check=True).stdout
            assert out.strip() == f"[{cpu}]"
    if hasattr(os, "sched_getaffinity"):
        assert tuple(sorted(os.sched_getaffinity(0))) == cpus     # the thread's affinity is back


@pytest.mark.parametrize("argv, says", [
    (["--workers", "0"], "at least 1"),
    (["--scheduler", "tcp://127.0.0.1:9", "--workers", "2"], "drop one"),
    (["--executor", "dask", "--workers", "0"], "at least 1"),
])
def test_cli_flag_mistakes_are_one_line_errors(capsys, argv, says):
    assert cli.main(["run", "--suite", "smoke", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("diffcompare: error:") and says in err and "\n" not in err


def test_cli_unreachable_scheduler_is_a_one_line_error(capsys, monkeypatch, tmp_path):
    from diffcompare.runner import dask_executor

    monkeypatch.setattr(dask_executor, "CONNECT_TIMEOUT_S", 1.0)
    with socket.socket() as s:                          # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = cli.main(["run", "--suite", "smoke", "--results", str(tmp_path), "--scheduler",
                     f"tcp://127.0.0.1:{port}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "could not connect to the Dask scheduler" in err and "\n" not in err
    assert not (tmp_path / "results.jsonl").exists()


def test_gpu_suite_cells_run_on_the_cluster_and_record_the_device(tmp_path, dask_executor):
    """The gpu suite's path on the cluster's workers: jax-jit asked for the GPU in a group of
    its own, the engine on the CPU.  With a GPU, jax-jit's row says the GPU; without one
    (CI), it is unavailable and says why -- never a CPU result under the GPU's name."""
    import dataclasses

    pytest.importorskip("jax", reason="the gpu suite's methods need jax")
    from diffcompare.runner.environment import accelerators
    from diffcompare.runner.suite import GridBlock

    gpu = load_suite("gpu")
    assert gpu.device == "gpu" and any("jax-jit" in b.backends for b in gpu.grid)
    suite = dataclasses.replace(gpu, grid=(GridBlock(("rosenbrock",), ("jax-jit", "engine"), (4,)),),
                                dtypes=("float32",), studies=(),
                                cell_options={"samples": 1, "min_sample_s": 0.0})
    summary = run_suite(suite, tmp_path, progress=False, executor=dask_executor)
    frame = load_results(tmp_path)
    engine = frame[(frame.backend == "engine") & (frame.phase == "gradient")].iloc[0]
    assert engine.executor == "dask" and isinstance(engine.memory_source, str)
    if accelerators().get("gpu_count"):
        assert summary.counts == {"ok": 2}
        jax = frame[(frame.backend == "jax-jit") & (frame.phase == "gradient")].iloc[0]
        assert jax.device.split(":")[0] == "gpu" and 0 <= jax.error_rel < 1e-3
    else:
        assert summary.counts == {"ok": 1, "unavailable": 1}
        jax = frame[(frame.backend == "jax-jit") & (frame.phase == "cell")].iloc[0]
        assert jax.status == "unavailable" and "the GPU was asked for but JAX sees none" in jax.message
        assert not ((frame.backend == "jax-jit") & (frame.phase == "gradient")).any()


def test_cli_executor_dask_runs_a_suite_on_a_local_cluster(tmp_path, rt, capsys):
    suite = tmp_path / "tiny.toml"
    suite.write_text(f'name = "tiny"\ncell_function = "{rt.SCRIPTED}"\nproblem_modules = ["{rt.PROBLEMS}"]\n'
                     f'[[grid]]\nproblems = ["{rt.PROBLEM}"]\nsizes = [1, 2]\nbackends = ["engine"]\n')
    code = cli.main(["run", "--suite", str(suite), "--results", str(tmp_path / "out"), "--quiet",
                     "--executor", "dask", "--workers", "1"])
    assert code == 0 and "2 of 2 cells (ok 2)" in capsys.readouterr().out
    frame = load_results(tmp_path / "out")
    assert len(frame) == 8 and set(frame.executor) == {"dask"}
