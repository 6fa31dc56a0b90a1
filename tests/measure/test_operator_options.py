"""A cell's ``backend_options`` reach its operator rows, as they reach its gradient."""
import pytest

pytest.importorskip("scipy.sparse", reason="the sparse Jacobian needs scipy (the `sparse` extra)")
pytest.importorskip("networkx", reason="the sparse Jacobian needs networkx (the `sparse` extra)")


@pytest.mark.parametrize("method", ["fd-forward", "fd-central"])
def test_a_step_option_reaches_the_fd_operator_rows(tmp_path, method):
    from diffcompare.measure.cell import measure_cell

    def rows(**backend_options):
        opts = {"samples": 1, "min_sample_s": 0.0, "cache_dir": str(tmp_path),
                "operators": ("jacobian", "jacobian_sparse"), "backend_options": backend_options}
        return {r["phase"]: r for r in measure_cell("weighted_vector", 3, 0, method, options=opts)}

    default, coarse = rows(), rows(step=0.25)
    # y = 3a + 2b² + log c: a step of 0.25 |b| leaves an error of order 1 in 4b (forward),
    # of order 0.25² in log c's (central); the default step, ~1e-8 and ~1e-5 relative
    for phase in ("gradient", "jacobian", "jacobian_sparse"):
        assert default[phase]["status"] == coarse[phase]["status"] == "ok", coarse[phase]
        assert default[phase]["error_rho"] < 1e-6 < coarse[phase]["error_rho"], phase
    assert coarse["jacobian"]["error_rho"] == pytest.approx(coarse["gradient"]["error_rho"],
                                                            rel=1e-6)
