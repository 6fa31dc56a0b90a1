"""ADBench's objectives (Srajer, Shaikhha & Fitzgibbon, "A benchmark of selected algorithmic
differentiation tools on some problems in computer vision and machine learning", 2018),
written once against ``xp`` from the benchmark's public definitions (its Python/PyTorch
reference modules), with its argument layouts:

- ``gmm``: the Gaussian mixture log-likelihood with a Wishart prior.  Arguments
  ``alphas (K,)``, ``means (K, d)``, ``icf (K, d + d(d-1)/2)`` -- per component the log of the
  inverse covariance factor's diagonal, then its strictly-lower-triangular entries in
  column-major order -- and the data ``x (n, d)``; differentiated: alphas, means, icf.
  ``size`` is K; ``d = 10`` and ``n = 1000`` (ADBench's "1k" set, d = 10 row of its grid).
  The prior uses ADBench's ``γ = 1, m = 0``.  The same objective at ADBench's other d and n,
  one problem per ``(d, n)`` of ``GMM_GRID`` (names in ``GMM_PROBLEMS``): ``gmm_d2``,
  ``gmm_d20``, ``gmm_d32``, ``gmm_d64`` (n = 1000), ``gmm_10k`` (d = 10) and ``gmm_d64_10k``
  (n = 10000); their ``size`` is K too.
- ``bundle_adjustment``: reprojection residuals (vector output: its VJP with a fixed random
  cotangent).  Cameras ``(n_cams, 11)`` = Rodrigues rotation (3), centre (3), focal length (1),
  principal point (2), radial distortion (2); points ``(n_pts, 3)``; per-observation weights
  ``w``; observed features ``(n_obs, 2)``; integer camera and point indices per observation.
  The output is ``[w (project(cam, X) - feature)`` flattened, then ``1 - w²]``.
  ``size`` is the number of cameras; 20 points per camera, each point seen 4 times.
- ``lstm``: ADBench's LSTM objective -- ``l = 2`` layers of ``b = 14`` cells, ``size`` = the
  number of characters ``c`` of a one-hot sequence; differentiated: ``main_params (2l, 4b)``
  and ``extra_params (3, b)``.  As in ADBench's reference, the normaliser is
  ``log(2 + Σ exp(ypred))`` (its ``sum(exp(ypred), 2)`` starts the sum at 2).

The hand-written GMM gradient lives in ``diffcompare.backends.manual``.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..problem import Problem
from .. import register

# --- GMM -------------------------------------------------------------------------------

GMM_D, GMM_N = 10, 1000
WISHART_GAMMA, WISHART_M = 1.0, 0


@functools.lru_cache(maxsize=None)
def lower_index(d: int) -> np.ndarray:
    """``(d, d)`` positions into ``[0, *icf[d:]]``: 0 on and above the diagonal, else
    1 + the entry's position in ADBench's column-major order of the strictly-lower part."""
    idx = np.zeros((d, d), dtype=np.intp)
    pos = 1
    for col in range(d):
        for row in range(col + 1, d):
            idx[row, col] = pos
            pos += 1
    return idx          # shared (cached): do not modify


def wishart_constant(d: int, k: int, gamma: float = WISHART_GAMMA, m: int = WISHART_M) -> float:
    """``K · C`` of ADBench's ``log_wishart_prior`` (the normaliser; no parameter in it)."""
    n = d + m + 1
    log_gamma_distrib = 0.25 * d * (d - 1) * math.log(math.pi) + sum(
        math.lgamma(0.5 * n + 0.5 * (1 - j)) for j in range(1, d + 1))
    c = n * d * (math.log(gamma) - 0.5 * math.log(2)) - log_gamma_distrib
    return k * c


