"""Long sums are as accurate as torch's: ``kernels.add_reduce`` / ``sum_to`` / ``mul_sum_to``
add the rows of an axis other than the last in blocks of at most ``kernels._BLOCK``, then the
blocks' sums (NumPy's own reduce adds them one after another: a float32 bias gradient over
1e5 rows came out 40-90x less accurate than torch's, and ADBench's GMM gradient at
n = 1e5 400x).  Each float32 result is compared with the float64 sum of the same float32
numbers, in the engine eager and compiled and in torch, with a bound of a few roundings
either way: 16 u relative to the sum of magnitudes (u = 2**-24), which a sum of n rows in
order exceeds from a few thousand rows (its error grows with n u, its typical error with
sqrt(n) u; blocked summation's with ``_BLOCK`` u times the number of levels, typically
sqrt(3 * 64) u = 14 u at most for n <= 64**3), and 4x torch's own error."""
from __future__ import annotations

import math

import numpy as np
import pytest

import diffcompare.engine as E
from diffcompare.engine import Tensor, compile as engine_compile, kernels

U32 = 2.0 ** -24
U64 = 2.0 ** -53
BLOCK = kernels._BLOCK


def _rng(key):
    return np.random.default_rng([32, key])


def _exact_sum(x, axes):
    """The sum over ``axes`` of ``x``'s own numbers, rounded once (``math.fsum``), as float64."""
    kept = [i for i in range(x.ndim) if i not in axes]
    cols = np.moveaxis(x.astype(np.float64), list(axes), list(range(len(axes)))).reshape(
        math.prod(x.shape[i] for i in axes), -1)
    return np.array([math.fsum(c) for c in cols.T]).reshape([x.shape[i] for i in kept])


def _relative_error(got, exact, magnitude):
    return float(np.max(np.abs(np.asarray(got, np.float64).reshape(exact.shape) - exact)) / np.max(magnitude))


try:
    import torch
except ImportError:      # the bounds of a few roundings are still checked
    torch = None


LONG = [((100_000, 3), (0,)),              # a bias gradient over 1e5 rows
        ((2, 50_000, 1, 3), (0, 1)),       # two leading axes, a size-1 axis kept
        ((5, 20_000, 3), (1,)),            # a middle axis, rows past the last whole block
        ((3, 4, 1000, 2, 5), (0, 2)),      # two runs: 3 rows, then 1000 within each
        ((20_000, 70), (0,)),              # long rows: blocks of consecutive rows
        ((1500, 2), (0,))]                 # below kernels._LARGE elements, 1500 rows


@pytest.mark.parametrize("dtype, u", [(np.float32, U32), (np.float64, U64)], ids=["float32", "float64"])
@pytest.mark.parametrize("shape, axes", LONG, ids=str)
def test_a_long_sum_is_within_a_few_roundings_and_torchs_error(shape, axes, dtype, u):
    # uniform in [0, 1): a sum of same-sign numbers, where adding in order loses the most
    x = _rng(sum(shape)).random(shape).astype(dtype)
    exact, magnitude = _exact_sum(x, axes), _exact_sum(np.abs(x), axes)
    eager = E.sum(Tensor(x), axis=axes).data
    compiled = engine_compile(lambda t: (E.sum(t, axis=axes) * 1.0).sum())
    errors = {"kernel": _relative_error(kernels.add_reduce(x, axes, False), exact, magnitude),
              "eager": _relative_error(eager, exact, magnitude)}
    # the compiled forward sums as the kernel does (its value is the sum of the sums)
    value, _ = compiled(x)
    errors["compiled"] = abs(float(value) - math.fsum(exact.ravel())) / float(np.sum(magnitude))
    for name, err in errors.items():
        assert err <= 16 * u, (name, err / u)
    if torch is not None:
        torch_err = _relative_error(torch.from_numpy(x).sum(dim=axes).numpy(), exact, magnitude)
        assert errors["kernel"] <= 4 * max(torch_err, u), (errors["kernel"] / u, torch_err / u)


