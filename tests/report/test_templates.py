"""The report is a view: sections compute data, templates write the markup.

No section module writes HTML itself, every fragment a section can hand a template is one
the macros know how to show (escaped), and a fragment they do not know is an error, not
silently dropped."""
from __future__ import annotations

import ast
import pathlib
import re

import pytest

from diffcompare.report import fragments
from diffcompare.report.templates import render_string

SECTIONS = pathlib.Path(fragments.__file__).parent / "sections"
TAG = re.compile(r"</?(p|div|span|table|tr|td|th|code|pre|strong|em|a|ul|ol|li|h[1-6]|figure|figcaption|sup|details|summary|svg)\b[^>]*>")


def _shown(value) -> str:
    return str(render_string('{% import "macros.html.j2" as m %}{{ m.inline(v) }}', v=value))


def test_no_section_module_writes_markup():
    found = []
    for path in sorted(SECTIONS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and TAG.search(node.value):
                found.append(f"{path.name}:{node.lineno}: {node.value[:60]!r}")
    assert not found, "markup written in Python (put it in the section's template):\n" + "\n".join(found)


@pytest.mark.parametrize("fragment, html", [
    (fragments.name("<gmm>", whole=True), '<span class="name whole">&lt;gmm&gt;</span>'),
    (fragments.badge("crashed"), '<span class="badge st-error">crashed</span>'),
    (fragments.badge("odd", "x"), '<span class="badge st-other">x</span>'),
    (fragments.muted("·", title='a "b"'), '<span class="muted" title="a &#34;b&#34;">·</span>'),
    (fragments.warn("w"), '<span class="warn">w</span>'),
    (fragments.code("a<b"), "<code>a&lt;b</code>"),
    (fragments.strong(["1", " (2 never)"]), "<strong>1 (2 never)</strong>"),
    (fragments.lines("a", ["b", fragments.code("c")]), "<div>a</div><div>b<code>c</code></div>"),
    (fragments.note("≤ 1", title=None), '<div class="muted">≤ 1</div>'),
    (fragments.hover("12", "why"), '<span title="why">12</span>'),
    (fragments.link("t", "#s"), '<a href="#s">t</a>'),
    (fragments.refs([1, 3]), "<sup>[1],[3]</sup>"),
    (fragments.capability("native: reverse"), '<span class="cap cap-native" title="native: reverse">✓</span>'),
    (fragments.capability("unsupported: no"), '<span class="cap cap-unsupported" title="unsupported: no">–</span>'),
    (fragments.vertical("hvp"), '<span class="vhead" title="hvp">hvp</span>'),
    (fragments.flag("loaded (cpu 40%)"), '<span class="flag" title="loaded (cpu 40%)">⚠ loaded</span>'),
    (fragments.flag(""), ""),
    ([None, 3, " ", 1.5], "3 1.5"),
])
def test_every_fragment_renders_escaped(fragment, html):
    assert _shown(fragment) == html


def test_an_unknown_fragment_is_an_error():
    with pytest.raises(ValueError, match="unknown fragment kind bold"):
        _shown({"kind": "bold", "text": "x"})


def test_a_table_right_aligns_numbers_and_its_number_columns():
    t = str(render_string('{% import "macros.html.j2" as m %}{{ m.table(t) }}',
                          t=fragments.table(["a", "b", "c"], [["x", 2, "3 ms"], [True, "y", "—"]],
                                            num_cols={2}, caption="C", cls="compact")))
    assert t == ('<div class="scroll"><table class="compact"><caption>C</caption><thead><tr><th>a</th>'
                 '<th>b</th><th>c</th></tr></thead><tbody><tr><td>x</td><td class="num">2</td>'
                 '<td class="num">3 ms</td></tr><tr><td>True</td><td>y</td><td class="num">—</td></tr>'
                 '</tbody></table></div>')
