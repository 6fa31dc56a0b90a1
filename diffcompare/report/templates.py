"""Rendering: Jinja2 templates (``report/templates/``, autoescaped with markupsafe) and the
stylesheet (``report/static/report.css``), both package files.

Sections compute their data (strings, numbers and :mod:`~diffcompare.report.fragments`);
templates only lay it out, their shared pieces the macros of ``templates/macros.html.j2``.
Text is escaped unless it is :class:`markupsafe.Markup` (a plot's SVG, a rendered template).

>>> str(render_string("<p>{{ x }}</p>", x="a < b"))
'<p>a &lt; b</p>'
>>> str(render_string('{% import "macros.html.j2" as m %}{{ m.inline([m_name, " ", 3]) }}',
...                   m_name={"kind": "name", "text": "<gmm>", "whole": False}))
'<span class="name">&lt;gmm&gt;</span> 3'
"""
from __future__ import annotations

import functools
from importlib import resources

from markupsafe import Markup


def data_uri(text: str, mime: str) -> str:
    """``text`` as a ``data:`` URI, percent-encoded with spaces kept (smaller than base64):
    a file inside the page, to download offline.

    >>> data_uri("x,y\\n1,2\\n", "text/csv")
    'data:text/csv;charset=utf-8,x,y%0A1,2%0A'
    """
    from urllib.parse import quote

    return f"data:{mime};charset=utf-8," + quote(str(text), safe=" ',;:/.-_()!*+@$[]{}|^~")


def _plain_number(value) -> bool:
    """A number a table right-aligns (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fail(message: str):
    raise ValueError(message)


@functools.lru_cache(maxsize=1)
def environment():
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(loader=PackageLoader("diffcompare.report", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      keep_trailing_newline=False)
    env.filters["data_uri"] = data_uri
    env.tests["plain_number"] = _plain_number
    env.globals["fail"] = _fail
    return env


def render(name: str, **context) -> Markup:
    """The template ``name`` rendered with ``context``, as safe markup."""
    return Markup(environment().get_template(name).render(**context))


def render_string(source: str, **context) -> Markup:
    return Markup(environment().from_string(source).render(**context))


@functools.lru_cache(maxsize=1)
def css() -> str:
    """The report's stylesheet (a package file, inlined into every page)."""
    return resources.files("diffcompare.report").joinpath("static/report.css").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def stepper_js() -> str:
    """The seed graphs' stepper (``report/static/stepper.js``), inlined where a page has one."""
    return resources.files("diffcompare.report").joinpath("static/stepper.js").read_text(encoding="utf-8")
