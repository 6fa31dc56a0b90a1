"""Linear algebra on the engine: einsum and the products built on it (dot, vdot, inner, outer,
tensordot, kron, trace, cross, matrix_transpose) and ``xp.linalg`` (det, slogdet, inv, solve,
cholesky, eigh, eigvalsh, qr, norm), each checked by ``opcheck.check`` against torch in float64
(value, VJP, second-order VJP, JVP, compiled gradient), batched, with NumPy's semantics."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import diffcompare.engine as E
from diffcompare.engine import Tensor, autograd, compile as engine_compile
from diffcompare.engine import array_api as xp
from tests.engine.opcheck import BROADCAST_SHAPES, check, rng

L = xp.linalg


def _k(key) -> int:
    """A seed from any case key, the same in every process (``hash`` of a str is not)."""
    return zlib.crc32(repr(key).encode())


def _randn(key, *shape):
    return rng(_k(("linalg", key, shape))).standard_normal(shape)


def _spd(key, n, batch=()):
    m = _randn(key, *batch, n, n)
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def _sym_separated(key, n, batch=()):
    """A symmetric matrix with well-separated eigenvalues 1, 3, 5, ..."""
    q, _ = np.linalg.qr(_randn(key, *batch, n, n))
    w = 1.0 + 2.0 * np.arange(n)
    return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)


# --- einsum ----------------------------------------------------------------------------------

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),                 # implicit output
    ("ba", [(2, 3)]),                            # implicit: a transpose
    ("ii->i", [(3, 3)]),                         # repeated label: the diagonal
    ("ii", [(3, 3)]),                            # the trace
    ("ij->", [(2, 3)]),
    ("ij->i", [(2, 3)]),                         # a label only one operand has
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]),   # ellipsis, broadcasting batch
    ("...i,i", [(2, 3, 4), (4,)]),
    ("i,i->i", [(1,), (3,)]),                    # a size-1 dim broadcast against 3
    ("i,j,k->ijk", [(2,), (3,), (2,)]),          # three operands (optimize)
    ("bij,bjk,bkl->bil", [(2, 2, 3), (2, 3, 2), (2, 2, 2)]),
    ("iij->j", [(2, 2, 3)]),
    ("ij,ij->", [(0, 3), (0, 3)]),               # size 0
]


@pytest.mark.parametrize("spec, shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum(spec, shapes):
    xs = [_randn((spec, i), *s) for i, s in enumerate(shapes)]
    check(lambda *ts: E.einsum(spec, *ts), lambda *ts: torch.einsum(spec, *ts), xs, key=_k(spec))


def test_einsum_value_matches_numpy_and_bad_subscripts():
    a = _randn("e", 2, 3, 4)
    for spec in ["ijk->kji", "ijk", "i...->...", "...k", "iJk->Jik"]:
        np.testing.assert_allclose(E.einsum(spec, a).data, np.einsum(spec, a), rtol=1e-12)
    b = _randn("e2", 4, 3)
    np.testing.assert_allclose(E.einsum(a, [0, 1, 2], b, [2, 1], [0]).data,
                               np.einsum(a, [0, 1, 2], b, [2, 1], [0]), rtol=1e-12)
    np.testing.assert_allclose(E.einsum(a, [Ellipsis, 2], b, [2, 1]).data,
                               np.einsum(a, [Ellipsis, 2], b, [2, 1]), rtol=1e-12)
    with pytest.raises(ValueError, match="label 'j'"):
        E.einsum("ij,jk", np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="2 operand"):
        E.einsum("ij,jk", np.ones((2, 3)))
    with pytest.raises(ValueError, match="names no input"):
        E.einsum("ij->z", np.ones((2, 3)))


# --- dot and the other products ----------------------------------------------------------------

DOT_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4)),
              ((2, 2, 3), (3,)), ((2, 2, 3), (4, 3, 2)), ((3,), (2, 3, 4)), ((), (2, 3)),
              ((2, 3), ())]


@pytest.mark.parametrize("sa, sb", DOT_SHAPES)
def test_dot_is_numpys_dot(sa, sb):
    """NumPy's dot of a 3-D operand contracts a's last axis with b's second-to-last and keeps
    every other axis (not matmul's broadcast batch); a 0-d operand multiplies."""
    a, b = _randn(("dot", 1), *sa), _randn(("dot", 2), *sb)
    out = E.dot(Tensor(a), Tensor(b))
    assert out.shape == np.dot(a, b).shape
    np.testing.assert_allclose(out.data, np.dot(a, b), rtol=1e-12)
    np.testing.assert_allclose(xp.dot(a, b).data, np.dot(a, b), rtol=1e-12)
    ref = (lambda x, y: torch.tensordot(x, y, dims=([x.ndim - 1], [max(y.ndim - 2, 0)]))
           if x.ndim and y.ndim else x * y)
    check(E.dot, ref, [a, b], key=_k(("dot", sa, sb)))


def test_dot_3d_differs_from_matmul():
    a, b = _randn(("dm", 1), 2, 2, 2), _randn(("dm", 2), 2, 2, 2)
    assert not np.allclose(np.dot(a, b).reshape(-1)[:8], np.matmul(a, b).reshape(-1))
    assert E.dot(a, b).shape == (2, 2, 2, 2)


def test_products_against_torch():
    a, b = _randn(("p", 1), 2, 3), _randn(("p", 2), 3, 2)
    check(E.vdot, lambda x, y: torch.dot(x.reshape(-1), y.reshape(-1)), [a, b])
    check(E.outer, lambda x, y: torch.outer(x.reshape(-1), y.reshape(-1)), [a, b])
    c = _randn(("p", 3), 4, 3)
    check(E.inner, torch.inner, [a, c])
    check(E.inner, torch.inner, [_randn(("p", 4), 3), c])
    check(E.kron, torch.kron, [a, b])
    check(E.kron, torch.kron, [_randn(("p", 5), 3), b])
    check(E.kron, torch.kron, [_randn(("p", 6), 2, 1, 2), _randn(("p", 7), 3, 2)])


@pytest.mark.parametrize("axes, sa, sb", [(2, (2, 3, 4), (3, 4, 2)), (1, (2, 3), (3, 2)),
                                          (0, (2,), (3,)), (([0, 2], [1, 0]), (2, 3, 4), (4, 2, 3)),
                                          ((1, 0), (2, 3), (3, 2))])
def test_tensordot(axes, sa, sb):
    a, b = _randn(("td", 1), *sa), _randn(("td", 2), *sb)
    np.testing.assert_allclose(E.tensordot(a, b, axes).data, np.tensordot(a, b, axes), rtol=1e-12)
    tdims = axes if isinstance(axes, int) else tuple([a] if isinstance(a, int) else a for a in axes)
    check(lambda x, y: E.tensordot(x, y, axes), lambda x, y: torch.tensordot(x, y, dims=tdims),
          [a, b], key=_k(axes))


@pytest.mark.parametrize("offset, axes", [(0, (0, 1)), (1, (0, 1)), (-1, (1, 2)), (0, (2, 0))])
def test_trace(offset, axes):
    x = _randn("tr", 3, 3, 4)
    np.testing.assert_allclose(E.trace(x, offset, *axes).data, np.trace(x, offset, *axes), rtol=1e-12)
    ref = lambda t: torch.diagonal(t, offset, *axes).sum(-1)
    check(lambda t: E.trace(t, offset, *axes), ref, [x], key=_k((offset, *axes)))


@pytest.mark.parametrize("sa, sb, kw", [((3,), (3,), {}), ((2, 3), (3,), {}), ((4, 1, 3), (2, 3), {}),
                                        ((3, 2), (2, 3), {"axisa": 0}), ((3, 2), (3, 2), {"axis": 0}),
                                        ((2, 3), (2, 3), {"axisc": 0})])
def test_cross(sa, sb, kw):
    a, b = _randn(("cr", 1), *sa), _randn(("cr", 2), *sb)
    np.testing.assert_allclose(E.cross(a, b, **kw).data, np.cross(a, b, **kw), rtol=1e-12)
    check(lambda x, y: E.cross(x, y, **kw),
          lambda x, y: _torch_cross(x, y, **kw),
          [a, b], key=_k(kw))
    with pytest.raises(ValueError, match="3-vectors"):
        E.cross(np.ones(2), np.ones(2))


def _torch_cross(x, y, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    c = torch.linalg.cross(*torch.broadcast_tensors(torch.movedim(x, axisa, -1), torch.movedim(y, axisb, -1)))
    return torch.movedim(c, -1, axisc)


def test_matrix_transpose_and_float32_kept():
    x = _randn("mt", 2, 3, 4)
    np.testing.assert_array_equal(E.matrix_transpose(x).data, np.swapaxes(x, -1, -2))
    f = x.astype(np.float32)
    for out in [E.dot(f, f[0].T), E.einsum("ijk,ijk->i", f, f), E.tensordot(f, f, 3), E.kron(f[0], f[1]),
                E.outer(f[0], f[1]), E.inner(f, f), E.vdot(f, f), E.cross(f[..., :3], f[..., 1:]),
                L.det(f[:, :3, :3]), L.inv(f[:, :3, :3]), L.norm(f), L.slogdet(f[:, :3, :3])[1],
                L.solve(f[:, :3, :3], f[0, :3, 0]), L.qr(f)[1], L.eigh(f[0, :3, :3] + f[0, :3, :3].T)[1],
                L.cholesky(_spd("c32", 3).astype(np.float32))]:
        assert out.dtype == np.float32, out
    t = Tensor(f[:, :3, :3], requires_grad=True)
    (L.det(t).sum() + L.inv(t).sum() + L.norm(t)).backward()
    assert t.grad.dtype == np.float32


# --- det, slogdet, inv, solve -------------------------------------------------------------------

BATCHES = [(), (2,), (2, 1)]


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("n", [1, 3])
def test_det_slogdet_inv(batch, n):
    a = _randn(("det", n), *batch, n, n) + 2 * np.eye(n)
    check(L.det, torch.linalg.det, [a], key=_k(("det", n)))
    check(lambda t: L.slogdet(t)[1], lambda t: torch.linalg.slogdet(t)[1], [a], key=_k(("sld", n)))
    check(L.inv, torch.linalg.inv, [a], key=_k(("inv", n)))
    sign, logabs = L.slogdet(a)
    np.testing.assert_allclose(sign.data, np.linalg.slogdet(a)[0])
    assert not sign.requires_grad


def test_node_names_are_torchs():
    a = Tensor(_randn("nn", 3, 3) + 3 * np.eye(3), requires_grad=True)
    s = a @ a.mT
    names = {"LinalgDetBackward0": L.det(a), "LinalgSlogdetBackward0": L.slogdet(a)[1],
             "LinalgInvExBackward0": L.inv(a), "LinalgSolveExBackward0": L.solve(a, a),
             "LinalgCholeskyExBackward0": L.cholesky(s), "LinalgEighBackward0": L.eigh(s)[0],
             "LinalgQrBackward0": L.qr(a)[0], "LinalgVectorNormBackward0": L.norm(a)}
    for name, out in names.items():
        assert out.grad_fn.name() == name


def test_det_near_singular_and_singular():
    u = _randn("sing", 3, 2)
    a = u @ _randn("sing2", 2, 3)                      # rank 2, det ~ 1e-17
    # at condition ~1e6 the second-order VJP amplifies last-bit differences (LAPACK's, which vary
    # from run to run) to ~2e-6 relative: first order there, second order one decade further out
    check(L.det, torch.linalg.det, [a + 1e-6 * np.eye(3)], rtol=1e-6, atol=1e-12, second=False)
    check(L.det, torch.linalg.det, [a + 1e-3 * np.eye(3)], rtol=1e-6, atol=1e-12)
    # exactly singular: the adjugate (cofactors), finite; torch 2.13 returns zeros there
    for b in [np.array([[1.0, 2.0], [2.0, 4.0]]), np.diag([1.0, 2.0, 0.0]),
              np.zeros((2, 3, 3)), np.array([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 2.0]]])]:
        t = Tensor(b, requires_grad=True)
        L.det(t).sum().backward()
        cof = _cofactors_reference(b)
        np.testing.assert_allclose(t.grad.data, cof, atol=1e-12)
        _, (g,) = engine_compile(lambda x: L.det(x).sum(), wrt=(0,))(b)
        np.testing.assert_allclose(g, cof, atol=1e-12)
        # second order: d/dA <cof(A), W>, by central differences of the (polynomial) cofactors
        w = _randn("w", *b.shape)
        t = Tensor(b, requires_grad=True)
        (gt,) = autograd.grad(L.det(t).sum(), [t], create_graph=True)
        (h,) = autograd.grad((gt * w).sum(), [t])
        eps = 1e-6
        fd = np.zeros_like(b)
        for i in np.ndindex(b.shape):
            d = np.zeros_like(b); d[i] = eps
            fd[i] = ((_cofactors_reference(b + d) - _cofactors_reference(b - d)) * w).sum() / (2 * eps)
        np.testing.assert_allclose(h.data, fd, atol=1e-6)


