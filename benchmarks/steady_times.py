"""The compiled engine's time per gradient across fresh processes, and its page faults.

Each row starts ``--processes`` fresh processes per mode, interleaved (plain, kept, worker,
plain, ...), each pinned to one CPU with one BLAS thread; a process prepares the problem with
``engine-compiled``, warms up, and prints the median CPU time of ``--calls`` gradients and its
minor page faults per call. Modes:

- ``plain``: a process as a user starts it (glibc's default malloc thresholds);
- ``kept``: the same after ``diffcompare.malloc_settings.keep_freed_memory()``;
- ``worker``: the runner's worker environment (``runner.environment.worker_env``).

Steady means the process medians agree (``spread``: slowest ÷ fastest) and no call faults
its temporaries in again.

    python benchmarks/steady_times.py
    python benchmarks/steady_times.py --problems gmm_10k:50 --processes 5
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

MODES = ("plain", "kept", "worker")


def one_process(name, size, mode, calls):
    """In the child: the median CPU seconds of one gradient and the minor faults a call."""
    from diffcompare import backends, problems, malloc_settings
    from diffcompare.runner.environment import pin_to_one_cpu

    pin_to_one_cpu()
    if mode == "kept":
        malloc_settings.keep_freed_memory()
    p = problems.get(name)
    inputs, cot = p.inputs(size, 0), p.cotangent(size, 0)
    b = backends.get("engine-compiled")
    prepared = b.prepare(p, inputs)
    for _ in range(3):
        b.vjp(prepared, inputs, cot)
    times, before = [], resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        start = time.process_time()
        b.vjp(prepared, inputs, cot)
        times.append(time.process_time() - start)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls
    print(f"{statistics.median(times)!r} {faults!r}")


def spawn(name, size, mode, calls):
    from diffcompare.malloc_settings import MALLOC_ENV
    from diffcompare.runner.environment import THREAD_ENV, worker_env

    env = {k: v for k, v in os.environ.items() if k not in MALLOC_ENV}
    env = worker_env(env) if mode == "worker" else {**env, **THREAD_ENV}
    out = subprocess.run([sys.executable, __file__, "--child", f"{name}:{size}", mode,
                          str(calls)], env=env, check=True, capture_output=True, text=True)
    median, faults = (float(v) for v in out.stdout.split()[-2:])
    return median, faults


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", default="gmm_10k:50,bundle_adjustment:2500",
                    help="comma-separated name:size")
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--calls", type=int, default=15)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        name, size = a.child[0].rsplit(":", 1)
        return one_process(name, int(size), a.child[1], int(a.child[2]))
    print("engine-compiled, one gradient: median CPU time per process (ms), minor page faults "
          "per call; one BLAS thread, pinned to one CPU")
    print(f"  {'problem':26s} {'mode':7s} {'process medians (ms)':>30s} {'spread':>7s} "
          f"{'faults/call':>12s}")
    for item in a.problems.split(","):
        name, size = item.rsplit(":", 1)
        runs = {m: [] for m in MODES}
        for _ in range(a.processes):
            for m in MODES:
                runs[m].append(spawn(name, int(size), m, a.calls))
        for m in MODES:
            medians = [r[0] * 1e3 for r in runs[m]]
            faults = max(r[1] for r in runs[m])
            print(f"  {item:26s} {m:7s} {' '.join(f'{v:7.1f}' for v in medians):>30s} "
                  f"{max(medians) / min(medians):7.2f} {faults:12.0f}", flush=True)


if __name__ == "__main__":
    main()
