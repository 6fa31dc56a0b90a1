"""Linear algebra: the matrix product with NumPy's ``matmul`` semantics (vectors, batches,
broadcasting), ``einsum`` (the core of ``dot``, ``vdot``, ``inner``, ``outer``, ``tensordot``
and ``kron``), and the ``linalg`` functions with their backward nodes."""
from __future__ import annotations

import functools
import string as _string
import warnings as _warnings

import numpy as np

from ..function import Function
from ..tensor import Tensor as _Tensor
from .. import kernels
from . import dual
from .dual import is_tensor


class Matmul(Function):
    """``a @ b``.  Gradients: ``g @ b^T`` and ``a^T @ g`` (seed 001's ``inp.g = out.g @ w.t()``),
    with vectors treated as 1-row / 1-column matrices and batch dims summed back."""

    def forward(self, a, b):
        try:
            out = kernels.mm(a.data, b.data)
        except ValueError:
            raise ValueError(_mismatch_message(a.shape, b.shape)) from None
        self.shapes = (a.data.shape, b.data.shape)
        need_a, need_b = self.needs_input_grad or (False, False)
        self.save_for_backward(self=a if need_b else None, other=b if need_a else None)
        return out

    def backward(self, g):
        a_shape, b_shape = self.shapes
        need_a, need_b = self.needs_input_grad
        if len(a_shape) == 2 and len(b_shape) == 2:   # the common case, no reshaping
            return (kernels.mm(g, self.saved_value("other").T) if need_a else None,
                    kernels.mm_tn(self.saved_value("self"), g) if need_b else None)
        # Promote vectors to matrices the way matmul does, so one formula serves all.
        a2_shape = (1,) + a_shape if len(a_shape) == 1 else a_shape
        b2_shape = b_shape + (1,) if len(b_shape) == 1 else b_shape
        if len(a_shape) == 1 or len(b_shape) == 1:
            g = g.reshape(np.broadcast_shapes(a2_shape[:-2], b2_shape[:-2]) + (a2_shape[-2], b2_shape[-1]))
        ga = gb = None
        if need_a:
            b = self.saved_value("other").reshape(b2_shape)
            ga = dual.sum_to(g @ b.swapaxes(-1, -2), a2_shape).reshape(a_shape)
        if need_b:
            a = self.saved_value("self").reshape(a2_shape)
            gb = dual.sum_to(a.swapaxes(-1, -2) @ g, b2_shape).reshape(b_shape)
        return ga, gb


def _mismatch_message(a_shape, b_shape) -> str:
    if not a_shape or not b_shape:
        return (f"matmul needs operands with at least 1 dimension, got shapes {a_shape} and "
                f"{b_shape}; use * to multiply by a scalar.")
    inner = "second-to-last" if len(b_shape) > 1 else "only"
    inner_b = b_shape[-2] if len(b_shape) > 1 else b_shape[0]
    return (f"matmul shape mismatch: {a_shape} @ {b_shape}. The last dim of the left operand "
            f"({a_shape[-1]}) must equal the {inner} dim of the right operand ({inner_b}) and "
            "batch dims must broadcast; transpose one of them (x.T or x.mT) or fix the layer sizes.")


# ======================================================================================
# Linear algebra beyond matmul: einsum (the core of dot, vdot, inner, outer, tensordot,
# kron) and the ``linalg`` functions (det, slogdet, inv, solve, cholesky, eigh, qr, norm).
#
# Every backward below is written with ``@``, ``.swapaxes``, ``*``, ``/``, ``reshape`` and
# the ``_einsum`` / ``_inv`` / ``_solve`` / ``_det`` helpers, which apply this module's
# Functions to Tensors (so a ``create_graph`` backward is itself recorded) and call
# ``np.einsum`` / ``np.linalg.*`` on arrays and on compile's Tracers.
# ======================================================================================

_LETTERS = _string.ascii_letters


def _data(x):
    return x.data if type(x) is _Tensor else x


def _mT(x):
    """The matrix transpose of the last two axes (arrays, Tensors and Tracers)."""
    return x.swapaxes(-1, -2)


def _const_like(value: np.ndarray, like):
    """A constant operand for a formula whose other operands are ``like``'s kind."""
    return _Tensor._make(value) if is_tensor(like) else value


def _dtype(x):
    return _data(x).dtype


# --- einsum ---------------------------------------------------------------------------

