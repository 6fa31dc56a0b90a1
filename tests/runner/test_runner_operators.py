"""Operators through the real runner: a suite's ``operators`` adds them to every cell; native
(operator, method) pairs are ok and exact, the rest ``unsupported`` with the reason, a sparse
Jacobian of a banded function takes the optimal number of colours; the run records the
capability table in catalog.json and the report's Operators section reads it from there."""
from __future__ import annotations

import json

import pytest

from diffcompare.results import load

OPERATORS = ["jacobian", "jacobian_sparse", "hessian"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    import types

    from tests.runner.conftest import make_suite

    out = tmp_path_factory.mktemp("ops")
    timing = {"samples": 2, "min_sample_s": 0.001, "cache_dir": str(out / "refs")}
    suite = make_suite([{"problems": ["runner_test_banded", "runner_test_cubes"],
                         "backends": ["engine", "torch", "fd-forward"], "sizes": [6]}],
                       timeout_s=120, cell_function="diffcompare.measure.cell:measure_cell",
                       cell_options=timing, operators=OPERATORS)
    from diffcompare.runner import run_suite

    run_suite(suite, out / "res", progress=False, run_studies=False)
    return types.SimpleNamespace(folder=out / "res", results=load(out / "res"))


def _rows(run):
    table = run.results.operators()
    return {(r["problem"], r["backend"], r["operator"]): r for r in table.to_dict("records")}


def test_native_pairs_are_ok_and_exact_the_others_say_why(run):
    rows = _rows(run)
    for b in ("engine", "torch"):
        for op in OPERATORS[:2]:
            r = rows[("runner_test_banded", b, op)]
            assert r["status"] == "ok" and r["error_rho"] < 1e-10, r
            assert r["reference"].startswith("cᵀJ against the reference VJP")
            assert r["prepare_s"] > 0 and r["evaluate_s"] > 0 and r["how"]
        r = rows[("runner_test_cubes", b, "hessian")]
        assert r["status"] == "ok" and r["error_rho"] < 1e-10, r
        assert "central differences" in r["reference"] and "exact gradient program" in r["reference"]
    assert rows[("runner_test_banded", "fd-forward", "jacobian")]["status"] == "ok"
    refused = rows[("runner_test_cubes", "fd-forward", "hessian")]
    assert refused["status"] == "unsupported" and "fd-central" in refused["message"]
    other = rows[("runner_test_cubes", "engine", "jacobian")]
    assert other["status"] == "unsupported" and "needs a vector output" in other["message"]
    other = rows[("runner_test_banded", "torch", "hessian")]
    assert other["status"] == "unsupported" and "needs a scalar output" in other["message"]
    # one Hessian reference for the group, made before the first method and read by each
    refs = sorted(p.name for p in (run.folder.parent / "refs").glob("runner_test_cubes-*-hessian.json"))
    assert len(refs) == 1, refs
    labels = {rows[("runner_test_cubes", b, "hessian")]["reference"] for b in ("engine", "torch")}
    assert len(labels) == 1
    # the problem's own operator (the Hessian diagonal) is measured too, once
    assert rows[("runner_test_cubes", "engine", "hessian_diagonal")]["status"] == "ok"
    assert set(run.results.cells["status"]) == {"ok"}       # an operator's row never fails a cell


def test_sparse_rows_carry_colours_at_the_lower_bound_on_a_banded_jacobian(run):
    rows = _rows(run)
    for b in ("engine", "torch", "fd-forward"):
        r = rows[("runner_test_banded", b, "jacobian_sparse")]
        assert r["colours"] == r["colour_lower_bound"] == 2, r
        assert r["pattern_nnz"] == 10 and r["passes"] >= 2 and r["mode"]
        assert r["detect_s"] > 0 and r["colour_s"] >= 0
    assert rows[("runner_test_banded", "engine", "jacobian")]["colours"] != \
        rows[("runner_test_banded", "engine", "jacobian")]["colours"]     # NaN: dense


def test_the_report_section_reads_capabilities_from_catalog_json(run, monkeypatch):
    catalog = json.loads((run.folder / "catalog.json").read_text())
    caps = catalog["operator_capabilities"]
    assert caps["hessian"]["torch"].startswith("native: ")
    assert caps["hessian"]["fd-forward"].startswith("unsupported: ")
    from diffcompare import operators
    from diffcompare.report.sections import operators as section

    def gone(*a, **k):
        raise RuntimeError("registries unavailable")

    monkeypatch.setattr(operators, "capabilities", gone)
    body = str(section.build(load(run.folder)).body)
    assert "Which method computes which operator" in body and "Operators measured" in body
    assert 'title="unsupported: second derivatives by differences' in body
    assert "jacobian_sparse" in body and "2 (≥ 2)" in body


def test_a_suites_unknown_operator_is_refused_listing_the_names(rt):
    from diffcompare.runner.suite import SuiteError

    with pytest.raises(SuiteError, match=r"unknown operator\(s\) 'hessain'; the operators are "
                                         r"jacobian, jacobian_sparse, hessian, hessian_sparse"):
        rt.make_suite([{"backends": ["engine"], "sizes": [3]}], operators=["hessain"])


def test_the_report_shows_hessian_growth_with_the_size():
    import types

    import pandas as pd

    from diffcompare.report.sections import operators as section
    from diffcompare.results.cells import OPERATORS_TABLE_COLUMNS

    def row(size, backend, operator, seconds, status="ok", problem="rosen"):
        r = dict.fromkeys(OPERATORS_TABLE_COLUMNS, float("nan"))
        r.update(problem=problem, size=size, seed=0, backend=backend, dtype="float64", message="",
                 operator=operator, status=status, evaluate_s=seconds)
        return r

    frame = pd.DataFrame([row(10, "engine", "hessian", 1e-3), row(100, "engine", "hessian", 1e-1),
                          row(10, "torch", "hessian_sparse", 2e-3),
                          row(100, "torch", "hessian_sparse", 2e-3),
                          row(100, "jax-jit", "hvp", 5e-4),
                          row(1000, "engine", "hessian", None, "unsupported"),
                          row(5, "single", "hessian", 1.0, problem="one_size")],
                         columns=OPERATORS_TABLE_COLUMNS)
    data = types.SimpleNamespace(catalog={}, operators=lambda: frame)
    body = str(section.build(data).body)
    assert "Hessian growth with the size" in body
    growth = body[body.index("Hessian growth"):]
    assert "size 10" in growth and "size 100" in growth and "size 1000" not in growth
    assert ">2.00<" in growth and ">0.00<" in growth      # n² for the dense, flat for the sparse
    assert "one_size" not in growth                        # a single size shows no growth
