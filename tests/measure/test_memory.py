"""Memory on one scale: the native source (memray) sees NumPy, JAX and torch alike, agrees
with tracemalloc on NumPy-based methods from 1 MiB up, and every cell names its source,
what its prepared state keeps and the dtype it computed in.  Byte counts are asserted
within bands around the sizes of known arrays; no time is asserted."""
import numpy as np
import pytest

from diffcompare import backends
from diffcompare.measure import memory
from diffcompare.measure.cell import measure_cell
from diffcompare.problems import Problem

memray = pytest.importorskip("memray", reason="memray is not installed: pip install 'diffcompare[memory]'")

N = 1 << 18            # 2 MiB of float64: well above 1 MiB, allocated in microseconds
MiB = 1 << 20


def within(value, expected, rel):
    return expected <= value <= expected * (1 + rel)


def test_native_and_traced_see_a_numpy_array_of_known_size():
    make = lambda: np.ones(N)  # noqa: E731
    assert within(memory.peak_native_bytes(make), 8 * N, 0.05)
    assert within(memory.peak_traced_bytes(make), 8 * N, 0.05)
    assert memory.peak_bytes(make) [1] == memory.MEMRAY


def test_native_sees_torch_and_jax_allocations_that_tracemalloc_misses():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    make = lambda: torch.ones(N, dtype=torch.float64)  # noqa: E731
    assert within(memory.peak_native_bytes(make), 8 * N, 0.05)
    assert memory.peak_traced_bytes(make) < 0.01 * 8 * N      # torch's allocator is invisible there

    jax = pytest.importorskip("jax", reason="jax is not installed")
    ones = jax.jit(lambda: jax.numpy.ones(N, dtype=np.float32))
    ones().block_until_ready()
    assert within(memory.peak_native_bytes(lambda: ones().block_until_ready()), 4 * N, 0.05)


def _spread(xp, w, data):
    # two differentiated scalars over 2 MiB of data: every evaluation allocates MiBs, so
    # even finite differences (3 to 9 evaluations) stay fast
    return xp.sum(xp.tanh(w[0] * data + w[1]))


SPREAD = Problem(name="t_spread", fn=_spread, description="tanh over a large data vector",
                 wrt=(0,), make_inputs=lambda n, s: (np.array([0.5, -0.25]),
                                                     np.random.default_rng(s).standard_normal(n)))


@pytest.mark.parametrize("name", ["engine", "fd-forward", "fd-central", "fd-complex-step"])
def test_native_agrees_with_tracemalloc_on_numpy_methods_from_one_mib(name):
    inputs = SPREAD.inputs(N, 0)
    backend = backends.get(name)
    prepared = backend.prepare(SPREAD, inputs)
    call, _ = backend.timed_vjp(prepared, inputs)
    call()
    native, traced = memory.peak_native_bytes(call), memory.peak_traced_bytes(call)
    assert traced > MiB and native > MiB
    assert abs(native / traced - 1) < 0.10, (native, traced)


def _gradient_rows(backend, dtype="float64", problem="rosenbrock", size=16):
    rows = {r["phase"]: r for r in measure_cell(problem, size, 0, backend, dtype,
                                                 {"samples": 2, "min_sample_s": 0.001})}
    if "gradient" not in rows:
        pytest.skip(f"{backend}: {rows['cell']['status']} ({rows['cell']['message']})")
    return rows["prepare"], rows["gradient"]


@pytest.mark.parametrize("name", ["engine", "manual", "sympy", "fd-central", "jax-jit", "jax-eager",
                                  "torch"])
def test_every_backend_measures_its_gradient_with_the_native_source(name):
    prepare, gradient = _gradient_rows(name)
    assert gradient["memory_source"] == memory.MEMRAY
    assert gradient["peak_bytes"] > 0
    assert isinstance(prepare["prepared_bytes"], int)
    cross = (gradient["extra"] or {}).get("peak_bytes_tracemalloc")
    assert (cross is not None) == backends.get(name).numpy_arrays
    if name == "jax-jit":
        parts = prepare["extra"]["prepared_parts"]
        assert parts["device_inputs"] == 16 * 8 and parts["executables"] > 1000
        assert prepare["prepared_bytes"] == sum(parts.values())
    if name == "sympy":     # the generated NumPy code of 16 partial derivatives
        assert prepare["extra"]["prepared_parts"]["generated_code"] > 16 * 20
    if name in ("engine", "torch", "fd-central"):      # the graph is recorded per call
        assert prepare["prepared_bytes"] == 0


@pytest.mark.parametrize("name, computed", [("engine", "float32"), ("jax-jit", "float32"),
                                            ("jax-eager", "float32"), ("torch", "float32"),
                                            ("sympy", "float64"), ("fd-central", "float64")])
def test_float32_cells_record_the_dtype_actually_computed_in(name, computed):
    """JAX, torch and the engine compute a float32 cell in float32; SymPy's generated code
    and finite differences at their default dtype upcast, and the row says so."""
    _, gradient = _gradient_rows(name, "float32")
    assert gradient["dtype"] == "float32"
    assert gradient["compute_dtype"] == computed


def test_without_memray_library_methods_are_not_measured_rather_than_undercounted(monkeypatch):
    monkeypatch.setattr(memory, "native_available", lambda: False)
    assert memory.peak_bytes(lambda: np.ones(N))[1] == memory.TRACEMALLOC
    peak, source = memory.peak_bytes(lambda: None, numpy_arrays=False)
    assert peak is None and source.startswith(memory.NOT_MEASURED) and "pip install" in source


def test_small_gradients_carry_no_tracker_artifacts():
    """At small sizes the native peak matches tracemalloc's (no line tables or other
    instrumentation of the tracker charged to the method), on the first measurement."""
    from diffcompare import problems

    p = problems.get("rosenbrock")
    inputs = p.inputs(256, 0)
    backend = backends.get("engine")
    prepared = backend.prepare(p, inputs)
    call, _ = backend.timed_vjp(prepared, inputs)
    native, traced = memory.peak_native_bytes(call), memory.peak_traced_bytes(call)
    assert abs(native - traced) < 0.25 * traced, (native, traced)


class _FakeGpu:
    """memory_stats() as a GPU allocator reports them: a high-water mark since start."""

    def __init__(self):
        self.in_use, self.peak = 1000, 5000

    def memory_stats(self):
        return {"bytes_in_use": self.in_use, "peak_bytes_in_use": self.peak}

    def allocate(self, n):
        self.peak = max(self.peak, self.in_use + n)


def test_gpu_peak_is_above_the_bytes_in_use_and_none_when_an_earlier_peak_hides_it():
    gpu = _FakeGpu()
    assert memory.peak_gpu_bytes(lambda: gpu.allocate(8000), gpu) == 8000
    assert memory.peak_gpu_bytes(lambda: gpu.allocate(100), gpu) is None    # under the old peak


def test_tracemalloc_measures_only_methods_whose_arrays_it_sees():
    """Without memray, a method is measured by tracemalloc only if it computes on NumPy arrays:
    jax-jacfwd was (its class lacked the flag), reporting a peak without any of XLA's buffers
    (seen on a GPU machine without memray)."""
    from diffcompare import backends
    for name in backends.names():
        backend = backends.get(name)
        assert backend.numpy_arrays is (backend.xp_namespace not in ("jax", "torch")), name
