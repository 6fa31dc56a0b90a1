"""NumPy's reductions and scans on the engine: prod, var, std, cumsum, cumprod, trace,
nansum, nanmean, average (issue 19).

Each case goes through ``opcheck.check``: value, VJP, second-order VJP (create_graph), JVP
and the compiled gradient against PyTorch (or JAX) in float64.  Kinks are tested at the
boundary: prod/cumprod with one and several zeros (exact, as torch's ProdBackward0 and
CumprodBackward0), std where it is 0 (gradient 0, as torch's).
"""
import numpy as np
import pytest
import torch

import diffcompare.engine as E
from diffcompare.engine import Tensor, array_api as xp

from opcheck import check, rng


def normal(shape, key=0):
    return rng("reductions", key).standard_normal(shape)


# --- prod ---------------------------------------------------------------------------------

def _torch_prod(axis, keepdims):
    def f(a):
        if axis is None:
            out = a.prod()
            return out.reshape((1,) * a.ndim) if keepdims else out
        axes = (axis,) if isinstance(axis, int) else axis
        for ax in sorted((x % a.ndim for x in axes), reverse=True):
            a = a.prod(ax, keepdim=True)
        if not keepdims:
            a = a.reshape([n for i, n in enumerate(a.shape) if i not in {x % a.ndim for x in axes}])
        return a
    return f


@pytest.mark.parametrize("shape,axis,keepdims", [
    ((5,), None, False), ((3, 4), None, True), ((3, 4), 1, False), ((3, 4), 0, True),
    ((2, 3, 4), (0, 2), False), ((2, 3, 4), -1, True), ((1, 3), 0, False), ((3, 1), 1, True),
    ((0, 3), 0, False), ((2, 0), 1, True),
])
def test_prod(shape, axis, keepdims):
    check(lambda a: E.prod(a, axis, keepdims), _torch_prod(axis, keepdims), [normal(shape, 1)])


@pytest.mark.parametrize("zeros", [[(1, 2)], [(0, 0), (2, 3)], [(1, 0), (1, 3)], [(0, 1), (1, 1), (2, 1)]])
@pytest.mark.parametrize("axis", [None, 1, 0])
def test_prod_with_zeros_is_exact(zeros, axis):
    """One zero in a slice: the zero's gradient is the product of the others, the rest 0;
    two or more: all 0 -- no nan, no inf, equal to torch's (also its second order)."""
    x = normal((3, 4), 2)
    for z in zeros:
        x[z] = 0.0
    check(lambda a: E.prod(a, axis), _torch_prod(axis, False), [x])
    t = Tensor(x, requires_grad=True)
    E.prod(t, axis).sum().backward()
    assert np.isfinite(t.grad.data).all()


def test_prod_one_zero_gradient_is_the_product_of_the_rest():
    x = np.array([2.0, 0.0, 3.0, -1.5])
    t = Tensor(x, requires_grad=True)
    E.prod(t).backward()
    np.testing.assert_array_equal(t.grad.data, [0.0, 2.0 * 3.0 * -1.5, 0.0, 0.0])


def test_prod_node_names_and_method():
    t = Tensor(normal((2, 3)), requires_grad=True)
    assert E.prod(t).grad_fn.name() == "ProdBackward0"
    assert t.prod(1).grad_fn.name() == "ProdBackward1"
    assert t.prod(dim=0, keepdim=True).shape == (1, 3)
    assert xp.prod is E.prod


# --- var / std ----------------------------------------------------------------------------

def _torch_moment(name, axis, ddof, keepdims):
    def f(a):
        dim = tuple(range(a.ndim)) if axis is None else axis
        return getattr(torch, name)(a, dim=dim, correction=ddof, keepdim=keepdims)
    return f


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("shape,axis,ddof,keepdims", [
    ((6,), None, 0, False), ((3, 4), 1, 1, False), ((3, 4), 0, 0, True),
    ((2, 3, 4), (0, 2), 1, True), ((2, 3, 4), -1, 2, False), ((4, 1), 0, 0, False),
])
def test_var_std(name, shape, axis, ddof, keepdims):
    check(lambda a: getattr(E, name)(a, axis, ddof=ddof, keepdims=keepdims),
          _torch_moment(name, axis, ddof, keepdims),
          [normal(shape, 3)])


def test_std_at_zero_has_gradient_zero_as_torch():
    """A slice of equal elements: std 0; PyTorch masks its gradient to 0 (not nan)."""
    x = np.array([[1.5, 1.5, 1.5], [0.0, 1.0, 3.0]])
    t = Tensor(x, requires_grad=True)
    E.std(t, 1).sum().backward()
    np.testing.assert_array_equal(t.grad.data[0], 0.0)
    # value, VJP and the compiled gradient as torch's (second order: torch's own formula
    # differentiates 1/std at 0 to nan/inf, which no rule should copy)
    check(lambda a: E.std(a, 1), _torch_moment("std", 1, 0, False), [x], second=False, forward=False)


def test_var_std_methods_are_torch_style():
    x = normal((3, 4), 4)
    t = Tensor(x)
    np.testing.assert_allclose(t.var().data, np.var(x, ddof=1))            # unbiased, as torch
    np.testing.assert_allclose(t.var(1, unbiased=False).data, np.var(x, 1))
    np.testing.assert_allclose(t.std(dim=0, correction=0, keepdim=True).data, np.std(x, 0, keepdims=True))
    np.testing.assert_allclose(xp.var(t).data, np.var(x))                  # NumPy's, ddof=0
    np.testing.assert_allclose(xp.std(t, axis=1, ddof=1).data, np.std(x, 1, ddof=1))
    tg = Tensor(x, requires_grad=True)
    assert tg.var(1).grad_fn.name() == "VarBackward0"
    assert tg.std().grad_fn.name() == "StdBackward0"


