"""Rendering: Jinja2 templates (``report/templates/``, autoescaped with markupsafe) and the
stylesheet (``report/static/report.css``), both package files.

Sections compute their data; templates only lay it out.  Text is escaped unless it is
:class:`~diffcompare.report.html.Markup` (which markupsafe treats as safe HTML).

>>> str(render_string("<p>{{ x }}</p>", x="a < b"))
'<p>a &lt; b</p>'
"""
from __future__ import annotations

import functools
from importlib import resources

from .html import Markup


@functools.lru_cache(maxsize=1)
def environment():
    from jinja2 import Environment, PackageLoader, StrictUndefined

    return Environment(loader=PackageLoader("diffcompare.report", "templates"), autoescape=True,
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                       keep_trailing_newline=False)


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
