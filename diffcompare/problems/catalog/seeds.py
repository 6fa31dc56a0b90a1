"""The seed threads as problems: each reproduces its thread's numbers at its smallest size.

- 000 ``minibatch_inverse_mean``: ``mean(1/x)`` over ``x = 1..n`` (n = 10 is the thread's
  ``T = torch.arange(10.) + 1``); its gradient has one entry per sample, ``-1/(n x_i²)``.
- 000 ``linear_mean``: ``L = mean(x * w)`` with ``w = [2.]`` differentiated and the batch
  ``x = 1..n`` not (n = 2: ``L = 3``, ``dL/dw = mean(x) = 1.5``).
- 001 ``linear_mse``: ``mean((x @ w + b - y)²)`` w.r.t. ``(w, b)``; ``b``'s gradient is the
  batch sum of the output gradient (``b.g = out.g.sum(0)``).
- 002 ``weighted_vector``: the vector ``y = 3a + 2b² + log(c)`` with the cotangent
  ``[0.1, 1.0, 0.0001]`` (tiled); at n = 3 the thread's ``a.grad``, ``b.grad``, ``c.grad``.
- 003 ``unbind_product``: ``a[0] * a[1] * ... * a[n-1]`` from indexing (n = 3, ``a = [2, 3, 4]``:
  ``b * c * d`` of ``b, c, d = a.unbind()``).
"""
from __future__ import annotations

import numpy as np

from ..problem import Problem
from .. import register


def minibatch_inverse_mean(xp, x):
    """mean over the minibatch of 1/x."""
    return xp.mean(1 / x)


def _one_to_n(size, seed):
    return (np.arange(size, dtype=np.float64) + 1,)


def linear_mean(xp, x, w):
    """y = x * w (w broadcast over the batch), L = mean(y)."""
    return xp.mean(x * w)


def _linear_mean_inputs(size, seed):
    return (np.arange(size, dtype=np.float64) + 1, np.array([2.0]))


def linear_mse(xp, w, b, x, y):
    """out = x @ w + b, loss = mean((out - y)²) over batch and outputs."""
    out = x @ w + b
    return xp.mean((out - y) ** 2)


def _linear_mse_inputs(size, seed, n_in=4, n_out=2):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)
    b = 0.1 * rng.standard_normal(n_out)
    x = rng.standard_normal((size, n_in))
    y = rng.standard_normal((size, n_out))
    return (w, b, x, y)


def weighted_vector(xp, a, b, c):
    """y = 3a + 2b² + log(c), elementwise (a vector output)."""
    return 3 * a + 2 * b * b + xp.log(c)


def _weighted_vector_inputs(size, seed):
    i = np.arange(size, dtype=np.float64)
    return (1 + i, 3 + i, 6 + i)   # n = 3: a = [1, 2, 3], b = [3, 4, 5], c = [6, 7, 8]


def _weighted_vector_cotangent(size, seed):
    return np.resize(np.array([0.1, 1.0, 0.0001]), size)


def unbind_product(xp, a):
    """e = a[0] * a[1] * ... (one multiplication per element, from indexing)."""
    e = a[0]
    for i in range(1, a.shape[0]):
        e = e * a[i]
    return e


def _unbind_product_inputs(size, seed):
    a = np.random.default_rng(seed).uniform(0.8, 1.25, size)
    a[:3] = [2.0, 3.0, 4.0][:size]
    return (a,)


register(Problem(
    name="minibatch_inverse_mean", fn=minibatch_inverse_mean, make_inputs=_one_to_n,
    description="seed 000: mean(1/x) over a minibatch x = 1..n; the gradient is -1/(n x²) per sample",
    sizes=(10, 100, 1000, 10000), tags={"seed", "smooth"}, size_meaning="batch"))

register(Problem(
    name="linear_mean", fn=linear_mean, make_inputs=_linear_mean_inputs, wrt=(1,),
    description="seed 000: L = mean(x * w) w.r.t. w (shape (1,)) over the batch x = 1..n",
    sizes=(2, 20, 200, 2000), tags={"seed", "smooth"}, size_meaning="batch"))

register(Problem(
    name="linear_mse", fn=linear_mse, make_inputs=_linear_mse_inputs, wrt=(0, 1),
    description="seed 001: mean((x @ w + b - y)²), w (4, 2) and b (2,) differentiated, x (batch, 4)",
    sizes=(4, 16, 64, 256, 1024), tags={"seed", "smooth", "matrix"}, size_meaning="batch"))

register(Problem(
    name="weighted_vector", fn=weighted_vector, make_inputs=_weighted_vector_inputs,
    wrt=(0, 1, 2), make_cotangent=_weighted_vector_cotangent,
    description="seed 002: y = 3a + 2b² + log(c) (vector) with cotangent [0.1, 1, 0.0001] tiled",
    sizes=(3, 30, 300, 3000), tags={"seed", "smooth", "vector-output"}, size_meaning="n"))

register(Problem(
    name="unbind_product", fn=unbind_product, make_inputs=_unbind_product_inputs,
    description="seed 003: a[0] * a[1] * ... * a[n-1] by indexing (n = 3: a = [2, 3, 4])",
    sizes=(3, 10, 30, 100, 300), tags={"seed", "smooth", "loop"}, size_meaning="n"))
