"""The xp contract's table agrees with what each namespace gives: every name the table marks
available on a namespace is called there on small inputs and its value compared with NumPy's;
every cell with a reason really fails there.  The engine's column is read from the engine, so
this checks consistency (a name the engine gains must then also mean what NumPy's means).

The table is generated, never hand-written twice: docs/contract.md and
``diffcompare list contract`` come from it."""
from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import sympy

from diffcompare.engine import Tensor, array_api
from diffcompare.problems import contract
from diffcompare.problems.symbolic import sympy_xp, symbols_like

ROOT = Path(__file__).resolve().parents[2]

_rng = np.random.default_rng(19)
INPUTS = {
    "v": _rng.standard_normal(4),                       # a vector
    "m": _rng.standard_normal((3, 4)),                  # a matrix (broadcasts with v)
    "a": _rng.standard_normal((2, 3, 4)),
    "s": _rng.standard_normal((3, 3)),                  # square
    "h": (lambda b: b @ b.T + 3 * np.eye(3))(_rng.standard_normal((3, 3))),   # SPD
    "u": _rng.uniform(-0.9, 0.9, (3, 4)),               # inside (-1, 1)
    "p": _rng.uniform(0.5, 2.0, (3, 4)),                # positive
    "g": _rng.uniform(1.2, 3.0, (3, 4)),                # above 1
    "w": _rng.uniform(-4.0, 4.0, (3, 4)),               # for rounding and remainders
}