# --- cumsum / cumprod ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("shape,axis", [((5,), 0), ((3, 4), 1), ((3, 4), -2), ((2, 3, 4), 1),
                                        ((2, 3), None), ((1, 3), 0), ((0, 3), 1)])
def test_scans(name, shape, axis):
    def ref(a):
        return getattr(torch, name)(a.reshape(-1) if axis is None else a, 0 if axis is None else axis)
    check(lambda a: getattr(E, name)(a, axis), ref, [normal(shape, 5)])


@pytest.mark.parametrize("zeros", [[(0, 0)], [(1, 2)], [(0, 3)], [(1, 1), (1, 3)], [(2, 0), (2, 1), (2, 2)]])
def test_cumprod_with_zeros_is_exact(zeros):
    x = normal((3, 4), 6)
    for z in zeros:
        x[z] = 0.0
    check(lambda a: E.cumprod(a, 1), lambda a: torch.cumprod(a, 1), [x])


def test_scan_node_names_and_methods():
    t = Tensor(normal((2, 3)), requires_grad=True)
    assert t.cumsum(1).grad_fn.name() == "CumsumBackward0"
    assert t.cumprod(dim=0).grad_fn.name() == "CumprodBackward0"
    assert E.cumsum(t).shape == (6,)   # NumPy: axis=None flattens


# --- trace, nansum, nanmean, average --------------------------------------------------------

@pytest.mark.parametrize("shape,offset,axis1,axis2", [((3, 3), 0, 0, 1), ((3, 4), 1, 0, 1),
                                                      ((4, 3), -2, 0, 1), ((2, 3, 4), 0, 2, 1)])
def test_trace(shape, offset, axis1, axis2):
    check(lambda a: E.trace(a, offset, axis1, axis2),
          lambda a: torch.diagonal(a, offset, axis1, axis2).sum(-1), [normal(shape, 7)])


def _with_nans(shape, key):
    x = normal(shape, key)
    x.flat[::3] = np.nan
    return x


@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), (0, True)])
def test_nansum_nanmean(axis, keepdims):
    x = _with_nans((3, 4), 8)
    dim = tuple(range(2)) if axis is None else axis
    check(lambda a: E.nansum(a, axis, keepdims), lambda a: torch.nansum(a, dim, keepdim=keepdims), [x])
    check(lambda a: E.nanmean(a, axis, keepdims), lambda a: torch.nanmean(a, dim, keepdim=keepdims), [x])


@pytest.mark.parametrize("shape,wshape,axis", [((3, 4), (3, 4), None), ((3, 4), (4,), 1),
                                               ((3, 4), (3,), 0), ((2, 3, 4), (2, 3, 4), (0, 2))])
def test_average_with_weights(shape, wshape, axis):
    a, w = normal(shape, 9), rng("w", 9).uniform(0.5, 2.0, wshape)

    def ref(a, w):
        if w.shape != a.shape:
            ax = axis % a.ndim
            w = w.reshape((1,) * ax + (-1,) + (1,) * (a.ndim - ax - 1)).expand(a.shape)
        dim = tuple(range(a.ndim)) if axis is None else axis
        return (a * w).sum(dim) / w.sum(dim)
    check(lambda a, w: E.average(a, axis, w), ref, [a, w])


def test_average_without_weights_and_returned():
    x = normal((3, 4), 10)
    out, n = E.average(Tensor(x), 1, returned=True)
    np.testing.assert_allclose(out.data, np.average(x, 1))
    np.testing.assert_array_equal(n.data, np.full(3, 4.0))


# --- dtypes and errors --------------------------------------------------------------------

@pytest.mark.parametrize("fn", [lambda a: E.prod(a, 1), lambda a: E.var(a, 0), lambda a: E.std(a),
                                lambda a: E.cumsum(a, 1), lambda a: E.cumprod(a, 0),
                                lambda a: E.trace(a), lambda a: E.nanmean(a, 1),
                                lambda a: E.average(a, 0, np.ones(3, np.float32))])
def test_float32_stays_float32(fn):
    t = Tensor(normal((3, 4), 11).astype(np.float32), requires_grad=True)
    out = fn(t)
    assert out.dtype == np.float32
    out.sum().backward()
    assert t.grad.dtype == np.float32


@pytest.mark.parametrize("fn", [lambda a: E.prod(a, 1), lambda a: E.prod(a), lambda a: E.cumprod(a, 1),
                                lambda a: E.std(a, 1)])
def test_float32_stays_float32_at_zeros(fn):
    x = normal((3, 4), 13).astype(np.float32)
    x[0, 1] = x[1, 1] = x[1, 3] = 0.0
    x[2] = 1.0
    t = Tensor(x, requires_grad=True)
    out = fn(t)
    (g,) = E.autograd.grad(out.sum(), [t], create_graph=True)
    assert out.dtype == g.dtype == np.float32
    (h,) = E.autograd.grad((g * g).sum(), [t])
    assert h.dtype == np.float32 and np.isfinite(h.data).all()


def test_bad_axes_say_what_to_do():
    t = Tensor(normal((2, 3), 12))
    with pytest.raises(ValueError, match="out of bounds"):
        E.cumsum(t, 2)
    with pytest.raises(ValueError, match="out of bounds"):
        E.prod(t, 3)
    with pytest.raises(ValueError, match="weights"):
        E.average(t, None, np.ones(3))
