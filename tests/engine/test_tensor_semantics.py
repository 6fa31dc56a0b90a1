"""Tensor semantics of diffcompare.engine that learners rely on (PyTorch's rules).

Accumulation, retain_grad, hooks, grad mode, requires_grad_/detach/is_leaf,
dtypes, views and version counters, item assignment, ``backward(inputs=)``,
``create_graph`` and the subgradient conventions at kinks.
"""
import numpy as np
import pytest

import diffcompare.engine as E
from diffcompare.engine import Tensor, autograd, enable_grad, is_grad_enabled, no_grad


def close(actual, expected, rtol=1e-12, atol=0.0):
    actual = actual.data if isinstance(actual, Tensor) else actual
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------- accumulation


def test_gradients_accumulate_across_backward_calls_of_different_graphs():
    x = Tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    close(x.grad, [2.0, 4.0])
    (3 * x).sum().backward()
    close(x.grad, [5.0, 7.0])
    x.grad.zero_()
    np.testing.assert_array_equal(x.grad.data, [0.0, 0.0])
    (x * x * x).sum().backward()
    close(x.grad, [3.0, 12.0])
    x.grad = None
    (x * 5).sum().backward()
    close(x.grad, [5.0, 5.0])


def test_leaf_used_twice_gets_the_sum():
    x = Tensor(3.0, requires_grad=True)
    y = x * x + 2 * x           # AccumulateGrad of x gets three contributions
    y.backward()
    close(x.grad, 2 * 3.0 + 2)


def test_accumulated_grad_does_not_alias_the_seed_gradient():
    """Zeroing .grad in place must not change the array the user passed."""
    x = Tensor([1.0, 2.0], requires_grad=True)
    seed = np.array([1.0, 1.0])
    (x + 0).backward(seed)
    x.grad.zero_()
    np.testing.assert_array_equal(seed, [1.0, 1.0])
    a = Tensor([1.0], requires_grad=True)
    b = Tensor([1.0], requires_grad=True)
    (a + b).sum().backward()            # AddBackward0 hands one array to both leaves
    a.grad.zero_()
    close(b.grad, [1.0])


# --------------------------------------------------------------------------- retain_grad


def test_retain_grad_keeps_non_leaf_gradient():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    z = y.sum() * 2
    y.retain_grad()
    z.backward()
    close(y.grad, [2.0, 2.0, 2.0])
    close(x.grad, [4.0, 8.0, 12.0])
    assert y.grad.shape == y.shape and not y.grad.requires_grad


def test_retain_grad_on_leaf_is_a_no_op():
    x = Tensor([1.0, 2.0], requires_grad=True)
    x.retain_grad()
    (x * 2).sum().backward()
    close(x.grad, [2.0, 2.0])


def test_retain_grad_on_multi_output_node():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    a, b, c = x.unbind()
    b.retain_grad()
    (a * b * c).backward()
    close(b.grad, 3.0)
    close(x.grad, [6.0, 3.0, 2.0])


# --------------------------------------------------------------------------- hooks


def test_register_hook_on_leaf_modifies_gradient_and_can_be_removed():
    x = Tensor([1.0, 2.0], requires_grad=True)
    handle = x.register_hook(lambda g: g * 2)
    (x * 3).sum().backward()
    close(x.grad, [6.0, 6.0])
    handle.remove()
    x.grad = None
    (x * 3).sum().backward()
    close(x.grad, [3.0, 3.0])
    handle.remove()                     # removing twice is harmless


def test_register_hook_sees_incoming_gradient():
    x = Tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(np.array(g.data)))   # returns None: observe only
    (x * x).sum().backward()
    assert len(seen) == 1
    close(seen[0], [2.0, 4.0])
    close(x.grad, [2.0, 4.0])


def test_register_hook_on_non_leaf_changes_upstream_gradients():
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: g * 10)
    (y * y).sum().backward()            # dL/dy = 2y = [6, 12], hooked to [60, 120]
    close(x.grad, [180.0, 360.0])


def test_hook_and_retain_grad_on_same_non_leaf():
    """The hook runs once; the retained grad is the hooked gradient (PyTorch runs
    retain_grad after the tensor's hooks, whatever the registration order)."""
    for order in ("retain_first", "hook_first"):
        x = Tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        calls = []

        def hook(g):
            calls.append(1)
            return g * 10

        if order == "retain_first":
            y.retain_grad()
            y.register_hook(hook)
        else:
            y.register_hook(hook)
            y.retain_grad()
        y.sum().backward()
        assert len(calls) == 1, order
        close(y.grad, [10.0, 10.0])
        close(x.grad, [30.0, 30.0])


