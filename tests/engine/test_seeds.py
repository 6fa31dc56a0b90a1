"""The four forum threads (``../shared/seeds`` beside the repository), reproduced with diffcompare.engine.

Each test re-runs one example from a thread and checks every number and every
piece of graph structure the thread states (or that follows from it by hand).

- 000: how autograd "averages" over a minibatch: ``(1/T).mean()``, ``y = x*w``,
  ``L = y.mean()``, retain_grad, the graph behind it.
- 001: a linear layer's backward (``inp.g = out.g @ w.t()``, ``w.g``, ``b.g =
  out.g.sum(0)``) and mean vs sum reduction.
- 002: the ``gradient`` argument of ``backward`` (vector-Jacobian products) and
  accumulation over several backward calls.
- 003: grad_fn / next_functions / AccumulateGrad, saved tensors and version
  counters, unbind, the "complicated example", retain_grad and detach.
"""
import warnings

import numpy as np
import pytest

import diffcompare.engine as E
from diffcompare.engine import AccumulateGrad, Tensor

RTOL = 1e-12   # float64 results: computed the same way, so only rounding differs


def close(actual, expected, rtol=RTOL, atol=0.0):
    actual = actual.data if isinstance(actual, Tensor) else actual
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def graph_nodes(root):
    """Every node reachable from ``root`` through next_functions (root first)."""
    seen, order, stack = set(), [], [root]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        stack.extend(n for n, _ in reversed(node.next_functions))
    return order


def in_edges(root, target):
    """How many (node -> target) edges the graph below ``root`` has."""
    return sum(1 for node in graph_nodes(root) for n, _ in node.next_functions if n is target)


def structure(node):
    """The graph below ``node`` as nested (name, ((child structure, input_nr), ...))."""
    if node is None:
        return None
    return (node.name(), tuple((structure(n), nr) for n, nr in node.next_functions))


def torch_structure(node):
    if node is None:
        return None
    name = node.name().replace("torch::autograd::", "")   # its C++ AccumulateGrad
    return (name, tuple((torch_structure(n), nr) for n, nr in node.next_functions))


# =========================================================================== seed 000


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-6)])
def test_000_mean_of_reciprocal_gradient(dtype, rtol):
    """T = arange(10.) + 1; (1/T).mean(); T.grad = -1 / (10 T^2)."""
    T = Tensor(np.arange(10, dtype=dtype) + 1)
    T.requires_grad = True
    scalar_result = (1 / T).mean()
    assert scalar_result.grad_fn.name() == "MeanBackward0"
    close(scalar_result, np.mean(1.0 / np.arange(1.0, 11.0)), rtol=rtol)   # 0.2929
    scalar_result.backward()
    x = np.arange(1.0, 11.0)
    assert T.grad.dtype == dtype
    assert T.grad.shape == (10,)
    close(T.grad, -1.0 / (10.0 * x ** 2), rtol=rtol)
    # the printed values of the thread (torch, float32, 4 decimals)
    close(T.grad, [-0.1000, -0.0250, -0.0111, -0.0063, -0.0040, -0.0028, -0.0020, -0.0016,
                   -0.0012, -0.0010], rtol=0, atol=5e-5)


def test_000_gradient_of_average_is_average_of_gradients():
    """'The average of the gradients is the gradient of the average.'"""
    x = np.array([0.5, 1.0, 2.0, 4.0])
    w = Tensor([2.0, -1.0], requires_grad=True)
    per_sample = []
    for xi in x:
        w.grad = None
        loss_i = ((w * xi).sum()) ** 2          # any non-linear per-sample loss
        loss_i.backward()
        per_sample.append(w.grad.data.copy())
    w.grad = None
    losses = ((Tensor(x).reshape(4, 1) * w).sum(axis=1)) ** 2
    losses.mean().backward()
    close(w.grad, np.mean(per_sample, axis=0))
    # hand value: d/dw (x (w0 + w1))^2 = 2 x^2 (w0 + w1) for both components
    close(w.grad, np.full(2, np.mean(2 * x ** 2 * 1.0)))


def test_000_loss_of_first_sample_only_gives_first_sample_gradient():
    """'compute the loss for the first sample, ignoring the other nine ... you
    would only get the gradient of that first sample.'"""
    T = Tensor(np.arange(10.0) + 1, requires_grad=True)
    (1 / T)[0].backward()
    expected = np.zeros(10)
    expected[0] = -1.0
    np.testing.assert_array_equal(T.grad.data, expected)


@pytest.fixture
def y_x_w():
    """w = [2.] (requires grad), x = [1., 2.] (does not), y = x * w, L = y.mean()."""
    w = Tensor([2.0], requires_grad=True)
    x = Tensor([1.0, 2.0])
    y = E.mul(x, w)
    L = y.mean()
    return w, x, y, L


