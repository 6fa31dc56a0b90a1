"""The catalog: every problem runs on NumPy, the engine, SymPy (and JAX) with equal values,
reproduces its seed thread where it has one, and a user's own problem takes a few lines."""
import numpy as np
import pytest
import sympy

from diffcompare import backends, problems
from diffcompare.engine import Tensor, array_api
from diffcompare.problems import Problem, register, unregister
from diffcompare.problems.catalog.classic import squire_trapp_derivative
from diffcompare.problems.symbolic import symbols_like, sympy_xp

ALL = problems.all_problems()
NAMES = [p.name for p in ALL]


def _smallest(p):
    return min(p.sizes)


def _numpy_value(p, args):
    return np.asarray(p.fn(np, *args), dtype=np.float64)


def _sympy_value(p, args, constants):
    s = symbols_like(args, p.wrt, constants=constants)
    out = p.fn(sympy_xp, *s.args)
    exprs = [sympy.sympify(e) for e in np.asarray(out, dtype=object).reshape(-1)]
    f = sympy.lambdify(s.all_flat, exprs, modules="numpy")
    return np.asarray(f(*s.values(args)), dtype=np.float64).reshape(np.shape(out))


def test_catalog_lists_every_shipped_problem():
    expected = {"minibatch_inverse_mean", "linear_mean", "linear_mse", "weighted_vector",
                "unbind_product", "rosenbrock", "squire_trapp", "logsumexp",
                "softmax_cross_entropy", "quadratic_form", "logistic_map", "mlp_tanh",
                "mlp_relu", "rnn_loop", "relu_kink", "abs_kink", "max_kink",
                "gmm", "bundle_adjustment", "lstm", "kmeans", "linear_least_squares",
                "gmm_d2", "gmm_d20", "gmm_d32", "gmm_d64", "gmm_10k", "gmm_d64_10k"}
    assert expected <= set(NAMES)
    assert {p.name for p in ALL if "seed" in p.tags} >= {
        "minibatch_inverse_mean", "linear_mean", "linear_mse", "weighted_vector", "unbind_product"}


@pytest.mark.parametrize("name", NAMES)
def test_inputs_are_float64_deterministic_and_sized(name):
    p = problems.get(name)
    assert list(p.sizes) == sorted(p.sizes) and p.description
    for size in p.sizes[:2]:
        a, b = p.inputs(size, seed=0), p.inputs(size, seed=0)
        for i in p.wrt:
            assert a[i].dtype == np.float64
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
        if p.vector_output:
            out = _numpy_value(p, a)
            assert p.cotangent(size).shape == out.shape
        else:
            assert _numpy_value(p, a).size == 1


