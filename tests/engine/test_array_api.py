"""The engine as an array namespace: one function written against ``xp`` gives the
same values on NumPy, jax.numpy and the engine, and the engine's gradient (and
Hessian) equals JAX's."""
import numpy as np
import pytest

from diffcompare.engine import Tensor, array_api
from diffcompare.engine import functional as F

RTOL = 1e-12


def close(actual, expected, rtol=RTOL, atol=1e-13):
    actual = actual.data if isinstance(actual, Tensor) else np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------- problems


def rosenbrock(xp, x):
    return xp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def softmax_cross_entropy(xp, logits, onehot):
    shifted = logits - xp.max(logits, axis=-1, keepdims=True)
    logp = shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))
    return -xp.mean(xp.sum(onehot * logp, axis=-1))


def mlp(xp, w_flat, b1, w2, x, y):
    """Uses tanh, matmul, sum, mean, maximum, where, stack, concatenate, reshape,
    transpose, exp, log, sqrt, abs and indexing."""
    w1 = xp.reshape(w_flat, (4, 3))                                # (2 * n_in, hidden)
    feats = xp.concatenate([x, xp.sqrt(1 + x * x)], axis=1)        # (n, 4)
    h = xp.tanh(xp.matmul(feats, w1) + b1)                         # (n, 3)
    leaky = xp.where(h > 0, h, 0.1 * h)
    pooled = xp.stack([xp.mean(leaky, axis=0), xp.sum(leaky ** 2, axis=0)], axis=0)  # (2, 3)
    out = xp.matmul(leaky, xp.transpose(w2))                      # (n, 2)
    penalty = xp.sum(xp.maximum(xp.abs(w2) - 0.5, 0.0)) + xp.sum(pooled * pooled)
    smooth = xp.mean(xp.log(1 + xp.exp(-out[:, 0] * y)))           # logistic loss
    return smooth + xp.mean((out[:, 1] - y) ** 2) + 0.1 * penalty


def _mlp_args(rng):
    return (rng.standard_normal(12) * 0.7, rng.standard_normal(3) * 0.3,
            rng.standard_normal((2, 3)), rng.standard_normal((5, 2)),
            rng.choice([-1.0, 1.0], 5))


def _xent_args(rng):
    return rng.standard_normal((4, 3)) * 2, np.eye(3)[[0, 2, 1, 2]]


PROBLEMS = [
    pytest.param(rosenbrock, lambda rng: (rng.uniform(-1.5, 1.5, 5),), (0,), id="rosenbrock"),
    pytest.param(softmax_cross_entropy, _xent_args, (0,), id="softmax_cross_entropy"),
    pytest.param(mlp, _mlp_args, (0, 1, 2), id="mlp"),
]


def engine_xp():
    return Tensor(np.zeros(1)).__array_namespace__()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="module")
def jax_np():
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    previous = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", True)
    yield jax, jax.numpy
    jax.config.update("jax_enable_x64", previous)


# --------------------------------------------------------------------------- tests


def test_array_namespace_is_the_array_api_module():
    assert engine_xp() is array_api
    assert Tensor(1.0).__array_namespace__(api_version="2023.12") is array_api


def test_rosenbrock_known_values():
    xp = engine_xp()
    close(rosenbrock(xp, Tensor([1.0, 1.0, 1.0])), 0.0)
    close(rosenbrock(np, np.array([1.0, 2.0])), 100.0)
    g = F.grad(lambda x: rosenbrock(xp, x), np.array([1.0, 2.0]))
    close(g, [-400.0, 200.0])
    # the minimum: zero gradient, Hessian [[802, -400], [-400, 200]]
    close(F.grad(lambda x: rosenbrock(xp, x), np.ones(2)), np.zeros(2))
    close(F.hessian(lambda x: rosenbrock(xp, x), np.ones(2)), [[802.0, -400.0], [-400.0, 200.0]])


@pytest.mark.parametrize("fn, make_args, wrt", PROBLEMS)
def test_same_value_on_numpy_and_engine(fn, make_args, wrt, rng):
    args = make_args(rng)
    expected = fn(np, *args)
    out = fn(engine_xp(), *(Tensor(a) for a in args))
    assert isinstance(out, Tensor)
    assert out.dtype == np.float64
    close(out, expected)


@pytest.mark.parametrize("fn, make_args, wrt", PROBLEMS)
def test_same_value_on_jax_and_engine(fn, make_args, wrt, rng, jax_np):
    jax, jnp = jax_np
    args = make_args(rng)
    expected = jax.jit(lambda *a: fn(jnp, *a))(*(jnp.asarray(a) for a in args))
    assert expected.dtype == jnp.float64
    close(fn(engine_xp(), *(Tensor(a) for a in args)), np.asarray(expected))
    close(fn(np, *args), np.asarray(expected))


