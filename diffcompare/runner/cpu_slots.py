"""CPU slots: at most one group per core on a host, each group pinned to its own core;
GPU slots: at most one group per GPU.

A slot is an exclusive ``flock`` on ``<tmp>/diffcompare-cpu-slots-<uid>/cpu<N>.lock``, so
every process of the host that runs groups (the local executor's threads, each Dask
worker) shares one set of slots, and a slot is freed when its holder ends, even by
``SIGKILL``.  Timings stay per core: a group's worker process is started from the
pinned thread and so runs on the slot's CPU alone.

A group of GPU cells also holds a GPU slot (:func:`gpu_slot`, ``gpu<N>.lock`` beside the CPU
locks), one per GPU JAX sees on the host: one such group per GPU at a time, locally and on
every Dask worker of the host, so no two workers share a GPU's memory or its timings.
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


class Cancelled(Exception):
    """The run was stopped (Ctrl-C, an error elsewhere) while waiting for a slot or running;
    no rows are written for it."""


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
    with _claim([f"cpu{cpu}" for cpu in usable_cpus()], cancelled, poll_s) as name:
        cpu = int(name[3:])
        with _thread_pinned(cpu):
            yield cpu


def gpu_count() -> int:
    """GPUs on this host, as JAX sees them (``environment.accelerators``, asked once);
    ``DIFFCOMPARE_GPUS=N`` says it instead."""
    told = os.environ.get("DIFFCOMPARE_GPUS")
    if told is not None:
        try:
            return max(0, int(told))
        except ValueError:
            raise ValueError(f"DIFFCOMPARE_GPUS must be a whole number of GPUs, not {told!r}.") from None
    from .environment import accelerators

    return int(accelerators().get("gpu_count") or 0)


@contextlib.contextmanager
def gpu_slot(cancelled: threading.Event | None = None, count: int | None = None,
             poll_s: float = 0.05):
    """Hold one GPU of this host (of ``count``, default :func:`gpu_count`); yields its index.

    An exclusive ``flock`` on ``<tmp>/diffcompare-cpu-slots-<uid>/gpu<N>.lock``, like
    :func:`cpu_slot`'s; waits while every GPU is held.  A host without a GPU still has one
    slot, so groups asking for a GPU there run one at a time and record why they could not
    use it.

    >>> with gpu_slot(count=1) as gpu:
    ...     gpu
    0
    """
    count = gpu_count() if count is None else int(count)
    with _claim([f"gpu{i}" for i in range(max(1, count))], cancelled, poll_s) as name:
        yield int(name[3:])


@contextlib.contextmanager
def _claim(names, cancelled, poll_s):
    """Hold the first free lock of ``names`` (waiting while all are held); yields its name."""
    folder = _slot_dir()
    while True:
        for name in names:
            fd = os.open(folder / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            try:
                yield name
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
