"""Median CPU seconds of a call, for the operator benchmarks (``sparse_jacobian.py``,
``hessians.py``): CPU time, so a shared machine's other work is not counted."""
from __future__ import annotations

import statistics
import time


def cpu_median(call, samples, min_s=0.02, long_s=0.5):
    """``(median CPU seconds of call(), its value)``: one warm-up call, then ``samples``
    samples, each repeating the call until it lasts ``min_s`` (stopping early where one more
    call would double it); after a sample longer than ``long_s`` no more samples are taken."""
    out = call()                                   # warm-up, and the value
    times = []
    for _ in range(samples):
        reps, t0 = 0, time.process_time()
        while True:
            call()
            reps += 1
            elapsed = time.process_time() - t0
            if elapsed >= min_s or elapsed * (reps + 1) / reps > 2.0:
                break
        times.append(elapsed / reps)
        if elapsed > long_s:
            break
    return statistics.median(times), out
