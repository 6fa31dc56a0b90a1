"""The results tables are documented column by column, with units, in one place each
(``CELLS_TABLE_DOCS``, the row schema's ``COLUMNS``), and docs/results.md is rendered from
them: a column added to a table without its documentation fails here."""
from __future__ import annotations

from pathlib import Path

from diffcompare.results import schema
from diffcompare.results.cells import (CELLS_TABLE_COLUMNS, CELLS_TABLE_DOCS, DOCS_PAGE,
                                       PHASE_MEASURES, markdown)

ROOT = Path(__file__).resolve().parents[2]


def test_the_cells_table_is_documented_exactly_column_by_column():
    assert list(CELLS_TABLE_DOCS) == CELLS_TABLE_COLUMNS
    for name, (unit, meaning) in CELLS_TABLE_DOCS.items():
        assert meaning.strip(), name
        if name.endswith("_s"):
            assert unit == "s", name
        if name.endswith("_bytes"):
            assert unit == "bytes", name


def test_every_row_column_with_a_unit_in_its_name_says_it():
    for column in schema.COLUMNS:
        if column.name.endswith("_s") or column.name == "time_samples":
            assert column.unit == "s", column.name
        if column.name.endswith("_bytes"):
            assert column.unit == "bytes", column.name


def test_each_measured_cells_column_names_a_row_column():
    row_columns = set(schema.COLUMN_NAMES)
    for phase, mapping in PHASE_MEASURES.items():
        assert phase in schema.PHASES
        assert set(mapping) <= row_columns, phase


def test_the_docs_page_is_rendered_from_the_tables():
    page = (ROOT / DOCS_PAGE).read_text(encoding="utf-8")
    assert page == markdown(), (
        f"{DOCS_PAGE} is out of date: regenerate it with `python -c \"from "
        "diffcompare.results.cells import markdown; print(markdown(), end='')\" > docs/results.md`")
    for name in CELLS_TABLE_COLUMNS + schema.COLUMN_NAMES:
        assert f"| `{name}` |" in page, name


def test_the_operators_table_is_documented_exactly_column_by_column():
    from diffcompare.results.cells import OPERATORS_TABLE_DOCS, operators_table

    assert list(operators_table(None).columns) == list(OPERATORS_TABLE_DOCS)
    for name, (unit, meaning) in OPERATORS_TABLE_DOCS.items():
        assert meaning.strip(), name
        if name.endswith("_s"):
            assert unit == "s", name
        if name.endswith("_bytes"):
            assert unit == "bytes", name
    page = markdown()
    assert "## The operators table" in page and "| `colour_lower_bound` | count |" in page
