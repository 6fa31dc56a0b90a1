"""The JAX backends (jit and eager) against the engine: gradients, VJPs, HVPs,
compile-once, device placement, what prepare records, and availability."""
import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="JAX is not installed: pip install 'diffcompare[jax]'")

from diffcompare import backends  # noqa: E402
from diffcompare.backends import jax_backend, jax_runtime  # noqa: E402
from diffcompare.backends.base import BackendError, Unavailable  # noqa: E402
from diffcompare.problems import Problem  # noqa: E402

from small_problems import (ABS_AT_ZERO, ALL, MLP, ROSENBROCK, SCALAR_PROBLEMS, VECTOR,  # noqa: E402
                            assert_close, size_of)

JAX_BACKENDS = ["jax-jit", "jax-eager"]


def case(problem, seed=0):
    n = size_of(problem)
    return problem.inputs(n, seed), problem.cotangent(n, seed)


@pytest.fixture(scope="module")
def engine():
    return backends.get("engine")


@pytest.mark.parametrize("name", JAX_BACKENDS)
@pytest.mark.parametrize("problem", ALL, ids=lambda p: p.name)
def test_gradient_matches_engine(name, problem, engine):
    inputs, cot = case(problem)
    ours = backends.compute_gradient(backends.get(name), problem, inputs, cot)
    assert_close(ours, backends.compute_gradient(engine, problem, inputs, cot))


@pytest.mark.parametrize("problem", [ROSENBROCK, VECTOR], ids=lambda p: p.name)
def test_function_matches_numpy(problem):
    inputs, _ = case(problem)
    for name in JAX_BACKENDS:
        b = backends.get(name)
        value = backends.checked_function(b, backends.checked_prepare(b, problem, inputs), inputs)
        assert value.dtype == np.float64
        np.testing.assert_allclose(value, problem.fn(np, *inputs), rtol=1e-13)


def test_jit_and_eager_agree():
    for problem in (MLP, VECTOR):
        inputs, cot = case(problem, seed=3)
        jit = backends.compute_gradient(backends.get("jax-jit"), problem, inputs, cot)
        eager = backends.compute_gradient(backends.get("jax-eager"), problem, inputs, cot)
        assert_close(jit, eager, rtol=1e-13)
    # and with jax.disable_jit(): even jax.numpy's jitted helpers run op by op
    b = backends.get("jax-eager", disable_jit=True)
    inputs, _ = case(ROSENBROCK)
    prepared = b.prepare(ROSENBROCK, inputs)
    assert prepared.info["mode"] == "eager, jit disabled"
    assert_close(b.gradient(prepared, inputs),
                 backends.compute_gradient(backends.get("jax-jit"), ROSENBROCK, inputs), rtol=1e-13)


def counting(problem):
    """``problem`` with a trace counter: its fn appends to ``calls`` each time Python runs it."""
    calls = []

    def fn(xp, *args):
        calls.append(1)
        return problem.fn(xp, *args)

    return Problem(name=problem.name + "_counted", fn=fn, make_inputs=problem.make_inputs,
                   description=problem.description, wrt=problem.wrt, tags=problem.tags,
                   make_cotangent=problem.make_cotangent), calls


@pytest.mark.parametrize("problem", [ROSENBROCK, VECTOR], ids=lambda p: p.name)
def test_jit_compiles_once_in_prepare(problem):
    counted, calls = counting(problem)
    inputs, cot = case(problem)
    b = backends.get("jax-jit")
    prepared = b.prepare(counted, inputs)
    traced = len(calls)
    assert traced >= 2                      # the gradient and the plain function
    first = b.vjp(prepared, inputs, cot)
    second = b.vjp(prepared, inputs, cot)
    b.function(prepared, inputs)
    other = tuple(a + 0.25 if i in problem.wrt else a for i, a in enumerate(inputs))
    b.vjp(prepared, other, cot)             # new values, same shapes: no retrace either
    assert len(calls) == traced
    assert prepared.evaluations == 4
    assert_close(first, second, rtol=0)
    assert prepared.info["compile_seconds"] > 0
    assert prepared.info["constants"] == "arguments"


def test_eager_runs_the_function_on_each_call():
    counted, calls = counting(ROSENBROCK)
    inputs, _ = case(ROSENBROCK)
    b = backends.get("jax-eager")
    prepared = b.prepare(counted, inputs)
    assert calls == []
    b.gradient(prepared, inputs)
    b.gradient(prepared, inputs)
    b.function(prepared, inputs)
    assert len(calls) == 3 and prepared.evaluations == 3
    assert prepared.info["mode"] == "eager"