@pytest.mark.parametrize("name", NAMES)
def test_same_value_on_numpy_engine_and_sympy(name):
    p = problems.get(name)
    args = p.inputs(_smallest(p))
    want = _numpy_value(p, args)
    engine = np.asarray(p.fn(array_api, *[Tensor(a) for a in args]).data)
    np.testing.assert_allclose(engine, want, rtol=1e-13, atol=0)
    if "large-expression" in p.tags or "indexed" in p.tags:   # the symbolic backends refuse it
        return
    for constants in ("symbols", "numbers"):
        np.testing.assert_allclose(_sympy_value(p, args, constants), want, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("name", NAMES)
def test_same_value_on_jax(name):
    jax = pytest.importorskip("jax", reason="jax is not installed")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    p = problems.get(name)
    args = p.inputs(_smallest(p))
    got = np.asarray(p.fn(jnp, *[jnp.asarray(a) for a in args]))
    np.testing.assert_allclose(got, _numpy_value(p, args), rtol=1e-12)


@pytest.mark.parametrize("name", [n for n in NAMES                      # the others are too
                                  if "large-expression" not in problems.get(n).tags])  # large to expand
def test_tags_match_what_the_function_uses(name):
    """A function whose SymPy form has Abs/Max/Min/Piecewise is not complex-analytic and
    must say so (complex-step differentiation relies on the tag)."""
    p = problems.get(name)
    s = symbols_like(p.inputs(_smallest(p)), p.wrt)
    exprs = [sympy.sympify(e) for e in np.asarray(p.fn(sympy_xp, *s.args), dtype=object).reshape(-1)]
    kinky = any(e.has(sympy.Abs, sympy.Max, sympy.Min, sympy.Piecewise, sympy.sign) for e in exprs)
    assert kinky == (not p.complex_analytic), p.tags


def test_symbols_like_unpacks_and_names_per_element():
    args = (np.ones((2, 3)), np.array([1.0, 2.0]), np.float64(3.0))
    wrt_symbols, sym_args = symbols_like(args, wrt=(0, 2))
    assert [str(s) for s in np.asarray(wrt_symbols[0]).ravel()][:2] == ["x0_0_0", "x0_0_1"]
    assert str(np.asarray(wrt_symbols[1])[()]) == "x2" and all(s.is_real for s in
                                                               np.asarray(wrt_symbols[0]).ravel())
    np.testing.assert_array_equal(sym_args[1], args[1])          # a constant stays a number
    s = symbols_like(args, wrt=(0,), constants="symbols")
    assert len(s.all_flat) == 6 + 2 + 1 and s.values(args)[-1] == 3.0


def test_namespace_names_what_it_lacks():
    with pytest.raises(NotImplementedError, match="fft"):
        sympy_xp.fft
    x = symbols_like((np.ones(2),), (0,)).args[0]
    with pytest.raises(NotImplementedError, match="spacing"):
        np.spacing(x)


def _engine_gradient(p, size):
    args = p.inputs(size)
    return args, backends.compute_gradient(backends.get("engine"), p, args, p.cotangent(size))


def test_seed_000_minibatch_inverse_mean():
    p = problems.get("minibatch_inverse_mean")
    (x,), (g,) = _engine_gradient(p, 10)
    np.testing.assert_array_equal(x, np.arange(10.0) + 1)
    assert float(p.fn(np, x)) == pytest.approx(0.2928968, abs=1e-7)
    np.testing.assert_allclose(g, -1 / (10 * x ** 2))          # T.grad: -0.1, -0.025, ...


def test_seed_000_linear_mean():
    p = problems.get("linear_mean")
    (x, w), (gw,) = _engine_gradient(p, 2)
    assert float(p.fn(np, x, w)) == 3.0 and gw.tolist() == [1.5]


def test_seed_002_weighted_vector():
    p = problems.get("weighted_vector")
    _, (ga, gb, gc) = _engine_gradient(p, 3)
    np.testing.assert_allclose(ga, [3.0e-01, 3.0, 3.0e-04])
    np.testing.assert_allclose(gb, [1.2, 16.0, 2.0e-03])
    np.testing.assert_allclose(gc, [1.6667e-02, 1.4286e-01, 1.25e-05], rtol=1e-4)


def test_seed_003_unbind_product():
    p = problems.get("unbind_product")
    (a,), (g,) = _engine_gradient(p, 3)
    assert a.tolist() == [2.0, 3.0, 4.0] and float(p.fn(np, a)) == 24.0
    assert g.tolist() == [12.0, 8.0, 6.0]


def test_squire_trapp_at_one_point_five():
    p = problems.get("squire_trapp")
    (x,), (g,) = _engine_gradient(p, 1)
    assert x.tolist() == [1.5]
    assert squire_trapp_derivative(1.5) == pytest.approx(4.05342789389862, rel=1e-13)
    np.testing.assert_allclose(g, squire_trapp_derivative(x), rtol=1e-13)
    (x4,) = p.inputs(16)
    assert np.all(np.sin(x4) ** 3 + np.cos(x4) ** 3 > 0)


def test_kink_inputs_hit_the_kinks():
    (x,) = problems.get("relu_kink").inputs(8)
    assert np.count_nonzero(x == 0) == 2
    (m,) = problems.get("max_kink").inputs(4)
    assert [int(np.sum(row == row.max())) for row in m] == [1, 2, 3, 1]


def test_a_users_problem_in_a_few_lines():
    """The README example: define, register, run through the engine and SymPy."""
    p = register(Problem(
        name="my_softplus_sum",
        fn=lambda xp, x: xp.sum(xp.log(1 + xp.exp(x))),
        make_inputs=lambda size, seed: (np.random.default_rng(seed).standard_normal(size),),
        description="sum of softplus(x)",
    ))
    try:
        assert problems.get("my_softplus_sum") is p
        x = p.inputs(4)
        g_engine = backends.compute_gradient(backends.get("engine"), p, x)
        g_sympy = backends.compute_gradient(backends.get("sympy"), p, x)
        np.testing.assert_allclose(g_engine[0], 1 / (1 + np.exp(-x[0])), rtol=1e-14)
        np.testing.assert_allclose(g_sympy[0], g_engine[0], rtol=1e-14)
        with pytest.raises(ValueError, match="already registered"):
            register(p)
    finally:
        unregister("my_softplus_sum")
    assert "my_softplus_sum" not in [q.name for q in problems.all_problems()]
