"""Moved: the results folder is :mod:`diffcompare.results.folder` (this name stays for old imports)."""
from ..results.folder import *  # noqa: F401,F403
from ..results.folder import (ResultsError, ResultsLocked, ResultsLog, RunLock, export,  # noqa: F401
                              load_results, read_rows, read_run)
