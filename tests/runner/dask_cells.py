"""A cell function for the Dask tests: the behaviours of ``cells.scripted`` plus one that
kills the Dask worker running its group (the worker process's parent)."""
from __future__ import annotations

import os
import signal
import time

from tests.runner import cells


def kill_dask_worker(problem, size, seed, backend, dtype, options):
    """At size ``options["at_size"]``: SIGKILL this worker process's parent (the Dask
    worker), then wait for the lifeline to end it (the parent's end of stdin closes).
    At other sizes: ``cells.fast``."""
    if size != int(options["at_size"]):
        yield from cells.fast(problem, size, seed, backend, dtype, options)
        return
    yield {"phase": "prepare", "status": "ok"}
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(60)


def scripted(problem, size, seed, backend, dtype, options):
    """``options["behavior"]``: ``kill_dask_worker`` or one of ``cells.BEHAVIORS``."""
    if options.get("behavior") == "kill_dask_worker":
        return kill_dask_worker(problem, size, seed, backend, dtype, options)
    return cells.scripted(problem, size, seed, backend, dtype, options)
