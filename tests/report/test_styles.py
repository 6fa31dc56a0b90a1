"""One colour and marker per method, from its description, readable in greyscale."""
from __future__ import annotations

import itertools

from diffcompare.backends.registry import METHODS
from diffcompare.backends.styles import style_of
from diffcompare.report.plots import backend_style

STYLES = {name: (m.colour, m.marker) for name, m in METHODS.items()}


def _rgb(colour: str):
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def _grey(colour: str) -> float:
    r, g, b = _rgb(colour)
    return 0.299 * r + 0.587 * g + 0.114 * b


def test_markers_all_differ_so_greyscale_prints_stay_readable():
    markers = [m for _, m in STYLES.values()]
    assert len(set(markers)) == len(markers)


def test_colours_differ_and_are_visible_on_white():
    colours = [c for c, _ in STYLES.values()]
    assert len(set(colours)) == len(colours)
    for a, b in itertools.combinations(colours, 2):
        dist = sum((x - y) ** 2 for x, y in zip(_rgb(a), _rgb(b))) ** 0.5
        assert dist > 50, (a, b)
    assert all(_grey(c) < 200 for c in colours)          # no pale line lost on the white page


def test_the_seed_reports_confusions_are_gone():
    # engine blue vs torch cyan, sympy vs sympy-cse greens: far apart in greyscale now
    assert abs(_grey(STYLES["engine"][0]) - _grey(STYLES["torch"][0])) > 20
    assert abs(_grey(STYLES["sympy"][0]) - _grey(STYLES["sympy-cse"][0])) > 20


def test_plots_read_the_table_and_unknown_names_get_a_distinct_fallback():
    assert backend_style("engine") == {"color": STYLES["engine"][0], "marker": "o", "linestyle": "-"}
    assert backend_style("fd-central")["linestyle"] == "--"
    assert backend_style("fd-complex-step")["linestyle"] == "--"      # not exact: a step method
    for name in ("someone-elses-new-backend", "a", "b", "c", "d", "e", "f", "g"):
        new = style_of(name)
        assert new == style_of(name) and new.linestyle == "-"
        assert new.marker not in {m for _, m in STYLES.values()}, name
        assert new.colour not in {c for c, _ in STYLES.values()}, name
    assert style_of("fd-someone-elses", "finite-difference").linestyle == "--"