def test_000_y_equals_x_times_w_values_and_grads(y_x_w):
    w, x, y, L = y_x_w
    assert w.requires_grad and w.is_leaf and w.grad_fn is None
    assert not x.requires_grad and x.is_leaf
    assert y.requires_grad and not y.is_leaf
    assert not L.is_leaf
    close(y, [2.0, 4.0])
    close(L, 3.0)
    assert "grad_fn=<MulBackward0>" in repr(y)
    assert "grad_fn=<MeanBackward0>" in repr(L)

    y.retain_grad()
    L.retain_grad()
    L.backward(retain_graph=True)

    close(L.grad, 1.0)                    # unit "seed" of the chain rule
    assert L.grad.shape == ()
    close(y.grad, [0.5, 0.5])             # dL/dy_i
    assert x.grad is None                 # leaf with requires_grad=False
    close(w.grad, [1.5])                  # sum_i dL/dy_i * x_i
    assert w.grad.shape == (1,)


def test_000_graph_structure(y_x_w):
    w, x, y, L = y_x_w
    assert L.grad_fn.name() == "MeanBackward0"
    (mul_edge,) = L.grad_fn.next_functions
    assert mul_edge[0] is y.grad_fn and mul_edge[1] == 0
    assert mul_edge[0].name() == "MulBackward0"
    x_edge, w_edge = y.grad_fn.next_functions
    assert x_edge == (None, 0)                           # x needs no gradient
    assert isinstance(w_edge[0], AccumulateGrad)
    assert w_edge[0].name() == "AccumulateGrad" and w_edge[1] == 0
    assert w_edge[0].variable is w
    assert w_edge[0].next_functions == ()
    assert [n.name() for n in graph_nodes(L.grad_fn)] == [
        "MeanBackward0", "MulBackward0", "AccumulateGrad"]


def test_000_mul_node_saves_only_what_backward_needs(y_x_w):
    """dy_i/dw is not computed in the forward pass; MulBackward0 keeps x (enough
    to compute it later) and nothing else, since x needs no gradient."""
    w, x, y, L = y_x_w
    node = y.grad_fn
    assert sorted(node.saved) == ["self"]
    saved = node.saved["self"]
    assert saved.shape == (2,)
    assert saved.nbytes == x.data.nbytes == 16
    (arr,) = node.saved_tensors
    np.testing.assert_array_equal(arr, [1.0, 2.0])


def test_000_one_tensor_arm_whatever_the_batch_size():
    """The graph has one node per tensor op, not one per sample."""
    counts = []
    for batch in (2, 1000):
        w = Tensor([2.0], requires_grad=True)
        x = Tensor(np.linspace(1, 2, batch))
        L = (x * w).mean()
        counts.append([n.name() for n in graph_nodes(L.grad_fn)])
        L.backward()
        close(w.grad, [np.linspace(1, 2, batch).mean()])
    assert counts[0] == counts[1] == ["MeanBackward0", "MulBackward0", "AccumulateGrad"]


def test_000_tensors_depending_only_on_no_grad_leaves_are_not_in_graph():
    w = Tensor([2.0], requires_grad=True)
    x = Tensor([1.0, 2.0])
    x2 = (x.exp() + 1) * 3                      # only requires_grad=False leaves
    assert x2.grad_fn is None and not x2.requires_grad and x2.is_leaf
    L = (x2 * w).mean()
    assert [n.name() for n in graph_nodes(L.grad_fn)] == [
        "MeanBackward0", "MulBackward0", "AccumulateGrad"]
    assert L.grad_fn.next_functions[0][0].next_functions[0] == (None, 0)
    L.backward()
    close(w.grad, [np.mean((np.exp([1.0, 2.0]) + 1) * 3)])
    assert x.grad is None and x2.grad is None


# =========================================================================== seed 001


def _linear_data(m, bias_shape):
    rng = np.random.default_rng(1)
    bs, n = 5, 4
    inp = rng.standard_normal((bs, n))
    w = rng.standard_normal((n, m))
    b = rng.standard_normal(bias_shape)
    G = rng.standard_normal((bs, m))            # out.g, the incoming gradient
    return inp, w, b, G


MATMULS = [pytest.param(lambda a, b: a @ b, id="at-operator"),
           pytest.param(lambda a, b: E.matmul(a, b), id="matmul-function")]


@pytest.mark.parametrize("matmul", MATMULS)
@pytest.mark.parametrize("bias_shape", [(3,), (1, 3)])
def test_001_linear_layer_backward_matches_hand_formulas(matmul, bias_shape):
    inp_a, w_a, b_a, G = _linear_data(3, bias_shape)
    inp = Tensor(inp_a, requires_grad=True)
    w = Tensor(w_a, requires_grad=True)
    b = Tensor(b_a, requires_grad=True)
    out = matmul(inp, w) + b
    close(out, inp_a @ w_a + b_a)
    out.backward(G)

    # inp.g = out.g @ w.t()
    close(inp.grad, G @ w_a.T)
    # w.g = inp.T @ out.g, and the thread's unsqueeze/sum form (NumPy and engine)
    close(w.grad, inp_a.T @ G)
    close(w.grad, (inp_a[:, :, None] * G[:, None, :]).sum(0))
    seed_form = (Tensor(inp_a).unsqueeze(-1) * Tensor(G).unsqueeze(1)).sum(0)
    close(w.grad, seed_form.data)
    # b.g = out.g.sum(0): the bias was broadcast over the batch, its gradient summed back
    assert b.grad.shape == bias_shape
    close(b.grad, G.sum(0).reshape(bias_shape))
    assert inp.grad.shape == inp_a.shape and w.grad.shape == w_a.shape