def parse_einsum(subscripts: str, shapes) -> tuple:
    """``subscripts`` for operands of ``shapes`` as explicit labels: ``(ins, out)``, each a
    string of letters, the ellipsis replaced by letters of its own (right-aligned, as
    NumPy broadcasts it) and an implicit output made explicit (the ellipsis' labels, then
    the labels that occur once, in ASCII order, as NumPy).

    >>> parse_einsum("ij,jk", [(2, 3), (3, 4)])
    (('ij', 'jk'), 'ik')
    >>> parse_einsum("...i,i->...", [(5, 2, 3), (3,)])
    (('ABi', 'i'), 'AB')
    >>> parse_einsum("ii", [(3, 3)])
    (('ii',), '')
    """
    if not isinstance(subscripts, str):
        raise TypeError("einsum: give the subscripts as a string such as 'ij,jk->ik' (the "
                        "interleaved operand/sublist form is not supported by the engine).")
    spec = subscripts.replace(" ", "")
    lhs, arrow, rhs = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: the subscripts {subscripts!r} name {len(terms)} operand(s) "
                         f"but {len(shapes)} were given.")
    used = set(c for c in spec if c.isalpha())
    bad = set(spec) - set(_LETTERS) - set(",->.")
    if bad:
        raise ValueError(f"einsum: invalid character(s) {sorted(bad)} in {subscripts!r}; "
                         "use letters a-z, A-Z, ',', '->' and '...'.")
    free = [c for c in _LETTERS[26:] + _LETTERS[:26] if c not in used]
    n_ell = 0
    for term, shape in zip(terms, shapes):
        if "..." in term:
            n_ell = max(n_ell, len(shape) - (len(term) - 3))
    if n_ell > len(free):
        raise ValueError("einsum: too many dimensions under '...' for the free letters.")
    ell = "".join(free[:n_ell])
    ins = []
    for term, shape in zip(terms, shapes):
        if "..." in term:
            k = len(shape) - (len(term) - 3)
            if k < 0:
                raise ValueError(f"einsum: operand of shape {shape} has fewer dimensions than "
                                 f"its subscripts {term!r} name.")
            term = term.replace("...", ell[n_ell - k:] if k else "")
        if "." in term:
            raise ValueError(f"einsum: a '.' that is not part of '...' in {subscripts!r}.")
        if len(term) != len(shape):
            raise ValueError(f"einsum: the subscripts {term!r} name {len(term)} dimension(s) "
                             f"but the operand has shape {shape}.")
        ins.append(term)
    if arrow:
        if "..." in rhs:
            rhs = rhs.replace("...", ell)
        elif n_ell and any(c in ell for c in "".join(ins)):
            pass   # the ellipsis dims are summed, as NumPy does when '->' omits '...'
        out = rhs
        for c in out:
            if not any(c in t for t in ins):
                raise ValueError(f"einsum: output subscript {c!r} of {subscripts!r} names "
                                 "no input dimension.")
        if len(set(out)) != len(out):
            raise ValueError(f"einsum: the output subscripts of {subscripts!r} repeat a letter.")
    else:
        joined = "".join(ins)
        out = ell + "".join(sorted(c for c in set(joined) if joined.count(c) == 1 and c not in ell))
    return tuple(ins), out


def _np_einsum(spec: str, *operands):
    if len(operands) == 2 and operands[0].size * operands[1].size >= _BLAS_WORK:
        product = _contract2(spec, *operands)
        if product is not None:
            return product
    return np.einsum(spec, *operands, optimize=len(operands) > 2)


_BLAS_WORK = 1 << 16   # below this (a.size * b.size), np.einsum's own loop is as quick
_BLAS_SIDE = 8         # ... and when m, n or k of the product is below this


@functools.lru_cache(maxsize=256)
def _contraction_plan(spec: str):
    """For ``'a_labels,b_labels->out'``: the axes each operand sums first, its transpose to
    (batch, m or n, k) order, the labels of batch, m, k, n, and the output's transpose; None
    when a label repeats within an operand (a diagonal: not a plain contraction)."""
    ins, out = spec.split("->")
    a_labels, b_labels = ins.split(",")
    if len(set(a_labels)) != len(a_labels) or len(set(b_labels)) != len(b_labels):
        return None
    in_a, in_b, in_out = set(a_labels), set(b_labels), set(out)
    sums_a = tuple(i for i, c in enumerate(a_labels) if c not in in_b and c not in in_out)
    sums_b = tuple(i for i, c in enumerate(b_labels) if c not in in_a and c not in in_out)
    a_kept = "".join(c for i, c in enumerate(a_labels) if i not in sums_a)
    b_kept = "".join(c for i, c in enumerate(b_labels) if i not in sums_b)
    batch = "".join(c for c in a_kept if c in in_b and c in in_out)
    inner = "".join(c for c in a_kept if c in in_b and c not in in_out)
    left = "".join(c for c in a_kept if c not in in_b)
    right = "".join(c for c in b_kept if c not in in_a)
    order = batch + left + right
    return (sums_a, sums_b, tuple(a_kept.index(c) for c in batch + left + inner),
            tuple(b_kept.index(c) for c in batch + inner + right), a_kept, b_kept,
            (batch, left, inner, right), tuple(order.index(c) for c in out))


def _contract2(spec: str, a, b):
    """``np.einsum(spec, a, b)`` as one (batched) matrix product, or None where that does not
    pay (a diagonal, an outer product, a matrix-vector product, small m, n or k).

    ``np.einsum`` without ``optimize`` runs its own loop, not BLAS: ``'id,jd->ij'`` of two
    (256, 32) arrays takes 0.73 ms against 0.28 ms here.  The labels are sorted into batch
    (in a, b and out), contracted (in a and b only), kept (in one operand and out) and summed
    (in one operand only, summed first); the operands are transposed and reshaped to
    (batch, m, k) @ (batch, k, n), as ``tensordot`` and ``torch.einsum`` do.
    """
    plan = _contraction_plan(spec)
    if plan is None:
        return None
    sums_a, sums_b, a_axes, b_axes, a_kept, b_kept, (batch, left, inner, right), back = plan
    size = dict(zip(spec.split("->")[0].replace(",", ""), a.shape + b.shape))

    def count(labels):
        n = 1
        for c in labels:
            n *= size[c]
        return n

    m, k, n = count(left), count(inner), count(right)
    if min(m, k, n) < _BLAS_SIDE:
        return None
    if sums_a:
        a = a.sum(axis=sums_a)
    if sums_b:
        b = b.sum(axis=sums_b)
    nb = count(batch)
    product = a.transpose(a_axes).reshape(nb, m, k) @ b.transpose(b_axes).reshape(nb, k, n)
    return product.reshape([size[c] for c in batch + left + right]).transpose(back)


