"""The page: one HTML document with its stylesheet inline, no scripts, nothing fetched.

The layout is ``templates/page.html.j2``; the stylesheet is ``static/report.css``.
"""
from __future__ import annotations

from .html import Markup
from .templates import css, render


def page(title: str, subtitle, sections, footer, chips=()) -> str:
    """The whole document. ``subtitle``, ``footer`` and ``chips`` are Markup or text;
    sections are :class:`~diffcompare.report.sections.Section`."""
    return str(render("page.html.j2", title=title, subtitle=subtitle, sections=sections,
                      footer=footer, chips=list(chips), css=Markup(css()))) + "\n"


__all__ = ["page", "Markup"]
