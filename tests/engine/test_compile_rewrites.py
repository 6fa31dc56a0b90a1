"""Generation-time rewrites of the compiled program and the sigmoid rule, against torch.

- ``sigmoid`` is the engine's own op on the array namespace too (one node, the backward
  ``g * s * (1 - s)`` from the saved output): eager and compiled, float64 and float32, at
  large |x| (no overflow warning, no NaN);
- the running program passes number operands as 0-d arrays of the operand's dtype (same
  numbers and dtype as the Python number; float32 stays float32, ``x ** 2`` stays a power
  of the number);
- an array sliced into parts that tile it gets its gradient as one ``np.concatenate`` of the
  parts' gradients, not zeros plus a write per slice; parts that overlap or leave a gap keep
  the zeros.

Every gradient is compared with torch's in float64 at rtol 1e-6 / atol 1e-8.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from diffcompare.engine import Tensor, array_api, compile, ops

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-6, 1e-8


class _TorchXp:
    """torch's NumPy-named namespace, with torch's own sigmoid (not the contract's)."""

    def __init__(self):
        from diffcompare.problems import torch_namespace

        self._ns = torch_namespace.namespace()
        self.sigmoid = torch.sigmoid

    def maximum(self, a, b):
        return self._ns.maximum(a, torch.as_tensor(b, dtype=a.dtype))

    def __getattr__(self, name):
        return getattr(self._ns, name)


def _torch_grads(fn, arrays, wrt):
    T = [torch.tensor(a) for a in arrays]
    for i in wrt:
        T[i].requires_grad_(True)
    out = fn(_TorchXp(), *T)
    grads = torch.autograd.grad(out, [T[i] for i in wrt])
    return out.detach().numpy(), [g.numpy() for g in grads]


def _eager_grads(fn, arrays, wrt):
    T = [Tensor(a, requires_grad=i in wrt) for i, a in enumerate(arrays)]
    out = fn(array_api, *T)
    out.backward()
    return out.data, [T[i].grad.data for i in wrt]


def _check_all(fn, arrays, wrt, rtol=RTOL, atol=ATOL):
    """Eager and compiled value and gradients against torch; returns the compiled gradient."""
    want_v, want_g = _torch_grads(fn, arrays, wrt)
    g = compile(lambda *a: fn(array_api, *a), wrt=wrt)
    for value, grads in (_eager_grads(fn, arrays, wrt), g(*arrays)):
        np.testing.assert_allclose(value, want_v, rtol=rtol, atol=atol)
        for got, want in zip(grads, want_g):
            assert np.asarray(got).dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return g


# --- sigmoid --------------------------------------------------------------------------------

def _sigmoid_loss(xp, x, w):
    return (xp.sigmoid(x * w) * w).sum()


def test_sigmoid_is_the_engines_op_on_the_namespace():
    assert array_api.sigmoid is ops.sigmoid
    x = Tensor(np.array([0.3, -1.0]), requires_grad=True)
    assert array_api.sigmoid(x).grad_fn.name() == "SigmoidBackward0"


@pytest.mark.parametrize("shapes", [((5,), (5,)), ((2, 1, 3), (4, 1)), ((1, 3), (2, 1, 3))])
def test_sigmoid_matches_torch_eager_and_compiled_with_broadcasting(shapes):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) * 3 for s in shapes]
    _check_all(_sigmoid_loss, arrays, (0, 1))


@pytest.mark.parametrize("dtype, big", [(np.float64, 800.0), (np.float32, 100.0)])
def test_sigmoid_at_large_inputs_is_finite_and_quiet(dtype, big):
    x = np.array([-big, -40.0, -20.0, -1.0, 0.0, 1.0, 20.0, 40.0, big], dtype)
    w = np.ones_like(x)
    want_v, (want_g, _) = _torch_grads(_sigmoid_loss, [x, w], (0, 1))
    g = compile(lambda *a: _sigmoid_loss(array_api, *a), wrt=(0, 1))
    tol = dict(rtol=1e-6, atol=1e-8) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # an overflow warning fails the test
        for value, (gx, _) in (_eager_grads(_sigmoid_loss, [x, w], (0, 1)), g(x, w)):
            assert np.asarray(value).dtype == dtype and gx.dtype == dtype
            assert np.all(np.isfinite(gx))
            np.testing.assert_allclose(gx, want_g, **tol)
            np.testing.assert_allclose(value, want_v, **tol)
        s = ops.sigmoid(Tensor(x)).data
    # relatively accurate in the tail too (sigmoid(-40) = 4.2e-18), down to the subnormals; the
    # tolerance leaves room for another CPU's exp and log (a few ulps), not for a tail rounded away
    np.testing.assert_allclose(s, torch.sigmoid(torch.tensor(x)).numpy(),
                               rtol=1e-13 if dtype == np.float64 else 1e-5, atol=np.finfo(dtype).tiny)
    assert s[-1] == 1.0 and s[4] == 0.5 and bool(s[0] == 0.0) == (dtype == np.float64)


