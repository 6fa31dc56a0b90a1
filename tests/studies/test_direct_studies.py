"""The studies that compute their own rows, run for real (quick settings), and their checks."""
from __future__ import annotations

import math

import numpy as np
import pytest

from diffcompare import problems
from diffcompare.studies import expression_swell, fd_steps, kinks
from diffcompare.studies.common import high_precision_derivatives


def _by_name(findings):
    return {f.name: f for f in findings}


# --- fd_steps ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fd_frame():
    return fd_steps.run(quick=True)


def test_the_exact_derivative_is_the_closed_form():
    from diffcompare.problems.catalog.classic import squire_trapp_derivative

    p = problems.get("squire_trapp")
    d = high_precision_derivatives(p, (np.array([1.5]),), orders=(1,))[1][0]
    assert float(d) == pytest.approx(float(squire_trapp_derivative(1.5)), rel=1e-14)
    assert str(d).startswith("4.0534278938986")


def test_fd_steps_reproduces_the_textbook_v(fd_frame):
    df = fd_frame
    assert len(df) == len(fd_steps.METHODS) * len(fd_steps.DTYPES) * 20
    assert (df.status == "ok").all() and sorted(set(df.k)) == list(range(1, 21))
    found = _by_name(fd_steps.check(df))
    # the acceptance criterion: the minima where the textbook puts them, within a decade
    for name in ("fd-forward float64 minimum", "fd-central float64 minimum",
                 "fd-complex-step float64 flat", "fd-richardson float64 minimum"):
        assert found[name].ok, found[name]
    f64 = df[df.dtype == "float64"]
    fwd = f64[f64.method == "fd-forward"].set_index("k").rel_error
    bottoms = fd_steps.v_bottoms(df).set_index(["method", "dtype"])
    assert 1e-9 <= bottoms.loc[("fd-forward", "float64"), "h"] <= 1e-7
    assert 1e-7 <= bottoms.loc[("fd-central", "float64"), "h"] <= 1e-4
    assert 1e-11 <= bottoms.loc[("fd-central", "float64"), "error"] <= 1e-9
    assert fwd[16] == 1.0                       # x + h == x: the textbook formula gives 0
    steps = df[df.method == "fd-forward"].set_index(["dtype", "k"]).step_taken
    assert steps["float64", 16] == 0.0 and steps["float32", 8] == 0.0
    assert steps["float32", 7] == 2.0 ** -23    # 1e-7 is really one float32 ulp of 1.5
    cs = f64[(f64.method == "fd-complex-step") & (f64.k >= 8)].rel_error
    assert cs.max() < 1e-15
    assert all(f.ok for f in found.values()), [str(f) for f in found.values() if not f.ok]


def test_float32_bottoms_ignore_a_lucky_rounding_point(fd_frame):
    """Left of the bottom, float32 is rounding noise: a CPU whose libm happens to land one
    point near the exact value must not move the bottom or fail the check."""
    df = fd_frame.copy()
    before = fd_steps.v_bottoms(df).set_index(["method", "dtype"])
    sel = (df.method == "fd-central") & (df.dtype == "float32") & (df.k == 6)
    df.loc[sel, "rel_error"] = 1e-9                     # a lucky point at h = 1e-6
    after = fd_steps.v_bottoms(df).set_index(["method", "dtype"])
    assert after.loc[("fd-central", "float32"), "h"] == before.loc[("fd-central", "float32"), "h"]
    assert after.loc[("fd-central", "float32"), "least_h"] == pytest.approx(1e-6)
    found = _by_name(fd_steps.check(df))["fd-central float32 vs float64"]
    assert found.ok and "rounding luck" in found.measured


def test_float32_check_fails_when_float32_is_as_good_as_float64(fd_frame):
    df = fd_frame.copy()
    f32 = (df.method == "fd-central") & (df.dtype == "float32")
    f64 = df[(df.method == "fd-central") & (df.dtype == "float64")].set_index("k").rel_error
    df.loc[f32, "rel_error"] = df.loc[f32, "k"].map(f64).to_numpy()
    assert _by_name(fd_steps.check(df))["fd-central float32 vs float64"].ok is False


def test_fd_steps_check_fails_when_the_minimum_moves(fd_frame):
    df = fd_frame.copy()
    sel = (df.method == "fd-forward") & (df.dtype == "float64")
    df.loc[sel & df.k.isin([2, 3, 4]), "rel_error"] = 1e-12   # a V bottom at the wrong place
    found = _by_name(fd_steps.check(df))
    assert found["fd-forward float64 minimum"].ok is False
    assert "1.0e-12 at h = 0.001" in found["fd-forward float64 minimum"].measured
    none = _by_name(fd_steps.check(df[df.method != "fd-central"]))
    assert none["fd-central float64 minimum"].ok is None


# --- expression_swell -------------------------------------------------------------------

def test_expression_swell_quick():
    df = expression_swell.run(quick=True)
    sizes = df[df.kind == "size"].set_index("k")
    assert list(sizes.index) == list(expression_swell.QUICK_KS)
    assert sizes.ops_gradient[7] > 1000 * sizes.ops_gradient[1]
    assert list(np.diff(sizes.engine_nodes)) == [3] * 6
    found = expression_swell.check(df)
    assert found and all(f.ok for f in found), [str(f) for f in found]


