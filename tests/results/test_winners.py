"""winners(): compared only over the cells every method ran, ties within a stated tolerance."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from diffcompare.results import WINNER_COLUMNS, winners

EPS = np.finfo(np.float64).eps


def _cell(backend, family, size=4, seed=0, t=1e-5, q=None, rho=1e-16, peak=1000, source="tracemalloc",
          problem="rosenbrock", dtype="float64", status="ok"):
    q1, q3 = q if q is not None else (t * 0.95, t * 1.05)
    return dict(problem=problem, size=size, seed=seed, dtype=dtype, backend=backend, family=family,
                status=status, gradient_s=t, gradient_q1_s=q1, gradient_q3_s=q3, gradient_iqr_s=q3 - q1,
                error_rho=rho, peak_bytes=peak, memory_source=source)


def _get(w, criterion, size=4, problem="rosenbrock"):
    sel = w[(w.criterion == criterion) & (w["size"] == size) & (w.problem == problem)]
    assert len(sel) == 1
    return sel.iloc[0]


def test_a_method_that_skipped_the_large_sizes_is_not_compared_there():
    cells = pd.DataFrame([
        _cell("sympy", "symbolic", size=4, rho=0.0),
        _cell("engine", "engine", size=4, rho=3e-16),
        _cell("engine", "engine", size=256, rho=4e-15),
        _cell("jax-jit", "jax", size=256, rho=2e-15),
        _cell("sympy", "symbolic", size=256, status="timeout", rho=None),
    ])
    w = winners(cells)
    assert list(w.columns) == WINNER_COLUMNS
    at4, at256 = _get(w, "most accurate", 4), _get(w, "most accurate", 256)
    assert at4.winners == ("sympy", "engine")           # 0 and 3e-16: within 4 ulps, tied
    assert at4.best == 0.0 and "4 ulps" in at4.tolerance
    assert at256.winners == ("jax-jit",) and at256.compared == ("jax-jit", "engine")
    assert "sympy" not in at256.compared


def test_only_the_seeds_every_method_ran_are_compared():
    cells = pd.DataFrame([
        _cell("engine", "engine", seed=0, rho=1e-16), _cell("engine", "engine", seed=1, rho=1e-10),
        _cell("torch", "torch", seed=0, rho=2e-16),
    ])
    row = _get(winners(cells, criteria=["most accurate"]), "most accurate")
    assert row.seeds == (0,) and row.winners == ("engine", "torch")   # seed 1's 1e-10 not compared


def test_timing_ties_are_overlapping_interquartile_ranges_and_fd_is_not_exact():
    cells = pd.DataFrame([
        _cell("engine", "engine", t=2.0e-5, q=(1.9e-5, 2.2e-5)),
        _cell("jax-jit", "jax", t=1.8e-5, q=(1.7e-5, 1.95e-5)),       # overlaps the engine's
        _cell("torch", "torch", t=5e-5, q=(4.8e-5, 5.2e-5)),
        _cell("fd-central", "finite-difference", t=1e-6, q=(0.9e-6, 1.1e-6)),
    ])
    row = _get(winners(cells), "fastest exact")
    assert row.winners == ("jax-jit", "engine") and row.best == pytest.approx(1.8e-5)
    assert row.compared == ("jax-jit", "engine", "torch")
    assert "interquartile" in row.tolerance


def test_memory_ties_and_mixed_sources_are_said():
    cells = pd.DataFrame([
        _cell("engine", "engine", peak=10_000), _cell("manual", "manual", peak=10_400),
        _cell("jax-jit", "jax", peak=50_000, source="jax-memory-analysis"),
        _cell("torch", "torch", peak=None, source=None),
    ])
    row = _get(winners(cells), "least memory")
    assert row.winners == ("engine", "manual")
    assert "mixed memory sources: jax-memory-analysis, tracemalloc" in row.note
    assert "no peak_bytes for torch" in row.note


def test_float32_accuracy_ties_use_float32_ulps():
    cells = pd.DataFrame([_cell("engine", "engine", dtype="float32", rho=1e-7),
                          _cell("torch", "torch", dtype="float32", rho=4e-7),
                          _cell("jax-jit", "jax", dtype="float32", rho=1e-5)])
    row = _get(winners(cells, criteria=["most accurate"]), "most accurate")
    assert row["dtype"] == "float32" and row.winners == ("engine", "torch")


def test_nothing_to_compare_and_bad_criteria():
    assert list(winners(pd.DataFrame()).columns) == WINNER_COLUMNS
    with pytest.raises(ValueError, match="unknown criteria"):
        winners(pd.DataFrame([_cell("engine", "engine")]), criteria=["prettiest"])


def test_members_of_an_agreement_reference_are_not_ranked_against_it():
    import pandas as pd

    from diffcompare.results import winners

    agreement = ("float64 agreement of exact methods (engine, torch; max rho 0.0e+00; "
                 "its members are not ranked against it)")
    base = dict(problem="p", size=4, seed=0, dtype="float64", status="ok", reference=agreement)
    cells = pd.DataFrame([
        dict(base, backend="engine", family="engine", error_rho=0.0),
        dict(base, backend="torch", family="torch", error_rho=0.0),
        dict(base, backend="fd-central", family="finite-difference", error_rho=1e-10),
        dict(base, backend="jax-jit", family="jax", error_rho=2e-16),
    ])
    row = winners(cells, criteria=("most accurate",)).iloc[0]
    assert row["winners"] == ("jax-jit",) and set(row["compared"]) == {"jax-jit", "fd-central"}
    assert "not ranked against their own agreement: engine, torch" in row["note"]


def test_rounding_level_accuracy_is_a_tie_not_a_winner():
    """rosenbrock n=256: jax-jacfwd alone was crowned for 6.7e-16 against 1.9e-15; all four
    exact methods are at the function's rounding level, so they tie; fd-central does not."""
    cells = pd.DataFrame([
        _cell("jax-jacfwd", "jax", rho=6.7e-16), _cell("jax-jit", "jax", rho=1.9e-15),
        _cell("engine", "engine", rho=1.9e-15), _cell("torch", "torch", rho=1.5e-15),
        _cell("fd-central", "finite-difference", rho=3e-10),
    ])
    w = _get(winners(cells), "most accurate")
    assert set(w.winners) == {"jax-jacfwd", "jax-jit", "engine", "torch"}
    assert w.winners[0] == "jax-jacfwd" and "rounding level" in w.tolerance


