"""The seed graphs' steppers: the steps recorded from a real backward (diffcompare.viz.steps),
embedded in the page, allowed by the page's CSP by hash, and clicked through in Chromium."""
from __future__ import annotations

import base64
import hashlib
import html
import json
import re

import numpy as np
import pytest

from diffcompare import seeds as S
from diffcompare.viz import steps
from diffcompare.viz.graph import to_svg
from diffcompare.viz.libs import engine, libs, torch as torch_lib

LIBS = [lib for lib in libs()]


def _simple(lib):
    T = lib.torch
    a = T.tensor(2.0, requires_grad=True)
    b = T.tensor(3.0, requires_grad=True)
    d = T.tensor(4.0, requires_grad=True)
    c = a * b
    e = c * d
    return (a, b, c, d, e), {a: "a", b: "b", c: "c", d: "d", e: "e"}


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.name)
def test_backward_steps_of_a_real_pass(lib):
    (a, b, c, d, e), names = _simple(lib)
    s = steps.record(e, lib, names)
    assert [x["node"] for x in s["forward"]] == ["MulBackward0 (c)", "MulBackward0 (e)"]
    assert s["forward"][1]["next"] == ["MulBackward0 (c)", "AccumulateGrad (d)"]
    back = {x["node"]: x for x in s["backward"]}
    assert [x["node"] for x in s["backward"]][0] == "MulBackward0 (e)"
    assert len(back) == 5
    top = back["MulBackward0 (e)"]
    assert top["incoming"] == ["1"]
    # the box each step is drawn as: viz.graph's keys (n0 is the node that made e)
    assert top["key"] == "n0" and f'data-key="n0"' in to_svg(e, names=names)
    assert s["forward"][1]["key"] == "n0" and back["MulBackward0 (c)"]["key"] != "n0"
    assert [(x["to"], x["value"]) for x in top["sends"]] == [("MulBackward0 (c)", "4"), ("AccumulateGrad (d)", "6")]
    assert [(x["name"], x["value"], x["bytes"], x["version"]) for x in top["saved"]] == \
        [("self", "6", 4, 0), ("other", "4", 4, 0)]
    mid = back["MulBackward0 (c)"]
    assert mid["incoming"] == ["4"]
    assert [x["value"] for x in mid["sends"]] == ["12", "8"]
    assert back["AccumulateGrad (a)"]["accumulate"] == {"variable": "a", "adds": "12", "grad": "12"}
    assert back["AccumulateGrad (d)"]["accumulate"] == {"variable": "d", "adds": "6", "grad": "6"}
    # recording left every .grad as it was
    assert a.grad is None and b.grad is None and d.grad is None


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.name)
def test_recording_leaves_existing_grads_alone(lib):
    (a, b, c, d, e), names = _simple(lib)
    e.backward(retain_graph=True)
    s = steps.record(e, lib, names)
    assert float(lib.array(a.grad)) == 12.0 and float(lib.array(d.grad)) == 6.0
    # the steps show a first backward (from no .grad), whatever ran before
    acc = {x["node"]: x["accumulate"] for x in s["backward"] if x["accumulate"]}
    assert acc["AccumulateGrad (a)"] == {"variable": "a", "adds": "12", "grad": "12"}


def test_a_vector_needs_its_gradient():
    lib = engine()
    x = lib.torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match="needs gradient="):
        steps.record(x * 2, lib, {x: "x"})
    with pytest.raises(ValueError, match="no grad_fn"):
        steps.record(x, lib, {x: "x"})


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.name)
def test_seed_002_steps_start_from_v(lib):
    rec = S.run(S.get("002-gradient-argument"), lib)
    s = rec.graphs[0].steps
    assert s["gradient"] == "[0.1, 1, 0.0001]"
    acc = {x["node"]: x["accumulate"] for x in s["backward"] if x["accumulate"]}
    assert acc["AccumulateGrad (a)"]["adds"] == "[0.3, 3, 0.0003]"
    assert acc["AccumulateGrad (b)"]["adds"] == "[1.2, 16, 0.002]"    # 4b·v, both uses of b summed
    assert rec.text("a.grad") == "[0.3, 3, 0.0003]"                 # not doubled by recording


def test_engine_and_torch_steps_agree_on_seed_003():
    tl = torch_lib()
    if tl is None:
        pytest.skip("torch is not installed")
    ex = S.get("003-complicated")
    recs = [S.run(ex, lib) for lib in (engine(), tl)]
    e, t = (r.graphs[0].steps for r in recs)
    acc = lambda s: {x["node"]: x["accumulate"]["adds"] for x in s["backward"] if x["accumulate"]}
    # dk/dc = (j + i)·f·d/h = 18·2, dk/dh = -(j + i)·g/h² + i = -72 + 8
    assert acc(e) == acc(t) == {"AccumulateGrad (c)": "36", "AccumulateGrad (h)": "-64"}
    assert recs[0].text("c.grad") == "36" and recs[1].text("h.grad") == "-64"
    assert len(e["backward"]) == len(t["backward"])


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.name)
def test_a_node_with_several_outputs_is_named_by_all(lib):
    s = S.run(S.get("003-unbind"), lib).graphs[0].steps
    unbind = [x for x in s["backward"] if x["node"].startswith("UnbindBackward0")]
    assert [x["node"] for x in unbind] == ["UnbindBackward0 (b, c, d)"]
    assert unbind[0]["incoming"] == ["6", "3", "2"]            # de/db = c·d, de/dc = b·d, de/dd = b·c
    assert unbind[0]["sends"] == [{"to": "AccumulateGrad (a)", "nr": 0, "value": "[6, 3, 2]"}]


