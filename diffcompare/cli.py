"""Command line: ``diffcompare run | report | list | demo | graph``  (``python -m diffcompare`` works too).

- ``diffcompare run --suite quick`` runs a suite's grid (and its studies) into a
  results folder, resuming by default (``--fresh`` starts over);
- ``diffcompare report results/quick -o reports/quick.html`` writes the results folder's
  report: one HTML file that opens from disk with nothing fetched;
- ``diffcompare list [problems|backends|suites|capabilities]`` shows what exists;
- ``diffcompare demo`` prints the engine's graphs and gradients for the seed examples;
- ``diffcompare graph model.py`` draws the graph of a function in a file (engine and torch).

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

    suite = load_suite(args.suite, args.experiments)
    results_dir = args.results or f"results/{suite.name}"
    summary = run_suite(suite, results_dir, fresh=args.fresh, progress=None if not args.quiet else False,
                        experiments_dir=args.experiments)
    if args.quiet:     # otherwise the progress display has printed it
        print(summary)
    return 0


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
    if what == "problems":
        for p in problems.all_problems():
            print(f"{p.name:24s} sizes {', '.join(map(str, p.sizes)):28s} "
                  f"[{', '.join(sorted(p.tags))}]  {p.description}")
    elif what == "backends":
        for name, support in backends.availability().items():
            b = backends.get(name)
            state = "available" if support else f"unavailable: {support.reason}"
            print(f"{name:16s} {b.family:18s} {state}")
    elif what == "suites":
        for name in list_suites(args.experiments):
            suite = load_suite(name, args.experiments, validate=False)
            print(f"{name:10s} {suite.description}")
    else:
        import pandas as pd

        with pd.option_context("display.max_columns", None, "display.width", 250,
                               "display.max_colwidth", 40):
            print(backends.capability_table().T.to_string())
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="diffcompare",
        description="Compare ways of computing derivatives: engine, SymPy, finite differences, JAX.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run a suite of experiments into a results folder")
    p.add_argument("--suite", default="quick", help="suite name (see `diffcompare list suites`) or a .toml path")
    p.add_argument("--results", help="results folder (default results/<suite>)")
    p.add_argument("--fresh", action="store_true", help="start over instead of resuming")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--experiments", help="folder holding suites/ (default ./experiments)")
    p.set_defaults(func=_run)

    p = sub.add_parser("report", help="write the HTML report of a results folder")
    p.add_argument("results_dir", help="results folder (what `diffcompare run --results` wrote)")
    p.add_argument("-o", "--out", help="HTML file to write (default reports/<results folder name>.html)")
    p.add_argument("--no-seeds", action="store_true",
                   help="leave out the seed-questions section (it runs the engine live)")
    p.set_defaults(func=_report)

    p = sub.add_parser("list", help="problems, backends, suites or the capability table")
    p.add_argument("what", nargs="?", default="problems",
                   choices=["problems", "backends", "suites", "capabilities"])
    p.add_argument("--experiments", help="folder holding suites/ (default ./experiments)")
    p.set_defaults(func=_list)

    p = sub.add_parser("demo", help="the engine's graphs and gradients for the seed examples")
    p.add_argument("--out", default="reports/engine-demo", help="folder for the DOT/SVG drawings")
    p.set_defaults(func=_demo)

    p = sub.add_parser("graph", help="draw the autograd graph of a function in FILE (engine and torch) to SVG")
    p.add_argument("file", help="a Python file defining the function and an `inputs` dict")
    p.add_argument("--function", help="which function (default: the one taking exactly the inputs)")
    p.add_argument("-o", "--out", default="reports/graphs", help="folder for the SVG and DOT files")
    p.set_defaults(func=_graph)
    return parser


def main(argv=None) -> int:
    from .runner.results import ResultsError
    from .runner.suite import SuiteError

    args = build_parser().parse_args(argv)
    try:
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
