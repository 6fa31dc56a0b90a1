"""The engine's fast paths give what the general path gives.

Some ops take a quicker route for common large cases (a sum over a short last axis as
a matrix-vector product, a row gather with ``np.take``, its backward one 1-D ``np.add.at`` per column,
logsumexp's saved exp and sum).  Each test builds inputs on both sides of the path's
thresholds and compares values and gradients with plain NumPy formulas or torch.
"""
import numpy as np
import pytest

import diffcompare.engine as E
from diffcompare.engine import Tensor, autograd, kernels

torch = pytest.importorskip("torch")


def _rng(key):
    return np.random.default_rng([7, key])


# a last axis short enough, and enough elements, for the matrix-vector route; and not
BIG_SHORT = (kernels._LARGE // 4 + 3, 4)
SHAPES = [BIG_SHORT, (3, 50, 8), (5, 4), (2, kernels._SHORT_AXIS + 1)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_and_mean_over_last_axis_match_numpy_and_gradients(shape, keepdims):
    a = _rng(1).standard_normal(shape)
    x = Tensor(a, requires_grad=True)
    s = E.sum(x, axis=-1, keepdims=keepdims)
    m = E.mean(x, axis=-1, keepdims=keepdims)
    np.testing.assert_allclose(s.data, a.sum(-1, keepdims=keepdims), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(m.data, a.mean(-1, keepdims=keepdims), rtol=1e-13, atol=1e-13)
    w = _rng(2).standard_normal(s.shape)
    (s * w + m * w).sum().backward()
    expected = np.broadcast_to((w * (1 + 1 / shape[-1])).reshape(shape[:-1] + (1,)), shape)
    np.testing.assert_allclose(x.grad.data, expected, rtol=1e-14)


def test_sum_over_short_axis_keeps_nan_inf_and_float32():
    a = _rng(3).standard_normal(BIG_SHORT).astype(np.float32)
    a[0, 1], a[1, 0], a[2, :2] = np.nan, np.inf, (np.inf, -np.inf)
    with np.errstate(invalid="ignore"):   # inf - inf, as in np.sum
        s = E.sum(Tensor(a), axis=1)
    assert s.dtype == np.float32
    assert np.isnan(s.data[0]) and s.data[1] == np.inf and np.isnan(s.data[2])
    np.testing.assert_allclose(s.data[3:], a[3:].sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape, axis", [((100_000,), 0), (BIG_SHORT, -1), ((3, 4, 5), (0, 2)),
                                         ((6, 9), 0)], ids=str)
def test_logsumexp_value_gradient_and_second_derivative_match_torch(shape, axis):
    a = _rng(4).standard_normal(shape) * 3
    x = Tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    out, tout = E.logsumexp(x, axis=axis), torch.logsumexp(tx, dim=axis)
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-13)
    w = _rng(5).standard_normal(out.shape)
    (g,) = autograd.grad((out * w).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((tout * torch.tensor(w)).sum(), tx, create_graph=True)
    np.testing.assert_allclose(g.data, tg.detach().numpy(), rtol=1e-12, atol=1e-15)
    # the plain backward (saved softmax) agrees with the recorded one
    (out * w).sum().backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.data, g.data, rtol=1e-12, atol=1e-15)
    v = _rng(6).standard_normal(shape)
    (h,) = autograd.grad((g * v).sum(), x)
    (th,) = torch.autograd.grad((tg * torch.tensor(v)).sum(), tx)
    np.testing.assert_allclose(h.data, th.numpy(), rtol=1e-10, atol=1e-13)


def test_logsumexp_saves_torch_tensors_and_the_softmax_and_checks_versions():
    x = Tensor(_rng(7).standard_normal((3, 4)), requires_grad=True)
    y = x * 1.0
    out = E.logsumexp(y, axis=1)
    saved = out.grad_fn.saved
    assert list(saved) == ["self", "exp", "sum_exp", "result"]
    np.testing.assert_allclose((saved["exp"].data / saved["sum_exp"].data).sum(1), 1.0, rtol=1e-15)
    with E.no_grad():
        y += 1.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_logsumexp_without_grad_saves_nothing():
    out = E.logsumexp(Tensor(np.ones(5)), axis=0)
    assert out.grad_fn is None


@pytest.mark.parametrize("shape, key", [
    ((6, 5), [0, 2, 2, -1, 5, 0]),              # few columns: one bincount per column
    ((6, 3, 4), [1, 1, -6, 4]),                 # many columns: one bincount over pairs
    ((7,), [6, 0, 0]),                          # a vector: elements
    ((4, 2), np.zeros(0, dtype=np.int64)),      # nothing gathered
], ids=["few-columns", "many-columns", "vector", "empty"])
def test_row_gather_value_and_gradient_match_add_at(shape, key):
    a = _rng(8).standard_normal(shape)
    idx = np.asarray(key, dtype=np.int64)
    x = Tensor(a, requires_grad=True)
    y = x[idx]
    np.testing.assert_array_equal(y.data, a[idx])
    w = _rng(9).standard_normal(y.shape)
    (y * w).sum().backward()
    expected = np.zeros(shape)
    np.add.at(expected, idx, w)
    np.testing.assert_allclose(x.grad.data, expected, rtol=1e-14, atol=1e-15)
    assert x.grad.data.flags.c_contiguous


def test_row_gather_out_of_range_is_an_index_error():
    x = Tensor(np.ones((3, 2)), requires_grad=True)
    with pytest.raises(IndexError):
        x[np.array([0, 3])]


def test_scatter_rows_float32_keeps_dtype():
    g = _rng(10).standard_normal((5, 3)).astype(np.float32)
    out = kernels.index_add(g, np.array([0, 1, 1, 3, 0]), (4, 3), True)
    assert out.dtype == np.float32 and out.shape == (4, 3)
    np.testing.assert_allclose(out[1], g[1] + g[2], rtol=1e-6)


def test_basic_index_with_ellipsis_alone_is_a_view():
    x = Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = x[...]
    assert y.grad_fn.name() == "IndexBackward0"
    np.testing.assert_array_equal(y.data, x.data)
    (y * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.data, np.full((2, 3), 2.0))


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("shape", [(kernels._FEW * 64, 5), (3, 4), (40, kernels._FEW + 1)], ids=str)
def test_max_min_over_last_axis_value_and_gradient_with_and_without_ties(op, shape):
    a = _rng(11).standard_normal(shape)
    tied = a.copy()
    tied[0, :2] = tied[0].max() + 1 if op == "max" else tied[0].min() - 1   # a tie in row 0
    for data in (a, tied):
        x = Tensor(data, requires_grad=True)
        out = getattr(E, op)(x, axis=-1)
        np.testing.assert_array_equal(out.data, getattr(data, op)(-1))
        w = _rng(12).standard_normal(out.shape)
        (out * w).sum().backward()
        hit = data == getattr(data, op)(-1, keepdims=True)
        expected = hit / hit.sum(-1, keepdims=True) * w[:, None]
        np.testing.assert_allclose(x.grad.data, expected, rtol=1e-15)
    assert x.grad.data[0, 0] == x.grad.data[0, 1] == w[0] / 2


def test_max_over_short_axis_propagates_nan():
    a = _rng(13).standard_normal((kernels._FEW * 64, 4))
    a[3, 2] = np.nan
    x = Tensor(a, requires_grad=True)
    with np.errstate(invalid="ignore"):   # the NaN row's share is 0/0, as before
        out = E.max(x, axis=1)
    assert np.isnan(out.data[3]) and not np.isnan(np.delete(out.data, 3)).any()
    assert np.isnan(E.logsumexp(Tensor(a), axis=1).data[3])


BROADCASTS = [((300, 1, 8), (100, 8)), ((100, 8), (300, 1, 8)), ((200, 1, 10), (1, 10, 10)),
              ((2, 1, 3), (4, 3)), ((300, 1, 8), (300, 100, 8)), ((64, 1, 1, 8), (64, 8)),
              ((1000, 1, 100), (30, 100)), ((300, 1, 8), (1, 100, 1)),
              ((64, 50), (50,)), ((50,), (64, 50)), ((400, 50), (50,)), ((3, 64, 50), (1, 50)),
              # broadcast along a short last axis: one ufunc call per position of it
              ((20000, 2), (20000, 1)), ((20000, 1), (1, 3)), ((4, 5000, 1), (5000, 2)),
              ((20000, 4), (20000, 1)),
              # a leading broadcast: mul's gradient for it summed back in one einsum
              ((1000, 10, 10), (10, 10)), ((200, 30), (1, 30)), ((5, 1000), (1000,))]


@pytest.mark.parametrize("a_shape, b_shape", BROADCASTS, ids=str)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_broadcast_arithmetic_matches_numpy_operators_and_gradients(op, a_shape, b_shape):
    import operator
    a = _rng(14).standard_normal(a_shape)
    b = _rng(15).uniform(0.5, 2.0, b_shape)
    ref = getattr(operator, op if op != "div" else "truediv")(a, b)
    x, y = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    out = getattr(E, op)(x, y)
    np.testing.assert_array_equal(out.data, ref)
    w = _rng(16).standard_normal(ref.shape)
    (out * w).sum().backward()
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (getattr(torch, op)(tx, ty) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y.grad.data, ty.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_broadcast_arithmetic_keeps_dtype_promotion_and_errors():
    a32 = np.ones((300, 1, 8), np.float32)
    assert E.sub(Tensor(a32), Tensor(np.ones((100, 8)))).dtype == np.float64
    assert E.sub(Tensor(a32), Tensor(np.ones((100, 8), np.float32))).dtype == np.float32
    with pytest.raises(ValueError, match="broadcast"):
        E.sub(Tensor(np.ones((300, 2, 8))), Tensor(np.ones((100, 8))))


MATMUL_2D = [((1, 3), (3, 4)), ((64, 1), (1, 50)), ((64, 10), (10, 50)), ((50, 64), (64, 1)),
             ((5, 7), (7, 5))]


@pytest.mark.parametrize("a_shape, b_shape", MATMUL_2D, ids=str)
def test_two_dimensional_matmul_by_dot_matches_torch(a_shape, b_shape):
    a, b = _rng(20).standard_normal(a_shape), _rng(21).standard_normal(b_shape)
    x, y = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    out = x @ y
    np.testing.assert_allclose(out.data, a @ b, rtol=1e-13, atol=1e-13)
    w = _rng(22).standard_normal(out.shape)
    (out * w).sum().backward()
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ((tx @ ty) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy(), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(y.grad.data, ty.grad.numpy(), rtol=1e-13, atol=1e-13)
    (gx,) = autograd.grad((x @ y).sum(), x, create_graph=True)   # the same formula on Tensors
    assert gx.grad_fn is not None
    np.testing.assert_allclose(gx.data, np.ones(out.shape) @ b.T, rtol=1e-13)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(), (1, 1), (64, 1), (3, 4, 5)], ids=str)
def test_full_mean_and_sum_gradients_are_read_only_broadcasts_of_one_value(dtype, shape):
    x = Tensor(np.ones(shape, dtype), requires_grad=True)
    g_mean = autograd.grad(E.mean(x), x)[0].data
    g_sum = autograd.grad(E.sum(x * 3), x)[0].data
    assert g_mean.shape == g_sum.shape == shape and g_mean.dtype == g_sum.dtype == dtype
    np.testing.assert_array_equal(g_mean, np.full(shape, 1 / max(1, int(np.prod(shape))), dtype))
    np.testing.assert_array_equal(g_sum, np.full(shape, 3, dtype))
    x.grad = None
    E.mean(x).backward()
    x.grad.zero_()                       # .grad is the leaf's own, writable copy
    assert not x.grad.data.any()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_short_last_axis_broadcast_of_strided_views_is_the_operator(op, dtype):
    import operator
    q = _rng(17).uniform(0.5, 2.0, (20000, 3)).astype(dtype)
    q[5, 2], q[7, 0] = np.inf, np.nan
    fn = getattr(operator, op if op != "div" else "truediv")
    for a, b in ((q[:, 0:2], q[:, 2:3]), (q[:, 2:3], q[:, 0:2])):   # strided views, both orders
        out = getattr(E, op)(Tensor(a), Tensor(b))
        assert out.dtype == dtype and out.shape == (20000, 2)
        np.testing.assert_array_equal(out.data, fn(a, b))


def test_sum_to_over_a_short_last_axis_matches_numpy():
    g = _rng(18).standard_normal((20000, 2))
    np.testing.assert_allclose(kernels.sum_to(g, (20000, 1)), g.sum(1, keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(kernels.sum_to(g, (1,)), g.sum().reshape(1), rtol=1e-12)


@pytest.mark.parametrize("b_shape", [(50, 8), (1, 8), (30, 1, 1)], ids=str)
def test_sub_sums_a_broadcast_gradient_back_before_negating_it(b_shape):
    a = _rng(19).standard_normal((30, 50, 8))
    b = _rng(20).standard_normal(b_shape)
    w = _rng(21).standard_normal((30, 50, 8))
    x, y = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    (E.sub(x, y) * w).sum().backward()
    np.testing.assert_array_equal(y.grad.data, kernels.sum_to(-w, b_shape))   # exactly
    np.testing.assert_array_equal(x.grad.data, w)
    (gy,) = autograd.grad((E.sub(x, y) * Tensor(w)).sum(), y, create_graph=True)   # recorded
    np.testing.assert_array_equal(gy.data, y.grad.data)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(100, 10, 8), (3, 4, 5)], ids=str)   # large and small
def test_square_backward_of_a_last_axis_sum_is_the_general_formula(shape, dtype):
    a = _rng(22).standard_normal(shape).astype(dtype)
    w = _rng(23).standard_normal(shape[:-1]).astype(dtype)
    x = Tensor(a, requires_grad=True)
    (E.sum(x ** 2, axis=-1) * Tensor(w)).sum().backward()
    g = np.broadcast_to(w[..., None], shape)   # what sum's backward hands to pow's
    expected = g * 2.0 * a
    assert x.grad.dtype == dtype
    np.testing.assert_array_equal(x.grad.data, expected)   # exactly: the same (g * 2) * a
    (gx,) = autograd.grad((E.sum(x ** 2, axis=-1) * Tensor(w)).sum(), x, create_graph=True)
    np.testing.assert_array_equal(gx.data, expected)


@pytest.mark.parametrize("a_shape, b_shape", [((1, 4), (4,)), ((1, 1), (1,)), ((1, 3, 1, 2), (3, 1, 2)),
                                              ((1, 5), (1, 1)), ((0, 3), (3,)), ((3, 0), (1, 0))], ids=str)
def test_sum_back_over_length_one_axes_is_the_gradient_itself(a_shape, b_shape):
    a, b = _rng(30).standard_normal(a_shape), _rng(31).standard_normal(b_shape)
    x, y = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    w = _rng(32).standard_normal(np.broadcast_shapes(a_shape, b_shape))
    ((x + y) * w).sum().backward()
    np.testing.assert_array_equal(y.grad.data, w.sum(axis=tuple(range(w.ndim - len(b_shape))))
                                  .sum(axis=tuple(i for i, n in enumerate(b_shape) if n == 1
                                                  and w.shape[w.ndim - len(b_shape) + i] != 1),
                                       keepdims=True).reshape(b_shape))
    assert y.grad.shape == b_shape
    y.grad.zero_()                       # the leaf's own array, not a view of another gradient
    assert not y.grad.data.any() and (w.size == 0 or (x.grad.data == w).all())


@pytest.mark.parametrize("small_shape", [(10, 10), (1, 10, 10), (1, 1, 1), (10, 1)], ids=str)
def test_mul_gradient_of_a_leading_broadcast_operand_is_the_summed_product(small_shape):
    a = _rng(24).standard_normal((100, 10, 10))
    b = _rng(25).standard_normal(small_shape)
    w = _rng(26).standard_normal((100, 10, 10))
    for first in (True, False):
        x, y = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
        ((x * y if first else y * x) * Tensor(w)).sum().backward()
        np.testing.assert_allclose(y.grad.data, kernels.sum_to(w * a, small_shape), rtol=1e-13)
        np.testing.assert_array_equal(x.grad.data, w * np.broadcast_to(b, a.shape))
        assert y.grad.shape == small_shape


@pytest.mark.parametrize("shape, axes", [((4096, 10), (0,)), ((3000, 3), (0,)), ((50, 40, 8), (0, 1)),
                                         ((5000, 1), (0,)), ((64, 50), (0,))], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_over_leading_axes_matches_numpy(shape, axes, keepdims):
    x = _rng(27).standard_normal(shape)
    out = kernels.add_reduce(x, axes, keepdims)
    np.testing.assert_allclose(out, np.add.reduce(x, axis=axes, keepdims=keepdims), rtol=1e-13, atol=1e-13)
    assert out.shape == np.add.reduce(x, axis=axes, keepdims=keepdims).shape
    t = Tensor(x, requires_grad=True)
    s = E.sum(t, axis=axes, keepdims=keepdims)
    np.testing.assert_allclose(s.data, out, rtol=1e-13, atol=1e-13)
    b = Tensor(_rng(28).standard_normal(shape[len(axes):]), requires_grad=True)
    (t + b).sum().backward()   # b's gradient: ones summed over the leading axes
    np.testing.assert_array_equal(b.grad.data, np.full(b.shape, float(np.prod(shape[:len(axes)]))))


def test_square_backward_of_a_full_sum_and_half_precision_sums():
    a = _rng(29).standard_normal((100, 10, 8))
    x = Tensor(a, requires_grad=True)
    (x ** 2).sum().backward()   # a scalar spread everywhere: the plain formula
    np.testing.assert_array_equal(x.grad.data, 2.0 * a)
    h = _rng(30).standard_normal((4096, 4)).astype(np.float16)   # leading-axis sum: NumPy's
    np.testing.assert_array_equal(kernels.add_reduce(h, (0,), False), np.add.reduce(h, axis=0))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("a_shape, b_shape", [((1, 64), (64, 128)), ((5, 3), (3, 4)), ((7, 1), (1, 6)),
                                              ((2, 5, 3), (3, 4)), ((3,), (3, 4))], ids=str)
def test_matmul_through_np_dot_matches_np_matmul_and_gradients(a_shape, b_shape, dtype):
    a = _rng(31).standard_normal(a_shape).astype(dtype)
    b = _rng(32).standard_normal(b_shape).astype(dtype)
    x, y = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    out = x @ y
    assert out.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(out.data, np.matmul(a, b), rtol=tol, atol=tol)
    w = _rng(33).standard_normal(out.shape).astype(dtype)
    (out * Tensor(w)).sum().backward()
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ((tx @ ty) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(y.grad.data, ty.grad.numpy(), rtol=tol, atol=tol)
    if a_shape[0] == 1 and len(a_shape) == 2:   # a one-row batch: b's gradient is an outer product
        np.testing.assert_array_equal(y.grad.data, a.T * w)


# --- Div's gradient for a broadcast denominator: summed back before dividing by b**2 ------

@pytest.mark.parametrize("a_shape, b_shape", [((4, 1, 3), (2, 3)), ((2, 3), (2, 1)),
                                              ((1, 2, 1), (3, 1, 1, 4)), ((5, 6), ())])
def test_div_by_a_broadcast_denominator_against_torch_in_every_mode(a_shape, b_shape):
    from opcheck import check, rng

    g = rng("div", len(a_shape), len(b_shape))
    a, b = g.standard_normal(a_shape), g.uniform(0.5, 2.0, b_shape)
    check(lambda x, y: x / y, lambda x, y: x / y, [a, b])


def test_softmax_by_division_matches_torch_gradients():
    """e / e.sum(axis, keepdims): the denominator's gradient takes the summed route."""
    from opcheck import check

    x = np.random.default_rng(5).standard_normal((6, 7))
    check(lambda t: (t.exp() / t.exp().sum(axis=1, keepdims=True)) ** 2,
          lambda t: (t.exp() / t.exp().sum(1, keepdim=True)) ** 2, [x])


@pytest.mark.parametrize("shape, axis", [((300, 300, 3), 1), ((4, 50, 6, 7), 1), ((4, 50, 6, 7), 2),
                                         ((20, 1000, 8), 1), ((6, 700, 2), 1)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("keepdims", [True, False])
def test_sum_over_one_middle_axis_matches_numpys_reduce(shape, axis, dtype, keepdims):
    """The einsum route adds up to ``_BLOCK`` rows in NumPy's order (equal bit for bit);
    more in blocks (tests/engine/test_sum_accuracy.py), the same sum up to rounding.  NaN
    propagates."""
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(dtype)
    x.flat[7] = np.nan
    out = kernels.add_reduce(x, (axis,), keepdims)
    want = np.add.reduce(x, axis=axis, keepdims=keepdims)
    assert out.dtype == want.dtype and out.shape == want.shape
    if shape[axis] <= kernels._BLOCK:
        np.testing.assert_array_equal(out, want)
    else:
        exact = np.add.reduce(x.astype(np.float64), axis=axis, keepdims=keepdims)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(out, exact, rtol=tol, atol=tol * np.sqrt(shape[axis]))


def test_pairwise_distances_gradient_against_torch_in_every_mode():
    """x[:, None] - x[None]: the gradient is summed back over a middle axis."""
    from opcheck import check

    y = np.random.default_rng(9).standard_normal((70, 3))
    check(lambda t: (-((t[:, None, :] - t[None, :, :]) ** 2).sum(axis=-1)).exp(),
          lambda t: (-((t[:, None, :] - t[None, :, :]) ** 2).sum(-1)).exp(), [y])
