"""Before any cell runs, the run reads which xp names each problem's function uses, by calling
it once on NumPy in the parent process.  A function that hangs there hung ``compare()`` and
``diffcompare run`` for good (a 10-minute wait, with ``timeout_s=3``): the read has a budget."""
import time
from types import SimpleNamespace

import numpy as np

from diffcompare import problems
from diffcompare.runner import run


def _groups(name):
    backend = SimpleNamespace(name="engine")
    return [SimpleNamespace(problem=name, size=3, seed=0, backends=[backend])]


def _slow(xp, x):
    time.sleep(3)                          # finite, so a regression fails instead of hanging
    return xp.sum(xp.exp(x))


def test_a_function_that_does_not_return_in_time_is_named_and_the_run_goes_on(monkeypatch):
    monkeypatch.setattr(run, "CONTRACT_READ_S", 0.2)
    problems.register(problems.Problem(name="sleeps_in_its_function", fn=_slow,
                                       make_inputs=lambda n, s: (np.ones(n),), description="slow"),
                      replace=True)
    try:
        messages = run.contract_verdicts(_groups("sleeps_in_its_function"))
    finally:
        problems.unregister("sleeps_in_its_function")
    assert messages == ["problem 'sleeps_in_its_function': its function did not return within 0.2 s on "
                        "NumPy at size 3, so the xp names it uses were not read before the run; its "
                        "cells run under their own time limits."]


def test_a_function_catching_every_exception_cannot_swallow_the_budget(monkeypatch):
    """``except Exception`` in the user's code (or in the names reader) does not stop it."""
    def stubborn(xp, x):
        for _ in range(30):
            try:
                time.sleep(0.1)
            except Exception:               # noqa: BLE001 -- the point of the test
                pass
        return xp.sum(x)

    monkeypatch.setattr(run, "CONTRACT_READ_S", 0.2)
    problems.register(problems.Problem(name="stubborn_function", fn=stubborn,
                                       make_inputs=lambda n, s: (np.ones(n),), description="stubborn"),
                      replace=True)
    try:
        messages = run.contract_verdicts(_groups("stubborn_function"))
    finally:
        problems.unregister("stubborn_function")
    assert len(messages) == 1 and "did not return within 0.2 s" in messages[0]


def test_a_quick_function_outside_the_contract_still_gets_its_verdict():
    problems.register(problems.Problem(name="uses_cbrt", fn=lambda xp, x: xp.sum(xp.cbrt(x)),
                                       make_inputs=lambda n, s: (np.ones(n),), description="cbrt"),
                      replace=True)
    try:
        messages = run.contract_verdicts(_groups("uses_cbrt"))
    finally:
        problems.unregister("uses_cbrt")
    assert all("did not return" not in m for m in messages)
