"""The capability table (operator × method) is generated from dense.TABLE, says for every
cell how or why not, and every native cell runs (test_dense_equivalence)."""
from __future__ import annotations

from diffcompare import backends, operators
from diffcompare.operators.dense import TABLE, Native


def test_table_covers_every_operator_and_method():
    table = operators.capabilities()
    assert list(table.index) == list(operators.OPERATORS)
    assert list(table.columns) == backends.names()
    for op in operators.OPERATORS:
        for method in backends.names():
            cell, text = TABLE[op][method], table.loc[op, method]
            if isinstance(cell, Native):
                assert text == f"native: {cell.how}" and cell.how
            else:
                assert text == f"unsupported: {cell.reason}" and cell.reason


def test_gradient_and_pullback_are_every_method_s_and_second_order_is_not():
    table = operators.capabilities()
    assert table.loc["gradient"].str.startswith("native").all()
    assert table.loc["pullback"].str.startswith("native").all()
    assert table.loc["hessian", "manual"].startswith("unsupported: hand-written")
    assert table.loc["hessian", "jax-jit"] == "native: jax.hessian (forward over reverse) under jit"


def test_available_marks_missing_libraries():
    table = operators.capabilities(available=True)
    for method, support in backends.availability().items():
        if not support and isinstance(TABLE["gradient"][method], Native):
            assert table.loc["gradient", method].startswith("unavailable: ")
