"""Derivative operators beyond the gradient: a problem declares them (``operators``), the
backends' own products back some (``timed_<product>``), ``measure_cell`` gives each a row of
its own."""
from __future__ import annotations

import numpy as np
import pytest

from diffcompare import backends, problems
from diffcompare.measure.cell import measure_cell
from diffcompare.problems import Problem
from diffcompare.problems.catalog.fitting import kmeans_hessian_diagonal

FAST = {"samples": 2, "min_sample_s": 0.001}


def _library(name):
    backend = backends.get(name)
    if not backend.available():
        pytest.skip(backend.available().reason)
    return backend


def _product(name, problem, inputs, product):
    backend = _library(name)
    assert backend.supports_product(problem, product, inputs), name
    prepared = backends.checked_prepare(backend, problem, inputs)
    value = backends.checked_function(backend, prepared, inputs)
    return backends.checked_product(backend, prepared, inputs, product, value.shape)


# --- declaring products ------------------------------------------------------------------

def _scalar(**kw):
    return Problem(name="t_cubes", fn=lambda xp, x: xp.sum(x * x * x),
                   make_inputs=lambda n, s: (np.random.default_rng(s).standard_normal(n),),
                   description="Σ x³", **kw)


def test_unknown_or_misplaced_products_are_refused_with_the_known_names():
    with pytest.raises(ValueError, match=r"unknown operator 'hess'.*hessian_diagonal"):
        _scalar(operators=("hess",))
    with pytest.raises(ValueError, match="needs a vector output"):
        _scalar(operators=("jacobian",))
    with pytest.raises(ValueError, match="not among its operators"):
        _scalar(exact_operators={"hessian_diagonal": lambda x: (6 * x,)})
    assert _scalar(operators="hessian_diagonal").operators == ("hessian_diagonal",)


def test_the_catalog_declares_bundle_adjustment_and_kmeans_operators():
    assert problems.get("bundle_adjustment").operators == ("jacobian",)
    assert problems.get("kmeans").operators == ("hessian_diagonal",)


# --- k-means' Hessian diagonal -----------------------------------------------------------

def test_kmeans_exact_hessian_diagonal_is_twice_the_cluster_counts():
    centroids, points = problems.get("kmeans").inputs(3, seed=4)
    nearest = [int(np.argmin([np.sum((p - c) ** 2) for c in centroids])) for p in points]
    counts = np.array([nearest.count(k) for k in range(3)])
    assert counts.sum() == len(points) and counts.min() > 0
    expected = np.repeat(2.0 * counts[:, None], centroids.shape[1], axis=1)
    assert np.array_equal(kmeans_hessian_diagonal(centroids, points)[0], expected)


@pytest.mark.parametrize("name, rtol", [("engine", 1e-12), ("jax-jit", 1e-12), ("torch", 1e-12),
                                        ("fd-central", 1e-5)])   # second differences: ~eps^(1/2)
def test_kmeans_hessian_diagonal_of_each_backend_is_exact(name, rtol):
    p = problems.get("kmeans")
    inputs = p.inputs(2, seed=1)
    diag, = _product(name, p, inputs, "hessian_diagonal")
    np.testing.assert_allclose(diag, kmeans_hessian_diagonal(*inputs)[0], rtol=rtol)


@pytest.mark.parametrize("name", ["engine", "jax-jit", "torch"])
def test_hessian_diagonal_of_several_arguments(name):
    """Σ x³ y² + Σ y: ∂²/∂x² = 6 x y², ∂²/∂y² = 2 x³ (two arguments, flattened and back)."""
    p = Problem(name="t_xy", fn=lambda xp, x, y: xp.sum(x * x * x * y * y) + xp.sum(y),
                make_inputs=lambda n, s: tuple(np.random.default_rng(s).standard_normal((2, n))),
                description="Σ x³ y² + Σ y", wrt=(0, 1), operators=("hessian_diagonal",))
    x, y = p.inputs(5, seed=2)
    dx, dy = _product(name, p, (x, y), "hessian_diagonal")
    np.testing.assert_allclose(dx, 6 * x * y * y, rtol=1e-12)
    np.testing.assert_allclose(dy, 2 * x ** 3, rtol=1e-12)


