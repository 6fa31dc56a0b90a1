"""compare(timeout_s=T) bounds the work a size's cells share (the methods' imports, the
accuracy reference) by T too: a function that hangs there took 141 s with ``timeout_s=6``
(the runner's two-minute setup limit), and the row named only the cell's limit."""
from __future__ import annotations

import time
import warnings

import numpy as np

import diffcompare
from diffcompare.runner import run


def hangs(xp, x):
    time.sleep(300)                   # finite, so a regression fails instead of hanging
    return xp.sum(x)


def test_a_function_that_hangs_in_the_shared_setup_meets_the_timeout(monkeypatch):
    monkeypatch.setattr(run, "CONTRACT_READ_S", 0.2)     # the parent's read of its xp names
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                  # that read's note: not this test's
        table = diffcompare.compare(hangs, make_inputs=lambda size, seed: (np.ones(size),),
                                    sizes=[3], backends=["fd-central"], timeout_s=3, samples=1)
    (row,) = table.to_dict("records")
    assert row["status"] == "timeout"
    assert "no progress for 3 s (the cell limit)" in row["message"]
    assert "shared setup had timed out first" in row["message"]
    assert "no progress for 3 s, the setup limit" in row["message"]
