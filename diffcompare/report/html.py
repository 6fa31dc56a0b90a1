"""Safe HTML building: text is escaped unless it is :class:`Markup` made here.

>>> str(p("a < b", Markup("<b>c</b>")))
'<p>a &lt; b<b>c</b></p>'
>>> str(table(["name", "n"], [["<script>", 3]]))   # doctest: +ELLIPSIS
'<div class="scroll"><table><thead><tr><th>name</th><th>n</th></tr></thead><tbody><tr><td>&lt;script&gt;</td><td class="num">3</td></tr></tbody></table></div>'
"""
from __future__ import annotations

import re

from .fmt import esc


class Markup(str):
    """HTML that is already safe (built from escaped parts); Jinja2 and markupsafe
    insert it as is (``__html__``)."""

    def __html__(self):
        return self


def render(value) -> Markup:
    """``value`` as HTML: Markup as is, a list joined, anything else escaped."""
    if isinstance(value, Markup):
        return value
    if isinstance(value, (list, tuple)):
        return Markup("".join(render(v) for v in value))
    return Markup(esc(value))


def _attrs(attrs: dict) -> str:
    out = []
    for k, v in attrs.items():
        if v is None or v is False:
            continue
        name = k.rstrip("_").replace("_", "-")
        out.append(f' {name}' if v is True else f' {name}="{esc(v)}"')
    return "".join(out)


def tag(name: str, *children, **attrs) -> Markup:
    return Markup(f"<{name}{_attrs(attrs)}>{render(list(children))}</{name}>")


def p(*children, **attrs) -> Markup:
    return tag("p", *children, **attrs)


def code(text) -> Markup:
    return tag("code", text)


def pre(text, **attrs) -> Markup:
    return tag("pre", text, **attrs)


def join(*parts) -> Markup:
    return render(list(parts))


def slug(text: str) -> str:
    """An id-safe version of ``text``."""
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "x"


_STATUS_CLASS = {"ok": "ok", "holds": "ok", "unsupported": "unsupported", "unavailable": "unsupported",
                 "skipped": "unsupported", "timeout": "timeout", "error": "error", "crashed": "error",
                 "checks-failed": "error", "fails": "error", "unfinished": "missing",
                 "missing": "missing", "no-data": "missing", "no data": "missing"}


def badge(status, text=None) -> Markup:
    """A coloured status label (ok green, unsupported grey, timeout amber, error red)."""
    cls = _STATUS_CLASS.get(str(status), "other")
    return tag("span", status if text is None else text, class_=f"badge st-{cls}")


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def table(headers, rows, caption=None, cls=None, num_cols=None, row_classes=None) -> Markup:
    """A table; ``rows`` hold values or Markup.  Numbers (and columns listed in
    ``num_cols``) are right-aligned."""
    num_cols = set(num_cols or ())
    head = "".join(f"<th>{render(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        tds = []
        for j, v in enumerate(row):
            right = j in num_cols or _is_num(v)
            tds.append(f'<td class="num">{render(v)}</td>' if right else f"<td>{render(v)}</td>")
        rc = (row_classes or {}).get(i) if isinstance(row_classes, dict) else None
        body.append(f'<tr class="{esc(rc)}">' if rc else "<tr>")
        body.append("".join(tds) + "</tr>")
    cap = f"<caption>{render(caption)}</caption>" if caption is not None else ""
    cls_attr = f' class="{esc(cls)}"' if cls else ""
    # wrapped so a wide table scrolls on its own instead of running off the page
    return Markup(f'<div class="scroll"><table{cls_attr}>{cap}<thead><tr>{head}</tr></thead>'
                  f"<tbody>{''.join(body)}</tbody></table></div>")


def figure(svg: str | None, caption, empty: str = "nothing to plot") -> Markup:
    """An inline SVG plot with its caption and offline download links (the SVG, and the
    CSV of the data behind it when the plot kept it), or a visible note when there is no
    plot."""
    if svg is None:
        return tag("div", tag("strong", "No plot: "), empty, class_="noplot")
    if type(svg).__name__ == "Failed":             # plots.Failed: drawing raised
        return tag("div", tag("strong", "The plot could not be drawn: "), str(svg), class_="noplot warn")
    key = getattr(svg, "key", "") or "figure"
    links = [download(f"{key}.svg", svg, "image/svg+xml", "SVG")]
    if getattr(svg, "csv", None):
        links.append(download(f"{key}.csv", svg.csv, "text/csv", "data (CSV)"))
    return Markup(f'<figure class="plot-figure" data-key="{esc(key)}">{svg}'
                  f'<figcaption>{render(caption)}</figcaption>'
                  f'<div class="downloads">Download: {" ".join(links)}</div></figure>')


def download(filename: str, text: str, mime: str, label: str) -> Markup:
    """A link that saves ``text`` as ``filename``, the file inside the page (a data: URI,
    percent-encoded, spaces kept: smaller than base64), so it works offline.

    >>> str(download("a.csv", "x,y\\n1,2\\n", "text/csv", "CSV"))
    '<a class="download" download="a.csv" href="data:text/csv;charset=utf-8,x,y%0A1,2%0A">CSV</a>'
    """
    from urllib.parse import quote

    uri = f"data:{mime};charset=utf-8," + quote(text, safe=" ',;:/.-_()!*+@$[]{}|^~")
    return tag("a", label, class_="download", download=filename, href=uri)


def scroll(content) -> Markup:
    """Wide content (tables) in a horizontally scrolling box."""
    return tag("div", content, class_="scroll")