def gmm(xp, alphas, means, icf, x):
    """ADBench's GMM objective: Σ_i logsumexp_k(α_k + Σ log Q_k,jj - ½‖Q_k (x_i - μ_k)‖²)
    - n logsumexp(α) + log Wishart prior + constants (Q_k: lower-triangular, exp'd diagonal)."""
    n, d = x.shape
    k_count = alphas.shape[0]
    log_diag = icf[:, :d]
    q_diag = xp.exp(log_diag)
    sum_qs = xp.sum(log_diag, axis=1)
    lower = icf[:, d:]
    padded = xp.concatenate([xp.zeros_like(lower[:, :1]), lower], axis=1)   # in lower's dtype
    strict = padded[:, lower_index(d)]                     # (K, d, d), strictly lower parts
    xc = xp.expand_dims(x, 0) - xp.expand_dims(means, 1)   # (K, n, d): x_i - μ_k
    # rows of qx[k] are Q_k (x_i - μ_k): the diagonal scales, the strict part is a batched matmul
    qx = xc * xp.expand_dims(q_diag, 1) + xc @ xp.swapaxes(strict, 1, 2)
    inner = (xp.expand_dims(alphas + sum_qs, 1) - 0.5 * xp.sum(qx * qx, axis=2))   # (K, n)
    slse = xp.sum(xp.logsumexp(inner, axis=0))
    constant = -n * d * 0.5 * math.log(2 * math.pi)
    prior = (0.5 * WISHART_GAMMA ** 2 * (xp.sum(q_diag * q_diag) + xp.sum(lower * lower))
             - WISHART_M * xp.sum(sum_qs) - wishart_constant(d, k_count))
    return constant + slse - n * xp.logsumexp(alphas) + prior


def gmm_inputs(size, seed, d=GMM_D, n=GMM_N):
    """K = ``size`` components in ``d`` dimensions, ``n`` points (ADBench draws uniform
    parameters; here alphas, means ~ N(0, 1), icf ~ 0.1 N(0, 1), x ~ N(0, 1))."""
    rng = np.random.default_rng(seed)
    k = size
    alphas = rng.standard_normal(k)
    means = rng.standard_normal((k, d))
    icf = 0.1 * rng.standard_normal((k, d + d * (d - 1) // 2))
    x = rng.standard_normal((n, d))
    return (alphas, means, icf, x)


def gmm_problem_name(d: int, n: int) -> str:
    """``gmm`` for ADBench's d = 10, n = 1000 cell; else ``gmm_d<d>`` and/or ``_<n/1000>k``.

    >>> [gmm_problem_name(d, n) for d, n in [(10, 1000), (64, 1000), (10, 10000), (64, 10000)]]
    ['gmm', 'gmm_d64', 'gmm_10k', 'gmm_d64_10k']
    """
    return "gmm" + ("" if d == GMM_D else f"_d{d}") + ("" if n == GMM_N else f"_{n // 1000}k")


def gmm_problem(d: int, n: int, sizes: tuple) -> Problem:
    """The GMM objective at ``d`` dimensions and ``n`` points, ``size`` = K components."""
    return Problem(
        name=gmm_problem_name(d, n), fn=gmm,
        make_inputs=functools.partial(gmm_inputs, d=d, n=n), wrt=(0, 1, 2),
        description=f"ADBench GMM log-likelihood with Wishart prior, d = {d}, n = {n}; "
                    "w.r.t. alphas, means and the inverse covariance factors",
        sizes=sizes, tags={"smooth", "matrix", "large-expression"},
        size_meaning=f"K components, d = {d}, n = {n}")


#: (d, n) -> the default sweep of K.  ADBench's grid is d in {2, 10, 20, 32, 64},
#: K in {5, 10, 25, 50, 100, 200}, n = 1000 and 10000; here every d at n = 1000, and d = 10
#: and 64 at n = 10000 (n's effect at both ends of d).  K = 2 (below the grid) is for tests
#: and finite differences.  K stops where a gradient stops taking about a second on a
#: laptop core: the reverse-mode methods hold a few (K, n, d) float64 arrays, so time and
#: memory follow K n d (the engine peaks near 40 bytes per element: 760 MB at K n d = 20
#: million, d = 10, n = 10000, K = 200; 610 MB at d = 64, n = 10000, K = 25, where K = 50
#: would need 1.2 GB and several seconds per gradient).
GMM_GRID = {
    (GMM_D, GMM_N): (2, 5, 10, 25, 50, 100, 200),
    (2, GMM_N): (2, 5, 10, 25, 50, 100, 200),
    (20, GMM_N): (2, 5, 10, 25, 50, 100, 200),
    (32, GMM_N): (2, 5, 10, 25, 50, 100, 200),
    (64, GMM_N): (2, 5, 10, 25, 50, 100, 200),
    (GMM_D, 10 * GMM_N): (2, 5, 10, 25, 50, 100, 200),
    (64, 10 * GMM_N): (2, 5, 10, 25),
}

#: the GMM problems' names, one per (d, n) of GMM_GRID (``gmm`` is d = 10, n = 1000)
GMM_PROBLEMS = tuple(gmm_problem_name(d, n) for d, n in GMM_GRID)


# --- bundle adjustment ----------------------------------------------------------------

BA_POINTS_PER_CAMERA, BA_OBS_PER_POINT = 20, 4
N_CAM_PARAMS = 11


def _cross(xp, a, b):
    return xp.stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1],
                     a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                     a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], axis=1)


