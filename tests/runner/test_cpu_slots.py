"""The local executor runs groups in parallel only one per core, each pinned to its own."""
from __future__ import annotations

import os
import threading

import pytest

from diffcompare.runner.cpu_slots import usable_cpus
from diffcompare.runner.executor import LocalExecutor

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="needs Linux CPU affinity")


def test_local_executor_pins_each_running_group_to_a_cpu_of_its_own():
    seen, lock, running, overlap = [], threading.Lock(), set(), []

    def run_group(group):
        cpus = tuple(os.sched_getaffinity(0))       # the thread's: what its worker inherits
        with lock:
            seen.append(cpus)
            assert not (set(cpus) & running), "two groups on one CPU at once"
            running.update(cpus)
            overlap.append(len(running))
        threading.Event().wait(0.05)
        with lock:
            running.difference_update(cpus)
        return group

    n = len(usable_cpus())
    out = list(LocalExecutor(max_workers=n + 1).map_groups(range(2 * n + 2), run_group))
    assert sorted(out) == list(range(2 * n + 2))
    assert all(len(c) == 1 and c[0] in usable_cpus() for c in seen)
    assert max(overlap) <= n                          # never more groups than cores
    assert tuple(sorted(os.sched_getaffinity(0))) == usable_cpus()   # the caller is not pinned
