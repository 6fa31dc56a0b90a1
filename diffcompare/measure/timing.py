"""Timing: warm up, calibrate the loop so a sample lasts >= ~50 ms, keep every sample.

Beside the samples, how undisturbed they were: the share of the wall time this process
had a CPU (``cpu_share``: its CPU time ÷ wall time over calibration and samples, near 1 for
a single-threaded call that kept its CPU, lower when another process took it) and the
host's load (``load_per_cpu``: the 1-minute load average ÷ the CPUs, the higher of before
and after).  The results layer flags timings from loaded or noisy groups
(:mod:`diffcompare.results.trust`).

>>> t = time_call(lambda: sum(range(100)), min_sample_s=0.001, samples=3)
>>> len(t.samples), t.loops >= 1, t.stats.median > 0, 0 < t.cpu_share <= 1.5
(3, True, True, True)
"""
from __future__ import annotations

import dataclasses
import os
import time
from functools import cached_property

from .stats import Stats


@dataclasses.dataclass
class Timing:
    """Seconds per call, one value per sample (each sample averages ``loops`` calls);
    their median, quartiles and extremes are :attr:`stats`."""

    samples: list
    loops: int
    cpu_share: float | None = None      # this process's CPU time ÷ wall time while timing
    load_per_cpu: float | None = None   # host's 1-minute load average ÷ CPUs (before/after, higher)

    @cached_property
    def stats(self) -> Stats:
        return Stats(self.samples)


def time_call(fn, min_sample_s: float = 0.05, samples: int = 7, warmup: int = 1,
              max_loops: int = 1_000_000, clock=time.perf_counter) -> Timing:
    """Time ``fn()``: ``warmup`` calls, then ``samples`` samples of ``loops`` calls each,
    with ``loops`` chosen so that one sample takes at least ``min_sample_s``.

    ``clock`` is wall time by default; ``time.process_time`` (this process's CPU
    time) leaves out the time another process holds the CPU, for single-threaded
    code on a shared machine."""
    for _ in range(warmup):
        fn()
    load_before = load_per_cpu()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    loops = 1
    while True:
        elapsed = _run(fn, loops, clock)
        if elapsed >= min_sample_s or loops >= max_loops:
            break
        # aim 20% past the target so the next try usually succeeds
        loops = min(max_loops, max(loops * 2, int(loops * 1.2 * min_sample_s / max(elapsed, 1e-9))))
    per_call = [elapsed / loops] + [_run(fn, loops, clock) / loops for _ in range(samples - 1)]
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    loads = [x for x in (load_before, load_per_cpu()) if x is not None]
    return Timing(per_call, loops, cpu_share=cpu / wall if wall > 0 else None,
                  load_per_cpu=max(loads) if loads else None)


def load_per_cpu() -> float | None:
    """The host's 1-minute load average per CPU (None where the platform has none): 1 means
    as many runnable processes as CPUs, on average over the last minute."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except (AttributeError, OSError):
        return None


def time_once(fn):
    """``(result, seconds)`` of one call (for one-off phases such as prepare)."""
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def _run(fn, loops: int, clock=time.perf_counter) -> float:
    start = clock()
    for _ in range(loops):
        fn()
    return clock() - start