def test_several_hooks_run_in_registration_order():
    x = Tensor([1.0], requires_grad=True)
    x.register_hook(lambda g: g + 1)
    x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    close(x.grad, [30.0])               # (2 + 1) * 10


def test_leaf_hook_changes_the_gradient_grad_returns_as_torch_does():
    """A leaf's hooks run where its gradient arrives, before it is captured: autograd.grad
    and backward(inputs=) return the hooked gradient (torch 2: x.grad_fn is None, the
    hook sits on x's AccumulateGrad); the engine used to skip leaf hooks there."""
    x = Tensor([1.0, 2.0], requires_grad=True)
    w = Tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g * 10)
    gx, gw = autograd.grad((x * w).sum(), [x, w])
    close(gx, [10.0, 20.0])             # torch: (tensor([10., 20.]), tensor([1., 2.]))
    close(gw, [1.0, 2.0])
    assert x.grad is None and w.grad is None


def test_leaf_hook_registered_after_the_graph_was_built_runs():
    """The graph's AccumulateGrad exists before the hook: the hook is found there too."""
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = (x * 3).sum()
    x.register_hook(lambda g: g * 10)
    y.backward(inputs=[x])
    close(x.grad, [30.0, 30.0])         # torch: tensor([30., 30.])


def test_accumulate_grad_is_shared_while_a_graph_holds_it():
    """As torch: a leaf has no grad_fn; every graph alive at once reaches the same
    AccumulateGrad (its .grad sums both), held by the graphs, not by the leaf."""
    x = Tensor([1.0, 2.0], requires_grad=True)
    assert x.grad_fn is None
    y, z = x * 2, x * 3
    acc = y.grad_fn.next_functions[0][0]
    assert acc is z.grad_fn.next_functions[0][0]
    assert isinstance(acc, E.AccumulateGrad) and acc.variable is x
    y.sum().backward()
    z.sum().backward()
    close(x.grad, [5.0, 5.0])
    seq = acc.sequence_nr
    del y, z, acc                       # no graph holds it: the next graph makes another
    assert (x * 4).grad_fn.next_functions[0][0].sequence_nr > seq


# --------------------------------------------------------------------------- grad mode


def test_no_grad_results_are_outside_the_graph():
    w = Tensor([1.0, 2.0], requires_grad=True)
    assert is_grad_enabled()
    with no_grad():
        assert not is_grad_enabled()
        y = w * 2 + 1
        z = E.exp(w).sum()
        a, b = w.unbind()
    assert is_grad_enabled()
    for t in (y, z, a, b):
        assert not t.requires_grad and t.grad_fn is None and t.is_leaf
    close(y, [3.0, 5.0])


def test_enable_grad_inside_no_grad():
    w = Tensor([1.0, 2.0], requires_grad=True)
    with no_grad():
        with enable_grad():
            assert is_grad_enabled()
            y = (w * w).sum()
        assert not is_grad_enabled()
    assert y.requires_grad and y.grad_fn.name() == "SumBackward0"
    y.backward()
    close(w.grad, [2.0, 4.0])


def test_no_grad_and_enable_grad_as_decorators():
    w = Tensor([2.0], requires_grad=True)

    @no_grad()
    def frozen(t):
        assert not is_grad_enabled()
        return t * 3

    @enable_grad()
    def tracked(t):
        assert is_grad_enabled()
        return t * 3

    assert frozen.__name__ == "frozen"
    y = frozen(w)
    assert not y.requires_grad and y.grad_fn is None
    close(y, [6.0])
    assert is_grad_enabled()
    with no_grad():
        z = tracked(w)
        assert not is_grad_enabled()
    assert z.requires_grad and z.grad_fn.name() == "MulBackward0"
    z.backward()
    close(w.grad, [3.0])


def test_grad_mode_restored_after_exception():
    with pytest.raises(ZeroDivisionError):
        with no_grad():
            1 / 0
    assert is_grad_enabled()

    @no_grad()
    def boom():
        raise ValueError

    with pytest.raises(ValueError):
        boom()
    assert is_grad_enabled()


