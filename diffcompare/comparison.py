"""``compare``: the notebook path -- any function, several methods, one tidy table (``diffcompare.compare``).

>>> import numpy as np
>>> import diffcompare
>>> table = diffcompare.compare(                                    # doctest: +SKIP
...     lambda xp, x: xp.sum(xp.softplus(x)),
...     make_inputs=lambda size, seed: (np.random.default_rng(seed).standard_normal(size),),
...     sizes=[10, 1000], backends=["engine", "fd-central", "jax-jit"])
>>> table[["backend", "size", "status", "gradient_s", "error_rho"]]  # doctest: +SKIP

It is an ordinary client of the runner: the suite comes from
:func:`~diffcompare.runner.suite.grid_suite` (as ``diffcompare run --problems`` builds its
own), :func:`diffcompare.runner.run_suite` runs each (size, method) cell in an isolated worker
process with a time limit, so a method that crashes or hangs gives a row with its status,
never a lost session, and the table is the results folder's.  The problem travels in the
suite (``Suite.given_problems``): this process never registers it, so a function named like
a catalog problem does not shadow it here, and the workers get it from a pickle in the
results folder (``cloudpickle``, installed with dask, pickles functions defined in a
notebook; without it, functions must come from a module).

The result is a :class:`Comparison`: the results layer's cells table of the run (the same
columns as ``diffcompare.results.load(results_dir).cells`` and ``diffcompare export``,
documented column by column in ``docs/results.md``), one row per method (``backend``) and
size, whose Jupyter view is a readable HTML table, and whose :meth:`~Comparison.plot_against_size`
draws gradient time (or error, or memory) against size per method with matplotlib.
"""
from __future__ import annotations

import pickle
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from .units import fmt_bytes, fmt_seconds

#: The files :func:`compare` writes into its results folder for the workers: a module that
#: registers the problem (in a worker), and the problem's pickle it loads (binary, beside it).
PROBLEM_MODULE = "compare_problem.py"
PROBLEM_PICKLE = "compare_problem.pkl"


class Comparison(pd.DataFrame):
    """The result of :func:`compare`: the cells table (``CELLS_TABLE_COLUMNS``, one row per
    backend and size); a DataFrame with an HTML view (``_repr_html_``) and
    :meth:`plot_against_size`.  ``operators``: the operators table
    (:func:`~diffcompare.results.cells.operators_table`, one row per method, size and operator
    measured; empty unless ``compare(..., operator=...)`` or the problem declares some)."""

    _metadata = ["problem_name", "results_dir", "operators"]

    @property
    def _constructor(self):
        return Comparison

    def _repr_html_(self):
        shown = self.copy()
        shown["n_inputs"] = [("" if pd.isna(n) else f"{n:.0f}") for n in shown["n_inputs"]]
        shown["time"] = [fmt_seconds(t, missing="") for t in shown["gradient_s"]]
        shown["memory"] = [fmt_bytes(b, missing="") for b in shown["peak_bytes"]]
        shown["error (rho)"] = [("" if pd.isna(e) else f"{e:.1e}") for e in shown["error_rho"]]
        shown["note"] = [("" if s == "ok" and pd.isna(m) else f"{s}: {'' if pd.isna(m) else m}"[:120])
                         for s, m in zip(shown["status"], shown["message"])]
        cols = ["backend", "size", "n_inputs", "time", "memory", "error (rho)", "note"]
        title = getattr(self, "problem_name", None) or ", ".join(sorted(set(self["problem"])))
        return (f"<div><b>{_escape(title)}</b>: gradient time, peak memory and error per "
                f"method and size</div>" + shown[cols].to_html(index=False, escape=True))

    def plot_against_size(self, y: str = "gradient_s", ax=None):
        """``y`` (``gradient_s``, ``error_rho``, ``peak_bytes``, ...) against size, one line
        per backend, log-log; returns the matplotlib Axes."""
        if ax is None:
            import matplotlib.pyplot as plt
            _, ax = plt.subplots(figsize=(6, 4))
        ok = self[(self["status"] == "ok") & self[y].notna()]
        for backend, rows in ok.groupby("backend", sort=False):
            rows = rows.sort_values("size")
            ax.plot(rows["size"], rows[y], marker="o", label=backend)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("size")
        ax.set_ylabel(y)
        ax.legend(fontsize="small")
        return ax


