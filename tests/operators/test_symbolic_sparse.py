"""Sparse symbolic Jacobians and Hessians: only the nonzero entries derived, against dense."""
import numpy as np
import pytest

pytest.importorskip("scipy.sparse", reason="sparse operators need scipy (the `sparse` extra)")
pytest.importorskip("networkx", reason="sparse operators need networkx (the `sparse` extra)")

from diffcompare import backends, operators  # noqa: E402
from diffcompare.operators import measured, symbolic_sparse  # noqa: E402
from diffcompare.problems import Problem  # noqa: E402

METHODS = ["sympy", "sympy-cse", "symengine"]


def _available(method):
    support = backends.get(method).available()
    if not support:
        pytest.skip(f"{method}: {support.reason}")


def chain(xp, x, w):
    """A banded Jacobian: y_i = sin(x_i) x_{i+1}² w_i."""
    return xp.sin(x[:-1]) * x[1:] ** 2 * w


def coupled(xp, x):
    """A sparse Hessian: a chain, an arrowhead hub and a cancelling term (x_3 - x_3)."""
    return (xp.sum(xp.exp(x[1:] * x[:-1])) + x[0] * xp.sum(xp.cos(x)) + xp.sum(x ** 4)
            + x[3] * x[5] - x[5] * x[3])


@pytest.mark.parametrize("method", METHODS)
def test_sparse_symbolic_jacobian_equals_dense(method):
    _available(method)
    rng = np.random.default_rng(1)
    inputs = (rng.standard_normal(9), rng.standard_normal(8))
    r = operators.jacobian(chain, inputs, method=method, sparse=True)
    dense = operators.jacobian(chain, inputs, method="engine")
    assert (r.mode, r.passes, r.colouring) == (symbolic_sparse.MODE, 1, None)
    assert r.matrix.nnz == r.pattern.nnz == np.count_nonzero(dense) == 16
    np.testing.assert_allclose(r.matrix.toarray(), dense, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("method", METHODS)
def test_sparse_symbolic_hessian_equals_dense(method):
    _available(method)
    x = (np.random.default_rng(2).standard_normal(8) * 0.5,)
    r = operators.hessian(coupled, x, method=method, sparse=True)
    dense = operators.hessian(coupled, x, method="engine")
    assert (r.mode, r.passes, r.colouring) == (symbolic_sparse.MODE, 1, None)
    # the chain's tridiagonal, the hub's row and column; x_3 x_5 - x_5 x_3 cancels
    # symbolically, where the traced pattern keeps it
    assert r.pattern.nnz == np.count_nonzero(dense) == 8 + 2 * 7 + 2 * 6
    assert operators.sparsity.hessian_pattern(coupled, x).nnz == r.pattern.nnz + 2
    assert not r.pattern.matrix[3, 5] and (r.matrix != r.matrix.T).nnz == 0
    np.testing.assert_allclose(r.matrix.toarray(), dense, rtol=1e-12, atol=1e-12)


def test_a_colouring_kind_or_mode_asked_for_takes_the_coloured_products():
    x = (np.random.default_rng(3).standard_normal(8) * 0.5,)
    r = operators.sparse.hessian(coupled, x, method="sympy", kind="star")
    assert r.colouring.kind == "star" and r.passes == r.colouring.n_colours
    np.testing.assert_allclose(r.matrix.toarray(), operators.hessian(coupled, x, method="engine"),
                               rtol=1e-12, atol=1e-12)
    inputs = (np.ones(5), np.ones(4))
    j = operators.sparse.jacobian(chain, inputs, method="sympy", mode="forward")
    assert j.mode == "forward" and j.colouring.n_colours == 2


def test_the_size_guards_apply():
    x = (np.ones(12),)
    opts = {"max_inputs": 10}
    with pytest.raises(operators.OperatorUnsupported, match="too many inputs"):
        operators.sparse.hessian(coupled, x, method="sympy", options=opts)
    with pytest.raises(operators.OperatorUnsupported, match="too many inputs"):
        operators.sparse.jacobian(chain, (np.ones(12), np.ones(11)), method="sympy", options=opts)
    # the Hessian entries' own size (printed tree, no CSE): the gradient has ~150 operations,
    # the 9 nonzero entries 366
    with pytest.raises(operators.OperatorUnsupported, match="Hessian's nonzero entries"):
        operators.sparse.hessian(lambda xp, x: xp.sum(xp.exp(xp.sin(x) * xp.cos(x[::-1]))),
                                 (np.ones(6),), method="sympy", options={"max_tree_ops": 200})


def test_a_nonsmooth_hessian_is_refused():
    p = Problem("kinked", lambda xp, x: xp.sum(xp.abs(x) * x), lambda n, s: (np.ones(n),), "",
                tags=frozenset({"nonsmooth"}))
    with pytest.raises(operators.OperatorUnsupported, match="DiracDelta"):
        operators.sparse.hessian(p, p.inputs(3, 0), method="sympy")


def test_the_measured_row_has_no_colours():
    p = Problem("coupled", coupled, lambda n, s: (np.linspace(-1, 1, n),), "")
    m = measured.prepare("hessian_sparse", p, p.inputs(6, 0), "sympy-cse")
    assert m.how == symbolic_sparse.MODE and "colours" not in m.extra
    assert m.extra["pattern_nnz"] == m.evaluate().matrix.nnz
