"""Small problems for the backend tests (until the catalog lands): scalar and
vector outputs, several differentiated arguments, a matmul MLP, a loop, and a
nonsmooth problem with ties at its kinks."""
import numpy as np

from diffcompare.problems import Problem


def _rng(seed):
    return np.random.default_rng(seed)


def _rosenbrock(xp, x):
    return xp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _mlp(xp, X, W1, b1, W2, T):
    h = xp.tanh(xp.matmul(X, W1) + b1)
    out = h @ W2
    return xp.mean(xp.sum((out - T) ** 2, axis=1)) + 0.01 * xp.sum(xp.square(W1))


def _rnn(xp, W, h0, U):
    # a loop over the rows of a non-differentiated sequence U (its length is a shape)
    h = h0
    for k in range(U.shape[0]):
        h = xp.tanh(xp.matmul(W, h) + U[k])
    return xp.sum(h * h) + xp.log(1 + xp.sum(xp.exp(-h)))


def _nonsmooth(xp, x, y):
    # ties on purpose: x == y in places (maximum), a repeated max, y on a clip bound
    return (xp.sum(xp.abs(x)) + xp.sum(xp.maximum(x, y)) + xp.max(x)
            + xp.sum(xp.clip(y, -0.5, 0.5)) + xp.sum(xp.where(x > 0, x * y, -y)))


ROSENBROCK = Problem(
    name="t_rosenbrock", fn=_rosenbrock, description="Rosenbrock (slices)",
    make_inputs=lambda n, s: (_rng(s).standard_normal(n),))

VECTOR = Problem(
    name="t_sin_exp", fn=lambda xp, x, y: xp.sin(x) * xp.exp(y) / (1 + x * x),
    description="elementwise, two arguments", wrt=(0, 1), tags={"vector-output"},
    make_inputs=lambda n, s: (_rng(s).standard_normal(n), _rng(s + 1).standard_normal(n)),
    make_cotangent=lambda n, s: _rng(s + 2).standard_normal(n))

VECTOR_MATRIX = Problem(
    name="t_softplus_layer",
    fn=lambda xp, x, W: xp.log(1 + xp.exp(xp.matmul(W, x))).reshape((2, -1)),
    description="matrix output", wrt=(0, 1), tags={"vector-output", "matrix"},
    make_inputs=lambda n, s: (_rng(s).standard_normal(n), _rng(s + 1).standard_normal((2 * n, n))),
    make_cotangent=lambda n, s: _rng(s + 2).standard_normal((2, n)))

MLP = Problem(
    name="t_mlp", fn=_mlp, description="tanh MLP, squared error", wrt=(1, 2, 3),
    tags={"smooth", "matrix"},
    make_inputs=lambda n, s: (_rng(s).standard_normal((n, 3)),
                              _rng(s + 1).standard_normal((3, 5)) / np.sqrt(3),
                              _rng(s + 2).standard_normal(5) * 0.1,
                              _rng(s + 3).standard_normal((5, 2)) / np.sqrt(5),
                              _rng(s + 4).standard_normal((n, 2))))

RNN = Problem(
    name="t_rnn", fn=_rnn, description="tanh recurrence over k steps", wrt=(0, 1),
    tags={"smooth", "loop"}, size_meaning="k steps",
    make_inputs=lambda k, s: (_rng(s).standard_normal((4, 4)) / 2, _rng(s + 1).standard_normal(4),
                              _rng(s + 2).standard_normal((k, 4))))


def _ties(n, s):
    x = _rng(s).standard_normal(n)
    x[1] = x[2] = np.max(x) + 1.0          # a tied maximum
    y = _rng(s + 1).standard_normal(n)
    y[3] = x[3]                              # a tie in maximum(x, y)
    y[4] = 0.5                               # on the clip bound
    return x, y


NONSMOOTH = Problem(
    name="t_kinks", fn=_nonsmooth, description="abs, maximum, max, clip, where at ties",
    wrt=(0, 1), tags={"nonsmooth"}, make_inputs=_ties)

# abs at 0: the engine and PyTorch take abs'(0) = 0, JAX takes 1 (sign with sign(0) := 1)
ABS_AT_ZERO = Problem(
    name="t_abs_zero", fn=lambda xp, x: xp.sum(xp.abs(x)), description="abs with a zero entry",
    tags={"nonsmooth"}, make_inputs=lambda n, s: (np.array([0.0, -1.5, 2.0]),))

SCALAR_PROBLEMS = [ROSENBROCK, MLP, RNN]
ALL = [ROSENBROCK, VECTOR, VECTOR_MATRIX, MLP, RNN, NONSMOOTH]
SIZES = {"t_rnn": 5}        # default size for the others: 6


def size_of(problem):
    return SIZES.get(problem.name, 6)


def assert_close(ours, reference, rtol=1e-12):
    """Elementwise relative agreement; entries near zero compare against the array's scale."""
    assert len(ours) == len(reference)
    for a, b in zip(ours, reference):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == np.float64
        scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * 1e-2 * scale)
