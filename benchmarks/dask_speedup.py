#!/usr/bin/env python
"""Wall time of an accuracy grid: the Dask executor on a LocalCluster of 2 workers against
the local executor (one group at a time).

The grid is accuracy-only: every cell's timings are cut to one call (``samples = 1``,
``min_sample_s = 0``), so a cell is its preparation, one gradient and its error against
the 50-digit reference. The same suite runs ``--repeats`` times with each executor,
alternately (local, dask, local, dask, ...) so that machine noise hits both alike, each
into a fresh results folder, studies off. The cluster is started once, before the first
dask run, and its start-up time is printed apart. Each run is timed with
``diffcompare.measure.timing.time_once``; the speedup is median(local) / median(dask).

Expect about 1.8-2x on 2 idle cores (the groups are independent; each group's worker
process starts and imports in parallel too). On a machine shared with other work the
ratio is lower and noisy: report it with the load.

    python benchmarks/dask_speedup.py                  # 3 repeats (a few minutes)
    python benchmarks/dask_speedup.py --repeats 1 --workers 2
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from diffcompare.measure.timing import time_once
from diffcompare.runner import Suite, load_results, run_suite
from diffcompare.runner.dask_executor import DaskExecutor

BACKENDS = ["engine", "manual", "fd-central", "fd-complex-step", "sympy"]
GRID = [   # 9 groups of a few seconds each (larger sizes: the 50-digit reference dominates)
    {"problems": ["rosenbrock", "logsumexp"], "sizes": [4, 16], "backends": BACKENDS},
    {"problems": ["linear_mse"], "sizes": [1, 4], "backends": BACKENDS},
    {"problems": ["mlp_tanh"], "sizes": [1], "backends": BACKENDS},
    {"problems": ["weighted_vector", "linear_mean"], "sizes": [4], "backends": BACKENDS},
]


def accuracy_suite() -> Suite:
    return Suite.from_dict({"name": "dask-speedup", "seeds": [0], "dtypes": ["float64"], "timeout_s": 60,
                            "cell_options": {"samples": 1, "min_sample_s": 0.0}, "grid": GRID})


def _cells(folder):
    frame = load_results(folder)
    cells = frame[frame.phase == "cell"]
    return sorted(zip(cells.problem, cells["size"], cells.backend, cells.status))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="Dask workers of the LocalCluster")
    args = parser.parse_args(argv)

    suite = accuracy_suite()
    out = Path(tempfile.mkdtemp(prefix="dask-speedup-"))
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"cores usable: {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()}; "
          f"load average before: {load}")
    executor, startup_s = time_once(lambda: DaskExecutor.local(args.workers))
    walls = {"local": [], "dask": []}
    try:
        for i in range(args.repeats):
            for name, ex in (("local", None), ("dask", executor)):
                folder = out / f"{name}-{i}"
                summary, seconds = time_once(lambda: run_suite(suite, folder, fresh=True, progress=False,
                                                               executor=ex, run_studies=False))
                walls[name].append(seconds)
                print(f"{name:5s} run {i + 1}: {seconds:6.2f} s  {summary.counts}")
    finally:
        executor.close()
    if _cells(out / "local-0") != _cells(out / "dask-0"):
        print("WARNING: the two executors recorded different cells or statuses")
    local, dask = statistics.median(walls["local"]), statistics.median(walls["dask"])
    n_groups = len({c[:2] for c in _cells(out / "local-0")})
    print(f"\naccuracy grid: {len(_cells(out / 'local-0'))} cells in {n_groups} groups, {args.repeats} repeats")
    print(f"{'executor':32s} {'median wall':>12s}  runs")
    print(f"{'local (1 group at a time)':32s} {local:10.2f} s  " + " ".join(f"{w:.2f}" for w in walls["local"]))
    print(f"{f'dask LocalCluster ({args.workers} workers)':32s} {dask:10.2f} s  "
          + " ".join(f"{w:.2f}" for w in walls["dask"]))
    print(f"speedup local/dask: {local / dask:.2f}x   (cluster start-up, once: {startup_s:.2f} s, not included)")
    print(f"load average after: {os.getloadavg() if hasattr(os, 'getloadavg') else None}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
