"""Plots: reproducible inline SVG, unique ids per figure, no plot (not an empty frame)
when there is nothing to draw, and a visible reason when drawing fails."""
from __future__ import annotations

import re

import pandas as pd

from diffcompare.report import data, plots
from diffcompare.report.fragments import figure
from diffcompare.report.templates import render_string


def _shown(fig) -> str:
    """A figure as the page shows it (the figure macro)."""
    return str(render_string('{% import "macros.html.j2" as m %}{{ m.figure(f) }}', f=fig))


def _ok(synthetic_results):
    return data.load(synthetic_results).ok("float64")


def test_same_data_same_svg_and_ids_are_prefixed(synthetic_results):
    ok = _ok(synthetic_results)
    a, b = plots.time_vs_size(ok, key="t1"), plots.time_vs_size(ok, key="t1")
    assert a == b and a.startswith('<svg class="plot"')
    ids = re.findall(r'\bid="([^"]+)"', a)
    assert ids and all(i.startswith("t1-") for i in ids)
    refs = re.findall(r'url\(#([^)]+)\)|href="#([^"]+)"', a)
    assert all((r[0] or r[1]).startswith("t1-") for r in refs)
    other = plots.time_vs_size(ok, key="t2")
    assert not set(ids) & set(re.findall(r'\bid="([^"]+)"', other))


def test_svg_is_offline_text(synthetic_results):
    svg = plots.accuracy_strip(_ok(synthetic_results))
    assert "<metadata" not in svg and "<?xml" not in svg and "<!DOCTYPE" not in svg
    assert not re.search(r'(href|src)="(https?:|//)', svg)
    assert "<text" in svg                                  # text stays text (svg.fonttype none)


def test_nothing_to_draw_gives_no_plot():
    empty = pd.DataFrame(columns=data.CELL_COLUMNS + ["ratio"])
    assert plots.time_vs_size(empty) is None
    assert plots.ratio_vs_size(empty) is None
    assert plots.fd_step_vplot(None) is None
    assert "No plot:" in _shown(figure(None, "caption", empty="nothing"))


def test_a_failing_plot_says_why():
    broken = pd.DataFrame({"problem": ["p"], "size": ["not a number"], "backend": ["engine"],
                           "family": ["engine"], "gradient_s": [1.0], "error_rho": [1.0]})
    svg = plots.time_vs_size(pd.concat([broken, broken.assign(size=["x"])]))
    assert svg is None or not plots.drawn(svg)
    failed = plots.Failed("ValueError: odd")
    assert not plots.drawn(failed)
    assert "could not be drawn" in _shown(figure(failed, "c")) and "ValueError: odd" in _shown(figure(failed, "c"))


def test_backend_styles_are_stable():
    assert plots.backend_style("engine") == plots.backend_style("engine")
    assert plots.backend_style("fd-central")["linestyle"] == "--"
    assert plots.backend_style("my-own")["color"] == plots.backend_style("my-own")["color"]


def test_the_report_draws_a_method_in_the_style_its_run_recorded():
    """catalog.json stores each method's colour, marker and linestyle flat under its name
    (results.catalog.describe_backend); the report must draw that, not today's table."""
    from diffcompare.results.catalog import describe_backend
    recorded = describe_backend("engine")
    assert {"colour", "marker", "linestyle"} <= set(recorded)
    catalog = {"backends": {"engine": {**recorded, "colour": "#123456", "marker": "X",
                                       "linestyle": ":"}}}
    style = plots.backend_style("engine", catalog=catalog)
    assert (style["color"], style["marker"], style["linestyle"]) == ("#123456", "X", ":")
    # the run's own record, as written, reproduces the table's style
    assert plots.backend_style("engine", catalog={"backends": {"engine": recorded}}) == \
        plots.backend_style("engine")