@pytest.mark.parametrize("matmul", MATMULS)
def test_001_single_sample_vector_layer(matmul):
    """The thread's per-sample view: x a vector of n inputs, f = x @ w + b with m
    outputs; dL/dx = dL/df @ w.T (n values), dL/dw = outer(x, dL/df), dL/db = dL/df."""
    rng = np.random.default_rng(3)
    x_a, w_a, b_a, g = (rng.standard_normal(4), rng.standard_normal((4, 3)),
                        rng.standard_normal(3), rng.standard_normal(3))
    x = Tensor(x_a, requires_grad=True)
    w = Tensor(w_a, requires_grad=True)
    b = Tensor(b_a, requires_grad=True)
    f = matmul(x, w) + b
    assert f.shape == (3,)
    close(f, x_a @ w_a + b_a)
    f.backward(g)
    assert x.grad.shape == (4,) and w.grad.shape == (4, 3) and b.grad.shape == (3,)
    close(x.grad, g @ w_a.T)
    close(x.grad, [sum(g[j] * w_a[i, j] for j in range(3)) for i in range(4)])
    close(w.grad, np.outer(x_a, g))
    close(b.grad, g)


@pytest.mark.parametrize("matmul", MATMULS)
def test_001_bias_sum_comes_from_broadcasting(matmul):
    """No explicit sum/broadcast node: the AddBackward0 edge goes straight to b's
    AccumulateGrad, yet b.grad is the batch sum, with shape (m,)."""
    inp_a, w_a, b_a, G = _linear_data(3, (3,))
    w = Tensor(w_a, requires_grad=True)
    b = Tensor(b_a, requires_grad=True)
    out = matmul(Tensor(inp_a), w) + b
    assert out.grad_fn.name() == "AddBackward0"
    b_node, b_nr = out.grad_fn.next_functions[1]
    assert isinstance(b_node, AccumulateGrad) and b_node.variable is b and b_nr == 0
    out.backward(G)
    assert b.grad.shape == (3,)
    close(b.grad, G.sum(0))


@pytest.mark.parametrize("matmul", MATMULS)
def test_001_input_gradient_only_when_asked_for(matmul):
    """'If you're not using the gradients, you don't have to compute them':
    with inp not requiring grad, inp.grad stays None and w is not even saved."""
    inp_a, w_a, b_a, G = _linear_data(3, (3,))
    inp = Tensor(inp_a)
    w = Tensor(w_a, requires_grad=True)
    mm = matmul(inp, w)
    assert mm.grad_fn.next_functions[0] == (None, 0)
    assert sorted(mm.grad_fn.saved) == ["self"]          # inp, for w.g
    np.testing.assert_array_equal(mm.grad_fn.saved_tensors[0], inp_a)
    mm.backward(G)
    assert inp.grad is None
    close(w.grad, inp_a.T @ G)


def test_001_lesson_model_lin_relu_lin_mse_matches_manual_backward():
    """The fast.ai lesson's model with its hand-written *_grad functions."""
    rng = np.random.default_rng(7)
    bs, n, nh = 6, 4, 5
    x_a = rng.standard_normal((bs, n))
    targ = rng.standard_normal(bs)
    w1_a, b1_a = rng.standard_normal((n, nh)), rng.standard_normal(nh)
    w2_a, b2_a = rng.standard_normal((nh, 1)), rng.standard_normal(1)

    # manual forward and backward (the lesson's mse_grad / relu_grad / lin_grad)
    l1 = x_a @ w1_a + b1_a
    l2 = np.maximum(l1, 0)
    out = l2 @ w2_a + b2_a
    out_g = 2.0 * (out.squeeze(-1) - targ)[:, None] / bs
    w2_g = (l2[:, :, None] * out_g[:, None, :]).sum(0)
    b2_g = out_g.sum(0)
    l2_g = out_g @ w2_a.T
    l1_g = (l1 > 0) * l2_g
    w1_g = (x_a[:, :, None] * l1_g[:, None, :]).sum(0)
    b1_g = l1_g.sum(0)
    x_g = l1_g @ w1_a.T

    x = Tensor(x_a, requires_grad=True)
    w1, b1 = Tensor(w1_a, requires_grad=True), Tensor(b1_a, requires_grad=True)
    w2, b2 = Tensor(w2_a, requires_grad=True), Tensor(b2_a, requires_grad=True)
    e_out = E.matmul(E.relu(E.matmul(x, w1) + b1), w2) + b2
    loss = E.mse_loss(e_out.squeeze(-1), Tensor(targ))
    close(loss, np.mean((out.squeeze(-1) - targ) ** 2))
    loss.backward()
    for got, want in [(x, x_g), (w1, w1_g), (b1, b1_g), (w2, w2_g), (b2, b2_g)]:
        assert got.grad.shape == want.shape
        close(got.grad, want)