def _cofactors_reference(a):
    n = a.shape[-1]
    out = np.zeros_like(a)
    for idx in np.ndindex(a.shape[:-2]):
        m = a[idx]
        for i in range(n):
            for j in range(n):
                minor = np.delete(np.delete(m, i, 0), j, 1)
                out[idx + (i, j)] = (-1) ** (i + j) * (np.linalg.det(minor) if n > 1 else 1.0)
    return out


def test_singular_inv_solve_raise_clearly():
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    for call in [lambda: L.inv(s), lambda: L.solve(s, np.ones(2))]:
        with pytest.raises(np.linalg.LinAlgError, match="singular.*regulariz"):
            call()
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        L.det(np.ones((2, 3)))
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        L.cholesky(-np.eye(2))


@pytest.mark.parametrize("sa, sb", [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)),
                                    ((2, 3, 3), (2, 3, 1)), ((2, 1, 3, 3), (4, 3, 2)),
                                    ((3, 3), (2, 3, 2))])
def test_solve_numpy2_semantics(sa, sb):
    a = _randn(("solve", 1), *sa) + 3 * np.eye(3)
    b = _randn(("solve", 2), *sb)
    out = L.solve(a, b)
    np.testing.assert_allclose(out.data, np.linalg.solve(a, b), rtol=1e-10)
    if len(sb) == 1:
        ref = lambda x, y: torch.linalg.solve(x, y.expand(x.shape[:-1]).unsqueeze(-1)).squeeze(-1)
    else:
        ref = torch.linalg.solve
    check(L.solve, ref, [a, b], key=_k((sa, sb)))


