"""What the runner times is the method's own gradient: for every backend, the call from
``timed_vjp`` does the work ``vjp`` does (the same function evaluations, the same result).
A subclass inheriting another method's timed loop (engine-jvp timing the reverse-mode
engine) would be measured as the wrong method."""
from __future__ import annotations

import numpy as np
import pytest

from diffcompare import backends, problems


def _available(name):
    """Backend ``name``, or a skip saying why it is unavailable here."""
    b = backends.get(name)
    if not b.available():
        pytest.skip(f"{name} unavailable: {b.available().reason}")
    return b


@pytest.mark.parametrize("name", backends.names())
def test_timed_call_is_the_methods_own_gradient(name):
    b = _available(name)
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


# --- the timed call's own branches, for the backends whose timed loop is written by hand ----

HAND_TIMED = ("engine", "torch", "jax-jit", "jax-eager")


def _ones(*shapes):
    return lambda size, seed: tuple(np.linspace(0.5, 1.5, size).reshape(s) if s else
                                    np.linspace(0.5, 1.5, size) for s in shapes)


def _cases():
    from diffcompare.problems import Problem

    two = lambda size, seed: (np.linspace(0.5, 1.5, size), np.linspace(-1.0, 2.0, size))  # noqa: E731
    return {
        # the second argument is ignored: its gradient is zero, not None or an error
        "ignores_y": (Problem("ignores_y", lambda xp, x, y: xp.sum(x * x), two, "sum(x²)",
                              wrt=(0, 1)),
                      lambda x, y: (2 * x, np.zeros_like(y))),
        # the differentiated argument is the second; the first is data
        "second_only": (Problem("second_only", lambda xp, a, y: xp.sum(a * y * y), two,
                                "sum(a y²)", wrt=(1,)),
                        lambda a, y: (2 * a * y,)),
        # a scalar held in shape (1,): differentiated without a cotangent
        "shape_1": (Problem("shape_1", lambda xp, x: xp.reshape(xp.sum(x * x * x), (1,)),
                            lambda size, seed: (np.linspace(0.5, 1.5, size),), "sum(x³) in (1,)"),
                    lambda x: (3 * x * x,)),
    }


@pytest.mark.parametrize("case", ["ignores_y", "second_only", "shape_1"])
@pytest.mark.parametrize("name", HAND_TIMED)
def test_timed_call_on_ignored_arguments_data_arguments_and_a_shape_1_scalar(name, case):
    b = _available(name)
    problem, want = _cases()[case]
    x = problem.inputs(5)
    prepared = backends.checked_prepare(b, problem, x)
    call, finish = b.timed_vjp(prepared, x)          # before any other call (JAX: first use)
    first, second = finish(call()), finish(call())
    assert prepared.evaluations == 2
    for got in (first, second):
        assert len(got) == len(problem.wrt)
        for g, w in zip(got, want(*x)):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)


def test_torch_timed_call_made_under_no_grad_still_differentiates():
    b = backends.get("torch")
    if not b.available():
        pytest.skip(f"torch unavailable: {b.available().reason}")
    import torch

    p = problems.get("rosenbrock")
    x = p.inputs(6)
    prepared = backends.checked_prepare(b, p, x)
    want = b.vjp(prepared, x)
    with torch.no_grad():
        call, finish = b.timed_vjp(prepared, x)
        got = finish(call())
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)


@pytest.mark.parametrize("name", ["engine", "torch"])
def test_timed_call_refuses_a_vector_output_without_a_cotangent_and_says_so(name):
    b = _available(name)
    p = problems.get("weighted_vector")
    x = p.inputs(3)
    call, _ = b.timed_vjp(backends.checked_prepare(b, p, x), x)
    with pytest.raises(ValueError, match="pass a cotangent"):
        call()


@pytest.mark.parametrize("name", ["engine", "torch", "jax-jit"])
def test_the_timed_call_has_no_adapter_layer_a_users_loop_lacks(name):
    """What ``timed_vjp`` times is the user's loop: inside it, no Python frame of the adapter
    but the call itself (no helper, comprehension, generator or context manager) and, for
    jax-jit, not ``Compiled.__call__``'s Python frame in front of the executable's C++ call.
    Each such layer was 1-7% of a small gradient (benchmarks/adapter_overhead.py)."""
    import sys

    b = _available(name)
    p = problems.get("rosenbrock")
    x = p.inputs(8)
    prepared = backends.checked_prepare(b, p, x)
    call, _ = b.timed_vjp(prepared, x)
    call()                                        # JAX makes its C++ call on first use
    frames = []

    def record(frame, event, arg):
        if event == "call":
            frames.append((frame.f_code.co_filename.replace("\\", "/"), frame.f_code.co_name))

    sys.setprofile(record)
    try:
        call()
    finally:
        sys.setprofile(None)
    adapter = [f for f, fn in frames if "/diffcompare/backends/" in f or "/contextlib.py" in f
               or "/jax/_src/stages.py" in f]
    assert len(adapter) == 1 and frames[0][1] == "call", frames[:12]