def test_001_mse_mean_and_sum_reduction_differ_by_batch_size():
    inp_a, w_a, b_a, _ = _linear_data(1, (1,))
    bs = inp_a.shape[0]
    targ = np.linspace(-1, 1, bs).reshape(bs, 1)
    grads = {}
    for reduction in ("mean", "sum"):
        w = Tensor(w_a, requires_grad=True)
        b = Tensor(b_a, requires_grad=True)
        out = E.matmul(Tensor(inp_a), w) + b
        loss = E.mse_loss(out, Tensor(targ), reduction=reduction)
        loss.backward()
        grads[reduction] = (loss.item(), w.grad.data.copy(), b.grad.data.copy())
    (l_mean, w_mean, b_mean), (l_sum, w_sum, b_sum) = grads["mean"], grads["sum"]
    close(l_sum, bs * l_mean)
    close(w_sum, bs * w_mean)
    close(b_sum, bs * b_mean)
    # and the mean gradient is the hand formula with out.g = 2 (out - targ) / bs
    out = inp_a @ w_a + b_a
    out_g = 2 * (out - targ) / bs
    close(w_mean, inp_a.T @ out_g)
    close(b_mean, out_g.sum(0))


# =========================================================================== seed 002


def test_002_example1_weighted_vector_jacobian_product_float64():
    a = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = Tensor([3.0, 4.0, 5.0], requires_grad=True)
    c = Tensor([6.0, 7.0, 8.0], requires_grad=True)
    y = 3 * a + 2 * b * b + E.log(c)
    close(y, 3 * np.array([1.0, 2, 3]) + 2 * np.array([3.0, 4, 5]) ** 2 + np.log([6.0, 7, 8]))
    y.backward([0.1, 1.0, 0.0001], retain_graph=True)
    close(a.grad, [0.3, 3.0, 0.0003])
    close(b.grad, [1.2, 16.0, 0.002])
    close(c.grad, [1 / 60, 1 / 7, 1.25e-5])
    assert a.grad.dtype == b.grad.dtype == c.grad.dtype == np.float64


def test_002_example1_float32_matches_printed_values():
    """The thread's printout (torch float32, 5 significant digits)."""
    f32 = np.float32
    a = Tensor(np.array([1.0, 2.0, 3.0], f32), requires_grad=True)
    b = Tensor(np.array([3.0, 4.0, 5.0], f32), requires_grad=True)
    c = Tensor(np.array([6.0, 7.0, 8.0], f32), requires_grad=True)
    y = 3 * a + 2 * b * b + E.log(c)
    y.backward(np.array([0.1, 1.0, 0.0001], f32), retain_graph=True)
    assert a.grad.dtype == b.grad.dtype == c.grad.dtype == np.float32
    close(a.grad, [3.0000e-01, 3.0000e+00, 3.0000e-04], rtol=1e-4)
    close(b.grad, [1.2000e+00, 1.6000e+01, 2.0000e-03], rtol=1e-4)
    close(c.grad, [1.6667e-02, 1.4286e-01, 1.2500e-05], rtol=1e-4)


def test_002_example2_scalar_point_gradients():
    a = Tensor(0.1, requires_grad=True)
    b = Tensor(1.0, requires_grad=True)
    c = Tensor(0.1, requires_grad=True)
    y = 3 * a + 2 * b * b + E.log(c)
    y.backward()
    close(a.grad, 3.0)
    close(b.grad, 4.0)
    close(c.grad, 10.0)
    assert a.grad.shape == b.grad.shape == c.grad.shape == ()


def test_002_example4_gradients_accumulate_over_two_backward_calls():
    a = Tensor(1.0, requires_grad=True)
    b = Tensor(1.0, requires_grad=True)
    c = Tensor(1.0, requires_grad=True)
    y = 3 * a + 2 * b * b + E.log(c)
    y.backward(retain_graph=True)
    close(a.grad, 3.0)
    close(b.grad, 4.0)
    close(c.grad, 1.0)
    y.backward()
    close(a.grad, 6.0)
    close(b.grad, 8.0)
    close(c.grad, 2.0)


def test_002_one_hot_gradients_of_z_equals_2x():
    x = Tensor([[1.0, 2.0, 3.0, 4.0]], requires_grad=True)
    z = 2 * x
    loss = z.sum(dim=1)
    assert loss.shape == (1,)

    z.backward([[1.0, 0.0, 0.0, 0.0]], retain_graph=True)
    np.testing.assert_array_equal(x.grad.data, [[2.0, 0.0, 0.0, 0.0]])   # dz_1/dx
    x.grad.zero_()
    np.testing.assert_array_equal(x.grad.data, np.zeros((1, 4)))

    z.backward([[0.0, 1.0, 0.0, 0.0]], retain_graph=True)
    np.testing.assert_array_equal(x.grad.data, [[0.0, 2.0, 0.0, 0.0]])   # dz_2/dx
    x.grad.zero_()

    z.backward([[1.0, 1.0, 1.0, 1.0]], retain_graph=True)
    np.testing.assert_array_equal(x.grad.data, [[2.0, 2.0, 2.0, 2.0]])
    x.grad.zero_()

    loss.backward()                    # same as loss.backward([1.0])
    np.testing.assert_array_equal(x.grad.data, [[2.0, 2.0, 2.0, 2.0]])
    assert x.grad.shape == (1, 4)


