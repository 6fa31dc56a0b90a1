"""The problem catalog: every problem defined once, runnable on every backend.

Add your own in a few lines::

    import numpy as np
    from diffcompare.problems import Problem, register

    register(Problem(
        name="my_softplus_sum",
        fn=lambda xp, x: xp.sum(xp.log(1 + xp.exp(x))),
        make_inputs=lambda size, seed: (np.random.default_rng(seed).standard_normal(size),),
        description="sum of softplus(x)",
    ))
"""
from __future__ import annotations

from .problem import MEASURED_OPERATORS, TAGS, Problem

_REGISTRY: dict[str, Problem] = {}


def register(problem: Problem, replace: bool = False) -> Problem:
    """Add ``problem`` to the catalog (``replace=True`` to redefine a name)."""
    _load_catalog()   # the built-in names first: a clash is the caller's, never the catalog's
    if problem.name in _REGISTRY and not replace:
        raise ValueError(f"a problem named {problem.name!r} is already registered "
                         f"({_REGISTRY[problem.name].description!r}); pick another name, or "
                         "pass replace=True to redefine it.")
    _REGISTRY[problem.name] = problem
    return problem


def unregister(name: str) -> Problem:
    """Remove a problem from the catalog (e.g. one a test or notebook registered); returns it."""
    _load_catalog()
    try:
        return _REGISTRY.pop(name)
    except KeyError:
        raise KeyError(f"no problem named {name!r} is registered.") from None


def get(name: str) -> Problem:
    _load_catalog()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown problem {name!r}; known problems: {', '.join(sorted(_REGISTRY))}") from None


def all_problems() -> list[Problem]:
    _load_catalog()
    return list(_REGISTRY.values())


def _load_catalog():
    from . import catalog  # noqa: F401  (registers the shipped problems on import)


__all__ = ["Problem", "TAGS", "MEASURED_OPERATORS", "register", "unregister", "get", "all_problems"]