def test_backward_under_no_grad_still_computes_gradients():
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with no_grad():
        y.backward()
    close(x.grad, [2.0, 4.0])
    assert not x.grad.requires_grad


# --------------------------------------------------------------------------- requires_grad, detach, is_leaf


def test_requires_grad_underscore():
    x = Tensor([1.0, 2.0])
    assert not x.requires_grad
    assert x.requires_grad_() is x
    assert x.requires_grad and x.is_leaf
    (x * x).sum().backward()
    close(x.grad, [2.0, 4.0])
    assert x.requires_grad_(False) is x
    assert not x.requires_grad
    y = x * 2
    assert y.grad_fn is None and not y.requires_grad


def test_requires_grad_set_after_computation_makes_a_new_leaf():
    a = Tensor(2.0)
    c = a * 3
    c.requires_grad_()
    assert c.is_leaf and c.grad_fn is None and c.requires_grad
    (c * c).backward()
    close(c.grad, 12.0)
    assert a.grad is None


def test_detach_shares_data_and_version_and_leaves_graph():
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.is_leaf and d.grad_fn is None and not d.requires_grad
    assert np.shares_memory(d.data, y.data)
    close(d, [2.0, 4.0])
    z = (d * x).sum()                  # d is a constant in this graph
    z.backward()
    close(x.grad, [2.0, 4.0])
    d.add_(1.0)
    assert y._version == d._version == 1
    close(y, [3.0, 5.0])


def test_detach_of_leaf_shares_version_counter():
    x = Tensor([1.0, 2.0], requires_grad=True)
    d = x.detach()
    with no_grad():
        x.mul_(2.0)
    assert d._version == x._version == 1
    close(d, [2.0, 4.0])


def test_is_leaf_rules():
    a = Tensor([1.0])
    w = Tensor([1.0], requires_grad=True)
    assert a.is_leaf and w.is_leaf                       # created by the user
    assert (a * 2).is_leaf                               # no input requires grad
    assert not (w * 2).is_leaf                           # recorded op
    assert not (a * w).is_leaf
    with no_grad():
        assert (w * 2).is_leaf                           # not recorded
    assert (w * 2).detach().is_leaf                      # detached
    assert all(not t.is_leaf for t in Tensor([1.0, 2.0], requires_grad=True).unbind())
    assert not w.reshape(1, 1).is_leaf                   # views of w are recorded too


# --------------------------------------------------------------------------- dtypes


F32_OPS = [
    ("mul_float", lambda t: t * 2.0),
    ("rmul_float", lambda t: 2.0 * t),
    ("mul_int", lambda t: t * 2),
    ("add", lambda t: t + 1.5),
    ("rsub", lambda t: 1.0 - t),
    ("div", lambda t: t / 3.0),
    ("rdiv", lambda t: 1.0 / t),
    ("pow", lambda t: t ** 2.0),
    ("rpow", lambda t: 2.0 ** t),
    ("neg", lambda t: -t),
    ("exp", lambda t: E.exp(t)),
    ("log", lambda t: E.log(t)),
    ("sqrt", lambda t: E.sqrt(t)),
    ("sin_cos", lambda t: E.sin(t) * E.cos(t)),
    ("tanh", lambda t: E.tanh(t)),
    ("sigmoid", lambda t: E.sigmoid(t)),
    ("relu", lambda t: E.relu(t - 2.0)),
    ("abs", lambda t: E.abs(t - 2.0)),
    ("maximum", lambda t: E.maximum(t, 2.5)),
    ("sum", lambda t: t.sum(axis=0)),
    ("mean", lambda t: t.mean()),
    ("max", lambda t: t.max(axis=1)),
    ("logsumexp", lambda t: t.logsumexp(axis=0)),
    ("softmax", lambda t: t.softmax(axis=-1)),
    ("log_softmax", lambda t: t.log_softmax(axis=-1)),
    ("matmul", lambda t: E.matmul(t, t)),
    ("matmul_op", lambda t: t @ t.T),
    ("reshape_T", lambda t: t.reshape(4).reshape(2, 2).T),
    ("index", lambda t: t[0] * t[[1, 1]]),
    ("mse", lambda t: E.mse_loss(t, Tensor(np.zeros((2, 2), np.float32)))),
    ("cross_entropy", lambda t: E.cross_entropy(t, np.array([0, 1]))),
    ("where", lambda t: E.where(t.data > 2, t, 0.0)),
    ("stack", lambda t: E.stack([t, t * 2])),
]