def test_002_without_zero_the_one_hot_gradients_add_up():
    x = Tensor([[1.0, 2.0, 3.0, 4.0]], requires_grad=True)
    z = 2 * x
    z.backward([[1.0, 0.0, 0.0, 0.0]], retain_graph=True)
    z.backward([[0.0, 1.0, 0.0, 0.0]])
    np.testing.assert_array_equal(x.grad.data, [[2.0, 2.0, 0.0, 0.0]])


def test_002_loss_backward_default_equals_explicit_one():
    grads = []
    for seed in (None, [1.0]):
        x = Tensor([[1.0, 2.0, 3.0, 4.0]], requires_grad=True)
        loss = (2 * x * x).sum(dim=1)
        loss.backward(seed)
        grads.append(x.grad.data.copy())
    np.testing.assert_array_equal(grads[0], grads[1])
    close(grads[0], [[4.0, 8.0, 12.0, 16.0]])


def test_002_weighted_several_losses_is_weighted_sum_of_gradients():
    """loss = [loss1, loss2, loss3]; loss.backward([-0.1, 1.0, 0.0001]) gives
    -0.1 dloss1/dw + dloss2/dw + 0.0001 dloss3/dw."""
    w_a = np.array([0.5, -2.0, 3.0])

    def losses(w):
        return [(w * w).sum(), (w * Tensor([1.0, 2.0, 3.0])).sum(), E.exp(w).sum()]

    single = []
    for k in range(3):
        w = Tensor(w_a, requires_grad=True)
        losses(w)[k].backward()
        single.append(w.grad.data.copy())
    weights = [-0.1, 1.0, 0.0001]
    w = Tensor(w_a, requires_grad=True)
    E.stack(losses(w)).backward(weights)
    close(w.grad, sum(c * g for c, g in zip(weights, single)))
    close(w.grad, -0.1 * 2 * w_a + np.array([1.0, 2.0, 3.0]) + 0.0001 * np.exp(w_a))


# =========================================================================== seed 003


def test_003_only_one_input_requires_grad():
    a = Tensor(2.0, requires_grad=True)
    b = Tensor(3.0)
    assert not b.requires_grad and Tensor(2.0).requires_grad is False
    c = a * b
    assert c.requires_grad and not c.is_leaf
    assert c.grad_fn.name() == "MulBackward0"
    (a_node, a_nr), b_edge = c.grad_fn.next_functions
    assert isinstance(a_node, AccumulateGrad) and a_node.variable is a and a_nr == 0
    assert b_edge == (None, 0)
    # the node keeps b: what d(a*b)/da needs
    assert sorted(c.grad_fn.saved) == ["other"]
    assert c.grad_fn.saved_tensors == (3.0,)
    c.backward()
    close(a.grad, 3.0)
    assert b.grad is None


def test_003_no_input_requires_grad_no_graph():
    c = Tensor(2.0) * Tensor(3.0)
    assert not c.requires_grad and c.grad_fn is None and c.is_leaf


@pytest.fixture
def simple_example():
    """a = 2, b = 3, c = a*b, d = 4, e = c*d; a, b, d require grad."""
    a = Tensor(2.0, requires_grad=True)
    b = Tensor(3.0, requires_grad=True)
    c = a * b
    d = Tensor(4.0, requires_grad=True)
    e = c * d
    return a, b, c, d, e


def test_003_simple_example_gradients(simple_example):
    a, b, c, d, e = simple_example
    close(e, 24.0)
    e.backward()
    close(a.grad, 12.0)      # de/dc * dc/da = 4 * 3
    close(b.grad, 8.0)       # 4 * 2
    close(d.grad, 6.0)       # c
    with pytest.warns(UserWarning):
        assert c.grad is None


def test_003_simple_example_next_functions(simple_example):
    a, b, c, d, e = simple_example
    assert e.grad_fn.name() == c.grad_fn.name() == "MulBackward0"
    (c_node, c_nr), (d_node, d_nr) = e.grad_fn.next_functions
    assert c_node is c.grad_fn and c_nr == 0
    assert isinstance(d_node, AccumulateGrad) and d_node.variable is d and d_nr == 0
    (a_node, a_nr), (b_node, b_nr) = c.grad_fn.next_functions
    assert a_node.name() == b_node.name() == "AccumulateGrad"
    assert a_node.variable is a and b_node.variable is b and a_nr == b_nr == 0
    assert a.grad_fn is None and a.is_leaf


def test_003_saved_tensors_of_mul(simple_example):
    a, b, c, d, e = simple_example
    node = c.grad_fn
    assert sorted(node.saved) == ["other", "self"]
    for name, value in (("self", 2.0), ("other", 3.0)):
        st = node.saved[name]
        assert st.shape == ()
        assert st.nbytes == 8
        assert st.dtype == np.float64
    assert node.saved_tensors == (2.0, 3.0)          # a, b in save order
    assert all(isinstance(t, np.ndarray) for t in node.saved_tensors)
    assert e.grad_fn.saved_tensors == (6.0, 4.0)     # c, d
    e.backward()
    # freed after a backward without retain_graph
    assert node.saved == {}
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        node.saved_tensors