# --- cholesky, eigh, qr ------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [(), (2,)])
def test_cholesky(batch):
    a = _spd("chol", 3, batch)
    check(L.cholesky, torch.linalg.cholesky, [a], key=_k(batch))
    # through a function of a free matrix, so the input's whole gradient is exercised
    m = _randn("cholm", *batch, 3, 3)
    spd = lambda M, lib: M @ M.swapaxes(-1, -2) + 3 * lib.eye(3)
    check(lambda M: L.cholesky(spd(M, xp)), lambda M: torch.linalg.cholesky(
        M @ M.mT + 3 * torch.eye(3, dtype=M.dtype)), [m], key=_k(("m", batch)))
    np.testing.assert_allclose(L.cholesky(a, upper=True).data, np.linalg.cholesky(a, upper=True))


@pytest.mark.parametrize("batch", [(), (2,)])
def test_eigh_separated(batch):
    a = _sym_separated("eigh", 3, batch)
    w, v = L.eigh(a)
    wn, vn = np.linalg.eigh(a)
    np.testing.assert_allclose(w.data, wn, rtol=1e-12)
    np.testing.assert_allclose(v.data, vn, rtol=1e-12)
    check(lambda t: L.eigh(t)[0], lambda t: torch.linalg.eigh(t)[0], [a], key=_k(("w", batch)))
    check(L.eigvalsh, torch.linalg.eigvalsh, [a], key=_k(("wh", batch)))
    # eigenvectors are defined up to sign: use a sign-invariant function of them
    check(lambda t: L.eigh(t)[1] ** 2, lambda t: torch.linalg.eigh(t)[1] ** 2, [a], key=_k(("v", batch)))
    check(lambda t: (L.eigh(t)[0][..., None] * L.eigh(t)[1] ** 2),
          lambda t: torch.linalg.eigh(t)[0][..., None] * torch.linalg.eigh(t)[1] ** 2, [a], key=_k(("wv", batch)))


