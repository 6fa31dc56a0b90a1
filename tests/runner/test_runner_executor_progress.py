"""Executors (local, parallel, a detached one as a distributed engine would use) and progress."""
from __future__ import annotations

import io

from diffcompare.runner import Executor, LocalExecutor, load_results, run_suite
from diffcompare.runner.progress import LineProgress, Progress, TqdmProgress, make_progress


def _suite(rt):
    return rt.make_suite([{"backends": ["engine", "manual", "fd-forward"], "sizes": [1, 2, 3],
                           "options": rt.behaviors({"fd-forward": "raise_error"})}])


def test_parallel_local_executor_gives_the_same_rows(tmp_path, rt):
    one = run_suite(_suite(rt), tmp_path / "one", progress=False)
    two = run_suite(_suite(rt), tmp_path / "two", executor=LocalExecutor(max_workers=2), progress=False)
    assert one.counts == two.counts == {"ok": 6, "error": 3}
    keys = [sorted(rt.key_set(load_results(tmp_path / d))) for d in ("one", "two")]
    assert keys[0] == keys[1]


class DetachedExecutor(Executor):
    """What a distributed executor does: run detached copies, hand the rows back."""

    def __init__(self):
        self.seen = []

    def map_groups(self, groups, run_group):
        remote = run_group.detached()
        assert remote.sink is None
        for group in groups:
            result = remote(type(group).from_json(group.to_json()))   # as if it crossed the wire
            assert not result.written
            self.seen.append(group.name)
            yield result


def test_an_executor_that_returns_rows_instead_of_writing_them(tmp_path, rt):
    executor = DetachedExecutor()
    summary = run_suite(_suite(rt), tmp_path, executor=executor, progress=False)
    assert summary.counts == {"ok": 6, "error": 3} and len(executor.seen) == 3
    frame = load_results(tmp_path)
    assert len(frame) == 6 * 4 + 3 * 2 and summary.rows_written == len(frame)


class Recorder(Progress):
    def __init__(self):
        self.events = []

    def start(self, total, done=0, title=""):
        self.events.append(("start", total, done, title))

    def cell_started(self, name):
        self.events.append(("started", name))

    def cell_finished(self, name, status):
        self.events.append(("finished", name, status))

    def close(self, summary=None):
        self.events.append(("close", summary.cells_run if summary else None))


def test_progress_hooks_and_bar(tmp_path, rt):
    recorder = Recorder()
    run_suite(_suite(rt), tmp_path / "a", progress=recorder)
    assert recorder.events[0] == ("start", 9, 0, "runner-test")
    assert ("started", "runner_test_square/2/manual") in recorder.events
    assert ("finished", "runner_test_square/3/fd-forward", "error") in recorder.events
    assert recorder.events[-1] == ("close", 9)

    stream = io.StringIO()
    summary = run_suite(_suite(rt), tmp_path / "b", progress=TqdmProgress(stream=stream, mininterval=0))
    text = stream.getvalue()
    assert "9/9" in text and "runner_test_square/" in text and "error=3" in text
    assert text.rstrip().endswith(str(summary))


def test_lines_without_a_terminal(capsys):
    # under pytest stdout/stderr are not terminals: a line per finished group, plain text
    chosen = make_progress(None)
    assert isinstance(chosen, LineProgress)
    chosen.start(3, title="x")
    chosen.cell_started("p/1/engine")
    chosen.cell_finished("p/1/engine", "ok")
    chosen.cell_finished("p/1/fd-central", "timeout")
    assert capsys.readouterr().err == "x: 3 cells\n"          # the group is not over yet
    chosen.cell_finished("p/4/engine", "ok")                  # a new group: the last one's line
    err = capsys.readouterr().err
    assert err.startswith("[2/3 cells, ") and err.endswith("] p/1: ok 1, timeout 1\n")
    chosen.close("suite x: done")
    last, summary = capsys.readouterr().err.splitlines()[-2:]
    assert last.startswith("[3/3 cells, ") and last.endswith("] p/4: ok 1") and summary == "suite x: done"


def test_lines_every_few_seconds_inside_a_long_group(capsys):
    now = [0.0]
    chosen = LineProgress(every_s=5.0, clock=lambda: now[0])
    chosen.start(10, title="x")
    chosen.cell_finished("p/1/a", "ok")
    now[0] = 6.0
    chosen.cell_finished("p/1/b", "ok")
    assert capsys.readouterr().err.splitlines()[-1] == "[2/10 cells, 6 s] p/1: ok 2"
    chosen.cell_started("study fd_steps")
    assert capsys.readouterr().err == "[6 s] study fd_steps ...\n"


    assert type(make_progress(False)) is Progress and isinstance(make_progress(True), TqdmProgress)
