"""The grid studies' analyze() and check() on small synthetic results in the runner's schema."""
from __future__ import annotations

import math

import pytest
from synthetic import cell_rows, results_frame

from diffcompare.studies import accuracy, breakeven, scaling

FD = {"fd-forward": lambda n: n + 1, "fd-central": lambda n: 2 * n,
      "fd-complex-step": lambda n: n, "fd-richardson": lambda n: 6 * n}


def _by_name(findings):
    return {f.name: f for f in findings}


def _scaling_rows(engine_ratio=lambda n: 5.0, central_evals=lambda n: 2 * n):
    rows = []
    for n in (8, 32, 128, 512):
        t_f = 1e-5 + 2e-9 * n
        rows += cell_rows("rosenbrock", n, "engine", n_inputs=n, function_s=t_f,
                          gradient_s=engine_ratio(n) * t_f, peak_bytes=2000 + 120 * n, evaluations=1)
        for b, evals in FD.items():
            e = central_evals(n) if b == "fd-central" else evals(n)
            rows += cell_rows("rosenbrock", n, b, family="finite-difference", n_inputs=n, function_s=t_f,
                              gradient_s=e * t_f, peak_bytes=500 + 16 * n, evaluations=e)
        if n <= 128:
            rows += cell_rows("rosenbrock", n, "sympy", family="symbolic", n_inputs=n, prepare_s=1e-4 * n ** 1.7,
                              function_s=t_f, gradient_s=t_f * 2, evaluations=1)
        else:   # what the worker records when the backend refuses while measuring
            rows += cell_rows("rosenbrock", n, "sympy", status="unsupported")
            rows[-1]["message"] = "too many inputs (n=512 > 400) (refused while measuring)"
    return rows


def test_scaling_holds_on_textbook_numbers(tmp_path):
    df = scaling.analyze(results_frame(tmp_path, _scaling_rows()))
    assert set(df.problem) == {"rosenbrock"} and len(df) == 4 * 6
    row = df[(df.backend == "fd-central") & (df.n_inputs == 32)].iloc[0]
    assert row.evaluations == row.expected_evaluations == 64
    assert row.gradient_function_ratio == pytest.approx(64)
    assert df[(df.backend == "sympy") & (df["size"] == 512)].status.iloc[0] == "unsupported"
    found = _by_name(scaling.check(df))
    assert all(f.ok is not False for f in found.values()), [str(f) for f in found.values() if f.ok is False]
    assert found["fd-central cost ∝ n"].ok and found["reverse mode: bounded gradient/function ratio"].ok
    assert found["sympy-cse prepare time superlinear"].ok is None         # not run: no data
    assert "slope 1.7" in found["sympy prepare time superlinear"].measured


def test_scaling_fails_where_the_numbers_do(tmp_path):
    rows = _scaling_rows(engine_ratio=lambda n: 0.5 * n, central_evals=lambda n: 2 * n + 1)
    found = _by_name(scaling.check(scaling.analyze(results_frame(tmp_path, rows))))
    assert found["fd-central evaluations"].ok is False and "0 of 4 cells match" in found["fd-central evaluations"].measured
    assert found["reverse mode: bounded gradient/function ratio"].ok is False
    assert found["fd-forward evaluations"].ok


def test_scaling_without_its_cells_has_no_data(tmp_path):
    df = scaling.analyze(results_frame(tmp_path, cell_rows("squire_trapp", 1, "engine", n_inputs=1,
                                                            function_s=1e-5, gradient_s=1e-5)))
    assert df.empty
    assert all(f.ok is None for f in scaling.check(df))


def _breakeven_rows(jit_grad=1e-5):
    rows = []
    for n, sympy_grad in ((4, 2e-6), (256, 1e-3)):
        rows += cell_rows("p", n, "engine", n_inputs=n, prepare_s=1e-5, function_s=1e-5, gradient_s=1e-4)
        rows += cell_rows("p", n, "sympy", family="symbolic", n_inputs=n, prepare_s=0.05 + 1e-5,
                          function_s=1e-6, gradient_s=sympy_grad)
        rows += cell_rows("p", n, "jax-eager", family="jax", n_inputs=n, prepare_s=1e-3, function_s=1e-4,
                          gradient_s=1e-3)
        rows += cell_rows("p", n, "jax-jit", family="jax", n_inputs=n, prepare_s=0.1, function_s=1e-5,
                          gradient_s=jit_grad if n == 4 else 1e-5)
    return rows


