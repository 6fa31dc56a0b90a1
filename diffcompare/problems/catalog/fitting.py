"""Fitting objectives: k-means and linear least squares.

- ``kmeans``: Σ_i min_k ‖p_i - c_k‖² w.r.t. the centroids ``c (k, d)`` (the objective of
  GradBench's ``kmeans``, ADBench's successor), with squared distances computed as
  ``‖p‖² - 2 p·c + ‖c‖²`` (one matmul).  ``size`` is k; d = 8, n = 1000 points drawn around
  the true centres.  Piecewise smooth: the ``min`` switches where two centroids are equally
  near, which random data never hits.  Benchmarked also on its Hessian diagonal (GradBench's
  Newton step): each point's term ‖p_i - c_k‖² of its nearest centroid k has Hessian 2·I in
  c_k, so the Hessian is diagonal with 2 × (points nearest c_k) on c_k's d entries
  (``kmeans_hessian_diagonal``, the exact reference).
- ``linear_least_squares``: ‖A x - b‖² w.r.t. x for a fixed ``(2n, n)`` matrix A; ``size`` is n.
"""
from __future__ import annotations

import numpy as np

from ..problem import Problem
from .. import register

KMEANS_D, KMEANS_N = 8, 1000


def kmeans(xp, centroids, points):
    """Σ_i min_k ‖p_i - c_k‖²."""
    d2 = (xp.sum(points * points, axis=1)[:, None] - 2 * (points @ xp.transpose(centroids))
          + xp.sum(centroids * centroids, axis=1)[None, :])
    return xp.sum(xp.min(d2, axis=1))


def kmeans_inputs(size, seed, d=KMEANS_D, n=KMEANS_N):
    rng = np.random.default_rng(seed)
    centres = 3.0 * rng.standard_normal((size, d))
    points = centres[rng.integers(0, size, n)] + rng.standard_normal((n, d))
    centroids = centres + 0.5 * rng.standard_normal((size, d))
    return (centroids, points)


def kmeans_hessian_diagonal(centroids, points):
    """The exact Hessian diagonal: 2 × the number of points nearest each centroid, repeated
    over the d coordinates (nearest by the same squared distance as ``kmeans``).

    >>> c = np.array([[0.0, 0.0], [10.0, 0.0]])
    >>> p = np.array([[1.0, 0.0], [9.0, 1.0], [11.0, 0.0]])
    >>> kmeans_hessian_diagonal(c, p)[0].tolist()
    [[2.0, 2.0], [4.0, 4.0]]
    """
    d2 = (np.sum(points * points, axis=1)[:, None] - 2 * (points @ centroids.T)
          + np.sum(centroids * centroids, axis=1)[None, :])
    counts = np.bincount(np.argmin(d2, axis=1), minlength=len(centroids)).astype(np.float64)
    return (np.repeat(2.0 * counts[:, None], centroids.shape[1], axis=1),)


def linear_least_squares(xp, x, A, b):
    """‖A x - b‖²."""
    r = A @ x - b
    return xp.sum(r * r)


def lls_inputs(size, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(size), rng.standard_normal((2 * size, size)) / np.sqrt(size),
            rng.standard_normal(2 * size))


register(Problem(
    name="kmeans", fn=kmeans, make_inputs=kmeans_inputs, wrt=(0,),
    description=f"k-means objective Σ_i min_k ‖p_i - c_k‖² w.r.t. the centroids, d = {KMEANS_D}, "
                f"n = {KMEANS_N} points",
    sizes=(2, 4, 16, 64, 256), tags={"nonsmooth", "matrix", "large-expression"},
    size_meaning="k clusters", operators=("hessian_diagonal",),
    exact_operators={"hessian_diagonal": kmeans_hessian_diagonal}))

register(Problem(
    name="linear_least_squares", fn=linear_least_squares, make_inputs=lls_inputs, wrt=(0,),
    description="‖A x - b‖² w.r.t. x, A a fixed random (2n, n) matrix",
    sizes=(2, 8, 32, 128, 512, 2048), tags={"smooth", "matrix"}))
