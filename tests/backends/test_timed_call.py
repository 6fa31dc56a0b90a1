"""What the runner times is the method's own gradient: for every backend, the call from
``timed_vjp`` does the work ``vjp`` does (the same function evaluations, the same result).
A subclass inheriting another method's timed loop (engine-jvp timing the reverse-mode
engine) would be measured as the wrong method."""
from __future__ import annotations

import numpy as np
import pytest

from diffcompare import backends, problems


@pytest.mark.parametrize("name", backends.names())
def test_timed_call_is_the_methods_own_gradient(name):
    b = backends.get(name)
    if not b.available():
        pytest.skip(f"{name} unavailable: {b.available().reason}")
    p = problems.get("rosenbrock")
    x = p.inputs(8)
    prepared = backends.checked_prepare(b, p, x)
    before = prepared.evaluations
    want = b.vjp(prepared, x)
    per_vjp = prepared.evaluations - before
    call, finish = b.timed_vjp(prepared, x)
    got = finish(call())
    assert prepared.evaluations - before - per_vjp == per_vjp >= 1
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, dtype=np.float64), w, rtol=1e-9, atol=1e-12)


def test_a_python_number_returned_to_the_engine_says_why_it_cannot_differentiate_it():
    """A float is a constant or a value taken out of the graph with float(): the engine says
    so, as torch's backend does, instead of failing on `'float' object has no attribute`."""
    import numpy as np

    from diffcompare import backends
    from diffcompare.problems import Problem

    p = Problem("returns_float", lambda xp, x: float(xp.sum(x * x)), lambda size, seed: (np.ones(size),),
                "float() of the loss")
    for name in ("engine", "torch"):
        with pytest.raises(backends.BackendError, match="returned a float, not a"):
            backends.compute_gradient(backends.get(name), p, p.inputs(3))
