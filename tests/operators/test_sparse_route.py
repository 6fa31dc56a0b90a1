"""operators.jacobian/hessian(..., sparse=True): detected, coloured, compressed on a method's
own products, and equal to the dense operator (1e-12 for AD, differences to their truncation)."""
import numpy as np
import pytest

pytest.importorskip("scipy", reason="sparse operators need SciPy (the 'sparse' extra)")
pytest.importorskip("networkx", reason="sparse operators need networkx (the 'sparse' extra)")

from diffcompare import backends, operators  # noqa: E402
from diffcompare.problems.catalog import adbench  # noqa: E402


def _banded(xp, x):
    """Tridiagonal Jacobian with extra size-1 and leading axes in the output."""
    y = x[1:-1] * x[:-2] + xp.sin(x[2:]) - 0.5 * x[1:-1] ** 2
    return xp.reshape(y, (1, -1, 1))


def _available(name):
    if not backends.get(name).available():
        pytest.skip(f"{name} is not installed here")


X = (np.random.default_rng(0).standard_normal(40),)


@pytest.mark.parametrize("method, mode, tol", [
    ("engine-jvp", "forward", 1e-12), ("engine", "reverse", 1e-12), ("torch", "forward", 1e-12),
    ("jax-jit", "forward", 1e-12), ("fd-complex-step", "forward", 1e-12),
    ("fd-central", "central differences", 1e-7), ("fd-forward", "forward differences", 1e-5)])
def test_a_banded_jacobian_by_each_family_equals_the_dense_one(method, mode, tol):
    _available(method)
    dense = operators.jacobian(_banded, X, method="torch" if backends.get("torch").available()
                               else "engine")
    r = operators.jacobian(_banded, X, method=method, sparse=True)
    assert r.mode == mode and r.matrix.shape == (38, 40)
    # three nonzero diagonals: three colours, the most nonzeros in a row (its lower bound)
    assert r.colouring.n_colours == r.colouring.lower_bound == 3
    assert r.pattern.nnz == 3 * 38 and not r.pattern.conservative
    np.testing.assert_allclose(r.matrix.toarray(), dense, rtol=tol, atol=tol)


def test_auto_takes_the_direction_with_fewer_colours_and_mode_can_force_the_other():
    _available("jax-jit")
    cams, points, w, features, cam_index, point_index = adbench.ba_sized_inputs(3, 12, 30, 0)
    inputs = (cams, points, w, features, cam_index, point_index)
    auto = operators.jacobian(adbench.bundle_adjustment, inputs, method="jax-jit",
                              wrt=(0, 1, 2), sparse=True)
    forced = operators.sparse.jacobian(adbench.bundle_adjustment, inputs, method="jax-jit",
                                       wrt=(0, 1, 2), mode="reverse")
    assert auto.mode == "forward" and auto.passes == auto.colouring.lower_bound == 14
    assert forced.mode == "reverse" and forced.passes > auto.passes
    dense = operators.jacobian(adbench.bundle_adjustment, inputs, method="engine", wrt=(0, 1, 2))
    np.testing.assert_allclose(auto.matrix.toarray(), dense, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(forced.matrix.toarray(), dense, rtol=1e-12, atol=1e-12)


def test_a_mode_the_method_lacks_is_refused_with_the_reason():
    with pytest.raises(operators.OperatorUnsupported, match="no native forward-mode product"):
        operators.sparse.jacobian(_banded, X, method="engine", mode="forward")


@pytest.mark.parametrize("method", ["engine", "torch", "jax-jit"])
def test_an_arrowhead_hessian_equals_the_dense_one(method):
    _available(method)

    def arrow(xp, x):                      # x0 couples to every entry; the rest are diagonal
        return xp.sum(x[0] * xp.exp(x[1:])) + xp.sum(x ** 4)

    x = (np.random.default_rng(1).standard_normal(12) * 0.3,)
    r = operators.hessian(arrow, x, method=method, sparse=True)
    dense = operators.hessian(arrow, x, method="engine")
    assert r.pattern.nnz == 12 + 2 * 11
    assert (r.colouring.kind, r.passes) == ("star", 2)       # column colouring: 12 passes
    np.testing.assert_allclose(r.matrix.toarray(), dense, rtol=1e-12, atol=1e-12)
    column = operators.sparse.hessian(arrow, x, method=method, kind="column")
    assert (column.colouring.kind, column.passes) == ("symmetric-column", 12)
    np.testing.assert_allclose(column.matrix.toarray(), dense, rtol=1e-12, atol=1e-12)


def test_the_sparse_module_is_an_attribute_in_a_fresh_process():
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", "import diffcompare.operators as o; "
                           "print(o.sparse.jacobian.__name__, o.colouring.colour_columns.__name__)"],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["jacobian", "colour_columns"], done.stderr[-2000:]


def test_one_forward_product_is_not_held_to_the_gradients_input_limit():
    """engine-jvp refuses a gradient past 300 inputs (300 forward products); a pushforward
    is one product, and a coloured Jacobian a few: bundle adjustment's 14 were refused."""
    x = (np.random.default_rng(2).standard_normal(400),)
    r = operators.jacobian(_banded, x, method="engine-jvp", sparse=True)
    assert r.passes == 3
    with pytest.raises(operators.OperatorUnsupported, match="300"):
        operators.gradient(lambda xp, x: xp.sum(x * x), x, method="engine-jvp")


def test_a_dense_jacobian_refused_for_its_size_offers_the_sparse_route():
    from diffcompare import problems
    p = problems.get("bundle_adjustment")
    size = max(p.sizes)
    support = backends.get("engine").supports_product(p, "jacobian", p.inputs(size, 0))
    assert not support and "entries (outputs × inputs)" in support.reason
    assert "jacobian_sparse" in support.reason and "sparse=True" in support.reason
