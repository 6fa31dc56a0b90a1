"""The GPU path on a real GPU: JAX's backends compute there when asked, say so on every row,
agree with the CPU, keep float32 matrix products at full precision unless TF32 is asked for,
measure peak memory with the GPU's own allocator, and the runner sends GPU cells to the GPU
and everything else to the CPU.

Every test here needs JAX with a working GPU and skips without one (CI is a CPU machine; the
fakes in ``tests/backends/test_jax_devices.py`` and ``tests/runner/test_gpu_runner.py`` cover
the logic there).  Run on a GPU machine::

    pytest tests/gpu tests/backends/test_jax_devices.py tests/runner/test_gpu_runner.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from diffcompare import backends, cli, problems  # noqa: E402
from diffcompare.backends import jax_runtime  # noqa: E402
from diffcompare.measure.cell import cell_inputs, measure_cell  # noqa: E402
from diffcompare.runner import environment  # noqa: E402


def _gpus():
    try:
        return jax_runtime.gpu_devices(jax)
    except jax_runtime.GpuStartError:
        return []


pytestmark = pytest.mark.skipif(not _gpus(), reason="needs JAX with a working GPU "
                                "(pip install 'diffcompare[gpu]' on a machine with an NVIDIA GPU)")

REPO = Path(__file__).resolve().parents[2]
ON_THE_GPU = ["jax-jit", "jax-eager", "jax-jacfwd"]
FAST = {"samples": 1, "min_sample_s": 0.0}
GPU = {**FAST, "backend_options": {"device": "gpu"}}


def _gradient(name, problem_name, size, dtype="float64", **options):
    """The gradient of ``name`` (with ``options``) on the catalog's inputs, as NumPy arrays."""
    problem = problems.get(problem_name)
    _, inputs = cell_inputs(problem, size, 0, dtype)
    b = backends.get(name, **options)
    grads = b.gradient(b.prepare(problem, inputs), inputs)
    return [np.asarray(g) for g in grads]


def test_jax_starts_the_gpu_and_picks_it_only_when_asked():
    gpu = jax_runtime.pick_device(jax, "gpu")
    assert gpu.platform == "gpu"
    assert jax_runtime.pick_device(jax, "cpu").platform == "cpu"
    assert jax_runtime.describe_device(gpu).startswith("gpu:0 ")
    assert backends.get("jax-jit", device="gpu").available()
    assert backends.get("jax-jit-tf32", device="gpu").available()          # TF32 exists here


@pytest.mark.parametrize("name", ON_THE_GPU)
@pytest.mark.parametrize("problem_name,size", [("rosenbrock", 1000), ("mlp_tanh", 64),
                                                ("logsumexp", 1000), ("gmm", 8)])
def test_float64_gradients_on_the_gpu_equal_torchs_on_the_cpu(name, problem_name, size):
    """An independent reference (torch, CPU): rtol 1e-6 / atol 1e-8 in float64."""
    pytest.importorskip("torch")
    got = _gradient(name, problem_name, size, device="gpu")
    want = _gradient("torch", problem_name, size)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == np.float64 and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8)


def test_every_row_of_a_gpu_cell_says_the_gpu_and_its_peak_comes_from_the_gpu_allocator():
    for name in ON_THE_GPU:
        rows = {r["phase"]: r for r in measure_cell("mlp_tanh", 64, 0, name, "float32", GPU)}
        g = rows["gradient"]
        assert g["status"] == "ok", (name, g["message"])
        assert g["device"].startswith("gpu:0 ") and rows["prepare"]["device"] == g["device"]
        # the allocator's peak; where compiling set a higher mark first, a jitted program's
        # buffer assignment, else why not -- never host bytes
        source = g["memory_source"]
        compiled = ("xla-buffer-assignment",) if name == "jax-jit" else ()
        assert source in ("gpu-memory-stats", *compiled) or source.startswith("not-measured"), \
            (name, source)
        assert g["error_rel"] is not None and g["error_rel"] < 1e-5, (name, g["error_rel"])


_PLANNED_AND_ALLOCATED = textwrap.dedent("""
    import json, sys
    from diffcompare import backends, problems
    from diffcompare.measure import memory
    from diffcompare.measure.cell import _gpu_device, cell_inputs
    import runpy; runpy.run_path("experiments/problems/gpu_scale.py")
    name, size, dtype = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    problem = problems.get(name)
    _, inputs = cell_inputs(problem, size, 0, dtype)
    b = backends.get("jax-jit", device="gpu")
    prepared = b.prepare(problem, inputs)
    call, _ = b.timed_vjp(prepared, inputs, problem.cotangent(size, 0))
    allocated = memory.peak_gpu_bytes(call, _gpu_device(prepared))
    print(json.dumps([allocated, memory.planned_xla_bytes(prepared.info)]))
""")


