"""sympy-reverse (reverse accumulation over the SymPy DAG), the guards that predict before
differentiating, and non-differentiated integer inputs kept as numbers."""
import numpy as np
import pytest
import sympy

from diffcompare import backends, problems
from diffcompare.backends import UnsupportedError, symbolic_reverse
from diffcompare.backends.sympy_derivation import predict_gradient_ops
from diffcompare.backends.sympy_dag import reverse_program
from diffcompare.problems import Problem
from diffcompare.problems.symbolic import symbols_like, sympy_xp

ENGINE = backends.get("engine")


def _close(got, want, tol=1e-12):
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert np.max(np.abs(g - w) / np.maximum(1.0, np.abs(w))) <= tol


@pytest.mark.parametrize("width", [1, 2, 4, 8])
def test_gradient_program_stays_within_5x_the_function(width):
    """The cheap-gradient principle, symbolically: per-variable diff + CSE grows with the
    number of inputs; the reverse program stays a constant factor of the function."""
    p = problems.get("mlp_tanh")
    x = p.inputs(width)
    prepared = backends.get("sympy-reverse").prepare(p, x)
    info = prepared.info
    assert info["ops_gradient_cse"] <= 5 * info["ops_function_cse"], info
    _close(backends.get("sympy-reverse").gradient(prepared, x), backends.compute_gradient(ENGINE, p, x))


def test_a_long_loop_does_not_swell():
    """logistic_map at k = 30 is refused by the per-variable backends (expression swell);
    reverse accumulation keeps the DAG's sharing: the program stays within a constant factor
    of the function's DAG (itself quadratic in k: SymPy flattens x_k into a product of O(k)
    factors; the products' partials use prefix/suffix products, so they stay linear)."""
    p = problems.get("logistic_map")
    b = backends.get("sympy-reverse")
    sizes = {}
    for k in (10, 30):
        x = p.inputs(k)
        prepared = b.prepare(p, x)
        sizes[k] = prepared.info["ops_gradient_cse"] / prepared.info["ops_function_cse"]
        # the map is chaotic (condition ~ 3.7^k): evaluation orders differ in the 9th digit
        _close(b.gradient(prepared, x), backends.compute_gradient(ENGINE, p, x), 1e-7)
    assert sizes[10] <= 5 and sizes[30] <= 5, sizes


def test_vector_output_one_program_for_every_cotangent():
    p = problems.get("weighted_vector")
    x = p.inputs(5)
    b = backends.get("sympy-reverse")
    prepared = b.prepare(p, x)
    rng = np.random.default_rng(3)
    for _ in range(2):
        v = rng.standard_normal(np.shape(p.fn(np, *x)))
        _close(b.vjp(prepared, x, v), ENGINE.vjp(ENGINE.prepare(p, x), x, v))


def test_reverse_program_shares_subexpressions():
    x = sympy.Symbol("x", real=True)
    e = x
    for _ in range(30):            # tree size 2^30, DAG size 30
        e = sympy.sin(e) * sympy.cos(e)
    prog = reverse_program([e], [x])
    assert len(prog.forward) == 90 and len(prog.adjoint) <= 120
    # evaluate the program at x = 1/3 and compare with forward-mode iteration:
    # d/dv sin(v) cos(v) = cos(2v)
    env = {x: sympy.Float(1, 40) / 3}
    for s, rhs in prog.assignments:
        env[s] = rhs.xreplace(env).evalf(40)
    g = prog.gradient[0].xreplace(env).evalf(40)
    v, d = sympy.Float(1, 40) / 3, 1
    for _ in range(30):
        v, d = sympy.sin(v) * sympy.cos(v), d * sympy.cos(2 * v)
    assert abs(g - d) < 1e-30 * max(1, abs(d))


# --- guards that predict ----------------------------------------------------------------