def test_eigh_repeated_eigenvalues():
    """Repeated eigenvalues: the eigenvalues' gradient is finite and right; the eigenvectors'
    is undefined: inf/nan, as torch's, with a warning saying why."""
    a = np.diag([1.0, 1.0, 2.0])
    t = Tensor(a, requires_grad=True)
    L.eigvalsh(t).sum().backward()
    np.testing.assert_allclose(t.grad.data, np.eye(3), atol=1e-12)
    t = Tensor(a, requires_grad=True)
    with pytest.warns(RuntimeWarning, match="repeated eigenvalues"):
        L.eigh(t)[1].sum().backward()
    assert not np.all(np.isfinite(t.grad.data))
    T = torch.tensor(a, requires_grad=True)
    torch.linalg.eigh(T)[1].sum().backward()
    assert not torch.all(torch.isfinite(T.grad))


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4, 3), (2, 4), (2, 2, 3)])
def test_qr(shape):
    a = _randn("qr", *shape)
    q, r = L.qr(a)
    qn, rn = np.linalg.qr(a)
    np.testing.assert_allclose(q.data, qn, rtol=1e-12)
    np.testing.assert_allclose(r.data, rn, rtol=1e-12)
    check(lambda t: L.qr(t)[0], lambda t: torch.linalg.qr(t)[0], [a], key=_k(("q", shape)))
    check(lambda t: L.qr(t)[1], lambda t: torch.linalg.qr(t)[1], [a], key=_k(("r", shape)))
    check(lambda t: L.qr(t)[0] * 2 + L.qr(t)[1].sum(),
          lambda t: torch.linalg.qr(t)[0] * 2 + torch.linalg.qr(t)[1].sum(), [a], key=_k(("qr", shape)))


