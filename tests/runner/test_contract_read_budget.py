"""Before any cell runs, the run reads which xp names each problem's function uses, by calling
it once on NumPy in the parent process.  A function that hangs there hung ``compare()`` and
``diffcompare run`` for good (a 10-minute wait, with ``timeout_s=3``): the read has a budget."""
import contextlib
import time
from types import SimpleNamespace

import numpy as np

from diffcompare import problems
from diffcompare.runner import run


def _verdicts(name, fn):
    """``contract_verdicts`` of a one-group run of ``fn`` registered as ``name`` (at size 3)."""
    with _registered(name, fn):
        group = SimpleNamespace(problem=name, size=3, seed=0, backends=[SimpleNamespace(name="engine")])
        return run.contract_verdicts([group])


@contextlib.contextmanager
def _registered(name, fn):
    problems.register(problems.Problem(name=name, fn=fn, make_inputs=lambda n, s: (np.ones(n),),
                                       description=name), replace=True)
    try:
        yield
    finally:
        problems.unregister(name)


def _slow(xp, x):
    time.sleep(3)                          # finite, so a regression fails instead of hanging
    return xp.sum(xp.exp(x))


def test_a_function_that_does_not_return_in_time_is_named_and_the_run_goes_on(monkeypatch):
    monkeypatch.setattr(run, "CONTRACT_READ_S", 0.2)
    messages = _verdicts("sleeps_in_its_function", _slow)
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
    messages = _verdicts("stubborn_function", stubborn)
    assert len(messages) == 1 and "did not return within 0.2 s" in messages[0]


def test_a_quick_function_outside_the_contract_still_gets_its_verdict():
    messages = _verdicts("uses_i0", lambda xp, x: xp.sum(xp.i0(x)))
    assert len(messages) == 1 and messages[0].startswith("problem 'uses_i0' uses xp.i0, outside "
                                                         "diffcompare's xp contract")
