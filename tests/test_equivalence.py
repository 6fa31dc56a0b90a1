"""The methods agree: every backend on every problem it supports, against the engine.

Tolerances are per method, on rho = |x - y| / max(1, |x| + |y|) (max over
elements), each method's description's ``tolerance`` (``backends.registry``): exact
methods (AD, symbolic, hand-written) to 1e-10, complex step to 1e-13, Richardson to
1e-9, central differences to 1e-6 and forward differences to 1e-4 -- what each method's
truncation and rounding allow.

Problems with inputs placed exactly on kinks are left to
``test_kink_conventions``: there the methods legitimately differ.
"""
from __future__ import annotations

import numpy as np
import pytest

from diffcompare import backends, problems
from diffcompare.backends import BackendError
from diffcompare.measure.accuracy import errors
from diffcompare.problems.catalog import adbench

# gmm: dα = Σ_i r_i - n softmax(α) cancels sums of 1000 terms (function values ~1e4), so
# rounding reaches ~1e-13 relative, and Richardson's extrapolated differences ~1e-8
TOLERANCE_OVERRIDE = {("gmm", "fd-complex-step"): 1e-12, ("gmm", "fd-richardson"): 1e-8}
KINK_PROBLEMS = {"relu_kink", "abs_kink", "max_kink"}
SLOW = {"sympy", "sympy-cse"}          # symbolic work grows fast: smallest size only
# gmm at ADBench's other d or n (adbench.GMM_GRID) is gmm's function at other shapes: each
# one-gradient method checks its gradient there; the methods that pay per input (finite
# differences, forward mode: 4290 inputs at d = 64) or per op and shape (jax-eager: ~10 s of
# compiles) are checked on gmm itself, and a variant changing both d and n (gmm_d64_10k)
# adds no shape that the ones changing one of them miss
GMM_SHAPES = set(adbench.GMM_PROBLEMS) - {"gmm"}
GMM_BOTH = {adbench.gmm_problem_name(d, n) for d, n in adbench.GMM_GRID
            if d != adbench.GMM_D and n != adbench.GMM_N}
PER_INPUT_OR_EAGER = {"fd-forward", "fd-central", "fd-complex-step", "fd-richardson",
                      "numdifftools", "jax-jacfwd", "engine-jvp", "jax-eager"}
# ADBench-sized problems (n = 1000 points, unrolled loops JAX compiles): smallest size only
HEAVY = {"gmm", "bundle_adjustment", "lstm", "kmeans"} | GMM_SHAPES
# compiled per case, or n passes per gradient (forward mode): smallest size only
ONE_SIZE = {"jax-eager", "jax-jacfwd", "engine-jvp", "numdifftools"}


def _shipped_problems():
    """The catalog's own problems (tests elsewhere may register throwaway ones)."""
    return [p for p in problems.all_problems()
            if getattr(p.fn, "__module__", "").startswith("diffcompare.problems.catalog")]


def _cases():
    # Only pairs the backend declares it supports: the capability table (tested below)
    # covers the refusals, so nothing here is skipped for being not applicable (only left
    # out for cost: GMM_SHAPES and GMM_BOTH above).
    for problem in _shipped_problems():
        if problem.name in KINK_PROBLEMS or problem.name in GMM_BOTH:
            continue
        for name in backends.names():
            backend = backends.get(name)
            if name == "engine" or not backend.supports(problem):
                continue
            if problem.name in GMM_SHAPES and name in PER_INPUT_OR_EAGER:
                continue
            one = name in SLOW or name in ONE_SIZE or problem.name in HEAVY
            sizes = problem.sizes[:1] if one else problem.sizes[:2]
            for size in sizes:
                if not backend.supports_inputs(problem, problem.inputs(size, seed=0)):
                    continue              # a declared size limit (max_inputs), tested per backend
                yield pytest.param(problem.name, name, size, id=f"{problem.name}-{name}-{size}")


_engine_cache = {}


def _engine_gradient(problem, size, inputs, cotangent):
    key = (problem.name, size)
    if key not in _engine_cache:
        _engine_cache[key] = backends.compute_gradient(backends.get("engine"), problem, inputs, cotangent)
    return _engine_cache[key]