def test_new_input_values_are_used(engine):
    inputs, _ = case(MLP)
    b = backends.get("jax-jit")
    prepared = b.prepare(MLP, inputs)
    moved = tuple(a * 1.5 for a in inputs)       # all arguments, the data too
    assert_close(b.gradient(prepared, moved), backends.compute_gradient(engine, MLP, moved))


def test_wrong_shape_says_prepare_again():
    inputs, _ = case(ROSENBROCK)
    b = backends.get("jax-jit")
    prepared = b.prepare(ROSENBROCK, inputs)
    with pytest.raises(ValueError, match="prepare again"):
        b.gradient(prepared, (np.ones(size_of(ROSENBROCK) + 1),))


@pytest.mark.parametrize("name", JAX_BACKENDS)
def test_info_device_and_placement(name):
    inputs, _ = case(MLP)
    prepared = backends.get(name).prepare(MLP, inputs)
    info = prepared.info
    device = prepared.state.device
    assert info["device"] == f"{device.platform}:{device.id} {device.device_kind}"
    assert info["platform"] == "cpu"          # the CPU unless the GPU is asked for
    assert info["x64"] is True
    for a in prepared.state.device_inputs:
        assert a.devices() == {device}
        assert a.dtype in (np.float64,)
    assert jax_runtime.jax_device_memory_stats(device) is None     # the CPU keeps none


def test_jit_records_memory_and_cost_analysis():
    inputs, cot = case(VECTOR)
    info = backends.get("jax-jit").prepare(VECTOR, inputs).info
    for key in ("gradient", "function"):
        assert info[f"{key}_lower_seconds"] > 0 and info[f"{key}_compile_seconds"] > 0
    # XLA's CPU and GPU clients both implement these; guard in case a plugin does not
    if "gradient_argument_bytes" in info:
        n = size_of(VECTOR)
        assert info["gradient_argument_bytes"] == 3 * n * 8       # x, y and the cotangent
        assert info["gradient_output_bytes"] >= 2 * n * 8           # two gradients (+ a tuple table)
        assert info["gradient_temp_bytes"] >= 0
    if "gradient_flops" in info:
        assert info["gradient_flops"] > 0


@pytest.mark.parametrize("name", JAX_BACKENDS)
@pytest.mark.parametrize("global_x64", [False, True])
def test_dtype_follows_the_inputs_and_leaves_the_global_x64_setting_alone(name, global_x64, engine):
    """float64 inputs compute in float64 and float32 inputs in float32, whatever the
    process's own 64-bit setting, which the backend never changes."""
    previous = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", global_x64)
    try:
        b = backends.get(name)
        x64, _ = case(ROSENBROCK)
        x32 = tuple(a.astype(np.float32) for a in x64)
        p64, p32 = b.prepare(ROSENBROCK, x64), b.prepare(ROSENBROCK, x32)
        assert b.function(p64, x64).dtype == np.float64
        assert b.function(p32, x32).dtype == np.float32
        call, _ = b.timed_vjp(p32, x32)
        assert all(g.dtype == np.float32 for g in call())     # JAX's own arrays, before finish
        assert (p64.info["x64"], p32.info["x64"]) == (True, False)
        g64, = b.vjp(p64, x64)
        g32, = b.vjp(p32, x32)
        want, = backends.compute_gradient(engine, ROSENBROCK, x64)
        np.testing.assert_allclose(g64, want, rtol=1e-12)
        # float32 rounding shows (so it did not compute in float64), within float32's accuracy
        assert 0 < np.max(np.abs(g32 - want) / np.abs(want)) < 1e-5
        assert jax.config.read("jax_enable_x64") == global_x64
        assert jax.numpy.ones(2).dtype == (np.float64 if global_x64 else np.float32)
    finally:
        jax.config.update("jax_enable_x64", previous)


def test_jit_retained_bytes_name_the_executables_and_device_inputs():
    b = backends.get("jax-jit")
    inputs, _ = case(ROSENBROCK)
    parts = b.retained_bytes(b.prepare(ROSENBROCK, inputs))
    assert parts["device_inputs"] == inputs[0].nbytes
    assert 1_000 < parts["executables"] < 10_000_000     # two small compiled programs
    eager = backends.get("jax-eager")
    assert set(eager.retained_bytes(eager.prepare(ROSENBROCK, inputs))) == {"device_inputs"}


