"""50-digit references for problems with thousands of inputs (reverse accumulation over the
SymPy DAG, evaluated in mpmath), and fallback references that name their members."""
import mpmath
import numpy as np

from diffcompare import problems
from diffcompare.measure import accuracy, extended


def test_a_problem_with_thousands_of_inputs_gets_a_50_digit_reference(tmp_path):
    x = np.linspace(-1.5, 2.0, 1000)
    p = problems.Problem(name="t_cubes_1000", fn=lambda xp, x: xp.sum(0.1 * x ** 3 + xp.tanh(x)),
                         make_inputs=lambda n, s: (x,), description="Σ 0.1 x³ + tanh x")
    ref = accuracy.reference_gradient(p, 1000, 0, cache_dir=tmp_path)
    assert ref.label == accuracy.SYMBOLIC_LABEL and ref.digits == 50
    assert accuracy.agreement_members(ref.label) == ()
    with mpmath.workdps(60):
        for got, xi in zip(ref.values[0][::97], x[::97]):
            xi = mpmath.mpf(float(xi))
            exact = 3 * mpmath.mpf(0.1) * xi ** 2 + 1 / mpmath.cosh(xi) ** 2      # mpf(0.1): the double, exactly
            assert abs(got - exact) <= mpmath.mpf(10) ** -45 * max(1, abs(exact))


def test_a_vector_output_reference_contracts_the_cotangent_exactly(tmp_path):
    p = problems.get("weighted_vector")
    ref = accuracy.reference_gradient(p, 4, 0, cache_dir=tmp_path)
    assert ref.label == accuracy.SYMBOLIC_LABEL
    from diffcompare import backends

    engine = backends.compute_gradient(backends.get("engine"), p, p.inputs(4), p.cotangent(4))
    assert accuracy.errors(engine, ref.values)["rho"] <= 1e-15


def test_where_infeasible_the_fallback_names_its_members(tmp_path, monkeypatch):
    monkeypatch.setattr(accuracy, "MAX_DAG_EDGES", 10)
    monkeypatch.setattr(extended, "MAX_EPS", 0.0)         # no long double wider than float64
    p = problems.get("rosenbrock")
    ref = accuracy.reference_gradient(p, 8, 0, cache_dir=tmp_path)
    members = accuracy.agreement_members(ref.label)
    assert "engine" in members and accuracy.MEMBERS_NOTE in ref.label and ref.digits < 30
