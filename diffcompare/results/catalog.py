"""What the problems and methods of a run were, stored with its results (``catalog.json``).

A results folder must explain itself on another machine, or after the problem module
that defined a problem is gone: the runner writes each problem's description, tags,
size meaning and default sizes, each backend's facts (its description,
:mod:`diffcompare.backends.registry`: family, exactness, mode, accuracy class, style), and the
cells the suite planned. Readers look names up here first and in the live registries
only for folders written before ``catalog.json`` existed.

>>> from diffcompare import problems
>>> describe_problem(problems.get("rosenbrock"))["smooth"]
True
>>> describe_backend("fd-central")["family"], describe_backend("fd-central")["exact"]
('finite-difference', False)
>>> describe_backend("jax-jacfwd")["mode"], describe_backend("engine")["mode"]
('forward', 'reverse')
>>> describe_backend("fd-forward")["accuracy"], describe_backend("fd-forward")["linestyle"]
('forward', '--')
"""
from __future__ import annotations

from ..backends.registry import FD_FAMILY, METHODS, exact_families
from ..backends.styles import style_of

#: Backend families whose gradients are exact up to rounding (every method of the family is)
EXACT_FAMILIES = exact_families()


def is_exact(family) -> bool:
    """Whether a backend family computes the derivative exactly (up to rounding)."""
    return family in EXACT_FAMILIES


def describe_problem(problem) -> dict:
    """The facts about ``problem`` a report needs (JSON-able)."""
    return {"description": problem.description, "tags": sorted(problem.tags),
            "size_meaning": problem.size_meaning, "smooth": problem.smooth,
            "sizes": [int(s) for s in problem.sizes], "vector_output": problem.vector_output,
            "operators": list(getattr(problem, "operators", ()))}


def describe_backend(name: str) -> dict:
    """``{"family", "exact", "mode", "accuracy", "colour", "marker", "linestyle", "doc"}`` of
    backend ``name``, from its description (family ``"unknown"`` if it is not registered;
    ``mode`` is ``"reverse"``, ``"forward"`` or None; ``accuracy`` its accuracy class).
    Folders written before some of these keys existed lack them: readers fall back on the
    registry (:func:`diffcompare.results.cells.backend_fact`)."""
    method = METHODS.get(name)
    if method is None:
        return {"family": "unknown", "exact": False, "mode": None, "accuracy": None, "doc": ""}
    style = style_of(name)
    return {"family": method.family, "exact": method.exact, "mode": method.mode,
            "accuracy": method.accuracy, "colour": style.colour, "marker": style.marker,
            "linestyle": style.linestyle, "doc": _class_doc(method)}


def _class_doc(method) -> str:
    """The first paragraph of the method's class docstring ("" where its module cannot load)."""
    import importlib

    try:
        cls = getattr(importlib.import_module(method.module), method.class_name)
    except Exception:
        return ""
    return " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())


def snapshot(groups, find_problem=None) -> dict:
    """The catalog of a run: its groups' problems, backends and planned cells.
    ``find_problem(name)``: the run's problem of a name (default: the registered one)."""
    if find_problem is None:
        from ..problems import get as find_problem

    names = list(dict.fromkeys(g.problem for g in groups))
    backend_names = list(dict.fromkeys(b.name for g in groups for b in g.backends))
    return {"problems": {n: describe_problem(find_problem(n)) for n in names},
            "backends": {n: describe_backend(n) for n in backend_names},
            "operator_capabilities": operator_capabilities(backend_names),
            "planned_cells": [list(g.cell_key(b.name)) for g in groups for b in g.backends]}


def operator_capabilities(backend_names) -> dict:
    """``{operator: {method: "native: <how>" | "unsupported: <why>"}}`` of the run's methods
    (:func:`diffcompare.operators.capabilities`), so a report reads it from the folder.

    >>> operator_capabilities(["torch"])["hvp"]["torch"]
    'native: double backward (torch.autograd.grad, create_graph)'
    """
    from .. import operators

    table = operators.capabilities()
    known = [b for b in backend_names if b in table.columns]
    return {op: {m: table.at[op, m] for m in known} for op in table.index}