@pytest.mark.parametrize("name", JAX_BACKENDS)
@pytest.mark.parametrize("problem", SCALAR_PROBLEMS, ids=lambda p: p.name)
def test_hvp_matches_engine_and_finite_differences(name, problem, engine):
    inputs, _ = case(problem)
    rng = np.random.default_rng(7)
    v = tuple(rng.standard_normal(np.shape(inputs[i])) for i in problem.wrt)
    b = backends.get(name)
    prepared = b.prepare(problem, inputs)
    hv = b.hvp(prepared, inputs, v)
    assert_close(hv, engine.hvp(engine.prepare(problem, inputs), inputs, v), rtol=1e-11)
    # central difference of gradients along v
    h = 1e-6

    def shifted(sign):
        return tuple(a + sign * h * v[problem.wrt.index(i)] if i in problem.wrt else a
                     for i, a in enumerate(inputs))

    fd = [(gp - gm) / (2 * h) for gp, gm in zip(b.gradient(prepared, shifted(+1)),
                                                 b.gradient(prepared, shifted(-1)))]
    for a, f in zip(hv, fd):
        np.testing.assert_allclose(a, f, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(f).max()))


def test_hvp_needs_a_scalar_output():
    inputs, _ = case(VECTOR)
    b = backends.get("jax-jit")
    with pytest.raises(ValueError, match="scalar"):
        b.hvp(b.prepare(VECTOR, inputs), inputs, tuple(inputs))


def test_concrete_constant_is_fixed_at_prepare(engine):
    def fn(xp, x, k):
        h = x
        for _ in range(int(float(k))):     # needs the loop count as a Python number
            h = xp.sin(h)
        return xp.sum(h)

    p = Problem(name="t_k_steps", fn=fn, description="k sin steps",
                make_inputs=lambda n, s: (np.linspace(-1, 1, n), np.array(3.0)))
    inputs = p.inputs(4)
    prepared = backends.get("jax-jit").prepare(p, inputs)
    assert prepared.info["constants"] == "fixed at prepare"
    assert_close(backends.get("jax-jit").gradient(prepared, inputs),
                 backends.compute_gradient(engine, p, inputs))


@pytest.mark.parametrize("name", JAX_BACKENDS)
def test_data_dependent_branch_is_explained(name):
    p = Problem(name="t_branch", fn=lambda xp, x: xp.sum(x * x) if float(xp.sum(x)) > 0 else xp.sum(x),
                description="Python branch on a traced value",
                make_inputs=lambda n, s: (np.ones(n),))
    with pytest.raises(BackendError, match="xp.where"):
        backends.compute_gradient(backends.get(name), p, p.inputs(3))


def test_unavailable_without_jax(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    for name in JAX_BACKENDS:
        b = backends.get(name)
        assert not b.available()
        assert b.available().reason == "jax is not installed: pip install 'diffcompare[jax]'"
        with pytest.raises(Unavailable):
            b.prepare(ROSENBROCK, case(ROSENBROCK)[0])
        with pytest.raises(BackendError, match="unavailable: jax is not installed"):
            backends.compute_gradient(b, ROSENBROCK, case(ROSENBROCK)[0])
    assert jax_runtime.jax_device_memory_stats() is None


def test_module_imports_without_jax():
    code = ("import sys; sys.modules['jax'] = None\n"
            "from diffcompare import backends\n"
            "print(backends.get('jax-jit').available().reason)\n"
            "print('jax' in sys.modules and sys.modules['jax'] is not None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["jax is not installed: pip install 'diffcompare[jax]'", "False"]


def test_unknown_device_option():
    with pytest.raises(ValueError, match="device"):
        jax_backend.JaxJitBackend(device="tpu")


@pytest.mark.parametrize("name", JAX_BACKENDS)
def test_abs_at_zero_is_jaxs_own_convention(name, engine):
    """A documented difference, not a bug: JAX's abs'(0) is 1, the engine's (and PyTorch's) 0.
    The backend reports JAX as it is; comparisons at kinks must expect this."""
    inputs = ABS_AT_ZERO.inputs(3)
    ours, = backends.compute_gradient(backends.get(name), ABS_AT_ZERO, inputs)
    theirs, = backends.compute_gradient(engine, ABS_AT_ZERO, inputs)
    assert theirs[0] == 0.0 and ours[0] == 1.0
    np.testing.assert_array_equal(ours[1:], theirs[1:])


@pytest.mark.parametrize("name", ["jax-jit", "jax-eager"])
def test_prepare_times_the_transfers_apart_from_compute(name):
    inputs = case(MLP)[0]
    info = backends.get(name).prepare(MLP, inputs).info
    up = sum(np.asarray(a, dtype=np.float64).nbytes if np.asarray(a).dtype.kind == "f" else np.asarray(a).nbytes
             for a in inputs)
    back = sum(np.asarray(inputs[i], dtype=np.float64).nbytes for i in MLP.wrt)
    assert info["transfer_bytes"] == up + back
    assert info["transfer_to_device_s"] >= 0 and info["transfer_to_host_s"] >= 0
