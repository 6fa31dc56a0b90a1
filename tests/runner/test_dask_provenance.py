"""Rows from several hosts: the report's speed section says so; rows from one host: silence."""
from __future__ import annotations

import json

from diffcompare.results.provenance import mixed_hosts_message
from diffcompare.results.folder import load_results
from diffcompare.results.schema import make_row


def _write(folder, hosts):
    folder.mkdir()
    rows = []
    for size, host in zip((4, 16, 64), hosts):
        for phase, t in (("function", 1e-5 * size), ("gradient", 3e-5 * size)):
            rows.append(make_row(run_id="r", problem="rosenbrock", size=size, seed=0, backend="engine",
                                 family="engine", dtype="float64", phase=phase, status="ok",
                                 time_median_s=t, error_rel=1e-16, host=host, executor="dask"))
        rows.append(make_row(run_id="r", problem="rosenbrock", size=size, seed=0, backend="engine",
                             family="engine", dtype="float64", phase="cell", status="ok",
                             host=host, executor="dask"))
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_the_speed_section_warns_when_timings_come_from_several_hosts(tmp_path):
    from diffcompare.report.data import load
    from diffcompare.report.sections import speed

    mixed = _write(tmp_path / "mixed", ["node-a", "node-b", "node-a"])
    message = mixed_hosts_message(load_results(mixed))
    assert message.startswith("Timings come from 2 hosts (node-a: 4 rows, node-b: 2 rows)")
    assert "Timings come from 2 hosts" in str(speed.build(load(mixed)).body)

    one = _write(tmp_path / "one", ["node-a"] * 3)
    assert mixed_hosts_message(load_results(one)) is None
    assert "hosts" not in str(speed.build(load(one)).body)