def _einsum(ins, out, operands):
    """The einsum of ``operands`` (arrays, Tracers or Tensors) with explicit labels."""
    if any(map(is_tensor, operands)):
        like = next(o for o in operands if is_tensor(o))
        return Einsum.apply(*[o if is_tensor(o) else _Tensor._make(np.asarray(o, _dtype(like)))
                              for o in operands], ins=tuple(ins), out=out)
    return _np_einsum(",".join(ins) + "->" + out, *operands)


class Einsum(Function):
    """``np.einsum`` with explicit labels (``ins``, ``out``; see ``einsum``), operands of
    equal sizes per label (``ops.einsum`` broadcasts them first).

    The gradient of operand k is itself an einsum: of the output's gradient with the other
    operands, to k's labels.  A label only k has (summed in the forward) is restored by an
    operand of ones; a label k repeats (``'ii->i'``, a diagonal) by an identity matrix
    with a renamed second copy, so the gradient lands on the diagonal only.
    """

    def forward(self, *operands, ins, out):
        self.ins, self.out = ins, out
        self.sizes = {}
        for term, o in zip(ins, operands):
            self.sizes.update(zip(term, o.shape))
        if self.needs_input_grad:
            self.save_for_backward(**{f"op{i}": o for i, o in enumerate(operands)})
        return _np_einsum(",".join(ins) + "->" + out, *[o.data for o in operands])

    def backward(self, g):
        ins, out, sizes = self.ins, self.out, self.sizes
        ops_ = [self.saved_value(f"op{i}") for i in range(len(ins))]
        dtype = _dtype(g)
        grads = []
        for k, term in enumerate(ins):
            if not self.needs(k):
                grads.append(None)
                continue
            elsewhere = set(out).union(*[ins[j] for j in range(len(ins)) if j != k])
            labels, operands = [out], [g]
            for j in range(len(ins)):
                if j != k:
                    labels.append(ins[j])
                    operands.append(ops_[j])
            used = set("".join(ins) + out)
            spare = [c for c in _LETTERS if c not in used]
            target, seen = "", set()
            for c in term:
                if c in seen:                      # a repeated label: the diagonal
                    d = spare.pop()
                    labels.append(c + d)
                    operands.append(np.eye(sizes[c], dtype=dtype))
                    target += d
                    continue
                seen.add(c)
                target += c
                if c not in elsewhere:             # summed over in the forward: spread back
                    labels.append(c)
                    operands.append(np.ones(sizes[c], dtype=dtype))
            grads.append(_einsum(labels, target, operands))
        return tuple(grads)


# --- helpers that run on arrays, Tracers and Tensors ------------------------------------

def _inv(a):
    return Inv.apply(a) if is_tensor(a) else np.linalg.inv(a)


def _solve(a, b):
    """``a^-1 b`` for a matrix (or batch of matrices) ``b``."""
    if is_tensor(a) or is_tensor(b):
        like = a if is_tensor(a) else b
        a = a if is_tensor(a) else _Tensor._make(np.asarray(a, _dtype(like)))
        b = b if is_tensor(b) else _Tensor._make(np.asarray(b, _dtype(like)))
        return Solve.apply(a, b)
    return np.linalg.solve(a, b)


def _det(a):
    return Det.apply(a) if is_tensor(a) else np.linalg.det(a)


def _expand2(x):
    """``x[..., None, None]`` (arrays, Tracers and Tensors)."""
    return x.reshape(tuple(x.shape) + (1, 1))


def _diag_embed(w, n, dtype):
    """Matrices with ``w`` (..., n) on the diagonal."""
    return w.reshape(tuple(w.shape[:-1]) + (1, n)) * _const_like(np.eye(n, dtype=dtype), w)


def _check_square(a, name):
    shape = a.shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError(
            f"linalg.{name} needs square matrices in the last two axes (shape (..., n, n)), "
            f"got shape {tuple(shape)}.")


def _singular(name, what="the matrix"):
    return np.linalg.LinAlgError(
        f"linalg.{name}: {what} is singular (not invertible), so the result would be "
        "infinite. Check the input for dependent rows/columns; use linalg.solve with a "
        "regularized matrix (A + eps * I), or a least-squares/pseudo-inverse approach.")


# --- det, slogdet, inv, solve -------------------------------------------------------------

@dual.records("det")
class Det(Function):
    """``det(A)``, batched.  Gradient ``g * det(A) * inv(A)^T`` (the adjugate's transpose
    times g); at an exactly singular matrix (``det == 0``) the adjugate is computed from the
    cofactors (minors' determinants), so the gradient stays finite and exact there.

    PyTorch 2.13 returns zeros instead of the adjugate when LU meets an exactly zero pivot
    (``det([[1, 2], [2, 4]])``: torch's gradient 0, the adjugate ``[[4, -2], [-2, 1]]``);
    at numerically non-singular input both agree.
    """

    saves_result = True

    def name(self):
        return "LinalgDetBackward0"

    def forward(self, a):
        _check_square(a.data, "det")
        self.save_for_backward(self=a)
        return np.linalg.det(a.data)

    def backward(self, g):
        a, d = self.saved_value("self"), self.saved_value("result")
        if np.all(_data(d) != 0):
            return _expand2(g * d) * _mT(_inv(a))
        return _expand2(g) * _cofactors(a)