# --- norm ---------------------------------------------------------------------------------------

VECTOR_ORDS = [None, 2, 1, np.inf, -np.inf, 3, 1.5, 0.5]


@pytest.mark.parametrize("ord", VECTOR_ORDS)
@pytest.mark.parametrize("shape, axis, keepdims", [((4,), None, False), ((2, 3), 1, True),
                                                   ((2, 3, 2), 0, False), ((2, 3), -1, False)])
def test_vector_norm(ord, shape, axis, keepdims):
    x = _randn("vn", *shape)
    out = L.norm(x, ord, axis, keepdims)
    np.testing.assert_allclose(out.data, np.linalg.norm(x, ord, axis, keepdims), rtol=1e-12)
    dim = axis if axis is not None else None
    check(lambda t: L.norm(t, ord, axis, keepdims),
          lambda t: torch.linalg.vector_norm(t, 2 if ord is None else ord, dim=dim, keepdim=keepdims),
          [x], key=_k((ord, shape, axis)))


@pytest.mark.parametrize("ord", [None, "fro", 1, -1, np.inf, -np.inf])
def test_matrix_norm(ord):
    x = _randn("mn", 2, 3, 4)
    out = L.norm(x, ord, (1, 2))
    np.testing.assert_allclose(out.data, np.linalg.norm(x, ord, (1, 2)), rtol=1e-12)
    check(lambda t: L.norm(t, ord, (1, 2)),
          lambda t: torch.linalg.matrix_norm(t, "fro" if ord is None else ord, dim=(1, 2)),
          [x], key=_k(ord))
    np.testing.assert_allclose(L.norm(x[0], ord).data, np.linalg.norm(x[0], ord), rtol=1e-12)
    np.testing.assert_allclose(L.norm(x, ord, (2, 0), keepdims=True).data,
                               np.linalg.norm(x, ord, (2, 0), keepdims=True), rtol=1e-12)


def test_norm_subgradients_at_zero_and_ties():
    """At x = 0 the 2-norm's (and p-norms') gradient is 0, torch's subgradient; ties of the
    inf-norm share it evenly."""
    for ord in [None, 2, 3, 1.5, 0.5, 1]:
        check(lambda t: L.norm(t, ord), lambda t: torch.linalg.vector_norm(t, 2 if ord is None else ord),
              [np.zeros(3)], key=_k(ord),
              # torch's second derivative (and so opcheck's double-VJP JVP) at 0 is nan (0/0);
              # the engine's is 0, the subgradient's: checked below
              second=False, forward=False)
        t = Tensor(np.zeros(3), requires_grad=True)
        (g,) = autograd.grad(L.norm(t, ord), [t], create_graph=True)
        np.testing.assert_array_equal(g.data, 0.0)
    check(lambda t: L.norm(t, np.inf), lambda t: torch.linalg.vector_norm(t, float("inf")),
          [np.array([1.0, -2.0, 2.0, 0.5])])
    check(lambda t: L.norm(t, 2, axis=1), lambda t: torch.linalg.vector_norm(t, dim=1),
          [np.array([[0.0, 0.0], [3.0, 4.0]])],
          second=False, forward=False)   # the zero row: torch's nan, as above
    with pytest.raises(ValueError, match="invalid norm order"):
        L.norm(np.eye(2), 3)


