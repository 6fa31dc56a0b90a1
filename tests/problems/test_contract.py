"""The xp contract: every name works on NumPy, jax.numpy, the engine, SymPy and torch with
the same values; the shipped catalog uses contract names only; a missing name is a clear error."""
import numpy as np
import pytest
import sympy

from diffcompare import backends, problems
from diffcompare.backends import BackendError
from diffcompare.engine import Tensor, array_api
from diffcompare.problems import Problem, contract
from diffcompare.problems.symbolic import symbols_like, sympy_xp


def _namespaces():
    out = [("numpy", np, lambda a: a, np.asarray), ("engine", array_api, Tensor,
                                                    lambda t: np.asarray(t.data))]
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    out.append(("jax", jax.numpy, jax.numpy.asarray, np.asarray))
    torch = pytest.importorskip("torch")
    from diffcompare.problems import torch_namespace
    out.append(("torch", torch_namespace.namespace(), torch.from_numpy,
                lambda t: t.detach().numpy()))
    return out


def test_every_contract_name_exists_on_every_namespace():
    for label, xp, _, _ in _namespaces() + [("sympy", sympy_xp, None, None)]:
        assert contract.missing(xp) == [], label


@pytest.mark.parametrize("expr", [
    lambda xp, x: xp.logsumexp(x, axis=1),
    lambda xp, x: xp.logsumexp(x, axis=0, keepdims=True),
    lambda xp, x: xp.logsumexp(x),
    lambda xp, x: xp.sigmoid(x),
    lambda xp, x: xp.softplus(x),
    lambda xp, x: xp.log1p(xp.abs(x)),
])
def test_provided_names_agree_everywhere(expr):
    x = np.random.default_rng(0).standard_normal((3, 4)) * 3
    want = None
    for label, xp, wrap, unwrap in _namespaces():
        got = unwrap(expr(contract.namespace(xp), wrap(x.copy())))
        if want is None:
            want = got
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15, err_msg=label)
    # SymPy: the plain formulas, evaluated
    s = symbols_like((x,), (0,))
    out = np.asarray(expr(contract.namespace(sympy_xp), s.args[0]), dtype=object)
    f = sympy.lambdify(s.all_flat, list(out.reshape(-1)), modules="numpy")
    np.testing.assert_allclose(np.reshape(f(*s.values((x,))), np.shape(want)), want, rtol=1e-12)


def test_provided_logsumexp_and_softplus_do_not_overflow():
    xp = contract.namespace(np)
    x = np.array([1000.0, 1000.0])
    assert float(xp.logsumexp(x)) == pytest.approx(1000 + np.log(2), rel=1e-15)
    assert float(xp.softplus(np.array(1000.0))) == 1000.0
    assert float(xp.sigmoid(np.array(-1000.0))) == 0.0


def test_sigmoid_is_relatively_accurate_in_the_tail_everywhere():
    # sigmoid(-40) = 4.2e-18 and log(sigmoid(x)) = -log1p(exp(-x)) to a few ulps on every
    # namespace: a sigmoid that rounds to 0 there gives log(sigmoid) = -inf on some methods only
    x = np.array([-700.0, -300.0, -40.0, -20.0, 0.5, 30.0])
    want_log = -np.logaddexp(0.0, -x)
    for label, xp, wrap, unwrap in _namespaces():
        ns = contract.namespace(xp)
        got = unwrap(ns.sigmoid(wrap(x.copy())))
        np.testing.assert_allclose(got, np.exp(want_log), rtol=1e-14, atol=0, err_msg=label)
        np.testing.assert_allclose(unwrap(ns.log(ns.sigmoid(wrap(x.copy())))), want_log,
                                   rtol=1e-14, atol=1e-16, err_msg=label)   # log(1 - 9e-14) at 30


class _Recorder:
    """NumPy's contract namespace that notes every name a problem reads."""

    def __init__(self):
        self.used = set()
        self._ns = contract.namespace(np)

    def __getattr__(self, name):
        self.used.add(name)
        return getattr(self._ns, name)


@pytest.mark.parametrize("name", [p.name for p in problems.all_problems()
                                  if p.fn.__module__.startswith("diffcompare.problems.catalog")])
def test_catalog_problems_use_contract_names_only(name):
    p = problems.get(name)
    recorder = _Recorder()
    p.fn.__wrapped__(recorder, *p.inputs(min(p.sizes)))
    assert recorder.used <= set(contract.NAMES), sorted(recorder.used - set(contract.NAMES))


def test_a_missing_name_is_an_error_naming_it_and_the_namespace():
    # (xp.linalg was the example until the engine got its linalg namespace; fft it has not)
    p = Problem(name="uses_fft", fn=lambda xp, x: xp.fft.fft(x).real[0], description="fft",
                make_inputs=lambda n, s: (np.ones(n),))
    assert float(p.fn(np, np.ones(4))) == 4.0       # NumPy has it: not refused there
    with pytest.raises(BackendError, match=r"xp\.fft is not available on the engine .*"
                                           r"not in diffcompare's xp contract"):
        backends.compute_gradient(backends.get("engine"), p, p.inputs(3))


def test_problem_function_keeps_its_identity():
    p = problems.get("rosenbrock")
    from diffcompare.problems.catalog.classic import rosenbrock
    assert p.fn.__wrapped__ is rosenbrock and p.fn.__code__ is rosenbrock.__code__
    assert p.fn.__module__ == rosenbrock.__module__ and p.fn.__name__ == "rosenbrock"
    import pickle
    assert pickle.loads(pickle.dumps(p.fn)).__wrapped__ is rosenbrock
