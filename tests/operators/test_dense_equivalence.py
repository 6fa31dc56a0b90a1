"""Every operator on every method that claims it natively (``dense.TABLE``), against
torch.func on small seeded float64 problems, and against exact closed forms (the quadratic
form's Hessian A + Aᵀ, logistic regression's Xᵀ diag(s(1 - s)) X / N).

Tolerances: exact methods (AD, symbolic) agree to rtol 1e-10 / atol 1e-12 -- only the order
of floating-point sums differs.  Approximate methods (not ``exact`` in their description: finite
differences, numdifftools) get rtol 1e-4 / atol 1e-5: forward differences err by
~sqrt(eps) ~ 1e-8 relative times the curvature, fd-central's Hessian (differences of its
own difference gradient) by ~eps^(4/9) ~ 1e-7, both well inside, on these O(1) inputs.
This test is also the capability table's check: every ``native`` cell runs here."""
from __future__ import annotations

import numpy as np
import pytest

from diffcompare import backends, operators, problems
from diffcompare.backends.base import Unavailable
from diffcompare.operators.dense import TABLE, Native

from dense_cases import (SCALAR, VECTOR, logistic_gradient, logistic_hessian,
                         quadratic_hessian, torch_reference, vectors)

EXACT = {"rtol": 1e-10, "atol": 1e-12}
APPROX = {"rtol": 1e-4, "atol": 1e-5}

NATIVE = [(op, m) for op in operators.OPERATORS for m, cell in TABLE[op].items()
          if isinstance(cell, Native)]


def _tolerance(method):
    return EXACT if backends.info(method).exact else APPROX


def _cases(operator, method):
    if method == "manual":       # hand-written gradients exist for catalog layouts only
        p = problems.get("rosenbrock")
        return [p]
    return SCALAR if operator in ("gradient", "hessian", "hvp") else VECTOR


def _prepare(operator, problem, inputs, method):
    try:
        return operators.prepare(operator, problem, inputs, method)
    except Unavailable as exc:
        pytest.skip(f"{method} unavailable here: {exc}")


@pytest.mark.parametrize("operator,method", NATIVE, ids=[f"{o}-{m}" for o, m in NATIVE])
def test_native_cell_matches_torch_func(operator, method):
    pytest.importorskip("torch")
    for problem in _cases(operator, method):
        inputs = problem.inputs(4, seed=3)
        v, u = vectors(problem, inputs)
        op = _prepare(operator, problem, inputs, method)
        assert op.how == TABLE[operator][method].how and op.prepare_s >= 0
        vector = {"pullback": u, "pushforward": v, "hvp": v}.get(operator)
        got = op.evaluate(inputs, vector)
        want = torch_reference(operator, problem, inputs, v=v, u=u)
        assert got.dtype == np.float64 and got.shape == want.shape, (problem.name, got.shape)
        np.testing.assert_allclose(got, want, **_tolerance(method), err_msg=problem.name)
        if operator in ("pullback", "pushforward", "hvp"):     # evaluate again, another vector
            again = op.evaluate(inputs, 2 * vector)
            np.testing.assert_allclose(again, 2 * want, **_tolerance(method), err_msg=problem.name)


HESSIAN_METHODS = [m for op, m in NATIVE if op == "hessian"]


@pytest.mark.parametrize("method", HESSIAN_METHODS)
def test_hessian_closed_forms(method):
    quadratic, logistic = SCALAR[0], SCALAR[1]
    x = quadratic.inputs(4, seed=11)
    np.testing.assert_allclose(_prepare("hessian", quadratic, x, method).evaluate(x),
                               quadratic_hessian(x), **_tolerance(method))
    w = logistic.inputs(4, seed=11)
    op = _prepare("hessian", logistic, w, method)
    np.testing.assert_allclose(op.evaluate(w), logistic_hessian(w), **_tolerance(method))
    # the prepared operator evaluates at other inputs of the same shapes
    w2 = logistic.inputs(4, seed=12)
    np.testing.assert_allclose(op.evaluate(w2), logistic_hessian(w2), **_tolerance(method))


def test_gradient_and_hvp_of_logistic_regression_closed_form():
    logistic = SCALAR[1]
    w = logistic.inputs(4, seed=5)
    v = np.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(operators.gradient(logistic, w), logistic_gradient(w), rtol=1e-12)
    np.testing.assert_allclose(operators.hvp(logistic, w, v), logistic_hessian(w) @ v, rtol=1e-12)


def test_function_api_on_a_plain_function_with_two_arguments():
    """fn(xp, *args) with wrt=(0, 1): one flat vector over both, and unflatten back."""
    f = lambda xp, x, y: xp.sum(x * x * y)  # noqa: E731
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    g = operators.gradient(f, (x, y), wrt=(0, 1))
    np.testing.assert_array_equal(g, [6.0, 16.0, 1.0, 4.0])
    op = operators.prepare("gradient", f, (x, y), wrt=(0, 1))
    gx, gy = op.unflatten(op.evaluate((x, y)))
    np.testing.assert_array_equal(gy, x * x)
    H = operators.hessian(f, (x, y), wrt=(0, 1))
    np.testing.assert_array_equal(H, H.T)
    # a tangent as one array per argument equals the flat one
    tangent = (np.array([1.0, 0.0]), np.array([0.0, 1.0]))
    np.testing.assert_array_equal(operators.hvp(f, (x, y), tangent, wrt=(0, 1)),
                                  H @ np.array([1.0, 0.0, 0.0, 1.0]))


def test_catalog_problem_by_name():
    p = problems.get("rosenbrock")
    x = p.inputs(3, seed=0)
    H = operators.hessian("rosenbrock", x, method="engine")
    assert H.shape == (3, 3)
    np.testing.assert_allclose(operators.hvp("rosenbrock", x, np.ones(3)), H @ np.ones(3),
                               rtol=1e-12)