@pytest.mark.parametrize("problem_name, backend_name, size", list(_cases()))
def test_backend_agrees_with_engine(problem_name, backend_name, size):
    problem = problems.get(problem_name)
    backend = backends.get(backend_name)
    if not backend.available():
        pytest.skip(f"{backend_name} unavailable: {backend.available().reason}")
    if not backend.supports(problem):
        pytest.skip(f"{backend_name} does not support {problem_name}: {backend.supports(problem).reason}")
    inputs = problem.inputs(size, seed=0)
    cotangent = problem.cotangent(size, seed=0)
    expected = _engine_gradient(problem, size, inputs, cotangent)
    got = backends.compute_gradient(backend, problem, inputs, cotangent)
    rho = errors(got, expected)["rho"]
    tolerance = TOLERANCE_OVERRIDE.get((problem_name, backend_name),
                                       backends.info(backend_name).tolerance)
    assert rho <= tolerance, (
        f"{backend_name} vs engine on {problem_name} (size {size}): rho {rho:.2e} > "
        f"{tolerance:.0e}")


def test_every_backend_is_exercised_somewhere():
    """The capability table, generated from supports(): each available backend runs
    at least the classic smooth problems, and refusals carry a reason."""
    table = backends.capability_table()
    for name, row in table.iterrows():
        cells = list(row)
        if all(c.startswith("unavailable") for c in cells):
            continue
        assert row["rosenbrock"] == "ok", f"{name} should support rosenbrock: {row['rosenbrock']}"
        for c in cells:
            assert c == "ok" or (c.startswith("unsupported: ") and len(c) > len("unsupported: ") + 5)


def test_complex_step_refuses_nonsmooth_problems_with_a_reason():
    support = backends.get("fd-complex-step").supports(problems.get("abs_kink"))
    assert not support and "complex" in support.reason.lower()


def test_failing_problem_gives_a_per_backend_error_naming_both():
    def bad(xp, x):
        raise ZeroDivisionError("boom")

    p = problems.Problem(name="always_fails", fn=bad, description="raises",
                         make_inputs=lambda n, s: (np.ones(n),))
    for name in ("engine", "fd-central"):
        with pytest.raises(BackendError, match=rf"problem 'always_fails' on backend '{name}'.*boom"):
            backends.compute_gradient(backends.get(name), p, p.inputs(3))


def test_nan_and_wrong_shape_and_non_scalar_are_clear_errors():
    nan_p = problems.Problem(name="nan_out", fn=lambda xp, x: xp.sum(xp.sqrt(x)), description="sqrt of negatives",
                             make_inputs=lambda n, s: (-np.ones(n),))
    inf_grad = problems.Problem(name="inf_grad", fn=lambda xp, x: xp.sum(xp.sqrt(x)), description="sqrt at 0",
                                make_inputs=lambda n, s: (np.zeros(n),))
    with np.errstate(invalid="ignore", divide="ignore"):
        with pytest.raises(BackendError, match=r"problem 'nan_out' on backend 'engine': the function value "
                                               r"is not finite"):
            backends.compute_gradient(backends.get("engine"), nan_p, nan_p.inputs(2))
        with pytest.raises(BackendError, match=r"problem 'inf_grad' on backend 'engine'.*gradient .* not finite"):
            backends.compute_gradient(backends.get("engine"), inf_grad, inf_grad.inputs(2))
        prepared = backends.checked_prepare(backends.get("engine"), nan_p, nan_p.inputs(2))
        with pytest.raises(BackendError, match=r"problem 'nan_out'.*function value is not finite"):
            backends.checked_function(backends.get("engine"), prepared, nan_p.inputs(2))
    vec_p = problems.Problem(name="vector_without_tag", fn=lambda xp, x: x * 2, description="not reduced",
                             make_inputs=lambda n, s: (np.ones(n),))
    backend = backends.get("engine")
    prepared = backends.checked_prepare(backend, vec_p, vec_p.inputs(3))
    with pytest.raises(BackendError, match=r"shape \(3,\) where a scalar is needed"):
        backends.checked_function(backend, prepared, vec_p.inputs(3))
    with pytest.raises(BackendError, match="vector_without_tag"):
        backends.compute_gradient(backend, vec_p, vec_p.inputs(3))


def test_unavailable_backend_reports_reason_and_others_still_run(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "jax", None)
    avail = backends.get("jax-jit").available()
    assert not avail and "jax" in avail.reason
    p = problems.get("rosenbrock")
    with pytest.raises(BackendError, match="unavailable"):
        backends.compute_gradient(backends.get("jax-jit"), p, p.inputs(2))
    g = backends.compute_gradient(backends.get("engine"), p, p.inputs(2))
    assert g[0].shape == (2,)
