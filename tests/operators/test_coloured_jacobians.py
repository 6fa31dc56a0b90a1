"""Colourings with known answers, and decompressed Jacobians/Hessians against dense ones."""
import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse", reason="sparse Jacobians need scipy (the `sparse` extra)")
pytest.importorskip("networkx", reason="colouring orderings use networkx (the `sparse` extra)")

from diffcompare.engine import Tensor, array_api, functional as F  # noqa: E402
from diffcompare.operators.coloured import (hessian_forward_over_reverse, jacobian_fd,  # noqa: E402
                                             jacobian_forward, jacobian_reverse)
from diffcompare.operators.colouring import (colour_columns, colour_hessian,  # noqa: E402
                                              colour_rows, compare_orderings)
from diffcompare.operators.sparsity import hessian_pattern, jacobian_pattern  # noqa: E402
from diffcompare.problems.catalog.adbench import (BA_ADBENCH_SIZES, bundle_adjustment,  # noqa: E402
                                                  ba_sized_inputs)


def banded(n, lower, upper):
    i, j = np.indices((n, n))
    return sp.csr_array((j - i <= upper) & (i - j <= lower))


@pytest.mark.parametrize("lower,upper", [(0, 0), (1, 1), (2, 1), (0, 3)])
def test_banded_needs_the_bandwidth(lower, upper):
    c = colour_columns(banded(12, lower, upper))
    assert c.n_colours == c.lower_bound == lower + upper + 1
    assert colour_rows(banded(12, lower, upper)).n_colours == lower + upper + 1


def test_arrowhead():
    n = 8
    m = np.eye(n, dtype=bool)
    m[0, :] = m[:, 0] = True
    c = colour_columns(sp.csr_array(m))
    assert (c.n_colours, c.lower_bound) == (n, n)         # the dense first row
    h = colour_hessian(sp.csr_array(m), kind="column")
    assert h.kind == "symmetric-column" and h.n_colours == n
    h = colour_hessian(sp.csr_array(m))                    # auto: the star colouring's 2
    assert h.kind == "star" and h.n_colours == 2


def test_block_diagonal():
    blocks = sp.block_diag([np.ones((3, 4), bool)] * 5, format="csr")
    c = colour_columns(blocks)
    assert c.n_colours == c.lower_bound == 4
    assert colour_rows(blocks).n_colours == 3


def test_orderings_never_beat_the_lower_bound():
    m = sp.csr_array(np.random.default_rng(3).random((30, 20)) < 0.15)
    counts = compare_orderings(m)
    assert all(v >= counts["lower_bound"] for v in counts.values())
    assert counts["largest_first"] == colour_columns(m).n_colours


def test_largest_first_matches_networkx():
    import networkx as nx

    from diffcompare.operators.colouring import _intersection_graph

    m = sp.csr_array(np.random.default_rng(4).random((40, 30)) < 0.1)
    g = nx.Graph()
    g.add_nodes_from(range(30))
    coo = _intersection_graph(m).tocoo()
    g.add_edges_from(zip(coo.row.tolist(), coo.col.tolist()))
    ref = nx.greedy_color(g, "largest_first")
    np.testing.assert_array_equal(colour_columns(m).colours, [ref[v] for v in range(30)])


def _valid_column_colouring(m, colours):
    m = m.toarray()
    return all(m[:, colours == c].sum(axis=1).max() <= 1 for c in np.unique(colours))


# --- decompression against dense engine and torch Jacobians ------------------------------

def _flat_fn(fn, inputs, wrt):
    """The function of the wrt inputs flattened and concatenated, on engine Tensors."""
    shapes = [np.shape(inputs[i]) for i in wrt]
    sizes = [int(np.prod(s)) for s in shapes]

    def f(flat):
        args = [Tensor(np.asarray(a)) for a in inputs]
        k = 0
        for i, s, n in zip(wrt, shapes, sizes):
            args[i] = flat[k:k + n].reshape(s)
            k += n
        return fn(array_api, *args).reshape(-1)

    x0 = np.concatenate([np.asarray(inputs[i], float).reshape(-1) for i in wrt])
    return f, x0


def _all_methods(fn, inputs, wrt):
    f, x0 = _flat_fn(fn, inputs, wrt)
    pattern = jacobian_pattern(fn, inputs, wrt)
    cols, rows = colour_columns(pattern), colour_rows(pattern)
    assert _valid_column_colouring(pattern.matrix, cols.colours)
    fwd = jacobian_forward(lambda v: F.jvp(f, x0, v)[1], pattern, cols)
    rev = jacobian_reverse(lambda u: F.vjp(f, x0, u)[1], pattern, rows)
    fd = jacobian_fd(lambda x: f(Tensor(x)).data, x0, pattern, cols)
    dense = F.jacobian(f, x0)
    return pattern, cols, fwd, rev, fd, dense


