"""The peer backends (HIPS autograd, numdifftools) and forward mode (jax-jacfwd, engine-jvp):
their declared limits, what they record, and forward mode's cost of one JVP per input.
(Agreement with the engine on every catalog problem is in tests/test_equivalence.py.)"""
from __future__ import annotations

import numpy as np
import pytest

from diffcompare import backends, problems
from diffcompare.backends import UnsupportedError


def _need(name):
    backend = backends.get(name)
    if not backend.available():
        pytest.skip(f"{name} unavailable: {backend.available().reason}")
    return backend


def test_autograd_vector_output_vjp_matches_the_seed_thread():
    b = _need("autograd")
    p = problems.get("weighted_vector")
    ga, gb, gc = backends.compute_gradient(b, p, p.inputs(3), p.cotangent(3))
    np.testing.assert_allclose(ga, [0.3, 3.0, 3.0e-4])
    np.testing.assert_allclose(gb, [1.2, 16.0, 2.0e-3])
    np.testing.assert_allclose(gc, [0.1 / 6, 1.0 / 7, 1e-4 / 8])


def test_numdifftools_records_its_error_estimate_and_refuses_large_inputs():
    b = _need("numdifftools")
    p = problems.get("squire_trapp")
    x = p.inputs(1)
    prepared = backends.checked_prepare(b, p, x)
    (g,) = backends.checked_vjp(b, prepared, x)
    from diffcompare.problems.catalog.classic import squire_trapp_derivative
    assert g[0] == pytest.approx(squire_trapp_derivative(1.5), rel=1e-10)
    assert 0 < prepared.info["error_estimate_max"] < 1e-8 and prepared.evaluations > 10
    kink = problems.get("abs_kink")               # at |x|'s kink its estimate says so
    xk = kink.inputs(8)
    prepared = backends.checked_prepare(b, kink, xk)
    backends.checked_vjp(b, prepared, xk)
    assert prepared.info["error_estimate_max"] > 1e-4
    big = p.inputs(b.max_inputs + 1)
    assert not b.supports_inputs(p, big) and "max_inputs" in b.supports_inputs(p, big).reason
    with pytest.raises(UnsupportedError, match="per input"):
        backends.compute_gradient(b, p, big)


@pytest.mark.parametrize("name", ["engine-jvp", "jax-jacfwd"])
def test_forward_mode_pays_one_jvp_per_input(name):
    b = _need(name)
    p = problems.get("rosenbrock")
    for n in (4, 16):
        x = p.inputs(n)
        prepared = backends.checked_prepare(b, p, x)
        before = prepared.evaluations
        (g,) = backends.checked_vjp(b, prepared, x)
        assert prepared.evaluations - before == n
        (want,) = backends.compute_gradient(backends.get("engine"), p, x)
        np.testing.assert_allclose(g, want, rtol=1e-12)
    big = p.inputs(b.max_inputs + 1)
    support = b.supports_inputs(p, big)
    assert not support and "one JVP per input" in support.reason


def test_forward_mode_vjp_of_a_vector_output():
    b = _need("jax-jacfwd")
    p = problems.get("bundle_adjustment")
    x, c = p.inputs(2), p.cotangent(2)
    got = backends.compute_gradient(b, p, x, c)
    want = backends.compute_gradient(backends.get("engine"), p, x, c)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_peers_are_in_the_capability_table():
    table = backends.capability_table([problems.get("rosenbrock"), problems.get("gmm")])
    for name in ("autograd", "numdifftools", "jax-jacfwd", "engine-jvp"):
        assert name in table.index
    if backends.get("numdifftools").available():
        assert table.at["numdifftools", "rosenbrock"] == "ok"