def test_breakeven_numbers_and_checks(tmp_path):
    df = breakeven.analyze(results_frame(tmp_path, _breakeven_rows()))
    jit = df[(df.method == "jax-jit") & (df.baseline == "jax-eager")].set_index("n_inputs")
    assert jit.breakeven_calls[4] == pytest.approx((0.1 - 1e-3) / (1e-3 - 1e-5))
    sym = df[(df.method == "sympy") & (df.baseline == "engine")].set_index("n_inputs")
    assert sym.breakeven_calls[4] == pytest.approx(0.05 / (1e-4 - 2e-6))
    assert math.isinf(sym.breakeven_calls[256]) and not sym.pays_off[256]
    found = _by_name(breakeven.check(df))
    assert found["jax-jit pays off against jax-eager"].ok
    assert found["sympy pays off against the engine on small problems"].ok
    assert found["sympy-cse pays off against the engine on small problems"].ok is None
    assert "never: p n=256" in found["sympy pays off against the engine on small problems"].measured


def test_breakeven_fails_when_jit_is_slower(tmp_path):
    df = breakeven.analyze(results_frame(tmp_path, _breakeven_rows(jit_grad=2e-3)))
    found = _by_name(breakeven.check(df))
    assert found["jax-jit pays off against jax-eager"].ok is False
    assert "1 of 2 cells pay off" in found["jax-jit pays off against jax-eager"].measured


def test_breakeven_calls_edge_cases():
    assert breakeven.breakeven_calls(0.0, 0.1, 1e-5, 1e-3) == 0.0        # cheaper and faster
    assert breakeven.breakeven_calls(0.0, 0.0, 1e-3, 1e-3) == 0.0        # the same
    assert math.isinf(breakeven.breakeven_calls(1.0, 0.0, 1e-3, 1e-3))   # never


REF = "sympy-exact@50digits"
RHO = {"engine": 0.0, "torch": 1e-16, "sympy-cse": 2e-16, "fd-complex-step": 1e-16,
       "fd-central": 3e-11, "fd-forward": 2e-8, "fd-richardson": 1e-12}


def _accuracy_rows(rho=RHO, reference=REF):
    rows = []
    for problem, size in (("squire_trapp", 4), ("rosenbrock", 8)):     # |f| ≈ 11 and ≈ 4900
        for backend, r in rho.items():
            if problem == "rosenbrock" and backend.startswith("fd-") and backend != "fd-complex-step":
                r *= 100                                  # rounding relative to a larger |f|
            rows += cell_rows(problem, size, backend, n_inputs=size, function_s=1e-5, gradient_s=1e-5,
                              error_rho=r, error_rel=2 * r, reference=reference)
    # excluded from the checks: a nonsmooth problem, and an ill-conditioned one
    rows += cell_rows("relu_kink", 8, "engine", n_inputs=8, function_s=1e-5, gradient_s=1e-5,
                      error_rho=0.25, error_rel=0.5, reference=REF)
    rows += cell_rows("logistic_map", 64, "engine", n_inputs=1, function_s=1e-5, gradient_s=1e-5,
                      error_rho=1e-6, error_rel=1e-6, reference=REF)
    return rows


def test_accuracy_holds_on_textbook_errors(tmp_path):
    df = accuracy.analyze(results_frame(tmp_path, _accuracy_rows()))
    assert set(df.method_class.dropna()) == {"exact", "complex-step", "central", "forward", "richardson"}
    assert not df[df.problem.isin(["relu_kink", "logistic_map"])].checked.any()
    assert df[df.problem == "rosenbrock"].kappa.iloc[0] == pytest.approx(4907.3, rel=1e-3)
    fwd = df[(df.backend == "fd-forward") & (df.problem == "rosenbrock")].iloc[0]
    assert fwd.bound == pytest.approx(1e-5 * fwd.kappa) and fwd.within
    found = _by_name(accuracy.check(df))
    assert all(f.ok for f in found.values()), [str(f) for f in found.values() if not f.ok]
    assert "not checked, ill-conditioned: logistic_map" in found["exact methods"].measured
    assert "slope 0.7" in found["finite-difference error grows with |f|"].measured


def test_accuracy_fails_out_of_range_and_on_a_float64_reference(tmp_path):
    rows = _accuracy_rows(rho={**RHO, "fd-forward": 1e-3, "fd-central": 1e-16},
                          reference="float64 agreement of exact methods (engine, torch; max rho 1e-16)")
    found = _by_name(accuracy.check(accuracy.analyze(results_frame(tmp_path, rows))))
    assert found["forward methods"].ok is False and "outside: fd-forward" in found["forward methods"].measured
    assert found["central methods"].ok                   # more accurate than its model: luck, not a fault
    assert found["high-precision reference"].ok is False
    assert "float64 agreement on: rosenbrock size 8, squire_trapp size 4" in found["high-precision reference"].measured
    assert found["exact methods"].ok


