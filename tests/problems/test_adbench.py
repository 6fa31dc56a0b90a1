"""The ADBench and fitting problems compute their published definitions: each is checked
against a plain per-point NumPy transcription of the reference (loops, no vectorising), and
the hand-written GMM gradient against the engine."""
import math

import numpy as np
import pytest

from diffcompare import backends, problems
from diffcompare.problems.catalog import adbench, fitting


def _gmm_reference(alphas, means, icf, x, gamma=1.0, m=0):
    """ADBench's gmm_objective, point by point (Q built entry by entry, column-major)."""
    n, d = x.shape
    k_count = len(alphas)

    def lse(v):
        top = max(v)
        return top + math.log(sum(math.exp(t - top) for t in v))

    Qs = []
    for k in range(k_count):
        Q = np.diag(np.exp(icf[k, :d]))
        pos = d
        for col in range(d):
            for row in range(col + 1, d):
                Q[row, col] = icf[k, pos]
                pos += 1
        Qs.append(Q)
    total = 0.0
    for i in range(n):
        terms = []
        for k in range(k_count):
            y = Qs[k] @ (x[i] - means[k])
            terms.append(alphas[k] + icf[k, :d].sum() - 0.5 * float(y @ y))
        total += lse(terms)
    nw = d + m + 1
    c = nw * d * (math.log(gamma) - 0.5 * math.log(2)) - (
        0.25 * d * (d - 1) * math.log(math.pi)
        + sum(math.lgamma(0.5 * nw + 0.5 * (1 - j)) for j in range(1, d + 1)))
    prior = sum(0.5 * gamma ** 2 * (np.sum(np.exp(icf[k, :d]) ** 2) + np.sum(icf[k, d:] ** 2))
                - m * icf[k, :d].sum() for k in range(k_count)) - k_count * c
    return -n * d * 0.5 * math.log(2 * math.pi) + total - n * lse(list(alphas)) + prior


def test_gmm_matches_adbench_point_by_point():
    alphas, means, icf, x = adbench.gmm_inputs(3, seed=1, d=3, n=7)
    got = float(problems.get("gmm").fn(np, alphas, means, icf, x))
    assert got == pytest.approx(_gmm_reference(alphas, means, icf, x), rel=1e-12)


def test_gmm_lower_triangle_is_column_major():
    idx = adbench.lower_index(3)
    # icf[d:] = [a, b, c] -> Q[1,0] = a, Q[2,0] = b, Q[2,1] = c (ADBench's order)
    assert idx.tolist() == [[0, 0, 0], [1, 0, 0], [2, 3, 0]]


