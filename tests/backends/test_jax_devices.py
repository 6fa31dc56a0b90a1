"""JAX on a GPU without a GPU: where the JAX backends compute, how a GPU that cannot start
fails, the device each row records (read back from the output arrays) and the float32
matmul precision.

No test here needs a GPU.  "A GPU is visible" and "CUDA fails to start" are fakes of the
device API (``jax.devices``, ``xla_bridge._backend_errors``); "a second device" is JAX's
CPU backend split in two (``--xla_force_host_platform_device_count=2``, in a subprocess,
since the flag must be set before JAX starts)."""
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

from diffcompare import backends, problems  # noqa: E402
from diffcompare.backends import Unavailable, forward, jax_backend, jax_runtime  # noqa: E402
from diffcompare.backends.jax_runtime import GpuStartError  # noqa: E402
from diffcompare.measure.cell import measure_cell  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
JAX_ON_A_DEVICE = ["jax-jit", "jax-eager", "jax-jit-tf32", "jax-jacfwd"]
FAST = {"samples": 1, "min_sample_s": 0.0}


class _Device:
    def __init__(self, platform, id=0, kind=None):
        self.platform, self.id, self.device_kind = platform, id, kind or platform


class _FakeJax:
    """``jax.devices(kind)`` of a machine with a CPU and, unless ``gpu_error``, a GPU."""

    def __init__(self, gpu_error=None):
        self.cpu, self.gpu = _Device("cpu"), _Device("gpu", 0, "NVIDIA H100 80GB HBM3")
        self.gpu_error = gpu_error

    def devices(self, kind=None):
        if kind == "gpu":
            if self.gpu_error:
                raise RuntimeError(self.gpu_error)
            return [self.gpu]
        return [self.cpu]

    def default_backend(self):
        return "cpu"


# --- explicit devices ----------------------------------------------------------------

@pytest.mark.parametrize("name", JAX_ON_A_DEVICE)
def test_the_jax_backends_default_to_the_cpu_and_can_compute_on_the_gpu(name):
    b = backends.get(name)
    assert b.device == "cpu" and "gpu" in b.devices
    assert "gpu" not in backends.get("jax-jit-cpu").devices
    assert backends.devices_of(name) == ("cpu", "gpu") and backends.devices_of("engine") == ("cpu",)


def test_a_visible_gpu_is_used_only_when_asked_for():
    fake = _FakeJax()
    assert jax_runtime.pick_device(fake) is fake.cpu             # the default: the CPU
    assert jax_runtime.pick_device(fake, "cpu") is fake.cpu
    assert jax_runtime.pick_device(fake, "gpu") is fake.gpu


@pytest.mark.parametrize("bad", [None, "tpu", "cuda"])
def test_a_device_other_than_cpu_or_gpu_is_refused_with_the_choices(bad):
    with pytest.raises(ValueError, match="'cpu', 'gpu'"):
        jax_backend.JaxJitBackend(device=bad)
    with pytest.raises(ValueError, match="'cpu', 'gpu'"):
        forward.JaxJacfwdBackend(device=bad)


# --- loud failures ---------------------------------------------------------------------

def test_cuda_failing_to_start_is_an_error_naming_the_cause_never_the_cpu():
    fake = _FakeJax(gpu_error="Unable to initialize backend 'cuda': CUDA_ERROR_OUT_OF_MEMORY: "
                              "out of memory")
    with pytest.raises(GpuStartError, match="CUDA_ERROR_OUT_OF_MEMORY") as info:
        jax_runtime.pick_device(fake, "gpu")
    assert "nothing ran on the CPU" in str(info.value)
    assert jax_runtime.pick_device(fake, "cpu") is fake.cpu       # the CPU, when asked for, still works


def test_a_cuda_plugin_that_failed_quietly_is_found_in_jaxs_backend_errors(monkeypatch):
    """Without JAX_PLATFORMS, a CUDA plugin that fails at start-up makes ``jax.devices("gpu")``
    say only "Unknown backend"; JAX keeps the plugin's error in ``xla_bridge._backend_errors``."""
    from jax._src import xla_bridge

    monkeypatch.setattr(xla_bridge, "_backend_errors", {"cuda": "no supported devices found for "
                                                                "platform CUDA"})
    fake = _FakeJax(gpu_error="Unknown backend: 'gpu' requested, but no platforms that are "
                              "instances of gpu are present. Platforms present are: cpu")
    with pytest.raises(GpuStartError, match="no supported devices found"):
        jax_runtime.pick_device(fake, "gpu")


