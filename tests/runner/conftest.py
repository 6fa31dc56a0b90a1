"""Helpers for the runner's tests: suites over the test cell functions in cells.py."""
from __future__ import annotations

import os
import types
from pathlib import Path

import pytest

from diffcompare.runner.suite import Suite

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PROBLEMS = str(HERE / "problems_for_tests.py")
PROBLEM = "runner_test_square"
SCRIPTED = "tests.runner.cells:scripted"


@pytest.fixture(autouse=True)
def _workers_find_test_cells(monkeypatch):
    """Workers import ``tests.runner.cells`` whatever the current directory."""
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(REPO) + (os.pathsep + path if path else ""))


def make_suite(grid, *, name="runner-test", timeout_s=1.5, cell_function=SCRIPTED, **top) -> Suite:
    """A validated suite over the test problem; ``grid`` is a list of [[grid]] tables.
    A backend's ``behavior`` (see ``cells.scripted``) goes in the block's options."""
    data = {"name": name, "timeout_s": timeout_s, "cell_function": cell_function,
            "problem_modules": [PROBLEMS], **top, "grid": grid}
    for block in data["grid"]:
        block.setdefault("problems", [PROBLEM])
    return Suite.from_dict(data)


def behaviors(by_backend: dict) -> dict:
    """``options`` tables giving each backend a behaviour: behaviors({"engine": "fast"})."""
    return {backend: {"behavior": b} if isinstance(b, str) else b for backend, b in by_backend.items()}


def key_set(frame_or_rows):
    from diffcompare.results.schema import KEY_COLUMNS

    rows = frame_or_rows.to_dict("records") if hasattr(frame_or_rows, "to_dict") else frame_or_rows
    return [tuple(r[c] for c in KEY_COLUMNS) for r in rows]


@pytest.fixture
def rt():
    """The helpers above, as a fixture (test modules need not import conftest)."""
    return types.SimpleNamespace(make_suite=make_suite, behaviors=behaviors, key_set=key_set,
                                 PROBLEM=PROBLEM, PROBLEMS=PROBLEMS, SCRIPTED=SCRIPTED,
                                 REPO=REPO, HERE=HERE)