def _chain(xp, x):
    return xp.concatenate([xp.sin(x[1:]) * x[:-1] ** 2, xp.exp(x[:3]) - x[-3:]])


def test_chain_forward_reverse_fd_equal_dense():
    x = np.random.default_rng(5).standard_normal(10)
    pattern, cols, fwd, rev, fd, dense = _all_methods(_chain, (x,), (0,))
    assert cols.n_colours == fwd.passes < x.size
    np.testing.assert_allclose(fwd.matrix.toarray(), dense, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rev.matrix.toarray(), dense, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fd.matrix.toarray(), dense, rtol=0, atol=1e-8)
    assert fwd.matrix.dtype == np.float64 and fd.passes == 2 * cols.n_colours


def test_chain_against_torch():
    torch = pytest.importorskip("torch", reason="the torch comparison needs torch")
    x = np.random.default_rng(6).standard_normal(10)
    _, _, fwd, _, _, _ = _all_methods(_chain, (x,), (0,))
    ref = torch.autograd.functional.jacobian(lambda t: _chain(torch, t), torch.from_numpy(x))
    np.testing.assert_allclose(fwd.matrix.toarray(), ref.numpy(), rtol=0, atol=1e-12)


def test_where_pattern_is_conservative_yet_the_jacobian_exact():
    fn = lambda xp, x: xp.where(x > 0, x * x[::-1], xp.sin(x))   # noqa: E731
    x = np.random.default_rng(7).standard_normal(7)
    pattern, _, fwd, rev, _, dense = _all_methods(fn, (x,), (0,))
    assert "where" in pattern.conservative
    assert pattern.nnz > np.count_nonzero(dense)
    np.testing.assert_allclose(fwd.matrix.toarray(), dense, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rev.matrix.toarray(), dense, rtol=0, atol=1e-12)


def test_ba_blocks_colours_equal_the_row_bound():
    inputs = ba_sized_inputs(4, 12, 30, seed=1)
    wrt = (0, 1, 2)
    pattern, cols, fwd, rev, fd, dense = _all_methods(bundle_adjustment, inputs, wrt)
    # a residual reads one camera's 10 parameters (x: principal point x only), 3 point
    # coordinates and its weight
    assert cols.lower_bound == 14 and cols.n_colours == 14
    assert _valid_column_colouring(pattern.matrix, cols.colours)
    np.testing.assert_array_equal(pattern.matrix.toarray(), dense != 0)
    np.testing.assert_allclose(fwd.matrix.toarray(), dense, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rev.matrix.toarray(), dense, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fd.matrix.toarray(), dense, rtol=0, atol=1e-6)


def test_ba_sized_inputs_counts():
    n_cams, n_pts, n_obs = 5, 20, 47
    cams, points, w, features, cam_index, point_index = ba_sized_inputs(n_cams, n_pts, n_obs, 2)
    assert cams.shape == (n_cams, 11) and points.shape == (n_pts, 3)
    assert w.shape == cam_index.shape == point_index.shape == (n_obs,)
    assert np.bincount(point_index, minlength=n_pts).min() >= 2
    assert np.bincount(cam_index, minlength=n_cams).min() >= 1
    again = ba_sized_inputs(n_cams, n_pts, n_obs, 2)
    assert all(np.array_equal(a, b) for a, b in zip(again, (cams, points, w, features,
                                                             cam_index, point_index)))
    assert BA_ADBENCH_SIZES["ba1"] == (49, 7776, 31843)
    assert BA_ADBENCH_SIZES["ba13"] == (245, 198739, 1091386)   # ADBench's ba13_n245_m198739_p1091386
    # every ADBench size can be drawn: each point seen twice, each camera once
    assert all(obs >= max(2 * pts, cams) for cams, pts, obs in BA_ADBENCH_SIZES.values())
    with pytest.raises(ValueError):
        ba_sized_inputs(5, 20, 39, 0)


@pytest.mark.parametrize("name", ["rosenbrock", "banded_quartic"])
def test_hessian_forward_over_reverse_equals_dense(name):
    fns = {"rosenbrock": lambda xp, x: xp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
           "banded_quartic": lambda xp, x: xp.sum((x[2:] * x[:-2] + x[1:-1]) ** 2)}
    fn = fns[name]
    x = np.random.default_rng(8).standard_normal(9)
    pattern = hessian_pattern(fn, (x,))
    colouring = colour_hessian(pattern)
    scalar = lambda t: fn(array_api, t)      # noqa: E731
    r = hessian_forward_over_reverse(lambda v: F.hvp(scalar, x, v)[1], pattern, colouring)
    dense = F.hessian(scalar, x)
    assert r.passes == colouring.n_colours < x.size
    np.testing.assert_allclose(r.matrix.toarray(), dense, rtol=0, atol=1e-12)