def _cofactors(a):
    """The cofactor matrix (``adj(A)^T``) from the determinants of the minors."""
    n = a.shape[-1]
    if n == 1:                                                      # the cofactor of 1 x 1 is 1
        return _const_like(np.ones(tuple(a.shape), _dtype(a)), a)
    idx = np.arange(n)
    keep = np.array([np.delete(idx, i) for i in range(n)])          # (n, n-1)
    rows = keep[:, None, :, None]                                   # (n, 1, n-1, 1)
    cols = keep[None, :, None, :]                                   # (1, n, 1, n-1)
    minors = a[(Ellipsis, rows, cols)]                              # (..., n, n, n-1, n-1)
    sign = (-1.0) ** (idx[:, None] + idx[None, :])
    return _det(minors) * _const_like(sign.astype(_dtype(a)), a)


class Slogdet(Function):
    """``(sign, log|det A|)``; only ``logabsdet`` is differentiated (``inv(A)^T * g``).
    A singular matrix has ``logabsdet = -inf`` and its backward raises ``LinAlgError``."""

    def name(self):
        return "LinalgSlogdetBackward0"

    def forward(self, a):
        _check_square(a.data, "slogdet")
        self.save_for_backward(self=a)
        sign, logabs = np.linalg.slogdet(a.data)
        return sign, logabs

    def backward(self, g_sign, g_logabs):
        if g_logabs is None:
            return None
        a = self.saved_value("self")
        try:
            return _expand2(g_logabs) * _mT(_inv(a))
        except np.linalg.LinAlgError:
            raise _singular("slogdet (backward)") from None


@dual.records("inv")
class Inv(Function):
    """``inv(A)``, batched.  Gradient ``-Y^T g Y^T`` with ``Y = inv(A)``.  A singular matrix
    raises ``LinAlgError`` (never an array of inf)."""

    saves_result = True

    def name(self):
        return "LinalgInvExBackward0"

    def forward(self, a):
        _check_square(a.data, "inv")
        try:
            return np.linalg.inv(a.data)
        except np.linalg.LinAlgError:
            raise _singular("inv") from None

    def backward(self, g):
        y = self.saved_value("result")
        yT = _mT(y)
        return -(yT @ g @ yT)


class Solve(Function):
    """``X = A^-1 B`` for matrices ``B`` (..., n, k), batch axes broadcast.  Gradients
    ``gB = A^-T g`` and ``gA = -gB X^T`` (summed back over broadcast batch axes)."""

    saves_result = True

    def name(self):
        return "LinalgSolveExBackward0"

    def forward(self, a, b):
        _check_square(a.data, "solve")
        self.shapes = (a.shape, b.shape)
        self.save_for_backward(self=a)
        try:
            return np.linalg.solve(a.data, b.data)
        except np.linalg.LinAlgError:
            raise _singular("solve", "the coefficient matrix a") from None

    def backward(self, g):
        a, x = self.saved_value("self"), self.saved_value("result")
        a_shape, b_shape = self.shapes
        gb = _solve(_mT(a), g)
        ga = -(gb @ _mT(x)) if self.needs(0) else None
        return (None if ga is None else dual.sum_to(ga, a_shape),
                dual.sum_to(gb, b_shape) if self.needs(1) else None)


# --- cholesky, eigh, qr -------------------------------------------------------------------

class Cholesky(Function):
    """Lower Cholesky factor ``L`` of a symmetric positive-definite ``A`` (the lower
    triangle of A is read, as NumPy and PyTorch).  Gradient (PyTorch's
    ``cholesky_backward``): ``sym(L^-T Phi(L^T tril(gL)) L^-1)``, Phi taking the lower
    triangle with the diagonal halved and ``sym(X) = (X + X^T) / 2``."""

    saves_result = True

    def name(self):
        return "LinalgCholeskyExBackward0"

    def forward(self, a):
        _check_square(a.data, "cholesky")
        try:
            return np.linalg.cholesky(a.data)
        except np.linalg.LinAlgError:
            raise np.linalg.LinAlgError(
                "linalg.cholesky: the matrix is not positive definite (a pivot is <= 0). "
                "Cholesky needs a symmetric positive-definite matrix; add a multiple of the "
                "identity (A + eps * I), or use eigh / a symmetric indefinite solver.") from None

    def backward(self, g):
        L = self.saved_value("result")
        n = L.shape[-1]
        dtype = _dtype(L)
        tril = np.tril(np.ones((n, n), dtype))
        phi = tril - 0.5 * np.eye(n, dtype=dtype)
        P = (_mT(L) @ (g * _const_like(tril, g))) * _const_like(phi, g)
        Linv = _inv(L)
        ga = _mT(Linv) @ P @ Linv
        return (ga + _mT(ga)) * 0.5


def _off_diagonal_zero(E: np.ndarray) -> bool:
    n = E.shape[-1]
    return bool(np.any((E == 0) & ~np.eye(n, dtype=bool)))