def test_no_gpu_at_all_makes_the_gpu_cells_unavailable_not_cpu_results():
    if jax_runtime.gpu_devices(jax):
        pytest.skip("this machine has a GPU")
    for name in JAX_ON_A_DEVICE:
        b = backends.get(name, device="gpu")
        assert not b.available() and "JAX sees none" in b.available().reason
        rows = list(measure_cell("rosenbrock", 4, 0, name, "float64",
                                 {**FAST, "backend_options": {"device": "gpu"}}))
        assert [(r["phase"], r["status"]) for r in rows] == [("cell", "unavailable")]
        assert "diffcompare[gpu]" in rows[0]["message"]


def test_a_gpu_that_cannot_start_raises_out_of_the_cell(monkeypatch):
    """The worker turns the exception into the cell's ``error`` row (its message is the
    exception's): no prepare, function or gradient row is measured anywhere else."""
    from jax._src import xla_bridge

    if jax_runtime.gpu_devices(jax):
        pytest.skip("this machine has a working GPU")
    monkeypatch.setattr(xla_bridge, "_backend_errors", {"cuda": "CUDA_ERROR_NO_DEVICE"})
    rows = []
    with pytest.raises(GpuStartError, match="CUDA_ERROR_NO_DEVICE"):
        for row in measure_cell("rosenbrock", 4, 0, "jax-jit", "float64",
                                {**FAST, "backend_options": {"device": "gpu"}}):
            rows.append(row)
    assert rows == []


# --- the device on every row ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["jax-jit", "jax-eager", "jax-jacfwd", "jax-jit-cpu"])
def test_every_jax_row_records_the_device_read_back_from_its_output(name):
    rows = {r["phase"]: r for r in measure_cell("mlp_tanh", 4, 0, name, "float64", FAST)}
    cpu = jax.devices("cpu")[0]
    assert rows["gradient"]["device"] == f"cpu:{cpu.id} {cpu.device_kind}"
    assert rows["prepare"]["device"] == rows["gradient"]["device"]


def test_output_device_reads_the_arrays_not_the_request():
    assert jax_runtime.output_device((np.ones(2),)) is None          # NumPy: no device to read
    out = jax.device_put(np.ones(2), jax.devices("cpu")[0])
    assert jax_runtime.output_device((out, out)) == jax_runtime.describe_device(jax.devices("cpu")[0])


_TWO_DEVICES = textwrap.dedent("""
    import json, jax
    from diffcompare.backends import jax_runtime
    from diffcompare.measure.cell import measure_cell
    second = jax.devices("cpu")[1]
    # "the GPU" of this test is the second CPU device: the backend must compute there
    jax_runtime.gpu_devices = lambda jax: [second]
    out = {}
    for name in ("jax-jit", "jax-eager", "jax-jacfwd"):
        rows = {r["phase"]: r for r in measure_cell(
            "mlp_tanh", 4, 0, name, "float32",
            {"samples": 1, "min_sample_s": 0.0, "backend_options": {"device": "gpu"}})}
        g = rows["gradient"]
        out[name] = [g["status"], g["device"], g["memory_source"], g["extra"]["matmul_precision"]]
    out["devices"] = len(jax.devices("cpu"))
    print(json.dumps(out))
""")


def test_a_cell_asked_for_another_device_computes_there_and_says_so():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
           "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", _TWO_DEVICES], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out.pop("devices") == 2
    for name, (status, device, source, precision) in out.items():
        assert (status, device, precision) == ("ok", "cpu:1 cpu", "highest"), name
        # a device the host's allocator hooks see: its peak is measured on the host scale
        assert source.startswith(("memray-native", "not-measured")), (name, source)


# --- float32 matmul precision --------------------------------------------------------------

def _float32(problem, size):
    p = problems.get(problem)
    return p, tuple(a.astype(np.float32) if i in p.wrt else a for i, a in enumerate(p.inputs(size, 0)))


def test_float32_matrix_products_run_at_highest_precision_unless_tf32_is_asked_for():
    """The precision is part of the compiled program (XLA's operand_precision), set at trace
    time, and recorded in prepare's info and on the gradient row."""
    problem, inputs = _float32("mlp_tanh", 4)
    seen = {}
    for name in ("jax-jit", "jax-jit-tf32", "jax-jit-cpu"):     # prepared on the CPU: the program
        prepared = backends.get(name).prepare(problem, inputs)
        text = prepared.state.gradient.as_text()
        seen[name] = (prepared.info["matmul_precision"],
                      "operand_precision={highest,highest}" in text)
    assert seen == {"jax-jit": ("highest", True), "jax-jit-tf32": ("tensorfloat32", False),
                    "jax-jit-cpu": ("highest", True)}
    options = {**FAST, "backend_options": {"matmul_precision": "tensorfloat32"}}
    rows = {r["phase"]: r for r in measure_cell("mlp_tanh", 4, 0, "jax-jit", "float32", options)}
    assert rows["gradient"]["extra"]["matmul_precision"] == "tensorfloat32"
    rows = {r["phase"]: r for r in measure_cell("mlp_tanh", 4, 0, "jax-jit", "float32", FAST)}
    assert rows["gradient"]["extra"]["matmul_precision"] == "highest"