@pytest.mark.parametrize("problem_name,size,dtype", [("rosenbrock", 10**6, "float64"),
                                                     ("mlp_784", 10_000, "float32"),
                                                     ("gmm_100k", 5, "float64")])
def test_the_gpu_allocator_gives_a_call_its_buffer_assignment_and_less_than_twice_it(
        problem_name, size, dtype):
    """In a fresh process compiled without autotuning (whose scratch buffers would set the
    high-water mark), the allocator's peak over the first call is the program's buffer
    assignment (what a row reports where the mark is hidden) plus the allocator's rounding:
    JAX's BFC allocator hands out a free chunk whole when it is under twice the request.
    Seen on an H200: rosenbrock 10^6 8.39 MB for 8.00 planned, mlp_784 10^4 float32
    67.3 MB for 36.2, gmm_100k K=5 134.2 MB for 120.2."""
    env = {**environment.worker_env(dict(os.environ), "gpu", gpu=0), "PYTHONPATH": str(REPO),
           "XLA_FLAGS": "--xla_gpu_autotune_level=0"}
    done = subprocess.run([sys.executable, "-c", _PLANNED_AND_ALLOCATED, problem_name, str(size),
                           dtype], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    allocated, planned = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{problem_name} {size} {dtype}: allocator {allocated} bytes, buffer assignment {planned}")
    assert allocated is not None and planned is not None
    assert planned <= allocated <= 2 * planned + (2 << 20), (allocated, planned)


def test_float32_matrix_products_are_full_float32_unless_tf32_is_asked_for():
    """TF32 keeps 10 mantissa bits (~1e-3 relative); "highest" must be float32's ~1e-7.
    (``gradient`` hands back float64 NumPy arrays of the float32 results.)"""
    want = _gradient("jax-jit-cpu", "mlp_tanh", 256)                    # float64 on the CPU
    highest = _gradient("jax-jit", "mlp_tanh", 256, "float32", device="gpu")
    tf32 = _gradient("jax-jit", "mlp_tanh", 256, "float32", device="gpu",
                     matmul_precision="tensorfloat32")

    def error(got):
        return max(np.abs(g - w).max() / np.abs(w).max() for g, w in zip(got, want))

    assert error(highest) < 1e-5
    assert error(tf32) > 10 * error(highest)


def test_a_cpu_worker_never_sees_the_gpu_and_a_gpu_worker_sees_only_its_own():
    probe = "import json, jax; print(json.dumps(sorted({d.platform for d in jax.devices()})))"

    def platforms(env):
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              env={**env, "PYTHONPATH": str(REPO)}, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    assert platforms(environment.worker_env(dict(os.environ), "cpu")) == ["cpu"]
    assert "gpu" in platforms(environment.worker_env(dict(os.environ), "gpu", gpu=0))
    found = environment.accelerators()
    assert found["gpu_count"] >= 1 and found["gpu"] and "cuda" in found


def test_the_runner_puts_the_jax_cells_on_the_gpu_and_the_rest_on_the_cpu(tmp_path, monkeypatch):
    from diffcompare.runner import cpu_slots

    slots = tmp_path / "slots"            # this run's own slot locks, not the host's
    slots.mkdir()
    monkeypatch.setattr(cpu_slots, "_slot_dir", lambda: slots)
    results = tmp_path / "gpu"
    code = cli.main(["run", "--problems", "rosenbrock,mlp_tanh", "--sizes", "64",
                     "--backends", "jax-jit,jax-jit-tf32,jax-jit-cpu,engine",
                     "--device", "gpu", "--results", str(results), "--quiet"])
    assert code == 0
    rows = [json.loads(line) for line in (results / "results.jsonl").read_text().splitlines()]
    grads = [r for r in rows if r["phase"] == "gradient"]
    assert {r["status"] for r in grads} == {"ok"}
    by_backend = {}
    for r in grads:
        by_backend.setdefault(r["backend"], set()).add(r["device"].split(":")[0] if r["device"]
                                                       else None)
    assert by_backend["jax-jit"] == {"gpu"} and by_backend["jax-jit-tf32"] == {"gpu"}
    assert by_backend["jax-jit-cpu"] == {"cpu"}
    run = json.loads((results / "run.json").read_text())
    env = run["environment"]
    assert env["gpu_count"] >= 1 and env["gpu"] and env["cuda"]["platform_version"]
