"""Winners at a kink: where a cell's inputs put an op exactly on its kink (its message
carries validity's kink note) no method is crowned most accurate; timing is still ranked."""
from __future__ import annotations

import pandas as pd

from diffcompare.problems.validity import KINK_NOTE
from diffcompare.results import winners

NOTE = f"{KINK_NOTE}: abs at x = 0 (1 of 4 elements) at model.py:3: ..."


def cells(message):
    rows = [("engine", "engine", 1e-5, 0.0), ("jax-jit", "jax", 2e-5, 0.5),
            ("fd-central", "finite-difference", 5e-6, 1e-10)]
    return pd.DataFrame([{"problem": "p", "size": 4, "seed": 0, "dtype": "float64", "backend": b,
                          "family": f, "status": "ok", "message": message, "gradient_s": t,
                          "gradient_q1_s": t * 0.99, "gradient_q3_s": t * 1.01, "error_rho": rho,
                          "peak_bytes": 1000, "memory_source": "tracemalloc"}
                         for b, f, t, rho in rows])


def test_no_most_accurate_at_a_kink_but_timing_and_memory_are_ranked():
    at = winners(cells(NOTE)).set_index("criterion")
    assert "most accurate" not in at.index
    assert at.loc["fastest exact", "winners"] == ("engine",)
    assert "least memory" in at.index
    away = winners(cells(None)).set_index("criterion")
    assert away.loc["most accurate", "winners"] == ("engine",)
