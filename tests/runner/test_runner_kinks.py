"""A user's function whose inputs reach a kink: every method's row says so, and neither the
winners nor the accuracy study score the methods' conventions there as errors."""
from __future__ import annotations

import numpy as np

from diffcompare.problems import validity
from diffcompare.results import load
from diffcompare.runner import run_suite
from diffcompare.studies import accuracy

BACKENDS = ["engine", "torch", "jax-jit", "fd-central", "fd-complex-step", "sympy", "symengine"]


def test_every_methods_row_carries_the_kink_reached_and_nothing_is_crowned_there(tmp_path, rt):
    suite = rt.make_suite([{"problems": ["runner_test_kink"], "backends": BACKENDS, "sizes": [3, 4]}],
                       name="kinks", timeout_s=60.0, cell_function="diffcompare.measure.cell:measure_cell",
                       cell_options={"samples": 2, "min_sample_s": 0.001,
                                                 "cache_dir": str(tmp_path / "refs")})
    run_suite(suite, tmp_path, progress=False, run_studies=False)
    results = load(tmp_path)
    rows = results.rows
    at_kink = rows[rows["size"] == 4]
    assert set(at_kink.backend) == set(BACKENDS)
    # every row of every method of the cell at the kink: its note, the op and the line
    for _, row in at_kink.iterrows():
        assert validity.at_kink(row.message), (row.backend, row.phase, row.message)
        assert "abs at x = 0 (1 of 4 elements) at problems_for_tests.py:" in row.message
        assert "maximum at a tie" in row.message
        assert row.extra["kinks"] and row.extra["kinks"][0].startswith("maximum at a tie")
    # the refusals keep their reason first
    complex_step = at_kink[(at_kink.backend == "fd-complex-step") & (at_kink.phase == "cell")]
    assert complex_step.message.iloc[0].startswith("complex step needs a complex-analytic")
    # away from the kink (size 3): no note on any row
    assert not rows[rows["size"] == 3].message.map(validity.at_kink).any()

    cells = results.cells
    ok = cells[(cells["size"] == 4) & (cells.status == "ok")]
    assert {"engine", "torch", "fd-central", "sympy"} <= set(ok.backend)
    assert ok.message.map(validity.at_kink).all()
    # the traced evaluation is the group's setup, not a method's: central differences count 2n
    assert ok.set_index("backend").evaluations["fd-central"] == 8
    # at the kink the methods' conventions differ (JAX: abs'(0) = 1, the engine and torch 0) ...
    if "jax-jit" in set(ok.backend):
        assert ok.set_index("backend").error_rho["jax-jit"] > 0.1
    # ... so no method is crowned most accurate there, while timing is still ranked
    w = results.winners()
    criteria = {size: set(w[w["size"] == size].criterion) for size in (3, 4)}
    assert "most accurate" not in criteria[4] and "fastest exact" in criteria[4]
    assert "most accurate" in criteria[3]
    # and the accuracy study does not check the methods against their bounds there
    table = accuracy.analyze(rows)
    at4 = table[table["size"] == 4]
    assert not at4.smooth.any() and not at4.checked.any()
    assert table[table["size"] == 3].smooth.all()
    assert np.isfinite(at4[at4.backend == "engine"].error_rho).all()