def bundle_adjustment(xp, cams, points, w, features, cam_index, point_index):
    """ADBench's BA residuals: ``w (project(cam, X) - feature)`` per observation (Rodrigues
    rotation, perspective division, radial distortion, focal length, principal point),
    flattened, then the weight errors ``1 - w²``.  Rotations are nonzero (ADBench's
    ``θ = 0`` branch is not taken)."""
    c = cams[cam_index]                                   # (n_obs, 11), a gather
    X = points[point_index]                               # (n_obs, 3)
    rot = c[:, 0:3]
    xc = X - c[:, 3:6]
    theta = xp.sqrt(xp.sum(rot * rot, axis=1))[:, None]
    axis = rot / theta
    cos, sin = xp.cos(theta), xp.sin(theta)
    dot = xp.sum(axis * xc, axis=1)[:, None]
    xr = xc * cos + _cross(xp, axis, xc) * sin + axis * (dot * (1 - cos))
    p = xr[:, 0:2] / xr[:, 2:3]
    rsq = xp.sum(p * p, axis=1)[:, None]
    distortion = 1 + c[:, 9:10] * rsq + c[:, 10:11] * rsq * rsq
    projected = p * distortion * c[:, 6:7] + c[:, 7:9]
    reprojection = w[:, None] * (projected - features)
    return xp.concatenate([xp.reshape(reprojection, (-1,)), 1 - w * w])


def _ba_counts(size):
    n_pts = BA_POINTS_PER_CAMERA * size
    return size, n_pts, BA_OBS_PER_POINT * n_pts


def ba_inputs(size, seed):
    """Cameras about 8 units behind random points (positive depth), small rotations and
    distortion, features = the projection plus noise, weights in [0.5, 1.5]."""
    rng = np.random.default_rng(seed)
    n_cams, n_pts, n_obs = _ba_counts(size)
    cams, points = _ba_cameras_points(rng, n_cams, n_pts)
    w = rng.uniform(0.5, 1.5, n_obs)
    cam_index = rng.integers(0, n_cams, n_obs)
    point_index = np.repeat(np.arange(n_pts), BA_OBS_PER_POINT)
    features = 0.15 * rng.standard_normal((n_obs, 2))
    return (cams, points, w, features, cam_index, point_index)


def _ba_cameras_points(rng, n_cams, n_pts):
    cams = np.empty((n_cams, N_CAM_PARAMS))
    cams[:, 0:3] = 0.1 * rng.standard_normal((n_cams, 3))
    cams[:, 3:6] = 0.3 * rng.standard_normal((n_cams, 3)) + [0.0, 0.0, -8.0]
    cams[:, 6] = rng.uniform(0.8, 1.2, n_cams)
    cams[:, 7:9] = 0.01 * rng.standard_normal((n_cams, 2))
    cams[:, 9:11] = 0.01 * rng.standard_normal((n_cams, 2))
    return cams, rng.standard_normal((n_pts, 3))


#: ADBench's BA files ``ba<k>_n<cameras>_m<points>_p<observations>`` (named after BAL's
#: problems: ``ba1_n49_m7776_p31843`` is BAL's ladybug problem-49-7776), ba1 to ba13:
#: (cameras, points, observations), from 31,843 to 1,091,386 observations.
BA_ADBENCH_SIZES = {
    "ba1": (49, 7776, 31843), "ba2": (21, 11315, 36455), "ba3": (161, 48126, 182072),
    "ba4": (372, 47423, 204472), "ba5": (257, 65132, 225911), "ba6": (539, 65220, 277273),
    "ba7": (93, 61203, 287451), "ba8": (88, 64298, 383937), "ba9": (810, 88814, 393775),
    "ba10": (1197, 126327, 563734), "ba11": (1723, 156502, 678718),
    "ba12": (253, 163691, 899155), "ba13": (245, 198739, 1091386),
}