# --- compile prints the calls -------------------------------------------------------------------

def test_compiled_source_calls_numpy_linalg():
    def f(a, b):
        return (L.det(a) + L.solve(a, b).sum() + L.inv(a).sum() + E.einsum("ij,j->", a, b)
                + L.eigh(a @ a.mT)[0].sum() + E.tensordot(a, a, 2))
    a = _randn("src", 3, 3) + 3 * np.eye(3)
    b = _randn("src2", 3)
    fn = engine_compile(f, wrt=(0, 1))
    value, grads = fn(a, b)
    src = fn.source
    for call in ["np.linalg.det(", "np.linalg.solve(", "np.linalg.inv(", "np.linalg.eigh(", "np.einsum('"]:
        assert call in src, call
    assert "np.det(" not in src and "np.inv(" not in src
    A, B = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    f(A, B).backward()
    np.testing.assert_allclose(grads[0], A.grad.data, rtol=1e-10)
    np.testing.assert_allclose(grads[1], B.grad.data, rtol=1e-10)
    value2, grads2 = fn(a + 0.1, b)      # a second call runs the generated code
    A = Tensor(a + 0.1, requires_grad=True)
    f(A, Tensor(b)).backward()
    np.testing.assert_allclose(grads2[0], A.grad.data, rtol=1e-10)


# --- matrix_power, multi_dot, size 0 ------------------------------------------------------------

@pytest.mark.parametrize("n", [-2, 0, 1, 3])
def test_matrix_power(n):
    a = _randn(("mp", n), 2, 3, 3) + 2 * np.eye(3)
    np.testing.assert_allclose(L.matrix_power(a, n).data, np.linalg.matrix_power(a, n), rtol=1e-10)
    if n:
        check(lambda t: L.matrix_power(t, n), lambda t: torch.linalg.matrix_power(t, n), [a], key=_k(n))


@pytest.mark.parametrize("shapes", [[(3,), (3, 4), (4, 2)], [(2, 3), (3, 4), (4,)],
                                    [(5, 2), (2, 4), (4, 3), (3, 2)], [(2, 9), (9, 3), (3, 1)]])
def test_multi_dot(shapes):
    xs = [_randn(("md", i), *s) for i, s in enumerate(shapes)]
    np.testing.assert_allclose(L.multi_dot(xs).data, np.linalg.multi_dot(xs), rtol=1e-10)
    check(lambda *ts: L.multi_dot(ts), lambda *ts: torch.linalg.multi_dot(ts), xs, key=_k(shapes))


def test_size_zero_batches():
    """An empty batch of matrices: empty results and empty gradients, no error."""
    a = np.zeros((0, 3, 3))
    for fn in [L.det, L.inv, lambda t: L.slogdet(t)[1], lambda t: L.solve(t, np.ones(3)),
               lambda t: L.norm(t, axis=(1, 2)), lambda t: E.einsum("bij,bjk->bik", t, t)]:
        t = Tensor(a, requires_grad=True)
        out = fn(t)
        assert out.shape[0] == 0
        out.sum().backward()
        assert t.grad.shape == a.shape


# --- svd, svdvals, pinv, nuclear and 2-norms ----------------------------------------------------

SVD_SHAPES = [(3, 3), (4, 2), (2, 4), (2, 3, 2)]


@pytest.mark.parametrize("shape", SVD_SHAPES)
def test_svd(shape):
    a = _randn("svd", *shape)
    u, s, vh = L.svd(a, full_matrices=False)
    un, sn, vhn = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(s.data, sn, rtol=1e-12)
    np.testing.assert_allclose((u.data * s.data[..., None, :]) @ vh.data, a, atol=1e-12)
    tsvd = lambda t: torch.linalg.svd(t, full_matrices=False)
    check(L.svdvals, torch.linalg.svdvals, [a], key=_k(("s", shape)))
    # singular vectors are defined up to sign: sign-invariant functions of them
    check(lambda t: L.svd(t, False)[0] ** 2, lambda t: tsvd(t)[0] ** 2, [a], key=_k(("u", shape)))
    check(lambda t: L.svd(t, False)[2] ** 2, lambda t: tsvd(t)[2] ** 2, [a], key=_k(("v", shape)))

    def usv(svd_of, einsum):
        def f(t):
            u, s, vh = svd_of(t)
            return einsum("...ik,...k,...kj->...ij", u, s ** 2, vh)   # U S^2 Vh: sign-free
        return f
    check(usv(lambda t: L.svd(t, False), E.einsum), usv(tsvd, torch.einsum), [a],
          key=_k(("usv", shape)))
    if shape[-1] != shape[-2]:
        with pytest.raises(NotImplementedError, match="full_matrices=False"):
            L.svd(a)


