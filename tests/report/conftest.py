"""Fixtures of the report's tests: a synthetic results folder and a small real run.

The real run (the ``smoke`` suite plus the fast studies) is made once per test session and
shared between pytest-xdist workers through a lock file, so ``-n 2`` does not run it twice.
"""
from __future__ import annotations

import fcntl
import os
import warnings
from pathlib import Path

import pytest

import fake_results

REPO = Path(__file__).resolve().parents[2]

#: Studies that are fast enough for a test run (seconds), with their quick flag.
SMOKE_STUDIES = (("fd_steps", True), ("expression_swell", True), ("seeds", True), ("breakeven", False),
                 ("scaling", False), ("accuracy", False))


@pytest.fixture(scope="session")
def seed_record():
    """What the seed study records (``studies/seeds.json``), made once per session."""
    from diffcompare.studies import seeds

    return seeds.record()


@pytest.fixture
def synthetic_results(tmp_path):
    return fake_results.write(tmp_path / "synthetic-results")


def _shared_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


@pytest.fixture(scope="session")
def smoke_results(tmp_path_factory):
    """A real results folder: the smoke suite (rosenbrock at two sizes through the engine,
    central differences and SymPy) plus the fd_steps, expression_swell, seeds, breakeven, scaling
    and accuracy studies."""
    from diffcompare import studies
    from diffcompare.runner import run_suite
    from diffcompare.runner.suite import load_suite

    shared = _shared_dir(tmp_path_factory)
    folder = shared / "report-smoke-results"
    with open(shared / "report-smoke-results.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "DONE").exists():
            suite = load_suite("smoke", REPO / "experiments")
            run_suite(suite, folder, fresh=True, progress=False, experiments_dir=REPO / "experiments")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for name, quick in SMOKE_STUDIES:
                    studies.run_study(name, folder, quick=quick)
            (folder / "DONE").touch()
    return folder
