"""Textbook test functions.

``squire_trapp`` is Squire & Trapp's example f(x) = eˣ / √(sin³x + cos³x), whose
derivative at x = 1.5 (size 1) is the classic finite-difference step-size test;
``squire_trapp_derivative`` gives it in closed form.
"""
from __future__ import annotations

import numpy as np

from ..problem import Problem
from .. import register


def rosenbrock(xp, x):
    """Σ 100 (x[i+1] - x[i]²)² + (1 - x[i])²."""
    return xp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _uniform(low, high):
    def make(size, seed):
        return (np.random.default_rng(seed).uniform(low, high, size),)

    return make


def squire_trapp(xp, x):
    """Σ eˣ / √(sin³x + cos³x)."""
    s, c = xp.sin(x), xp.cos(x)
    return xp.sum(xp.exp(x) / xp.sqrt(s ** 3 + c ** 3))


def squire_trapp_inputs(size, seed=0):
    """Deterministic points from 1.5 down to 0.1 (size 1: exactly [1.5]); ``seed`` is ignored.
    The denominator sin³x + cos³x is positive on (-π/4, 3π/4)."""
    if size == 1:
        return (np.array([1.5]),)
    return (np.linspace(1.5, 0.1, size),)


def squire_trapp_derivative(x):
    """The exact derivative of eˣ / √(sin³x + cos³x) (elementwise, NumPy):
    f'(x) = eˣ (D - (3/2)(sin²x cos x - cos²x sin x)) / D^{3/2}, D = sin³x + cos³x.
    At x = 1.5 it is 4.05342789389862..."""
    x = np.asarray(x, dtype=np.float64)
    s, c = np.sin(x), np.cos(x)
    d = s ** 3 + c ** 3
    return np.exp(x) * (d - 1.5 * (s * s * c - c * c * s)) / d ** 1.5


def logsumexp(xp, x):
    """log Σ exp(x), written naively (no max shift: smooth, and fine for moderate x)."""
    return xp.log(xp.sum(xp.exp(x)))


def _standard_normal(size, seed):
    return (np.random.default_rng(seed).standard_normal(size),)


def softmax_cross_entropy(xp, z, t):
    """-Σ t · log_softmax(z) with a one-hot target t (log-softmax written naively)."""
    return -xp.sum(t * (z - xp.log(xp.sum(xp.exp(z)))))


def _softmax_ce_inputs(size, seed):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(size)
    t = np.zeros(size)
    t[rng.integers(size)] = 1.0
    return (z, t)


def quadratic_form(xp, x, A):
    """xᵀ A x with a fixed (not differentiated) random matrix A."""
    return x @ (A @ x)


def _quadratic_form_inputs(size, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(size), rng.standard_normal((size, size)) / np.sqrt(size))


def logistic_map(xp, x0, r):
    """x_{k+1} = r_k x_k (1 - x_k) for k = 0..len(r)-1, starting at x0; returns x_K."""
    x = x0
    for k in range(r.shape[0]):
        x = r[k] * x * (1 - x)
    return xp.sum(x)


def _logistic_map_inputs(size, seed):
    rng = np.random.default_rng(seed)
    return (rng.uniform(0.2, 0.8, 1), np.full(size, 3.7))


register(Problem(
    name="rosenbrock", fn=rosenbrock, make_inputs=_uniform(-2.0, 2.0),
    description="Rosenbrock: Σ 100 (x[i+1] - x[i]²)² + (1 - x[i])², x ~ U(-2, 2)",
    sizes=(2, 8, 32, 128, 512, 2048), tags={"smooth"}))

register(Problem(
    name="squire_trapp", fn=squire_trapp, make_inputs=squire_trapp_inputs,
    description="Squire-Trapp: Σ eˣ/√(sin³x + cos³x) at x = linspace(1.5, 0.1, n) (n = 1: x = 1.5)",
    sizes=(1, 4, 16, 64, 256, 1024), tags={"smooth"}))

register(Problem(
    name="logsumexp", fn=logsumexp, make_inputs=_standard_normal,
    description="log Σ exp(x), naive form, x ~ N(0, 1)",
    sizes=(4, 16, 64, 256, 1024), tags={"smooth"}))

register(Problem(
    name="softmax_cross_entropy", fn=softmax_cross_entropy, make_inputs=_softmax_ce_inputs,
    description="-Σ t log_softmax(z) for logits z ~ N(0, 1) and a one-hot target t (not differentiated)",
    sizes=(4, 16, 64, 256, 1024), tags={"smooth"}))

register(Problem(
    name="quadratic_form", fn=quadratic_form, make_inputs=_quadratic_form_inputs,
    description="xᵀ A x, A a fixed random n×n matrix (not differentiated)",
    sizes=(2, 8, 32, 128, 512), tags={"smooth", "matrix"}))

register(Problem(
    name="logistic_map", fn=logistic_map, make_inputs=_logistic_map_inputs,
    description="logistic map x ← 3.7 x (1 - x) iterated k times; d x_k / d x0 (chaotic: grows like e^{0.35k})",
    sizes=(1, 2, 4, 8, 16, 32, 64), tags={"smooth", "loop"}, size_meaning="k steps"))
