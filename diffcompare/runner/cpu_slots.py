"""CPU slots: at most one group per core on a host, each group pinned to its own core.

A slot is an exclusive ``flock`` on ``<tmp>/diffcompare-cpu-slots-<uid>/cpu<N>.lock``, so
every process of the host that runs groups (the local executor's threads, each Dask
worker) shares one set of slots, and a slot is freed when its holder ends, even by
``SIGKILL``.  Timings stay per core: a group's worker process is started from the
pinned thread and so runs on the slot's CPU alone.
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import tempfile
import threading
import time
from pathlib import Path

from .supervisor import Cancelled


@functools.lru_cache(maxsize=1)
def usable_cpus() -> tuple:
    """The CPUs this process may run on (all of ``os.cpu_count()`` where unknown), read
    once: a thread holding a :func:`cpu_slot` sees only its own CPU afterwards."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return tuple(range(os.cpu_count() or 1))


def _slot_dir() -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    path = Path(tempfile.gettempdir()) / f"diffcompare-cpu-slots-{uid}"
    path.mkdir(exist_ok=True)
    return path


@contextlib.contextmanager
def cpu_slot(cancelled: threading.Event | None = None, poll_s: float = 0.05):
    """Hold one CPU of this host for the calling thread; yields the CPU number.

    The claim is an exclusive ``flock`` on ``<tmp>/diffcompare-cpu-slots-<uid>/cpu<N>.lock``,
    so it holds across processes (every Dask worker of the host) and ends when the
    holder does, even by ``SIGKILL``. Waits while every CPU is held. The calling
    thread is pinned to the CPU (Linux affinity is per thread), so a worker process it
    starts runs there; the thread's affinity is restored on exit.

    >>> with cpu_slot() as cpu:
    ...     cpu in usable_cpus()
    True
    """
    cpus = usable_cpus()
    folder = _slot_dir()
    while True:
        for cpu in cpus:
            fd = os.open(folder / f"cpu{cpu}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            try:
                with _thread_pinned(cpu):
                    yield cpu
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
            return
        if cancelled is not None and cancelled.is_set():
            raise Cancelled()
        time.sleep(poll_s)


@contextlib.contextmanager
def _thread_pinned(cpu: int):
    if not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
