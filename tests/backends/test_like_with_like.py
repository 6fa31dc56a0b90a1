"""The function is timed on the gradient's execution path, so gradient ÷ function compares like
with like: jitted for a jitted gradient (no per-call uploads the gradient's timing does not
pay), and the function row names that path (``timed_path``)."""
from __future__ import annotations

import numpy as np
import pytest

from diffcompare import backends, problems

JAX_METHODS = ("jax-jit", "jax-eager", "jax-jacfwd")


def _available(name):
    b = backends.get(name)
    if not b.available():
        pytest.skip(f"{name} unavailable: {b.available().reason}")
    return b


@pytest.mark.parametrize("name", JAX_METHODS)
def test_a_timed_jax_function_call_moves_nothing_to_the_device(name, monkeypatch):
    """jax-jacfwd's timed function uploaded its inputs on every call (its gradient's did not):
    the function looked 10× slower and gradient ÷ function read 0.1×."""
    b = _available(name)
    import jax

    p = problems.get("rosenbrock")
    x = p.inputs(8)
    prepared = backends.checked_prepare(b, p, x)
    call, finish = b.timed_function(prepared, x)
    grad_call, _ = b.timed_vjp(prepared, x)
    uploads = []
    real = jax.device_put
    monkeypatch.setattr(jax, "device_put", lambda *a, **k: uploads.append(1) or real(*a, **k))
    value = call()
    grad_call()
    assert uploads == []
    np.testing.assert_allclose(float(finish(value)), float(p.fn(np, *x)), rtol=1e-12)


def test_jax_jit_times_its_compiled_function_and_the_row_says_so():
    b = _available("jax-jit")
    import jax

    from diffcompare.measure.cell import measure_cell

    p = problems.get("rosenbrock")
    prepared = backends.checked_prepare(b, p, p.inputs(4))
    assert isinstance(prepared.state.value, jax.stages.Compiled)      # as the gradient is
    assert isinstance(prepared.state.gradient, jax.stages.Compiled)
    rows = {r["phase"]: r for r in measure_cell("rosenbrock", 4, 0, "jax-jit",
                                                 options={"min_sample_s": 1e-4, "samples": 2})}
    assert rows["function"]["timed_path"] == b.timed_path
    assert "jax.jit" in b.timed_path
    assert backends.get("jax-eager").timed_path != b.timed_path


def test_every_backend_names_its_timed_path():
    paths = {name: getattr(backends.get(name), "timed_path", None) for name in backends.names()}
    assert all(isinstance(p, str) and p for p in paths.values()), paths
