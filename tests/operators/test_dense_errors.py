"""Refusals and bad input: every unsupported (operator, method) pair raises
OperatorUnsupported with its reason; wrong vectors, shapes and sizes say what was expected."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from diffcompare import operators
from diffcompare.operators import DenseTooLarge, OperatorUnsupported
from diffcompare.operators.dense import TABLE, Refused

from dense_cases import SCALAR, VECTOR

REFUSED = [(op, m) for op in operators.OPERATORS for m, cell in TABLE[op].items()
           if isinstance(cell, Refused)]


@pytest.mark.parametrize("operator,method", REFUSED, ids=[f"{o}-{m}" for o, m in REFUSED])
def test_refused_pair_raises_with_its_reason(operator, method):
    problem = SCALAR[0] if operator in ("gradient", "hessian", "hvp") else VECTOR[0]
    with pytest.raises(OperatorUnsupported) as info:
        operators.prepare(operator, problem, problem.inputs(4), method)
    assert info.value.reason == TABLE[operator][method].reason and info.value.reason
    assert operator in str(info.value) and method in str(info.value)


def _square(xp, x):
    return xp.sum(x * x)


def test_wrong_tangent_and_cotangent_shapes():
    x = (np.arange(4.0),)
    with pytest.raises(ValueError, match=r"tangent has shape \(3,\); expected \(4,\)"):
        operators.hvp(_square, x, np.ones(3))
    with pytest.raises(ValueError, match=r"tangent part 0 has shape \(2,\)"):
        operators.hvp(_square, x, (np.ones(2),))
    with pytest.raises(ValueError, match=r"output has shape \(4,\)"):
        operators.pullback(lambda xp, x: x * 2, x, np.ones(5))
    op = operators.prepare("pushforward", lambda xp, x: x * 2, x, "engine-jvp")
    with pytest.raises(TypeError, match="needs a tangent"):
        op.evaluate(x)
    with pytest.raises(TypeError, match="takes no vector"):
        operators.prepare("jacobian", lambda xp, x: x * 2, x).evaluate(x, np.ones(4))


def test_inputs_of_other_shapes_need_a_new_prepare():
    op = operators.prepare("gradient", _square, (np.ones(3),))
    with pytest.raises(ValueError, match="prepare it again"):
        op.evaluate((np.ones(4),))


def test_scalar_operator_of_a_vector_function():
    with pytest.raises(ValueError, match=r"hessian needs a scalar function.*shape \(4,\)"):
        operators.hessian(lambda xp, x: x * 2, (np.ones(4),))


def test_jacobian_too_large_to_store_densely_suggests_sparse():
    n = 6000                         # 3.6e7 entries > MAX_DENSE_ENTRIES: refused before computing
    with pytest.raises(DenseTooLarge, match=r"6,000 x 6,000 = 36,000,000 entries.*sparse=True"):
        operators.jacobian(lambda xp, x: xp.sin(x), (np.ones(n),))


def test_sparse_without_its_libraries_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "networkx", None)          # as if not installed
    with pytest.raises(OperatorUnsupported, match=r"networkx is missing.*diffcompare\[sparse\]"):
        operators.jacobian(lambda xp, x: xp.sin(x), (np.ones(3),), sparse=True)


def test_symbolic_size_guard_is_respected():
    with pytest.raises(OperatorUnsupported, match="n=401 differentiated scalars > 400"):
        operators.prepare("hessian", _square, (np.ones(401),), method="sympy")


def test_complex_step_refuses_a_function_that_is_not_analytic():
    with pytest.raises(OperatorUnsupported, match="complex-analytic"):
        operators.pushforward(lambda xp, x: xp.abs(x), (np.ones(3),), np.ones(3),
                              method="fd-complex-step")


def test_unknown_operator_and_method():
    with pytest.raises(ValueError, match="unknown operator 'divergence'"):
        operators.prepare("divergence", _square, (np.ones(2),))
    with pytest.raises(KeyError, match="unknown method 'maple'"):
        operators.prepare("gradient", _square, (np.ones(2),), method="maple")
