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


def test_long_double_values_survive_the_cache_exactly(tmp_path):
    a = np.array([1, 3, -7e300], dtype=np.longdouble) / np.longdouble(3)   # 1/3 in 64 bits
    ref = accuracy.Reference((a, np.array([0.5, 2.0])), "test", accuracy.EXTENDED_DIGITS)
    accuracy._save(tmp_path / "r.json", ref)
    back = accuracy._load(tmp_path / "r.json")
    assert back.values[0].dtype == np.longdouble and np.array_equal(back.values[0], a)
    assert back.values[1].dtype == np.float64 and np.array_equal(back.values[1], [0.5, 2.0])
    assert (tmp_path / "r.npz").exists() and (tmp_path / "r.json").stat().st_size < 400


def test_errors_against_long_double_are_the_exact_differences():
    """Vectorised in long double (a 10⁷-element reference once took minutes per cell in
    mpmath): the same ρ as mpmath's exact difference, to the error's own precision."""
    third = np.longdouble(1) / 3
    ref = np.array([third, 2 * third, 1e5 * third], dtype=np.longdouble)
    g = ref.astype(np.float64)                     # a float64 method at its best: rounded
    got = accuracy.errors((g,), (ref,))
    with mpmath.workdps(40):
        exact = [abs(mpmath.mpf(float(x)) - (mpmath.mpf(float(r)) + mpmath.mpf(float(r - np.longdouble(float(r))))))
                 for x, r in zip(g, ref)]
        rho = max(float(e) / max(1.0, 2 * abs(float(x))) for e, x in zip(exact, g))
    assert got["rho"] == pytest.approx(rho, rel=1e-6) and got["rho"] > 0


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
