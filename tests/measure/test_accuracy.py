"""The high-precision reference: >= 30 correct digits on closed forms, cached, with a
labelled fallback; and the error measures."""
import mpmath
import numpy as np
import pytest

from diffcompare import backends, problems
from diffcompare.measure import accuracy, budget, extended


def _squire_trapp_derivative(x, dps=60):
    """d/dx e^x / sqrt(sin^3 x + cos^3 x), by hand, at `dps` digits."""
    with mpmath.workdps(dps):
        x = mpmath.mpf(x)
        s, c = mpmath.sin(x), mpmath.cos(x)
        d = s ** 3 + c ** 3
        dd = 3 * s ** 2 * c - 3 * c ** 2 * s
        return mpmath.e ** x / mpmath.sqrt(d) - mpmath.e ** x * dd / (2 * d ** mpmath.mpf(1.5))


def _correct_digits(value, exact):
    with mpmath.workdps(60):
        rel = abs(value - exact) / abs(exact)
        return float(-mpmath.log10(rel)) if rel else 60.0


def test_reference_has_at_least_30_correct_digits_on_squire_trapp(tmp_path):
    p = problems.get("squire_trapp")
    (x,) = p.inputs(1, seed=0)
    assert x[0] == 1.5
    ref = accuracy.reference_gradient(p, 1, 0, cache_dir=tmp_path)
    assert ref.label == accuracy.SYMBOLIC_LABEL and ref.digits >= 30
    digits = _correct_digits(ref.values[0][0], _squire_trapp_derivative(x[0]))
    assert digits >= 30, f"only {digits:.1f} correct digits"


def test_reference_is_exact_for_a_polynomial_with_float_constants(tmp_path):
    """sum(3.7 x^2): the float 3.7 enters as the exact binary double, so d/dx = 2*3.7*x exactly."""
    p = problems.Problem(name="scaled_square", fn=lambda xp, x: xp.sum(3.7 * x * x),
                         make_inputs=lambda n, s: (np.array([0.1, 1.3, -2.5]),), description="3.7 x^2")
    ref = accuracy.reference_gradient(p, 3, 0, cache_dir=tmp_path)
    with mpmath.workdps(60):
        for got, xi in zip(ref.values[0], [0.1, 1.3, -2.5]):
            exact = 2 * mpmath.mpf(3.7) * mpmath.mpf(xi)       # mpf(float) is exact
            assert _correct_digits(got, exact) >= 45


def test_reference_is_cached_and_a_changed_problem_is_not_served_a_stale_one(tmp_path):
    p = problems.get("squire_trapp")
    first = accuracy.reference_gradient(p, 4, 0, cache_dir=tmp_path)
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1
    again = accuracy.reference_gradient(p, 4, 0, cache_dir=tmp_path)
    assert [str(v) for v in again.values[0]] == [str(v) for v in first.values[0]]
    changed = problems.Problem(name="squire_trapp", fn=lambda xp, x: xp.sum(x * x),
                               make_inputs=p.make_inputs, description="same name, other function")
    other = accuracy.reference_gradient(changed, 4, 0, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == 2
    np.testing.assert_allclose([float(v) for v in other.values[0]], 2 * p.inputs(4, 0)[0], rtol=1e-15)


def test_fallback_reference_says_which_methods_it_used_and_why(tmp_path, monkeypatch):
    monkeypatch.setattr(accuracy, "SYMBOLIC_LIMIT", 1)
    monkeypatch.setattr(extended, "MAX_EPS", 0.0)         # as where long double is float64
    p = problems.get("rosenbrock")
    ref = accuracy.reference_gradient(p, 4, 0, cache_dir=tmp_path)
    assert ref.label.startswith(accuracy.AGREEMENT_LABEL) and "engine" in ref.label and ref.digits < 30
    assert "extended precision: numpy.longdouble is float64 on this platform" in ref.label
    assert accuracy.agreement_members(ref.label)[0] == "engine"


def test_a_symbolic_reference_past_its_time_budget_falls_back_to_agreement(tmp_path, monkeypatch):
    """Building the expression comes before the DAG-size check: a (2n, n) matrix product at
    n = 512 took minutes there, so each cell of its group timed out. Past the budget the
    agreement reference is used instead."""
    monkeypatch.setattr(accuracy, "SYMBOLIC_BUDGET_S", 0.01)
    monkeypatch.setattr(extended, "MAX_EPS", 0.0)
    p = problems.get("linear_least_squares")
    ref = accuracy.reference_gradient(p, 64, 0, cache_dir=tmp_path)     # ~10 s symbolically
    assert ref.label.startswith(accuracy.AGREEMENT_LABEL) and ref.digits < 30
    (want,) = backends.compute_gradient(backends.get("manual"), p, p.inputs(64, 0))
    np.testing.assert_allclose(np.asarray(ref.values[0], dtype=np.float64), want, rtol=1e-12)


def test_the_time_budget_leaves_a_callers_own_timer_running():
    import signal
    import time

    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with budget.time_budget(60):
            pass
        deadline = time.monotonic() + 30
        while not fired and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert fired


def test_errors_rel_and_rho():
    e = accuracy.errors((np.array([1.0, 100.0 + 1e-10]),), (np.array([1.0, 100.0]),))
    assert e["rel"] == pytest.approx(1e-12, rel=1e-3)
    assert e["rho"] == pytest.approx(1e-10 / 200.0, rel=1e-3)
    assert accuracy.errors((np.zeros(2),), (np.zeros(2),)) == {"rel": 0.0, "rho": 0.0}
