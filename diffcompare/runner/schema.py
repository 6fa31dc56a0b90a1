"""Moved: the schema is :mod:`diffcompare.results.schema` (this name stays for old imports)."""
from ..results.schema import *  # noqa: F401,F403
from ..results.schema import CELL_COLUMNS, COLUMN_NAMES, COLUMNS, KEY_COLUMNS, STATUSES, make_row  # noqa: F401