#: name -> calls ``f(xp, d)`` with ``d.<input>`` the inputs above, as the namespace's arrays
CASES = {
    # elementwise
    "abs": [lambda xp, d: xp.abs(d.m)], "absolute": [lambda xp, d: xp.absolute(d.m)],
    "fabs": [lambda xp, d: xp.fabs(d.m)], "exp": [lambda xp, d: xp.exp(d.m)],
    "exp2": [lambda xp, d: xp.exp2(d.m)], "expm1": [lambda xp, d: xp.expm1(d.m)],
    "log": [lambda xp, d: xp.log(d.p)], "log1p": [lambda xp, d: xp.log1p(d.p)],
    "log10": [lambda xp, d: xp.log10(d.p)], "log2": [lambda xp, d: xp.log2(d.p)],
    "sqrt": [lambda xp, d: xp.sqrt(d.p)], "cbrt": [lambda xp, d: xp.cbrt(d.m)],
    "square": [lambda xp, d: xp.square(d.m)], "reciprocal": [lambda xp, d: xp.reciprocal(d.m)],
    "sin": [lambda xp, d: xp.sin(d.m)], "cos": [lambda xp, d: xp.cos(d.m)],
    "tan": [lambda xp, d: xp.tan(d.u)], "arcsin": [lambda xp, d: xp.arcsin(d.u)],
    "arccos": [lambda xp, d: xp.arccos(d.u)], "arctan": [lambda xp, d: xp.arctan(d.m)],
    "arctan2": [lambda xp, d: xp.arctan2(d.m, d.v), lambda xp, d: xp.arctan2(d.m, -2.0)],
    "sinh": [lambda xp, d: xp.sinh(d.m)], "cosh": [lambda xp, d: xp.cosh(d.m)],
    "tanh": [lambda xp, d: xp.tanh(d.m)], "arcsinh": [lambda xp, d: xp.arcsinh(d.m)],
    "arccosh": [lambda xp, d: xp.arccosh(d.g)], "arctanh": [lambda xp, d: xp.arctanh(d.u)],
    "sinc": [lambda xp, d: xp.sinc(d.m)], "hypot": [lambda xp, d: xp.hypot(d.m, d.v)],
    "deg2rad": [lambda xp, d: xp.deg2rad(d.m)], "rad2deg": [lambda xp, d: xp.rad2deg(d.m)],
    "degrees": [lambda xp, d: xp.degrees(d.m)], "radians": [lambda xp, d: xp.radians(d.m)],
    "logaddexp": [lambda xp, d: xp.logaddexp(d.m, d.v)],
    "logaddexp2": [lambda xp, d: xp.logaddexp2(d.m, 0.5)],
    "sign": [lambda xp, d: xp.sign(d.m)], "ceil": [lambda xp, d: xp.ceil(d.w)],
    "floor": [lambda xp, d: xp.floor(d.w)], "round": [lambda xp, d: xp.round(d.w)],
    "trunc": [lambda xp, d: xp.trunc(d.w)], "negative": [lambda xp, d: xp.negative(d.m)],
    "positive": [lambda xp, d: xp.positive(d.m)],
    "add": [lambda xp, d: xp.add(d.m, d.v), lambda xp, d: xp.add(d.m, 2.0)],
    "subtract": [lambda xp, d: xp.subtract(2.0, d.m)],
    "multiply": [lambda xp, d: xp.multiply(d.m, d.v)],
    "divide": [lambda xp, d: xp.divide(d.m, d.p)],
    "true_divide": [lambda xp, d: xp.true_divide(d.m, d.p)],
    "power": [lambda xp, d: xp.power(d.p, d.m), lambda xp, d: xp.power(d.m, 2)],
    "remainder": [lambda xp, d: xp.remainder(d.w, 1.5), lambda xp, d: xp.remainder(d.w, -1.5)],
    "mod": [lambda xp, d: xp.mod(d.w, d.p)],
    "fmod": [lambda xp, d: xp.fmod(d.w, 1.5), lambda xp, d: xp.fmod(d.w, -d.p)],
    "maximum": [lambda xp, d: xp.maximum(d.m, d.v)], "minimum": [lambda xp, d: xp.minimum(d.m, 0.0)],
    "fmax": [lambda xp, d: xp.fmax(d.m, d.v)], "fmin": [lambda xp, d: xp.fmin(d.m, d.v)],
    "clip": [lambda xp, d: xp.clip(d.m, -0.5, 0.5)],
    "where": [lambda xp, d: xp.where(d.m > 0, d.m, d.v)],
    "select": [lambda xp, d: xp.select([d.m > 0.5, d.m < -0.5], [d.m, d.m * d.m], 0.0)],
    "real": [lambda xp, d: xp.real(d.m)], "imag": [lambda xp, d: xp.imag(d.m)],
    "conj": [lambda xp, d: xp.conj(d.m)], "conjugate": [lambda xp, d: xp.conjugate(d.m)],
    "nan_to_num": [lambda xp, d: xp.nan_to_num(d.m)],
    "sigmoid": [lambda xp, d: xp.sigmoid(d.m)], "softplus": [lambda xp, d: xp.softplus(d.m)],
    # reductions
    "sum": [lambda xp, d: xp.sum(d.a, axis=(0, 2)), lambda xp, d: xp.sum(d.a, axis=1, keepdims=True)],
    "mean": [lambda xp, d: xp.mean(d.a, axis=(0, 2))], "max": [lambda xp, d: xp.max(d.a, axis=1)],
    "min": [lambda xp, d: xp.min(d.m)], "amax": [lambda xp, d: xp.amax(d.m, axis=0, keepdims=True)],
    "amin": [lambda xp, d: xp.amin(d.m, axis=1)],
    "logsumexp": [lambda xp, d: xp.logsumexp(d.m, axis=1)],
    "prod": [lambda xp, d: xp.prod(d.m, axis=0), lambda xp, d: xp.prod(d.m)],
    "var": [lambda xp, d: xp.var(d.a, axis=(0, 2)), lambda xp, d: xp.var(d.m, ddof=1),
            lambda xp, d: xp.var(d.m, axis=1, keepdims=True)],
    "std": [lambda xp, d: xp.std(d.m, axis=0)],
    "cumsum": [lambda xp, d: xp.cumsum(d.m, axis=1), lambda xp, d: xp.cumsum(d.m)],
    "cumprod": [lambda xp, d: xp.cumprod(d.m, axis=0)],
    "trace": [lambda xp, d: xp.trace(d.s), lambda xp, d: xp.trace(d.a, offset=1, axis1=1, axis2=2)],
    "diff": [lambda xp, d: xp.diff(d.m), lambda xp, d: xp.diff(d.m, n=2, axis=0)],
    "sort": [lambda xp, d: xp.sort(d.m), lambda xp, d: xp.sort(d.m, axis=0)],
    # linear algebra
    "matmul": [lambda xp, d: xp.matmul(d.m, d.v)], "dot": [lambda xp, d: xp.dot(d.s, d.m)],
    "vdot": [lambda xp, d: xp.vdot(d.m, d.m)], "inner": [lambda xp, d: xp.inner(d.m, d.m)],
    "outer": [lambda xp, d: xp.outer(d.v, d.v)],
    "tensordot": [lambda xp, d: xp.tensordot(d.a, d.m, axes=([1, 2], [0, 1]))],
    "einsum": [lambda xp, d: xp.einsum("ij,kj->ik", d.m, d.m), lambda xp, d: xp.einsum("ii->i", d.s)],
    "kron": [lambda xp, d: xp.kron(d.s, d.s)],
    "cross": [lambda xp, d: xp.cross(d.m[:, :3], d.s)],
    "matrix_transpose": [lambda xp, d: xp.matrix_transpose(d.a)],
    "linalg.det": [lambda xp, d: xp.linalg.det(d.s)],
    "linalg.slogdet": [lambda xp, d: xp.linalg.slogdet(d.h)[1]],
    "linalg.inv": [lambda xp, d: xp.linalg.inv(d.h)],
    "linalg.solve": [lambda xp, d: xp.linalg.solve(d.h, d.s)],
    "linalg.cholesky": [lambda xp, d: xp.linalg.cholesky(d.h)],
    "linalg.eigh": [lambda xp, d: xp.linalg.eigh(d.h)[0]],
    "linalg.eigvalsh": [lambda xp, d: xp.linalg.eigvalsh(d.h)],
    "linalg.norm": [lambda xp, d: xp.linalg.norm(d.m), lambda xp, d: xp.linalg.norm(d.m, axis=1)],
    "linalg.qr": [lambda xp, d: xp.abs(xp.linalg.qr(d.s)[1])],
    "linalg.matrix_power": [lambda xp, d: xp.linalg.matrix_power(d.s, 3)],
    "linalg.multi_dot": [lambda xp, d: xp.linalg.multi_dot([d.s, d.m, d.v])],
    "linalg.svd": [lambda xp, d: xp.linalg.svd(d.m, compute_uv=False)],
    "linalg.svdvals": [lambda xp, d: xp.linalg.svdvals(d.m)],
    "linalg.pinv": [lambda xp, d: xp.linalg.pinv(d.m)],
    # shapes
    "reshape": [lambda xp, d: xp.reshape(d.a, (4, -1))],
    "transpose": [lambda xp, d: xp.transpose(d.a, (1, 0, 2))],
    "permute_dims": [lambda xp, d: xp.permute_dims(d.a, (2, 0, 1))],
    "swapaxes": [lambda xp, d: xp.swapaxes(d.a, 0, 2)],
    "expand_dims": [lambda xp, d: xp.expand_dims(d.m, 1)],
    "squeeze": [lambda xp, d: xp.squeeze(d.m[:1], axis=0)],
    "broadcast_to": [lambda xp, d: xp.broadcast_to(d.v, (2, 4))],
    "stack": [lambda xp, d: xp.stack([d.v, d.v], axis=1)],
    "concatenate": [lambda xp, d: xp.concatenate([d.m, d.m], axis=1)],
    "concat": [lambda xp, d: xp.concat([d.m, d.m])],
    "moveaxis": [lambda xp, d: xp.moveaxis(d.a, 0, -1)],
    "rollaxis": [lambda xp, d: xp.rollaxis(d.a, 2), lambda xp, d: xp.rollaxis(d.a, 0, 2)],
    "ravel": [lambda xp, d: xp.ravel(d.m)],
    "repeat": [lambda xp, d: xp.repeat(d.m, 2, axis=1), lambda xp, d: xp.repeat(d.v, 2)],
    "tile": [lambda xp, d: xp.tile(d.v, (2, 1))],
    "roll": [lambda xp, d: xp.roll(d.m, 1, axis=1), lambda xp, d: xp.roll(d.m, 2)],
    "flip": [lambda xp, d: xp.flip(d.m), lambda xp, d: xp.flip(d.m, axis=1)],
    "flipud": [lambda xp, d: xp.flipud(d.m)], "fliplr": [lambda xp, d: xp.fliplr(d.m)],
    "rot90": [lambda xp, d: xp.rot90(d.m), lambda xp, d: xp.rot90(d.a, 2, axes=(1, 2))],
    "diag": [lambda xp, d: xp.diag(d.v), lambda xp, d: xp.diag(d.s, 1)],
    "diagonal": [lambda xp, d: xp.diagonal(d.a, axis1=1, axis2=2)],
    "tril": [lambda xp, d: xp.tril(d.m)], "triu": [lambda xp, d: xp.triu(d.m, 1)],
    "atleast_1d": [lambda xp, d: xp.atleast_1d(d.v)],
    "atleast_2d": [lambda xp, d: xp.atleast_2d(d.v)],
    "atleast_3d": [lambda xp, d: xp.atleast_3d(d.v), lambda xp, d: xp.atleast_3d(d.m)],
    "vstack": [lambda xp, d: xp.vstack([d.v, d.v])], "hstack": [lambda xp, d: xp.hstack([d.m, d.m])],
    "column_stack": [lambda xp, d: xp.column_stack([d.v, d.v])],
    "dstack": [lambda xp, d: xp.dstack([d.m, d.m])],
    "append": [lambda xp, d: xp.append(d.m, d.m), lambda xp, d: xp.append(d.m, d.m, axis=0)],
    "pad": [lambda xp, d: xp.pad(d.m, 1), lambda xp, d: xp.pad(d.m, ((1, 0), (0, 2)))],
    "split": [lambda xp, d: xp.split(d.m, 2, axis=1), lambda xp, d: xp.split(d.v, [1, 3])],
    "array_split": [lambda xp, d: xp.array_split(d.v, 3)],
    "vsplit": [lambda xp, d: xp.vsplit(d.s, 3)], "hsplit": [lambda xp, d: xp.hsplit(d.m, 2)],
    "dsplit": [lambda xp, d: xp.dsplit(d.a, 2)],
    "take": [lambda xp, d: xp.take(d.m, np.array([0, 2])),
             lambda xp, d: xp.take(d.m, np.array([[0, 1], [1, 0]]), axis=1)],
    # new arrays
    "asarray": [lambda xp, d: xp.asarray(d.m), lambda xp, d: xp.asarray([1.0, 2.0])],
    "array": [lambda xp, d: xp.array(d.m)], "zeros": [lambda xp, d: xp.zeros((2, 3))],
    "ones": [lambda xp, d: xp.ones(3)], "full": [lambda xp, d: xp.full((2, 2), 0.5)],
    "zeros_like": [lambda xp, d: xp.zeros_like(d.m)], "ones_like": [lambda xp, d: xp.ones_like(d.m)],
    "arange": [lambda xp, d: xp.arange(4), lambda xp, d: xp.arange(0.0, 1.0, 0.25)],
    "linspace": [lambda xp, d: xp.linspace(0.0, 1.0, 5)], "eye": [lambda xp, d: xp.eye(3)],
    # constants
    "pi": [lambda xp, d: d.v * xp.pi], "e": [lambda xp, d: d.v + xp.e],
    "inf": [lambda xp, d: xp.minimum(d.v, xp.inf)],
    "nan": [lambda xp, d: xp.where(d.v > 0, d.v, xp.nan)],
    "newaxis": [lambda xp, d: d.v[:, xp.newaxis] * d.m[0][xp.newaxis, :]],
    "float64": [lambda xp, d: xp.zeros(2, dtype=xp.float64)],
    "float32": [lambda xp, d: xp.ones(2, dtype=xp.float32)],
}