# --------------------------------------------------------------------------- the page


@pytest.fixture(scope="module")
def demo_page(tmp_path_factory, seed_record):
    from diffcompare.report.page import page
    from diffcompare.report.sections import seeds as seed_section

    text = page("steppers", "", [seed_section.build(record=seed_record)], "")
    path = tmp_path_factory.mktemp("stepper") / "index.html"
    path.write_text(text, encoding="utf-8")
    return path


def test_page_allows_exactly_its_script(demo_page):
    text = demo_page.read_text(encoding="utf-8")
    scripts = re.findall(r"<script>(.*?)</script>", text, re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    csp = html.unescape(re.search(r'Content-Security-Policy" content="([^"]*)"', text).group(1))
    assert csp == f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"
    boxes = re.findall(r'<div class="stepper" data-steps="([^"]*)" hidden>', text)
    assert len(boxes) == 2 * 6 if torch_lib() else 6          # six seed graphs, each library
    first = json.loads(html.unescape(boxes[0]))
    assert first["backward"][0]["node"] == "MeanBackward0 (L)"
    # every seed figure is downloadable as SVG
    assert text.count('download="000-mean-of-product-0-engine.svg"') == 1


def test_a_page_without_steppers_has_no_script(synthetic_results):
    from diffcompare.report import render

    text = render(synthetic_results, seeds=False)
    assert "<script" not in text and "script-src" not in text


def test_clicking_through_a_stepper_in_chromium(demo_page):
    from chromium_driver import Browser, find_chromium

    exe = find_chromium()
    if exe is None:
        pytest.skip("no Chromium: apt-get install chromium, or set DIFFCOMPARE_CHROMIUM")
    with Browser(exe, width=1024) as b:
        page = b.open(demo_page.as_uri())
        panel = "document.querySelector('.stepper .stepper-panel').innerText"
        assert page.evaluate("document.querySelectorAll('.stepper:not([hidden]) .stepper-panel').length") \
            == page.evaluate("document.querySelectorAll('.stepper').length") > 0
        first = page.evaluate(panel)
        assert first.startswith("forward 1 of 2: MulBackward0 (y)")
        seen = [first]
        for _ in range(3):
            page.evaluate("document.querySelectorAll('.stepper')[0].querySelectorAll('button')[2].click()")
            seen.append(page.evaluate(panel))
        assert seen[2].startswith("backward 1 of ") and "MeanBackward0 (L)" in seen[2]
        assert "gradient in: 1" in seen[2]
        # the step's node is outlined in the drawing: one box, the current step's
        current = ("[...document.querySelectorAll('.stepper')[0].closest('figure')"
                   ".querySelectorAll('g.step-current title')].map(t => t.textContent)")
        assert seen[3].startswith("backward 2 of 3: MulBackward0 (y)")
        assert page.evaluate(current) == ["MulBackward0"]
        assert "sends to next_functions[0] = (MulBackward0 (y), 0): [0.5, 0.5]" in seen[2]
        # the arrow keys go back
        page.evaluate("const s = document.querySelectorAll('.stepper')[0]; s.focus();"
                      "s.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowLeft', bubbles: true}))")
        assert page.evaluate(panel) == seen[2]
        assert page.evaluate(current) == ["MeanBackward0"]
        # walk to the end: AccumulateGrad adds mean(x) = 1.5 to w.grad
        for _ in range(10):
            page.evaluate("document.querySelectorAll('.stepper')[0].querySelectorAll('button')[2].click()")
        assert "adds [1.5] to w.grad, which is now [1.5]" in page.evaluate(panel)
        assert [c for c in page.console() if c[0] in ("error", "warning")] == []
        assert [u for u in page.requests() if u != demo_page.as_uri()] == []


def test_projectable_at_1024_px(demo_page):
    from chromium_driver import Browser, find_chromium

    text = demo_page.read_text(encoding="utf-8")
    # a link to the seed-only page `diffcompare demo` writes next to the default report
    assert '<a href="engine-demo/index.html">engine-demo/index.html</a>' in text
    exe = find_chromium()
    if exe is None:
        pytest.skip("no Chromium: apt-get install chromium, or set DIFFCOMPARE_CHROMIUM")
    with Browser(exe, width=1024, height=768) as b:
        page = b.open(demo_page.as_uri())
        # no table runs past its box at 1024 px
        clipped = page.evaluate("[...document.querySelectorAll('table')].filter(t => "
                                "t.parentElement.scrollWidth > t.parentElement.clientWidth + 1"
                                " || t.getBoundingClientRect().right > innerWidth).length")
        assert clipped == 0
        # engine and torch side by side where they fit: the two figures of the 000 graph share a row
        tops = page.evaluate("[...document.querySelector('#seed-000 .graph-pair').children]"
                             ".map(f => Math.round(f.getBoundingClientRect().top))")
        assert len(tops) == (2 if torch_lib() else 1) and len(set(tops)) == 1
        # every seed figure has its SVG to download
        assert page.evaluate("[...document.querySelectorAll('.graph-pair figure')].every(f => "
                             "f.querySelector('a[download$=\".svg\"][href^=\"data:image/svg+xml\"]'))")