class Eigh(Function):
    """Eigenvalues (ascending) and orthonormal eigenvectors of a symmetric matrix (its lower
    triangle is read).  Gradient (PyTorch's ``linalg_eig_backward`` for Hermitian input):
    ``V (diag(gw) + skew(V^T gV) / E) V^T`` with ``E_ij = w_j - w_i``.

    Repeated eigenvalues: the eigenvectors are not unique and their gradient is undefined.
    As in PyTorch the result then has inf/nan entries (a ``RuntimeWarning`` says why);
    a gradient through the eigenvalues alone (``eigvalsh``, or ``w`` of ``eigh`` with ``v``
    unused) stays finite and correct.
    """

    def name(self):
        return "LinalgEighBackward0"

    def forward(self, a):
        _check_square(a.data, "eigh")
        self.save_for_backward(self=a)
        w, v = np.linalg.eigh(a.data)
        self.w, self.v = w, v
        return w, v

    def backward(self, gw, gv):
        a = self.saved_value("self")
        if is_tensor(a):     # create_graph: the eigen-decomposition as a recorded function of A
            w, v = Eigh.apply(a)
        else:
            w, v = self.w, self.v
        n = a.shape[-1]
        dtype = _dtype(a)
        inner = None
        if gv is not None:
            x = _mT(v) @ gv
            x = (x - _mT(x)) * 0.5
            E = w.reshape(tuple(w.shape[:-1]) + (1, n)) - w.reshape(tuple(w.shape) + (1,))
            if type(_data(E)) is np.ndarray and _off_diagonal_zero(_data(E)):
                _warnings.warn(
                    "linalg.eigh backward: the matrix has repeated eigenvalues, where the "
                    "eigenvectors (and their gradient) are not unique; the gradient has "
                    "inf/nan entries (as PyTorch's). Differentiate only the eigenvalues "
                    "(eigvalsh), or perturb the input to separate them.", RuntimeWarning,
                    stacklevel=2)
            eye = np.eye(n, dtype=dtype)
            with np.errstate(divide="ignore", invalid="ignore"):
                inner = x / (E + _const_like(eye, E)) * _const_like(1 - eye, E)
        if gw is not None:
            d = _diag_embed(gw, n, dtype)
            inner = d if inner is None else inner + d
        if inner is None:
            return None
        return v @ inner @ _mT(v)


class Qr(Function):
    """Reduced QR: ``A = Q R`` with Q (..., m, k), R (..., k, n), k = min(m, n).

    Gradient for m >= n (tall or square): ``(gQ + Q copyltu(M)) R^-T`` with
    ``M = R gR^T - gQ^T Q`` and copyltu the symmetric matrix made from M's lower triangle.
    For m < n (wide), ``A = [X | Y]`` with X square: ``R = [U | V]``, ``X = Q U`` and
    ``Y = Q V``, so ``gY = Q gV`` and X's gradient is the square case's with
    ``gQ + Y gV^T`` (PyTorch's ``linalg_qr_backward``).
    """

    def name(self):
        return "LinalgQrBackward0"

    def forward(self, a):
        if a.data.ndim < 2:
            raise np.linalg.LinAlgError(f"linalg.qr needs a matrix (..., m, n), got shape {a.shape}.")
        self.save_for_backward(self=a)
        q, r = np.linalg.qr(a.data, mode="reduced")
        self.q, self.r = q, r
        return q, r

    def backward(self, gq, gr):
        a = self.saved_value("self")
        m, n = a.shape[-2:]
        q, r = Qr.apply(a) if is_tensor(a) else (self.q, self.r)
        if m >= n:
            return _qr_backward_tall(q, r, gq, gr)
        # wide: A = [X | Y], R = [U | V], X = Q U square, Y = Q V
        y = a[..., :, m:]
        gu = gv = None
        if gr is not None:
            gu, gv = gr[..., :, :m], gr[..., :, m:]
        if gv is not None:
            extra = y @ _mT(gv)
            gq = extra if gq is None else gq + extra
        gx = _qr_backward_tall(q, r[..., :, :m], gq, gu)
        if gv is None:
            return None if gx is None else dual.concatenate([gx, dual.zeros(tuple(y.shape), gx)], -1)
        gy = q @ gv
        if gx is None:
            gx = dual.zeros(tuple(gy.shape[:-1]) + (m,), gy)
        return dual.concatenate([gx, gy], -1)


def _qr_backward_tall(q, r, gq, gr):
    """The gradient of ``A`` (m >= n) from those of its reduced ``Q`` and ``R``."""
    n = r.shape[-1]
    dtype = _dtype(q)
    M = None
    if gr is not None:
        M = r @ _mT(gr)
    if gq is not None:
        t = _mT(gq) @ q
        M = -t if M is None else M - t
    if M is None:
        return None
    low = np.tril(np.ones((n, n), dtype))
    strict = np.tril(np.ones((n, n), dtype), -1)
    sym = M * _const_like(low, M) + _mT(M * _const_like(strict, M))
    b = q @ sym
    if gq is not None:
        b = gq + b
    return _mT(_solve(r, _mT(b)))