def test_expression_swell_skips_after_a_slow_k_and_says_so():
    df = expression_swell.run(ks=(1, 2, 3), time_limit_s=0.0)
    sizes = df[df.kind == "size"].set_index("k")
    assert sizes.status[1] == "ok" and math.isnan(sizes.prepare_sympy_s[2])
    assert "sympy skipped: k = 1 took" in sizes.message[2] and sizes.status[3] == "guarded"
    found = _by_name(expression_swell.check(df))
    guard = found["every k measured or stopped by its guard"]
    assert guard.ok and guard.measured.startswith("1 of 3 measured in full; by a guard: k=2: sympy skipped")
    assert found["engine graph: linear in k"].ok


def test_expression_swell_fails_when_a_method_fails_not_when_a_guard_refuses(monkeypatch):
    """A guard's refusal (UnsupportedError) holds the guard's prediction; any other error of a
    method is a failure the study reports."""
    from diffcompare import backends

    real = backends.checked_prepare

    def failing(backend, problem, inputs):
        if backend.name == "symengine":
            raise backends.BackendError(problem.name, backend.name, "symengine crashed")
        if backend.name == "sympy-reverse":
            raise backends.UnsupportedError(problem.name, backend.name, "too many inputs")
        return real(backend, problem, inputs)

    monkeypatch.setattr(backends, "checked_prepare", failing)
    df = expression_swell.run(ks=(1, 2))
    sizes = df[df.kind == "size"].set_index("k")
    assert list(sizes.status) == ["partial", "partial"]
    found = _by_name(expression_swell.check(df))
    guard = found["every k measured or stopped by its guard"]
    assert guard.ok is False and "symengine crashed" in guard.measured
    monkeypatch.setattr(backends, "checked_prepare",
                        lambda b, p, i: failing(b, p, i) if b.name == "sympy-reverse" else real(b, p, i))
    df = expression_swell.run(ks=(1, 2))
    assert set(df[df.kind == "size"].status) == {"guarded"}
    assert _by_name(expression_swell.check(df))["every k measured or stopped by its guard"].ok


# --- kinks --------------------------------------------------------------------------------

def test_kink_geometry():
    geo = kinks.kink_geometry("max_kink", np.array([[1.0, 1.0, 0.0], [1.0, 1.0 - 1e-8, 0.0]]))
    assert [g["kink"] for g in geo] == [True, True, False, False, False, False]
    assert [g["tie_size"] for g in geo[:3]] == [2, 2, 0]
    assert geo[3]["true_derivative"] == 1.0 and geo[3]["distance"] == pytest.approx(1e-8)
    geo = kinks.kink_geometry("abs_kink", np.array([-1e-3, 0.0]))
    assert geo[0]["true_derivative"] == -1.0 and math.isnan(geo[1]["true_derivative"])
    assert kinks.convention_value("engine", "max_kink", 3) == pytest.approx(1 / 3)
    assert kinks.convention_value("sympy", "max_kink", 3) == 0.5
    assert kinks.convention_value("jax-jit", "abs_kink", 1) == 1.0


def test_kinks_every_documented_convention_holds():
    df = kinks.run()
    assert {"problem", "op"} <= set(df.source)
    ok = df[df.status == "ok"]
    at = ok[ok.kink.astype(bool)].pivot_table(index=["problem", "element"], columns="backend",
                                               values="derivative")
    assert (at.loc["relu_kink", "engine"] == 0.5).all() and (at.loc["abs_kink", "engine"] == 0).all()
    assert (at.loc["relu_kink", "fd-forward"] == 1).all() and (at.loc["abs_kink", "fd-central"] == 0).all()
    assert (at.loc["relu_op", "engine"] == 0).all()
    assert set(df[df.backend == "fd-complex-step"].status) == {"unsupported"}
    found = kinks.check(df)
    assert all(f.ok is not False for f in found), [str(f) for f in found if f.ok is False]
    assert _by_name(found)["engine at kinks"].ok and _by_name(found)["fd-central at kinks"].ok
    # each convention is recorded with the library version that gave it
    torch_rows = df[(df.backend == "torch") & (df.status == "ok")]
    if len(torch_rows):
        import torch

        assert set(torch_rows.library) == {f"torch {torch.__version__}"}
        assert _by_name(found)["torch at kinks"].measured.startswith(f"with torch {torch.__version__}; relu_kink")
        assert set(df[(df.source == "op") & (df.backend == "torch")].library) == {f"torch {torch.__version__}"}


def test_kinks_check_catches_a_changed_convention():
    found = _by_name(kinks.check(_fake_kink_rows()))        # the engine returning 0 at relu's kink
    assert found["engine at kinks"].ok is False and "relu_kink: at kinks 0" in found["engine at kinks"].measured
    assert found["engine at kinks"].measured.startswith("with diffcompare 9.9; ")   # the version that changed
    assert found["torch at kinks"].ok is None                # not run: no data, not a failure


def _fake_kink_rows():
    import pandas as pd

    geo = kinks.kink_geometry("relu_kink", np.array([-1.0, 0.0, 1.0]))
    return pd.DataFrame([{"source": "problem", "problem": "relu_kink", "backend": "engine",
                          "library": "diffcompare 9.9", "element": i,
                          **g, "derivative": d, "status": "ok", "message": None,
                          "convention": kinks.convention_value("engine", "relu_kink", 1) if g["kink"] else None}
                         for i, (g, d) in enumerate(zip(geo, [0.0, 0.0, 1.0]))])
