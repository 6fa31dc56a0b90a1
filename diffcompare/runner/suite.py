"""Experiment definitions ("suites"): TOML files in ``experiments/suites/<name>.toml``.

A suite names what to run; :mod:`diffcompare.runner.grid` turns it into cells.
Example (``experiments/suites/smoke.toml``)::

    name = "smoke"
    description = "Two small problems through three backends, in seconds."
    seeds = [0]
    dtypes = ["float64"]
    timeout_s = 60                       # per backend cell, from its last progress
    problem_modules = []                 # modules or .py files that register problems

    [[grid]]
    problems = ["rosenbrock"]
    backends = ["engine", "fd-central"]
    sizes = [2, 8]                       # or "default": each problem's own sweep
    [grid.options.fd-central]            # options for one backend's cells
    backend_options = { step = 1e-6 }

Studies.  ``studies = ["fd_steps", "scaling", ...]`` (names from
:data:`diffcompare.studies.STUDIES`, or ``"package.module[:object]"`` for a study of your
own) run after the grid, each in a subprocess with a time
limit of ``study_timeout_s`` seconds (default 900); ``quick_studies = true`` runs them at
their quick settings.  Their tables and checked findings go to ``<results_dir>/studies/``;
a study that fails or times out is recorded there and never costs the grid results.

The runner does not interpret options: each backend cell's cell function gets
``options`` = the suite's ``[cell_options]`` table updated with the block's
``[grid.options.<backend>]`` table. (``diffcompare.measure.cell`` reads
``backend_options`` as constructor keywords, and ``samples``,
``min_sample_s``, ``cache_dir``.)

Devices.  ``device = "gpu"`` runs the cells of the backends that can compute on a GPU
(``Backend.devices``: the JAX ones) there, each such (problem, size, seed, dtype) as a group
of its own, one group per GPU at a time; the other backends' cells stay on the CPU.  The
default, ``"cpu"``, keeps every cell on the CPU even where JAX sees a GPU.
(``diffcompare run --device gpu`` sets it for a run.)

Operators.  ``operators = ["jacobian", "hessian_sparse"]`` (names from
``diffcompare.problems.MEASURED_OPERATORS``) measures those derivative operators in every
cell of the run, beside the ones each problem declares; an operator for the other kind of
output (a Jacobian of a scalar loss, a Hessian of a vector output) is an ``unsupported`` row
saying so.  The cells get them as ``options["operators"]``.  (``diffcompare run --operators``
sets it for a run.)

Problems as objects.  From Python a suite may carry Problem objects of its own
(``given_problems``, e.g. ``compare()``'s function): its blocks name them like catalog problems,
and they take precedence over a registered problem of the same name for this suite only.  The
runner looks them up in the suite (:meth:`Suite.find_problem`) and never registers them; the
suite's ``worker_modules`` (imported by the workers only, never by the runner's process)
register them in each worker.
:func:`grid_suite` builds a one-block suite (``diffcompare run --problems`` and ``compare()``).

Optional top-level keys: ``cell_function`` ("module:function", the measuring
function a worker calls; default ``diffcompare.measure.cell:measure_cell``),
``cell_options`` (a table given to every cell) and ``memory_limit_mb``
(address-space limit per worker process; leave it out for JAX, which reserves
large address ranges). A ``[[grid]]`` block may set its own ``timeout_s``.

The experiments folder (:func:`find_experiments_dir`) is, in order: the ``experiments_dir`` passed in,
``./experiments`` (if it has a ``suites`` folder), or the ``experiments`` folder
of the repository the package lives in.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from . import modules as _modules

_TOP_KEYS = {"name", "description", "seeds", "dtypes", "timeout_s", "problem_modules",
             "grid", "cell_function", "cell_options", "memory_limit_mb", "studies",
             "study_timeout_s", "quick_studies", "device", "operators"}
#: Where a suite's cells compute: "cpu" (the default) or "gpu" (backends that can, on the GPU).
SUITE_DEVICES = ("cpu", "gpu")
DEFAULT_STUDY_TIMEOUT_S = 900.0
_BLOCK_KEYS = {"problems", "backends", "sizes", "options", "timeout_s"}


class SuiteError(ValueError):
    """A suite cannot be found or is not well formed; the message says where and why."""


@dataclasses.dataclass(frozen=True)
class GridBlock:
    """One ``[[grid]]`` block: every problem x size x backend in it is a cell."""

    problems: tuple
    backends: tuple
    sizes: object = "default"        # "default" or a tuple of ints
    options: dict = dataclasses.field(default_factory=dict)   # backend name -> kwargs
    timeout_s: float | None = None   # overrides the suite's timeout_s for these cells


@dataclasses.dataclass(frozen=True)
class Suite:
    name: str
    grid: tuple
    description: str = ""
    seeds: tuple = (0,)
    dtypes: tuple = ("float64",)
    timeout_s: float = 60.0
    problem_modules: tuple = ()
    cell_function: str = _modules.DEFAULT_CELL_FUNCTION
    cell_options: dict = dataclasses.field(default_factory=dict)   # for every cell
    memory_limit_mb: int | None = None
    studies: tuple = ()              # study names, run after the grid (diffcompare.studies)
    study_timeout_s: float = DEFAULT_STUDY_TIMEOUT_S
    quick_studies: bool = False
    path: Path | None = None         # the TOML file it came from, if any
    device: str = "cpu"              # "gpu": backends that can compute on a GPU do (the others on the CPU)
    operators: tuple = ()            # measured operators added to every cell (MEASURED_OPERATORS)
    given_problems: tuple = ()       # Problem objects of its own (not registered in the parent)
    worker_modules: tuple = ()       # problem modules only the workers import (given_problems')

    def find_problem(self, name: str):
        """Problem ``name``: one of ``given_problems``, else the registered one (``KeyError``)."""
        return _modules.find_problem(name, self.given_problems)

    @property
    def base_dir(self) -> Path:
        """Where relative ``problem_modules`` paths are resolved from."""
        return self.path.parent if self.path is not None else Path.cwd()

    @classmethod
    def from_dict(cls, data: dict, path=None, validate: bool = True,
                  given_problems=(), worker_modules=()) -> "Suite":
        """A suite from parsed TOML (or an equivalent dict); ``validate`` checks
        the problem and backend names (importing ``problem_modules``).  ``given_problems``,
        ``worker_modules``: Problem objects the suite carries and the modules that register
        them in a worker (see the module's docs)."""
        where = f"suite file {path}" if path else "suite"
        unknown = set(data) - _TOP_KEYS
        if unknown:
            raise SuiteError(f"{where}: unknown keys {sorted(unknown)}; allowed keys: {sorted(_TOP_KEYS)}.")
        name = data.get("name") or (Path(path).stem if path else None)
        if not isinstance(name, str) or not name:
            raise SuiteError(f"{where}: give the suite a `name`.")
        where = f"suite {name!r}" + (f" ({path})" if path else "")
        seeds = _int_list(data.get("seeds", [0]), "seeds", where)
        dtypes = _str_list(data.get("dtypes", ["float64"]), "dtypes", where)
        for d in dtypes:
            _check_dtype(d, where)
        timeout_s = _positive(data.get("timeout_s", 60.0), "timeout_s", where)
        problem_modules = _str_list(data.get("problem_modules", []), "problem_modules", where,
                                    allow_empty=True)
        cell_function = data.get("cell_function", _modules.DEFAULT_CELL_FUNCTION)
        if not isinstance(cell_function, str) or ":" not in cell_function:
            raise SuiteError(f"{where}: cell_function must be 'package.module:function', "
                             f"got {cell_function!r}.")
        cell_options = data.get("cell_options", {})
        if not isinstance(cell_options, dict):
            raise SuiteError(f"{where}: cell_options must be a table, e.g. [cell_options] samples = 7.")
        _check_json(cell_options, "cell_options", where)
        memory_limit_mb = data.get("memory_limit_mb")
        if memory_limit_mb is not None:
            memory_limit_mb = int(_positive(memory_limit_mb, "memory_limit_mb", where))
        studies = _str_list(data.get("studies", []), "studies", where, allow_empty=True)
        study_timeout_s = _positive(data.get("study_timeout_s", DEFAULT_STUDY_TIMEOUT_S),
                                    "study_timeout_s", where)
        quick_studies = data.get("quick_studies", False)
        if not isinstance(quick_studies, bool):
            raise SuiteError(f"{where}: `quick_studies` must be true or false, got {quick_studies!r}.")
        device = data.get("device", "cpu")
        if device not in SUITE_DEVICES:
            raise SuiteError(f"{where}: `device` must be \"cpu\" or \"gpu\", got {device!r} "
                             "(\"gpu\" runs the methods that can on the GPU; the rest stay on the CPU).")
        operators = check_operators(_str_list(data.get("operators", []), "operators", where,
                                              allow_empty=True), where)
        blocks = data.get("grid", [] if studies else None)
        if not isinstance(blocks, list) or not (blocks or studies):
            raise SuiteError(f"{where}: add at least one [[grid]] block with problems, backends and sizes "
                             "(or a `studies` list).")
        grid = tuple(_block(b, i, where) for i, b in enumerate(blocks, 1))
        suite = cls(name=name, grid=grid, description=str(data.get("description", "")),
                    seeds=seeds, dtypes=dtypes, timeout_s=timeout_s,
                    problem_modules=problem_modules, cell_function=cell_function,
                    cell_options=dict(cell_options),
                    memory_limit_mb=memory_limit_mb, studies=studies,
                    study_timeout_s=study_timeout_s, quick_studies=quick_studies,
                    path=Path(path) if path else None, device=device, operators=operators,
                    given_problems=tuple(given_problems),
                    worker_modules=tuple(str(m) for m in worker_modules))
        if validate:
            suite.validate()
        return suite

    def validate(self) -> None:
        """Check every backend and problem name; errors name the known ones."""
        from .. import backends

        where = f"suite {self.name!r}" + (f" ({self.path})" if self.path else "")
        known_backends = backends.names()
        try:
            _modules.import_problem_modules(self.problem_modules, self.base_dir)
        except Exception as exc:
            raise SuiteError(f"{where}: importing problem_modules failed: "
                             f"{type(exc).__name__}: {exc}") from exc
        if self.studies:
            from .. import studies as _studies

            for name in self.studies:
                try:
                    _studies.get(name)
                except KeyError as exc:
                    raise SuiteError(f"{where}: {exc.args[0]}.") from None
        known_problems = _modules.known_problem_names(self.given_problems)
        for i, block in enumerate(self.grid, 1):
            for b in block.backends:
                if b not in known_backends:
                    raise SuiteError(f"{where}, [[grid]] block {i}: unknown backend {b!r}; "
                                     f"known backends: {', '.join(known_backends)}.")
            for b in block.options:
                if b not in block.backends:
                    raise SuiteError(f"{where}, [[grid]] block {i}: options given for backend {b!r}, "
                                     f"which the block does not run ({', '.join(block.backends)}).")
            for p in block.problems:
                if p not in known_problems:
                    raise SuiteError(f"{where}, [[grid]] block {i}: unknown problem {p!r}; known problems: "
                                     f"{', '.join(known_problems) or '(none registered)'}.")


def grid_suite(problems, backends=None, sizes="default", *, name="adhoc", description="",
               problem_modules=(), given_problems=(), worker_modules=(), **settings) -> Suite:
    """A suite of one ``[[grid]]`` block (``problems`` x ``backends`` x ``sizes``), checked like
    a TOML suite; errors are said without the suite's and block's name, in the caller's terms.

    ``problems``: names (of ``given_problems`` or registered ones); ``backends``: names, None
    for every available one; ``sizes``: integers or ``"default"`` (each problem's own);
    ``settings``: other top-level keys (``timeout_s``, ``cell_options``, ``device``,
    ``operators``...).  ``diffcompare run --problems`` and ``compare()`` build their suites here.
    """
    if backends is None:
        from .. import backends as _backends

        backends = [n for n, ok in _backends.availability().items() if ok]
    block = {"problems": list(problems), "backends": list(backends),
             "sizes": sizes if isinstance(sizes, str) else list(sizes)}
    try:
        return Suite.from_dict({"name": name, "description": description,
                                "problem_modules": list(problem_modules), "grid": [block],
                                **settings}, given_problems=given_problems,
                               worker_modules=worker_modules)
    except SuiteError as exc:
        where = f"suite {name!r}"
        message = str(exc).split(f"{where}, [[grid]] block 1: ", 1)[-1].replace(f"{where}: ", "")
        raise SuiteError(message) from None


def check_operators(names, where="operators") -> tuple:
    """``names`` if each is a measured operator, else a ``SuiteError`` listing them all."""
    from ..problems import MEASURED_OPERATORS

    unknown = [n for n in names if n not in MEASURED_OPERATORS]
    if unknown:
        raise SuiteError(f"{where}: unknown operator(s) {', '.join(map(repr, unknown))}; the "
                         f"operators are {', '.join(MEASURED_OPERATORS)}.")
    return tuple(dict.fromkeys(names))


def _block(block, i, where) -> GridBlock:
    where = f"{where}, [[grid]] block {i}"
    if not isinstance(block, dict):
        raise SuiteError(f"{where}: must be a table.")
    unknown = set(block) - _BLOCK_KEYS
    if unknown:
        raise SuiteError(f"{where}: unknown keys {sorted(unknown)}; allowed keys: {sorted(_BLOCK_KEYS)}.")
    for key in ("problems", "backends"):
        if key not in block:
            raise SuiteError(f"{where}: missing `{key}`.")
    problems = _str_list(block["problems"], "problems", where)
    backend_names = _str_list(block["backends"], "backends", where)
    sizes = block.get("sizes", "default")
    if sizes != "default":
        sizes = _int_list(sizes, "sizes", where)
        if any(s < 1 for s in sizes):
            raise SuiteError(f"{where}: sizes must be 1 or more (a problem of size 0 has nothing "
                             f"to differentiate), got {list(sizes)}.")
    options = block.get("options", {})
    if not isinstance(options, dict) or not all(isinstance(v, dict) for v in options.values()):
        raise SuiteError(f"{where}: options must be tables per backend, "
                         "e.g. [grid.options.fd-central] samples = 7.")
    _check_json(options, "options", where)
    timeout_s = block.get("timeout_s")
    if timeout_s is not None:
        timeout_s = _positive(timeout_s, "timeout_s", where)
    return GridBlock(problems=problems, backends=backend_names, sizes=sizes,
                     options={k: dict(v) for k, v in options.items()}, timeout_s=timeout_s)


def _check_json(value, key, where):
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise SuiteError(f"{where}: `{key}` must hold plain numbers, strings, booleans, lists and "
                         f"tables ({exc}).") from None


def _str_list(value, key, where, allow_empty=False) -> tuple:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise SuiteError(f"{where}: `{key}` must be a list of names, got {value!r}.")
    if not value and not allow_empty:
        raise SuiteError(f"{where}: `{key}` is empty.")
    if len(set(value)) != len(value):
        raise SuiteError(f"{where}: `{key}` lists a name twice: {value!r}.")
    return tuple(value)


def _int_list(value, key, where) -> tuple:
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if (not isinstance(value, list) or not value
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        raise SuiteError(f"{where}: `{key}` must be a non-empty list of integers, got {value!r}.")
    return tuple(value)


def _positive(value, key, where) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise SuiteError(f"{where}: `{key}` must be a positive number, got {value!r}.")
    return float(value)


def _check_dtype(name, where):
    import numpy as np

    try:
        ok = np.dtype(name).kind == "f"
    except TypeError:
        ok = False
    if not ok:
        raise SuiteError(f"{where}: dtype {name!r} is not a floating dtype (use e.g. 'float64', 'float32').")


# --- finding suites ----------------------------------------------------------

def find_experiments_dir(explicit=None) -> Path:
    """The experiments folder: ``explicit``, else ``./experiments`` if it has
    suites, else the repository's ``experiments`` folder next to the package."""
    if explicit is not None:
        return Path(explicit)
    local = Path.cwd() / "experiments"
    if (local / "suites").is_dir():
        return local
    import diffcompare

    return Path(diffcompare.__file__).resolve().parents[1] / "experiments"


def list_suites(experiments_dir=None) -> list[str]:
    """Names of the suites in ``<experiments>/suites`` (sorted)."""
    folder = find_experiments_dir(experiments_dir) / "suites"
    return sorted(p.stem for p in folder.glob("*.toml")) if folder.is_dir() else []


def load_suite(name_or_path, experiments_dir=None, validate: bool = True) -> Suite:
    """A suite by name (``"smoke"`` -> ``<experiments>/suites/smoke.toml``) or by
    path to a TOML file. Unknown names raise :class:`SuiteError` naming the
    known suites; bad contents raise it naming the block and the key."""
    if isinstance(name_or_path, Suite):
        return name_or_path
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or text.endswith(".toml") or "/" in text or "\\" in text:
        path = Path(name_or_path)
        if not path.is_file():
            raise SuiteError(f"suite file {path} does not exist.")
    else:
        folder = find_experiments_dir(experiments_dir) / "suites"
        path = folder / f"{text}.toml"
        if not path.is_file():
            known = list_suites(experiments_dir)
            raise SuiteError(f"unknown suite {text!r}; known suites in {folder}: "
                             f"{', '.join(known) if known else '(none)'}.")
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise SuiteError(f"suite file {path} is not valid TOML: {exc}") from None
    return Suite.from_dict(data, path=path, validate=validate)
