"""A float32 cell holds its data in float32 too: every method computes in float32.

The gpu suite's MLP has float64 pixel data beside its differentiated weights: with only the
weights cast, NumPy and the engine computed the float32 cell in float64 (a float32 benchmark
that was not one) and torch refused the mixed matmul ("expected m1 and m2 to have the same
dtype")."""
import numpy as np
import pytest

from diffcompare import problems
from diffcompare.measure.cell import measure_cell
from diffcompare.problems.problem import Problem


def _mlp(xp, W, b, x, labels):
    out = xp.tanh(x @ W + b)
    return xp.mean((out - labels) ** 2)


def _inputs(size, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((5, 3)) / 3, rng.standard_normal(3), rng.random((size, 5)),
            rng.standard_normal((size, 3)))


@pytest.fixture
def mixed_data_problem():
    p = problems.register(Problem("mlp_float64_data", _mlp, _inputs, "MLP, float64 data",
                                  wrt=(0, 1), sizes=(8,)), replace=True)
    yield p
    problems.unregister(p.name)


@pytest.mark.parametrize("backend", ["engine", "torch", "jax-jit"])
def test_a_float32_cell_computes_in_float32_with_float64_data(mixed_data_problem, backend):
    pytest.importorskip({"engine": "numpy", "torch": "torch", "jax-jit": "jax"}[backend])
    rows = list(measure_cell(mixed_data_problem.name, 8, 0, backend, "float32",
                             {"samples": 1, "min_sample_s": 0.0}))
    grad = next(r for r in rows if r["phase"] == "gradient")
    assert grad["status"] == "ok", grad.get("message")
    assert grad["compute_dtype"] == "float32"
    assert grad["error_rho"] < 1e-5            # against the float64 reference: float32 rounding


def test_integer_inputs_keep_their_dtype_in_a_float32_cell():
    from diffcompare.measure.cell import cast_inputs
    p = Problem("p", lambda xp, w, idx: xp.sum(w[idx]), None, "", wrt=(0,))
    w, idx = cast_inputs(p, (np.ones(3), np.array([0, 2])), "float32")
    assert (w.dtype, idx.dtype) == (np.float32, np.int64)
    w64, x64 = cast_inputs(p, (np.ones(3), np.ones(2)), "float64")
    assert (w64.dtype, x64.dtype) == (np.float64, np.float64)


@pytest.mark.parametrize("backend", ["engine", "torch"])
def test_the_gmm_computes_a_float32_cell_in_float32(backend):
    # its padding column was xp.zeros (float64): NumPy promoted the float32 cell to float64
    # and torch refused the matmul ("expected scalar type Double but found Float")
    pytest.importorskip({"engine": "numpy", "torch": "torch"}[backend])
    rows = list(measure_cell("gmm", 2, 0, backend, "float32", {"samples": 1, "min_sample_s": 0.0}))
    grad = next(r for r in rows if r["phase"] == "gradient")
    assert (grad["status"], grad["compute_dtype"]) == ("ok", "float32"), grad.get("message")
