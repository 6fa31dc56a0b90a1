"""Executors: where and how many groups run at once.

The grid code hands an executor the groups to run and one callable,
``run_group(group) -> GroupResult`` (a :class:`~diffcompare.runner.supervisor.GroupRunner`),
and consumes the results as they come. An executor decides only *where* and
*how many at a time*; the isolation (worker processes, timeouts, fault rows)
lives in ``run_group``, so any executor gets it.

Writing another executor needs only :meth:`Executor.map_groups`; the Dask one
(:mod:`.dask_executor`) is, in outline::

    class DaskExecutor(Executor):
        def __init__(self, client):
            self.client = client

        def map_groups(self, groups, run_group):
            remote = run_group.detached()      # picklable; no results sink
            futures = self.client.map(remote, list(groups), pure=False)
            for future in distributed.as_completed(futures):
                yield future.result()          # GroupResult with written=False

Rows of a result with ``written=False`` are appended to the results log by
the driver as the result arrives. The ``Group`` and its rows are plain
JSON-able data (``Group.to_json``/``from_json``), so they cross any transport.
Results may come back in any order; an executor that keeps the given order
for its first pick of work lets a timeout at a small size skip the larger
sizes (groups come ordered small to large).
"""
from __future__ import annotations

import abc
import concurrent.futures
import threading
from typing import Callable, Iterable, Iterator


class Executor(abc.ABC):
    """Runs ``run_group`` over groups; yields each ``GroupResult`` as it completes."""

    @abc.abstractmethod
    def map_groups(self, groups: Iterable, run_group: Callable) -> Iterator:
        """Call ``run_group(group)`` for every group and yield the results as they finish.

        Must not swallow exceptions from ``run_group`` (they are runner bugs or
        a cancellation). When it stops early (an exception, the consumer closing
        the iterator), it calls ``run_group.cancel()`` if there is one, which
        kills the running workers, before waiting for its threads."""


class LocalExecutor(Executor):
    """Groups on this machine: one at a time (``max_workers=1``, the default), or
    ``max_workers`` at once, each on a thread that first claims a CPU slot
    (:func:`~.cpu_slots.cpu_slot`) and so drives a worker process pinned to a core of its
    own: at most one group per core, as timings need (``diffcompare run`` uses one worker
    per core)."""

    def __init__(self, max_workers: int = 1):
        if int(max_workers) < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}.")
        self.max_workers = int(max_workers)

    def map_groups(self, groups, run_group):
        if self.max_workers == 1:
            for group in groups:
                yield run_group(group)
            return
        from .cpu_slots import cpu_slot

        cancelled = threading.Event()

        def pinned(group):
            with cpu_slot(cancelled):
                return run_group(group)

        pending_groups = iter(groups)
        pool = concurrent.futures.ThreadPoolExecutor(self.max_workers, thread_name_prefix="group")
        running = set()
        finished = False
        try:
            for group in pending_groups:                 # fill the pool, in order
                running.add(pool.submit(pinned, group))
                if len(running) >= self.max_workers:
                    break
            while running:
                done, running = concurrent.futures.wait(
                    running, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    result = future.result()
                    nxt = next(pending_groups, None)
                    if nxt is not None:
                        running.add(pool.submit(pinned, nxt))
                    yield result
            finished = True
        finally:
            if not finished:                             # error, Ctrl-C or the consumer stopped
                cancelled.set()                          # threads waiting for a slot give up
                cancel = getattr(run_group, "cancel", None)
                if cancel is not None:
                    cancel()                             # kills the workers, so threads end now
            pool.shutdown(wait=True, cancel_futures=True)

    def __repr__(self):
        return f"LocalExecutor(max_workers={self.max_workers})"
