"""Faults become rows: timeouts, exceptions, crashes, odd cell functions."""
from __future__ import annotations

import time

import pytest

from diffcompare import backends
from diffcompare.runner import COLUMN_NAMES, load_results, run_suite
from diffcompare.results.schema import CELL_COLUMNS


def cells_by_backend(frame):
    """{(backend, size): cell row} and {(backend, size): [phases]}."""
    cell = {(r["backend"], r["size"]): r for r in frame.to_dict("records") if r["phase"] == "cell"}
    phases = {}
    for r in frame.to_dict("records"):
        if r["phase"] != "cell":
            phases.setdefault((r["backend"], r["size"]), []).append((r["phase"], r["status"]))
    return cell, phases


def test_timeout_error_and_crash_become_rows_while_the_rest_finish(tmp_path, rt):
    suite = rt.make_suite([{
        "backends": ["engine", "fd-forward", "fd-central", "fd-complex-step", "manual"],
        "sizes": [1, 2],
        "options": rt.behaviors({"engine": "fast", "fd-forward": "sleep_forever",
                                 "fd-central": "raise_error", "fd-complex-step": "sigkill_self",
                                 "manual": "fast"}),
    }], timeout_s=1.5)
    summary = run_suite(suite, tmp_path, progress=False)
    frame = load_results(tmp_path)
    cell, phases = cells_by_backend(frame)

    assert summary.counts == {"ok": 4, "timeout": 1, "error": 2, "crashed": 2, "skipped": 1}
    assert summary.total_cells == 10 and summary.cells_run == 10
    for size in (1, 2):
        for b in ("engine", "manual"):
            assert cell[(b, size)]["status"] == "ok"
            assert phases[(b, size)] == [("prepare", "ok"), ("function", "ok"), ("gradient", "ok")]
        err = cell[("fd-central", size)]
        assert err["status"] == "error" and err["message"] == f"ValueError: boom at size {size}"
        assert "Traceback" in err["extra"]["traceback"]
        crash = cell[("fd-complex-step", size)]
        assert crash["status"] == "crashed"
        assert "SIGKILL (signal 9)" in crash["message"] and "after phase 'prepare'" in crash["message"]
        assert "about to SIGKILL myself" in crash["message"]          # the stderr tail
        assert phases[("fd-complex-step", size)] == [("prepare", "ok")]   # rows before the crash stay
    timeout = cell[("fd-forward", 1)]
    assert timeout["status"] == "timeout"
    assert "no progress for 1.5 s" in timeout["message"] and "after phase 'prepare'" in timeout["message"]
    skipped = cell[("fd-forward", 2)]
    assert skipped["status"] == "skipped"
    assert skipped["message"] == "skipped: a smaller size timed out (size 1)"
    assert ("fd-forward", 2) not in phases

    # Tidy: every column, one cell row per backend cell, no duplicate keys, run_id everywhere.
    assert list(frame.columns) == COLUMN_NAMES
    assert frame.groupby(list(CELL_COLUMNS)).apply(lambda g: (g.phase == "cell").sum()).eq(1).all()
    assert len(set(rt.key_set(frame))) == len(frame)
    assert frame.run_id.nunique() == 1 and frame.run_id.notna().all()
    # family comes from the backend's description (backends.registry), even for fault rows
    assert set(frame[frame.backend == "engine"].family) == {backends.get("engine").family}
    assert cell[("fd-forward", 1)]["family"] == cell[("fd-forward", 2)]["family"] is not None


def test_odd_cell_functions(tmp_path, rt):
    suite = rt.make_suite([{
        "backends": ["engine", "manual", "fd-forward", "fd-central", "fd-complex-step", "fd-richardson"],
        "sizes": [1],
        "options": rt.behaviors({"engine": "noisy", "manual": "exit_3", "fd-forward": "nothing",
                                 "fd-central": "bad_status", "fd-complex-step": "unsupported",
                                 "fd-richardson": "fast"}),
    }])
    run_suite(suite, tmp_path, progress=False)
    frame = load_results(tmp_path)
    cell, phases = cells_by_backend(frame)
    assert cell[("engine", 1)]["status"] == "ok"                  # prints did not break the protocol
    assert len(phases[("engine", 1)]) == 3
    assert cell[("manual", 1)]["status"] == "crashed"
    assert "exited with status 3" in cell[("manual", 1)]["message"]
    assert cell[("fd-forward", 1)]["status"] == "error"
    assert "without yielding any rows" in cell[("fd-forward", 1)]["message"]
    assert phases[("fd-central", 1)] == [("gradient", "error")]
    bad = cell[("fd-central", 1)]["message"]
    assert "bad row" in bad and "splendid" in bad
    # a cell-level status from the cell function is the cell row (no second one)
    assert cell[("fd-complex-step", 1)]["status"] == "unsupported"
    assert cell[("fd-complex-step", 1)]["message"] == "cannot do this one"
    assert ("fd-complex-step", 1) not in phases
    assert cell[("fd-richardson", 1)]["status"] == "ok"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"       # a zombie is dead
    except FileNotFoundError:
        return False


def test_timeout_kills_the_whole_process_group(tmp_path, rt):
    pidfile = tmp_path / "child.pid"
    suite = rt.make_suite([{
        "backends": ["engine", "manual", "fd-forward"], "sizes": [1],
        "options": {"engine": {"behavior": "spawn_child_and_sleep", "pidfile": str(pidfile)},
                    "manual": {"behavior": "allocate_until_killed", "cap_mb": 200},
                    "fd-forward": {"behavior": "fast"}},
    }], timeout_s=1.5)
    summary = run_suite(suite, tmp_path / "results", progress=False)
    assert summary.counts == {"timeout": 2, "ok": 1}
    child = int(pidfile.read_text())
    deadline = time.time() + 5
    while _alive(child) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the worker's child survived the timeout"


def test_memory_limit_turns_runaway_allocation_into_an_error_row(tmp_path, rt):
    pytest.importorskip("resource", reason="memory limits need the resource module (POSIX)")
    suite = rt.make_suite([{
        "backends": ["engine", "manual"], "sizes": [1],
        "options": {"engine": {"behavior": "allocate_until_killed", "cap_mb": 3000},
                    "manual": {"behavior": "fast"}},
    }], memory_limit_mb=700, timeout_s=10)
    summary = run_suite(suite, tmp_path, progress=False)
    cell, _ = cells_by_backend(load_results(tmp_path))
    assert cell[("engine", 1)]["status"] in ("error", "crashed")
    assert "MemoryError" in cell[("engine", 1)]["message"] or cell[("engine", 1)]["status"] == "crashed"
    assert cell[("manual", 1)]["status"] == "ok"
    assert summary.counts["ok"] == 1


def test_block_timeout_overrides_the_suite_timeout(tmp_path, rt):
    suite = rt.make_suite([
        {"backends": ["engine"], "sizes": [1], "timeout_s": 0.5,
         "options": rt.behaviors({"engine": "sleep_forever"})},
        {"backends": ["manual"], "sizes": [1], "options": rt.behaviors({"manual": "fast"})},
    ], timeout_s=30)
    summary = run_suite(suite, tmp_path, progress=False)
    assert summary.counts == {"timeout": 1, "ok": 1}
    cell, _ = cells_by_backend(load_results(tmp_path))
    assert "no progress for 0.5 s" in cell[("engine", 1)]["message"]