def test_003_inplace_on_saved_tensor_errors(simple_example):
    a, b, c, d, e = simple_example
    c += 1
    assert c._version == 1
    with pytest.raises(RuntimeError) as info:
        e.backward()
    msg = str(info.value)
    assert "MulBackward0" in msg
    assert "shape ()" in msg
    assert "version 1" in msg
    assert "expected version 0" in msg
    assert "modified by an inplace operation" in msg


def test_003_inplace_is_fine_when_add_saves_nothing():
    a = Tensor(2.0, requires_grad=True)
    b = Tensor(3.0, requires_grad=True)
    c = a * b
    d = Tensor(4.0, requires_grad=True)
    e = c + d
    assert e.grad_fn.name() == "AddBackward0"
    assert e.grad_fn.saved == {} and e.grad_fn.saved_tensors == ()
    c += 1
    close(c, 7.0)
    e.backward()
    close(a.grad, 3.0)
    close(b.grad, 2.0)
    close(d.grad, 1.0)


def test_003_unbind_one_node_three_outputs():
    a = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    b, c, d = a.unbind()
    assert b.grad_fn is c.grad_fn is d.grad_fn
    unbind = b.grad_fn
    assert unbind.name() == "UnbindBackward0"
    assert [t.output_nr for t in (b, c, d)] == [0, 1, 2]
    assert unbind.next_functions[0][0].variable is a

    e = b * c * d
    mul2 = e.grad_fn
    mul1, nr = mul2.next_functions[0]
    assert mul1.name() == mul2.name() == "MulBackward0" and nr == 0
    assert mul1.next_functions == ((unbind, 0), (unbind, 1))
    assert mul2.next_functions[1] == (unbind, 2)
    assert in_edges(e.grad_fn, unbind) == 3

    e.backward()
    close(e, 6.0)
    close(a.grad, [2.0 * 3.0, 1.0 * 3.0, 1.0 * 2.0])


def _complicated(values, lib):
    """The 'complicated example'; ``lib`` builds tensors (ours or torch's)."""
    va, vb, vd, vf, vh = values
    a, b = lib(va), lib(vb)
    c = a * b
    assert not c.requires_grad
    c.requires_grad = True
    d = lib(vd)
    e = d * c
    f = lib(vf)
    g = f * e
    h = lib(vh)
    h.requires_grad = True
    i = g / h
    j = i + h
    k = j * i
    return dict(a=a, b=b, c=c, d=d, e=e, f=f, g=g, h=h, i=i, j=j, k=k)


def _hand(values):
    va, vb, vd, vf, vh = values
    c = va * vb
    g = vf * vd * c
    i = g / vh
    dk_di = 2 * i + vh                 # k = (i + h) i
    return dict(k=(i + vh) * i, i=i, di=dk_di,
                dc=dk_di * vd * vf / vh,
                dh=i + dk_di * (-g / vh ** 2))


COMPLICATED_VALUES = [pytest.param((2.0, 2.0, 2.0, 2.0, 2.0), id="all-twos"),
                      pytest.param((2.0, 3.0, 5.0, 7.0, 1.5), id="distinct")]


@pytest.mark.parametrize("values", COMPLICATED_VALUES)
def test_003_complicated_example_gradients(values):
    t = _complicated(values, Tensor)
    hand = _hand(values)
    assert t["c"].is_leaf and t["c"].grad_fn is None and t["c"].requires_grad
    assert t["h"].is_leaf
    for name in ("a", "b", "d", "f"):
        assert not t[name].requires_grad
    for name in ("e", "g", "i", "j", "k"):
        assert t[name].requires_grad and not t[name].is_leaf
    t["i"].retain_grad()
    close(t["k"], hand["k"])
    t["k"].backward()
    close(t["c"].grad, hand["dc"])
    close(t["h"].grad, hand["dh"])
    close(t["i"].grad, hand["di"])
    for name in ("a", "b", "d", "f"):
        assert t[name].grad is None


def test_003_complicated_example_all_twos_numbers():
    """c = 4, e = 8, g = 16, i = 8, j = 10, k = 80; dk/di = 18, dk/dc = 36, dk/dh = -64."""
    t = _complicated((2.0,) * 5, Tensor)
    for name, v in dict(c=4.0, e=8.0, g=16.0, i=8.0, j=10.0, k=80.0).items():
        close(t[name], v)
    t["i"].retain_grad()
    t["k"].backward()
    close(t["i"].grad, 18.0)
    close(t["c"].grad, 36.0)
    close(t["h"].grad, -64.0)


