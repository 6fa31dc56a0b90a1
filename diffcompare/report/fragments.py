"""What a section's data holds where plain text does not say enough: a method's or problem's
name, a status, a muted aside, a flagged timing, code; a table; a figure.

Each is a plain dict whose ``kind`` names what it is; ``templates/macros.html.j2`` decides
how it looks (its ``inline``, ``table`` and ``figure`` macros).  Sections build these and
strings, never markup: every string is escaped when a template prints it.

>>> name("gmm"), badge("timeout")["tone"], badge("weird")["tone"]
({'kind': 'name', 'text': 'gmm', 'whole': False}, 'timeout', 'other')
>>> table(["n"], [[3]], cls="compact")["num_cols"]
[]
"""
from __future__ import annotations

#: a status's tone (its colour in the stylesheet: ok green, unsupported grey, timeout amber,
#: error red, missing dashed)
TONES = {"ok": "ok", "holds": "ok", "unsupported": "unsupported", "unavailable": "unsupported",
         "skipped": "unsupported", "timeout": "timeout", "error": "error", "crashed": "error",
         "checks-failed": "error", "fails": "error", "unfinished": "missing",
         "missing": "missing", "no-data": "missing", "no data": "missing"}


def name(text, whole: bool = False) -> dict:
    """A problem's, method's or operator's name (``whole``: never broken across lines)."""
    return {"kind": "name", "text": text, "whole": whole}


def badge(status, text=None) -> dict:
    """A status label, coloured by its tone; ``text`` instead of the status's own word."""
    return {"kind": "badge", "tone": TONES.get(str(status), "other"),
            "text": status if text is None else text}


def muted(text, title=None) -> dict:
    """An aside in grey (``title``: the whole of it, on hover)."""
    return {"kind": "muted", "text": text, "title": title}


def warn(text) -> dict:
    """A warning inside a sentence or a cell."""
    return {"kind": "warn", "text": text}


def code(text) -> dict:
    return {"kind": "code", "text": text}


def strong(text) -> dict:
    return {"kind": "strong", "text": text}


def lines(*items) -> dict:
    """Values one under the other in one cell (each an inline value)."""
    return {"kind": "lines", "items": list(items)}


def note(text, title=None) -> dict:
    """A muted line under a cell's value (``title`` on hover)."""
    return {"kind": "note", "text": text, "title": title}


def hover(text, title) -> dict:
    """Text with more on hover (``title``)."""
    return {"kind": "hover", "text": text, "title": title}


def link(text, href) -> dict:
    """A link within the page (``href``: ``#anchor``)."""
    return {"kind": "link", "text": text, "href": href}


def refs(numbers) -> dict:
    """Numbered references to notes below a table: ``[1],[3]``."""
    return {"kind": "refs", "text": ",".join(f"[{n}]" for n in numbers)}


def capability(verdict: str) -> dict:
    """An operator capability (``"native: how"``, ``"unsupported: why"``, ``"unavailable: why"``)
    as its symbol, ✓ native, ○ unavailable, – otherwise, the whole verdict on hover."""
    kind, _, why = str(verdict or "").partition(": ")
    return {"kind": "capability", "text": {"native": "✓", "unavailable": "○"}.get(kind, "–"),
            "status": kind, "title": f"{kind}: {why}"}


def vertical(text) -> dict:
    """A column heading set vertically (narrow columns of many operators)."""
    return {"kind": "vertical", "text": text}


def flag(flags):
    """A visible mark by a timing the results layer flags (``timing_flags``: "loaded (...)",
    ...): "⚠" and the kinds, the whole reasons on hover; None for a trusted timing."""
    if not isinstance(flags, str) or not flags:
        return None
    from ..results.trust import SEPARATOR

    kinds = ", ".join(dict.fromkeys(reason.split(" (")[0] for reason in flags.split(SEPARATOR)))
    return {"kind": "flag", "text": f"⚠ {kinds}", "title": flags}


def table(headers, rows, cls=None, num_cols=(), caption=None) -> dict:
    """A table: ``rows`` of inline values; numbers, and the columns in ``num_cols``, are
    right-aligned; it scrolls on its own where it is wider than the page."""
    return {"headers": list(headers), "rows": [list(r) for r in rows], "cls": cls,
            "num_cols": sorted(num_cols), "caption": caption}


def figure(svg, caption, empty: str = "nothing to plot") -> dict:
    """A plot (:mod:`~diffcompare.report.plots`' SVG, ``None`` where there was nothing to
    draw, or its ``Failed`` message) with its caption; ``empty`` says why there is none."""
    from markupsafe import Markup

    from .plots import Failed

    if svg is None or isinstance(svg, Failed):
        return {"svg": None, "failed": str(svg) if svg is not None else None,
                "caption": caption, "empty": empty}
    return {"svg": Markup(svg), "failed": None, "key": getattr(svg, "key", "") or "figure",
            "csv": getattr(svg, "csv", None), "caption": caption, "empty": empty}
