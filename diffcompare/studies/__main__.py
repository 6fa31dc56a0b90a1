"""``python -m diffcompare.studies <name> <results_dir> [--quick]``: run one study.

Writes ``<results_dir>/studies/<name>.csv`` and ``<name>.findings.json`` and prints the
findings.  Exit status 0 when the study ran (whether or not its checks hold; the findings
file says), 1 when it raised (the findings file then records status ``error``), 2 for a
usage error.  ``--list`` prints the studies.
"""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    from . import STUDIES, get, kind, run_study

    parser = argparse.ArgumentParser(prog="python -m diffcompare.studies",
                                     description="Run one trade-off study and check its expectation.")
    parser.add_argument("name", nargs="?", help=f"the study: {', '.join(STUDIES)}")
    parser.add_argument("results_dir", nargs="?", help="where to write studies/<name>.*; a grid "
                        "study (scaling, breakeven, accuracy) reads the results there")
    parser.add_argument("--quick", action="store_true", help="smaller sweeps where the study has them")
    parser.add_argument("--list", action="store_true", help="list the studies and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name, module in STUDIES.items():
            print(f"{name:18s} {kind(module):8s} {module.TITLE}")
        return 0
    if not args.name or not args.results_dir:
        parser.print_usage(sys.stderr)
        return 2
    try:
        get(args.name)
    except KeyError as exc:
        print(exc.args[0], file=sys.stderr)
        return 2
    try:
        outcome = run_study(args.name, args.results_dir, quick=args.quick)
    except Exception as exc:
        print(f"study {args.name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        import traceback

        traceback.print_exc()
        return 1
    print(f"study {args.name}: {outcome.status} ({len(outcome.frame)} rows, {outcome.wall_s:.1f} s) "
          f"-> {outcome.findings_path}")
    for finding in outcome.findings:
        print(f"  {finding}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
