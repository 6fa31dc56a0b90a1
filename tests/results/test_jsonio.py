"""One writer for the results folder's JSON (results.jsonio): a row with NumPy scalars, NaN
and inf written and read back; timestamps in one format that round-trips; a study's record
written the same way (it used its own encoder and a second time format)."""
from __future__ import annotations

import datetime as dt
import json

import numpy as np

from diffcompare.results.folder import ResultsLog, load_results, scan_rows
from diffcompare.results.jsonio import dumps, iso_from_epoch, now_iso, parse_time
from diffcompare.results.schema import make_row


def test_a_row_with_numpy_scalars_nan_and_inf_is_written_and_read_back(tmp_path):
    row = make_row(problem="p", size=np.int64(4), seed=0, backend="b", dtype="float64",
                   phase="gradient", status="ok", time_median_s=np.float32(0.5),
                   error_rho=float("nan"), peak_bytes=np.int32(64), time_samples=np.array([1.0, 2.0]),
                   extra={"inf": float("inf"), "flag": np.bool_(True), "tuple": (1, 2)})
    log = ResultsLog(tmp_path)
    log.open(fresh=True)
    log.append(row)
    log.close()
    text = (tmp_path / "results.jsonl").read_text()
    assert "NaN" not in text and "Infinity" not in text            # strict JSON
    (back,), _, bad = scan_rows(tmp_path / "results.jsonl")
    assert bad == [] and back == json.loads(dumps(row))
    assert back["size"] == 4 and back["time_median_s"] == 0.5 and back["peak_bytes"] == 64
    assert back["error_rho"] is None and back["time_samples"] == [1.0, 2.0]
    assert back["extra"] == {"inf": None, "flag": True, "tuple": [1, 2]}
    assert len(load_results(tmp_path)) == 1


def test_timestamps_round_trip_in_one_format():
    stamp = iso_from_epoch(1_700_000_000.125)
    assert stamp == "2023-11-14T22:13:20.125+00:00"
    assert parse_time(stamp) == dt.datetime(2023, 11, 14, 22, 13, 20, 125000, tzinfo=dt.timezone.utc)
    assert parse_time("2023-11-14T22:13:20Z") == dt.datetime(2023, 11, 14, 22, 13, 20,
                                                             tzinfo=dt.timezone.utc)
    now = parse_time(now_iso())
    assert now.tzinfo is not None and abs((now - dt.datetime.now(dt.timezone.utc)).total_seconds()) < 60
    assert parse_time("") is None and parse_time("yesterday") is None


def test_a_study_record_uses_the_same_writer(tmp_path):
    from diffcompare.studies import read_record, write_record

    write_record(tmp_path, "scaling", status="ok", wall_s=np.float64(1.5), ratio=float("nan"))
    text = next((tmp_path / "studies").glob("scaling.findings.json")).read_text()
    assert "NaN" not in text
    record = read_record(tmp_path, "scaling")
    assert record["wall_s"] == 1.5 and record["ratio"] is None
    assert record["finished_at"] == iso_from_epoch(parse_time(record["finished_at"]).timestamp())