@pytest.mark.parametrize("rows", [BLOCK, BLOCK + 1, 2 * BLOCK, 3 * BLOCK + 5])
@pytest.mark.parametrize("cols", [3, kernels._SHORT_AXIS])   # short rows by slabs, long rows by blocks
def test_block_boundary_orders(rows, cols):
    """Up to ``_BLOCK`` rows are added in order (NumPy's reduce, bit for bit); past it, the
    first ``_BLOCK * m`` rows give m partial sums of ``_BLOCK`` rows, then the rest in order."""
    x = _rng(rows + cols).standard_normal((2, rows, cols))
    got = kernels.add_reduce(x, (1,), False)
    if rows <= BLOCK:
        np.testing.assert_array_equal(got, np.add.reduce(x, axis=1))
        return
    m = rows // BLOCK
    if cols < kernels._SHORT_AXIS:     # slabs: partial j adds rows j, j + m, ...
        partial = np.add.reduce(x[:, :m * BLOCK].reshape(2, BLOCK, m, cols), axis=1)
    else:                              # blocks of consecutive rows
        partial = np.add.reduce(x[:, :m * BLOCK].reshape(2, m, BLOCK, cols), axis=2)
    want = np.add.reduce(partial, axis=1) + np.add.reduce(x[:, m * BLOCK:], axis=1)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape,axes", [((100, 0), (0,)), ((3, 100, 0), (1,)), ((0, 100, 5), (1,)),
                                        ((70, 0, 3), (0, 1)), ((0, 3), (0,))])
@pytest.mark.parametrize("keepdims", [False, True])
def test_a_long_axis_of_an_empty_array_sums_to_numpys_zeros(shape, axes, keepdims):
    """(100, 0) over its 100 rows once failed: a reshape to (1, -1, 0) is ambiguous."""
    x = np.zeros(shape, np.float32)
    got = kernels.add_reduce(x, axes, keepdims)
    want = np.add.reduce(x, axis=axes, keepdims=keepdims)
    assert got.shape == want.shape and got.dtype == want.dtype and not got.any()
    t = Tensor(x, requires_grad=True)
    t.sum(axis=axes).sum().backward()
    assert t.grad.shape == shape


@pytest.mark.parametrize("rows, recorded", [(BLOCK, False), (BLOCK + 1, True)])
def test_compile_records_the_kernel_from_the_first_long_sum(rows, recorded):
    """A small array (below ``_LARGE``) is summed by NumPy's reduce up to ``_BLOCK`` rows,
    and the compiled program says so; one row more and it calls ``add_reduce``, as eager does."""
    x = _rng(3).standard_normal((rows, 3))
    b = _rng(4).standard_normal(3)
    g = engine_compile(lambda x, b: E.tanh(x + b).sum(), wrt=(1,))
    value, (gb,) = g(x, b)
    assert ("add_reduce(" in g.source) == recorded
    np.testing.assert_allclose(gb, (1 - np.tanh(x + b) ** 2).sum(axis=0), rtol=1e-13)
    np.testing.assert_allclose(value, np.tanh(x + b).sum(), rtol=1e-13)


def _bias_and_scale_loss(xp, b, s, x):
    """A bias summed back over 1e5 rows (sum_to) and a per-channel scale over a middle
    axis (mul_sum_to's products): mean(tanh(x * s + b))."""
    return xp.mean(xp.tanh(x * s + b))


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed: nothing to compare against")
def test_float32_gradients_of_long_sums_eager_and_compiled_against_torch():
    rng = _rng(5)
    x = rng.standard_normal((4, 25_000, 3)).astype(np.float32)
    b = (0.1 * rng.standard_normal(3)).astype(np.float32)
    s = (1 + 0.1 * rng.standard_normal((4, 1, 3))).astype(np.float32)

    def torch_grads(dtype):
        tb, ts = (torch.tensor(v, dtype=dtype, requires_grad=True) for v in (b, s))
        out = torch.tanh(torch.tensor(x, dtype=dtype) * ts + tb).mean()
        return [g.numpy().astype(np.float64) for g in torch.autograd.grad(out, [tb, ts])]

    ref = torch_grads(torch.float64)
    tb, ts = Tensor(b, requires_grad=True), Tensor(s, requires_grad=True)
    _bias_and_scale_loss(E, tb, ts, Tensor(x)).backward()
    _, compiled = engine_compile(_bias_and_scale_loss, wrt=(0, 1))(b, s, x)
    results = {"eager": [tb.grad.data, ts.grad.data], "compiled": list(compiled),
               "torch": torch_grads(torch.float32)}
    errors = {name: max(float(np.max(np.abs(g - r)) / np.max(np.abs(r))) for g, r in zip(gs, ref))
              for name, gs in results.items()}
    for name in ("eager", "compiled"):
        assert all(g.dtype == np.float32 for g in results[name])
        assert errors[name] <= 4 * max(errors["torch"], U32) and errors[name] <= 16 * U32, errors


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed: nothing to compare against")
def test_float32_gmm_gradient_at_20000_points_against_torch():
    """ADBench's GMM (d = 10, K = 5, n = 20000) in float32: its gradient sums over the n
    points (the means' and the Cholesky factors' through ``mul_sum_to`` and ``sum_to``);
    before the blocked sums the engine's error was 35x torch's (6e-6 against 1.7e-7)."""
    from diffcompare.problems import torch_namespace
    from diffcompare.problems.catalog import adbench

    inputs = adbench.gmm_inputs(5, 0, d=10, n=20_000)

    def torch_grads(dtype):
        args = [torch.tensor(a, dtype=dtype, requires_grad=i < 3) for i, a in enumerate(inputs)]
        out = adbench.gmm(torch_namespace, *args)
        return [g.numpy().astype(np.float64) for g in torch.autograd.grad(out, args[:3])]

    def norm_error(gs, ref):
        diff = np.concatenate([(np.asarray(g, np.float64) - r).ravel() for g, r in zip(gs, ref)])
        return float(np.linalg.norm(diff) / np.linalg.norm(np.concatenate([r.ravel() for r in ref])))

    ref = torch_grads(torch.float64)
    args32 = [a.astype(np.float32) for a in inputs]
    leaves = [Tensor(a, requires_grad=i < 3) for i, a in enumerate(args32)]
    eager = E.autograd.grad(adbench.gmm(E.array_api, *leaves), leaves[:3])
    _, compiled = engine_compile(adbench.gmm, wrt=(0, 1, 2))(*args32)
    torch_err = norm_error(torch_grads(torch.float32), ref)
    for name, gs in (("eager", [g.data for g in eager]), ("compiled", compiled)):
        assert norm_error(gs, ref) <= 3 * torch_err, (name, norm_error(gs, ref), torch_err)


