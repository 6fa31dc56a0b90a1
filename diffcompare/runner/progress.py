"""Progress display: a tqdm bar on a terminal, silence (or one summary line) otherwise.

``make_progress(None)`` picks: a bar when both stdout and stderr are terminals,
else :class:`SummaryProgress` (nothing per cell, one line at the end).
``make_progress(False)`` is silent; ``True`` forces the bar; a
:class:`Progress` instance is used as given.
"""
from __future__ import annotations

import collections
import sys
import threading


class Progress:
    """Silent base class; subclasses show what they like. Thread-safe calls."""

    def start(self, total: int, done: int = 0, title: str = "") -> None:
        """``total`` backend cells in the grid, ``done`` of them finished before (resume)."""

    def cell_started(self, name: str) -> None:
        """A backend cell ``problem/size/backend`` started."""

    def cell_finished(self, name: str, status: str) -> None:
        """A backend cell ended with ``status``."""

    def close(self, summary=None) -> None:
        """The run ended (``summary`` is the RunSummary, or None if it failed)."""


class SummaryProgress(Progress):
    """Nothing per cell; one summary line on stderr at the end."""

    def __init__(self, stream=None):
        self.stream = stream

    def close(self, summary=None) -> None:
        if summary is not None:
            print(str(summary), file=self.stream or sys.stderr, flush=True)


class TqdmProgress(Progress):
    """A tqdm bar: cells done / total, the current cell, status counts, elapsed and ETA."""

    def __init__(self, stream=None, **tqdm_kwargs):
        self.stream = stream
        self.tqdm_kwargs = tqdm_kwargs
        self.bar = None
        self.counts = collections.Counter()
        self._lock = threading.Lock()

    def start(self, total, done=0, title=""):
        from tqdm import tqdm

        self.bar = tqdm(total=total, initial=done, unit="cell", desc=title or None,
                        file=self.stream or sys.stderr, dynamic_ncols=True, smoothing=0.05,
                        **self.tqdm_kwargs)
        if done:
            self.counts["resumed"] = done

    def cell_started(self, name):
        with self._lock:
            if self.bar is not None:
                self.bar.set_description_str(name, refresh=True)

    def cell_finished(self, name, status):
        with self._lock:
            self.counts[status] += 1
            if self.bar is not None:
                self.bar.set_postfix_str(" ".join(f"{k}={v}" for k, v in sorted(self.counts.items())),
                                         refresh=False)
                self.bar.update(1)

    def close(self, summary=None):
        with self._lock:
            if self.bar is not None:
                if summary is not None:
                    self.bar.set_description_str(summary.suite, refresh=False)
                self.bar.close()
                self.bar = None
        if summary is not None:
            print(str(summary), file=self.stream or sys.stderr, flush=True)


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def make_progress(progress=None) -> Progress:
    if isinstance(progress, Progress):
        return progress
    if progress is False:
        return Progress()
    if progress is True or (progress is None and _isatty(sys.stdout) and _isatty(sys.stderr)):
        return TqdmProgress()
    if progress is None:
        return SummaryProgress()
    raise TypeError(f"progress must be None, True, False or a Progress, got {progress!r}.")
