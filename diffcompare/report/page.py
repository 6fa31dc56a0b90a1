"""The page: one HTML document with its stylesheet inline, no scripts, nothing fetched."""
from __future__ import annotations

from .fmt import esc
from .html import Markup

CSS = """
:root { --fg: #1d2430; --muted: #6b7280; --line: #d9dee7; --bg-alt: #f5f7fa; --accent: #1f5fa8; }
* { box-sizing: border-box; }
html { scroll-behavior: smooth; }
body { margin: 0; color: var(--fg); background: #fff;
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", "Liberation Sans", Arial, sans-serif; }
header.top { background: #17324d; color: #fff; padding: 18px 28px 10px; }
header.top h1 { margin: 0 0 4px; font-size: 24px; font-weight: 600; }
header.top p { margin: 0 0 8px; color: #c9d6e3; }
nav.toc { position: sticky; top: 0; z-index: 5; background: #fff; border-bottom: 1px solid var(--line);
          padding: 8px 28px; }
nav.toc a { margin-right: 18px; color: var(--accent); text-decoration: none; font-weight: 500; }
nav.toc a:hover { text-decoration: underline; }
main { max-width: 1240px; margin: 0 auto; padding: 8px 28px 60px; }
section.report { border-bottom: 1px solid var(--line); padding: 10px 0 24px; }
section.report > h2 { font-size: 22px; margin: 18px 0 8px; padding-top: 44px; margin-top: -30px; }
h3 { font-size: 17px; margin: 26px 0 6px; }
h4 { font-size: 15px; margin: 18px 0 6px; }
p { margin: 6px 0 10px; max-width: 980px; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", "Liberation Mono", Menlo, Consolas, monospace;
            font-size: 13px; }
code { background: var(--bg-alt); padding: 0 3px; border-radius: 3px; }
pre { background: var(--bg-alt); border: 1px solid var(--line); padding: 8px 10px; overflow-x: auto;
      white-space: pre-wrap; word-break: break-word; max-width: 100%; }
pre.message { border-left: 4px solid #c0392b; }
pre.formula-text { max-height: 12em; overflow-y: auto; }
.muted { color: var(--muted); }
.warn { color: #8a4b00; background: #fff6e5; border-left: 4px solid #e3a008; padding: 6px 10px; }
.scroll { overflow-x: auto; max-width: 100%; margin: 6px 0 14px; }
table { border-collapse: collapse; font-size: 12.5px; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
th, td { border: 1px solid var(--line); padding: 4px 8px; vertical-align: top; text-align: left; }
th { background: #eef2f7; font-weight: 600; position: sticky; top: 0; }
tbody tr:nth-child(even) td { background: #fafbfc; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.numbers td { white-space: nowrap; text-align: right; font-variant-numeric: tabular-nums; }
table.numbers td:first-child { text-align: left; }
table.capability td, table.capability th, table.numbers th { white-space: nowrap; }
table.capability td div + div { margin-top: 2px; }
table.findings td:nth-child(2), table.findings td:nth-child(3) { min-width: 260px; }
table.formula td { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; white-space: pre; }
table.kv td:first-child { font-weight: 500; white-space: nowrap; }
.name { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
.badge { display: inline-block; padding: 0 6px; border-radius: 9px; font-size: 12px; line-height: 18px;
         font-weight: 600; white-space: nowrap; }
.st-ok { background: #dcfce7; color: #14532d; }
.st-unsupported { background: #e5e7eb; color: #374151; }
.st-timeout { background: #fef3c7; color: #7c4a03; }
.st-error { background: #fee2e2; color: #991b1b; }
.st-missing { background: #ede9fe; color: #4c1d95; }
.st-other { background: #e0f2fe; color: #075985; }
sup { color: var(--muted); font-size: 10px; margin-left: 2px; }
ol.notes { font-size: 13px; padding-left: 20px; }
ol.notes li { list-style: none; margin: 2px 0; }
.two-col { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 4px 24px;
           align-items: start; }
figure { margin: 10px 0 18px; }
figure.plot-figure svg.plot { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 13px; color: var(--muted); margin-top: 4px; max-width: 980px; }
.noplot { border: 1px dashed #c0c7d2; padding: 10px 14px; color: var(--muted); margin: 10px 0; }
figure.graph-figure .graph { overflow-x: auto; border: 1px solid var(--line); padding: 6px;
                             background: #fff; }
figure.graph-figure .graph svg { max-width: 100%; height: auto; display: block; margin: 0 auto; }
details summary { cursor: pointer; color: var(--accent); font-size: 13px; margin-top: 4px; }
.study { border-left: 3px solid var(--line); padding-left: 12px; margin: 12px 0; }
.expected { color: #374151; }
.seed { margin-bottom: 18px; }
footer { color: var(--muted); font-size: 12px; padding: 16px 28px; text-align: center; }
"""


def page(title: str, subtitle, sections, footer) -> str:
    """The whole document. ``subtitle`` and ``footer`` are Markup or text; sections are
    :class:`~diffcompare.report.sections.Section`."""
    from .html import render

    nav = "".join(f'<a href="#{esc(s.id)}">{esc(s.title)}</a>' for s in sections)
    body = "".join(f'<section class="report" id="{esc(s.id)}" data-plots="{s.plots}">'
                   f"<h2>{esc(s.title)}</h2>{s.body}</section>" for s in sections)
    return ("<!DOCTYPE html>\n"
            '<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            # nothing may be fetched: no favicon request either
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "style-src 'unsafe-inline'\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
            f'<header class="top"><h1>{esc(title)}</h1><p>{render(subtitle)}</p></header>'
            f'<nav class="toc">{nav}</nav><main>{body}</main>'
            f"<footer>{render(footer)}</footer></body></html>\n")


__all__ = ["page", "CSS", "Markup"]
