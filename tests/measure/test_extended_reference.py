"""The extended-precision reference: the gradient program in long double by the engine and by
HIPS autograd, which must agree; used where SymPy's 50 digits are out of reach (GMM)."""
import mpmath
import numpy as np
import pytest

from diffcompare import backends, problems
from diffcompare.measure import accuracy, extended

pytestmark = [
    pytest.mark.skipif(not extended.available(),
                       reason="numpy.longdouble is float64 on this platform: no extended reference"),
    pytest.mark.skipif(not backends.get("autograd").available(),
                       reason="HIPS autograd is not installed (pip install autograd): the second program"),
]


def test_a_gmm_gets_a_long_double_reference_that_judges_float64_methods_by_their_rounding(tmp_path):
    """gmm is tagged large-expression (no SymPy reference): before, its reference was the
    engine's own float64 gradient, so the engine's ρ was 0 and the others' their distance from
    it.  Now every method is measured against a reference 1000x more precise than its rounding."""
    p = problems.get("gmm")
    ref = accuracy.reference_gradient(p, 5, 0, cache_dir=tmp_path)
    assert ref.label.startswith(accuracy.EXTENDED_LABEL) and ref.digits >= 18
    assert "the engine's and autograd's programs in long double" in ref.label
    assert accuracy.agreement_members(ref.label) == ()
    inputs = p.inputs(5, 0)
    rho = {name: accuracy.errors(backends.compute_gradient(backends.get(name), p, inputs), ref.values)["rho"]
           for name in ("engine", "manual", "torch")}
    assert all(0 < r < 1e-12 for r in rho.values()), rho           # rounding, measured, not zero
    again = accuracy.reference_gradient(p, 5, 0, cache_dir=tmp_path)       # from the cache
    assert accuracy.errors(backends.compute_gradient(backends.get("engine"), p, inputs),
                           again.values)["rho"] == pytest.approx(rho["engine"], rel=1e-3)


def test_long_double_values_become_mpf_exactly():
    a = np.array([1, 3], dtype=np.longdouble) / np.longdouble(3)     # 1/3 and 1 in 64 bits
    got = accuracy._long_to_mpf(a)
    with mpmath.workdps(40):
        third = mpmath.mpf(1) / 3
        assert abs(got[0] - third) < 2.0 ** -64 and abs(got[0] - third) > 2.0 ** -80
        assert got[1] == 1


@pytest.mark.parametrize("relative, accepted", [(1e-12, False), (2.2e-15, False), (1.8e-15, True)])
def test_the_two_programs_must_agree(monkeypatch, relative, accepted):
    """A wrong rule in either program is not a reference: the tier refuses and says by how much.
    At the boundary: ρ ≈ relative / 2 on rosenbrock's large entries, against 1e-15."""
    p = problems.get("rosenbrock")
    real = extended._autograd

    def off(problem, inputs, cotangent):
        return [g * (1 + np.longdouble(relative)) for g in real(problem, inputs, cotangent)]

    monkeypatch.setattr(extended, "_autograd", off)
    if accepted:
        _, agreement, _ = extended.extended_gradient(p, p.inputs(8), None)
        assert 0.8e-15 < agreement <= extended.AGREEMENT_RHO
    else:
        with pytest.raises(NotImplementedError, match=r"differ by ρ [0-9.]+e-1[35] \(a reference needs ≤ 1e-15\)"):
            extended.extended_gradient(p, p.inputs(8), None)


def test_a_program_that_leaves_long_double_is_refused(monkeypatch):
    p = problems.get("rosenbrock")
    real = extended._engine
    monkeypatch.setattr(extended, "_engine",
                        lambda *a: [np.asarray(g, dtype=np.float64) for g in real(*a)])
    with pytest.raises(NotImplementedError, match="came back as float64, not long double"):
        extended.extended_gradient(p, p.inputs(8), None)


def test_a_vector_output_contracts_the_cotangent_in_long_double(tmp_path, monkeypatch):
    monkeypatch.setattr(accuracy, "SYMBOLIC_LIMIT", 1)          # skip the SymPy tier
    p = problems.get("bundle_adjustment")                       # a row scatter of camera rows
    ref = accuracy.reference_gradient(p, 8, 0, cache_dir=tmp_path)
    assert ref.label.startswith(accuracy.EXTENDED_LABEL)
    got = backends.compute_gradient(backends.get("torch"), p, p.inputs(8, 0), p.cotangent(8, 0)) \
        if backends.get("torch").available() else \
        backends.compute_gradient(backends.get("engine"), p, p.inputs(8, 0), p.cotangent(8, 0))
    assert accuracy.errors(got, ref.values)["rho"] < 1e-13


def test_the_engine_scatters_long_double_rows_without_bincount():
    """bincount sums in float64 only: the engine's row scatter takes np.add.at for long double."""
    from diffcompare.engine import Tensor

    key = np.array([2, 0, 2, 1, 2])
    w = Tensor(np.arange(12, dtype=np.longdouble).reshape(3, 4) / 7, requires_grad=True)
    (w[key] * np.arange(20).reshape(5, 4)).sum().backward()
    want = np.zeros((3, 4), dtype=np.longdouble)
    np.add.at(want, key, np.arange(20).reshape(5, 4))
    assert w.grad.dtype == np.longdouble and np.array_equal(w.grad.data, want)
