"""The page: one HTML document with its stylesheet inline, nothing fetched; a page with
seed graphs carries one inline script, the steppers (``static/stepper.js``), which its
Content-Security-Policy allows by its sha256 hash (and no other script).

The layout is ``templates/page.html.j2``; the stylesheet is ``static/report.css``.
"""
from __future__ import annotations

from markupsafe import Markup

from .templates import css, render, stepper_js


def script_hash(script: str) -> str:
    """The CSP source that allows exactly the inline ``script``: ``'sha256-…'``."""
    import base64
    import hashlib

    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode() + "'"


def page(title: str, subtitle, sections, footer, chips=()) -> str:
    """The whole document. ``subtitle`` and ``footer`` are inline values (text, or a list of text
    and :mod:`~diffcompare.report.fragments`), ``chips`` text; sections are :class:`~diffcompare.report.sections.Section`.  The stepper script is
    included only where a section has a stepper."""
    script = stepper_js() if any('class="stepper"' in str(s.body) for s in sections) else None
    return str(render("page.html.j2", title=title, subtitle=subtitle, sections=sections,
                      footer=footer, chips=list(chips), css=Markup(css()),
                      script=Markup(script) if script else None,
                      script_src=script_hash(script) if script else None)) + "\n"

