"""Command line: ``diffcompare demo``  (``python -m diffcompare`` works too).

Bad arguments give a one-line error and exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import sys


def _demo(args) -> int:
    from . import demo

    demo.run(args.out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="diffcompare",
        description="Compare ways of computing derivatives: engine, SymPy, finite differences, JAX.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="the engine's graphs and gradients for the seed examples")
    p.add_argument("--out", default="reports/engine-demo", help="folder for the DOT/SVG drawings")
    p.set_defaults(func=_demo)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except OSError as exc:
        print(f"diffcompare: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
