"""sparsejac (optional extra) as a peer on the sparse route: the same Jacobian, its direction
and colours as the route's own, refused off JAX."""
import numpy as np
import pytest

pytest.importorskip("scipy.sparse", reason="sparse operators need scipy (the `sparse` extra)")
pytest.importorskip("networkx", reason="sparse operators need networkx (the `sparse` extra)")

from diffcompare import backends, operators  # noqa: E402
from diffcompare.problems.catalog.adbench import bundle_adjustment, ba_sized_inputs  # noqa: E402


def _needs_sparsejac():
    pytest.importorskip("sparsejac", reason="sparsejac is an optional extra: "
                        "pip install 'diffcompare[sparsejac]'")
    support = backends.get("jax-jit").available()
    if not support:
        pytest.skip(f"jax-jit: {support.reason}")


def test_bundle_adjustment_matches_the_routes_own_forward_products():
    _needs_sparsejac()
    inputs = ba_sized_inputs(3, 10, 24, seed=4)
    wrt = (0, 1, 2)
    peer = operators.sparse.jacobian(bundle_adjustment, inputs, method="jax-jit", wrt=wrt,
                                     peer="sparsejac")
    own = operators.sparse.jacobian(bundle_adjustment, inputs, method="jax-jit", wrt=wrt)
    dense = operators.jacobian(bundle_adjustment, inputs, method="engine", wrt=wrt)
    assert (peer.mode, own.mode) == ("sparsejac.jacfwd", "forward")
    assert peer.colouring.n_colours == own.colouring.n_colours == 14
    assert peer.matrix.nnz == own.pattern.nnz
    np.testing.assert_allclose(peer.matrix.toarray(), dense, rtol=1e-12, atol=1e-12)


def test_reverse_mode_and_a_banded_jacobian():
    _needs_sparsejac()
    fn = lambda xp, x: xp.sin(x[1:]) * x[:-1] ** 2          # noqa: E731
    x = (np.random.default_rng(3).standard_normal(12),)
    r = operators.sparse.jacobian(fn, x, method="jax-jit", mode="reverse", peer="sparsejac")
    assert r.mode == "sparsejac.jacrev" and r.colouring.kind == "row"
    np.testing.assert_allclose(r.matrix.toarray(), operators.jacobian(fn, x, method="engine"),
                               rtol=1e-12, atol=1e-12)


def test_off_jax_or_an_unknown_peer_is_refused():
    _needs_sparsejac()
    fn = lambda xp, x: x[1:] * x[:-1]                       # noqa: E731
    with pytest.raises(operators.OperatorUnsupported, match="sparsejac runs on JAX under jit"):
        operators.sparse.jacobian(fn, (np.ones(4),), method="torch", peer="sparsejac")
    with pytest.raises(ValueError, match="peer must be one of sparsejac"):
        operators.sparse.jacobian(fn, (np.ones(4),), method="jax-jit", peer="asdex")
