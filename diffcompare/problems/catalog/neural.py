"""Small networks: two-layer MLPs (tanh, relu) on a fixed batch and a tanh recurrence.

Sizes: the MLPs' hidden width (batch 8, 4 inputs, 2 outputs; 7·width + 2 parameters);
the recurrence's number of steps (hidden 4, input 3; 28 parameters).
"""
from __future__ import annotations

import numpy as np

from ..problem import Problem
from .. import register

BATCH, N_IN, N_OUT = 8, 4, 2
RNN_HIDDEN, RNN_IN = 4, 3


def _mlp(xp, activation, W1, b1, W2, b2, x, y):
    h = activation(x @ W1 + b1)
    out = h @ W2 + b2
    return xp.mean((out - y) ** 2)


def mlp_tanh(xp, W1, b1, W2, b2, x, y):
    """mean((tanh(x W1 + b1) W2 + b2 - y)²)."""
    return _mlp(xp, xp.tanh, W1, b1, W2, b2, x, y)


def mlp_relu(xp, W1, b1, W2, b2, x, y):
    """mean((relu(x W1 + b1) W2 + b2 - y)²), relu(z) = maximum(z, 0)."""
    return _mlp(xp, lambda z: xp.maximum(z, 0), W1, b1, W2, b2, x, y)


def _mlp_inputs(size, seed):
    rng = np.random.default_rng(seed)
    W1 = rng.standard_normal((N_IN, size)) / np.sqrt(N_IN)
    b1 = 0.1 * rng.standard_normal(size)
    W2 = rng.standard_normal((size, N_OUT)) / np.sqrt(size)
    b2 = 0.1 * rng.standard_normal(N_OUT)
    x = rng.standard_normal((BATCH, N_IN))
    y = rng.standard_normal((BATCH, N_OUT))
    return (W1, b1, W2, b2, x, y)


def rnn_loop(xp, W, U, xs, h0):
    """h ← tanh(W h + U x_t) for each row x_t of xs, from h0; loss Σ h_k²."""
    h = h0
    for t in range(xs.shape[0]):
        h = xp.tanh(W @ h + U @ xs[t])
    return xp.sum(h * h)


def _rnn_inputs(size, seed):
    rng = np.random.default_rng(seed)
    W = 0.9 * rng.standard_normal((RNN_HIDDEN, RNN_HIDDEN)) / np.sqrt(RNN_HIDDEN)
    U = rng.standard_normal((RNN_HIDDEN, RNN_IN)) / np.sqrt(RNN_IN)
    xs = rng.standard_normal((size, RNN_IN))
    h0 = 0.1 * rng.standard_normal(RNN_HIDDEN)
    return (W, U, xs, h0)


register(Problem(
    name="mlp_tanh", fn=mlp_tanh, make_inputs=_mlp_inputs, wrt=(0, 1, 2, 3),
    description="two-layer tanh MLP, MSE loss on a batch of 8 (4 in, 2 out); all weights and biases",
    sizes=(1, 4, 16, 64, 256, 1024), tags={"smooth", "matrix"}, size_meaning="hidden width"))

register(Problem(
    name="mlp_relu", fn=mlp_relu, make_inputs=_mlp_inputs, wrt=(0, 1, 2, 3),
    description="two-layer relu MLP (relu = maximum(z, 0)), MSE loss on a batch of 8; all weights and biases",
    sizes=(1, 4, 16, 64, 256, 1024), tags={"nonsmooth", "matrix"}, size_meaning="hidden width"))

register(Problem(
    name="rnn_loop", fn=rnn_loop, make_inputs=_rnn_inputs, wrt=(0, 1),
    description="k steps of h ← tanh(W h + U x_t) (hidden 4, input 3), loss Σ h_k², w.r.t. W and U",
    sizes=(1, 2, 4, 8, 16, 32, 64), tags={"smooth", "loop", "matrix"}, size_meaning="k steps"))