def compare(problem_or_fn, inputs=None, make_inputs=None, sizes=None, backends=None, *,
            wrt=(0,), name=None, results_dir=None, timeout_s: float = 60.0, samples: int = 5,
            min_sample_s: float = 0.01, progress=False, device: str = "cpu",
            operator: str | None = None, sparse: bool = False) -> Comparison:
    """Differentiate one function by several methods at several sizes; the cells table back.

    ``problem_or_fn``: a :class:`~diffcompare.problems.Problem`, a catalog name (``"gmm"``),
    or a function ``fn(xp, *args)`` written against the xp contract.  For a function give
    ``make_inputs(size, seed) -> tuple of arrays`` and ``sizes``, or fixed ``inputs`` (a tuple
    of arrays; its size is the number of differentiated scalars); ``wrt`` says which
    arguments are differentiated.  ``backends``: names (default every available one).
    ``results_dir``: where the runner writes, a new or empty folder (default a temporary one,
    removed afterwards; the cells are also in the returned table).  ``timeout_s``,
    ``samples``, ``min_sample_s``: per cell, as in a suite; ``timeout_s`` also bounds the
    work a size's cells share before the first one (the methods' imports, the accuracy
    reference), which a suite gives two minutes.
    ``device``: "cpu" (the default) or "gpu", where the methods that can compute on a
    GPU (the JAX ones) do, as a suite's ``device`` says.
    ``operator``: also measure this derivative operator on each method (``"jacobian"``,
    ``"hessian"``, ``"hvp"``, ``"hessian_diagonal"``; ``sparse=True``: the detected, coloured
    Jacobian or Hessian); its rows are the returned table's ``operators`` attribute (the
    operators table), the gradients stay the cells table.
    """
    from . import results
    from .runner import run_suite
    from .runner.suite import grid_suite

    operators = [] if operator is None else [_measured_name(operator, sparse)]
    problem, sizes = _as_problem(problem_or_fn, inputs, make_inputs, sizes, wrt, name)
    if results_dir is not None:
        out = Path(results_dir)
        _refuse_a_folder_in_use(out)
    else:
        out = Path(tempfile.mkdtemp(prefix=f"diffcompare-{problem.name}-"))
    try:
        suite = grid_suite([problem.name], backends, sizes, name=f"compare-{problem.name}",
                           description="from compare()", given_problems=(problem,),
                           worker_modules=(str((out / PROBLEM_MODULE).resolve()),),
                           timeout_s=float(timeout_s), device=device, operators=operators,
                           cell_options={"samples": int(samples), "min_sample_s": float(min_sample_s)})
        out.mkdir(parents=True, exist_ok=True)
        _write_problem_module(problem, out)
        run_suite(suite, out, fresh=True, progress=progress, run_studies=False,
                  setup_timeout_s=float(timeout_s))
        loaded = results.load(out)
        table, operators = Comparison(loaded.cells), loaded.operators()
    finally:
        if results_dir is None:                     # a temporary folder: leave nothing behind
            shutil.rmtree(out, ignore_errors=True)
    table.problem_name = problem.name
    table.operators = operators
    table.results_dir = None if results_dir is None else str(out)
    return table