def test_the_tf32_variant_runs_only_where_tf32_exists():
    """On the CPU jax-jit-tf32 would be jax-jit under another name: unavailable, saying why."""
    support = backends.get("jax-jit-tf32").available()
    assert not support and "GPU" in support.reason and 'device = "gpu"' in support.reason
    rows = list(measure_cell("mlp_tanh", 4, 0, "jax-jit-tf32", "float32", FAST))
    assert [(r["phase"], r["status"]) for r in rows] == [("cell", "unavailable")]


def test_eager_calls_run_under_the_precision_too():
    import dataclasses

    problem, inputs = _float32("mlp_tanh", 4)
    seen = []

    def spy(xp, *args):
        seen.append(jax.config.jax_default_matmul_precision)
        return problems.get("mlp_tanh").fn(xp, *args)

    problem = dataclasses.replace(problem, name="mlp_tanh_spied", fn=spy)
    b = backends.get("jax-eager", matmul_precision="tensorfloat32")
    b.gradient(b.prepare(problem, inputs), inputs)
    assert seen and set(seen) == {"tensorfloat32"}


def test_an_unknown_matmul_precision_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="highest.*tensorfloat32"):
        backends.get("jax-jit", matmul_precision="tf32")


# --- GPU memory ---------------------------------------------------------------------------

def test_a_gpu_peak_hidden_by_an_earlier_one_says_why_with_the_numbers():
    from diffcompare.measure import cell, memory

    class Gpu:
        platform = "gpu"

        def memory_stats(self):
            return {"bytes_in_use": 10, "peak_bytes_in_use": 5_000}

    assert memory.peak_gpu_bytes(lambda: None, Gpu()) is None
    peak, source, _ = cell._peak(None, lambda: None, Gpu(), None)
    assert peak is None and source.startswith("not-measured: ")
    assert "5000 bytes" in source and "cannot reset" in source


def test_a_hidden_gpu_peak_of_a_compiled_program_is_its_buffer_assignment():
    """XLA's autotuning sets the high-water mark while compiling, above a jitted call's own
    peak (seen on an H200); the program's buffer assignment then says what a call allocates."""
    from diffcompare.measure import cell, memory

    class Gpu:
        platform = "gpu"

        def memory_stats(self):
            return {"bytes_in_use": 10, "peak_bytes_in_use": 5_000}

    info = {"gradient_temp_bytes": 300, "gradient_output_bytes": 200, "gradient_alias_bytes": 50}
    planned = memory.planned_xla_bytes(info)
    assert planned == 450
    peak, source, extra = cell._peak(None, lambda: None, Gpu(), None, planned)
    assert (peak, source) == (450, memory.XLA_BUFFERS)
    assert "5000 bytes" in extra["gpu_peak_hidden"]
    # a peak the allocator did see is the allocator's, whatever the program planned
    assert cell._peak(None, lambda: None, Gpu(), 777, planned)[:2] == (777, memory.GPU_MEMORY_STATS)


def test_jax_jit_records_the_buffer_assignment_the_gpu_fallback_reads():
    problem, inputs = _float32("mlp_tanh", 4)
    prepared = backends.get("jax-jit").prepare(problem, inputs)
    from diffcompare.measure import memory

    planned = memory.planned_xla_bytes(prepared.info)
    assert planned is not None and planned >= sum(a.nbytes for a in inputs[:4])   # the gradients


def test_jacfwd_on_a_gpu_is_measured_with_the_devices_statistics():
    """``_gpu_device`` finds jax-jacfwd's device (its state is a dict), so its GPU peak comes
    from the GPU's allocator, not from host hooks that cannot see it."""
    from diffcompare.measure import cell

    class Prepared:
        state = {"device": _Device("gpu")}

    assert cell._gpu_device(Prepared()).platform == "gpu"
    Prepared.state = {"device": _Device("cpu")}
    assert cell._gpu_device(Prepared()) is None
