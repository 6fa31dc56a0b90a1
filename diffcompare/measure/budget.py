"""A wall-clock budget for a block of work in this process (the accuracy reference, reading
which names a user's function uses), for work that has no worker process and time limit of
its own.

>>> import time
>>> try:
...     with time_budget(0.05):
...         time.sleep(5)
... except OverBudget:
...     print("stopped")
stopped
"""
from __future__ import annotations

import contextlib
import signal
import threading
import time


class OverBudget(BaseException):
    """The block ran past its budget.  A ``BaseException``, so that code inside the block
    that catches ``Exception`` (a user's function, a reader that tolerates failures) cannot
    swallow it: only the budget's owner stops it."""


@contextlib.contextmanager
def time_budget(seconds: float):
    """Raise ``OverBudget`` inside the block after ``seconds`` (a SIGALRM timer: POSIX, in
    the main thread, as in the runner's workers; elsewhere the block runs unlimited)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise OverBudget()

    start = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expire)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:      # a caller's own timer keeps running, less the time spent here
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 1e-3))