def _refuse_a_folder_in_use(out: Path):
    """``compare`` starts a fresh run: a folder that already holds results is refused (a
    fresh run would move them to ``*.bak``, and a second call would overwrite those)."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"results_dir {str(out)!r} is a file; give a folder (new or empty).")
    held = sorted(p.name for p in out.glob("*") if p.name in _RUN_FILES) if out.is_dir() else []
    if held:
        raise ValueError(f"results_dir {str(out)!r} already holds a run ({', '.join(held)}); "
                         "compare() starts a fresh run and would set those results aside: give "
                         "a new or empty folder, or read the old run with "
                         "diffcompare.results.load(results_dir).")


#: files that say a folder holds a run's results
_RUN_FILES = {"results.jsonl", "run.json", "results.jsonl.bak", "run.json.bak"}


def _measured_name(operator, sparse) -> str:
    """``compare``'s ``operator``/``sparse`` as a measured operator's name (the suite checks
    that it is one)."""
    from .problems import MEASURED_OPERATORS

    name = f"{operator}_sparse" if sparse else operator
    if sparse and name not in MEASURED_OPERATORS:
        raise ValueError(f"sparse=True is for the jacobian and the hessian, not {operator!r}.")
    return name


# --- helpers -----------------------------------------------------------------------------

def _as_problem(problem_or_fn, inputs, make_inputs, sizes, wrt, name):
    from . import problems as _problems
    from .problems import Problem

    if isinstance(problem_or_fn, str):
        problem = _problems.get(problem_or_fn)
    elif isinstance(problem_or_fn, Problem):
        problem = problem_or_fn
    elif callable(problem_or_fn):
        if (inputs is None) == (make_inputs is None):
            raise ValueError("give the function's inputs: inputs=(array, ...) or "
                             "make_inputs=lambda size, seed: (array, ...), not both.")
        fn_name = name or re.sub(r"\W", "_", getattr(problem_or_fn, "__name__", "fn"))
        fn_name = "user_fn" if fn_name.strip("_") in ("", "lambda") else fn_name
        if inputs is not None:
            fixed = tuple(np.asarray(a) for a in inputs)
            n = int(sum(np.size(fixed[i]) for i in wrt))
            if sizes is not None and list(sizes) != [n]:
                raise ValueError("with fixed inputs there is one size (the number of "
                                 f"differentiated scalars, {n}); leave sizes out or use make_inputs.")
            sizes = [n]
            make_inputs = _Fixed(fixed)
        problem = Problem(name=fn_name, fn=problem_or_fn, make_inputs=make_inputs,
                          description=f"{fn_name} (from compare())", wrt=tuple(wrt),
                          sizes=tuple(sizes) if sizes else (1,))
    else:
        raise TypeError(f"compare() takes a Problem, a problem name or a function fn(xp, *args); "
                        f"got {type(problem_or_fn).__name__}.")
    sizes = list(sizes) if sizes is not None else list(problem.sizes)
    if not sizes or not all(isinstance(s, (int, np.integer)) and s >= 0 for s in sizes):
        raise ValueError(f"sizes must be non-negative integers, got {sizes!r}.")
    return problem, [int(s) for s in sizes]


class _Fixed:
    """make_inputs for fixed inputs (picklable)."""

    def __init__(self, arrays):
        self.arrays = arrays

    def __call__(self, size, seed):
        return tuple(a.copy() for a in self.arrays)


def _write_problem_module(problem, folder: Path) -> Path:
    """Write ``problem``'s pickle and a module that registers it in a worker into ``folder``;
    return the module's path (the suite's ``worker_modules``: this process never imports it).
    The pickle is a binary file of its own: as a ``bytes`` literal in the module it took
    3.5 times the size of the data it holds."""
    try:
        import cloudpickle
    except ImportError:
        cloudpickle = None
    if cloudpickle is not None:
        # the user's own modules by value: a worker may not find them on its path
        import sys
        own = {getattr(f, "__module__", None) for f in (getattr(problem.fn, "__wrapped__", None),
                                                        problem.make_inputs, problem.make_cotangent)}
        own = [sys.modules[m] for m in own
               if m and m in sys.modules and m != "__main__" and not m.startswith("diffcompare.")]
        for module in own:
            cloudpickle.register_pickle_by_value(module)
        try:
            blob = cloudpickle.dumps(problem)
        finally:
            for module in own:
                cloudpickle.unregister_pickle_by_value(module)
    else:
        try:
            blob = pickle.dumps(problem)
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            raise ValueError(f"cannot send problem {problem.name!r} to the worker processes "
                             f"({exc}): define its function and make_inputs in a module, or "
                             "install cloudpickle (pip install cloudpickle).") from None
    (folder / PROBLEM_PICKLE).write_bytes(blob)
    module = folder / PROBLEM_MODULE
    module.write_text("# written by diffcompare.compare(): registers the compared problem in a "
                      "worker,\n# from the pickle beside this file\n"
                      "import pickle\nfrom pathlib import Path\n\n"
                      "from diffcompare.problems import register\n\n"
                      f"with open(Path(__file__).with_name({PROBLEM_PICKLE!r}), 'rb') as f:\n"
                      "    register(pickle.load(f), replace=True)\n")
    return module


def _escape(text: str) -> str:
    import html
    return html.escape(str(text))


__all__ = ["compare", "Comparison"]
