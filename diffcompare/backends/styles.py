"""Each method's colour, marker and line style: one table, read by every plot.

One backend keeps one look everywhere.  Markers are all different, so the plots stay
readable in greyscale; colours come from colour-blind-safe palettes (Okabe–Ito, Tol) and
differ in lightness as well as hue.  Approximations (finite differences) are dashed,
exact methods solid.  A backend missing from :data:`STYLES` gets a deterministic
fallback from markers and colours the table does not use (so it is still distinct), and
``tests/report/test_styles.py`` fails until it is given its own entry.

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


@dataclasses.dataclass(frozen=True)
class Style:
    colour: str
    marker: str
    linestyle: str = "-"

    def as_kwargs(self) -> dict:
        """matplotlib keyword arguments: ``ax.plot(x, y, **style.as_kwargs())``."""
        return {"color": self.colour, "marker": self.marker, "linestyle": self.linestyle}


#: backend name -> (colour, marker). Keep every marker different (greyscale).
STYLES = {
    # the engine and its modes: blues
    "engine": ("#0072B2", "o"),
    "engine-jvp": ("#56B4E9", ">"),
    "engine-compiled": ("#1B2A6B", "p"),
    "manual": ("#000000", "P"),
    # the libraries users would otherwise pick
    "torch": ("#D55E00", "h"),
    "autograd": ("#44AA99", "X"),
    "jax-jit": ("#CC79A7", "s"),
    "jax-eager": ("#882255", "d"),
    "jax-jit-tf32": ("#FF00FF", "4"),
    "jax-jit-cpu": ("#1100FF", "3"),
    "jax-jacfwd": ("#AA4499", "<"),
    # symbolic: greens and yellows, far apart in lightness
    "sympy": ("#009E73", "^"),
    "sympy-cse": ("#E69F00", "v"),
    "sympy-reverse": ("#117733", "8"),
    "symengine": ("#999933", "H"),
    # approximations (dashed)
    "fd-forward": ("#E31A1C", "x"),
    "fd-central": ("#66A61E", "+"),
    "fd-complex-step": ("#8C2D04", "D"),
    "fd-richardson": ("#5E3C99", "*"),
    "numdifftools": ("#6B6B6B", "1"),
}

#: methods that approximate (drawn dashed), besides the ``fd-`` names.
APPROXIMATE = {"numdifftools"}

_FALLBACK_COLOURS = ("#3B3B3B", "#8C510A", "#01665E", "#762A83", "#B35806", "#4D9221")
_FALLBACK_MARKERS = ("2", "3", "4", "|", "_", ".")


def style_of(backend: str, family: str | None = None) -> Style:
    """The style of ``backend`` (``family`` 'finite-difference' also makes it dashed)."""
    name = str(backend)
    if name in STYLES:
        colour, marker = STYLES[name]
    else:                         # stable across runs and machines (not Python's hash())
        h = zlib.crc32(name.encode())
        colour = _FALLBACK_COLOURS[h % len(_FALLBACK_COLOURS)]
        marker = _FALLBACK_MARKERS[(h // len(_FALLBACK_COLOURS)) % len(_FALLBACK_MARKERS)]
    dashed = family == "finite-difference" or name.startswith("fd-") or name in APPROXIMATE
    return Style(colour, marker, "--" if dashed else "-")
