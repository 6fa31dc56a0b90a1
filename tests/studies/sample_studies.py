"""Tiny studies for the integration tests: one that holds, one that raises, one that hangs,
one whose process dies, and one that reads the grid (named as "tests.studies.sample_studies:GOOD")."""
from __future__ import annotations

import os
import time

from diffcompare.studies import Finding


class GOOD:
    NAME, TITLE, EXPECTED = "good", "a study that holds", "two plus two is four"

    @staticmethod
    def run(out_dir, quick=False):
        import pandas as pd

        return pd.DataFrame({"a": [2], "b": [2], "sum": [4], "quick": [quick]})

    @staticmethod
    def check(df):
        return [Finding("sum", "4", str(int(df["sum"].iloc[0])), int(df["sum"].iloc[0]) == 4)]


class RAISES(GOOD):
    NAME = "raises"

    @staticmethod
    def run(out_dir, quick=False):
        raise RuntimeError("this study is broken on purpose")


class HANGS(GOOD):
    NAME = "hangs"

    @staticmethod
    def run(out_dir, quick=False):
        time.sleep(3600)


class CRASHES(GOOD):
    NAME = "crashes"

    @staticmethod
    def run(out_dir, quick=False):
        os._exit(7)


class COUNTS_CELLS:
    """An analyze study: how many finished cells the grid has."""

    NAME, TITLE, EXPECTED = "counts", "counts grid cells", "at least one finished cell"

    @staticmethod
    def analyze(results):
        import pandas as pd

        cells = results[results.phase == "cell"]
        return pd.DataFrame({"cells": [len(cells)], "ok": [int((cells.status == "ok").sum())]})

    @staticmethod
    def check(df):
        n = int(df.cells.iloc[0])
        return [Finding("cells", "≥ 1", str(n), n >= 1)]
