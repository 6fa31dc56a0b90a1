"""A study's declared figures and tables are recorded by the run beside its rows and read back
by the results layer (what the report draws), and the seed study's check flags an output the
two libraries print differently without a known reason."""
from __future__ import annotations

import types

import pandas as pd

from diffcompare.results.studies import read_studies
from diffcompare.studies import View, record_views, seeds


def test_views_are_recorded_and_read_back(tmp_path):
    frame = pd.DataFrame({"x": [1, 2, 3], "y": [10.0, 20.0, 30.0]})
    study = types.SimpleNamespace(
        FIGURES=(View("as-is", "the rows", plot="fd_steps"),
                 View("doubled", "twice y", plot="float_dtype_bars", data=lambda f: f.assign(y=2 * f.y))),
        TABLES=(View("total", data=lambda f: pd.DataFrame({"total": [f.y.sum()]})),))
    (tmp_path / "studies").mkdir()
    frame.to_csv(tmp_path / "studies" / "mine.csv", index=False)
    views = record_views(tmp_path, "mine", study, frame)
    assert [v["csv"] for v in views["figures"]] == ["mine.csv", "mine.doubled.csv"]   # as-is: no copy
    (tmp_path / "studies" / "mine.findings.json").write_text(
        pd.Series({"study": "mine", "status": "ok", **views}).to_json(), encoding="utf-8")
    st = read_studies(tmp_path)
    assert list(st) == ["mine"]                            # a view's file is not a study of its own
    st = st["mine"]
    assert st.records_views and [(f.key, f.plot, f.caption) for f in st.figures] == [
        ("as-is", "fd_steps", "the rows"), ("doubled", "float_dtype_bars", "twice y")]
    assert st.figures[1].frame["y"].tolist() == [20.0, 40.0, 60.0]
    assert st.tables["total"]["total"].tolist() == [60.0]


def test_a_record_without_views_says_so(tmp_path):
    (tmp_path / "studies").mkdir()
    (tmp_path / "studies" / "old.findings.json").write_text('{"study": "old", "status": "ok"}')
    st = read_studies(tmp_path)["old"]
    assert not st.records_views and st.figures == [] and st.tables == {}


def test_seed_check_flags_only_unexplained_differences():
    rows = pd.DataFrame([
        {"kind": "code", "seed": "000", "key": "a", "label": "x", "engine": "1", "torch": "1", "same": True,
         "note": "", "block_note": ""},
        {"kind": "code", "seed": "000", "key": "a", "label": "v", "engine": "e", "torch": "t", "same": False,
         "note": "a version string", "block_note": ""},
        {"kind": "code", "seed": "002", "key": "c", "label": "z", "engine": "e", "torch": "t", "same": False,
         "note": "", "block_note": "the engine's .data is a NumPy array"},
        {"kind": "example", "seed": "001", "key": "b", "label": "y", "engine": "2", "torch": None, "same": None,
         "note": "", "block_note": ""}])
    (finding,) = seeds.check(rows)
    assert finding.ok is True and "3 compared, 2 differ, 0 without" in finding.measured
    bad = pd.concat([rows, rows.iloc[[1]].assign(note="", label="w")], ignore_index=True)
    (finding,) = seeds.check(bad)
    assert finding.ok is False and "a: w" in finding.measured
    (finding,) = seeds.check(rows.iloc[[3]])
    assert finding.ok is None                              # nothing compared: no torch