def ba_sized_inputs(n_cams, n_points, n_obs, seed):
    """``bundle_adjustment``'s arguments with ADBench's counts (``BA_ADBENCH_SIZES``), values
    drawn as ``ba_inputs`` draws them: every point observed at least twice and every camera
    at least once (so ``n_obs >= max(2 n_points, n_cams)``), the other observations'
    cameras and points uniform; observations ordered by point."""
    if n_obs < max(2 * n_points, n_cams):
        raise ValueError(f"{n_obs} observations cannot see {n_points} points twice and "
                         f"{n_cams} cameras once")
    rng = np.random.default_rng(seed)
    cams, points = _ba_cameras_points(rng, n_cams, n_points)
    w = rng.uniform(0.5, 1.5, n_obs)
    point_index = np.concatenate([np.repeat(np.arange(n_points), 2),
                                  rng.integers(0, n_points, n_obs - 2 * n_points)])
    cam_index = np.concatenate([rng.permutation(n_cams),
                                rng.integers(0, n_cams, n_obs - n_cams)])
    order = np.argsort(point_index, kind="stable")
    point_index, cam_index = point_index[order], rng.permutation(cam_index)
    features = 0.15 * rng.standard_normal((n_obs, 2))
    return (cams, points, w, features, cam_index, point_index)


def ba_cotangent(size, seed):
    n_obs = _ba_counts(size)[2]
    return np.random.default_rng(seed + 1).standard_normal(3 * n_obs)


# --- LSTM ------------------------------------------------------------------------------

LSTM_LAYERS, LSTM_BITS = 2, 14


def lstm(xp, main_params, extra_params, state, sequence):
    """ADBench's LSTM objective: the mean log-likelihood (negated) of each next character
    of ``sequence`` predicted by ``l`` stacked LSTM layers (``main_params[2i]`` weights and
    ``main_params[2i+1]`` biases of layer i, elementwise as in ADBench), input scale
    ``extra_params[0]``, output scale and offset ``extra_params[1:3]``."""
    b = sequence.shape[1]
    layers = main_params.shape[0] // 2
    hidden = [state[2 * i] for i in range(layers)]
    cell = [state[2 * i + 1] for i in range(layers)]
    total = 0.0
    x_in = sequence[0]
    for t in range(sequence.shape[0] - 1):
        x = extra_params[0] * x_in
        for i in range(layers):
            gates = (xp.concatenate([x, hidden[i], x, hidden[i]]) * main_params[2 * i]
                     + main_params[2 * i + 1])
            forget = xp.sigmoid(gates[0:b])
            ingate = xp.sigmoid(gates[b:2 * b])
            outgate = xp.sigmoid(gates[2 * b:3 * b])
            change = xp.tanh(gates[3 * b:])
            cell[i] = cell[i] * forget + ingate * change
            hidden[i] = outgate * xp.tanh(cell[i])
            x = hidden[i]
        ypred = extra_params[1] * x + extra_params[2]
        ynorm = ypred - xp.log(2 + xp.sum(xp.exp(ypred)))
        gold = sequence[t + 1]
        total = total + xp.sum(gold * ynorm)
        x_in = gold
    return -total / ((sequence.shape[0] - 1) * b)


def lstm_inputs(size, seed, layers=LSTM_LAYERS, b=LSTM_BITS):
    rng = np.random.default_rng(seed)
    main_params = 0.5 * rng.standard_normal((2 * layers, 4 * b))
    extra_params = 0.5 * rng.standard_normal((3, b)) + [[1.0], [1.0], [0.0]]
    state = 0.1 * rng.standard_normal((2 * layers, b))
    sequence = np.eye(b)[rng.integers(0, b, max(size, 2))]
    return (main_params, extra_params, state, sequence)


for _shape, _sizes in GMM_GRID.items():
    register(gmm_problem(*_shape, _sizes))

register(Problem(
    name="bundle_adjustment", fn=bundle_adjustment, make_inputs=ba_inputs, wrt=(0, 1, 2),
    make_cotangent=ba_cotangent,
    description="ADBench bundle adjustment: reprojection residuals w (project(cam, X) - feature) "
                "and 1 - w², VJP w.r.t. cameras, points and weights (20 points per camera, "
                "4 observations per point)",
    sizes=(2, 8, 32, 128, 512), tags={"smooth", "vector-output", "indexed", "large-expression"},
    size_meaning="cameras", operators=("jacobian",)))

register(Problem(
    name="lstm", fn=lstm, make_inputs=lstm_inputs, wrt=(0, 1),
    description=f"ADBench LSTM: {LSTM_LAYERS} layers of {LSTM_BITS} cells over a one-hot "
                "character sequence; w.r.t. the main and extra parameters",
    sizes=(2, 4, 16, 64, 256, 1024), tags={"smooth", "loop", "matrix", "large-expression"},
    size_meaning="characters"))
