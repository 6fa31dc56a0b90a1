"""The PyTorch backend and its NumPy-named namespace against the engine and NumPy."""
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: pip install torch==2.13.0 (the CPU build)")

from diffcompare import backends  # noqa: E402
from diffcompare.problems import torch_namespace  # noqa: E402
from diffcompare.backends.base import BackendError, Unavailable  # noqa: E402
from diffcompare.engine import array_api  # noqa: E402
from diffcompare.problems import contract  # noqa: E402

from small_problems import (ABS_AT_ZERO, ALL, MLP, ROSENBROCK, SCALAR_PROBLEMS, VECTOR,  # noqa: E402
                            assert_close, size_of)


def case(problem, seed=0):
    n = size_of(problem)
    return problem.inputs(n, seed), problem.cotangent(n, seed)


@pytest.fixture(scope="module")
def engine():
    return backends.get("engine")


@pytest.fixture(scope="module")
def xp():
    return torch_namespace.namespace()


@pytest.mark.parametrize("problem", ALL + [ABS_AT_ZERO], ids=lambda p: p.name)
def test_gradient_matches_engine(problem, engine):
    inputs, cot = case(problem)
    ours = backends.compute_gradient(backends.get("torch"), problem, inputs, cot)
    assert_close(ours, backends.compute_gradient(engine, problem, inputs, cot))


@pytest.mark.parametrize("problem", ALL, ids=lambda p: p.name)
def test_function_matches_numpy(problem):
    inputs, _ = case(problem)
    b = backends.get("torch")
    value = backends.checked_function(b, b.prepare(problem, inputs), inputs)
    assert value.dtype == np.float64
    np.testing.assert_allclose(value, problem.fn(np, *inputs), rtol=1e-13)


def test_counts_and_info():
    inputs, cot = case(VECTOR)
    b = backends.get("torch")
    threads = torch.get_num_threads()
    prepared = b.prepare(VECTOR, inputs)
    b.vjp(prepared, inputs, cot)
    b.vjp(prepared, inputs, cot)
    b.function(prepared, inputs)
    assert prepared.evaluations == 3
    assert prepared.info["device"] == "cpu" and prepared.info["threads"] == threads
    assert torch.get_num_threads() == threads        # left to the caller


def test_new_input_values_are_used(engine):
    inputs, _ = case(MLP)
    b = backends.get("torch")
    prepared = b.prepare(MLP, inputs)
    moved = tuple(a * 1.5 for a in inputs)
    assert_close(b.gradient(prepared, moved), backends.compute_gradient(engine, MLP, moved))
    assert not any(isinstance(a, torch.Tensor) and a.requires_grad for a in prepared.state.tensors)


@pytest.mark.parametrize("problem", SCALAR_PROBLEMS, ids=lambda p: p.name)
def test_hvp_matches_engine_and_finite_differences(problem, engine):
    inputs, _ = case(problem)
    rng = np.random.default_rng(7)
    v = tuple(rng.standard_normal(np.shape(inputs[i])) for i in problem.wrt)
    b = backends.get("torch")
    prepared = b.prepare(problem, inputs)
    hv = b.hvp(prepared, inputs, v)
    assert_close(hv, engine.hvp(engine.prepare(problem, inputs), inputs, v), rtol=1e-11)
    h = 1e-6

    def shifted(sign):
        return tuple(a + sign * h * v[problem.wrt.index(i)] if i in problem.wrt else a
                     for i, a in enumerate(inputs))

    fd = [(gp - gm) / (2 * h) for gp, gm in zip(b.gradient(prepared, shifted(+1)),
                                                 b.gradient(prepared, shifted(-1)))]
    for a, f in zip(hv, fd):
        np.testing.assert_allclose(a, f, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(f).max()))


def test_hvp_of_a_linear_function_is_zero():
    from diffcompare.problems import Problem
    p = Problem(name="t_linear", fn=lambda xp, x: xp.sum(3.0 * x), description="linear",
                make_inputs=lambda n, s: (np.ones(n),))
    b = backends.get("torch")
    x = p.inputs(3)
    hv, = b.hvp(b.prepare(p, x), x, (np.ones(3),))
    np.testing.assert_array_equal(hv, np.zeros(3))


def test_hvp_needs_a_scalar_output():
    inputs, _ = case(VECTOR)
    b = backends.get("torch")
    with pytest.raises(ValueError, match="scalar"):
        b.hvp(b.prepare(VECTOR, inputs), inputs, tuple(inputs))


def test_unavailable_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    b = backends.get("torch")
    assert not b.available()
    assert b.available().reason == "torch is not installed: pip install torch==2.13.0 (the CPU build)"
    with pytest.raises(Unavailable):
        b.prepare(ROSENBROCK, case(ROSENBROCK)[0])
    with pytest.raises(BackendError, match="unavailable: torch is not installed"):
        backends.compute_gradient(b, ROSENBROCK, case(ROSENBROCK)[0])


def test_modules_import_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "from diffcompare import backends\n"
            "from diffcompare.problems import torch_namespace\n"
            "print(backends.get('torch').available().reason)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "torch is not installed: pip install torch==2.13.0 (the CPU build)"