# --- the namespaces: how to give them arrays and read their results ------------------------

def _numpy():
    return np, lambda a: a, lambda r: r


def _engine():
    def out(r):
        return r.data if isinstance(r, Tensor) else r
    return array_api, Tensor, out


def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax.numpy, jax.numpy.asarray, np.asarray


def _torch():
    torch = pytest.importorskip("torch")
    from diffcompare.problems import torch_namespace
    return (torch_namespace.namespace(), torch.from_numpy,
            lambda r: r.detach().numpy() if isinstance(r, torch.Tensor) else r)


NAMESPACES = {"numpy": _numpy, "engine": _engine, "jax": _jax, "torch": _torch}


def _call_sympy(case):
    """The case on SymPy symbols, then evaluated at the inputs' values."""
    names = list(INPUTS)
    sym = symbols_like(tuple(INPUTS[n] for n in names), wrt=tuple(range(len(names))))
    values = dict(zip(sym.all_flat, (sympy.Float(float(v), 17) for v in sym.values(
        tuple(INPUTS[n] for n in names)))))
    d = types.SimpleNamespace(**dict(zip(names, sym.args)))
    result = case(contract.namespace(sympy_xp), d)

    def evaluate(r):
        if isinstance(r, (list, tuple)):
            return [evaluate(x) for x in r]
        if isinstance(r, np.ndarray) and r.dtype == object:
            return np.array([_number(e.xreplace(values) if isinstance(e, sympy.Basic) else e)
                             for e in r.reshape(-1)], dtype=np.float64).reshape(r.shape)
        if isinstance(r, sympy.Basic):
            return np.float64(_number(r.xreplace(values)))
        return r

    return evaluate(result)


