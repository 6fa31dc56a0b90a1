"""Command line: ``diffcompare run | report | list | export | demo | graph | trace``  (``python -m diffcompare`` works too).

- ``diffcompare run --suite quick`` runs a suite's grid (and its studies) into a
  results folder, resuming by default (``--fresh`` starts over); ``--executor dask
  [--workers N]`` runs it on a local Dask cluster, ``--scheduler tcp://HOST:PORT`` on an
  existing one;
  ``diffcompare run --problems gmm,rosenbrock --backends engine,jax-jit,torch --sizes 4,64
  --problem-module my_problems.py --results DIR`` runs one grid with no TOML file;
- ``diffcompare export DIR --format csv|parquet -o FILE`` writes the cells table (one row per
  backend cell, as ``compare()`` and ``results.load(DIR).cells`` give it), ``--table phases``
  the phase rows instead (both documented column by column in docs/results.md);
- ``diffcompare report results/quick -o reports/quick.html`` writes the results folder's
  report: one HTML file that opens from disk with nothing fetched;
- ``diffcompare list [problems|backends|suites|capabilities|contract]`` shows what exists
  (``contract``: the xp contract's names on every namespace, ``--markdown`` for docs/contract.md);
- ``diffcompare demo`` prints the engine's graphs and gradients for the seed examples;
- ``diffcompare graph model.py`` draws the graph of a function in a file (engine and torch);
- ``diffcompare trace model.py [--direction x1=1]`` prints the function's evaluation trace:
  primal, tangent (forward mode) and adjoint (reverse mode) of every intermediate.

Bad arguments (unknown problem, backend or suite; an unwritable output folder;
a corrupt results file) give a one-line error and exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import sys


class UsageError(Exception):
    """A mistake in what the user asked for: printed as one line, exit status 2."""


def _run(args) -> int:
    from .runner import run_suite
    from .runner.suite import load_suite

    adhoc = args.problems is not None or args.backends is not None or args.sizes is not None \
        or bool(args.problem_module)
    if adhoc and args.suite is not None:
        raise UsageError("give either --suite or --problems/--backends/--sizes/--problem-module, "
                         "not both.")
    suite = _adhoc_suite(args) if adhoc else load_suite(args.suite or "quick", args.experiments)
    if args.device is not None:        # the methods that can compute on a GPU do, the rest on the CPU
        import dataclasses

        suite = dataclasses.replace(suite, device=args.device)
    if args.operators is not None:     # added to the suite's own, in every cell
        import dataclasses

        from .runner.suite import SuiteError, check_operators

        try:
            added = check_operators(_names(args.operators, "operators"), "--operators")
        except SuiteError as exc:
            raise UsageError(str(exc)) from None
        suite = dataclasses.replace(suite, operators=tuple(dict.fromkeys(suite.operators + added)))
    results_dir = args.results or f"results/{suite.name}"
    executor = _executor(args)
    try:
        summary = run_suite(suite, results_dir, fresh=args.fresh, progress=None if not args.quiet else False,
                            experiments_dir=args.experiments, executor=executor)
    finally:
        if hasattr(executor, "close"):
            executor.close()
    if args.quiet:     # otherwise the progress display has printed it
        print(summary)
    return 0


def _executor(args):
    """The local executor (``--workers`` groups at once, default one per core, each pinned
    to a core of its own) or a DaskExecutor for ``--executor dask`` / ``--scheduler``."""
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}.")
    if args.executor == "local" and args.scheduler is None:
        from .runner.cpu_slots import usable_cpus
        from .runner.executor import LocalExecutor

        return LocalExecutor(args.workers or len(usable_cpus()))
    if args.scheduler is not None and args.workers is not None:
        raise UsageError("--workers starts a local Dask cluster; a cluster given by --scheduler "
                         "has its own workers: drop one of the two flags.")
    from .runner.dask_executor import DaskExecutor, DaskSetupError

    try:
        if args.scheduler is not None:
            return DaskExecutor.connect(args.scheduler)
        return DaskExecutor.local(args.workers)
    except DaskSetupError as exc:
        raise UsageError(str(exc)) from None


def _names(text, what) -> list:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError(f"--{what} needs a comma-separated list, e.g. --{what} a,b.")
    return names


def _adhoc_suite(args):
    """A suite from ``--problems``, ``--backends``, ``--sizes`` and ``--problem-module``
    (:func:`~diffcompare.runner.suite.grid_suite`, as ``compare()`` builds its own: unknown
    names give one line listing the known ones)."""
    from .runner.suite import grid_suite

    if args.problems is None:
        raise UsageError("--backends/--sizes/--problem-module need --problems "
                         "(e.g. --problems gmm,rosenbrock); or run a suite with --suite.")
    sizes = "default"
    if args.sizes is not None:
        try:
            sizes = [int(v) for v in _names(args.sizes, "sizes")]
        except ValueError:
            raise UsageError(f"--sizes must be integers separated by commas, got {args.sizes!r}.") from None
    backends = _names(args.backends, "backends") if args.backends is not None else None
    return grid_suite(_names(args.problems, "problems"), backends, sizes,
                      description="from the command line",
                      problem_modules=[str(m) for m in args.problem_module])


def _export(args) -> int:
    from pathlib import Path

    from .results.exports import export
    from .results.folder import RESULTS_FILE

    results = Path(args.results_dir)
    if not (results / RESULTS_FILE).is_file():
        raise UsageError(f"{results} holds no {RESULTS_FILE}: not a results folder "
                         f"(run `diffcompare run ... --results {results}` first).")
    out = Path(args.out) if args.out else results / f"{args.table}.{args.format}"
    if out.parent and not out.parent.exists():
        raise UsageError(f"the folder of {out} does not exist; create it or pick another -o.")
    try:
        path = export(results, args.format, out, table=args.table)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(f"{args.table} table ({args.format}) written to {path}")
    return 0


def _capabilities_text(table, width: int = 100) -> str:
    """The capability table (backends x problems) as text within ``width`` columns:
    problems down, backends across under letters, refusals as numbered footnotes."""
    import string
    import textwrap

    letters = dict(zip(table.index, string.ascii_lowercase + string.ascii_uppercase))
    legend = "  ".join(f"{letters[b]}={b}" for b in table.index)
    lines = textwrap.wrap("backends: " + legend, width, subsequent_indent="    ",
                          break_on_hyphens=False)
    name_w = max(len(str(p)) for p in table.columns) + 2
    col = 4 if name_w + 4 * len(table.index) <= width else 3      # narrower when many backends
    lines.append("")
    lines.append("problem".ljust(name_w) + "".join(f"{letters[b]:>{col}}" for b in table.index))
    notes: dict = {}
    for problem in table.columns:
        cells = []
        for backend in table.index:
            cell = str(table.at[backend, problem])
            if cell == "ok":
                cells.append("ok")
                continue
            reason = cell.replace(problem, "<problem>")
            key = notes.setdefault(reason, [len(notes) + 1, []])
            if backend not in key[1]:
                key[1].append(backend)
            cells.append(str(key[0]))
        lines.append(str(problem).ljust(name_w) + "".join(f"{c:>{col}}" for c in cells))
    if notes:
        lines += ["", "not run (footnotes):"]
    for reason, (number, who) in notes.items():
        lines += textwrap.wrap(f"{number:>3}  {', '.join(who)}: {reason}", width,
                               subsequent_indent="     ")
    return "\n".join(lines)


def _report(args) -> int:
    from pathlib import Path

    from .report import build_report

    results = Path(args.results_dir)
    if not results.is_dir():
        raise UsageError(f"results folder {results} does not exist; run "
                         f"`diffcompare run --suite quick --results {results}` first.")
    if not (results / "results.jsonl").exists() and not (results / "run.json").exists():
        raise UsageError(f"{results} holds no results.jsonl or run.json: not a results folder.")
    out = Path(args.out) if args.out else Path("reports") / f"{results.resolve().name}.html"
    path = build_report(results, out, seeds=not args.no_seeds)
    size = path.stat().st_size
    print(f"report written to {path} ({size / 1024:.0f} KiB); open it in a browser: {path.resolve().as_uri()}")
    return 0


def _list(args) -> int:
    from . import backends, problems
    from .runner.suite import list_suites, load_suite

    what = args.what
    if args.markdown and what != "contract":
        raise UsageError("--markdown is for `diffcompare list contract`.")
    if what == "contract":
        from .problems import contract

        print(contract.markdown() if args.markdown else contract.text(), end="\n" * (not args.markdown))
    elif what == "problems":
        for p in problems.all_problems():
            print(f"{p.name:24s} sizes {', '.join(map(str, p.sizes)):28s} "
                  f"[{', '.join(sorted(p.tags))}]  {p.description}")
    elif what == "backends":
        for name, support in backends.availability().items():
            b = backends.get(name)
            state = "available" if support else f"unavailable: {support.reason}"
            print(f"{name:16s} {b.family:18s} {state}")
    elif what == "suites":
        from .runner.suite import SuiteError

        broken = []
        for name in list_suites(args.experiments):
            try:
                suite = load_suite(name, args.experiments, validate=False)
            except SuiteError as exc:       # show the good ones; name the broken one after
                broken.append(str(exc))
                continue
            print(f"{name:10s} {suite.description}")
        for message in broken:
            print(f"diffcompare: broken suite: {message}", file=sys.stderr)
        return 2 if broken else 0
    else:
        print(_capabilities_text(backends.capability_table()))
    return 0


def _demo(args) -> int:
    from . import demo

    demo.run(args.out)
    return 0


def _graph(args) -> int:
    from .viz.from_file import GraphFileError, draw_file

    try:
        draw_file(args.file, args.out, args.function)
    except GraphFileError as exc:
        raise UsageError(str(exc)) from None
    return 0


def _trace(args) -> int:
    from .engine.evaluation_trace import TraceError, evaluation_trace
    from .viz.from_file import GraphFileError, load

    direction = None
    if args.direction:
        direction = {}
        for item in args.direction:
            name, eq, value = item.partition("=")
            try:
                direction[name.strip()] = float(value)
            except ValueError:
                raise UsageError(f"--direction {item!r}: write NAME=NUMBER, e.g. --direction x1=1") from None
            if not eq or not name.strip():
                raise UsageError(f"--direction {item!r}: write NAME=NUMBER, e.g. --direction x1=1")
    try:
        fn, inputs, _ = load(args.file, args.function)   # as `diffcompare graph FILE` reads it
        print(evaluation_trace(fn, inputs, direction).text(args.digits))
    except (GraphFileError, TraceError) as exc:
        raise UsageError(str(exc)) from None
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .problems.problem import MEASURED_OPERATORS

    parser = argparse.ArgumentParser(
        prog="diffcompare",
        description="Compare ways of computing derivatives: engine, SymPy, finite differences, JAX.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run a suite of experiments into a results folder")
    p.add_argument("--suite", help="suite name (see `diffcompare list suites`) or a .toml path "
                                   "(default quick)")
    p.add_argument("--problems", help="run these problems instead of a suite, e.g. gmm,rosenbrock")
    p.add_argument("--backends", help="with --problems: these backends (default: every available one)")
    p.add_argument("--sizes", help="with --problems: these sizes, e.g. 4,64 (default: each problem's own)")
    p.add_argument("--problem-module", action="append", default=[], metavar="FILE_OR_MODULE",
                   help="with --problems: a .py file or module that registers problems (repeatable)")
    p.add_argument("--results", help="results folder (default results/<suite>, results/adhoc)")
    p.add_argument("--operators", metavar="NAMES",
                   help="also measure these derivative operators in every cell, e.g. "
                        f"jacobian,hessian_sparse (of {', '.join(MEASURED_OPERATORS)})")
    p.add_argument("--fresh", action="store_true", help="start over instead of resuming")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--experiments", help="folder holding suites/ (default ./experiments)")
    p.add_argument("--executor", choices=["local", "dask"], default="local",
                   help="local: groups on this machine (default); dask: groups on a Dask cluster "
                        "(needs the dask extra); either way at most one group per core")
    p.add_argument("--device", choices=["cpu", "gpu"],
                   help="where the methods that can (the JAX ones) compute: the suite's `device` "
                        "(default cpu); gpu runs them on the GPU, one group per GPU at a time, and "
                        "records an error row, never a CPU result, when the GPU cannot start")
    p.add_argument("--workers", type=int, metavar="N",
                   help="groups at once on this machine, or worker processes of the local Dask "
                        "cluster (default: one per core)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="run on the existing Dask cluster with this scheduler (implies --executor dask)")
    p.set_defaults(func=_run)

    p = sub.add_parser("report", help="write the HTML report of a results folder")
    p.add_argument("results_dir", help="results folder (what `diffcompare run --results` wrote)")
    p.add_argument("-o", "--out", help="HTML file to write (default reports/<results folder name>.html)")
    p.add_argument("--no-seeds", action="store_true",
                   help="leave out the seed-questions section")
    p.set_defaults(func=_report)

    p = sub.add_parser("list", help="problems, backends, suites, the capability table or the xp contract")
    p.add_argument("what", nargs="?", default="problems",
                   choices=["problems", "backends", "suites", "capabilities", "contract"])
    p.add_argument("--markdown", action="store_true",
                   help="with `contract`: the table as Markdown (docs/contract.md)")
    p.add_argument("--experiments", help="folder holding suites/ (default ./experiments)")
    p.set_defaults(func=_list)

    p = sub.add_parser("export", help="write a results folder's cells table (or its phase rows) "
                                      "as CSV or Parquet; columns: docs/results.md")
    p.add_argument("results_dir", help="results folder (what `diffcompare run --results` wrote)")
    p.add_argument("--format", choices=["csv", "parquet"], default="csv",
                   help="csv, or parquet (needs pyarrow: pip install 'diffcompare[parquet]')")
    p.add_argument("--table", choices=["cells", "phases"], default="cells",
                   help="cells: one row per backend cell, as compare() and results.load(DIR).cells "
                        "give it (the default); phases: one row per measured phase, as "
                        "results.jsonl holds them")
    p.add_argument("-o", "--out", help="file to write (default <results_dir>/<table>.<format>)")
    p.set_defaults(func=_export)

    p = sub.add_parser("demo", help="the engine's graphs and gradients for the seed examples")
    p.add_argument("--out", default="reports/engine-demo", help="folder for the DOT/SVG drawings")
    p.set_defaults(func=_demo)

    p = sub.add_parser("graph", help="draw the autograd graph of a function in FILE (engine and torch) to SVG")
    p.add_argument("file", help="a Python file defining the function and an `inputs` dict")
    p.add_argument("--function", help="which function (default: the one taking exactly the inputs)")
    p.add_argument("-o", "--out", default="reports/graphs", help="folder for the SVG and DOT files")
    p.set_defaults(func=_graph)

    p = sub.add_parser("trace", help="the evaluation trace of a function in FILE: primal, tangent and adjoint "
                                     "of every intermediate (engine)")
    p.add_argument("file", help="a Python file defining the function and an `inputs` dict (as for graph)")
    p.add_argument("--function", help="which function (default: the one taking exactly the inputs)")
    p.add_argument("--direction", nargs="+", metavar="NAME=VALUE",
                   help="the input direction of the tangent trace (default: 1 for the first input, 0 else)")
    p.add_argument("--digits", type=int, default=4, help="decimals shown (default 4)")
    p.set_defaults(func=_trace)
    return parser


class _contract_notes:
    """Print a ``ContractWarning`` (a problem uses names outside the xp contract, said once
    before the cells run) as one plain note line, not as a Python warning, whatever the
    warning filters say (``-W ignore`` must not hide why cells are unsupported)."""

    def __enter__(self):
        import warnings

        from .problems.contract import ContractWarning

        self._saved = warnings.catch_warnings()
        self._saved.__enter__()                  # filters and showwarning restored on exit
        warnings.simplefilter("always", ContractWarning)
        show_other = warnings.showwarning

        def show(message, category, *rest, **kwargs):
            if issubclass(category, ContractWarning):
                print(f"diffcompare: note: {message}", file=sys.stderr)
            else:
                show_other(message, category, *rest, **kwargs)

        warnings.showwarning = show
        return self

    def __exit__(self, *exc):
        self._saved.__exit__(*exc)
        return False


def main(argv=None) -> int:
    from .results.folder import ResultsError
    from .runner.suite import SuiteError

    args = build_parser().parse_args(argv)
    try:
        with _contract_notes():
            return args.func(args)
    except (UsageError, SuiteError, ResultsError, KeyError, OSError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"diffcompare: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("diffcompare: interrupted; run the same command again to resume.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
