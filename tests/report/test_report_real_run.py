"""The report of a small real run, as text and in headless Chromium.

The browser test loads the report from disk in a fresh Chromium profile and checks what a
reader would: it loads with no console errors and no request besides the file itself,
every section is there and every plot is drawn (a visible SVG with marks in it).  It saves
screenshots to ``reports/screenshots/`` (or ``$DIFFCOMPARE_SCREENSHOTS``) and prints where.
Without Chromium it skips and says how to get it.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from chromium_driver import Browser, find_chromium

from diffcompare.report import build_report
from diffcompare.report.sections import PAGE

SECTIONS = ("answers", "seeds", "overview", "accuracy", "speed", "operators", "memory", "environment")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def smoke_report(smoke_results, tmp_path_factory):
    return build_report(smoke_results, tmp_path_factory.mktemp("report") / "smoke.html")


def test_the_page_lists_its_sections_once():
    assert tuple(sid for sid, _, _ in PAGE) == SECTIONS


def test_report_of_a_real_run(smoke_report):
    page = smoke_report.read_text(encoding="utf-8")
    assert smoke_report.stat().st_size < 2_000_000
    assert "could not be built" not in page and "could not be drawn" not in page
    for sid in SECTIONS:
        assert f'<section class="report" id="{sid}"' in page
    # every plot each section declares is in it, and the real run fills them all
    for sid, n in re.findall(r'<section class="report" id="([a-z]+)" data-plots="(\d+)"', page):
        body = page.split(f'id="{sid}"', 1)[1].split('<section class="report"', 1)[0]
        assert body.count('<svg class="plot"') == int(n), sid
    assert page.count('<svg class="plot"') >= 9
    assert "No plot:" not in page.split('id="speed"')[1].split('id="seeds"')[0]


def test_same_data_same_file(smoke_results, smoke_report, tmp_path):
    again = build_report(smoke_results, tmp_path / "again.html")
    assert again.read_bytes() == smoke_report.read_bytes()


# --------------------------------------------------------------------------- browser

PAGE_FACTS = """JSON.stringify({
  sections: [...document.querySelectorAll('section.report')].map(s => ({
      id: s.id, declared: +s.dataset.plots, height: s.getBoundingClientRect().height,
      top: s.getBoundingClientRect().top + scrollY,
      plots: [...s.querySelectorAll('svg.plot')].map(p => {
          const r = p.getBoundingClientRect();
          const scale = r.width / p.viewBox.baseVal.width;
          const fonts = [...p.querySelectorAll('text')].map(
              t => parseFloat(getComputedStyle(t).fontSize) * scale);
          const fig = p.closest('figure');
          return {w: r.width, h: r.height, marks: p.querySelectorAll('path, use, text').length,
                  key: p.dataset.figure, legend: !!p.querySelector('[id$="legend_1"]'),
                  min_font: Math.min(...fonts),
                  svg_link: !!(fig && fig.querySelector('a[download$=".svg"][href^="data:image/svg+xml"]')),
                  csv_link: !!(fig && fig.querySelector('a[download$=".csv"][href^="data:text/csv"]'))};
      }),
      graphs: [...s.querySelectorAll('.graph svg')].map(g => ({
          w: g.getBoundingClientRect().width, legend: !!g.querySelector('g.legend'),
          min_font: Math.min(...[...g.querySelectorAll('text')].map(t => parseFloat(getComputedStyle(t).fontSize)
                                 * g.getBoundingClientRect().width / g.viewBox.baseVal.width))})),
  })),
  overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
  wide: [...document.querySelectorAll('main *')].filter(e => e.getBoundingClientRect().right > innerWidth + 1
        && !e.closest('.scroll, .graph')).map(e => e.tagName + '.' + e.className).slice(0, 5),
  scripts: document.scripts.length,
  script_text: [...document.scripts].map(s => s.textContent),
  images: document.images.length,
  title: document.title,
})"""


def _shots_dir() -> Path:
    return Path(os.environ.get("DIFFCOMPARE_SCREENSHOTS") or REPO / "reports" / "screenshots")


def _screenshots(page, folder: Path, stem: str) -> list:
    import json

    folder.mkdir(parents=True, exist_ok=True)
    paths = [page.screenshot(folder / f"{stem}-top.png")]
    tops = json.loads(page.evaluate(
        "JSON.stringify([...document.querySelectorAll('section.report')].map(s => "
        "[s.id, s.getBoundingClientRect().top + scrollY, s.getBoundingClientRect().height]))"))
    for sid, top, height in tops:
        clip = {"x": 0, "y": max(0, top - 40), "width": 1280, "height": min(height + 40, 12000)}
        paths.append(page.screenshot(folder / f"{stem}-{sid}.png", clip=clip))
    return paths


def test_report_in_chromium(smoke_report, synthetic_results, tmp_path, capsys):
    import json

    exe = find_chromium()
    if exe is None:
        pytest.skip("Chromium not found (/usr/bin/chromium; Debian: apt-get install chromium — "
                    ".ci/run installs it when it runs as root)")
    hostile = build_report(synthetic_results, tmp_path / "hostile.html", seeds=False)
    shots = _shots_dir()
    with Browser(exe) as browser:
        url = smoke_report.resolve().as_uri()
        page = browser.open(url)
        console = page.console()
        assert [m for m in console if m[0] in ("error", "assert")] == [], console
        assert page.requests() == [url]                 # nothing fetched but the file itself
        facts = json.loads(page.evaluate(PAGE_FACTS))
        # one script, the seed graphs' steppers (allowed by its hash), and no images
        from diffcompare.report.templates import stepper_js
        assert facts["script_text"] == [stepper_js()] and facts["images"] == 0
        # answers, then the seed questions, then the evidence: in that order on the page
        assert [s["id"] for s in facts["sections"]] == list(SECTIONS)
        tops = {s["id"]: s["top"] for s in facts["sections"]}
        assert tops["answers"] < tops["seeds"] < min(tops[k] for k in ("accuracy", "speed", "memory"))
        # nothing runs off a 1280 px window (wide tables and graphs scroll in their own box)
        assert facts["overflow"] <= 0 and facts["wide"] == [], facts["wide"]
        for s in facts["sections"]:
            assert s["height"] > 100, s["id"]
            assert len(s["plots"]) == s["declared"], s["id"]
            for plot in s["plots"]:                     # drawn, visible, not an empty frame
                assert plot["w"] > 300 and plot["h"] > 150 and plot["marks"] > 20, (s["id"], plot)
                # a legend (the time-vs-size plots and the bars carry theirs as figure legends),
                # readable text, and the figure's SVG and data to take away
                assert plot["legend"], (s["id"], plot["key"])
                assert plot["min_font"] >= 11, (s["id"], plot["key"], plot["min_font"])
                assert plot["svg_link"] and plot["csv_link"], (s["id"], plot["key"])
        assert sum(len(s["plots"]) for s in facts["sections"]) >= 9
        seeds = next(s for s in facts["sections"] if s["id"] == "seeds")
        assert len(seeds["graphs"]) >= 12 and min(g["w"] for g in seeds["graphs"]) > 50
        assert all(g["legend"] and g["min_font"] >= 11 for g in seeds["graphs"]), seeds["graphs"]
        paths = _screenshots(page, shots, "smoke")
        full = page.screenshot(shots / "smoke-full.png", full_page=True)

        # the hostile names of the synthetic results stay text: nothing runs, nothing loads
        bad_url = hostile.resolve().as_uri()
        bad = browser.open(bad_url)
        assert bad.requests() == [bad_url]
        assert [m for m in bad.console() if m[0] in ("error", "assert")] == []
        bad_facts = json.loads(bad.evaluate(PAGE_FACTS))
        assert bad_facts["scripts"] == 0 and bad_facts["images"] == 0
        assert bad.evaluate("document.body.innerText.includes('<script>alert(1)</script>')")
        dialogs = [m for s, m, p in browser.events if m == "Page.javascriptDialogOpening"]
        assert dialogs == []
        paths += _screenshots(bad, shots, "hostile")
    for p in paths + [full]:
        assert Path(p).stat().st_size > 1000
    with capsys.disabled():
        print(f"\n[report browser test] {len(paths) + 1} screenshots in {shots} (full page: {full})")