def test_unavailable_without_array_api_compat():
    code = ("import sys; sys.modules['array_api_compat'] = None\n"
            "from diffcompare import backends, problems\n"
            "b = backends.get('torch')\n"
            "print(b.available().reason)\n"
            "p = problems.get('rosenbrock')\n"
            "try:\n"
            "    backends.compute_gradient(b, p, p.inputs(4))\n"
            "except backends.BackendError as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    reason, error = out.stdout.strip().splitlines()
    assert reason == ("array-api-compat >= 1.14 is not installed (the torch namespace is built on it): "
                      "pip install 'diffcompare[torch]', or pip install 'array-api-compat>=1.14'")
    assert "unavailable: array-api-compat >= 1.14 is not installed" in error


def test_too_old_array_api_compat_is_an_error_saying_so():
    code = ("import array_api_compat; array_api_compat.__version__ = '1.13.0'\n"
            "from diffcompare import backends, problems\n"
            "p = problems.get('rosenbrock')\n"
            "try:\n"
            "    backends.compute_gradient(backends.get('torch'), p, p.inputs(4))\n"
            "except backends.BackendError as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "array-api-compat 1.13.0 is too old for the torch namespace (1.14 or later)" in out.stdout


# --- the namespace -----------------------------------------------------------------------

def test_namespace_offers_every_engine_name(xp):
    engine_names = {n for n in dir(array_api) if not n.startswith("_")} - {"Tensor", "annotations",
                                                                            "np", "ops"}
    missing = sorted(n for n in engine_names if not hasattr(xp, n))
    assert missing == []


A = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7 - 1.3
M = np.array([[1.0, -2.0, 3.0], [0.5, 0.25, -4.0]])
V = np.array([1.0, -0.5, 2.0])

# (description, call as a function of (xp, asarray)[, rtol]) compared between NumPy and torch,
# both as problems see them (the contract namespace); every contract name appears (tested below)
CALLS = [
    ("sum axis keepdims", lambda xp, a: xp.sum(a(A), axis=(0, 2), keepdims=True)),
    ("sum all", lambda xp, a: xp.sum(a(A))),
    ("mean axis", lambda xp, a: xp.mean(a(A), axis=1)),
    ("max all", lambda xp, a: xp.max(a(A))),
    ("max axis keepdims", lambda xp, a: xp.max(a(A), axis=-1, keepdims=True)),
    ("min axis", lambda xp, a: xp.min(a(A), axis=0)),
    ("amax amin", lambda xp, a: xp.amax(a(M), axis=1) + xp.amin(a(M), axis=0)[:2]),
    ("logsumexp axis keepdims", lambda xp, a: xp.logsumexp(a(A), axis=1, keepdims=True), 1e-14),
    ("logsumexp all", lambda xp, a: xp.logsumexp(a(A)), 1e-14),
    ("transpose default", lambda xp, a: xp.transpose(a(A))),
    ("transpose axes", lambda xp, a: xp.transpose(a(A), (1, 0, 2))),
    ("permute_dims", lambda xp, a: xp.permute_dims(a(A), (2, 0, 1))),
    ("swapaxes", lambda xp, a: xp.swapaxes(a(A), 0, 2)),
    ("reshape", lambda xp, a: xp.reshape(a(A), (4, -1))),
    ("reshape int", lambda xp, a: xp.reshape(a(A), 24)),
    ("expand_dims tuple", lambda xp, a: xp.expand_dims(a(M), (0, 3))),
    ("squeeze", lambda xp, a: xp.squeeze(xp.expand_dims(a(M), 1), axis=1)),
    ("broadcast_to", lambda xp, a: xp.broadcast_to(a(V), (2, 3))),
    ("stack axis", lambda xp, a: xp.stack([a(V), 2 * a(V)], axis=1)),
    ("concatenate", lambda xp, a: xp.concatenate([a(M), a(M)], axis=1)),
    ("concatenate None", lambda xp, a: xp.concatenate([a(M), a(V)], axis=None)),
    ("concat", lambda xp, a: xp.concat([a(V), a(V)])),
    ("matmul dot", lambda xp, a: xp.matmul(a(M), a(V)) + xp.dot(a(V), a(V))),
    ("dot matrix", lambda xp, a: xp.dot(a(M), xp.transpose(a(M)))),
    ("elementwise", lambda xp, a: xp.exp(a(V)) + xp.log(xp.abs(a(V))) + xp.sin(a(V)) * xp.cos(a(V))
     + xp.tanh(a(V)) + xp.sqrt(xp.square(a(V))) + xp.sign(a(V))),
    ("arithmetic", lambda xp, a: xp.add(a(V), 1) - xp.subtract(2.0, a(V)) + xp.multiply(a(V), a(V))
     / xp.divide(a(V), 3) + xp.negative(a(V)) + xp.power(xp.abs(a(V)), 1.5) + xp.power(2.0, a(V))),
    ("log1p sigmoid softplus", lambda xp, a: xp.log1p(xp.abs(a(V))) + xp.sigmoid(a(V))
     + xp.softplus(a(V)), 1e-14),
    ("power int", lambda xp, a: xp.power(a(V), 2) + xp.power(a(V), 3.0)),
    ("maximum minimum", lambda xp, a: xp.maximum(a(V), 0.0) + xp.minimum(1.0, a(V))),
    ("clip", lambda xp, a: xp.clip(a(M), -1.0, 1.0)),
    ("clip one side", lambda xp, a: xp.clip(a(M), None, 1.0) + xp.clip(a(M), -1.0, None)),
    ("where scalar", lambda xp, a: xp.where(a(M) > 0, a(M), 0.0)),
    ("where both scalar", lambda xp, a: xp.where(a(V) > 0, 1.0, -1.0)),
    ("asarray float", lambda xp, a: xp.asarray(1.5) * a(V)),
    ("asarray list", lambda xp, a: xp.asarray([1.0, 2.0, 3.0])),
    ("asarray dtype", lambda xp, a: xp.asarray(np.array([1, 2]), dtype=xp.float64)),
    ("astype", lambda xp, a: xp.astype(a(V), xp.float32)),
    ("zeros ones full", lambda xp, a: xp.zeros((2, 3)) + xp.ones(3) + xp.full((2, 3), 0.5)),
    ("float32 new arrays", lambda xp, a: xp.zeros(3, dtype=xp.float32) + xp.full(3, 2.0, dtype=xp.float32)),
    ("zeros_like ones_like", lambda xp, a: xp.zeros_like(a(M)) + 2 * xp.ones_like(a(M))),
    ("arange int", lambda xp, a: xp.arange(4)),
    ("arange float", lambda xp, a: xp.arange(0.0, 1.0, 0.25)),
    ("eye", lambda xp, a: xp.eye(3) @ a(V)),
    ("constants", lambda xp, a: a(V) * xp.pi + xp.e + (a(V) < xp.inf)),
    ("nan", lambda xp, a: xp.where(a(V) > 0, a(V), xp.nan)),
    ("newaxis", lambda xp, a: a(V)[:, xp.newaxis] * a(V)[xp.newaxis, :]),
]


@pytest.mark.parametrize("call", CALLS, ids=[c[0] for c in CALLS])
def test_namespace_matches_numpy(call, xp):
    _, f, *rtol = call
    expected = np.asarray(f(contract.namespace(np), np.asarray))
    got = f(contract.namespace(xp), xp.asarray)
    assert isinstance(got, torch.Tensor)
    got = got.numpy()
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_allclose(got, expected, rtol=rtol[0] if rtol else 1e-15, atol=1e-15)


def test_calls_cover_every_contract_name():
    used = set()

    class Recorder:
        def __getattr__(self, name):
            used.add(name)
            return getattr(contract.namespace(np), name)

    for _, f, *_ in CALLS:
        f(Recorder(), np.asarray)
    # the names beyond these calls are checked on torch, against NumPy, by the contract's
    # table test (tests/problems/test_contract_table.py), which has a case for every name
    assert sorted(set(contract.NAMES) - used - set(_contract_table_cases())) == []


def _contract_table_cases():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "problems" / "test_contract_table.py"
    spec = importlib.util.spec_from_file_location("_contract_table_cases", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


def test_namespace_keeps_the_graph(xp):
    x = torch.tensor(V, requires_grad=True)
    y = xp.sum(xp.asarray(x) * 2.0)
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_unknown_name_says_what_is_offered(xp):
    with pytest.raises(AttributeError, match="array_api"):
        xp.fft


@pytest.mark.parametrize("problem", [ROSENBROCK, VECTOR], ids=lambda p: p.name)
def test_float32_inputs_compute_in_float32(problem, engine):
    """No silent upcast: torch's own gradient and value are float32, and differ from the
    float64 result by float32 rounding, not more and not less."""
    inputs, cot = case(problem)
    x32 = tuple(a.astype(np.float32) if i in problem.wrt else a for i, a in enumerate(inputs))
    b = backends.get("torch")
    prepared = b.prepare(problem, x32)
    call, finish = b.timed_vjp(prepared, x32, cot)
    native = call()
    assert all(g.dtype == torch.float32 for g in native)
    assert b.function(prepared, x32).dtype == np.float32
    got, want = finish(native), backends.compute_gradient(engine, problem, inputs, cot)
    err = max(float(np.max(np.abs(g - w) / (1 + np.abs(w)))) for g, w in zip(got, want))
    assert 0 < err < 1e-5


def test_timed_call_matches_vjp_and_retains_nothing(engine):
    inputs, _ = case(ROSENBROCK)
    b = backends.get("torch")
    prepared = b.prepare(ROSENBROCK, inputs)
    call, finish = b.timed_vjp(prepared, inputs)
    before = prepared.evaluations
    g1, = finish(call())
    assert prepared.evaluations == before + 1
    np.testing.assert_array_equal(g1, b.vjp(prepared, inputs)[0])
    assert b.retained_bytes(prepared) == {}