def _log_sigmoid_loss(xp, x):
    return xp.log(xp.sigmoid(x)).sum()


def test_log_sigmoid_stays_finite_where_sigmoid_is_tiny():
    # log(sigmoid(x)) = x - log1p(exp(x)): -40 and -300, gradient 1 - sigmoid(x) = 1; a
    # sigmoid rounded to 0 there (the tanh form) gives -inf and a NaN gradient
    x = np.array([-300.0, -40.0, -20.0, 0.5, 30.0])
    _check_all(_log_sigmoid_loss, [x], (0,))


def test_sigmoid_compiles_to_few_steps():
    g = compile(lambda x: ops.sigmoid(x).sum(), wrt=(0,))
    g(np.linspace(-2, 2, 14))
    forward, backward = g.ssa_source.split("# backward")
    # exp(-logaddexp(0, -x)), and g * s * (1 - s) from the saved output s
    assert forward.count("np.logaddexp(") == 1 and forward.count(" = ") == 3      # and the sum
    assert "np.exp" not in backward and "logaddexp" not in backward
    assert backward.count(" = ") <= 3


# --- number operands as 0-d arrays ------------------------------------------------------------

def _numbers(xp, x, y):
    return ((1 - x * 0.5) * y / 3 + (x + 2.5) ** 2 - 0.25 * xp.maximum(x, 0.1)).sum()


@pytest.mark.parametrize("shapes", [((4,), (4,)), ((3, 1), (1, 4)), ((1, 2, 3), (4, 1, 3))])
def test_number_operands_match_torch(shapes):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s) for s in shapes]
    g = _check_all(_numbers, arrays, (0, 1))
    src = g.source
    assert "c_0_5" in src and "c_2_5" in src and "** 2" in src     # the power keeps its number
    assert g.ssa_source.count("0.5") >= 1 and "c_0_5" not in g.ssa_source   # readable form


def test_number_operands_keep_float32():
    rng = np.random.default_rng(6)
    x, y = (rng.standard_normal(5).astype(np.float32) for _ in range(2))
    g = compile(lambda *a: _numbers(array_api, *a), wrt=(0, 1))
    value, grads = g(x, y)
    assert np.asarray(value).dtype == np.float32 and all(v.dtype == np.float32 for v in grads)
    assert "c_0_5_float32" in g.source
    want_v, want_g = _torch_grads(_numbers, [x.astype(np.float64), y.astype(np.float64)], (0, 1))
    for got, want in zip(grads, want_g):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# --- the gradient of parts that tile an array ------------------------------------------------

def _parts_1d(xp, z):
    a, b, c, d = z[0:3], z[3:7], z[7:9], z[9:]
    return (xp.tanh(a) * 2).sum() + (b * b).sum() + xp.sin(c).sum() + (xp.exp(d) * a[:1]).sum()


def _parts_leading(xp, z):
    # parts along the last axis of a 3-D array, with leading and size-1 axes kept
    a, b = z[..., :2], z[..., 2:]
    return (xp.tanh(a) * b[..., :2]).sum() + (b ** 3).sum()


def _parts_axis1(xp, z, w):
    a, b, c = z[:, 0:1], z[:, 1:3], z[:, 3:]
    return (a * w).sum() + xp.sigmoid(b).sum() + (c * c * w).sum()


@pytest.mark.parametrize("fn, shapes, wrt", [
    (_parts_1d, [(12,)], (0,)),
    (_parts_leading, [(2, 1, 5)], (0,)),
    (_parts_axis1, [(3, 6), (3, 1)], (0, 1)),
])
def test_parts_that_tile_an_array_get_one_concatenate(fn, shapes, wrt):
    rng = np.random.default_rng(8)
    arrays = [rng.standard_normal(s) for s in shapes]
    g = _check_all(fn, arrays, wrt)
    backward = g.source.split("# backward")[1]
    assert "np.concatenate" in backward and "np.zeros" not in backward


def _parts_gap(xp, z):
    return (z[0:3] * z[0:3]).sum() + xp.tanh(z[5:]).sum()          # z[3:5] gets no gradient


def _parts_overlap(xp, z):
    return (z[0:4] * 2).sum() + xp.tanh(z[3:]).sum() + (z[:2] ** 2).sum()


@pytest.mark.parametrize("fn", [_parts_gap, _parts_overlap])
def test_parts_that_do_not_tile_keep_the_zeros(fn):
    z = np.random.default_rng(9).standard_normal(8)
    g = _check_all(fn, [z], (0,))
    assert "np.zeros" in g.source.split("# backward")[1]


