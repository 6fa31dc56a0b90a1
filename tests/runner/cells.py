"""Cell functions for the runner's tests: fast, slow, raising, crashing, hungry.

Each has the signature of ``diffcompare.measure.cell:measure_cell``,
``(problem_name, size, seed, backend_name, dtype, options) -> iterator of rows``,
and none touches a real backend, so the runner is tested on its own.
``scripted`` picks a behaviour per backend from ``options["behavior"]``.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

PHASES = ("prepare", "function", "gradient")


def fast(problem, size, seed, backend, dtype, options):
    """Three ok rows, quickly (``options["phase_s"]`` seconds each, default 0)."""
    for i, phase in enumerate(PHASES):
        time.sleep(float(options.get("phase_s", 0.0)))
        yield {"phase": phase, "status": "ok", "time_median_s": 1e-6 * (i + 1) * size,
               "time_iqr_s": 1e-8, "time_min_s": 1e-6, "time_samples": [1e-6, 2e-6],
               "loops": 10, "n_inputs": size, "extra": {"cell": "fast"}}


def sleep_forever(problem, size, seed, backend, dtype, options):
    """One ok row, then no progress ever (the runner must time it out)."""
    yield {"phase": "prepare", "status": "ok", "time_median_s": 1e-3}
    time.sleep(3600)


def raise_error(problem, size, seed, backend, dtype, options):
    """One ok row, then an exception."""
    yield {"phase": "prepare", "status": "ok"}
    raise ValueError(f"boom at size {size}")


def sigkill_self(problem, size, seed, backend, dtype, options):
    """One ok row, a note on stderr, then SIGKILL to its own process."""
    yield {"phase": "prepare", "status": "ok"}
    print("about to SIGKILL myself", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)


def exit_3(problem, size, seed, backend, dtype, options):
    """Leaves the process with exit status 3, skipping all cleanup."""
    os._exit(3)
    yield  # pragma: no cover


def allocate_until_killed(problem, size, seed, backend, dtype, options):
    """Allocate (and touch) 50 MB blocks until something stops it. Capped at
    ``options["cap_mb"]`` (default 1500) so a run without a memory limit or a
    timeout cannot take the machine: past the cap it just sleeps."""
    import numpy as np

    blocks, cap = [], int(options.get("cap_mb", 1500))
    while len(blocks) * 50 < cap:
        blocks.append(np.ones(50 * 2**20 // 8))
    time.sleep(3600)
    yield  # pragma: no cover


def spawn_child_and_sleep(problem, size, seed, backend, dtype, options):
    """Start a child process (its pid goes to ``options["pidfile"]``), then hang."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    with open(options["pidfile"], "w") as f:
        f.write(str(child.pid))
    yield {"phase": "prepare", "status": "ok"}
    time.sleep(3600)


def write_pid_and_sleep(problem, size, seed, backend, dtype, options):
    """Write the worker's pid to ``options["pidfile"]``, then hang."""
    with open(options["pidfile"], "w") as f:
        f.write(str(os.getpid()))
    yield {"phase": "prepare", "status": "ok"}
    time.sleep(3600)


def noisy(problem, size, seed, backend, dtype, options):
    """Prints to stdout (Python and the C level) between rows: must not disturb the protocol."""
    print("noise from print()", flush=True)
    os.write(1, b"noise from fd 1\n{\"event\": \"done\"}\n")
    yield from fast(problem, size, seed, backend, dtype, options)


def nothing(problem, size, seed, backend, dtype, options):
    """Yields no rows at all."""
    return iter(())


def bad_status(problem, size, seed, backend, dtype, options):
    yield {"phase": "gradient", "status": "splendid"}


def unsupported(problem, size, seed, backend, dtype, options):
    """A cell-level status, as a backend that cannot do the problem reports it."""
    yield {"phase": "cell", "status": "unsupported", "message": "cannot do this one"}


def timeout_from_size(problem, size, seed, backend, dtype, options):
    """Fast below ``options["hang_from_size"]``, hangs from that size on."""
    if size >= int(options.get("hang_from_size", 10**9)):
        yield from sleep_forever(problem, size, seed, backend, dtype, options)
    else:
        yield from fast(problem, size, seed, backend, dtype, options)


BEHAVIORS = {f.__name__: f for f in (fast, sleep_forever, raise_error, sigkill_self, exit_3,
                                     allocate_until_killed, spawn_child_and_sleep,
                                     write_pid_and_sleep, noisy, nothing, bad_status,
                                     unsupported, timeout_from_size)}


def scripted(problem, size, seed, backend, dtype, options):
    """The behaviour named by ``options["behavior"]`` (default ``fast``)."""
    return BEHAVIORS[options.get("behavior", "fast")](problem, size, seed, backend, dtype, options)


def refuses_while_measuring(problem, size, seed, backend, dtype, options):
    """A prepare row, then the backend hits a declared limit (an UnsupportedError)."""
    from diffcompare.backends import UnsupportedError

    yield {"phase": "prepare", "status": "ok"}
    raise UnsupportedError(problem, backend, "expression swell past 1000 operations")


BEHAVIORS["refuses_while_measuring"] = refuses_while_measuring


def _slow_group_setup(problem, size, seed, dtype, options, backend_names=()):
    """Shared work of a group (like the accuracy reference): ``options["setup_s"]`` seconds,
    or forever with ``setup_s = -1``; each call appends a line to ``options["setup_log"]``."""
    with open(options["setup_log"], "a") as f:
        f.write(f"{problem}/{size} {','.join(backend_names)}\n")
    seconds = float(options.get("setup_s", 0.0))
    time.sleep(3600 if seconds < 0 else seconds)


def with_group_setup(problem, size, seed, backend, dtype, options):
    """``scripted`` with a ``prepare_group`` hook (see diffcompare.runner.worker)."""
    return scripted(problem, size, seed, backend, dtype, options)


with_group_setup.prepare_group = _slow_group_setup


def product_raises(problem, size, seed, backend, dtype, options):
    """The real ``measure_cell``, with the engine's Hessian diagonal made to raise: a fault in
    a derivative product, after the gradient's rows."""
    from diffcompare.backends.engine import EngineBackend
    from diffcompare.measure.cell import measure_cell

    def fault(self, prepared, inputs):
        raise RuntimeError("injected hessian_diagonal fault")

    EngineBackend.timed_hessian_diagonal = fault
    return measure_cell(problem, size, seed, backend, dtype, options)
