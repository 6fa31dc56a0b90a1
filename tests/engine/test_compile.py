"""engine.compile: the traced, generated gradient program equals the eager engine (and
torch), is cached per signature, guards traced branches, and refuses what it cannot follow."""
from __future__ import annotations

import re

import numpy as np
import pytest

from diffcompare.engine import Tensor, compile, maximum, relu, where
from diffcompare.engine.compiler import TraceError


def seed001(X, W1, b1, W2, b2, Y):
    return ((relu(X @ W1 + b1) @ W2 + b2 - Y) ** 2).mean()


def _seed001_inputs(batch, n_in, hidden, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    arrays = (rng.standard_normal((batch, n_in)), rng.standard_normal((n_in, hidden)) / np.sqrt(n_in),
              0.1 * rng.standard_normal(hidden), rng.standard_normal((hidden, 1)) / np.sqrt(hidden),
              0.1 * rng.standard_normal(1), rng.standard_normal((batch, 1)))
    return tuple(a.astype(dtype) for a in arrays)


def _eager(fn, arrays, wrt):
    tensors = [Tensor(a, requires_grad=i in wrt) for i, a in enumerate(arrays)]
    out = fn(*tensors)
    out.backward()
    return out.data, [tensors[i].grad.data for i in wrt]


WRT = (1, 2, 3, 4)


@pytest.mark.parametrize("shape", [(1, 3, 4), (64, 10, 50)])
def test_seed001_equals_the_eager_engine(shape):
    arrays = _seed001_inputs(*shape)
    value, grads = compile(seed001, wrt=WRT)(*arrays)
    ev, egrads = _eager(seed001, arrays, WRT)
    assert np.array_equal(value, ev)
    for g, e in zip(grads, egrads):
        assert g.shape == e.shape and np.allclose(g, e, rtol=1e-12, atol=1e-14)


def test_seed001_equals_torch():
    torch = pytest.importorskip("torch")
    arrays = _seed001_inputs(16, 5, 7)
    value, grads = compile(seed001, wrt=WRT)(*arrays)
    ts = [torch.tensor(a, requires_grad=i in WRT) for i, a in enumerate(arrays)]
    X, W1, b1, W2, b2, Y = ts
    loss = ((torch.relu(X @ W1 + b1) @ W2 + b2 - Y) ** 2).mean()
    loss.backward()
    assert abs(float(value) - loss.item()) < 1e-12
    for g, t in zip(grads, (W1, b1, W2, b2)):
        assert np.allclose(g, t.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_seed001_source_reads_like_handwritten_backprop():
    g = compile(seed001, wrt=WRT)
    g(*_seed001_inputs(8, 3, 4))
    src = g.ssa_source
    body = src.split("# backward")[1]
    # a transpose-matmul for each weight, a sum over the batch for each bias, the relu mask
    assert re.search(r"g_W1 = X\.T @ g_\w+", body)
    assert re.search(r"g_W2 = \w+\.T @ g_\w+", body)
    assert re.search(r"g_b1 = g_\w+\.sum\(axis=0\)", body)
    assert re.search(r"g_b2 = g_\w+\.sum\(axis=0\)", body)
    assert re.search(r"\* \(\w+ > 0\)", body)
    assert "@ W2.T" in body
    assert "Tensor" not in src and "Node" not in src
    # the gradient of X is not asked for, so X.T appears once and nothing computes X's gradient
    assert "g_X" not in src
    assert src.startswith("def seed001_and_grad(X, W1, b1, W2, b2, Y):")
    # what runs: the same steps, dead intermediates' buffers reused in place
    run = g.source
    # (a number operand is a 0-d array of the operand's dtype there: NumPy converts a
    # Python number on every call)
    assert "t1 = X @ W1\n    t1 += b1\n    np.maximum(t1, c_0, out=t1)\n" in run
    assert re.search(r"g_W1 = X\.T @ g_\w+", run) and run.count(".sum(axis=0)") == 2


def test_cached_per_signature_and_retraced_for_a_new_shape():
    g = compile(seed001, wrt=WRT)
    a = _seed001_inputs(4, 3, 5)
    g(*a)
    g(*_seed001_inputs(4, 3, 5, seed=1))
    assert g.traces == 1
    b = _seed001_inputs(9, 3, 5)
    value, grads = g(*b)
    assert g.traces == 2
    assert np.allclose(value, _eager(seed001, b, WRT)[0], rtol=1e-12)
    g(*a)
    assert g.traces == 2
    g(*(x.astype(np.float32) for x in a))                      # a new dtype is a new signature
    assert g.traces == 3


def test_float32_stays_float32_and_matches_eager():
    arrays = _seed001_inputs(6, 3, 4, dtype=np.float32)
    value, grads = compile(seed001, wrt=WRT)(*arrays)
    ev, egrads = _eager(seed001, arrays, WRT)
    assert all(g.dtype == np.float32 for g in grads)
    for g, e in zip(grads, egrads):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


def test_namespace_form_and_value_only():
    def rosenbrock(xp, x):
        return xp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    g = compile(rosenbrock)
    x = np.array([1.0, 2.0, -0.5])
    value, (gx,) = g(x)
    t = Tensor(x, requires_grad=True)
    from diffcompare.engine import array_api
    rosenbrock(array_api, t).backward()
    assert np.array_equal(gx, t.grad.data)
    assert float(g.value(x)) == float(value) == float(rosenbrock(np, x))
    assert "backward" not in g.value_source


def test_guard_retraces_when_a_traced_branch_flips():
    def f(x):
        if x.sum() > 0:
            return (x * x).sum()
        return (x * x * x).sum()

    g = compile(f)
    v, (gx,) = g(np.array([1.0, 2.0]))
    assert v == 5.0 and np.array_equal(gx, [2.0, 4.0])
    v, (gx,) = g(np.array([-1.0, -2.0]))            # same signature, other branch: traced again
    assert v == -9.0 and np.array_equal(gx, [3.0, 12.0])
    assert g.traces == 2
    g(np.array([3.0, 1.0]))                          # both programs cached: no third trace
    assert g.traces == 2
    assert "guard" in g.source


def test_guard_refuses_naming_the_line_when_variants_run_out():
    def f(x):
        if x.sum() > 0:
            return x.sum()
        return -x.sum()

    g = compile(f, max_variants=1)
    g(np.ones(2))
    with pytest.raises(TraceError, match=r"test_compile\.py:\d+.*max_variants=1"):
        g(-np.ones(2))


def test_where_on_a_traced_condition_needs_no_guard():
    def f(x):
        return where(x > 0, x * x, -x).sum()

    g = compile(f)
    x = np.array([-2.0, 3.0, 0.5])
    _, (gx,) = g(x)
    _, (gy,) = g(-x)
    assert np.array_equal(gx, [-1.0, 6.0, 1.0]) and np.array_equal(gy, [4.0, -1.0, -1.0])
    assert g.traces == 1 and g.stats()["guards"] == 0


def test_inplace_and_untraceable_ops_name_the_op_and_the_line():
    def inplace(x):
        y = x * 2
        y += 1
        return y.sum()

    with pytest.raises(TraceError, match=r"in-place.*`\+=`.*test_compile\.py:\d+"):
        compile(inplace)(np.ones(3))

    def to_float(x):
        return x * float(x.sum())

    with pytest.raises(TraceError, match=r"`float\(\)`.*test_compile\.py:\d+"):
        compile(to_float)(np.ones(3))

    def numpy_escape(x):
        return Tensor(np.fft.fft(x.data).real).sum() + x.sum()

    with pytest.raises(TraceError, match=r"np\.fft .*not supported"):
        compile(numpy_escape)(np.ones(3))

    with pytest.raises(TraceError, match="shape \\(3,\\).*reduce it"):
        compile(lambda x: x * 2)(np.ones(3))


def test_unused_argument_gets_zeros_and_outputs_never_alias_inputs():
    def f(x, w):
        return (x * 2).sum()

    x, w = np.ones(3), np.ones(2)
    _, (gx, gw) = compile(f, wrt=(0, 1))(x, w)
    assert np.array_equal(gw, np.zeros(2)) and np.array_equal(gx, [2.0, 2.0, 2.0])

    def linear(x, w):
        return (x * w).sum()

    _, (gw,) = compile(linear, wrt=(1,))(x, np.full(3, 5.0))
    assert np.array_equal(gw, x) and gw is not x and not np.shares_memory(gw, x)


def test_stats_and_source_before_a_call():
    g = compile(seed001, wrt=WRT)
    with pytest.raises(RuntimeError, match="nothing traced yet"):
        g.source
    g.trace(*_seed001_inputs(32, 10, 20))
    s = g.stats()
    # 9 forward operations; backward: 7 assignments plus X.T, t3.T, W2.T and the mask t3 > 0
    assert s["forward_steps"] == 9 and s["backward_steps"] == 11 and s["guards"] == 0
    # the backward reads X, W2, the relu output and the residual: (32x10 + 20x1 + 32x20 + 32x1) doubles
    assert s["saved_bytes"] == 8 * (32 * 10 + 20 + 32 * 20 + 32)


def test_math_of_seed001_shows_the_matrix_formulas():
    g = compile(seed001, wrt=WRT)
    g(*_seed001_inputs(8, 3, 4))
    m = g.math()
    backward = m.split("backward")[1]
    assert "∂W1 = Xᵀ ∂t2" in backward and re.search(r"∂W2 = t\d+ᵀ ∂t\d+", backward)
    assert re.search(r"∂b1 = 𝟙ᵀ ∂t\d+", backward) and re.search(r"∂b2 = 𝟙ᵀ ∂t\d+", backward)
    assert re.search(r"∂t2 = ∂t\d+ ⊙ relu′\(t2\)", backward)
    assert "t3 = relu(t2)" in m and "L = t8 / 8" in m


@pytest.mark.parametrize("name", ["relu_kink", "abs_kink", "max_kink", "mlp_relu"])
def test_data_dependent_subgradients_are_computed_not_frozen(name):
    """Masks, signs and tie shares depend on the values: traced at one input, the program
    must follow another input with a different pattern exactly as the eager engine does."""
    from diffcompare import backends, problems

    p = problems.get(name)
    size = p.sizes[0]
    first = p.inputs(size, seed=0)
    compiled = backends.get("engine-compiled")
    prepared = compiled.prepare(p, first)
    rng = np.random.default_rng(7)
    other = tuple(-a if i in p.wrt else a for i, a in enumerate(first))        # signs flipped
    other = tuple(np.round(a + rng.integers(0, 2, a.shape), 0) if i == 0 and name == "max_kink" else a
                  for i, a in enumerate(other))                                  # new ties
    for inputs in (first, other):
        got = compiled.gradient(prepared, inputs)
        expected = backends.compute_gradient(backends.get("engine"), p, inputs)
        for g, e in zip(got, expected):
            assert np.array_equal(g, e)
    assert prepared.state[1].traces == 1


def test_a_gradient_inside_the_function_is_traced_too():
    """create_graph inside fn: the inner backward becomes forward steps of the program."""
    from diffcompare.engine import autograd

    def grad_norm(x):
        (g,) = autograd.grad((x ** 3).sum(), x, create_graph=True)
        return (g * g).sum()                      # sum (3 x²)²: gradient 36 x³

    x = np.array([1.0, 2.0, -0.5])
    value, (gx,) = compile(grad_norm)(x)
    assert np.isclose(value, np.sum(9 * x ** 4)) and np.allclose(gx, 36 * x ** 3, rtol=1e-14)


def test_bad_wrt_is_a_clear_error():
    with pytest.raises(ValueError, match=r"wrt=\(3,\).*passes 1"):
        compile(lambda x: x.sum(), wrt=3)(np.ones(2))


def test_report_seed001_answer_shows_the_derived_program():
    from diffcompare.report.sections.seeds import compiled_data
    from diffcompare.studies.seeds import compiled_seed_001

    shown = compiled_data(compiled_seed_001())
    assert shown["error"] is None
    html = shown["ssa_source"] + shown["math"]
    assert "g_w1 = inp.T @ g_t2" in html and "g_b1 = g_t2.sum(axis=0)" in html
    assert "g_w2 = t3.T @ g_t5" in html and "g_b2 = g_t5.sum(axis=0)" in html
    assert "∂w1 = inpᵀ ∂t2" in html and "∂b1 = 𝟙ᵀ ∂t2" in html


def test_gradients_summed_back_over_broadcast_axes_match_the_eager_engine():
    # The engine's kernels.sum_to runs on Tracers unchanged (its plain form is recorded).
    def f(x, a, b, c):
        return ((x * a + b) * c).sum()

    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in [(2, 4, 3), (1, 3), (4, 1), ()]]
    value, grads = compile(f, wrt=(1, 2, 3))(*arrays)
    expected = _eager(f, arrays, (1, 2, 3))
    assert np.allclose(value, expected[0], rtol=1e-12, atol=0)
    for got, want, a in zip(grads, expected[1], arrays[1:]):
        assert got.shape == a.shape and np.allclose(got, want, rtol=1e-12, atol=1e-15)


def test_infinite_constants_are_written_as_numpy_names():
    x = np.array([1.0, 2.0])
    g = compile(lambda x: maximum(x, -np.inf).sum(), wrt=(0,))
    value, (grad,) = g(x)
    assert value == 3.0 and list(grad) == [1.0, 1.0]
    assert "-np.inf" in g.source and " inf" not in g.source.replace("np.inf", "")


def test_compiled_backend_bakes_integer_inputs_and_refuses_changed_ones():
    from diffcompare import backends, problems

    p = problems.get("bundle_adjustment")
    inputs = p.inputs(2, seed=0)
    ints = [i for i, a in enumerate(inputs) if i not in p.wrt and np.asarray(a).dtype.kind in "iu"]
    assert ints, "bundle adjustment indexes by integer observations"
    b = backends.get("engine-compiled")
    prepared = b.prepare(p, inputs)
    cot = np.ones(np.shape(backends.get("engine").function(backends.get("engine").prepare(p, inputs), inputs)))
    want = backends.get("engine").vjp(backends.get("engine").prepare(p, inputs), inputs, cot)
    got = b.vjp(prepared, inputs, cot)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    changed = list(inputs)
    changed[ints[0]] = np.asarray(inputs[ints[0]])[::-1].copy()
    with pytest.raises(ValueError, match="baked into the program"):
        b.vjp(prepared, tuple(changed), cot)


def test_a_parameter_read_from_a_closure_is_warned_about_and_baked_in():
    """Eager fills W.grad; compile differentiates only its arguments, so it says so."""
    rng = np.random.default_rng(3)
    W = Tensor(rng.standard_normal((3, 2)), requires_grad=True)
    x = rng.standard_normal((4, 3))

    def loss(x):
        return ((x @ W) ** 2).sum()

    with pytest.warns(UserWarning, match=r"1 tensor\(s\) that require grad but are not its "
                                         r"arguments \(shapes \(3, 2\)\)") as record:
        value, (g_x,) = compile(loss)(x)
    assert record[0].filename == __file__
    np.testing.assert_allclose(g_x, 2 * (x @ W.data) @ W.data.T, rtol=1e-12)
    assert W.grad is None


def test_arguments_and_constants_are_not_warned_about():
    import warnings

    target = np.ones((4, 2))

    def loss(x, W):
        return ((x @ W - target) ** 2).sum()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile(loss, wrt=(1,))(np.ones((4, 3)), np.ones((3, 2)))


def test_a_long_trace_warns_once_that_a_loop_is_being_unrolled(monkeypatch):
    """A 100k-step Python loop took 86 s and 2.9 GB to compile without a word."""
    import warnings

    from diffcompare.engine.compiler import tracer

    monkeypatch.setattr(tracer, "LONG_TRACE", 200)

    def loop(x):
        for _ in range(150):
            x = (x * 1.0001).sin()
        return x.sum()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value, (g,) = compile(loop)(np.array([0.1, 0.2]))
    long = [w for w in caught if "Python loop is being unrolled" in str(w.message)]
    assert len(long) == 1 and "passed 200 steps" in str(long[0].message)
    x = Tensor(np.array([0.1, 0.2]), requires_grad=True)
    loop(x).backward()
    np.testing.assert_allclose(g, x.grad.data, rtol=1e-12)


def test_a_short_trace_does_not_warn():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile(lambda x: (x * x).sum())(np.ones(3))


def test_logsumexp_backward_reads_the_forward_exp_and_matches_torch():
    # the compiled program saves exp(x - max) from the forward, as eager does: one np.exp
    torch = pytest.importorskip("torch")
    from diffcompare.engine import logsumexp

    x = np.random.default_rng(5).standard_normal((4, 1, 30)) * 3
    g = compile(lambda a: logsumexp(a, axis=2).sum(), wrt=(0,))
    value, (gx,) = g(x)
    assert g.source.count("np.exp(") == 1
    t = torch.tensor(x, requires_grad=True)
    torch.logsumexp(t, dim=2).sum().backward()
    np.testing.assert_allclose(gx, t.grad.numpy(), rtol=1e-6, atol=1e-8)