def _number(e):
    e = sympy.sympify(e)
    if e is sympy.nan:
        return np.nan
    return float(e.evalf(17)) if isinstance(e, sympy.Basic) else float(e)


def _call(key, case):
    if key == "sympy":
        return _call_sympy(case)
    xp, into, out = NAMESPACES[key]()
    d = types.SimpleNamespace(**{k: into(v.copy()) for k, v in INPUTS.items()})
    result = case(contract.namespace(xp), d)
    if isinstance(result, (list, tuple)):
        return [np.asarray(out(r)) for r in result]
    return np.asarray(out(result))


def _same(got, want, what):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), what
        for g, w in zip(got, want):
            _same(g, w, what)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy's {want.shape}"
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-12,
                               atol=1e-12, err_msg=what)


ALL = [n for names in contract.CANDIDATES.values() for n in names]


def test_every_candidate_has_cases_and_names_are_the_fully_available_ones():
    assert sorted(set(ALL)) == sorted(CASES), sorted(set(ALL) ^ set(CASES))
    assert len(set(ALL)) == len(ALL), "a name listed twice"
    assert contract.NAMES == tuple(sorted(n for n in ALL if not contract.lacks(n)))
    assert set(contract.NAMES) == {n for g in contract.GROUPS.values() for n in g}
    for name, why in contract.LACKS.items():
        assert name in ALL and set(why) <= set(contract.NAMESPACES) and all(why.values())