class Svd(Function):
    """Reduced SVD ``A = U diag(S) Vh`` (NumPy's ``full_matrices=False``), batched.

    Gradient (PyTorch's ``svd_backward``, real case), with ``E_jk = S_k^2 - S_j^2`` and
    ``skew(X) = X - X^T``::

        gA = U [skew(U^T gU) / E * S + S * skew(V^T gV) / E + diag(gS)] Vh
             + (I - U U^T) gU diag(1/S) Vh + U diag(1/S) gV^T (I - V V^T)

    Singular vectors are defined up to sign, and for repeated singular values only up to a
    rotation: a gradient through U or V is then undefined (inf/nan, as PyTorch's, with a
    ``RuntimeWarning``); a gradient through S alone (``svdvals``, the nuclear and 2-norms)
    stays finite.  A zero singular value makes the projection terms infinite likewise.
    """

    def name(self):
        return "LinalgSvdBackward0"

    def forward(self, a):
        if a.data.ndim < 2:
            raise np.linalg.LinAlgError(f"linalg.svd needs a matrix (..., m, n), got shape {a.shape}.")
        self.save_for_backward(self=a)
        u, s, vh = np.linalg.svd(a.data, full_matrices=False)
        self.usv = (u, s, vh)
        return u, s, vh

    def backward(self, gu, gs, gvh):
        a = self.saved_value("self")
        u, s, vh = Svd.apply(a) if is_tensor(a) else self.usv
        k = s.shape[-1]
        dtype = _dtype(a)
        col = s.reshape(tuple(s.shape[:-1]) + (1, k))        # S as a row: scales columns
        row = s.reshape(tuple(s.shape) + (1,))               # S as a column: scales rows
        inner = None

        def add(term):
            nonlocal inner
            inner = term if inner is None else inner + term

        if gu is not None or gvh is not None:
            s2 = s * s
            E = s2.reshape(tuple(s.shape[:-1]) + (1, k)) - s2.reshape(tuple(s.shape) + (1,))
            if type(_data(E)) is np.ndarray and _off_diagonal_zero(_data(E)):
                _warnings.warn(
                    "linalg.svd backward: repeated singular values, where the singular vectors "
                    "(and their gradient) are not unique; the gradient has inf/nan entries (as "
                    "PyTorch's). Differentiate only the singular values (svdvals), or perturb "
                    "the input.", RuntimeWarning, stacklevel=2)
            eye = np.eye(k, dtype=dtype)
            with np.errstate(divide="ignore", invalid="ignore"):
                E_safe = E + _const_like(eye, E)
                off = _const_like(1 - eye, E)
                if gu is not None:
                    x = _mT(u) @ gu
                    add((x - _mT(x)) / E_safe * off * col)
                if gvh is not None:
                    v, gv = _mT(vh), _mT(gvh)
                    x = vh @ gv
                    add(row * ((x - _mT(x)) / E_safe * off))
        if gs is not None:
            add(_diag_embed(gs, k, dtype))
        ga = None if inner is None else u @ inner @ vh
        m, n = a.shape[-2:]
        with np.errstate(divide="ignore", invalid="ignore"):
            if gu is not None and m > k:
                t = (gu - u @ (_mT(u) @ gu)) / col @ vh
                ga = t if ga is None else ga + t
            if gvh is not None and n > k:
                t = u @ ((gvh - (gvh @ _mT(vh)) @ vh) / row)
                ga = t if ga is None else ga + t
        return ga


# --- norms ---------------------------------------------------------------------------------

def _sign(x):
    """``sign(x)``, a constant (its derivative is 0 almost everywhere)."""
    if is_tensor(x):
        return _Tensor._make(np.sign(x.data))
    return np.sign(x)


class VectorNorm(Function):
    """``np.linalg.vector_norm(x, ord, axis, keepdims)`` (PyTorch's ``linalg.vector_norm``).

    Subgradients as PyTorch's ``norm_backward``: 0 at ``x = 0`` for the 2-norm (and every
    p-norm); ``sign(x)`` for ord 1 (0 at 0); for ord +-inf the gradient is shared evenly
    among the tied extreme entries, with their signs; ord 0 (a count) has gradient 0.
    """

    saves_result = True

    def name(self):
        return "LinalgVectorNormBackward0"

    def forward(self, x, ord=2, axis=None, keepdims=False):
        self.ord, self.axis, self.keepdims = ord, axis, keepdims
        self.save_for_backward(self=x)
        if type(x.data) is np.ndarray:
            return np.asarray(np.linalg.vector_norm(x.data, ord=ord, axis=axis, keepdims=keepdims))
        return _vector_norm_of(x.data, ord, axis, keepdims)   # compile's Tracer: ufuncs and sums

    def backward(self, g):
        x, n = self.saved_value("self"), self.saved_value("result")
        p = self.ord
        axes = tuple(range(x.ndim)) if self.axis is None else \
            tuple(a % x.ndim for a in ((self.axis,) if isinstance(self.axis, int) else self.axis))
        if not self.keepdims:
            kept = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
            g, n = g.reshape(kept), n.reshape(kept)
        if p == 0:
            return x * 0
        if p == 1:
            return _sign(x) * g
        if p in (np.inf, -np.inf):
            xd = _data(x)
            tie = (abs(xd) == _data(n)).astype(_dtype(x))
            share = tie / tie.sum(axis=axes, keepdims=True)
            return _sign(x) * _const_like(share, x) * g
        n_safe = n + _const_like(_bool_as(_data(n) == 0, n), n)      # the norm, 1 where it is 0
        if p == 2:
            return _where_nonzero(x * (g / n_safe), _data(n))
        zero = _data(x) == 0
        coef = _sign(x) * (abs(x) + _const_like(_bool_as(zero, x), x)) ** (p - 1)
        return _where_nonzero(coef * (g * n_safe ** (1 - p)), _data(n))