# --- bundle adjustment's Jacobian --------------------------------------------------------

@pytest.fixture(scope="module")
def ba():
    p = problems.get("bundle_adjustment")
    inputs = p.inputs(1, seed=3)
    engine = backends.get("engine")
    prepared = engine.prepare(p, inputs)
    return p, inputs, engine.product(prepared, inputs, "jacobian"), engine.vjp(prepared, inputs,
                                                                            p.cotangent(1, 3))


def test_engine_jacobian_contracted_with_the_cotangent_is_the_vjp(ba):
    p, inputs, jac, vjp = ba
    n_out = 3 * 80                     # 1 camera, 20 points, 4 observations each
    assert [j.shape for j in jac] == [(n_out, 1, 11), (n_out, 20, 3), (n_out, 80)]
    c = p.cotangent(1, 3)
    for j, g in zip(jac, vjp):
        np.testing.assert_allclose(np.tensordot(c, j, axes=1), g, rtol=1e-12, atol=1e-12)
    # the weights' block: residual rows of observation i depend on w_i alone, 1 - w² on w_i
    w = inputs[2]
    np.testing.assert_allclose(np.diag(jac[2][2 * 80:]), -2 * w, rtol=1e-15)


@pytest.mark.parametrize("name, atol", [("jax-jit", 1e-12), ("torch", 1e-12), ("jax-jacfwd", 1e-12),
                                        ("engine-jvp", 1e-12), ("fd-central", 1e-8),
                                        ("fd-forward", 1e-6)])
def test_every_backend_jacobian_agrees_with_the_engines(name, atol, ba):
    p, inputs, jac, _ = ba
    for j, expected in zip(_product(name, p, inputs, "jacobian"), jac):
        np.testing.assert_allclose(j, expected, rtol=1e-10, atol=atol)


# --- limits and the unsupported -----------------------------------------------------------

def test_backends_without_a_product_say_so_and_limits_name_the_count():
    p = problems.get("kmeans")
    inputs = p.inputs(2)
    reason = backends.get("fd-forward").supports_product(p, "hessian_diagonal", inputs).reason
    assert reason == "fd-forward has no hessian_diagonal method"
    engine = backends.get("engine")
    engine.product_limits = {**engine.product_limits, "hessian_diagonal": (10, "a test's limit")}
    support = engine.supports_product(p, "hessian_diagonal", inputs)
    assert not support and "16 differentiated scalars > 10" in support.reason


# --- measure_cell rows -------------------------------------------------------------------

@pytest.fixture
def cubes():
    p = problems.register(_scalar(operators=("hessian_diagonal",),
                                  exact_operators={"hessian_diagonal": lambda x: (6 * x,)}),
                          replace=True)
    yield p
    problems.unregister(p.name)


def test_measure_cell_yields_a_product_row_after_the_gradient(cubes, tmp_path):
    rows = list(measure_cell("t_cubes", 6, 0, "engine", options={**FAST, "cache_dir": tmp_path}))
    assert [r["phase"] for r in rows] == ["prepare", "function", "gradient", "hessian_diagonal"]
    row = rows[-1]
    assert row["status"] == "ok" and row["time_median_s"] > 0 and row["peak_bytes"] > 0
    assert row["error_rho"] < 1e-15 and row["reference"].startswith("exact hessian_diagonal")
    assert row["extra"]["how"] and row["extra"]["prepare_s"] > 0   # prepared apart


def test_measure_cell_gives_an_unsupported_product_row_and_keeps_the_gradient(cubes, tmp_path):
    rows = {r["phase"]: r for r in measure_cell("t_cubes", 6, 0, "fd-forward",
                                                options={**FAST, "cache_dir": tmp_path})}
    assert rows["gradient"]["status"] == "ok" and rows["gradient"]["error_rho"] < 1e-6
    assert rows["hessian_diagonal"]["status"] == "unsupported"
    assert "no hessian_diagonal method" in rows["hessian_diagonal"]["message"]