def test_one_wrong_exact_method_does_not_raise_the_rounding_floor():
    cells = pd.DataFrame([
        _cell("jax-jacfwd", "jax", rho=6.7e-16), _cell("jax-jit", "jax", rho=1.9e-15),
        _cell("engine", "engine", rho=1e-6), _cell("torch", "torch", rho=1.5e-15),
    ])
    w = _get(winners(cells), "most accurate")
    assert "engine" not in w.winners and set(w.winners) == {"jax-jacfwd", "jax-jit", "torch"}


def test_two_exact_methods_give_no_rounding_floor_only_ulps():
    cells = pd.DataFrame([_cell("jax-jacfwd", "jax", rho=6.7e-16), _cell("engine", "engine", rho=1.9e-15)])
    assert _get(winners(cells), "most accurate").winners == ("jax-jacfwd",)


def test_interpreter_sized_memory_differences_tie():
    """2.6 KiB against 9 KiB is the interpreter's overhead (a few small objects), not a
    ranking; 60 KB is a difference."""
    cells = pd.DataFrame([_cell("engine", "engine", peak=2662), _cell("manual", "manual", peak=9000),
                          _cell("torch", "torch", peak=60_000)])
    w = _get(winners(cells), "least memory")
    assert w.winners == ("engine", "manual")


def test_a_reduced_precision_variant_is_not_the_fastest_exact_method():
    """On an H200 jax-jit-tf32 (TF32 products, ρ ≈ 1e-4) was the fastest on a float32 MLP;
    its family (jax) is exact, the method is not: the cells table's ``exact`` says so."""
    from diffcompare.results.cells import cells_table
    from diffcompare.results.catalog import describe_backend

    cells = pd.DataFrame([
        {**_cell("jax-jit", "jax", t=6e-4, rho=1e-7, dtype="float32"), "exact": True},
        {**_cell("jax-jit-tf32", "jax", t=4e-4, rho=1e-4, dtype="float32"), "exact": False},
        {**_cell("engine", "engine", t=0.12, rho=3e-6, dtype="float32"), "exact": True},
    ])
    fastest = _get(winners(cells), "fastest exact")
    assert fastest.winners == ("jax-jit",) and "jax-jit-tf32" not in fastest.compared
    # the column comes from catalog.json's description of each method, else from its family
    from diffcompare.results.schema import make_row

    rows = pd.DataFrame([make_row(run_id="r", problem="rosenbrock", size=4, seed=0, backend=b,
                                  family="jax", dtype="float32", phase="cell", status="ok")
                         for b in ("jax-jit", "jax-jit-tf32")])
    catalog = {"backends": {b: describe_backend(b) for b in ("jax-jit", "jax-jit-tf32")}}
    table = cells_table(rows, catalog).set_index("backend")
    assert table.loc["jax-jit", "exact"] and not table.loc["jax-jit-tf32", "exact"]
    assert cells_table(rows).set_index("backend")["exact"].all()      # no catalog: by family