@pytest.fixture
def diff_calls(monkeypatch):
    """Counts ``sympy.Expr.diff`` calls (what the per-variable backends spend their time in)."""
    calls = []
    original = sympy.Expr.diff

    def counting(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(sympy.Expr, "diff", counting)
    return calls


@pytest.mark.parametrize("backend_name,name,size,match", [
    ("sympy", "logistic_map", 11, "expression swell predicted before differentiating"),
    ("sympy-cse", "rnn_loop", 4, "predicted too costly before differentiating"),
    ("sympy-cse", "mlp_tanh", 16, "predicted too costly before differentiating"),
])
def test_a_costly_derivative_is_refused_before_any_diff(backend_name, name, size, match, diff_calls):
    p = problems.get(name)
    with pytest.raises(UnsupportedError, match=match) as info:
        backends.get(backend_name).prepare(p, p.inputs(size))
    assert diff_calls == []
    assert "~" in info.value.reason and "limit" in info.value.reason


def test_reverse_refuses_before_the_sweep_with_its_estimate(monkeypatch):
    calls = []
    monkeypatch.setattr(symbolic_reverse, "reverse_program", lambda *a, **k: calls.append(1))
    p = problems.get("mlp_tanh")
    with pytest.raises(UnsupportedError, match=r"~3\.14e\+03 program operations \(limit 1e\+03"):
        backends.get("sympy-reverse", max_diff_ops=1000).prepare(p, p.inputs(4))
    assert calls == []


@pytest.mark.parametrize("name,size", [("logistic_map", 6), ("rnn_loop", 1),
                                       ("softmax_cross_entropy", 4), ("rosenbrock", 8)])
def test_the_prediction_is_within_a_small_factor_of_the_derivative(name, size):
    p = problems.get(name)
    s = symbols_like(p.inputs(size), p.wrt, constants="symbols")
    f = p.fn(sympy_xp, *s.args)
    predicted = predict_gradient_ops([f], s.wrt_flat)
    prepared = backends.get("sympy", max_diff_ops=10 ** 9).prepare(p, p.inputs(size))
    actual = prepared.info["ops_gradient"]
    assert prepared.info["predicted_ops_gradient"] == predicted
    assert actual / 1.5 <= predicted <= 3.5 * actual, (predicted, actual)


# --- integer inputs stay numbers ------------------------------------------------------------

def _indexed(xp, X, obs):
    return xp.sum(X[obs] ** 2)


def _truncated(xp, x, k):
    return xp.sum(x[:int(k)] ** 3)


@pytest.mark.parametrize("backend_name", ["sympy", "sympy-cse", "sympy-reverse"])
def test_integer_inputs_are_numbers_for_indexing_and_int(backend_name):
    b = backends.get(backend_name)
    idx = Problem(name="t_indexed_obs", fn=_indexed, wrt=(0,), description="X[obs] with integer obs",
                  make_inputs=lambda size, seed: (np.arange(1.0, size + 1), np.array([0, 2, 2, 1])))
    trunc = Problem(name="t_int_k", fn=_truncated, wrt=(0,), description="x[:int(k)]",
                    make_inputs=lambda size, seed: (np.linspace(0.5, 2.0, size), np.int64(3)))
    (g,) = b.gradient(b.prepare(idx, idx.inputs(4)), idx.inputs(4))
    np.testing.assert_array_equal(g, [2.0, 4.0, 12.0, 0.0])       # 2 X_j per occurrence
    x = trunc.inputs(4)
    (g,) = b.gradient(b.prepare(trunc, x), x)
    np.testing.assert_allclose(g, np.where(np.arange(4) < 3, 3 * x[0] ** 2, 0.0), rtol=1e-15)
    x = idx.inputs(4)
    with pytest.raises(ValueError, match="differs from the one given to prepare"):
        b.gradient(b.prepare(idx, x), (x[0], np.array([1, 1, 1, 1])))


def test_integer_arguments_are_not_symbols():
    s = symbols_like((np.ones(2), np.array([1, 0]), np.ones(2)), wrt=(0,), constants="symbols")
    assert s.constant_indices == (2,)
    np.testing.assert_array_equal(s.args[1], [1, 0])
