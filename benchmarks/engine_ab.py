#!/usr/bin/env python
"""The eager engine of two source trees, side by side in one process: one gradient of seed
001's model, ``((relu(x @ w1 + b1) @ w2 + b2 - y) ** 2).mean().backward()``.

At the small sizes one process differs from the next by several percent (the machine's load,
memory layout, BLAS), as much as a change to the engine's per-op overhead; timing each tree in
its own process then says little.  Here the ``diffcompare`` package of each tree (``--before``,
``--after``: repository roots) is copied under a name of its own (``dc_before``,
``dc_after``) and imported into one process, and the two engines' steps are sampled
round-robin as ``engine_vs_peers.py`` samples its contenders (its data, one-thread
environment and ``round_robin``).  The engine imports only its own modules (relative
imports), so each step runs its tree's engine; the rest of the package is not exercised.

Usage::

    python benchmarks/engine_ab.py --before ../main --after . --cpu-time
    python benchmarks/engine_ab.py --before ../main --after . --sizes 1x3x4 --samples 41
"""
from __future__ import annotations

import argparse
import importlib
import os
import shutil
import statistics
import sys
import tempfile
import time

import engine_vs_peers as peers


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", required=True, help="root of the tree timed as 'before'")
    p.add_argument("--after", default=".", help="root of the tree timed as 'after' (default .)")
    p.add_argument("--sizes", default="1x3x4,64x10x50", help="comma-separated BxIxH")
    p.add_argument("--samples", type=int, default=21, help="samples per engine (default 21)")
    p.add_argument("--min-time", type=float, default=0.05, help="seconds per sample (default 0.05)")
    p.add_argument("--cpu-time", action="store_true", help="time the process's CPU time")
    args = p.parse_args(argv)
    for root in (args.before, args.after):
        if not os.path.isfile(os.path.join(root, "diffcompare", "engine", "__init__.py")):
            p.error(f"{root!r} is not a diffcompare checkout (no diffcompare/engine/__init__.py)")
    try:
        args.size_list = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    except ValueError:
        p.error(f"--sizes: {args.sizes!r} is not a comma-separated list of BxIxH")
    return args


def load_engine(root: str, name: str, into: str):
    """The engine of the tree at ``root``, imported as ``name.engine`` from a copy in ``into``."""
    shutil.copytree(os.path.join(root, "diffcompare"), os.path.join(into, name),
                    ignore=shutil.ignore_patterns("__pycache__"))
    return importlib.import_module(name + ".engine")


def build_step(engine, d):
    x, y = engine.Tensor(d["x"]), engine.Tensor(d["y"])
    w1, b1, w2, b2 = (engine.Tensor(d[k], requires_grad=True) for k in peers.PARAMS)
    relu = engine.relu

    def step():
        w1.grad = b1.grad = w2.grad = b2.grad = None
        ((relu(x @ w1 + b1) @ w2 + b2 - y) ** 2).mean().backward()
        return tuple(p.grad.data for p in (w1, b1, w2, b2))

    return step


def main(argv=None):
    args = parse_args(argv)
    note = peers.single_threaded()
    if args.cpu_time:
        peers.CLOCK = time.process_time
        note += ", CPU time (process_time)"
    import numpy as np

    tmp = tempfile.mkdtemp(prefix="engine_ab_")
    sys.path.insert(0, tmp)
    try:
        engines = {"before": load_engine(args.before, "dc_before", tmp),
                   "after": load_engine(args.after, "dc_after", tmp)}
        print(f"engine_ab: {args.before} (before) against {args.after} (after), one process; "
              f"{note}; {args.samples} samples each, round-robin")
        print(f"  {'(batch, in, hidden)':20s} {'before':>10s} {'after':>10s} {'after/before':>13s}"
              "  (median of per-round ratios; min-max of the ratios)")
        for size in args.size_list:
            d = peers.make_data(*size)
            steps = {name: build_step(e, d) for name, e in engines.items()}
            for a, b in zip(steps["before"](), steps["after"]()):
                np.testing.assert_allclose(b, a, rtol=1e-12, atol=0)
            per_call = peers.round_robin(steps, args.samples, args.min_time)
            ratios = [a / b for a, b in zip(per_call["after"], per_call["before"])]
            print(f"  {str(size):20s} {peers.fmt_time(statistics.median(per_call['before'])):>10s} "
                  f"{peers.fmt_time(statistics.median(per_call['after'])):>10s} "
                  f"{statistics.median(ratios):12.3f}x  ({min(ratios):.3f}-{max(ratios):.3f})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
