"""Importing the code a run names: problem modules, the cell function, problems.

Both the runner (to check a suite) and each worker (to run it) go through
these, so a name that resolves in one resolves the same way in the other.

A suite may also carry problems as objects (``Suite.given_problems``: ``compare()``'s
function, which no module defines): the runner looks them up in the suite and never
registers them; the workers import the suite's ``worker_modules``, which register them
in each worker's own process.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path

#: The measuring function a worker calls unless the suite names another.
DEFAULT_CELL_FUNCTION = "diffcompare.measure.cell:measure_cell"


class ProblemModuleError(ImportError):
    """A problem module raised while defining its problems (a name clash, a bad Problem)."""


def import_problem_modules(modules, base_dir=None) -> None:
    """Import each entry so the problems it defines register themselves.

    An entry is a dotted module name (``mypkg.my_problems``) or a path to a
    ``.py`` file (relative paths are taken from ``base_dir``, the suite's folder).
    """
    for entry in modules or ():
        if entry.endswith(".py") or "/" in entry or "\\" in entry:
            path = Path(entry)
            if not path.is_absolute() and base_dir is not None:
                path = Path(base_dir) / path
            path = path.resolve()
            if not path.is_file():
                raise ImportError(f"problem module file {entry!r} not found (looked at {path}).")
            # named after the whole path: two files called my_problems.py are two modules
            digest = hashlib.sha1(str(path).encode()).hexdigest()[:12]
            name = ("diffcompare_user_problems_" + "".join(ch if ch.isalnum() else "_" for ch in path.stem)
                    + "_" + digest)
            if name in sys.modules:
                continue
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except ValueError as exc:        # a bad Problem or a name clash: the file's fault
                del sys.modules[name]
                raise ProblemModuleError(f"problem module {entry!r}: {exc}") from exc
            except BaseException:
                del sys.modules[name]
                raise
        else:
            importlib.import_module(entry)


def load_cell_function(spec: str):
    """The callable named by ``"package.module:function"``."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"cell_function {spec!r} must look like 'package.module:function'.")
    module = importlib.import_module(module_name)
    try:
        fn = getattr(module, attr)
    except AttributeError:
        raise AttributeError(f"cell_function {spec!r}: module {module_name!r} has no {attr!r}.") from None
    if not callable(fn):
        raise TypeError(f"cell_function {spec!r} is not callable.")
    return fn


def known_problem_names(given=()) -> list[str]:
    """The registered problems' names and those of ``given`` (Problem objects), sorted."""
    from .. import problems

    return sorted({p.name for p in problems.all_problems()} | {p.name for p in given})


def find_problem(name: str, given=()):
    """Problem ``name``: one of ``given`` (Problem objects a suite carries), else the
    registered one; ``KeyError`` naming the known ones if neither."""
    from .. import problems

    for problem in given:
        if problem.name == name:
            return problem
    try:
        return problems.get(name)
    except KeyError:
        if not given:
            raise
    raise KeyError(f"unknown problem {name!r}; known problems: "
                   f"{', '.join(known_problem_names(given))}") from None
