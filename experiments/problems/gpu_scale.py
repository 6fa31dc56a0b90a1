"""Problems at the sizes where a GPU matters, for the ``gpu`` suite (its ``problem_modules``).

- ``mlp_784``: a two-layer tanh MLP on MNIST-shaped data, 784 inputs, 50 hidden units and
  10 outputs, MSE loss over a batch of ``size`` rows (the (50000, 784, 50) model at
  ``size = 50000``); differentiated: W1, b1, W2, b2 (39,760 parameters).  The data are
  random (the timing and accuracy do not depend on MNIST's pixels).
- ``gmm_100k``: ADBench's GMM objective (``diffcompare.problems.catalog.adbench.gmm``) at
  d = 10 and n = 100,000 points; ``size`` is K, the number of components.

The hand-written ``manual`` gradients are keyed by the catalog's names, so ``manual`` reports
these two unsupported; the engine, torch and JAX differentiate them as written here.
"""
from __future__ import annotations

import numpy as np

from diffcompare.problems import register
from diffcompare.problems.catalog import adbench
from diffcompare.problems.problem import Problem

MLP_IN, MLP_HIDDEN, MLP_OUT = 784, 50, 10
GMM_D, GMM_N = 10, 100_000


def mlp_784(xp, W1, b1, W2, b2, x, y):
    """mean((tanh(x W1 + b1) W2 + b2 - y)²) over a batch of rows of 784 inputs."""
    out = xp.tanh(x @ W1 + b1) @ W2 + b2
    return xp.mean((out - y) ** 2)


def _mlp_784_inputs(size, seed):
    rng = np.random.default_rng(seed)
    W1 = rng.standard_normal((MLP_IN, MLP_HIDDEN)) / np.sqrt(MLP_IN)
    b1 = 0.1 * rng.standard_normal(MLP_HIDDEN)
    W2 = rng.standard_normal((MLP_HIDDEN, MLP_OUT)) / np.sqrt(MLP_HIDDEN)
    b2 = 0.1 * rng.standard_normal(MLP_OUT)
    x = rng.random((size, MLP_IN))                       # pixel-like values in [0, 1)
    y = np.eye(MLP_OUT)[rng.integers(0, MLP_OUT, size)]  # one-hot labels
    return (W1, b1, W2, b2, x, y)


register(Problem(
    name="mlp_784", fn=mlp_784, make_inputs=_mlp_784_inputs, wrt=(0, 1, 2, 3),
    description="two-layer tanh MLP, 784 inputs, 50 hidden, 10 outputs, MSE over a batch of "
                "`size` rows (MNIST-shaped); all weights and biases",
    sizes=(1000, 10_000, 50_000), tags={"smooth", "matrix"}, size_meaning="batch rows"),
    replace=True)

register(adbench.gmm_problem(GMM_D, GMM_N, (5, 25, 100)), replace=True)
