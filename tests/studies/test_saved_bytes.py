"""The saved_bytes study: what the seed models' graphs keep, per node and in total, against the batch."""
from __future__ import annotations

import json

import pytest

from diffcompare import studies
from diffcompare.studies import saved_bytes


@pytest.fixture(scope="module")
def frame():
    return saved_bytes.run(quick=True)


def _totals(frame, model, library):
    t = saved_bytes.totals(frame)
    return t[(t.model == model) & (t.library == library)].set_index("batch")


def test_totals_are_the_textbook_bytes(frame):
    # seed 000: MulBackward0 keeps x (float32, 4 B a sample); w is 4 B
    # seed 001: 28 B a sample (mse input 4, target 4, relu result 8 = the 2nd matmul's input,
    # the 1st matmul's input 12) plus w2 (8 B) saved by the 2nd matmul; parameters 24 + 8 + 8 + 4
    for library in ("engine", "torch"):
        t0, t1 = _totals(frame, "seed000", library), _totals(frame, "seed001", library)
        assert t0["saved_bytes"].to_dict() == {1: 4, 8: 32, 64: 256, 512: 2048}
        assert t1["saved_bytes"].to_dict() == {b: 28 * b + 8 for b in (1, 8, 64, 512)}
        assert set(t0["parameter_bytes"]) == {4} and set(t1["parameter_bytes"]) == {44}
        assert t1.loc[1, "parameter_share"] == pytest.approx(44 / 80)


def test_per_sample_names_what_is_saved(frame):
    ps = saved_bytes.per_sample(frame, "seed001", "engine")
    got = {(r.node, r.tensor): (r.per_sample, r.constant, r.shared, r.parameter) for r in ps.itertuples()}
    assert got[("MseLossBackward0", "self")] == (4, 0, False, False)
    assert got[("ReluBackward0", "result")] == (8, 0, True, False)        # the matmul's input, once
    assert got[("MatmulBackward0", "other")] == (0, 8, False, True)       # w2: constant
    torch_ps = saved_bytes.per_sample(frame, "seed001", "torch")
    assert sorted(torch_ps["per_sample"]) == sorted(ps["per_sample"])
    assert ("MmBackward0", "mat2") in set(zip(torch_ps["node"], torch_ps["tensor"]))


def test_sentence_answers_the_thread(frame):
    text = saved_bytes.sentence(frame, "seed001", "engine")
    assert "28 B per sample" in text and "plus 8 B whatever the batch" in text
    assert "MatmulBackward0 other 8 B (a parameter)" in text
    assert "55% of saved + parameter bytes at batch 1, 0.3% at batch 512" in text
    assert "4 B per sample (MulBackward0 self 4 B)" in saved_bytes.sentence(frame, "seed000", "engine")


def test_checks_hold_and_fail_on_other_data(frame):
    found = {f.name: f for f in saved_bytes.check(frame)}
    assert len(found) == 10 and all(f.ok for f in found.values()), [str(f) for f in found.values()]
    assert "28 B per sample + 8 B" in found["seed001 engine: saved bytes linear in the batch"].measured
    bad = frame.copy()           # a graph that kept the square of the batch, and torch saving more
    hit = (bad.kind == "total") & (bad.model == "seed000") & (bad.library == "engine")
    bad.loc[hit, "nbytes"] = bad.loc[hit, "batch"] ** 2
    found = {f.name: f for f in saved_bytes.check(bad)}
    assert found["seed000 engine: saved bytes linear in the batch"].ok is False
    assert found["seed000: engine and torch totals"].ok is False
    assert "same tensors, different totals" in found["seed000: engine and torch totals"].measured


def test_without_torch_its_findings_say_no_data(frame):
    found = {f.name: f for f in saved_bytes.check(frame[frame.library == "engine"])}
    assert found["seed000: engine and torch totals"].ok is None
    assert found["seed001 torch: saved bytes linear in the batch"].ok is None
    assert found["seed001 engine: saved bytes linear in the batch"].ok is True


def test_bad_batches_say_what_to_pass():
    with pytest.raises(ValueError, match="two or more distinct positive integer batch sizes"):
        saved_bytes.run(batches=(8, 0))


def test_run_study_records_it_and_the_quick_suite_runs_it(tmp_path):
    from pathlib import Path

    from diffcompare.runner.suite import load_suite

    outcome = studies.run_study("saved_bytes", tmp_path, quick=True)
    assert outcome.status == "ok" and outcome.csv_path.exists()
    record = json.loads(outcome.findings_path.read_text())
    assert record["title"] == saved_bytes.TITLE and len(record["findings"]) == 10
    repo = Path(__file__).resolve().parents[2]
    assert "saved_bytes" in load_suite("quick", repo / "experiments").studies