@pytest.fixture
def squares():
    """x² a, a vector output: its Jacobian is diag(2 a x), its reference VJP symbolic."""
    rng = lambda s: np.random.default_rng(s)        # noqa: E731
    p = problems.register(Problem(
        name="t_squares", fn=lambda xp, x, a: x * x * a, wrt=(0,), description="x² a",
        make_inputs=lambda n, s: (rng(s).standard_normal(n), rng(s + 7).uniform(1, 2, n)),
        make_cotangent=lambda n, s: rng(s + 1).standard_normal(n),
        tags={"smooth", "vector-output"}, operators=("jacobian",)), replace=True)
    yield p
    problems.unregister(p.name)


def test_measure_cell_jacobian_error_is_measured_through_the_reference_vjp(squares, tmp_path):
    rows = {r["phase"]: r for r in measure_cell("t_squares", 5, 0, "engine",
                                                options={**FAST, "cache_dir": tmp_path})}
    row = rows["jacobian"]
    assert row["status"] == "ok", row["message"]
    assert row["error_rho"] < 1e-15
    assert row["reference"] == "cᵀJ against the reference VJP: " + rows["gradient"]["reference"]
    assert "digits" in row["reference"]         # the 50-digit symbolic reference


def test_a_wrong_jacobian_shows_in_its_error(squares, tmp_path):
    from diffcompare.measure import accuracy

    x, a = squares.inputs(5, 0)
    jac = np.diag(2 * a * x)
    ok, _ = accuracy.operator_accuracy(squares, "jacobian", jac, 5, 0, cache_dir=tmp_path)
    jac[3, 1] += 1e-3                           # one wrong entry off the diagonal
    bad, _ = accuracy.operator_accuracy(squares, "jacobian", jac, 5, 0, cache_dir=tmp_path)
    assert ok["rho"] < 1e-15 and bad["rho"] > 1e-5


def test_on_a_gpu_the_products_peak_is_read_on_its_first_call(cubes, tmp_path, monkeypatch):
    """A GPU's high-water mark cannot be reset: gradient and product each read it on their
    first call (a fake device here, whose peaks are 1000 then 2000 bytes)."""
    from diffcompare.measure import cell, memory

    peaks = iter([1000, 2000])

    def fake_peak(fn, device):
        fn()
        return next(peaks)

    monkeypatch.setattr(cell, "_gpu_device", lambda prepared: "fake-gpu")
    monkeypatch.setattr(memory, "peak_gpu_bytes", fake_peak)
    rows = {r["phase"]: r for r in measure_cell("t_cubes", 4, 0, "engine",
                                                options={**FAST, "cache_dir": tmp_path})}
    assert (rows["gradient"]["peak_bytes"], rows["hessian_diagonal"]["peak_bytes"]) == (1000, 2000)
    assert rows["hessian_diagonal"]["memory_source"] == memory.GPU_MEMORY_STATS
    assert rows["hessian_diagonal"]["status"] == "ok"


def test_every_backend_declares_each_product_supported_or_says_why():
    jit = {"jax-jit", "jax-jit-cpu"}       # jax-jit and its CPU variant (jax-jit-tf32: GPU only)
    expected_ok = {"jacobian": {"engine", *jit, "jax-eager", "torch", "jax-jacfwd",
                                "engine-jvp", "fd-forward", "fd-central"},
                   "hessian_diagonal": {"engine", *jit, "jax-eager", "torch", "fd-central"}}
    for problem_name, size in (("bundle_adjustment", 1), ("kmeans", 2)):
        p = problems.get(problem_name)
        inputs = p.inputs(size)
        product, = p.operators
        for name in backends.names():
            backend = backends.get(name)
            if not backend.available():
                continue
            support = backend.supports_product(p, product, inputs)
            assert bool(support) == (name in expected_ok[product]), (name, support)
            assert support or (support.reason and product in support.reason), (name, support)
