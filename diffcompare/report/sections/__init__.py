"""The report's sections; each module has ``build(data) -> Section``."""
from __future__ import annotations

import dataclasses

from ..html import Markup, tag


@dataclasses.dataclass
class Section:
    id: str                 # the anchor, e.g. "overview"
    title: str              # the heading and the navigation entry
    body: Markup            # the section's HTML (already safe)
    plots: int = 0          # how many plots it holds (the page check counts them)


def size_labels(data) -> dict:
    """problem -> x-axis label of its size (``size (batch)``, ``size (k steps)``, ...)."""
    out = {}
    for p in data.problems:
        meaning = data.problem_info(p).get("size_meaning")
        # "size" everywhere; its meaning in parentheses when it is more than a count ("n")
        out[p] = f"size ({meaning})" if meaning and meaning != "n" else "size"
    return out


def flag_mark(flags) -> Markup:
    """A visible mark by a timing the results layer flags (``timing_flags``: "loaded (...)",
    ...): "⚠" and the kinds, the whole reasons on hover; nothing for a trusted timing."""
    if not isinstance(flags, str) or not flags:
        return Markup("")
    from ...results.trust import SEPARATOR

    kinds = ", ".join(dict.fromkeys(reason.split(" (")[0] for reason in flags.split(SEPARATOR)))
    return tag("span", f"⚠ {kinds}", class_="flag", title=flags)
