"""Matplotlib figures as reproducible SVG text to inline in one HTML page.

The same figure always gives the same bytes: ``svg.hashsalt`` is fixed (matplotlib
otherwise salts its clip-path ids with a random UUID), the date and creator metadata
are left out, and text stays text (``svg.fonttype = "none"``: small files, selectable
labels, fonts from the page's font stack; nothing is fetched).  Since many figures
share one page, every ``id`` is prefixed with the figure's key so that two figures
never refer to each other's clip paths.

>>> from matplotlib.figure import Figure
>>> fig = Figure(figsize=(2, 1))
>>> _ = fig.add_subplot().plot([1, 2], [3, 4])
>>> a, b = figure_svg(fig, "demo"), figure_svg(fig, "demo")
>>> a == b, a.startswith("<svg"), 'id="demo-' in a
(True, True, True)
"""
from __future__ import annotations

import io
import re

import matplotlib

STYLE = {
    "svg.hashsalt": "diffcompare-report",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",          # bundled with matplotlib: always found
    # sizes in points of the SVG's user space; drawn at its natural size a figure shows them
    # 4/3 larger in CSS px, and the browser test checks every label is >= 11 px as shown
    "font.size": 11.0,
    "axes.titlesize": 12.0,
    "axes.labelsize": 11.0,
    "legend.fontsize": 11.0,
    "xtick.labelsize": 11.0,
    "ytick.labelsize": 11.0,
    "axes.grid": True,
    "grid.alpha": 0.35,
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.4,
    "lines.markersize": 5.0,
    "figure.dpi": 100,
    "path.simplify": True,
}


def style():
    """A context manager with the report's matplotlib settings."""
    return matplotlib.rc_context(STYLE)


FALLBACK_FONTS = "'DejaVu Sans', 'Bitstream Vera Sans', Verdana, sans-serif"
_ID = re.compile(r'\bid="([^"]+)"')


class Plot(str):
    """A figure's inline SVG text, with ``key`` and ``csv``: the data drawn, to download."""

    key: str = ""
    csv: str | None = None


def figure_svg(fig, key: str, data=None) -> Plot:
    """``fig`` as inline SVG text: no XML prolog, no metadata, ids prefixed with ``key``;
    ``data`` (a DataFrame) is the table behind it, kept as CSV for the download link."""
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    FigureCanvasSVG(fig)
    buf = io.StringIO()
    with style():
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    ids = _ID.findall(svg)
    key = re.sub(r"[^A-Za-z0-9_-]", "-", key)
    for old in sorted(set(ids), key=len, reverse=True):
        new = f"{key}-{old}"
        svg = svg.replace(f'id="{old}"', f'id="{new}"')
        svg = svg.replace(f"url(#{old})", f"url(#{new})")
        svg = svg.replace(f'href="#{old}"', f'href="#{new}"')
    svg = svg.replace("<svg", f'<svg class="plot" role="img" data-figure="{key}"', 1)
    # DejaVu Sans where installed, else a font of similar (wide) metrics
    svg = svg.replace("font-family: 'DejaVu Sans'", f"font-family: {FALLBACK_FONTS}")
    out = Plot(svg.strip() + "\n")
    out.key = key
    out.csv = None if data is None else data.to_csv(index=False, float_format="%.6g")
    return out
