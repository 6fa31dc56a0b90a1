"""The accuracy table shows, under each method's largest ρ, the bound the accuracy study judged
it by (at the size closest to its bound), and marks a ρ above it."""
import pandas as pd

from diffcompare.report.sections.accuracy import _bound_note, _bounds
from diffcompare.report.templates import render_string


def _shown(value) -> str:
    """An inline value as the page shows it (the inline macro)."""
    return str(render_string('{% import "macros.html.j2" as m %}{{ m.inline(v) }}', v=value))


def _frame():
    return pd.DataFrame([
        # engine on gmm: size 25 is closer to its bound (ratio 0.5) than size 5 (0.1)
        dict(problem="gmm", size=5, backend="engine", checked=True, error_rho=1e-13, bound=1e-12, within=True),
        dict(problem="gmm", size=25, backend="engine", checked=True, error_rho=2e-12, bound=4e-12, within=True),
        dict(problem="gmm", size=25, backend="manual", checked=True, error_rho=1e-6, bound=4e-12, within=False,
             bound_basis="30 × rounding level 1.3e-13"),
        dict(problem="relu_kink", size=8, backend="engine", checked=False, error_rho=0.25, bound=float("nan"),
             within=float("nan")),
    ])


def test_the_bound_shown_is_the_one_closest_to_being_exceeded():
    bounds = _bounds(_frame())
    assert bounds == {("gmm", "engine"): (4e-12, True, None),
                      ("gmm", "manual"): (4e-12, False, "30 × rounding level 1.3e-13")}
    assert ("relu_kink", "engine") not in bounds           # not judged: no bound to show


def test_a_rho_above_its_bound_is_marked_outside():
    inside = _shown(_bound_note((4e-12, True, None)))
    assert "≤ 4.0e-12" in inside and "outside" not in inside
    assert '<span class="badge st-error">outside</span>' in _shown(_bound_note((4e-12, False, None)))
    assert 'title="30 × rounding level' in _shown(_bound_note((4e-12, True, "30 × rounding level 1.3e-13")))
    assert _shown(_bound_note(None)) == ""


def test_a_csv_read_back_keeps_the_bounds(tmp_path):
    _frame().to_csv(tmp_path / "accuracy.csv", index=False)
    bounds = _bounds(pd.read_csv(tmp_path / "accuracy.csv"))
    assert bounds[("gmm", "manual")] == (4e-12, False, "30 × rounding level 1.3e-13")
    assert bounds[("gmm", "engine")] == (4e-12, True, None)