@pytest.mark.parametrize("fn, make_args, wrt", PROBLEMS)
def test_engine_gradient_equals_jax_grad(fn, make_args, wrt, rng, jax_np):
    jax, jnp = jax_np
    args = make_args(rng)
    xp = engine_xp()

    def ours_fn(*diff):
        full = list(args)
        for i, t in zip(wrt, diff):
            full[i] = t
        return fn(xp, *(a if isinstance(a, Tensor) else Tensor(a) for a in full))

    value, grads = F.value_and_grad(ours_fn, tuple(args[i] for i in wrt))
    jvalue, jgrads = jax.jit(jax.value_and_grad(lambda *a: fn(jnp, *a), argnums=wrt))(
        *(jnp.asarray(a) for a in args))
    close(value, np.asarray(jvalue))
    assert len(grads) == len(jgrads) == len(wrt)
    for g, jg in zip(grads, jgrads):
        close(g, np.asarray(jg))


@pytest.mark.parametrize("fn, make_args", [
    pytest.param(rosenbrock, lambda rng: (rng.uniform(-1.5, 1.5, 4),), id="rosenbrock"),
    pytest.param(softmax_cross_entropy, _xent_args, id="softmax_cross_entropy"),
])
def test_engine_hessian_equals_jax_hessian(fn, make_args, rng, jax_np):
    jax, jnp = jax_np
    x, *rest = make_args(rng)
    xp = engine_xp()
    H = F.hessian(lambda t: fn(xp, t, *(Tensor(r) for r in rest)), x)
    jH = jax.jit(jax.hessian(lambda t: fn(jnp, t, *(jnp.asarray(r) for r in rest))))(jnp.asarray(x))
    close(H, np.asarray(jH), atol=1e-12)


def test_namespace_helpers_match_numpy(rng):
    xp = engine_xp()
    a = rng.standard_normal((2, 3))
    t = Tensor(a)
    cases = [
        (xp.square(t), np.square(a)),
        (xp.clip(t, -0.5, 0.5), np.clip(a, -0.5, 0.5)),
        (xp.dot(t, xp.transpose(t)), a @ a.T),
        (xp.permute_dims(t, (1, 0)), a.T),
        (xp.concat([t, t], axis=0), np.concatenate([a, a])),
        (xp.amax(t, axis=1), a.max(1)),
        (xp.amin(t, axis=0), a.min(0)),
        (xp.subtract(t, 1.0), a - 1), (xp.multiply(t, t), a * a), (xp.divide(t, 2.0), a / 2),
        (xp.negative(t), -a), (xp.power(xp.abs(t), 1.5), np.abs(a) ** 1.5),
        (xp.asarray(a), a), (xp.zeros((2, 2)), np.zeros((2, 2))), (xp.ones(3), np.ones(3)),
        (xp.full((2,), 7.0), np.full(2, 7.0)), (xp.eye(3), np.eye(3)),
        (xp.arange(4), np.arange(4)), (xp.sign(t), np.sign(a)),
        (xp.zeros_like(t), np.zeros_like(a)), (xp.ones_like(t), np.ones_like(a)),
        (xp.expand_dims(t, 0), a[None]), (xp.squeeze(xp.expand_dims(t, -1), -1), a),
        (xp.broadcast_to(t[0], (4, 3)), np.broadcast_to(a[0], (4, 3))),
        (xp.swapaxes(t, 0, 1), a.T), (xp.logsumexp(t, axis=1),
                                      np.log(np.exp(a).sum(1))),
        (xp.minimum(t, 0.1), np.minimum(a, 0.1)), (xp.cos(t), np.cos(a)), (xp.sin(t), np.sin(a)),
    ]
    for got, expected in cases:
        close(got, expected)
    assert xp.asarray(t) is t
    assert xp.asarray(a, dtype=xp.float32).dtype == np.float32


def test_namespace_asarray_keeps_the_graph():
    xp = engine_xp()
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = xp.sum(xp.asarray(x) ** 2) + xp.sum(xp.clip(x, 1.5, None))
    y.backward()
    close(x.grad, [2.0, 5.0])


def test_full_of_a_tensor_is_differentiable_in_its_fill_value():
    """np.full(shape, t) with a Tensor t: as HIPS autograd, d/dt sum(w * full) = sum(w)."""
    t = Tensor(1.5, requires_grad=True)
    w = np.arange(6.0).reshape(2, 3)
    out = array_api.full((2, 3), t)
    assert out.shape == (2, 3) and np.all(out.data == 1.5)
    (out * w).sum().backward()
    assert float(t.grad.data) == 15.0
    assert array_api.full(3, 2.0).data.tolist() == [2.0, 2.0, 2.0]
    assert array_api.full((2,), Tensor(np.float32(1.0))).dtype == np.float32
