"""The symengine backend: SymEngine's diff and Lambdify on the scalar expansion."""
import numpy as np
import pytest
import sympy

pytest.importorskip("symengine", reason="symengine is the optional extra 'symbolic'")

from diffcompare import backends, problems  # noqa: E402
from diffcompare.backends import UnsupportedError, symengine_backend  # noqa: E402
from diffcompare.backends.symengine_backend import to_symengine  # noqa: E402

ENGINE = backends.get("engine")


def _close(got, want, tol=1e-12):
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == np.float64
        assert np.max(np.abs(g - w) / np.maximum(1.0, np.abs(w))) <= tol


@pytest.mark.parametrize("name,size", [("mlp_tanh", 4), ("rnn_loop", 2), ("weighted_vector", 5),
                                       ("softmax_cross_entropy", 8), ("logistic_map", 8)])
def test_gradient_equals_the_engine(name, size):
    p = problems.get(name)
    x, c = p.inputs(size), p.cotangent(size)
    b = backends.get("symengine")
    prepared = backends.checked_prepare(b, p, x)
    _close(backends.checked_vjp(b, prepared, x, c), backends.compute_gradient(ENGINE, p, x, c), 1e-10)
    np.testing.assert_allclose(b.function(prepared, x), p.fn(np, *x), rtol=1e-13)
    for key in ("ops_gradient", "ops_gradient_cse", "predicted_ops_gradient", "diff_s", "lambdify_s"):
        assert key in prepared.info


def test_hvp_equals_the_engine():
    p = problems.get("rosenbrock")
    x = p.inputs(6)
    v = (np.random.default_rng(2).standard_normal(6),)
    b = backends.get("symengine")
    got = b.hvp(b.prepare(p, x), x, v)
    want = ENGINE.hvp(ENGINE.prepare(p, x), x, v)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-10, atol=1e-12)


def test_nonsmooth_problems_are_unsupported_with_the_reason():
    b = backends.get("symengine")
    for name in ("relu_kink", "abs_kink", "mlp_relu"):
        support = b.supports(problems.get(name))
        assert not support and "Heaviside" in support.reason
        p = problems.get(name)
        with pytest.raises(UnsupportedError, match="unevaluated"):
            backends.compute_gradient(b, p, p.inputs(p.sizes[0]))


def test_conversion_walks_the_dag_not_the_tree():
    x = sympy.Symbol("x", real=True)
    e = x
    for _ in range(60):                 # a tree of 2^60 nodes, 120 distinct ones
        e = sympy.sin(e) + sympy.cos(e)
    out, = to_symengine([e])
    value = out.subs({to_symengine([x])[0]: 0.3})        # SymEngine keeps it shared, too
    v = 0.3
    for _ in range(60):
        v = np.sin(v) + np.cos(v)
    assert abs(float(value) - v) < 1e-12


def test_refuses_before_converting_when_the_prediction_is_too_large(monkeypatch):
    calls = []
    monkeypatch.setattr(symengine_backend, "to_symengine", lambda *a, **k: calls.append(1))
    p = problems.get("mlp_tanh")
    with pytest.raises(UnsupportedError, match=r"predicted too costly before differentiating: ~2\.61e\+04"):
        backends.get("symengine", max_diff_ops=1000).prepare(p, p.inputs(4))
    assert calls == []