F32_POINT = np.array([[1.1, 2.3], [3.2, 0.7]])      # away from every kink and tie


@pytest.mark.parametrize("op", [pytest.param(f, id=name) for name, f in F32_OPS])
def test_float32_stays_float32_forward_and_in_grad(op):
    x = Tensor(F32_POINT.astype(np.float32), requires_grad=True)
    y = op(x)
    assert y.dtype == np.float32
    y.retain_grad()
    y.sum().backward()
    assert y.grad.dtype == np.float32
    assert x.grad.dtype == np.float32
    # and the values: float64 engine gradient, checked by central differences
    x64 = Tensor(F32_POINT, requires_grad=True)
    y64 = op(x64)
    assert y64.dtype == np.float64
    y64.sum().backward()
    eps = 1e-6
    fd = np.zeros_like(F32_POINT)
    for idx in np.ndindex(F32_POINT.shape):
        hi, lo = F32_POINT.copy(), F32_POINT.copy()
        hi[idx] += eps
        lo[idx] -= eps
        fd[idx] = (op(Tensor(hi)).data.sum() - op(Tensor(lo)).data.sum()) / (2 * eps)
    close(x64.grad, fd, rtol=1e-5, atol=1e-7)
    close(x.grad, x64.grad.data, rtol=1e-4, atol=1e-5)
    close(y, y64.data, rtol=1e-5, atol=1e-6)


def test_float32_mul_by_python_float_value_and_grad():
    x = Tensor(np.array([1.5, -2.0], np.float32), requires_grad=True)
    y = x * 2.0
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y.data, np.array([3.0, -4.0], np.float32))
    y.backward([1.0, 1.0])              # a float64 (Python) seed is cast to float32
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.data, np.array([2.0, 2.0], np.float32))


def test_float32_grad_values_match_float64_to_single_precision():
    data = np.array([0.3, 1.7, 2.9])
    grads = {}
    for dt in (np.float32, np.float64):
        x = Tensor(data.astype(dt), requires_grad=True)
        (E.tanh(x) * E.exp(-x) / (x + 1)).sum().backward()
        grads[dt] = x.grad.data
    assert grads[np.float32].dtype == np.float32
    close(grads[np.float32], grads[np.float64], rtol=1e-6)


def test_python_numbers_and_lists_become_float64():
    assert Tensor(3).dtype == np.float64
    assert Tensor([1, 2, 3]).dtype == np.float64
    assert Tensor([[1, 2], [3, 4]]).dtype == np.float64
    assert Tensor(2.5).dtype == np.float64
    assert E.tensor([1, 2]).dtype == np.float64
    assert Tensor([1, 2], dtype=np.float32).dtype == np.float32
    np.testing.assert_array_equal(Tensor([1, 2]).data, [1.0, 2.0])


def test_numpy_arrays_keep_dtype():
    for dt in (np.int64, np.int32, np.float32, np.float64):
        arr = np.array([1, 2], dtype=dt)
        assert Tensor(arr).dtype == dt
        assert E.tensor(arr).dtype == dt
    i = Tensor(np.array([1, 2]))
    assert (i * 2).dtype == np.int64
    np.testing.assert_array_equal((i * 2).data, [2, 4])


def test_tensor_shares_numpy_array_but_tensor_function_copies():
    arr = np.array([1.0, 2.0])
    assert np.shares_memory(Tensor(arr).data, arr)
    assert not np.shares_memory(E.tensor(arr).data, arr)


# --------------------------------------------------------------------------- views and versions