OPS = {"var": (lambda t: E.var(t, axis=0, ddof=1), lambda t: t.var(dim=0)),
       "softmax": (lambda t: E.softmax(t, axis=0), lambda t: t.softmax(dim=0)),
       "log_softmax": (lambda t: E.log_softmax(t, axis=0), lambda t: t.log_softmax(dim=0))}


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed: nothing to compare against")
@pytest.mark.parametrize("op", list(OPS))
def test_float32_ops_reducing_a_long_leading_axis_eager_and_compiled_against_torch(op):
    """var, softmax and log_softmax over 20000 rows of 70 (NumPy's reduce adds them in
    order) sum through the same blocked kernel, forward and backward: within a few
    roundings in value and gradient, and as accurate as torch's."""
    ours, theirs = OPS[op]
    rng = _rng(7)
    x = (1 + rng.random((20_000, 70))).astype(np.float32)   # positive: the sums' worst case
    w = rng.random((20_000, 70)).astype(np.float32)
    w_sum = w.sum(axis=0)

    def torch_run(dtype):
        t = torch.tensor(x, dtype=dtype, requires_grad=True)
        y = theirs(t)
        (g,) = torch.autograd.grad((y * torch.tensor(w, dtype=dtype)).sum() if y.ndim > 1 else y.sum(), [t])
        return y.detach().numpy().astype(np.float64), g.numpy().astype(np.float64)

    def loss(t):
        y = ours(t)
        return (y * Tensor(w)).sum() if y.ndim > 1 else y.sum()

    ref = torch_run(torch.float64)
    t = Tensor(x, requires_grad=True)
    y = ours(t)
    loss(t).backward()
    value, (g_compiled,) = engine_compile(loss)(x)
    ref_value = float(np.sum(ref[0] * w)) if ref[0].ndim > 1 else float(ref[0].sum())

    def err(got, want):
        return float(np.max(np.abs(np.asarray(got, np.float64) - want)) / np.max(np.abs(want)))

    torch_y, torch_g = torch_run(torch.float32)
    assert y.dtype == np.float32 and t.grad.dtype == np.float32 and g_compiled.dtype == np.float32
    # torch's softmax adds a leading axis in order (86 u here): bounds of a few roundings too
    assert err(y.data, ref[0]) <= min(16 * U32, 4 * max(err(torch_y, ref[0]), U32))
    for g in (t.grad.data, g_compiled):
        assert err(g, ref[1]) <= 32 * U32 and err(g, ref[1]) <= 4 * max(err(torch_g, ref[1]), U32)
    assert abs(float(value) - ref_value) <= 16 * U32 * (abs(ref_value) + float(w_sum.sum()))
