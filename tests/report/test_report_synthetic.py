"""The report of a synthetic results folder: escaped names, every status shown, offline."""
from __future__ import annotations

import html
import re

import pytest

from diffcompare.report import build_report, render
from markupsafe import Markup

from diffcompare.report.fragments import muted, name, table
from diffcompare.report.templates import render_string


@pytest.fixture
def page(synthetic_results):
    return render(synthetic_results, seeds=False)


def test_no_markup_from_the_data_gets_through(page):
    assert "<script" not in page.lower()
    assert "<img" not in page.lower()
    assert "onerror=alert" not in page.replace("onerror=alert(2)&gt;", "")   # only as escaped text
    assert "<b>not bold</b>" not in page and "<i>fast</i>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "evil&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" in page      # markupsafe: " as &#34;
    assert "&lt;b&gt;not bold&lt;/b&gt;" in page


def test_every_status_is_shown_with_its_reason(page):
    for status in ("ok", "unsupported", "timeout", "error", "crashed", "skipped", "unfinished", "missing"):
        assert f">{status}" in page, status
    assert "too many inputs &lt;400&gt;" in page                # the unsupported reason
    assert "no progress for 30 s" in page                       # the timeout reason
    assert "worker died: SIGKILL" in page


def test_studies_shown_with_status_and_findings(page):
    assert "FD &lt;steps&gt;" in page and "checks-failed" in page
    assert "1e-6 &lt;bad&gt;" in page and "FAILS" in page and "no data" in page
    assert "KeyError &lt;&#39;prepare_s&#39;&gt;" in page            # the failed study's message (markupsafe: ' as &#39;)
    assert "scaling" in page and "No findings file" in page             # planned, missing


def test_offline_page(page):
    assert page.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in page
    # no resource is referenced: no src attributes, no stylesheet or script links
    assert not re.search(r"\bsrc\s*=", page.replace("src=x", ""))
    assert "<link" not in page and "@import" not in page and "url(http" not in page
    hrefs = re.findall(r'href="([^"]*)"', page)
    # links are anchors in the page, or downloads of a figure's SVG or CSV held in the page
    odd = [h for h in hrefs if not h.startswith(("#", "data:image/svg+xml;", "data:text/csv;"))]
    assert hrefs and odd == [], odd
    assert all('download="' in a for a in re.findall(r'<a [^>]*href="data:[^>]*>', page))


def test_sections_and_plots(page):
    assert "could not be built" not in page and "could not be drawn" not in page
    for sid in ("overview", "accuracy", "speed", "memory", "environment"):
        assert f'<section class="report" id="{sid}"' in page
    declared = sum(int(n) for n in re.findall(r'data-plots="(\d+)"', page))
    assert declared == page.count('<svg class="plot"') and declared >= 5


def test_forward_against_reverse_mode(page):
    """engine-jvp (forward mode, as the registry says) beside the reverse-mode methods, with
    the ratio at its largest n: 64 inputs, 2.56 ms against jax-jit's 10 µs."""
    section = page[page.index('id="forward-mode"'):page.index('id="preparation"')]
    assert "forward-vs-reverse" in section and '<svg class="plot"' in section
    row = re.search(r"<tr><td><span class=\"name\">rosenbrock</span></td>(.*?)</tr>", section).group(1)
    cells = [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
    assert cells == ["64", "engine-jvp", "2.56 ms", "jax-jit", "10 µs", "256×"], cells


def test_float32_rows_compared(page):
    assert "Grid cells run in both dtypes" in page


def test_same_data_same_file(synthetic_results, tmp_path):
    a = build_report(synthetic_results, tmp_path / "a.html", seeds=False).read_bytes()
    b = build_report(synthetic_results, tmp_path / "b.html", seeds=False).read_bytes()
    assert a == b


def test_the_templates_escape_every_string_and_keep_markup():
    t = str(render_string('{% import "macros.html.j2" as m %}{{ m.table(t) }}',
                          t=table(["<h>"], [["<td>", Markup("<em>kept</em>"), name("<n>"),
                                             muted("x", title='"><script>')]])))
    assert "&lt;h&gt;" in t and "&lt;td&gt;" in t and "<em>kept</em>" in t
    assert '<span class="name">&lt;n&gt;</span>' in t
    assert 'title="&#34;&gt;&lt;script&gt;"' in t and "<script>" not in t


def test_cli_report(synthetic_results, tmp_path, capsys):
    from diffcompare.cli import main

    out = tmp_path / "out" / "r.html"
    assert main(["report", str(synthetic_results), "-o", str(out), "--no-seeds"]) == 0
    assert out.exists() and "report written to" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_every_figure_carries_its_svg_and_data_as_downloads(page):
    from urllib.parse import unquote

    figures = re.findall(r'<figure class="plot-figure" data-key="([^"]+)">(<svg.*?</svg>)\s*<figcaption>'
                         r'.*?</figcaption><div class="downloads">(.*?)</div></figure>', page, re.S)
    assert figures and len(figures) == page.count('<svg class="plot"')
    for key, svg, links in figures:
        hrefs = dict(re.findall(r'download="([^"]+)" href="([^"]+)"', links))
        assert set(hrefs) == {f"{key}.svg", f"{key}.csv"}, key
        # the download is the figure itself, and a CSV with a header and rows
        assert unquote(html.unescape(hrefs[f"{key}.svg"]).split(",", 1)[1]).strip() == svg.strip()
        csv = unquote(html.unescape(hrefs[f"{key}.csv"]).split(",", 1)[1]).splitlines()
        assert len(csv) >= 2 and "," in csv[0], key
