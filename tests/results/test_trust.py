"""Timing flags: loaded, noisy and non-monotone cells, each at its threshold; shown in the cells
table, the winners and the report."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from diffcompare.results import trust, winners
from diffcompare.results.trust import (MAX_IQR_FRACTION, MAX_LOAD_PER_CPU, MIN_CPU_SHARE,
                                       MONOTONE_RTOL, SIZE_STEP, flag_summary, timing_flags)


def _cell(size=4, t=1.0, q=None, iqr=None, share=None, load=None, backend="torch", seed=0,
          device=None, status="ok"):
    q1, q3 = q if q is not None else (None, None) if t is None else (t * 0.99, t * 1.01)
    return dict(problem="p", size=size, seed=seed, dtype="float64", backend=backend,
                family="torch", status=status, device=device, gradient_s=t, gradient_q1_s=q1,
                gradient_q3_s=q3, gradient_iqr_s=iqr if iqr is not None or t is None else q3 - q1,
                cpu_share=share, load_per_cpu=load)


def _flags(*cells):
    return timing_flags(pd.DataFrame(cells)).tolist()


def test_a_quiet_cell_has_no_flag_and_a_failed_one_no_timing():
    assert _flags(_cell(share=0.99, load=0.5), _cell(size=16, status="timeout", t=None)) == [None, None]


def test_loaded_below_the_cpu_share():
    assert _flags(_cell(share=MIN_CPU_SHARE)) == [None]
    got, = _flags(_cell(share=MIN_CPU_SHARE - 0.01))
    assert got == "loaded (had its CPU 89% of the time)"


def test_a_gpu_cell_waits_for_its_device_so_its_cpu_share_says_nothing():
    assert _flags(_cell(share=0.3, device="gpu:0 NVIDIA H100")) == [None]
    assert _flags(_cell(share=0.3, device="gpu:0 NVIDIA H100", load=2.0)) == ["loaded (load 2.0 per CPU)"]


def test_the_host_load_counts_where_the_cpu_share_cannot_tell():
    assert _flags(_cell(load=MAX_LOAD_PER_CPU)) == [None]
    assert _flags(_cell(load=MAX_LOAD_PER_CPU + 0.1)) == ["loaded (load 1.6 per CPU)"]
    # a worker that kept its CPU is not flagged for other processes' load
    assert _flags(_cell(share=0.99, load=3.0)) == [None]
    assert _flags(_cell(share=0.5, load=3.0)) == ["loaded (had its CPU 50% of the time, load 3.0 per CPU)"]


def test_noisy_over_the_iqr_fraction():
    assert _flags(_cell(t=1.0, iqr=MAX_IQR_FRACTION)) == [None]
    assert _flags(_cell(t=1.0, iqr=0.45)) == ["noisy (IQR 45% of median)"]


def test_non_monotone_when_a_size_step_larger_is_faster_beyond_both_iqrs():
    """torch at n = 16 faster than at n = 4 (258 µs against 526 µs): both cells flagged."""
    small, big = _cell(size=4, t=526e-6, q=(520e-6, 530e-6)), _cell(size=16, t=258e-6, q=(255e-6, 260e-6))
    assert _flags(small, big) == ["non-monotone (slower at 4 than at 16)",
                                  "non-monotone (faster at 16 than at 4)"]


def test_non_monotone_ties_at_the_boundary():
    big_q3 = 2.0
    at_boundary = big_q3 * (1 + MONOTONE_RTOL)        # faster by exactly the margin: a tie
    big = _cell(size=4 * SIZE_STEP, t=1.9, q=(1.8, big_q3))
    assert _flags(_cell(size=4, t=2.25, q=(at_boundary, 2.3)), big) == [None, None]
    beyond = _flags(_cell(size=4, t=2.25, q=(at_boundary * 1.001, 2.3)), big)
    assert beyond[1] == f"non-monotone (faster at {4 * SIZE_STEP} than at 4)"


def test_non_monotone_only_across_a_size_step_and_within_one_seed():
    near = _flags(_cell(size=4, t=3.0), _cell(size=4 * SIZE_STEP - 1, t=1.0))
    other_seed = _flags(_cell(size=4, t=3.0, seed=0), _cell(size=4 * SIZE_STEP, t=1.0, seed=1))
    other_method = _flags(_cell(size=4, t=3.0), _cell(size=4 * SIZE_STEP, t=1.0, backend="engine"))
    assert near == other_seed == other_method == [None, None]


def test_flags_add_up_and_are_summarised():
    cells = pd.DataFrame([_cell(size=4, t=3.0, share=0.5), _cell(size=16, t=1.0, iqr=0.5),
                          _cell(size=64, t=2.0, q=(1.98, 2.02)), _cell(size=256, status="error", t=None)])
    cells["timing_flags"] = timing_flags(cells)
    assert cells["timing_flags"][0] == ("loaded (had its CPU 50% of the time); "
                                        "non-monotone (slower at 4 than at 16, 64)")
    assert flag_summary(cells) == "3 of 3 timings flagged: 1 loaded, 1 noisy, 3 non-monotone"
    assert flag_summary(cells.assign(timing_flags="")) == ""


def test_a_fastest_answer_decided_by_a_flagged_timing_says_so():
    cells = pd.DataFrame([_cell(backend="jax-jit", t=1.0, share=0.5), _cell(backend="torch", t=2.0),
                          _cell(backend="engine", t=9.0, share=0.5)])
    cells["family"] = ["jax", "torch", "engine"]
    cells["timing_flags"] = timing_flags(cells)
    fastest = winners(cells, criteria=("fastest exact",)).iloc[0]
    assert fastest.winners == ("jax-jit",)
    # the winner's and the runner-up's timings decide it; engine, far behind, does not
    assert fastest.flagged == (("jax-jit", "loaded (had its CPU 50% of the time)"),)
    assert "decided by flagged timings: jax-jit (loaded" in fastest.note
    quiet = winners(cells.assign(timing_flags=""), criteria=("fastest exact",)).iloc[0]
    assert quiet.flagged == () and "flagged" not in quiet.note


def _rows(cpu_share, load):
    from diffcompare.results.schema import make_row

    key = dict(run_id="r", problem="rosenbrock", size=4, seed=0, backend="engine", dtype="float64",
               family="engine")
    timed = dict(status="ok", time_median_s=1e-5, time_iqr_s=1e-7, time_samples=[1e-5] * 3,
                 cpu_share=cpu_share, load_per_cpu=load)
    return [make_row(**key, phase="function", **timed, timed_path="the engine's tensors"),
            make_row(**key, phase="gradient", **{**timed, "cpu_share": 0.95, "load_per_cpu": 0.4}),
            make_row(**key, phase="cell", status="ok", extra={"phase_rows": 2})]


def test_the_columns_round_trip_through_a_results_folder_into_the_cells_table(tmp_path):
    from diffcompare import results
    from diffcompare.results.schema import off_schema

    rows = _rows(cpu_share=0.7, load=1.2)
    assert all(off_schema(json.loads(json.dumps(r))) is None for r in rows)
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = results.load(tmp_path)
    function = loaded.rows[loaded.rows["phase"] == "function"].iloc[0]
    assert (function["cpu_share"], function["load_per_cpu"], function["timed_path"]) == \
        (0.7, 1.2, "the engine's tensors")
    cell = loaded.cells.iloc[0]
    # the lowest share and the highest load of the function's and the gradient's timings
    assert (cell["cpu_share"], cell["load_per_cpu"]) == (0.7, 1.2)
    assert cell["timed_path"] == "the engine's tensors"
    assert cell["timing_flags"] == "loaded (had its CPU 70% of the time)"


def test_the_report_marks_a_flagged_timing_with_its_reason(tmp_path, monkeypatch):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
    import fake_results
    from diffcompare.report import render

    folder = fake_results.write(tmp_path / "results")
    lines = (folder / "results.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    for r in rows:     # rosenbrock's engine at size 64: its worker had its CPU 60% of the time
        if (r["problem"], r["backend"], r["size"], r["phase"]) == ("rosenbrock", "engine", 64, "gradient"):
            r["cpu_share"] = 0.6
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    page = render(folder, seeds=False)
    assert "1 of 28 timings flagged: 1 loaded" in page
    assert 'title="loaded (had its CPU 60% of the time)">⚠ loaded</span>' in page
    assert "⚠ flagged timing" in page         # the fastest answer at size 64 it decided