def test_views_share_the_version_counter():
    x = Tensor(np.arange(6.0))
    views = {
        "reshape": x.reshape(2, 3),
        "view": x.view(3, 2),
        "transpose": x.reshape(2, 3).transpose(),
        "T": x.reshape(2, 3).T,
        "t": x.reshape(2, 3).t(),
        "slice": x[1:4],
        "step": x[::2],
        "row": x.reshape(2, 3)[1],
        "unbind": x.reshape(2, 3).unbind()[1],
    }
    copy = x[[0, 2]]                    # advanced indexing copies
    assert all(v._version == 0 for v in views.values())
    x += 1
    assert x._version == 1
    for name, v in views.items():
        assert v._version == 1, name
        assert np.shares_memory(v.data, x.data), name
    assert copy._version == 0
    np.testing.assert_array_equal(copy.data, [0.0, 2.0])
    np.testing.assert_array_equal(views["slice"].data, [2.0, 3.0, 4.0])
    views["T"].mul_(2.0)                # in place through a view: base changes, version 2
    assert x._version == 2 and views["slice"]._version == 2
    np.testing.assert_array_equal(x.data, 2 * (np.arange(6.0) + 1))


def test_zero_dim_views_write_through():
    """x[2] (all indices integers) and the outputs of unbind() on a 1-D tensor are
    0-d views in PyTorch: they show later changes of x, and in place on them changes x.
    (NumPy's x.data[2] is a scalar copy; x.data[2, ...] would be the view.)"""
    x = Tensor(np.arange(3.0))
    b, c, d = x.unbind()
    x += 1
    assert b._version == 1
    np.testing.assert_array_equal([b.data, c.data, d.data], [1.0, 2.0, 3.0])
    c.mul_(10.0)
    np.testing.assert_array_equal(x.data, [1.0, 20.0, 3.0])

    x = Tensor(np.arange(6.0))
    s = x[2]
    s += 10
    assert x._version == s._version == 1
    np.testing.assert_array_equal(s.data, 12.0)
    np.testing.assert_array_equal(x.data, [0.0, 1.0, 12.0, 3.0, 4.0, 5.0])
    m = Tensor(np.arange(6.0).reshape(2, 3))
    e = m[1, 2]
    e.mul_(2.0)
    np.testing.assert_array_equal(m.data, [[0.0, 1.0, 2.0], [3.0, 4.0, 10.0]])


def test_inplace_on_view_invalidates_saved_base():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    z = (y * y).sum()                   # saves y
    v = y[0:2]
    with no_grad():
        v += 1                          # changes y through the view
    assert y._version == 1
    np.testing.assert_array_equal(y.data, [2.0, 3.0, 3.0])
    with pytest.raises(RuntimeError, match="expected version 0"):
        z.backward()


def test_recorded_inplace_on_view_of_non_leaf_is_refused_clearly():
    """The engine does not rewrite a base's history (PyTorch's CopySlices): it refuses."""
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    v = y[0:2]
    with pytest.raises(RuntimeError, match=r"a view \(IndexBackward0\) of a tensor that requires grad.*clone\(\)"):
        v += 1
    np.testing.assert_array_equal(y.data, [1.0, 2.0, 3.0])   # nothing was written


def test_version_counts_each_inplace_op():
    x = Tensor([1.0, 2.0])
    assert x._version == 0
    x.add_(1.0)
    x.mul_(2.0)
    x -= 1
    x /= 2
    x[0] = 7.0
    x.zero_()
    assert x._version == 6
    np.testing.assert_array_equal(x.data, [0.0, 0.0])


# --------------------------------------------------------------------------- item assignment


def test_item_assignment_records_index_put_and_gradients():
    a = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = a * 2                               # earlier graph of x
    v = Tensor(5.0, requires_grad=True)
    mul_node = x.grad_fn
    x[1] = v
    assert x.grad_fn.name() == "IndexPutBackward0"
    assert x.grad_fn.next_functions[0] == (mul_node, 0)
    assert x.grad_fn.next_functions[1][0].variable is v
    assert x._version == 1
    np.testing.assert_array_equal(x.data, [2.0, 5.0, 6.0])
    (x * Tensor([1.0, 10.0, 100.0])).sum().backward()
    close(a.grad, [2.0, 0.0, 200.0])        # the overwritten element gets nothing
    close(v.grad, 10.0)


