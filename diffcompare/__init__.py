"""diffcompare: compare ways of computing derivatives side by side.

The own reverse-mode engine lives in ``diffcompare.engine``.
"""
__version__ = "0.1.0"


def compare(*args, **kwargs):
    """Differentiate a function by several methods and sizes; a tidy DataFrame back
    (see :func:`diffcompare.comparison.compare`, imported on first use)."""
    from .comparison import compare as _compare

    return _compare(*args, **kwargs)
