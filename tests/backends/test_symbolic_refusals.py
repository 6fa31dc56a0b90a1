"""Symbolic backends refuse what they cannot derive as ``unsupported``, naming the op and the
line of the user's function (read from one evaluation on the engine, problems.validity), where
they used to fail with a printer's or an operator's traceback."""
import numpy as np
import pytest

from diffcompare import backends
from diffcompare.backends.base import UnsupportedError
from diffcompare.problems import Problem

SYMPY_FAMILY = ["sympy", "sympy-cse", "sympy-reverse"]


def untagged(name, fn, x):
    return Problem(name, fn, lambda size, seed: (np.array(x, dtype=np.float64),), name, sizes=(len(x),))


def refusal(backend_name, problem) -> str:
    backend = backends.get(backend_name)
    if not backend.available():
        pytest.skip(f"{backend_name} is not installed")
    with pytest.raises(UnsupportedError) as info:
        backends.compute_gradient(backend, problem, problem.inputs(problem.sizes[0], 0))
    return info.value.reason


def sign_times_square(xp, x):
    return xp.sum(xp.sign(x) * x * x)


def relu_mask(xp, x):
    return xp.sum(x * (x > 0) + x * x)


def absolute(xp, x):
    return xp.sum(xp.abs(x) * x + xp.maximum(x, 0.5))


@pytest.mark.parametrize("name", SYMPY_FAMILY)
def test_sign_differentiated_to_a_dirac_delta_is_refused_with_its_line(name):
    # was: BackendError "prepare failed: PrintMethodNotImplementedError ... DiracDelta"
    reason = refusal(name, untagged("sign_sq", sign_times_square, [0.3, -1.2, 2.0]))
    line = sign_times_square.__code__.co_firstlineno + 1
    assert "DiracDelta" in reason and f"sign at test_symbolic_refusals.py:{line}" in reason


@pytest.mark.parametrize("name", [*SYMPY_FAMILY, "symengine"])
def test_a_comparison_used_as_a_number_is_refused_with_its_line(name):
    # was: BackendError "prepare failed: TypeError: unsupported operand type(s) for *: 'Symbol'
    # and 'StrictGreaterThan'"
    reason = refusal(name, untagged("relu_mask", relu_mask, [0.3, -1.2, 2.0]))
    line = relu_mask.__code__.co_firstlineno + 1
    assert f"comparison's result is used as a number at test_symbolic_refusals.py:{line}" in reason
    assert "xp.where" in reason


def test_symengine_names_the_ops_and_lines_it_leaves_underived():
    # was: "SymEngine leaves the derivative of Abs, Max unevaluated", no op or line of the user's
    reason = refusal("symengine", untagged("abs_max", absolute, [0.3, -1.2, 2.0]))
    line = absolute.__code__.co_firstlineno + 1
    assert reason.startswith("SymEngine leaves the derivative of Abs, Max unevaluated")
    assert (f"abs at test_symbolic_refusals.py:{line}, maximum at test_symbolic_refusals.py:{line}"
            in reason)