def test_item_assignment_of_broadcast_value_sums_its_gradient():
    a = Tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    x = a * 1
    v = Tensor(0.5, requires_grad=True)
    x[1:3] = v
    (x * Tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    close(a.grad, [1.0, 0.0, 0.0, 4.0])
    close(v.grad, 2.0 + 3.0)
    assert v.grad.shape == ()


def test_item_assignment_into_constant_makes_it_part_of_graph():
    x = Tensor(np.zeros(3))
    v = Tensor([2.0, 3.0], requires_grad=True)
    x[[0, 2]] = v
    assert x.requires_grad and not x.is_leaf
    assert x.grad_fn.name() == "IndexPutBackward0"
    assert x.grad_fn.next_functions[0] == (None, 0)
    (x * x).sum().backward()
    close(v.grad, [4.0, 6.0])


def test_item_assignment_without_grad_just_writes():
    x = Tensor(np.zeros(3))
    x[1] = 4.0
    assert x.grad_fn is None and not x.requires_grad
    np.testing.assert_array_equal(x.data, [0.0, 4.0, 0.0])


# --------------------------------------------------------------------------- backward(inputs=)


def test_backward_inputs_accumulates_only_into_given_tensors():
    x = Tensor(2.0, requires_grad=True)
    y = Tensor(3.0, requires_grad=True)
    z = (x * y) ** 2                # dz/dx = 2 x y^2 = 36, dz/dy = 2 x^2 y = 24
    z.backward(inputs=[x], retain_graph=True)
    close(x.grad, 36.0)
    assert y.grad is None
    z.backward(inputs=[y], retain_graph=True)
    close(x.grad, 36.0)
    close(y.grad, 24.0)
    z.backward(inputs=[x, y])
    close(x.grad, 72.0)
    close(y.grad, 48.0)


def test_backward_inputs_with_non_leaf():
    x = Tensor([1.0, 2.0], requires_grad=True)
    mid = x * 3
    out = (mid * mid).sum()
    out.backward(inputs=[mid])
    close(mid.grad, [6.0, 12.0])        # 2 mid
    assert x.grad is None


def test_backward_inputs_single_tensor():
    x = Tensor([1.0], requires_grad=True)
    w = Tensor([4.0], requires_grad=True)
    (x * w).sum().backward(inputs=w)
    close(w.grad, [1.0])
    assert x.grad is None


def test_run_backward_returns_the_gradients_as_the_loop_leaves_them():
    # the loop's own data: a widened dtype stays widened (grad() casts it back), an unused
    # input gets None (grad() refuses it), no .grad is touched
    x = Tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    unused = Tensor([5.0], requires_grad=True)
    out = (x * Tensor(np.array([3.0, 4.0]))).sum()       # float32 * float64 -> float64
    gx, gu = autograd.run_backward(out, [x, unused], retain_graph=True)
    assert type(gx) is np.ndarray and gx.dtype == np.float64 and gu is None
    np.testing.assert_array_equal(gx, [3.0, 4.0])
    assert x.grad is None and unused.grad is None
    assert autograd.grad(out, x)[0].dtype == np.float32


# --------------------------------------------------------------------------- create_graph


def test_create_graph_gives_differentiable_grad():
    x = Tensor([1.0, 2.0, -3.0], requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    gx = x.grad
    close(gx, 3 * np.array([1.0, 4.0, 9.0]))
    assert gx.requires_grad and gx.grad_fn is not None
    x.grad = None
    gx.sum().backward()
    close(x.grad, 6 * np.array([1.0, 2.0, -3.0]))     # second derivative 6x


def test_create_graph_without_resetting_grad_accumulates():
    x = Tensor([1.0, 2.0], requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    x.grad.sum().backward()
    close(x.grad, 3 * np.array([1.0, 4.0]) + 6 * np.array([1.0, 2.0]))


def test_autograd_grad_higher_derivatives():
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = (x ** 3).sum()
    (g1,) = autograd.grad(y, x, create_graph=True)
    close(g1, [3.0, 12.0])
    (g2,) = autograd.grad(g1.sum(), x, create_graph=True)
    close(g2, [6.0, 12.0])
    (g3,) = autograd.grad(g2.sum(), x)
    close(g3, [6.0, 6.0])
    assert not g3.requires_grad
    assert x.grad is None


def test_create_graph_through_several_ops():
    """d2/dx2 of sin(x) * exp(x) = 2 cos(x) exp(x)."""
    xv = np.array([0.3, -1.2])
    x = Tensor(xv, requires_grad=True)
    (g,) = autograd.grad((E.sin(x) * E.exp(x)).sum(), x, create_graph=True)
    close(g, (np.cos(xv) + np.sin(xv)) * np.exp(xv))
    (h,) = autograd.grad(g.sum(), x)
    close(h, 2 * np.cos(xv) * np.exp(xv))


def test_without_create_graph_grad_is_constant():
    x = Tensor([1.0, 2.0], requires_grad=True)
    (x ** 3).sum().backward()
    assert not x.grad.requires_grad and x.grad.grad_fn is None


# --------------------------------------------------------------------------- subgradients


def test_relu_gradient_at_zero_is_zero():
    x = Tensor([-1.0, 0.0, 2.0], requires_grad=True)
    E.relu(x).sum().backward()
    np.testing.assert_array_equal(x.grad.data, [0.0, 0.0, 1.0])


def test_abs_gradient_at_zero_is_zero():
    x = Tensor([-1.5, 0.0, 2.0], requires_grad=True)
    E.abs(x).sum().backward()
    np.testing.assert_array_equal(x.grad.data, [-1.0, 0.0, 1.0])


def test_maximum_and_minimum_split_ties():
    a = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = Tensor([1.0, 5.0, 0.0], requires_grad=True)
    E.maximum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.data, [0.5, 0.0, 1.0])
    np.testing.assert_array_equal(b.grad.data, [0.5, 1.0, 0.0])
    a.grad = b.grad = None
    E.minimum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.data, [0.5, 1.0, 0.0])
    np.testing.assert_array_equal(b.grad.data, [0.5, 0.0, 1.0])


def test_maximum_tie_with_broadcast_constant():
    a = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    E.maximum(a, 2.0).sum().backward()
    np.testing.assert_array_equal(a.grad.data, [0.0, 0.5, 1.0])


def test_max_reduction_ties_split_evenly():
    x = Tensor([1.0, 3.0, 3.0], requires_grad=True)
    m = x.max()
    close(m, 3.0)
    m.backward()
    np.testing.assert_array_equal(x.grad.data, [0.0, 0.5, 0.5])


def test_max_and_min_reduction_ties_along_axis():
    x = Tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0], [5.0, 0.0, 1.0]], requires_grad=True)
    x.max(axis=1).backward(np.array([1.0, 3.0, 2.0]))
    close(x.grad, [[0.0, 0.5, 0.5], [1.0, 1.0, 1.0], [2.0, 0.0, 0.0]])
    y = Tensor([[1.0, 3.0, 1.0], [2.0, 2.0, 2.0]], requires_grad=True)
    y.min(axis=1, keepdims=True).sum().backward()
    close(y.grad, [[0.5, 0.0, 0.5], [1 / 3, 1 / 3, 1 / 3]])


