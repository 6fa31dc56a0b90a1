"""expression_swell's MLP rows: tree size (predicted), reverse program, SymEngine and engine side by side."""
from diffcompare.studies import expression_swell


def test_mlp_rows_put_the_sizes_side_by_side():
    (row,) = expression_swell._mlp_rows((2,), time_limit_s=0.0)
    assert row["kind"] == "mlp" and row["width"] == 2 and row["n_inputs"] == 16
    assert row["ops_gradient_reverse"] <= 5 * row["ops_function_reverse"]
    # the per-variable tree is predicted an order of magnitude above the function
    assert row["predicted_ops_gradient"] > 10 * row["ops_function"]
    assert "sympy-cse not run: predicted" in row["message"]
    assert row["engine_nodes"] == 12          # the engine's graph is per array op, whatever the width
    if "ops_gradient_symengine" in row:
        assert row["ops_gradient_symengine"] <= 5 * row["ops_function_symengine"]


def test_the_cheap_gradient_finding_fails_when_the_program_swells():
    import pandas as pd

    df = pd.DataFrame([{"kind": "mlp", "width": 1, "ops_function_reverse": 100, "ops_gradient_reverse": 900,
                        "k": None, "ops_gradient": None, "ops_gradient_cse": None, "ops_function_cse": None,
                        "engine_nodes": 12, "status": "ok"}], columns=expression_swell.COLUMNS)
    found = {f.name: f for f in expression_swell.check(df)}
    assert found["reverse accumulation keeps the cheap-gradient bound"].ok is False
