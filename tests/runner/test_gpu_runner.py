"""One GPU, shared on purpose, tested without one: the suite's ``device``, GPU groups apart
from CPU groups, one GPU group per GPU at a time (a lock file per GPU), the worker
environments (CPU workers never start CUDA; GPU workers do not preallocate and see their
GPU alone), ``--device`` and ``compare(device=)``, what run.json records, and answers that
do not put a GPU allocator's bytes on the host's scale."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pandas as pd
import pytest

from diffcompare import cli
from diffcompare.runner import cpu_slots, environment
from diffcompare.runner.grid import Group, build_groups
from diffcompare.runner.suite import SuiteError, Suite, load_suite
from diffcompare.runner.supervisor import Cancelled
from diffcompare.results import winners

REPORT_ENV = "tests.runner.gpu_cells:report_env"


@pytest.fixture
def slot_dir(tmp_path, monkeypatch):
    """The host's slot locks in a folder of this test's own (tests on a shared machine
    would otherwise meet each other's locks)."""
    folder = tmp_path / "slots"
    folder.mkdir()
    monkeypatch.setattr(cpu_slots, "_slot_dir", lambda: folder)
    monkeypatch.setenv("DIFFCOMPARE_TEST_SLOT_DIR", str(folder))
    monkeypatch.setenv("DIFFCOMPARE_GPUS", "1")
    return folder


# --- worker environments ---------------------------------------------------------------

def test_cpu_workers_never_start_cuda_and_gpu_workers_do_not_preallocate():
    cpu = environment.worker_env({"JAX_PLATFORMS": "cuda"}, "cpu")
    assert cpu["JAX_PLATFORMS"] == "cpu" and "XLA_PYTHON_CLIENT_PREALLOCATE" not in cpu
    gpu = environment.worker_env({"JAX_PLATFORMS": "cpu"}, "gpu", gpu=0)
    assert "JAX_PLATFORMS" not in gpu                      # a CPU-only setting would hide the GPU
    assert gpu["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false" and gpu["CUDA_VISIBLE_DEVICES"] == "0"
    assert gpu["OMP_NUM_THREADS"] == "1"                   # still one thread per library
    stated = environment.worker_env({"XLA_PYTHON_CLIENT_PREALLOCATE": "true",
                                     "XLA_PYTHON_CLIENT_MEM_FRACTION": ".4"}, "gpu")
    assert (stated["XLA_PYTHON_CLIENT_PREALLOCATE"], stated["XLA_PYTHON_CLIENT_MEM_FRACTION"]) == \
        ("true", ".4")                                     # the user's stated setting is kept
    with pytest.raises(ValueError, match="'cpu' or 'gpu'"):
        environment.worker_env({}, "tpu")


# --- GPU slots ----------------------------------------------------------------------------

def _try_gpu_slot(count):
    """In another thread (the main one holds a slot): the slot it got, or "all held"."""
    out = []
    stop = threading.Event()
    stop.set()                      # do not wait: give up when every slot is held

    def claim():
        try:
            with cpu_slots.gpu_slot(stop, count=count) as gpu:
                out.append(gpu)
        except Cancelled:
            out.append("all held")

    t = threading.Thread(target=claim)
    t.start()
    t.join(30)
    return out[0]


def test_one_group_per_gpu_at_a_time(slot_dir):
    with cpu_slots.gpu_slot(count=1) as gpu:
        assert gpu == 0
        assert _try_gpu_slot(1) == "all held"
        assert _try_gpu_slot(2) == 1                      # a second GPU is free
    assert _try_gpu_slot(1) == 0                          # released on exit
    with cpu_slots.gpu_slot(count=0) as gpu:              # no GPU: one slot all the same
        assert gpu == 0 and _try_gpu_slot(0) == "all held"


def test_the_gpu_count_can_be_told_and_a_bad_one_is_refused(monkeypatch):
    monkeypatch.setenv("DIFFCOMPARE_GPUS", "3")
    assert cpu_slots.gpu_count() == 3
    monkeypatch.setenv("DIFFCOMPARE_GPUS", "two")
    with pytest.raises(ValueError, match="DIFFCOMPARE_GPUS"):
        cpu_slots.gpu_count()


# --- suites and groups ------------------------------------------------------------------------

def _suite(device=None, backends=("jax-jit", "engine", "jax-jit-cpu"), **top):
    data = {"name": "devices", "grid": [{"problems": ["rosenbrock"], "backends": list(backends),
                                         "sizes": [4]}], **top}
    if device is not None:
        data["device"] = device
    return Suite.from_dict(data)


def test_default_suites_keep_every_cell_on_the_cpu():
    suite = _suite()
    assert suite.device == "cpu"
    [group] = build_groups(suite)
    assert group.device == "cpu" and group.name == "rosenbrock/4/seed0/float64"
    assert all("backend_options" not in b.options for b in group.backends)
    for name in ("quick", "smoke", "standard"):
        assert load_suite(name).device == "cpu"


def test_a_gpu_suite_puts_the_gpu_capable_cells_in_a_group_of_their_own():
    gpu, cpu = build_groups(_suite("gpu", cell_options={"samples": 3}))
    assert (gpu.device, gpu.name) == ("gpu", "rosenbrock/4/seed0/float64/gpu")
    assert [b.name for b in gpu.backends] == ["jax-jit"]
    assert gpu.backends[0].options == {"samples": 3, "backend_options": {"device": "gpu"}}
    assert cpu.device == "cpu" and [b.name for b in cpu.backends] == ["engine", "jax-jit-cpu"]
    assert Group.from_json(json.loads(json.dumps(gpu.to_json()))) == gpu


def test_a_backend_told_to_stay_on_the_cpu_does_in_a_gpu_suite():
    suite = Suite.from_dict({"name": "d", "device": "gpu", "grid": [{
        "problems": ["rosenbrock"], "backends": ["jax-jit"], "sizes": [4],
        "options": {"jax-jit": {"backend_options": {"device": "cpu"}}}}]})
    [group] = build_groups(suite)
    assert group.device == "cpu"


@pytest.mark.parametrize("bad", ["cuda", "GPU", 1])
def test_a_bad_suite_device_says_what_to_write(bad):
    with pytest.raises(SuiteError, match='`device` must be "cpu" or "gpu"'):
        _suite(bad)


def test_the_gpu_suite_asks_for_the_gpu_at_sizes_where_it_matters():
    suite = load_suite("gpu")
    assert suite.device == "gpu"
    from diffcompare import problems

    mlp, gmm = problems.get("mlp_784"), problems.get("gmm_100k")
    assert max(mlp.sizes) == 50_000                        # rows of the batch
    W1, b1, W2, b2, x, y = mlp.inputs(1000, 0)
    assert x.shape == (1000, 784) and W1.shape == (784, 50) and y.shape == (1000, 10)
    assert gmm.inputs(5, 0)[3].shape == (100_000, 10)
    planned = {(g.problem, g.size) for g in build_groups(suite)}
    assert ("mlp_784", 50_000) in planned and ("gmm_100k", 100) in planned
    assert min(s for p, s in planned if p == "rosenbrock") >= 1000
    on_gpu = {b.name for g in build_groups(suite) if g.device == "gpu" for b in g.backends}
    assert on_gpu == {"jax-jit", "jax-jit-tf32"}          # CPU JAX (jax-jit-cpu) stays beside them


# --- running: slots and environments, through the CLI ----------------------------------

def test_gpu_groups_hold_the_gpu_slot_and_get_the_gpu_environment(tmp_path, slot_dir, rt, capsys,
                                                                   monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    suite = tmp_path / "dev.toml"
    suite.write_text(f'name = "dev"\ncell_function = "{REPORT_ENV}"\nproblem_modules = ["{rt.PROBLEMS}"]\n'
                     f'[[grid]]\nproblems = ["{rt.PROBLEM}"]\nsizes = [1]\n'
                     'backends = ["jax-jit", "jax-jit-tf32", "engine", "jax-jit-cpu"]\n')
    out = tmp_path / "out"
    code = cli.main(["run", "--suite", str(suite), "--results", str(out), "--quiet",
                     "--device", "gpu", "--workers", "1"])   # one group at a time: the CPU group
    # then sees the GPU slot free
    assert code == 0, capsys.readouterr()
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    extra = {r["backend"]: r["extra"] for r in rows if r["phase"] == "cell"}
    assert extra["jax-jit"]["device_option"] == "gpu" and extra["engine"]["device_option"] is None
    assert extra["jax-jit"]["gpu0_held"] is True and extra["engine"]["gpu0_held"] is False
    assert (extra["jax-jit"]["JAX_PLATFORMS"], extra["jax-jit"]["XLA_PYTHON_CLIENT_PREALLOCATE"],
            extra["jax-jit"]["CUDA_VISIBLE_DEVICES"]) == (None, "false", "0")
    assert extra["engine"]["JAX_PLATFORMS"] == "cpu" and extra["engine"]["CUDA_VISIBLE_DEVICES"] is None
    # a fresh worker per GPU cell (its own GPU high-water mark); CPU cells share theirs
    assert extra["jax-jit"]["pid"] != extra["jax-jit-tf32"]["pid"]
    assert extra["jax-jit-tf32"]["gpu0_held"] is True and extra["jax-jit-cpu"]["gpu0_held"] is False
    assert extra["engine"]["pid"] == extra["jax-jit-cpu"]["pid"]
    run = json.loads((out / "run.json").read_text())
    assert run["suite"]["device"] == "gpu"
    assert run["environment"]["gpu_worker_env"]["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert "gpu_count" in run["environment"]


def test_a_gpu_group_does_its_shared_cpu_work_before_it_holds_the_gpu(tmp_path, slot_dir, rt,
                                                                       monkeypatch):
    """The accuracy references of the gpu suite's sizes take minutes of CPU: made while the
    GPU was held (seen on an H200), each GPU group kept the GPU idle that long."""
    log = tmp_path / "setup.log"
    monkeypatch.setenv("DIFFCOMPARE_TEST_SETUP_LOG", str(log))
    suite = tmp_path / "dev.toml"
    suite.write_text(f'name = "dev"\ncell_function = "{REPORT_ENV}"\nproblem_modules = ["{rt.PROBLEMS}"]\n'
                     f'[[grid]]\nproblems = ["{rt.PROBLEM}"]\nsizes = [1]\nbackends = ["jax-jit"]\n')
    out = tmp_path / "out"
    assert cli.main(["run", "--suite", str(suite), "--results", str(out), "--quiet",
                     "--device", "gpu", "--workers", "1"]) == 0
    setups = log.read_text().splitlines()
    # first in a CPU worker with the GPU free, then (its results cached) in the cell's GPU worker
    assert setups == ["False cpu ['jax-jit']", "True None ['jax-jit']"]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["backend"], r["status"]) for r in rows] == [("jax-jit", "ok")]


def test_the_cli_refuses_an_unknown_device(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--suite", "smoke", "--device", "tpu"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--device" in err and "invalid choice" in err and "gpu" in err


def test_compare_refuses_an_unknown_device():
    from diffcompare import compare

    with pytest.raises(ValueError, match='`device` must be "cpu" or "gpu"'):
        compare(lambda xp, x: xp.sum(x * x), inputs=(pd.Series([1.0]).values,), device="cuda")


def test_run_json_records_the_cuda_versions_and_memory_settings_it_found(monkeypatch):
    for key in environment.XLA_MEMORY_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(environment, "accelerators", lambda: {
        "jax_devices": [{"platform": "gpu", "kind": "NVIDIA H100 80GB HBM3"}],
        "gpu": "NVIDIA H100 80GB HBM3", "gpu_count": 1,
        "cuda": {"platform_version": "cuda 12080", "driver": "570.86.15",
                 "jax-cuda12-plugin": "0.10.2"}})
    env = environment.capture_environment()
    assert env["cuda"]["driver"] == "570.86.15" and env["gpu_count"] == 1
    assert env["gpu_worker_env"] == {"XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                                     "XLA_PYTHON_CLIENT_MEM_FRACTION": None,
                                     "XLA_PYTHON_CLIENT_ALLOCATOR": None}


@pytest.mark.parametrize("name, recorded", [
    ("jax-cuda12-plugin", True), ("jax-cuda13-pjrt", True), ("nvidia-cuda-runtime-cu12", True),
    ("nvidia-cuda-runtime", True), ("nvidia-cudnn-cu13", True), ("nvidia-cublas", False),
    ("jax", False), ("jax-cuda12-plugin-extra", False)])
def test_the_cuda_packages_are_recorded_for_any_cuda_major_version(name, recorded):
    # a CUDA 13 image (jax-cuda13-plugin) recorded nothing when the names were cuda12's
    assert bool(environment.GPU_PACKAGE_PATTERN.match(name)) is recorded


def test_gpu_packages_reads_the_installed_distributions(monkeypatch):
    class Dist:
        def __init__(self, name, version):
            self.metadata, self.version = {"Name": name}, version
    monkeypatch.setattr(environment.importlib.metadata, "distributions", lambda: [
        Dist("jax_cuda13_plugin", "0.11.2"), Dist("numpy", "2.5.2"),
        Dist("nvidia-cudnn-cu13", "9.13")])
    assert environment.gpu_packages() == {"jax-cuda13-plugin": "0.11.2",
                                          "nvidia-cudnn-cu13": "9.13"}


# --- answers across devices ---------------------------------------------------------------

def _cells(devices, peaks, sources):
    n = len(devices)
    return pd.DataFrame({
        "problem": ["p"] * n, "size": [4] * n, "seed": [0] * n, "dtype": ["float32"] * n,
        "backend": ["jax-jit", "engine", "torch"][:n], "family": ["jax", "engine", "torch"][:n],
        "status": ["ok"] * n, "gradient_s": [1e-4, 2e-4, 3e-4][:n],
        "gradient_q1_s": [0.9e-4, 1.9e-4, 2.9e-4][:n], "gradient_q3_s": [1.1e-4, 2.1e-4, 3.1e-4][:n],
        "error_rho": [1e-7, 1e-7, 1e-7][:n], "peak_bytes": peaks, "memory_source": sources,
        "device": devices})


def test_answers_name_the_device_and_keep_gpu_bytes_off_the_host_scale():
    cells = _cells(["gpu:0 NVIDIA H100", "cpu:0 cpu", "cpu:0 cpu"], [100.0, 50_000.0, 90_000.0],
                   ["gpu-memory-stats", "memray-native", "memray-native"])
    w = winners(cells).set_index("criterion")
    assert "on gpu: jax-jit" in w.loc["fastest exact", "note"]
    assert w.loc["least memory", "winners"] == ("engine",)          # not jax-jit's 100 device bytes
    assert "jax-jit" not in w.loc["least memory", "compared"]
    assert "device memory not ranked against host memory: jax-jit" in w.loc["least memory", "note"]
    # the same cells all on the CPU: one scale, and nothing said of devices
    cells["device"], cells["memory_source"] = ["cpu:0 cpu", "cpu:0 cpu", None], "memray-native"
    w = winners(cells).set_index("criterion")
    assert w.loc["least memory", "winners"] == ("jax-jit",)
    assert "on gpu" not in " ".join(w["note"])


# --- install path ----------------------------------------------------------------------------

def test_the_gpu_extra_installs_jax_cuda_and_all_leaves_it_out():
    import tomllib

    REPO = Path(__file__).resolve().parents[2]

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(d.startswith("jax[cuda12]") for d in extras["gpu"])
    assert not any("gpu" in d or "cuda" in d for d in extras["all"])
    readme = (REPO / "README.md").read_text()
    assert 'pip install -e ".[all,gpu]"' in readme and "diffcompare run --suite gpu" in readme


def test_test_processes_start_jax_without_preallocating_the_gpu():
    """The repository's conftest.py: several test processes can share one GPU."""
    import os

    assert "XLA_PYTHON_CLIENT_PREALLOCATE" in os.environ   # "false", or the value you set


def test_plots_show_the_device_beside_a_method_that_ran_off_the_cpu():
    from diffcompare.report import plots

    ok = pd.DataFrame({
        "problem": ["p"] * 4, "size": [10, 100, 10, 100], "backend": ["jax-jit"] * 2 + ["engine"] * 2,
        "family": ["jax"] * 2 + ["engine"] * 2, "gradient_s": [1e-4, 2e-4, 1e-5, 1e-3],
        "device": ["gpu:0 NVIDIA H100"] * 2 + ["cpu:0 cpu"] * 2})
    svg = plots.time_vs_size(ok, key="dev")
    assert "jax-jit (gpu)" in svg and "engine" in svg
    assert "engine (cpu)" not in svg
    svg = plots.time_vs_size(ok.assign(device="cpu:0 cpu"), key="dev")
    assert "jax-jit (gpu)" not in svg and "jax-jit" in svg


def test_the_reports_environment_names_the_cuda_versions_and_the_gpu_memory_settings():
    import types

    from diffcompare.report.sections.environment import environment_data

    env = {"gpu": "NVIDIA H100 80GB HBM3", "cuda": {"driver": "570.86.15", "jax-cuda12-plugin": "0.10.2"},
           "gpu_worker_env": {"XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                              "XLA_PYTHON_CLIENT_MEM_FRACTION": None}}
    fake = types.SimpleNamespace(environment=env, run={"sessions": []}, suite={"name": "gpu", "device": "gpu"},
                                 run_id="r", time_span=lambda: (None, None))
    shown = dict(map(tuple, environment_data(fake)["machine"]))
    assert shown["CUDA"] == "driver 570.86.15, jax-cuda12-plugin 0.10.2"
    assert shown["GPU workers' XLA memory settings"] == "XLA_PYTHON_CLIENT_PREALLOCATE=false"
    assert dict(map(tuple, environment_data(fake)["suite"]))["device"] == "gpu"


def test_compare_says_where_each_method_ran(tmp_path):
    """A device the GPU was asked for but missing: jax-jit unavailable (never a CPU result),
    the engine on the CPU; with the default, jax-jit on the CPU, and the table says so."""
    pytest.importorskip("jax")
    from diffcompare import compare
    from diffcompare.backends import jax_runtime

    import jax

    table = compare("rosenbrock", sizes=[4], backends=["jax-jit", "engine"], samples=1,
                    min_sample_s=0.0, results_dir=tmp_path / "cpu")
    cpu = jax.devices("cpu")[0]
    assert table.set_index("backend").loc["jax-jit", "device"] == jax_runtime.describe_device(cpu)
    if jax_runtime.gpu_devices(jax):
        return                                   # a GPU machine: the rest is about none
    table = compare("rosenbrock", sizes=[4], backends=["jax-jit", "engine"], samples=1,
                    min_sample_s=0.0, results_dir=tmp_path / "gpu", device="gpu").set_index("backend")
    assert table.loc["jax-jit", "status"] == "unavailable" and table.loc["engine", "status"] == "ok"
    assert pd.isna(table.loc["jax-jit", "device"]) and pd.isna(table.loc["jax-jit", "gradient_s"])


def test_a_results_folder_is_not_resumed_on_another_device(tmp_path, rt, capsys):
    suite = tmp_path / "dev.toml"
    suite.write_text(f'name = "dev"\ncell_function = "{REPORT_ENV}"\nproblem_modules = ["{rt.PROBLEMS}"]\n'
                     f'[[grid]]\nproblems = ["{rt.PROBLEM}"]\nsizes = [1]\nbackends = ["engine"]\n')
    out = tmp_path / "out"
    args = ["run", "--suite", str(suite), "--results", str(out), "--quiet", "--workers", "1"]
    assert cli.main(args) == 0
    assert cli.main(args + ["--device", "gpu"]) == 2
    err = capsys.readouterr().err
    assert "measured with device 'cpu', not 'gpu'" in err and "--fresh" in err
    assert cli.main(args + ["--device", "gpu", "--fresh"]) == 0
