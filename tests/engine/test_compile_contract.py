"""engine.compile takes every contract name the eager engine takes: ``xp.sign``,
``xp.zeros_like`` and ``xp.ones_like`` of traced values (once refused: they made a constant
Tensor with ``np.asarray`` of a traced value).  The compiled gradient is compared with torch's."""
from __future__ import annotations

import numpy as np
import pytest

from diffcompare import backends
from diffcompare.problems import torch_namespace
from diffcompare.engine import compile as engine_compile
from diffcompare.problems import Problem

torch = pytest.importorskip("torch")
pytest.importorskip("array_api_compat")


def least_squares(xp, t, A, b):
    """A least-squares objective with an L1-like term through ``sign`` (d|t|/dt = sign(t)
    written out: sign itself carries no gradient) and constants shaped like ``t``."""
    r = A @ t - b
    ones = xp.ones_like(t)
    zero = xp.zeros_like(t)
    return xp.sum(r * r) + 0.5 * xp.sum(xp.sign(t) * t) + xp.sum((ones + zero) * t * t)


def _inputs(dtype=np.float64):
    rng = np.random.default_rng(7)
    t = rng.standard_normal(5)
    t[2] = 0.0                                   # sign at its kink: 0, as torch.sign
    return (t.astype(dtype), rng.standard_normal((6, 5)).astype(dtype),
            rng.standard_normal(6).astype(dtype))


def _torch_gradient(args):
    xp = torch_namespace.namespace()
    T = [torch.tensor(a) for a in args]
    T[0].requires_grad_(True)
    out = least_squares(xp, *T)
    out.backward()
    return out.detach().numpy(), T[0].grad.numpy()


def test_sign_zeros_like_ones_like_compile_and_match_torch():
    args = _inputs()
    g = engine_compile(least_squares, wrt=(0,))
    value, (gt,) = g(*args)
    tv, tg = _torch_gradient(args)
    np.testing.assert_allclose(value, tv, rtol=1e-12)
    np.testing.assert_allclose(gt, tg, rtol=1e-12, atol=1e-14)
    # the sign and the like-constants are NumPy calls in the generated program, not constants
    source = g.source
    assert "np.sign" in source and "zeros_like" in source and "ones_like" in source


def test_compiled_program_follows_new_values_not_trace_time_constants():
    g = engine_compile(least_squares, wrt=(0,))
    args = _inputs()
    g(*args)
    flipped = (-args[0],) + args[1:]             # every sign flips: a frozen sign would be wrong
    _, (gt,) = g(*flipped)
    np.testing.assert_allclose(gt, _torch_gradient(flipped)[1], rtol=1e-12, atol=1e-14)


def test_float32_stays_float32():
    args = _inputs(np.float32)
    g = engine_compile(least_squares, wrt=(0,))
    value, (gt,) = g(*args)
    assert np.asarray(value).dtype == np.float32 and gt.dtype == np.float32
    np.testing.assert_allclose(gt, _torch_gradient(args)[1], rtol=1e-5, atol=1e-5)


def test_engine_compiled_backend_runs_it():
    problem = Problem(name="ls_sign", fn=least_squares, description="least squares with sign",
                      make_inputs=lambda size, seed: _inputs())
    args = problem.inputs(5)
    (grad,) = backends.compute_gradient(backends.get("engine-compiled"), problem, args)
    np.testing.assert_allclose(grad, _torch_gradient(args)[1], rtol=1e-12, atol=1e-14)
