"""The engine's values and gradients against PyTorch autograd, in float64.

Covers the seed-001 MLP (linear -> relu -> linear -> MSE), a tanh MLP with
cross-entropy, softmax / log_softmax / logsumexp, second derivatives, PyTorch's
subgradient conventions at kinks, and a Hypothesis property test over random
expression programs evaluated on both engines from the same inputs.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: nothing to compare against")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import diffcompare.engine as E  # noqa: E402
from diffcompare.engine import Tensor, autograd  # noqa: E402
from diffcompare.engine import functional as F  # noqa: E402

TF = torch.nn.functional
RTOL = 1e-12


def close(ours, theirs, rtol=RTOL, atol=1e-14):
    ours = ours.data if isinstance(ours, Tensor) else np.asarray(ours)
    theirs = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else np.asarray(theirs)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


def leaves(*arrays):
    """The same values as engine leaves and as torch leaves (float64, requiring grad)."""
    ours = [Tensor(np.array(a, dtype=np.float64), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(np.array(a, dtype=np.float64), requires_grad=True) for a in arrays]
    return ours, theirs


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# --------------------------------------------------------------------------- seed 001: MLP + MSE


def lin(x, w, b):
    return x @ w + b


@pytest.mark.parametrize("n, n_in, n_hidden", [(8, 5, 6), (1, 3, 2), (16, 4, 10)])
def test_seed_001_mlp_relu_mse(rng, n, n_in, n_hidden):
    arrays = [rng.standard_normal((n, n_in)),                       # x
              rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in),  # w1
              rng.standard_normal(n_hidden) * 0.1,                 # b1
              rng.standard_normal((n_hidden, 1)) / np.sqrt(n_hidden),  # w2
              rng.standard_normal(1) * 0.1]                        # b2
    target = rng.standard_normal(n)
    (x, w1, b1, w2, b2), (tx, tw1, tb1, tw2, tb2) = leaves(*arrays)

    out = lin(lin(x, w1, b1).relu(), w2, b2)
    loss = E.mse_loss(out.squeeze(-1), target)
    loss.backward()

    tout = lin(torch.relu(lin(tx, tw1, tb1)), tw2, tb2)
    tloss = TF.mse_loss(tout.squeeze(-1), torch.tensor(target))
    tloss.backward()

    close(loss, tloss)
    for ours, theirs in zip((x, w1, b1, w2, b2), (tx, tw1, tb1, tw2, tb2)):
        close(ours.grad, theirs.grad)


def test_seed_001_mlp_written_out_by_hand(rng):
    """The same MLP with the MSE spelled ``((out - y) ** 2).mean()`` and relu as maximum."""
    arrays = [rng.standard_normal((6, 3)), rng.standard_normal((3, 4)), rng.standard_normal(4),
              rng.standard_normal((4, 1)), rng.standard_normal(1)]
    target = rng.standard_normal((6, 1))
    (x, w1, b1, w2, b2), (tx, tw1, tb1, tw2, tb2) = leaves(*arrays)
    loss = ((lin(E.maximum(lin(x, w1, b1), 0.0), w2, b2) - target) ** 2).mean()
    tloss = ((lin(torch.clamp_min(lin(tx, tw1, tb1), 0.0), tw2, tb2) - torch.tensor(target)) ** 2).mean()
    loss.backward()
    tloss.backward()
    close(loss, tloss)
    for ours, theirs in zip((x, w1, b1, w2, b2), (tx, tw1, tb1, tw2, tb2)):
        close(ours.grad, theirs.grad)


# --------------------------------------------------------------------------- tanh MLP + cross-entropy


def _tanh_mlp(rng, n=6, n_in=4, n_hidden=5, n_classes=3):
    arrays = [rng.standard_normal((n, n_in)), rng.standard_normal((n_in, n_hidden)),
              rng.standard_normal(n_hidden), rng.standard_normal((n_hidden, n_classes)),
              rng.standard_normal(n_classes)]
    ours, theirs = leaves(*arrays)
    x, w1, b1, w2, b2 = ours
    tx, tw1, tb1, tw2, tb2 = theirs
    logits = lin(lin(x, w1, b1).tanh(), w2, b2)
    tlogits = lin(torch.tanh(lin(tx, tw1, tb1)), tw2, tb2)
    return ours, theirs, logits, tlogits


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_tanh_mlp_cross_entropy_integer_targets(rng, reduction):
    ours, theirs, logits, tlogits = _tanh_mlp(rng)
    target = np.array([0, 2, 1, 1, 0, 2])
    loss = E.cross_entropy(logits, target, reduction=reduction)
    tloss = TF.cross_entropy(tlogits, torch.tensor(target), reduction=reduction)
    close(loss, tloss)
    seed = rng.standard_normal(loss.shape)
    loss.backward(seed if reduction == "none" else None)
    tloss.backward(torch.tensor(seed) if reduction == "none" else None)
    for a, b in zip(ours, theirs):
        close(a.grad, b.grad)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_tanh_mlp_cross_entropy_probability_targets(rng, reduction):
    ours, theirs, logits, tlogits = _tanh_mlp(rng)
    p = rng.uniform(0.1, 1.0, (6, 3))
    p /= p.sum(-1, keepdims=True)
    (tp_ours,), (tp_theirs,) = leaves(p)       # the targets are differentiated too
    loss = E.cross_entropy(logits, tp_ours, reduction=reduction)
    tloss = TF.cross_entropy(tlogits, tp_theirs, reduction=reduction)
    close(loss, tloss)
    seed = rng.standard_normal(loss.shape)
    loss.backward(seed if reduction == "none" else None)
    tloss.backward(torch.tensor(seed) if reduction == "none" else None)
    for a, b in zip(ours + [tp_ours], theirs + [tp_theirs]):
        close(a.grad, b.grad)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_and_mse_loss_reductions(rng, reduction):
    (x, y), (tx, ty) = leaves(rng.standard_normal((5, 4)), rng.standard_normal((5, 4)))
    target = np.array([3, 0, 0, 2, 1])
    nll = E.nll_loss(E.log_softmax(x), target, reduction)
    mse = E.mse_loss(x, y, reduction)
    tnll = TF.nll_loss(TF.log_softmax(tx, -1), torch.tensor(target), reduction=reduction)
    tmse = TF.mse_loss(tx, ty, reduction=reduction)
    if reduction == "none":
        mse, tmse = mse.sum(-1), tmse.sum(-1)
    close(nll, tnll)
    close(mse, tmse)
    loss, tloss = nll + mse, tnll + tmse
    close(loss, tloss)
    seed = rng.standard_normal(loss.shape)
    loss.backward(seed if reduction == "none" else None)
    tloss.backward(torch.tensor(seed) if reduction == "none" else None)
    close(x.grad, tx.grad)
    close(y.grad, ty.grad)


# --------------------------------------------------------------------------- softmax family


@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_and_log_softmax(rng, op, axis):
    (x,), (tx,) = leaves(rng.standard_normal((2, 3, 4)) * 3)
    out = getattr(E, op)(x, axis=axis)
    tout = getattr(torch, op)(tx, dim=axis)
    close(out, tout)
    seed = rng.standard_normal(out.shape)
    out.backward(seed)
    tout.backward(torch.tensor(seed))
    close(x.grad, tx.grad)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [0, -1, (0, 2), (1, -1), (0, 1, 2)])
def test_logsumexp(rng, axis, keepdims):
    (x,), (tx,) = leaves(rng.standard_normal((2, 3, 4)) * 3)
    out = E.logsumexp(x, axis=axis, keepdims=keepdims)
    tout = torch.logsumexp(tx, dim=axis, keepdim=keepdims)
    close(out, tout)
    seed = rng.standard_normal(out.shape)
    out.backward(seed)
    tout.backward(torch.tensor(seed))
    close(x.grad, tx.grad)


def test_logsumexp_all_axes_and_large_values(rng):
    data = rng.standard_normal((3, 4)) * 10 + 700      # exp would overflow without the shift
    (x,), (tx,) = leaves(data)
    out = E.logsumexp(x)
    tout = torch.logsumexp(tx, dim=(0, 1))
    close(out, tout)
    out.backward()
    tout.backward()
    close(x.grad, tx.grad)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp"])
def test_softmax_family_second_derivatives(rng, op):
    """Differentiate the (recorded) gradient once more: both engines agree."""
    (x,), (tx,) = leaves(rng.standard_normal((3, 4)))
    c, d = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    if op == "logsumexp":
        out, tout = E.logsumexp(x, axis=-1) * c[:, 0], torch.logsumexp(tx, dim=-1) * torch.tensor(c[:, 0])
    else:
        out, tout = getattr(E, op)(x, axis=-1) * c, getattr(torch, op)(tx, dim=-1) * torch.tensor(c)
    (g,) = autograd.grad(out.sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad(tout.sum(), tx, create_graph=True)
    close(g, tg)
    (gg,) = autograd.grad((g * d).sum(), x)
    (tgg,) = torch.autograd.grad((tg * torch.tensor(d)).sum(), tx)
    close(gg, tgg)


# --------------------------------------------------------------------------- second derivatives


def _hess_fn(ns, W):
    def f(x):
        return ((ns.tanh(W @ x) ** 2).sum() + ns.logsumexp(x, 0) + (ns.sin(x) * x).sum()
                + (x[0] * x[1] * x[2]))
    return f


class _OurNS:
    tanh, sin = staticmethod(E.tanh), staticmethod(E.sin)
    logsumexp = staticmethod(lambda x, axis: E.logsumexp(x, axis=axis))


class _TorchNS:
    tanh, sin = staticmethod(torch.tanh), staticmethod(torch.sin)
    logsumexp = staticmethod(lambda x, axis: torch.logsumexp(x, dim=axis))


def test_hessian_matches_torch_functional_hessian(rng):
    W = rng.standard_normal((3, 4))
    x = rng.standard_normal(4)
    ours = F.hessian(_hess_fn(_OurNS, Tensor(W)), x)
    theirs = torch.autograd.functional.hessian(_hess_fn(_TorchNS, torch.tensor(W)), torch.tensor(x))
    close(ours, theirs)
    close(ours, ours.T, rtol=1e-12)


def test_hessian_of_mlp_loss_with_several_inputs_matches_torch(rng):
    x = rng.standard_normal((5, 3))
    y = rng.standard_normal(5)
    w1, w2 = rng.standard_normal((3, 4)), rng.standard_normal(4)

    def loss(xt, yt, ns_tanh, mse):
        return lambda w1, w2: mse(ns_tanh(xt @ w1) @ w2, yt)

    ours = F.hessian(loss(Tensor(x), Tensor(y), E.tanh, E.mse_loss), (w1, w2))
    theirs = torch.autograd.functional.hessian(
        loss(torch.tensor(x), torch.tensor(y), torch.tanh, TF.mse_loss),
        (torch.tensor(w1), torch.tensor(w2)))
    for i in range(2):
        for j in range(2):
            close(ours[i][j], theirs[i][j])


def test_jacobian_jvp_vjp_hvp_match_torch_functional(rng):
    W = rng.standard_normal((3, 4))
    x, v, u = rng.standard_normal(4), rng.standard_normal(4), rng.standard_normal(3)

    def vec(ns_tanh, Wt):
        return lambda t: ns_tanh(Wt @ (t * t)) * t[:3]

    ours_f, torch_f = vec(E.tanh, Tensor(W)), vec(torch.tanh, torch.tensor(W))
    tx, tv, tu = map(torch.tensor, (x, v, u))
    close(F.jacobian(ours_f, x), torch.autograd.functional.jacobian(torch_f, tx))
    close(F.jvp(ours_f, x, v)[1], torch.autograd.functional.jvp(torch_f, tx, tv)[1])
    close(F.vjp(ours_f, x, u)[1], torch.autograd.functional.vjp(torch_f, tx, tu)[1])
    scalar_f = _hess_fn(_OurNS, Tensor(W))
    torch_scalar_f = _hess_fn(_TorchNS, torch.tensor(W))
    close(F.hvp(scalar_f, x, v)[1], torch.autograd.functional.hvp(torch_scalar_f, tx, tv)[1])


def test_third_derivative_through_nested_create_graph(rng):
    (x,), (tx,) = leaves(rng.standard_normal(3))

    def f(ns, t):
        return (ns.sigmoid(t) * ns.cos(t) + t ** 3).sum()

    (g1,) = autograd.grad(f(E, x), x, create_graph=True)
    (tg1,) = torch.autograd.grad(f(torch, tx), tx, create_graph=True)
    (g2,) = autograd.grad(g1.sum(), x, create_graph=True)
    (tg2,) = torch.autograd.grad(tg1.sum(), tx, create_graph=True)
    (g3,) = autograd.grad(g2.sum(), x)
    (tg3,) = torch.autograd.grad(tg2.sum(), tx)
    for ours, theirs in ((g1, tg1), (g2, tg2), (g3, tg3)):
        close(ours, theirs)


# --------------------------------------------------------------------------- conventions at kinks


def _grad_both(fn_ours, fn_torch, *arrays):
    ours, theirs = leaves(*arrays)
    fn_ours(*ours).sum().backward()
    fn_torch(*theirs).sum().backward()
    for a, b in zip(ours, theirs):
        close(a.grad, b.grad)


def test_relu_and_abs_at_zero_match_torch():
    x = np.array([-1.0, 0.0, 2.0])
    _grad_both(lambda t: t.relu() * 3, lambda t: torch.relu(t) * 3, x)
    _grad_both(lambda t: t.abs() * 3, lambda t: torch.abs(t) * 3, x)


def test_maximum_minimum_ties_split_the_gradient_like_torch():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])
    _grad_both(E.maximum, torch.maximum, a, b)
    _grad_both(E.minimum, torch.minimum, a, b)


def test_max_min_reductions_with_ties_match_torch_amax_amin():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    _grad_both(lambda t: t.max(axis=1) * np.array([1.0, 5.0]),
               lambda t: torch.amax(t, dim=1) * torch.tensor([1.0, 5.0], dtype=torch.float64), x)
    _grad_both(lambda t: t.min(axis=0), lambda t: torch.amin(t, dim=0), x)
    _grad_both(lambda t: t.max(), lambda t: torch.max(t), x)
    _grad_both(lambda t: t.min(), lambda t: torch.min(t), x)


def test_pow_exponent_gradient_at_zero_base_matches_torch():
    """d/db a**b at a = 0 (b > 0) is 0, as torch (and jax) give; no nan."""
    a, b = np.array([0.0, 1.5, 0.0]), np.array([2.0, 0.5, 1.0])
    _grad_both(lambda x, y: x ** y, lambda x, y: x ** y, a, b)


def test_pow_base_gradient_at_zero_base_with_constant_exponents_matches_torch():
    """Polynomial features x ** [0, 1, 2, 3] at x = 0: d/dx = [0, 1, 0, 0] (x**0 is constant)."""
    exps = np.arange(4.0)
    x = np.zeros(4)
    _grad_both(lambda t: t ** exps, lambda t: t ** torch.tensor(exps), x)
    t = Tensor(x, requires_grad=True)
    (t ** exps).sum().backward()
    close(t.grad, np.array([0.0, 1.0, 0.0, 0.0]))


# --------------------------------------------------------------------------- random programs

UNARY = {
    "exp_tanh": (lambda x: x.tanh().exp(), lambda x: torch.exp(torch.tanh(x))),
    "tanh": (lambda x: x.tanh(), torch.tanh),
    "sin": (E.sin, torch.sin),
    "cos": (lambda x: x.cos(), torch.cos),
    "sigmoid": (E.sigmoid, torch.sigmoid),
    "relu": (lambda x: x.relu(), torch.relu),
    "abs": (E.abs, torch.abs),
    "square": (lambda x: x ** 2, lambda x: x ** 2),
    "log1p_sq": (lambda x: E.log(1 + x * x), lambda x: torch.log(1 + x * x)),
    "sqrt1p_sq": (lambda x: (1 + x * x).sqrt(), lambda x: torch.sqrt(1 + x * x)),
}
BINARY = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub": (E.sub, torch.sub),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "div": (lambda a, b: a / (1 + b * b), lambda a, b: a / (1 + b * b)),
    "maximum": (E.maximum, torch.maximum),
}
# Variables: x0, x1 of shape (3,), x2 a scalar (binary ops broadcast), W (3, 3) for matmul.
N_VARS = 3
VAR_SHAPES = [(3,), (3,), ()]


def _expressions(depth):
    leaf = st.integers(0, N_VARS - 1).map(lambda i: ("var", i))
    if depth == 0:
        return leaf
    sub = _expressions(depth - 1)
    binary = st.tuples(st.sampled_from(sorted(BINARY)), sub, sub)
    return st.one_of(
        leaf,
        st.tuples(st.sampled_from(sorted(UNARY)), sub),
        binary,
        binary,     # twice: bigger trees
        st.tuples(st.just("matmul"), sub),
    )


EXPRESSIONS = _expressions(4)


def evaluate(expr, xs, W, engine):
    """engine 0: ours, 1: torch."""
    kind = expr[0]
    if kind == "var":
        return xs[expr[1]]
    if kind == "matmul":
        e = evaluate(expr[1], xs, W, engine)
        e = E.broadcast_to(e, (3,)) if engine == 0 else e.broadcast_to((3,))
        return W @ e
    if kind in UNARY:
        return UNARY[kind][engine](evaluate(expr[1], xs, W, engine))
    a, b = (evaluate(sub, xs, W, engine) for sub in expr[1:])
    return BINARY[kind][engine](a, b)


def show(expr):
    if expr[0] == "var":
        return f"x{expr[1]}"
    return f"{expr[0]}({', '.join(show(e) for e in expr[1:])})"


@settings(max_examples=50, deadline=None, derandomize=True, database=None)
@given(expr=EXPRESSIONS, seed=st.integers(0, 2 ** 32 - 1))
def test_random_programs_match_torch(expr, seed):
    g = np.random.default_rng(seed)
    arrays = [g.standard_normal(s) for s in VAR_SHAPES] + [g.standard_normal((3, 3)) / 2]
    weights = g.standard_normal(3)
    ours, theirs = leaves(*arrays)

    out = (evaluate(expr, ours[:N_VARS], ours[N_VARS], 0) * weights).sum()
    tout = (evaluate(expr, theirs[:N_VARS], theirs[N_VARS], 1) * torch.tensor(weights)).sum()
    grads = autograd.grad(out, ours, allow_unused=True, materialize_grads=True)
    tgrads = torch.autograd.grad(tout, theirs, allow_unused=True, materialize_grads=True)

    note = f"program {show(expr)}, seed {seed}"
    scale = 1 + abs(tout.item())
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-10, atol=1e-12 * scale,
                               err_msg=note)
    for i, (gi, tgi) in enumerate(zip(grads, tgrads)):
        tgi = tgi.numpy()
        gi = gi.data if isinstance(gi, Tensor) else gi
        assert gi.shape == tgi.shape, note
        np.testing.assert_allclose(gi, tgi, rtol=1e-10, atol=1e-12 * (1 + np.abs(tgi).max()),
                                   err_msg=f"{note}, input {i}")