def test_svd_repeated_singular_values():
    a = np.diag([2.0, 2.0, 1.0])
    t = Tensor(a, requires_grad=True)
    L.svdvals(t).sum().backward()
    np.testing.assert_allclose(t.grad.data, np.eye(3), atol=1e-12)
    t = Tensor(a, requires_grad=True)
    with pytest.warns(RuntimeWarning, match="repeated singular values"):
        L.svd(t)[0].sum().backward()
    assert not np.all(np.isfinite(t.grad.data))


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 3, 4)])
def test_pinv(shape):
    a = _randn("pinv", *shape)
    np.testing.assert_allclose(L.pinv(a).data, np.linalg.pinv(a), rtol=1e-10, atol=1e-12)
    check(L.pinv, torch.linalg.pinv, [a], key=_k(shape))


@pytest.mark.parametrize("ord", ["nuc", 2, -2])
def test_matrix_norms_of_singular_values(ord):
    x = _randn("mns", 2, 3, 4)
    np.testing.assert_allclose(L.norm(x, ord, (1, 2)).data, np.linalg.norm(x, ord, (1, 2)), rtol=1e-12)
    np.testing.assert_allclose(L.norm(x, ord, (2, 0), keepdims=True).data,
                               np.linalg.norm(x, ord, (2, 0), keepdims=True), rtol=1e-12)
    check(lambda t: L.norm(t, ord, (1, 2)), lambda t: torch.linalg.matrix_norm(t, ord, dim=(1, 2)),
          [x], key=_k(ord))


# --- einsum's matrix-product route (_contract2): large plain contractions go through BLAS ---

CONTRACTIONS = [("id,jd->ij", (64, 16), (48, 16)), ("ij,jd->id", (40, 50), (50, 16)),
                ("abc,cd->abd", (3, 20, 30), (30, 12)), ("ijk,jl->lki", (10, 12, 14), (12, 9)),
                ("bik,bkj->bij", (5, 10, 12), (5, 12, 9)), ("aijc,cd->iad", (3, 9, 10, 12), (12, 10)),
                # not matrix products: np.einsum's own loop (outer, matvec, diagonal, elementwise)
                ("i,j->ij", (300,), (300,)), ("aijc,cj->ia", (3, 9, 10, 12), (12, 10)), ("bij,bj->bi", (20, 30, 40), (20, 40)),
                ("ij,ij->i", (300, 300), (300, 300)), ("ii,ij->j", (300, 300), (300, 20))]


@pytest.mark.parametrize("spec, a_shape, b_shape", CONTRACTIONS, ids=[c[0] for c in CONTRACTIONS])
def test_two_operand_einsum_equals_numpys_on_every_route(spec, a_shape, b_shape):
    from diffcompare.engine.ops.linalg import _contract2, _np_einsum

    g = rng("contract", spec)
    a, b = g.standard_normal(a_shape), g.standard_normal(b_shape)
    takes_blas = a.size * b.size >= (1 << 16) and _contract2(spec, a, b) is not None
    assert takes_blas == (CONTRACTIONS.index((spec, a_shape, b_shape)) < 6), spec
    np.testing.assert_allclose(_np_einsum(spec, a, b), np.einsum(spec, a, b), rtol=1e-12, atol=1e-12)


def test_attention_by_einsum_through_blas_against_torch_in_every_mode():
    import torch

    g = rng("attention")
    q, k = 0.3 * g.standard_normal((40, 12)), 0.3 * g.standard_normal((30, 12))
    check(lambda a, b: E.einsum("id,jd->ij", a, b).tanh(),
          lambda a, b: torch.einsum("id,jd->ij", a, b).tanh(), [q, k])
