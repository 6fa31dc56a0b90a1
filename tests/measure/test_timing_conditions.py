"""Each timing records how undisturbed it was: the worker's share of the CPU while the samples
were taken and the host's load (rows' ``cpu_share`` and ``load_per_cpu``)."""
from __future__ import annotations

import os
import types

from diffcompare.measure import timing


def _fake_clocks(monkeypatch, wall_step, cpu_step):
    """perf_counter and process_time that advance by fixed steps per reading (the samples keep
    their own clock, bound when time_call was defined)."""
    wall, cpu = iter(range(1000)), iter(range(1000))
    fake = types.SimpleNamespace(perf_counter=lambda: next(wall) * wall_step,
                                 process_time=lambda: next(cpu) * cpu_step)
    monkeypatch.setattr(timing, "time", fake)


def test_cpu_share_is_cpu_time_over_wall_time_while_timing(monkeypatch):
    _fake_clocks(monkeypatch, wall_step=2.0, cpu_step=1.5)
    t = timing.time_call(lambda: None, min_sample_s=1e-4, samples=3)
    assert t.cpu_share == 0.75


def test_load_is_the_higher_of_before_and_after_per_cpu(monkeypatch):
    loads = iter([(3.0, 0, 0), (5.0, 0, 0)])
    monkeypatch.setattr(os, "getloadavg", lambda: next(loads))
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    t = timing.time_call(lambda: None, min_sample_s=1e-4, samples=3)
    assert t.load_per_cpu == 1.25


def test_no_load_average_is_none(monkeypatch):
    def missing():
        raise OSError("no load average here")
    monkeypatch.setattr(os, "getloadavg", missing)
    assert timing.time_call(lambda: None, min_sample_s=1e-4, samples=2).load_per_cpu is None


def test_the_function_and_gradient_rows_carry_them(monkeypatch):
    from diffcompare.measure.cell import measure_cell

    monkeypatch.setattr(os, "getloadavg", lambda: (6.0, 0, 0))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    rows = {r["phase"]: r for r in measure_cell("rosenbrock", 2, 0, "engine",
                                                 options={"min_sample_s": 1e-4, "samples": 2})}
    for phase in ("function", "gradient"):
        assert rows[phase]["load_per_cpu"] == 3.0
        assert 0 < rows[phase]["cpu_share"] < 2
    assert rows["prepare"].get("cpu_share") is None