def test_003_complicated_example_graph():
    t = _complicated((2.0,) * 5, Tensor)
    k, j, i, g, e = t["k"], t["j"], t["i"], t["g"], t["e"]
    assert k.grad_fn.name() == "MulBackward0"
    assert k.grad_fn.next_functions == ((j.grad_fn, 0), (i.grad_fn, 0))
    assert j.grad_fn.name() == "AddBackward0"
    assert i.grad_fn.name() == "DivBackward0"
    h_acc_from_add, _ = j.grad_fn.next_functions[1]
    h_acc_from_div, _ = i.grad_fn.next_functions[1]
    assert j.grad_fn.next_functions[0] == (i.grad_fn, 0)
    assert i.grad_fn.next_functions[0] == (g.grad_fn, 0)
    # h's one AccumulateGrad receives from two nodes (DivBackward0 and AddBackward0)
    assert h_acc_from_add is h_acc_from_div
    assert isinstance(h_acc_from_add, AccumulateGrad) and h_acc_from_add.variable is t["h"]
    assert in_edges(k.grad_fn, h_acc_from_add) == 2
    # i's two streams (from AddBackward0 and MulBackward0) converge at its DivBackward0
    assert in_edges(k.grad_fn, i.grad_fn) == 2
    # f and d are not in the graph; c is a leaf with its AccumulateGrad
    assert g.grad_fn.next_functions == ((None, 0), (e.grad_fn, 0))
    c_edge = e.grad_fn.next_functions
    assert c_edge[0] == (None, 0)
    assert isinstance(c_edge[1][0], AccumulateGrad) and c_edge[1][0].variable is t["c"]
    assert sorted({n.name() for n in graph_nodes(k.grad_fn)}) == [
        "AccumulateGrad", "AddBackward0", "DivBackward0", "MulBackward0"]
    assert len(graph_nodes(k.grad_fn)) == 7   # Mul k, Add j, Div i, Mul g, Mul e, Acc h, Acc c


@pytest.mark.parametrize("values", COMPLICATED_VALUES)
def test_003_complicated_example_matches_torch(values):
    torch = pytest.importorskip("torch")
    ours = _complicated(values, Tensor)
    theirs = _complicated(values, lambda v: torch.tensor(v, dtype=torch.float64))
    assert structure(ours["k"].grad_fn) == torch_structure(theirs["k"].grad_fn)
    ours["i"].retain_grad()
    theirs["i"].retain_grad()
    ours["k"].backward()
    theirs["k"].backward()
    close(ours["k"], theirs["k"].item())
    for name in ("c", "h", "i"):
        close(ours[name].grad, theirs[name].grad.numpy())
    for name in ("a", "b", "d", "f"):
        assert ours[name].grad is None and theirs[name].grad is None


def test_003_seed_graphs_match_torch_structure():
    torch = pytest.importorskip("torch")

    def build(lib, unbind):
        a = lib([1.0, 2.0, 3.0])
        b, c, d = unbind(a)
        e = b * c * d
        w = lib([2.0])
        L = (lib([1.0, 2.0], False) * w).mean()
        return e, L

    ours = build(lambda v, rg=True: Tensor(v, requires_grad=rg), lambda t: t.unbind())
    theirs = build(lambda v, rg=True: torch.tensor(v, dtype=torch.float64, requires_grad=rg),
                   lambda t: t.unbind())
    for o, t in zip(ours, theirs):
        assert structure(o.grad_fn) == torch_structure(t.grad_fn)


