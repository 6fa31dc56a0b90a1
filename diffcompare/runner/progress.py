"""Progress display: a tqdm bar on a terminal, a line per group under a pipe or in a log.

``make_progress(None)`` picks: a bar when both stdout and stderr are terminals,
else :class:`LineProgress` (a line on stderr per finished group of cells, or every
few seconds, and the summary line at the end).
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


class LineProgress(SummaryProgress):
    """Plain lines for logs and pipes: ``[done/total cells, elapsed] group: statuses``, one
    when a group (problem/size) ends or at least every ``every_s`` seconds; the current
    study as it starts; the summary line at the end."""

    def __init__(self, stream=None, every_s: float = 5.0, clock=None):
        super().__init__(stream)
        import time

        self.every_s = every_s
        self.clock = clock or time.monotonic
        self._lock = threading.Lock()
        self.total = self.done = 0
        self.started = self.last_line = self.clock()
        self.group = None
        self.counts = collections.Counter()

    def _print(self, text):
        print(text, file=self.stream or sys.stderr, flush=True)
        self.last_line = self.clock()

    def _flush_group(self):
        if self.group is not None and self.counts:
            statuses = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
            self._print(f"[{self.done}/{self.total} cells, {self.clock() - self.started:.0f} s] "
                        f"{self.group}: {statuses}")
        self.counts.clear()

    def start(self, total, done=0, title=""):
        with self._lock:
            self.total, self.done = total, done
            self.started = self.last_line = self.clock()
            resumed = f", {done} already done" if done else ""
            self._print(f"{title or 'run'}: {total} cells{resumed}")

    def cell_started(self, name):
        with self._lock:
            if name.startswith("study "):
                self._flush_group()
                self.group = None
                self._print(f"[{self.clock() - self.started:.0f} s] {name} ...")

    def cell_finished(self, name, status):
        group = name.rsplit("/", 1)[0]
        with self._lock:
            if group != self.group:
                self._flush_group()
                self.group = group
            self.done += 1
            self.counts[status] += 1
            if self.clock() - self.last_line >= self.every_s:
                self._flush_group()

    def close(self, summary=None):
        with self._lock:
            self._flush_group()
        super().close(summary)


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
        return LineProgress()
    raise TypeError(f"progress must be None, True, False or a Progress, got {progress!r}.")