def test_gmm_grid_is_one_problem_per_d_and_n_with_adbench_shapes():
    """ADBench's d and n, each a catalog problem made by one factory; size = K components."""
    grid = {adbench.gmm_problem_name(d, n): (d, n) for d, n in adbench.GMM_GRID}
    assert set(adbench.GMM_PROBLEMS) == set(grid) == {
        "gmm", "gmm_d2", "gmm_d20", "gmm_d32", "gmm_d64", "gmm_10k", "gmm_d64_10k"}
    assert {d for d, _ in grid.values()} == {2, 10, 20, 32, 64}
    assert {n for _, n in grid.values()} == {1000, 10000} and grid["gmm"] == (10, 1000)
    for name, (d, n) in grid.items():
        p = problems.get(name)
        assert p.fn.__wrapped__ is adbench.gmm          # the one definition, other shapes
        assert set(p.sizes[1:]) <= {5, 10, 25, 50, 100, 200} and p.sizes[0] == 2
        k = p.sizes[1]
        alphas, means, icf, x = p.inputs(k)
        assert ((alphas.shape, means.shape, icf.shape, x.shape)
                == ((k,), (k, d), (k, d * (d + 1) // 2), (n, d)))
        assert p.n_inputs(k) == k * (1 + d + d * (d + 1) // 2)
        assert f"d = {d}, n = {n}" in p.description and f"d = {d}, n = {n}" in p.size_meaning
        assert backends.get("manual").supports(p), name
    assert problems.get("gmm").sizes == (2, 5, 10, 25, 50, 100, 200)
    # the manual backend's GMM names are the catalog's, not a pattern
    stray = problems.Problem("gmm_d3", adbench.gmm, lambda k, seed: adbench.gmm_inputs(k, seed, d=3),
                             "d = 3", wrt=(0, 1, 2))
    assert not backends.get("manual").supports(stray)


@pytest.mark.parametrize("name, size", [("gmm", 2), ("gmm", 5), ("gmm_d2", 5), ("gmm_d20", 2)])
def test_manual_gmm_gradient_matches_the_engine_and_torch(name, size):
    p = problems.get(name)
    inputs = p.inputs(size)
    want = backends.compute_gradient(backends.get("engine"), p, inputs)
    others = ["manual"] + (["torch"] if backends.get("torch").available() else [])
    for other in others:
        got = backends.compute_gradient(backends.get(other), p, inputs)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9 * np.abs(w).max())


def _ba_reference(cams, points, w, features, cam_index, point_index):
    """ADBench's per-observation project / compute_reproj_err / compute_zach_weight_error."""
    errs = []
    for o in range(len(w)):
        cam, X = cams[cam_index[o]], points[point_index[o]]
        rot, xc = cam[0:3], X - cam[3:6]
        theta = np.sqrt(rot @ rot)
        ax = rot / theta
        xr = (xc * np.cos(theta) + np.cross(ax, xc) * np.sin(theta)
              + ax * (ax @ xc) * (1 - np.cos(theta)))
        p = xr[:2] / xr[2]
        rsq = p @ p
        p = p * (1 + cam[9] * rsq + cam[10] * rsq * rsq)
        errs.append(w[o] * (p * cam[6] + cam[7:9] - features[o]))
    return np.concatenate([np.ravel(errs), 1 - w * w])


def test_bundle_adjustment_matches_adbench_per_observation():
    args = adbench.ba_inputs(2, seed=3)
    got = problems.get("bundle_adjustment").fn(np, *args)
    np.testing.assert_allclose(got, _ba_reference(*args), rtol=1e-12, atol=1e-14)
    n_obs = len(args[2])
    assert got.shape == (3 * n_obs,) == problems.get("bundle_adjustment").cotangent(2).shape


def _lstm_reference(main, extra, state, seq):
    """ADBench's lstm_objective (PyTorch reference) transcribed to NumPy."""
    def sig(z):
        return 1 / (1 + np.exp(-z))

    s = state.copy()
    total, count = 0.0, 0
    inp = seq[0]
    for t in range(len(seq) - 1):
        s2 = s.copy()
        x = extra[0] * inp
        for i in range(0, len(s), 2):
            gates = np.concatenate([x, s[i], x, s[i]]) * main[i] + main[i + 1]
            h = len(x)
            cell = s[i + 1] * sig(gates[:h]) + sig(gates[h:2 * h]) * np.tanh(gates[3 * h:])
            s2[i], s2[i + 1] = sig(gates[2 * h:3 * h]) * np.tanh(cell), cell
            x = s2[i]
        ypred = extra[1] * x + extra[2]
        ynorm = ypred - np.log(sum(np.exp(ypred), 2))     # ADBench: the sum starts at 2
        total += np.sum(seq[t + 1] * ynorm)
        count += len(seq[t + 1])
        inp = seq[t + 1]
        s = s2
    return -total / count


def test_lstm_matches_adbench():
    args = adbench.lstm_inputs(5, seed=2)
    assert float(problems.get("lstm").fn(np, *args)) == pytest.approx(_lstm_reference(*args), rel=1e-12)


def test_kmeans_gradient_and_hessian_diagonal_in_closed_form():
    """d/dc_k = 2 Σ_{i in cluster k} (c_k - p_i); the Hessian is diagonal, 2 × |cluster k|
    (one Hessian-vector product with a vector of ones gives the diagonal)."""
    p = problems.get("kmeans")
    c, pts = p.inputs(4)
    nearest = np.argmin(((pts[:, None, :] - c[None]) ** 2).sum(-1), axis=1)
    counts = np.bincount(nearest, minlength=len(c)).astype(float)
    want = 2 * (counts[:, None] * c - np.array([pts[nearest == k].sum(0) for k in range(len(c))]))
    engine = backends.get("engine")
    (g,) = backends.compute_gradient(engine, p, (c, pts))
    np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-9)
    prepared = engine.prepare(p, (c, pts))
    (hv,) = engine.hvp(prepared, (c, pts), (np.ones_like(c),))
    np.testing.assert_allclose(hv, np.repeat(2 * counts[:, None], c.shape[1], axis=1), rtol=1e-12)


def test_linear_least_squares_gradient_is_two_at_residual():
    x, A, b = fitting.lls_inputs(8, seed=0)
    p = problems.get("linear_least_squares")
    (g,) = backends.compute_gradient(backends.get("manual"), p, (x, A, b))
    np.testing.assert_allclose(g, 2 * A.T @ (A @ x - b), rtol=1e-13)


def test_symbolic_backends_refuse_the_large_problems_with_a_reason():
    for name in ("gmm", "bundle_adjustment", "kmeans", "lstm"):
        support = backends.get("sympy").supports(problems.get(name))
        assert not support and "tag" in support.reason
    assert "integer index" in backends.get("sympy").supports(problems.get("bundle_adjustment")).reason