@pytest.mark.parametrize("name", ALL)
def test_table_matches_what_each_namespace_gives(name):
    cells = dict(next(c for _, n, c in contract.table() if n == name))
    for case in CASES[name]:
        want = _call("numpy", case)
        for key, cell in cells.items():
            if key == "numpy":
                assert cell == contract.CHECK
                continue
            if cell == contract.CHECK:
                _same(_call(key, case), want, f"xp.{name} on {key}")
            else:
                # a reason: the namespace really cannot give it (or not with NumPy's meaning)
                try:
                    got = _call(key, case)
                except (AttributeError, NotImplementedError, TypeError, ValueError):
                    continue
                with pytest.raises(AssertionError):
                    _same(got, want, f"xp.{name} on {key}")


def test_engine_column_is_read_from_the_engine():
    for name in ALL:
        has = contract._has_path(array_api, name) or name in contract.PROVIDED
        assert ("engine" not in contract.lacks(name)) == has, name


def test_a_name_outside_says_why_on_the_namespace_that_lacks_it():
    with pytest.raises(contract.MissingName, match=r"xp.sort .*not in diffcompare's xp "
                                                   r"contract.*SymPy: sorting needs the values"):
        contract.namespace(sympy_xp).sort


def test_docs_table_is_generated_from_the_contract():
    docs = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    assert docs == contract.markdown(), (
        "docs/contract.md is out of date: regenerate it with "
        "`python -m diffcompare list contract --markdown > docs/contract.md`")