def test_003_retain_grad_on_intermediate():
    t = _complicated((2.0,) * 5, Tensor)
    t["i"].retain_grad()
    t["k"].backward()
    close(t["i"].grad, 18.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t["i"].grad                       # retained: no warning
    with pytest.warns(UserWarning, match="retain_grad"):
        assert t["j"].grad is None        # not retained


def test_003_detach():
    t = _complicated((2.0,) * 5, Tensor)
    k = t["k"]
    m = k.detach()
    assert m.is_leaf and m.grad_fn is None and not m.requires_grad
    assert np.shares_memory(m.data, k.data)
    close(m, 80.0)
    assert k.grad_fn is not None and k.requires_grad      # k itself unchanged
    assert k.item() == 80.0 and isinstance(k.item(), float)
    assert k.tolist() == 80.0
    # in-place on the detached tensor changes k's data and bumps the shared version
    assert k._version == m._version == 0
    m += 1
    assert m._version == 1 and k._version == 1
    close(k, 81.0)


def test_003_detach_inplace_breaks_backward_that_needs_original():
    """The shared counter is what protects the graph: k = j * i saved i, so
    modifying a detached i in place must make backward fail."""
    t = _complicated((2.0,) * 5, Tensor)
    i_det = t["i"].detach()
    i_det.mul_(2.0)
    with pytest.raises(RuntimeError, match="expected version 0"):
        t["k"].backward()


# --------------------------------------------------------------------------- the seed examples module
# diffcompare.seeds holds each thread's example once; the report and `diffcompare demo` show
# these records, so the numbers a reader sees are the ones checked here.

from diffcompare import seeds as S  # noqa: E402
from diffcompare.viz import libs  # noqa: E402


def test_seed_module_003_retain_grad_detach_no_grad_on_engine():
    rec = S.run(S.get("003-complicated"), libs.engine())
    assert rec.text("k") == "80"
    assert rec.text("i.grad (kept by i.retain_grad())") == "18"      # j + i = 10 + 8
    assert rec.text("j.grad (no retain_grad)") == "None"
    assert rec.text("reading j.grad warns") == "True"
    assert (rec.text("c.grad"), rec.text("h.grad")) == ("36", "-64")
    assert rec.text("m = k.detach(): m.requires_grad") == "False"
    assert rec.text("m.grad_fn") == "None" and rec.text("m.is_leaf") == "True"
    assert rec.text("m shares k's memory") == "True"
    assert rec.text("with no_grad(): n = k·2; n.requires_grad") == "False"
    assert rec.text("after the block, (k·2).requires_grad") == "True"
    assert rec.text("k.grad_fn saved") == "self = j 10; other = i 8"


def test_seed_module_version_counter_and_errors():
    rec = S.run(S.get("003-version-counter"), libs.engine())
    assert rec.text("c._version after c = a·b") == "0" and rec.text("c._version after c += 1") == "1"
    assert "modified by an inplace operation" in rec.text("e.backward() after c += 1 (MulBackward0 saved c)")
    assert rec.text("(c + d).grad_fn saved") == "(nothing)"
    assert rec.text("(c + d).backward() after c += 1") == "(no error)"
    assert rec.text("a second backward without retain_graph").startswith("RuntimeError: Trying to backward")


def test_seed_module_every_example_runs_and_draws_on_engine():
    for ex in S.EXAMPLES:
        rec = S.run(ex, libs.engine())
        assert rec.lines, ex.key
        assert ex.code and "rec." not in ex.code and "lib." not in ex.code, ex.key
        for g in rec.graphs:
            from diffcompare.viz.graph import to_svg
            assert 'class="legend"' in to_svg(g.root, names=g.names)


def test_seed_module_engine_and_torch_agree_except_known_differences():
    pytest.importorskip("torch")
    seen_known = set()
    for ex in S.EXAMPLES:
        for row in S.side_by_side(ex):
            assert row.torch is not None, (ex.key, row.label)
            if (ex.key, row.label) in S.KNOWN_DIFFERENCES:
                seen_known.add((ex.key, row.label))
                assert row.note
                continue
            assert row.same, (ex.key, row.label, row.engine, row.torch)
    assert ("001-linear-layer", "out.grad_fn.next_functions") in seen_known


def test_seed_module_flags_a_difference():
    rows = S.side_by_side(S.get("001-linear-layer"))
    row = next(r for r in rows if r.label == "out.grad_fn.next_functions")
    if row.torch is None:
        pytest.skip("torch not installed")
    assert row.same is False and "MmBackward0" in row.torch and "MatmulBackward0" in row.engine


def test_demo_writes_both_libraries_graphs_and_a_styled_page(tmp_path):
    from diffcompare import demo

    lines = []
    index = demo.run(tmp_path, echo=lines.append)
    page = index.read_text()
    assert "<style>" in page and "seed-001" in page and "lin → relu → lin → MSE" in page
    assert (tmp_path / "001-linear-layer-0-engine.svg").exists()
    assert any("i.grad (kept by i.retain_grad()): 18" in line for line in lines)


def test_seed_module_draws_graphs_before_backward_frees_them():
    rec = S.run(S.get("003-unbind"), libs.engine())      # e.backward() runs after the graph is recorded
    g = rec.graphs[0]
    assert "(released)" not in g.svg and "self = b" in g.svg and "other = c" in g.svg
    assert g.facts == "4 nodes (1 AccumulateGrad), 4 saved tensor(s), 16 bytes saved"   # float32


def test_seed_module_examples_are_pytorch_code_that_runs_as_is_on_both():
    import re

    import diffcompare.engine.torch as face

    torch = pytest.importorskip("torch")
    for ex in S.EXAMPLES:
        assert ex.code.startswith("import torch\n") and not re.search(r"\bnp\.", ex.code), ex.key
        ns = {}
        exec(ex.code, ns)
        assert all(v.dtype != torch.float64 for v in ns.values() if isinstance(v, torch.Tensor))
        with face.as_torch():
            ns = {}
            exec(ex.code, ns)
        assert all(v.dtype != np.float64 for v in ns.values() if isinstance(v, Tensor)), ex.key


def test_demo_prints_whole_multi_line_arrays_and_the_threads_code(tmp_path):
    from diffcompare import demo

    lines = []
    demo.run(tmp_path, echo=lines.append)
    out = "\n".join(lines)
    # every row of a 4×3 gradient, each under the one above (not only the first line)
    inp_grad = S.run(S.get("001-linear-layer"), libs.engine()).text("inp.grad")
    assert len(inp_grad.splitlines()) == 4
    assert "  inp.grad: " + inp_grad.replace("\n", "\n" + " " * len("  inp.grad: ")) in out
    # the thread's own session, with its two-line T.grad
    assert "   >>> T = torch.arange (10.) + 1." in out
    assert ("      -> tensor([-0.1000, -0.0250, -0.0111, -0.0063, -0.0040, -0.0028, -0.0020, -0.0016,\n"
            "                 -0.0012, -0.0010])") in out
