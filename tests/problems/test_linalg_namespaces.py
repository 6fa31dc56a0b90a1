"""The linear-algebra names (``contract.LINALG``) with NumPy's meaning on every namespace:
NumPy, jax.numpy, the engine, torch (``problems/torch_namespace``) and SymPy (``sympy_xp``);
and the gradient of a function using them equal across the engine (eager and compiled),
torch, jax-jit, HIPS autograd and the symbolic backends."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
import sympy

from diffcompare import backends
from diffcompare.problems import torch_namespace
from diffcompare.engine import Tensor, array_api
from diffcompare.problems import contract
from diffcompare.problems.problem import Problem
from diffcompare.problems.symbolic import sympy_xp


def _jnp():
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    return jnp


NAMESPACES = {"numpy": lambda: np, "jax": _jnp, "engine": lambda: array_api,
              "torch": torch_namespace.namespace, "sympy": lambda: sympy_xp}


def _rand(key, *shape):
    return np.random.default_rng(zlib.crc32(repr((key, shape)).encode())).standard_normal(shape)


def _spd(key, n):
    m = _rand(key, n, n)
    return m @ m.T + n * np.eye(n)


def _sym(key, n):
    q, _ = np.linalg.qr(_rand(key, n, n))
    return (q * (1.0 + 2 * np.arange(n))) @ q.T


def _to_xp(name, xp, a):
    if name == "sympy":
        return np.vectorize(sympy.Float, otypes=[object])(a)
    return xp.asarray(a)


def _to_np(x):
    if isinstance(x, tuple):
        return tuple(_to_np(v) for v in x)
    if isinstance(x, Tensor):
        return x.data
    if hasattr(x, "detach"):
        return x.detach().numpy()
    if isinstance(x, sympy.Basic) or (isinstance(x, np.ndarray) and x.dtype == object):
        plain = np.asarray(x, dtype=object).view(np.ndarray)
        return np.array([float(sympy.N(v)) for v in plain.reshape(-1)]).reshape(plain.shape)
    return np.asarray(x)


# name, function of (xp, *arrays), inputs
CASES = [
    ("dot 3-D", lambda xp, a, b: xp.dot(a, b), [_rand(1, 2, 3, 4), _rand(2, 4, 2)]),
    ("dot 1-D", lambda xp, a, b: xp.dot(a, b), [_rand(1, 3), _rand(2, 3)]),
    ("dot 2-D,3-D", lambda xp, a, b: xp.dot(a, b), [_rand(1, 2, 3), _rand(2, 2, 3, 2)]),
    ("vdot", lambda xp, a, b: xp.vdot(a, b), [_rand(3, 2, 3), _rand(4, 3, 2)]),
    ("inner", lambda xp, a, b: xp.inner(a, b), [_rand(5, 2, 3), _rand(6, 4, 3)]),
    ("outer", lambda xp, a, b: xp.outer(a, b), [_rand(7, 2, 2), _rand(8, 3)]),
    ("tensordot 2", lambda xp, a, b: xp.tensordot(a, b, 2), [_rand(9, 2, 3, 4), _rand(10, 3, 4, 2)]),
    ("tensordot lists", lambda xp, a, b: xp.tensordot(a, b, axes=([0, 2], [1, 0])),
     [_rand(11, 2, 3, 4), _rand(12, 4, 2, 3)]),
    ("einsum ij,jk", lambda xp, a, b: xp.einsum("ij,jk->ik", a, b), [_rand(13, 2, 3), _rand(14, 3, 2)]),
    ("einsum ii->i", lambda xp, a: xp.einsum("ii->i", a), [_rand(15, 3, 3)]),
    ("einsum ...i,i", lambda xp, a, b: xp.einsum("...i,i", a, b), [_rand(16, 2, 3), _rand(17, 3)]),
    ("kron", lambda xp, a, b: xp.kron(a, b), [_rand(18, 2, 2), _rand(19, 2, 3)]),
    ("cross", lambda xp, a, b: xp.cross(a, b), [_rand(20, 2, 3), _rand(21, 3)]),
    ("trace", lambda xp, a: xp.trace(a), [_rand(22, 3, 3)]),
    ("matrix_transpose", lambda xp, a: xp.matrix_transpose(a), [_rand(23, 2, 3, 4)]),
    ("linalg.det", lambda xp, a: xp.linalg.det(a), [_rand(24, 2, 3, 3)]),
    ("linalg.slogdet", lambda xp, a: tuple(xp.linalg.slogdet(a)), [_rand(25, 3, 3)]),
    ("linalg.inv", lambda xp, a: xp.linalg.inv(a), [_rand(26, 3, 3) + 3 * np.eye(3)]),
    ("linalg.solve vector", lambda xp, a, b: xp.linalg.solve(a, b), [_rand(27, 2, 3, 3) + 3 * np.eye(3), _rand(28, 3)]),
    ("linalg.solve matrix", lambda xp, a, b: xp.linalg.solve(a, b), [_rand(29, 3, 3) + 3 * np.eye(3), _rand(30, 2, 3, 2)]),
    ("linalg.solve b of a's batch shape", lambda xp, a, b: xp.linalg.solve(a, b),
     [_rand(31, 3, 3, 3) + 3 * np.eye(3), _rand(32, 3, 3)]),
    ("linalg.cholesky", lambda xp, a: xp.linalg.cholesky(a), [_spd(33, 3)]),
    ("linalg.eigh", lambda xp, a: (xp.linalg.eigh(a)[0], xp.linalg.eigh(a)[1] ** 2), [_sym(34, 3)]),
    ("linalg.eigvalsh", lambda xp, a: xp.linalg.eigvalsh(a), [_sym(35, 3)]),
    ("linalg.qr", lambda xp, a: tuple(xp.linalg.qr(a)), [_rand(36, 3, 2)]),
    ("linalg.norm", lambda xp, a: xp.linalg.norm(a), [_rand(37, 2, 3)]),
    ("linalg.norm ord=1 axis", lambda xp, a: xp.linalg.norm(a, 1, axis=1), [_rand(38, 2, 3)]),
    ("linalg.norm inf keepdims", lambda xp, a: xp.linalg.norm(a, np.inf, 0, True), [_rand(39, 2, 3)]),
    ("linalg.norm matrix 1", lambda xp, a: xp.linalg.norm(a, 1), [_rand(40, 3, 3)]),
    ("linalg.matrix_power", lambda xp, a: xp.linalg.matrix_power(a, 3), [_rand(42, 3, 3)]),
    ("linalg.matrix_power -1", lambda xp, a: xp.linalg.matrix_power(a, -1), [_rand(43, 3, 3) + 3 * np.eye(3)]),
    ("linalg.multi_dot", lambda xp, a, b, c: xp.linalg.multi_dot([a, b, c]),
     [_rand(44, 3), _rand(45, 3, 2), _rand(46, 2, 2)]),
    ("linalg.svd", lambda xp, a: (xp.linalg.svd(a, full_matrices=False)[1],
                                  xp.linalg.svd(a, full_matrices=False)[0] ** 2), [_rand(47, 4, 3)]),
    ("linalg.svdvals", lambda xp, a: xp.linalg.svdvals(a), [_rand(48, 2, 3, 2)]),
    ("linalg.pinv", lambda xp, a: xp.linalg.pinv(a), [_rand(49, 3, 2)]),
    ("linalg.norm nuc", lambda xp, a: xp.linalg.norm(a, "nuc"), [_rand(50, 3, 2)]),
    ("linalg.norm fro axes", lambda xp, a: xp.linalg.norm(a, "fro", axis=(1, 2)), [_rand(41, 2, 3, 3)]),
]

#: what SymPy's namespace refuses (NotImplementedError naming the function and why)
SYMPY_REFUSES = {"linalg.eigh", "linalg.eigvalsh", "linalg.qr", "linalg.svd", "linalg.svdvals",
                 "linalg.pinv", "linalg.norm nuc"}


@pytest.mark.parametrize("ns", list(NAMESPACES))
@pytest.mark.parametrize("case, fn, inputs", CASES, ids=[c[0] for c in CASES])
def test_value_agrees_with_numpy(ns, case, fn, inputs):
    xp = contract.namespace(NAMESPACES[ns]())
    expected = _to_np(fn(np, *inputs))
    args = [_to_xp(ns, xp, a) for a in inputs]
    if ns == "sympy" and case in SYMPY_REFUSES:
        with pytest.raises(NotImplementedError, match=f"sympy_xp.{case.split()[0]}.*(not supported|singular values)"):
            fn(xp, *args)
        return
    got = _to_np(fn(xp, *args))
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
    for e, g in zip(expected if isinstance(expected, tuple) else (expected,),
                    got if isinstance(got, tuple) else (got,)):
        assert g.shape == e.shape, (case, ns, g.shape, e.shape)
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12, err_msg=f"{case} on {ns}")


def test_sympy_refuses_large_symbolic_matrices_with_the_predicted_size():
    with pytest.raises(NotImplementedError, match=r"6 x 6 .* n! = 720 terms"):
        sympy_xp.linalg.det(np.array(sympy.symbols("a:36"), dtype=object).reshape(6, 6))


def test_namespaces_have_the_linalg_names():
    for ns, make in NAMESPACES.items():
        xp = contract.namespace(make())
        for name in contract.CANDIDATES["linear algebra"]:
            assert callable(contract._has_path(xp, name) and eval("xp." + name)), (ns, name)
    # in the contract unless SymPy has no closed form (its reason is in the table)
    outside = [n for n in contract.CANDIDATES["linear algebra"] if n not in contract.NAMES]
    assert outside and all(set(contract.lacks(n)) == {"sympy"} for n in outside)


# --- gradients across methods --------------------------------------------------------------

def _products_fn(xp, a, b):
    """The top-level linear-algebra names (no ``matrix_transpose`` or ``vdot``: HIPS autograd
    has no VJP for those; the engine's are checked against torch in
    tests/engine/test_numpy_linalg.py)."""
    return (xp.dot(a, b) @ b + xp.linalg.norm(xp.cross(a[0], b)) + xp.einsum("ij,j->", a, b)
            + xp.sum(xp.kron(a[:2, :2], a[1:, 1:])) + xp.tensordot(a, a, 2)
            + xp.sum(xp.outer(b, a[1])) + xp.sum(xp.inner(a, a)) + xp.trace(a)
            + xp.sum(xp.dot(xp.reshape(a, (1, 3, 3)), b)))


def _inverses_fn(xp, a, b):
    """det, slogdet, inv and solve, on a 2 x 2 matrix so the symbolic methods stay small."""
    s = xp.matmul(a[:2, :2], xp.transpose(a[:2, :2])) + 2 * xp.eye(2)
    x = xp.linalg.solve(s, b[:2])
    return (xp.linalg.slogdet(s)[1] + xp.dot(x, b[1:]) + xp.linalg.det(s) * 0.1
            + xp.sum(xp.linalg.inv(s) * a[1:, 1:]) + xp.linalg.norm(b))


def _decompositions_fn(xp, a, b):
    """cholesky, eigh, qr, svd, pinv and the nuclear norm (numeric methods only)."""
    s = xp.matmul(a, xp.matrix_transpose(a)) + 3 * xp.eye(3)
    w, v = xp.linalg.eigh(s)
    q, r = xp.linalg.qr(a[:, :2] + b[:, None])
    return (xp.sum(xp.linalg.cholesky(s) * a) + xp.sum(w * xp.arange(3.0))
            + xp.sum(v[:, 2] ** 2 * b) + xp.sum(r * r[0, 0]) + xp.sum(q ** 2 * b[:, None])
            + xp.sum(xp.linalg.eigvalsh(s)) + xp.linalg.norm(a, 1)
            + xp.sum(xp.linalg.svd(a, full_matrices=False)[1] * b) + xp.sum(xp.linalg.pinv(s) * a)
            + xp.linalg.norm(a, "nuc"))


def _problem(name, fn):
    return Problem(name=name, fn=fn, description=name,
                   make_inputs=lambda n, seed: (_rand((name, seed), 3, 3), _rand((name, seed, 1), 3)),
                   wrt=(0, 1), sizes=(3,))


@pytest.mark.parametrize("fn, methods", [
    (_products_fn, ["engine-compiled", "torch", "jax-jit", "autograd", "sympy", "symengine"]),
    # (symengine refuses _inverses_fn: slogdet's log|det| has an Abs, whose derivative
    #  SymEngine leaves unevaluated: test_symengine_refuses_slogdet_with_the_reason)
    (_inverses_fn, ["engine-compiled", "torch", "jax-jit", "autograd", "sympy"]),
    (_decompositions_fn, ["engine-compiled", "torch", "jax-jit"]),
])
def test_gradients_agree_across_methods(fn, methods):
    p = _problem(fn.__name__.strip("_"), fn)
    inputs = p.inputs(3)
    ref = backends.compute_gradient(backends.get("engine"), p, inputs)
    for method in methods:
        got = backends.compute_gradient(backends.get(method), p, inputs)
        for g, r in zip(got, ref):
            np.testing.assert_allclose(np.asarray(g), r, rtol=1e-8, atol=1e-10, err_msg=method)


def test_symengine_refuses_slogdet_with_the_reason():
    p = _problem("inverses_fn", _inverses_fn)
    with pytest.raises(backends.BackendError, match="derivative of Abs"):
        backends.compute_gradient(backends.get("symengine"), p, p.inputs(3))