EXTENDED = ("extended-precision gradient: the engine's and autograd's programs in long double "
            "(64-bit significand, eps 1.1e-19), agreeing to rho 6e-17; 4.3 s")
#: measured on gmm_10k at size 25 against the long-double reference: honest float64 rounding of
#: sums over 10^4 terms, every library in its own order (the complex step on the same scale)
GMM_RHO = {"engine": 1.4e-12, "torch": 8.7e-14, "jax-jit": 1.1e-13, "manual": 3.4e-12,
           "autograd": 1.4e-12, "fd-complex-step": 2.9e-12}
FAMILY = {"torch": "torch", "jax-jit": "jax", "manual": "manual", "autograd": "autograd",
          "fd-complex-step": "finite-difference", "fd-central": "finite-difference"}


def _gmm_rows(rho, reference=EXTENDED, problem="gmm_10k"):
    rows = []
    for backend, r in rho.items():
        rows += cell_rows(problem, 25, backend, family=FAMILY.get(backend, "engine"), n_inputs=1575,
                          function_s=1e-3, gradient_s=3e-3, error_rho=r, error_rel=r, reference=reference)
    return rows


def test_accuracy_holds_on_honest_large_sum_rounding(tmp_path):
    df = accuracy.analyze(results_frame(tmp_path, _gmm_rows(GMM_RHO)))
    found = _by_name(accuracy.check(df))
    assert found["exact methods"].ok and found["complex-step methods"].ok, found["exact methods"].measured
    row = df[df.backend == "manual"].iloc[0]
    assert row.rounding_level == pytest.approx(1.4e-12)      # the median of the five exact methods
    assert row.bound == pytest.approx(30 * 1.4e-12) and row.bound_basis == "30 × rounding level 1.4e-12"
    assert found["high-precision reference"].ok and "long double 1" in found["high-precision reference"].measured


def test_accuracy_fails_a_wrong_rule_of_relative_size_1e_6(tmp_path):
    """A rule off by 1e-6 in one method cannot hide in the rounding of a large sum: the median
    of the exact methods stays at their rounding level."""
    for wrong in ("engine", "manual", "torch"):
        rho = {**GMM_RHO, wrong: 1e-6}
        found = _by_name(accuracy.check(accuracy.analyze(results_frame(tmp_path / wrong, _gmm_rows(rho)))))
        assert found["exact methods"].ok is False
        assert f"outside: {wrong} gmm_10k n=1575: 1.0e-06" in found["exact methods"].measured
    rho = {**GMM_RHO, "fd-complex-step": 1e-6}                 # the complex step, judged the same way
    found = _by_name(accuracy.check(accuracy.analyze(results_frame(tmp_path / "cs", _gmm_rows(rho)))))
    assert found["complex-step methods"].ok is False and found["exact methods"].ok


def test_accuracy_bound_is_the_floor_below_three_exact_methods(tmp_path):
    """Two exact methods set no rounding level (their median could be the wrong one): the floor
    1e-13 judges them, at its boundary both ways."""
    rows = _gmm_rows({"engine": 1e-13, "torch": 1.0000001e-13})
    df = accuracy.analyze(results_frame(tmp_path, rows))
    assert df.rounding_level.isna().all() and (df.bound == 1e-13).all()
    assert df.set_index("backend").within.to_dict() == {"engine": True, "torch": False}
    assert "fewer than 3 exact methods" in df.bound_basis.iloc[0]


def test_accuracy_leaves_agreement_members_out_of_the_rounding_level(tmp_path):
    """Against a float64 agreement reference its members' ρ is their distance from themselves
    (0 for the engine): it does not lower the level that judges the others."""
    label = "float64 agreement of exact methods (engine, jax-jit, torch; max rho 1.1e-13; its members are not ranked against it)"
    rho = {"engine": 0.0, "jax-jit": 1e-13, "torch": 1e-13, "manual": 3e-12, "autograd": 1.4e-12, "sympy": 2e-12}
    df = accuracy.analyze(results_frame(tmp_path, _gmm_rows(rho, reference=label)))
    assert df.rounding_level.iloc[0] == pytest.approx(2e-12)   # manual, autograd, sympy
    assert df.within.all()


def test_accuracy_names_cells_that_did_not_finish(tmp_path):
    rows = _gmm_rows(GMM_RHO) + cell_rows("gmm_10k", 25, "fd-central", family="finite-difference",
                                         status="timeout")
    found = _by_name(accuracy.check(accuracy.analyze(results_frame(tmp_path, rows))))
    central = found["central methods"]
    assert central.ok is None and "not measured: fd-central gmm_10k size 25 (timeout)" in central.measured


