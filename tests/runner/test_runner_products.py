"""Derivative operators through the runner's worker: an operator that raises or is unsupported
gives its own row, and the cell keeps its gradient rows and its ok status."""
from __future__ import annotations

from diffcompare.results import load


def test_a_raising_or_unsupported_product_keeps_the_cells_other_rows(tmp_path, rt):
    timing = {"samples": 2, "min_sample_s": 0.001, "cache_dir": str(tmp_path / "refs")}
    suite = rt.make_suite([{"problems": ["runner_test_cubes"], "backends": ["engine", "fd-forward"],
                            "sizes": [3], "options": {"engine": timing, "fd-forward": timing}}],
                          timeout_s=120, cell_function="tests.runner.cells:product_raises")
    from diffcompare.runner import run_suite

    run_suite(suite, tmp_path / "out", progress=False, run_studies=False)
    results = load(tmp_path / "out")
    rows = {(r["backend"], r["phase"]): r for r in results.rows.to_dict("records")}

    for backend in ("engine", "fd-forward"):
        assert [p for b, p in rows if b == backend] == ["prepare", "function", "gradient",
                                                         "hessian_diagonal", "cell"]
        assert rows[(backend, "gradient")]["status"] == "ok"
        assert rows[(backend, "cell")]["status"] == "ok"
    fault = rows[("engine", "hessian_diagonal")]
    assert fault["status"] == "error"
    assert "RuntimeError: injected hessian_diagonal fault" in fault["message"]
    assert "Traceback" in fault["extra"]["traceback"]
    assert rows[("engine", "cell")]["message"] == "gradient ok; hessian_diagonal error (see its row)"
    refused = rows[("fd-forward", "hessian_diagonal")]
    assert refused["status"] == "unsupported" and "no hessian_diagonal method" in refused["message"]

    cells = results.cells.set_index("backend")
    assert list(cells["status"]) == ["ok", "ok"] and cells["gradient_s"].notna().all()

    # the results layer's table of products, and the report's view of it
    ops = results.operators().set_index("backend")
    assert list(ops["operator"]) == ["hessian_diagonal"] * 2
    assert list(ops["status"]) == ["error", "unsupported"]
    assert ops["evaluate_s"].isna().all() and ops["gradient_s"].notna().all()
    from diffcompare.report.sections import operators

    body = str(operators.build(results).body)
    assert "Operators measured" in body
    assert "injected hessian_diagonal fault" in body and "no hessian_diagonal method" in body