def test_grad_arrays_are_never_shared_with_other_leaves_or_the_callers_gradient():
    """AccumulateGrad reuses an incoming array only when nothing else holds it."""
    a = Tensor([1.0, 2.0], requires_grad=True)
    b = Tensor([3.0, 4.0], requires_grad=True)
    (a + b).sum().backward()               # AddBackward0 hands one array to both leaves
    assert not np.shares_memory(a.grad.data, b.grad.data)
    a.grad.zero_()
    np.testing.assert_array_equal(b.grad.data, [1.0, 1.0])

    g = np.array([1.0, 1.0])
    x = Tensor([1.0, 2.0], requires_grad=True)
    x.backward(g)                          # the caller's array reaches AccumulateGrad as is
    x.grad.zero_()
    np.testing.assert_array_equal(g, [1.0, 1.0])

    y = Tensor([1.0, 2.0], requires_grad=True)
    y.reshape(2, 1).backward(g.reshape(2, 1))   # a view of the caller's array
    y.grad.zero_()
    np.testing.assert_array_equal(g, [1.0, 1.0])


def test_a_fresh_gradient_array_is_reused_not_copied():
    from diffcompare.engine.ops import elementwise

    made = []
    original = elementwise.Mul.backward

    def spy(self, g):
        grads = original(self, g)
        made.append(grads[0].ctypes.data)   # its memory's address: holding it would share it
        return grads

    elementwise.Mul.backward = spy
    try:
        w = Tensor([1.0, 2.0], requires_grad=True)
        (w * 3).sum().backward()           # MulBackward0 makes a new array for w
    finally:
        elementwise.Mul.backward = original
    (address,) = made
    # nothing else held that array, so .grad is it (a copy, made while it was alive,
    # would have another address)
    assert w.grad.data.ctypes.data == address
    np.testing.assert_array_equal(w.grad.data, [3.0, 3.0])