def test_accuracy_reference_check_without_cells_is_no_data(tmp_path):
    rows = cell_rows("relu_kink", 8, "engine", n_inputs=8, function_s=1e-5, gradient_s=1e-5,
                     error_rho=0.25, error_rel=0.5, reference=REF)       # nothing smooth to judge
    found = _by_name(accuracy.check(accuracy.analyze(results_frame(tmp_path, rows))))
    assert found["high-precision reference"].ok is None
    assert accuracy.check(accuracy.analyze(results_frame(tmp_path / "empty", []))) [-1].ok is None


def _float32_rows(errors, default_family):
    """float32 rosenbrock cells at n=8, one per ``(backend, error)``, with the given error."""
    rows = []
    for backend, r in errors:
        for row in cell_rows("rosenbrock", 8, backend, family=FAMILY.get(backend, default_family),
                             n_inputs=8, function_s=1e-5, gradient_s=1e-5, error_rho=r, error_rel=r,
                             reference=REF):
            row["dtype"] = "float32"
            rows.append(row)
    return rows


def test_accuracy_judges_float32_exact_cells_at_float32_rounding(tmp_path):
    rows = _float32_rows((("engine", 5e-6), ("torch", 3e-6), ("jax-jit", 4e-6), ("fd-central", 1e-3)),
                         "engine")
    df = accuracy.analyze(results_frame(tmp_path, rows)).set_index("backend")
    assert df.loc["engine", "bound"] == pytest.approx(30 * 4e-6) and df.loc["engine", "within"]
    assert not df.loc["fd-central", "checked"]               # finite-difference bounds are float64's


def test_scaling_memory_growth_below_resolution_is_not_judged(tmp_path):
    rows = []
    for n, peak in ((8, 14_000), (30, 14_000)):          # 22 more inputs: 176 B, below 1 KiB
        t_f = 1e-5
        rows += cell_rows("rosenbrock", n, "engine", n_inputs=n, function_s=t_f, gradient_s=4 * t_f,
                          peak_bytes=peak, evaluations=1)
    found = _by_name(scaling.check(scaling.analyze(results_frame(tmp_path, rows))))
    memory = found["reverse mode: memory grows with the stored forward pass"]
    assert memory.ok is None and "not judged" in memory.measured
    rows = []
    for n, peak in ((8, 14_000), (512, 14_000)):         # 504 more inputs and no growth: fails
        rows += cell_rows("rosenbrock", n, "engine", n_inputs=n, function_s=1e-5, gradient_s=4e-5,
                          peak_bytes=peak, evaluations=1)
    found = _by_name(scaling.check(scaling.analyze(results_frame(tmp_path / "b", rows))))
    assert found["reverse mode: memory grows with the stored forward pass"].ok is False


def test_tf32_is_judged_by_its_own_bound_and_never_sets_the_rounding_level(tmp_path):
    """TF32 products on an H200 gave ρ ≈ 1e-4 on a float32 MLP where the exact methods
    agree to 1e-7: it is bounded by TF32's unit roundoff, and left out of the rounding level
    (which, with it among three exact methods, would have been its median)."""
    rows = _float32_rows((("engine", 5e-7), ("torch", 3e-7), ("jax-jit", 4e-7), ("jax-jit-tf32", 2.7e-4)),
                         "jax")
    df = accuracy.analyze(results_frame(tmp_path, rows)).set_index("backend")
    assert df.loc["jax-jit-tf32", "method_class"] == "reduced-precision"
    assert df.loc["engine", "rounding_level"] == pytest.approx(4e-7)     # the exact three's median
    assert df.loc["jax-jit-tf32", "checked"] and df.loc["jax-jit-tf32", "bound"] == 1e-2
    assert df.loc["jax-jit-tf32", "within"] and df.loc["engine", "within"]
    found = _by_name(accuracy.check(df.reset_index()))
    assert found["reduced-precision methods"].ok
    wrong = [r if r.get("backend") != "jax-jit-tf32" or r.get("phase") != "gradient"
             else {**r, "error_rho": 0.05, "error_rel": 0.05} for r in rows]
    found = _by_name(accuracy.check(accuracy.analyze(results_frame(tmp_path / "wrong", wrong))))
    assert found["reduced-precision methods"].ok is False
    # a run without a reduced-precision method has no such finding
    assert "reduced-precision methods" not in _by_name(accuracy.check(accuracy.analyze(
        results_frame(tmp_path / "none", [r for r in rows if r["backend"] != "jax-jit-tf32"]))))