def _vector_norm_of(x, ord, axis, keepdims):
    """``vector_norm`` from ufuncs and reductions (what compile's tracer records)."""
    if ord == 2:
        return np.sqrt((x * x).sum(axis=axis, keepdims=keepdims))
    a = abs(x)
    if ord == 1:
        return a.sum(axis=axis, keepdims=keepdims)
    if ord == np.inf:
        return a.max(axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return a.min(axis=axis, keepdims=keepdims)
    if ord == 0:
        return (x != 0).astype(x.dtype).sum(axis=axis, keepdims=keepdims)
    return (a ** ord).sum(axis=axis, keepdims=keepdims) ** (1.0 / ord)


def _bool_as(mask, like):
    """A boolean mask as 0/1 in ``like``'s dtype (a Tracer's mask stays a comparison)."""
    return mask.astype(_dtype(like)) if type(mask) is np.ndarray else mask


def _where_nonzero(value, n):
    """``value`` where the norm ``n`` (broadcasting) is not 0, else 0: PyTorch's
    subgradient 0 at x = 0."""
    mask = n != 0
    if is_tensor(value):
        return value * _Tensor._make(np.broadcast_to(mask, value.shape).astype(value.dtype))
    return np.where(mask, value, np.zeros((), _dtype(value)))


# --- the ``linalg`` namespace's functions (``xp.linalg``; NumPy's names and semantics) -------

def _tensor(x):
    return x if type(x) is _Tensor else _Tensor(x)


def det(a):
    """Determinant over the last two axes (``LinalgDetBackward0``; see ``Det``)."""
    return Det.apply(_tensor(a))


def slogdet(a):
    """``(sign, logabsdet)`` as NumPy's; only ``logabsdet`` is differentiated."""
    return Slogdet.apply(_tensor(a))


def inv(a):
    """Inverse over the last two axes; a singular matrix raises ``LinAlgError``."""
    return Inv.apply(_tensor(a))


def solve(a, b):
    """Solve ``a x = b`` with NumPy 2's rule for ``b``: a vector if ``b.ndim == 1`` (shape
    (n,), broadcast against a's batch), else a matrix (..., n, k); batch axes broadcast."""
    a = _tensor(a)
    b = b if type(b) is _Tensor else _Tensor(np.asarray(b, dtype=np.result_type(a.dtype, np.asarray(b).dtype)))
    if b.ndim == 1:
        n = b.shape[0]
        if a.ndim < 2 or a.shape[-1] != n:
            raise ValueError(f"linalg.solve: a of shape {a.shape} and vector b of shape {b.shape} "
                             "do not match: b needs as many entries as a has rows.")
        x = Solve.apply(a, b.reshape((n, 1)))
        return x.reshape(x.shape[:-1])
    return Solve.apply(a, b)


def cholesky(a, upper=False):
    """The lower Cholesky factor (``upper=True``: its transpose, NumPy 2's option)."""
    L = Cholesky.apply(_tensor(a))
    return L.swapaxes(-1, -2) if upper else L


def eigh(a, UPLO="L"):
    """``(eigenvalues, eigenvectors)`` of symmetric matrices, ascending; the lower triangle
    is read (``UPLO='U'``: the upper one).  See ``Eigh`` for repeated eigenvalues."""
    a = _tensor(a)
    if UPLO == "U":
        a = a.swapaxes(-1, -2)
    elif UPLO != "L":
        raise ValueError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}.")
    return Eigh.apply(a)


def eigvalsh(a, UPLO="L"):
    """Eigenvalues of symmetric matrices: ``eigh(a)[0]`` (composite: the eigenvectors get
    no gradient, so repeated eigenvalues are fine)."""
    return eigh(a, UPLO)[0]


def qr(a, mode="reduced"):
    """Reduced QR ``(Q, R)`` (only ``mode='reduced'``); see ``Qr`` for the gradient."""
    if mode != "reduced":
        raise NotImplementedError(f"linalg.qr: only mode='reduced' is implemented by the engine, "
                                  f"got mode={mode!r}.")
    return Qr.apply(_tensor(a))


def _norm_axis(axis, ndim):
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for ax in axes:
        if not -ndim <= ax < ndim:
            raise ValueError(f"norm: axis {ax} is out of bounds for an array of dimension {ndim}.")
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"norm: repeated axis in {axis}.")
    return tuple(out)


def vector_norm(x, axis=None, keepdims=False, ord=2):
    """NumPy 2's ``linalg.vector_norm`` (``LinalgVectorNormBackward0``; see ``VectorNorm``)."""
    x = _tensor(x)
    if isinstance(ord, str):
        raise ValueError(f"vector_norm: ord must be a number, got {ord!r}; 'fro'/'nuc' are matrix "
                         "norms (linalg.norm with a 2-tuple axis, or linalg.matrix_norm).")
    axes = _norm_axis(axis, x.ndim)
    return VectorNorm.apply(x, ord=ord, axis=axes, keepdims=keepdims)


