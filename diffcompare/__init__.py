"""diffcompare: compare ways of computing derivatives side by side.

The own reverse-mode engine lives in ``diffcompare.engine``.
"""
__version__ = "0.1.0"