# --- broadcasts the elementwise step does itself ----------------------------------------------

def _normalised(xp, x, y):
    e = xp.exp(x)
    return (xp.log(e / xp.sum(e)) * y).sum()        # the sum's gradient is spread over x's shape


def _explicit_broadcast(xp, s, t):
    # the broadcast makes the product's shape: (1,) * (1,) alone would be (1,)
    return (xp.broadcast_to(s, (4,)) * t * xp.exp(s)).sum()


@pytest.mark.parametrize("fn, shapes", [(_normalised, [(6,), (6,)]), (_normalised, [(2, 1, 3), (4, 1)]),
                                        (_explicit_broadcast, [(1,), (1,)])])
def test_broadcasts_left_to_numpy_match_torch(fn, shapes):
    rng = np.random.default_rng(10)
    arrays = [rng.standard_normal(s) for s in shapes]
    g = _check_all(fn, arrays, (0, 1))
    if fn is _normalised:
        assert "broadcast_to" not in g.source and "broadcast_to" in g.ssa_source


# --- rows added into on every step of an unrolled loop ----------------------------------------

def _rows(xp, W, X):
    total = 0.0
    h = X[0] * 0
    for t in range(X.shape[0]):
        h = xp.tanh(W[0] * X[t] + W[1] * h)
        total = total + (h * W[2]).sum()
    return total


@pytest.mark.parametrize("shapes", [[(3, 5), (4, 5)], [(3,), (4,)], [(3, 2, 5), (4, 1, 5)]])
def test_rows_summed_over_a_loop_match_torch(shapes):
    rng = np.random.default_rng(11)
    arrays = [rng.standard_normal(s) for s in shapes]
    g = _check_all(_rows, arrays, (0, 1))
    backward = g.source.split("# backward")[1]
    # W's gradient: a view of each row made once (W[1, ...] of a vector is a 0-d view), then +=
    views = re.findall(r"^    (\w+) = \w+\[1, \.\.\.\]$", backward, re.M)
    assert len(views) == 1 and backward.count(f"    {views[0]} += ") == shapes[1][0]


# --- the same step on side-by-side slices: one step on their union (compiler/fusion.py) -------

def _gates(xp, z, c):
    # an LSTM cell's gates: three sigmoids and a tanh on adjacent quarters of the last axis
    n = z.shape[-1] // 4
    f, i, o = (xp.sigmoid(z[..., k * n:(k + 1) * n]) for k in range(3))
    change = xp.tanh(z[..., 3 * n:])
    cell = c * f + i * change
    return (o * xp.tanh(cell)).sum()


def _pairs(xp, z):
    # the backward of concatenate([x, h, x, h]) adds quarter 0 to 2 and 1 to 3
    n = z.shape[0] // 4
    return (xp.exp(z[0:n] + z[2 * n:3 * n]) * (z[n:2 * n] + z[3 * n:])).sum()


def _different_numbers(xp, z):
    return (xp.tanh(z[0:3] * 2.0) + xp.tanh(z[3:6] * 3.0)).sum()      # not the same step


@pytest.mark.parametrize("fn, shapes, wrt, fused", [
    (_gates, [(8,), (2,)], (0, 1), True),
    (_gates, [(3, 1, 8), (2, 1)], (0, 1), True),            # leading and size-1 axes
    (_pairs, [(12,)], (0,), True),
    (_different_numbers, [(6,)], (0,), False),
])
def test_steps_on_adjacent_slices_fuse_and_match_torch(fn, shapes, wrt, fused):
    rng = np.random.default_rng(12)
    arrays = [rng.standard_normal(s) for s in shapes]
    g = _check_all(fn, arrays, wrt)
    forward = g.source.split("# backward")[0]
    if fn is _gates:       # one logaddexp and one exp for the three sigmoids
        assert forward.count("np.logaddexp(") == 1 and forward.count("np.exp(") == 1
        assert forward.count("np.tanh(") == 2        # the change, the cell
    elif fn is _pairs:                     # two adds: one on the halves
        assert "[0:6]" in forward and "[6:12]" in forward and forward.count(" + ") == 1
    else:
        assert forward.count("np.tanh(") == 2 and ("[0:6]" in forward) is fused


def test_number_operand_names_never_hide_behind_an_argument():
    def f(c_0_5, x):
        return (c_0_5 * 0.5 + x * 0.5).sum()

    g = compile(f, wrt=(0, 1))
    value, grads = g(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    assert value == 5.0 and [list(v) for v in grads] == [[0.5, 0.5], [0.5, 0.5]]
    assert "c_0_5_ " in g.source or "c_0_5_\n" in g.source
