"""engine/kernels.py: each kernel equals the plain NumPy form its docstring names (float64,
shapes on both sides of its size thresholds, broadcasting with extra leading and size-1
axes), and ``compile`` records the traced kernels as calls, so compiled programs take the
same fast paths; the compiled gradients of the objectives whose programs changed (GMM,
k-means, bundle adjustment) are checked against torch."""
from __future__ import annotations

import numpy as np
import pytest

from diffcompare.engine import compile as engine_compile, kernels


def _rng(seed):
    return np.random.default_rng(seed)


LARGE, SHORT, FEW = kernels._LARGE, kernels._SHORT_AXIS, kernels._FEW


@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.multiply, np.true_divide])
@pytest.mark.parametrize("xs, ys", [
    ((300, 1, 8), (100, 8)),                    # a short run repeated: np.repeat
    ((1, 1000, 10), (10, 1, 10)),               # GMM's x - means: both broadcast
    ((20000, 3), (20000, 1)),                   # a short last axis: by position
    ((20000, 4), (20000, 1)),                   # one longer: the ufunc
    ((kernels._MIN_RESULT // 8, 1, 8), (1, 8)), # the result at its threshold
    ((kernels._MIN_RESULT // 8 - 1, 1, 8), (1, 8)),
    ((2, 1, 1, 8), (3, 900, 8)),                # extra leading and size-1 axes
], ids=str)
def test_broadcast_binary_equals_the_ufunc(ufunc, xs, ys):
    x, y = _rng(10).standard_normal(xs), _rng(11).standard_normal(ys) + 3.0
    for a, b in ((x, y), (y, x)):
        np.testing.assert_array_equal(kernels.broadcast_binary(ufunc, a, b), ufunc(a, b))
        np.testing.assert_array_equal(kernels.binary(ufunc, a, b), ufunc(a, b))


def test_split_and_broadcast_to_equal_numpy():
    x = _rng(12).standard_normal((3, 56))
    for axis, cuts in ((1, (14, 28, 42)), (0, (1,)), (-1, (0, 56))):
        got, want = kernels.split(x, cuts, axis), np.split(x, cuts, axis)
        assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want))
    for v in (np.float64(2.5), np.float32(2.5), np.float16(2.5), np.array(2.5), np.array([2.5]),
              np.array([[1.0, 2.0]])):
        got = kernels.broadcast_to(v, (4, 3, 2))
        np.testing.assert_array_equal(got, np.broadcast_to(v, (4, 3, 2)))
        assert not got.flags.writeable


@pytest.mark.parametrize("shape, axes", [
    ((LARGE // 8, 8), (1,)),                  # short last axis, at the size threshold: @ ones
    ((LARGE // 8 - 1, 8), (1,)),              # one row below it: add.reduce
    ((LARGE // SHORT, SHORT), (1,)),          # the longest short axis
    ((LARGE // SHORT + 1, SHORT + 1), (1,)),  # one past it
    ((3, 50, 30), (0,)), ((3, 50, 30), (0, 1)),   # leading axes: einsum
    ((40, 30, 4), (1,)),                      # one middle axis: einsum
    ((1, 4096, 1), (2,)), ((2, 1, 4096), (0,)), ((5, 4), (1,)),
], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_add_reduce_equals_numpy(shape, axes, keepdims):
    x = _rng(0).standard_normal(shape)
    out = kernels.add_reduce(x, axes, keepdims)
    want = np.add.reduce(x, axis=axes, keepdims=keepdims)
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("shape, target", [
    ((LARGE, 3), (3,)), ((10, 4, 3), (4, 1)), ((2, 500, 5), (1, 5)), ((7, 3), (7, 3)),
    ((1, 7, 3), (7, 3)), ((LARGE // 4, 4), (LARGE // 4, 1)),
], ids=str)
def test_sum_to_equals_summing_the_broadcast_axes(shape, target):
    x = _rng(1).standard_normal(shape)
    lead = len(shape) - len(target)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(target) if n == 1 and shape[lead + i] != 1)
    want = x.sum(axis=axes, keepdims=True).reshape(target) if axes else x.reshape(target)
    np.testing.assert_allclose(kernels.sum_to(x, target), want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("ufunc", [np.maximum, np.minimum])
@pytest.mark.parametrize("shape", [(FEW * 64 // 5 + 1, 5), (FEW * 64 // 5 - 1, 5), (64, FEW), (64, FEW + 1),
                                   (2, 3, FEW * 64 // 3, 3)], ids=str)
def test_extreme_reduce_equals_numpy_nan_included(ufunc, shape):
    x = _rng(2).standard_normal(shape)
    x.reshape(-1)[7] = np.nan
    for axes in [(x.ndim - 1,), (0,)]:
        out = kernels.extreme_reduce(x, axes, ufunc)
        np.testing.assert_array_equal(out, ufunc.reduce(x, axis=axes, keepdims=True))


@pytest.mark.parametrize("gshape, shape", [
    ((1000, 10, 10), (10, 10)), ((1000, 10, 10), (1, 10, 10)), ((LARGE // 4, 4), (4,)),
    ((LARGE // 4 - 1, 4), (4,)), ((50, 100), (50, 1)), ((2, 3, 1000), (1, 3, 1)),
    ((10, 500, 10), (10, 1, 10)),                          # a middle axis: einsum
    ((LARGE // SHORT, SHORT), (LARGE // SHORT, 1)),        # a short last axis: product, @ ones
    ((LARGE // SHORT, SHORT + 1), (LARGE // SHORT, 1)),    # one longer: einsum
    ((LARGE, 2), (1, 1)), ((LARGE, 2), ()),                # one element: add.reduce
], ids=str)
def test_mul_sum_to_equals_the_product_summed_back(gshape, shape):
    g, x = _rng(3).standard_normal(gshape), _rng(4).standard_normal(gshape)
    np.testing.assert_allclose(kernels.mul_sum_to(g, x, shape), kernels.sum_to(g * x, shape),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kernels.mul_sum_to(g, x, shape).sum(), (g * x).sum(), rtol=1e-10)


@pytest.mark.parametrize("shape", [(1000, 10, 10), (LARGE // 4, 4), (LARGE // 4 - 1, 4), (5, 1, 3)], ids=str)
def test_double_product_equals_g_times_2_times_a_for_spread_and_dense_g(shape):
    a = _rng(5).standard_normal(shape)
    spread = np.broadcast_to(_rng(6).standard_normal(shape[:-1] + (1,)), shape)   # zero last stride
    for g in (spread, np.ascontiguousarray(spread), np.broadcast_to(np.float64(1.5), shape)):
        np.testing.assert_array_equal(kernels.double_product(g, a), g * 2.0 * a)


@pytest.mark.parametrize("shape, key", [
    ((4, 3), np.array([0, 1, 1, 3, 0])),                          # few columns: add.at per column
    ((6, 5, 4), np.array([5, 0, 5, 5, 2, 1, 0])),                 # many columns: bincount
    ((6, kernels._FEW_COLUMNS), np.array([5, 0, 5, 1])),          # the most columns by add.at
    ((6, kernels._FEW_COLUMNS + 1), np.array([5, 0, 5, 1])),      # one more: bincount
    ((6, 9), np.array([-1, 0, -1, 2])),                           # negative indices
    ((5,), np.array([4, 4, 0, 1])),                                # 1-D rows
    ((4, 3), (np.array([0, 1, 1]), np.array([2, 2, 0]))),          # not a row gather: add.at
], ids=["few-columns", "bincount", "at-threshold", "past-threshold", "negative", "1-D", "pairs"])
def test_index_add_equals_np_add_at(shape, key):
    idx = key if isinstance(key, tuple) else (key,)
    g = _rng(7).standard_normal(np.zeros(shape)[idx].shape)
    want = np.zeros(shape)
    np.add.at(want, key, g)
    np.testing.assert_allclose(kernels.index_add(g, key, shape, True), want, rtol=1e-14, atol=1e-15)
    basic = (slice(1, 3),)
    out = kernels.index_add(np.ones((2,) + shape[1:]), basic, shape, False)
    assert out[1:3].sum() == 2 * np.prod(shape[1:]) and out.sum() == out[1:3].sum()


def test_take_rows_equals_indexing():
    x = _rng(8).standard_normal((6, 4, 2))
    for key in (np.array([5, 0, 0, -1]), np.array([], dtype=np.intp), (slice(None), np.array([3, 1]))):
        np.testing.assert_array_equal(kernels.take_rows(x, key), x[key])


def test_compiled_program_calls_the_kernels():
    """A sum over a short last axis and a row scatter are calls of the kernels in the
    generated code, not ``.sum(axis=...)`` and ``np.add.at`` (which they are faster than)."""
    def f(table, x, idx):
        return ((table[idx] * x) ** 2).sum(axis=1).sum()

    rng = _rng(9)
    table, x, idx = rng.standard_normal((50, 8)), rng.standard_normal((LARGE // 8, 8)), rng.integers(0, 50, LARGE // 8)
    g = engine_compile(f, wrt=(0, 1))
    value, (gt, gx) = g(table, x, idx)
    src = g.source
    assert "add_reduce(" in src and "index_add(" in src and "take_rows(" in src
    assert "np.add.at" not in src and "broadcast_binary" not in src   # no broadcast repeated
    rows = table[idx]
    want_gt = np.zeros_like(table)
    np.add.at(want_gt, idx, 2 * rows * x * x)
    np.testing.assert_allclose(value, ((rows * x) ** 2).sum(), rtol=1e-12)
    np.testing.assert_allclose(gt, want_gt, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx, 2 * rows * rows * x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, size", [("gmm", 10), ("kmeans", 16), ("bundle_adjustment", 8)])
def test_compiled_objectives_match_torch(name, size):
    pytest.importorskip("torch")
    from diffcompare import backends, problems

    p = problems.get(name)
    inputs, cot = p.inputs(size, 0), p.cotangent(size, 0)
    got = backends.compute_gradient(backends.get("engine-compiled"), p, inputs, cot)
    want = backends.compute_gradient(backends.get("torch"), p, inputs, cot)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


def test_compiled_broadcast_repeats_where_eager_does_and_stays_an_operator_elsewhere():
    def f(x, c):
        return ((x[:, None, :] - c) ** 2).sum()

    rng = _rng(13)
    x, c = rng.standard_normal((300, 8)), rng.standard_normal((100, 8))
    g = engine_compile(f, wrt=(0, 1))
    value, (gx, gc) = g(x, c)
    assert "broadcast_binary(np.subtract" in g.ssa_source
    d = x[:, None, :] - c
    np.testing.assert_allclose(value, (d ** 2).sum(), rtol=1e-12)
    np.testing.assert_allclose(gx, 2 * d.sum(axis=1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gc, -2 * d.sum(axis=0), rtol=1e-12, atol=1e-12)
    small = engine_compile(f, wrt=(0, 1))
    small(x[:3], c[:4])
    assert "broadcast_binary" not in small.ssa_source and " - " in small.ssa_source


@pytest.mark.parametrize("ashape, gcols", [
    ((1000, 784), 50), ((LARGE // 8, 8), 7), ((LARGE // 8 - 1, 8), 7),   # size threshold
    ((LARGE // 8, 8), 8), ((64, 10), 50),                                # not tall: a.T @ g
], ids=str)
def test_mm_tn_equals_a_transposed_times_g(ashape, gcols):
    a, g = _rng(14).standard_normal(ashape), _rng(15).standard_normal((ashape[0], gcols))
    np.testing.assert_allclose(kernels.mm_tn(a, g), a.T @ g, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kernels.transposed_product(a, g), a.T @ g, rtol=1e-12, atol=1e-12)
