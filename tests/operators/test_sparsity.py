"""Sparsity detection: each op rule against a dense engine Jacobian's nonzeros."""
import numpy as np
import pytest

pytest.importorskip("scipy", reason="sparse Jacobians need scipy (the `sparse` extra)")

from diffcompare.engine import Tensor, array_api, functional as F  # noqa: E402
from diffcompare.operators.sparsity import hessian_pattern, jacobian_pattern  # noqa: E402

RNG = np.random.default_rng(20)
X = RNG.standard_normal(6)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((4, 2))


def dense_jacobian(fn, inputs, wrt):
    def g(*ws):
        args = [Tensor(np.asarray(a)) for a in inputs]
        for i, w in zip(wrt, ws):
            args[i] = w
        return fn(array_api, *args)

    wrt_arrays = tuple(np.asarray(inputs[i], dtype=float) for i in wrt)
    jac = F.jacobian(g, wrt_arrays, allow_unused=True)
    n_out = int(np.prod(g(*map(Tensor, wrt_arrays)).shape))
    return np.concatenate([j.reshape(n_out, -1) for j in jac], axis=1)


# (fn, inputs, exact): exact rules give the dense nonzeros; the others a superset
CASES = {
    "elementwise": (lambda xp, x: xp.sin(x) * x[::-1] + 2.0, (X,), True),
    "broadcast": (lambda xp, a, b: a[:, :1] * b[None, :2, 0], (A, B), True),
    "sum_axis": (lambda xp, a: xp.sum(a * a, axis=1), (A,), True),
    "mean": (lambda xp, a: xp.mean(a, axis=0), (A,), True),
    "prod": (lambda xp, a: xp.prod(a, axis=0), (A,), True),
    "var": (lambda xp, a: xp.var(a, axis=1), (A,), True),
    "matmul": (lambda xp, a, b: a @ b, (A, B), True),
    "matvec": (lambda xp, a, x: a @ x[:4], (A, X), True),
    "dot": (lambda xp, a, x: xp.dot(a, x[:4]), (A, X), True),
    "einsum": (lambda xp, a, b: xp.einsum("ij,jk->ik", a, b), (A, B), True),
    "outer": (lambda xp, x: xp.outer(x[:2], x[3:]), (X,), True),
    "tensordot": (lambda xp, a, b: xp.tensordot(a, b, axes=1), (A, B), True),
    "kron": (lambda xp, a: xp.kron(a[0, :2], a[1, :2]), (A,), True),
    "trace": (lambda xp, a: xp.trace(a[:, :3]) * a[0], (A,), True),
    "transpose_reshape": (lambda xp, a: xp.reshape(xp.transpose(a), (-1,)) * 1.5, (A,), True),
    "concatenate": (lambda xp, x: xp.concatenate([x[:2], x[4:], xp.exp(x[1:2])]), (X,), True),
    "stack": (lambda xp, x: xp.stack([x[:3], x[3:]], axis=1), (X,), True),
    "split": (lambda xp, x: xp.split(x, 3)[1] * 2, (X,), True),
    "squeeze_expand": (lambda xp, a: xp.squeeze(xp.expand_dims(a, 0)), (A,), True),
    "cumsum": (lambda xp, a: xp.cumsum(a, axis=1), (A,), True),
    "cumprod": (lambda xp, x: xp.cumprod(x), (X,), True),
    "diff": (lambda xp, x: xp.diff(x), (X,), True),
    "take": (lambda xp, x: xp.take(x, np.array([0, 0, 5])), (X,), True),
    "gather": (lambda xp, a, i: a[i], (A, np.array([2, 0, 2])), True),
    "pad": (lambda xp, x: xp.pad(x, 2), (X,), True),
    "tril": (lambda xp, a: xp.tril(a[:, :3]), (A,), True),
    "diagonal": (lambda xp, a: xp.diagonal(a), (A,), True),
    "roll_flip": (lambda xp, x: xp.roll(xp.flip(x), 2), (X,), True),
    "repeat_tile": (lambda xp, x: xp.concatenate([xp.repeat(x[:2], 3), xp.tile(x[:2], 2)]),
                    (X,), True),
    "sort": (lambda xp, x: xp.sort(x), (X,), True),
    "cross": (lambda xp, a: xp.cross(a[0, :3], a[1, :3]), (A,), True),
    "norm": (lambda xp, a: xp.linalg.norm(a, axis=1), (A,), True),
    "max_axis": (lambda xp, a: xp.max(a, axis=1), (A,), False),
    "where": (lambda xp, x: xp.where(x > 0, x, x[::-1] ** 2), (X,), False),
    "clip": (lambda xp, x: xp.clip(x, -0.5, 0.5), (X,), False),
    "det_fallback": (lambda xp, a: xp.linalg.det(a[:, :3]) * a[0, 3], (A,), False),
    "inv_fallback": (lambda xp, a: xp.linalg.inv(a[:, :3]), (A,), False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_against_dense_jacobian(name):
    fn, inputs, exact = CASES[name]
    wrt = tuple(i for i, a in enumerate(inputs) if np.asarray(a).dtype.kind == "f")
    p = jacobian_pattern(fn, inputs, wrt)
    nonzero = dense_jacobian(fn, inputs, wrt) != 0
    found = p.matrix.toarray()
    assert found.shape == nonzero.shape and p.matrix.dtype == bool
    assert found[nonzero].all(), "the pattern misses a nonzero"
    if exact:
        np.testing.assert_array_equal(found, nonzero)
        assert p.conservative == []


def test_where_is_listed_conservative():
    p = jacobian_pattern(CASES["where"][0], (X,))
    assert "where" in p.conservative
    assert p.matrix.toarray().sum() == 2 * X.size    # both branches, every element


def test_dense_fallback_names_the_op():
    p = jacobian_pattern(CASES["inv_fallback"][0], (A,))
    assert p.conservative == ["linalg.inv"]
    assert p.matrix.toarray()[:, [0, 1, 2, 4, 5, 6, 8, 9, 10]].all()


def test_columns_follow_wrt_order():
    fn = lambda xp, a, b: a[:2] * b[0]      # noqa: E731
    a, b = np.ones(3), np.ones(2)
    p01 = jacobian_pattern(fn, (a, b), (0, 1)).matrix.toarray()
    p10 = jacobian_pattern(fn, (a, b), (1, 0)).matrix.toarray()
    np.testing.assert_array_equal(p10, np.concatenate([p01[:, 3:], p01[:, :3]], axis=1))
    assert jacobian_pattern(fn, (a, b), (1,)).shape == (2, 2)


def test_constant_output_has_empty_pattern():
    p = jacobian_pattern(lambda xp, x, y: y * 2.0, (X, np.ones(3)), (0,))
    assert p.shape == (3, X.size) and p.nnz == 0


HESSIAN_CASES = {
    "chain": lambda xp, x: xp.sum(x[1:] * x[:-1]) + xp.sum(xp.exp(x[:2])),
    "rosenbrock": lambda xp, x: xp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
    "linear_part": lambda xp, x: xp.sum(3.0 * x) + x[0] * x[5],
    "quadratic_form": lambda xp, x: xp.sum(x[:3] * (np.arange(1.0, 10.0).reshape(3, 3) @ x[3:])),
}


@pytest.mark.parametrize("name", sorted(HESSIAN_CASES))
def test_hessian_pattern_against_dense_hessian(name):
    fn = HESSIAN_CASES[name]
    h = hessian_pattern(fn, (X,)).matrix.toarray()
    dense = F.hessian(lambda x: fn(array_api, x), X) != 0
    np.testing.assert_array_equal(h, dense)


def test_hessian_pattern_needs_a_scalar():
    with pytest.raises(ValueError, match="scalar"):
        hessian_pattern(lambda xp, x: x * x, (X,))
