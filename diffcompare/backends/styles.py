"""Each method's colour, marker and line style, read by every plot.

One backend keeps one look everywhere: its colour and marker are part of its description
(:data:`diffcompare.backends.registry.METHODS`).  Markers are all different, so the plots
stay readable in greyscale; colours come from colour-blind-safe palettes (Okabe–Ito, Tol)
and differ in lightness as well as hue (``tests/report/test_styles.py``).  Approximations
(every method that is not exact: finite differences) are dashed, exact methods solid.  A
name that is not registered (a results folder from another version) gets a deterministic
fallback from markers and colours no method uses, so it is still distinct.

>>> style_of("engine")
Style(colour='#0072B2', marker='o', linestyle='-')
>>> style_of("fd-central").linestyle
'--'
>>> style_of("not-a-backend") == style_of("not-a-backend")       # deterministic fallback
True
"""
from __future__ import annotations

import dataclasses
import zlib

from .registry import FD_FAMILY, METHODS


@dataclasses.dataclass(frozen=True)
class Style:
    colour: str
    marker: str
    linestyle: str = "-"

    def as_kwargs(self) -> dict:
        """matplotlib keyword arguments: ``ax.plot(x, y, **style.as_kwargs())``."""
        return {"color": self.colour, "marker": self.marker, "linestyle": self.linestyle}


#: for names that are not registered: colours and markers no registered method uses
_FALLBACK_COLOURS = tuple(c for c in ("#3B3B3B", "#8C510A", "#01665E", "#762A83", "#B35806", "#4D9221")
                          if c not in {m.colour for m in METHODS.values()})
_FALLBACK_MARKERS = tuple(k for k in ("2", "3", "4", "|", "_", ".")
                          if k not in {m.marker for m in METHODS.values()})


def style_of(backend: str, family: str | None = None) -> Style:
    """The style of ``backend``; an unregistered one is dashed when its ``family`` is
    'finite-difference'."""
    name = str(backend)
    method = METHODS.get(name)
    if method is not None:
        colour, marker, dashed = method.colour, method.marker, not method.exact
    else:                         # stable across runs and machines (not Python's hash())
        h = zlib.crc32(name.encode())
        colour = _FALLBACK_COLOURS[h % len(_FALLBACK_COLOURS)]
        marker = _FALLBACK_MARKERS[(h // len(_FALLBACK_COLOURS)) % len(_FALLBACK_MARKERS)]
        dashed = family == FD_FAMILY
    return Style(colour, marker, "--" if dashed else "-")