def test_cli_lists_the_contract():
    out = subprocess.run([sys.executable, "-m", "diffcompare", "list", "contract"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == contract.text().strip()
    lines = {line.split()[0]: line for line in out.stdout.splitlines() if line.strip()}
    assert lines["sort"].split()[1:5] == [contract.CHECK] * 4 or "engine" in contract.lacks("sort")
    assert "sorting needs the values" in out.stdout
    md = subprocess.run([sys.executable, "-m", "diffcompare", "list", "contract", "--markdown"],
                        capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert md.returncode == 0 and md.stdout == contract.markdown()


# --- gradients: the new names differentiate alike on the methods that have them -------------

def _smooth(xp, x):
    m = xp.reshape(x, (2, 3))
    return (xp.sum(xp.arcsin(x / 3) + xp.arctan2(x, 1.5) + xp.hypot(x, 2.0) + xp.cbrt(x)
                   + xp.logaddexp(x, -x) + xp.exp2(x) + xp.log10(x * x + 1) + xp.sinc(x))
            + xp.sum(xp.cumsum(m, axis=1) * xp.flip(m)) + xp.var(x) + xp.std(m, axis=0)[1]
            + xp.sum(xp.pad(xp.diff(x), 1) ** 2) + xp.trace(xp.reshape(x[:4], (2, 2)))
            + xp.sum(xp.concatenate(xp.split(x, 3)) * xp.roll(x, 1)) + xp.prod(x[:3]))


def _kinked(xp, x):
    """Rounding and remainders (derivative 0 and 1 away from their jumps), select."""
    return xp.sum(xp.floor(x) * x + xp.trunc(x) * x + xp.remainder(x, 0.7) + xp.fmod(x, 0.7)
                  + xp.ceil(x) + xp.select([x > 0.5, x < -0.5], [x * x, xp.sin(x)], 0.1 * x))


@pytest.mark.parametrize("fn, methods", [
    (_smooth, ["sympy", "sympy-reverse", "torch"]),
    (_kinked, ["sympy", "sympy-reverse", "torch"]),
])
def test_gradients_of_the_new_names_agree_with_jax(fn, methods):
    from diffcompare import backends
    from diffcompare.problems import Problem

    x = np.array([0.3, -1.2, 2.1, -0.45, 1.7, 0.9])      # away from every jump and kink
    p = Problem(name=fn.__name__.strip("_"), fn=fn, make_inputs=lambda size, seed: (x.copy(),),
                description=fn.__name__)
    pytest.importorskip("jax")
    want = backends.compute_gradient(backends.get("jax-jit"), p, p.inputs(6))[0]
    for method in methods:
        got = backends.compute_gradient(backends.get(method), p, p.inputs(6))[0]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=method)


def test_symengine_refuses_what_it_cannot_differentiate_as_unsupported():
    pytest.importorskip("symengine")
    from diffcompare import backends
    from diffcompare.backends import UnsupportedError
    from diffcompare.problems import Problem

    for fn in (lambda xp, x: xp.sum(xp.sinc(x)), lambda xp, x: xp.sum(xp.floor(x) * x)):
        p = Problem(name="t_symengine", fn=fn, description="refused",
                    make_inputs=lambda size, seed: (np.array([0.3, -1.2]),))
        with pytest.raises(UnsupportedError):
            backends.compute_gradient(backends.get("symengine"), p, p.inputs(2))