def matrix_norm(x, ord="fro", keepdims=False):
    """NumPy 2's ``linalg.matrix_norm`` over the last two axes."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def norm(x, ord=None, axis=None, keepdims=False):
    """``np.linalg.norm``: a vector norm (ord None/2, 1, inf, -inf, 0, any p) over one axis,
    a matrix norm ('fro', 1, -1, inf, -inf) over two; ``axis=None`` means the whole 1-D or
    2-D array (any array for ord None: the 2-norm of all entries).

    Matrix 1/inf norms are composites (``max(sum(abs(x)))``: ties in the max share the
    gradient evenly, as PyTorch's amax); 'nuc' (the sum) and 2/-2 (the largest/smallest)
    are composites of the singular values (``svdvals``).
    """
    x = _tensor(x)
    if axis is None:
        if ord is None or (ord in ("fro",) and x.ndim == 2):
            return VectorNorm.apply(x, ord=2, axis=None, keepdims=keepdims)
        if x.ndim == 1:
            axis = (0,)
        elif x.ndim == 2:
            axis = (0, 1)
        else:
            raise ValueError(f"norm: improper number of dimensions ({x.ndim}) for ord={ord!r} with "
                             "axis=None; give axis (an int for a vector norm, a pair for a matrix norm).")
    axes = _norm_axis(axis, x.ndim)
    if len(axes) == 1:
        if isinstance(ord, str):
            raise ValueError(f"norm: invalid norm order {ord!r} for vectors.")
        return VectorNorm.apply(x, ord=2 if ord is None else ord, axis=axes, keepdims=keepdims)
    if len(axes) != 2:
        raise ValueError(f"norm: axis must be an int or a pair for a matrix norm, got {axis!r}.")
    if ord in (None, "fro"):
        return VectorNorm.apply(x, ord=2, axis=axes, keepdims=keepdims)
    if ord in ("nuc", 2, -2):          # through the singular values of the (moved) matrices
        rest = [i for i in range(x.ndim) if i not in axes]
        sv = svdvals(x.permute(tuple(rest) + axes))
        out = sv.sum(axis=-1) if ord == "nuc" else sv.max(axis=-1) if ord == 2 else sv.min(axis=-1)
        if keepdims:
            out = out.reshape(tuple(1 if i in axes else n for i, n in enumerate(x.shape)))
        return out
    if ord not in (1, -1, np.inf, -np.inf):
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices.")
    row, col = axes
    summed, reduced = (row, col) if ord in (1, -1) else (col, row)
    s = abs(x).sum(axis=summed, keepdims=True)
    out = s.max(axis=reduced, keepdims=True) if ord > 0 else s.min(axis=reduced, keepdims=True)
    if keepdims:
        return out
    return out.reshape(tuple(n for i, n in enumerate(x.shape) if i not in axes))


def svd(a, full_matrices=True, compute_uv=True):
    """NumPy's ``svd``: ``(U, S, Vh)``, or ``S`` with ``compute_uv=False``.  The engine
    computes the reduced SVD: ``full_matrices=True`` (NumPy's default) is accepted for square
    matrices (the same result) and refused otherwise; see ``Svd`` for the gradient."""
    a = _tensor(a)
    m, n = a.shape[-2:] if a.ndim >= 2 else (None, None)
    if full_matrices and compute_uv and m != n:
        raise NotImplementedError(
            f"linalg.svd: full_matrices=True of a {m} x {n} matrix (the completed bases) is not "
            "implemented by the engine; pass full_matrices=False (the reduced SVD).")
    u, s, vh = Svd.apply(a)
    return (u, s, vh) if compute_uv else s


def svdvals(a):
    """The singular values (descending): ``svd(a, compute_uv=False)``."""
    return Svd.apply(_tensor(a))[1]


def pinv(a, rcond=None, hermitian=False):
    """The pseudo-inverse ``V diag(1/S) U^T`` from the reduced SVD, singular values at or
    below ``rcond * max(S)`` (NumPy's default ``rcond``: 1e-15) treated as 0.  A composite of
    ``svd``: its gradient is ``Svd``'s, so singular values must be distinct (a
    rank-deficient input's gradient is not PyTorch's)."""
    a = _tensor(a)
    rcond = 1e-15 if rcond is None else rcond
    u, s, vh = Svd.apply(a)
    cutoff = rcond * s.data.max(axis=-1, keepdims=True) if s.size else 0.0
    keep = s.data > cutoff
    s_safe = s + _Tensor._make((~keep).astype(s.dtype))
    inv_s = (1 / s_safe) * _Tensor._make(keep.astype(s.dtype))
    k = s.shape[-1]
    return _mT(vh) @ (inv_s.reshape(tuple(s.shape[:-1]) + (k, 1)) * _mT(u))


def matrix_power(a, n):
    """NumPy's ``matrix_power``: ``a`` multiplied by itself ``n`` times by repeated squaring
    (a composite of matmul; negative ``n`` powers ``inv(a)``; ``n = 0`` is the identity,
    a constant)."""
    a = _tensor(a)
    if not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power: the exponent must be an integer, got {n!r}.")
    _check_square(a.data, "matrix_power")
    if n == 0:
        return _Tensor(np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape).copy())
    if n < 0:
        a, n = inv(a), -n
    result, square = None, a
    while n:
        if n & 1:
            result = square if result is None else result @ square
        n >>= 1
        if n:
            square = square @ square
    return result


def multi_dot(arrays):
    """NumPy's ``multi_dot``: the product of the matrices in order (the first may be a row
    vector, the last a column vector, as 1-D arrays); a composite of matmul, multiplied in
    the cheapest order for three operands (NumPy's choice) and left to right beyond."""
    ts = [_tensor(a) for a in arrays]
    if len(ts) < 2:
        raise ValueError("multi_dot needs at least two arrays.")
    for i, t in enumerate(ts):
        want = (1, 2) if i in (0, len(ts) - 1) else (2,)
        if t.ndim not in want:
            raise ValueError(f"multi_dot: array {i} has shape {t.shape}; the first and last may "
                             "be 1-D or 2-D, the others must be 2-D.")
    if len(ts) == 3:
        a, b, c = ts
        p0 = a.shape[0] if a.ndim == 2 else 1
        p1, p2 = b.shape
        p3 = c.shape[1] if c.ndim == 2 else 1
        if p0 * p1 * p2 + p0 * p2 * p3 > p1 * p2 * p3 + p0 * p1 * p3:
            return a @ (b @ c)
    out = ts[0]
    for t in ts[1:]:
        out = out @ t
    return out


#: The engine's ``linalg`` namespace (``xp.linalg``): these names, NumPy's meanings.
LINALG_NAMES = ("det", "slogdet", "inv", "solve", "cholesky", "eigh", "eigvalsh", "qr", "norm",
                "vector_norm", "matrix_norm", "matrix_power", "multi_dot", "svd", "svdvals",
                "pinv")
