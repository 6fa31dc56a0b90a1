"""Errors and warnings of diffcompare.engine: each says what went wrong and what to do.

Every error test matches the key phrase (the one PyTorch users search for) and
checks that the message also tells the user how to fix it.  The last tests
check that non-finite values do *not* raise: they propagate as in NumPy.
"""
import re
import warnings

import numpy as np
import pytest

import diffcompare.engine as E
from diffcompare.engine import Tensor, autograd, no_grad


def phrase(text):
    return re.escape(text)


def close(actual, expected, rtol=1e-12):
    actual = actual.data if isinstance(actual, Tensor) else actual
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=0)


# --------------------------------------------------------------------------- backward seeds


def test_backward_of_non_scalar_needs_gradient():
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError,
                       match=phrase("grad can be implicitly created only for scalar outputs")) as info:
        y.backward()
    msg = str(info.value)
    assert "(2,)" in msg                          # the output's shape
    assert "gradient=" in msg                     # what to pass ...
    assert "y.sum().backward()" in msg            # ... or how to reduce
    assert x.grad is None                         # nothing was accumulated


def test_backward_of_single_element_non_scalar_is_allowed():
    x = Tensor([[3.0]], requires_grad=True)
    (x * x).backward()
    close(x.grad, [[6.0]])


def test_gradient_of_wrong_shape():
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=phrase("Mismatch in shape")) as info:
        y.backward([1.0, 1.0, 1.0])
    msg = str(info.value)
    assert "(3,)" in msg and "(2,)" in msg
    assert "must have the output's shape" in msg
    assert x.grad is None


def test_gradient_that_would_broadcast_is_still_a_shape_mismatch():
    x = Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    with pytest.raises(RuntimeError, match=phrase("Mismatch in shape")):
        (x * 2).backward([1.0, 1.0])


def test_backward_twice_without_retain_graph():
    x = Tensor(2.0, requires_grad=True)
    y = x * x
    y.backward()
    close(x.grad, 4.0)
    with pytest.raises(RuntimeError,
                       match=phrase("Trying to backward through the graph a second time")) as info:
        y.backward()
    assert "retain_graph=True" in str(info.value)
    close(x.grad, 4.0)                # the failed call added nothing


def test_backward_twice_with_retain_graph_works():
    x = Tensor(2.0, requires_grad=True)
    y = x * x
    y.backward(retain_graph=True)
    y.backward()
    close(x.grad, 8.0)
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_backward_twice_through_graph_without_saved_tensors_is_allowed():
    """As in PyTorch, only freed *saved tensors* make a second backward fail."""
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    close(x.grad, [2.0, 2.0])


def test_backward_on_tensor_not_requiring_grad():
    y = Tensor([1.0, 2.0]).sum()
    with pytest.raises(RuntimeError,
                       match=phrase("does not require grad and does not have a grad_fn")) as info:
        y.backward()
    assert "requires_grad=True" in str(info.value)


def test_backward_on_result_computed_under_no_grad():
    x = Tensor([1.0, 2.0], requires_grad=True)
    with no_grad():
        y = (x * x).sum()
    with pytest.raises(RuntimeError, match=phrase("does not require grad")) as info:
        y.backward()
    assert "no_grad()" in str(info.value)


# --------------------------------------------------------------------------- in-place


def test_modified_saved_tensor_names_node_shape_and_versions():
    a = Tensor(np.ones((2, 3)), requires_grad=True)
    b = a * 2
    c = b.exp()       # ExpBackward0 saves its result c
    d = b * c         # MulBackward0 saves b and c
    b.add_(1)
    b.add_(1)
    with pytest.raises(RuntimeError,
                       match=phrase("modified by an inplace operation")) as info:
        d.sum().backward()
    msg = str(info.value)
    assert "MulBackward0" in msg
    assert "shape (2, 3)" in msg
    assert "version 2" in msg and "expected version 0" in msg
    # what to do instead
    assert "x = x + 1" in msg and "clone()" in msg


def test_modified_saved_output_is_detected():
    """ExpBackward0 saves its own output; changing that output in place is caught too."""
    x = Tensor([0.0, 1.0], requires_grad=True)
    y = x.exp()
    y.mul_(3.0)
    with pytest.raises(RuntimeError, match=phrase("ExpBackward0")) as info:
        y.sum().backward()
    assert "version 1" in str(info.value) and "expected version 0" in str(info.value)


def test_inplace_on_leaf_requiring_grad():
    x = Tensor([1.0, 2.0], requires_grad=True)
    for inplace in (lambda t: t.add_(1.0), lambda t: t.mul_(2.0), lambda t: t.zero_()):
        with pytest.raises(RuntimeError,
                           match=phrase("a leaf Variable that requires grad")) as info:
            inplace(x)
        msg = str(info.value)
        assert "no_grad()" in msg and "x = x + 1" in msg
    with pytest.raises(RuntimeError, match=phrase("a leaf Variable that requires grad")):
        x += 1
    with pytest.raises(RuntimeError, match=phrase("a leaf Variable that requires grad")):
        x[0] = 5.0
    np.testing.assert_array_equal(x.data, [1.0, 2.0])   # untouched
    assert x._version == 0 and x.is_leaf


def test_inplace_on_view_of_leaf_requiring_grad():
    """PyTorch: 'a view of a leaf Variable that requires grad is being used in an
    in-place operation.'  Modifying the view would silently change the leaf."""
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = x[0:2]
    with pytest.raises(RuntimeError, match=phrase("a leaf Variable that requires grad")):
        v += 1
    np.testing.assert_array_equal(x.data, [1.0, 2.0, 3.0])


def test_inplace_on_leaf_is_allowed_under_no_grad():
    """What an optimizer step does."""
    w = Tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with no_grad():
        w -= 0.1 * w.grad
    close(w, [0.8, 1.6])
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    assert w._version == 1


# --------------------------------------------------------------------------- dtypes and shapes


@pytest.mark.parametrize("make", [
    pytest.param(lambda: Tensor(np.array([1, 2]), requires_grad=True), id="constructor"),
    pytest.param(lambda: Tensor(np.array([1, 2])).requires_grad_(), id="requires_grad_"),
    pytest.param(lambda: setattr(Tensor(np.array([1, 2], dtype=np.int32)), "requires_grad", True),
                 id="attribute"),
    pytest.param(lambda: Tensor(np.array([True, False]), requires_grad=True), id="bool"),
])
def test_integer_tensor_cannot_require_grad(make):
    with pytest.raises(RuntimeError,
                       match=phrase("Only Tensors of floating point and complex dtype can require gradients")) as info:
        make()
    msg = str(info.value)
    assert "Convert it first" in msg and "dtype=np.float64" in msg


def test_python_ints_are_float_so_can_require_grad():
    x = Tensor([1, 2], requires_grad=True)
    assert x.dtype == np.float64 and x.requires_grad


MATMULS = [pytest.param(lambda a, b: a @ b, id="at-operator"),
           pytest.param(lambda a, b: E.matmul(a, b), id="matmul-function")]


@pytest.mark.parametrize("matmul", MATMULS)
def test_matmul_shape_mismatch_names_both_shapes(matmul):
    a = Tensor(np.ones((2, 3)), requires_grad=True)
    b = Tensor(np.ones((4, 5)), requires_grad=True)
    with pytest.raises((ValueError, RuntimeError)) as info:
        matmul(a, b)
    msg = str(info.value)
    assert "(2, 3)" in msg and "(4, 5)" in msg
    assert "shape mismatch" in msg
    assert "transpose" in msg                  # what to do


@pytest.mark.parametrize("matmul", MATMULS)
def test_matmul_with_scalar_operand(matmul):
    with pytest.raises((ValueError, RuntimeError)) as info:
        matmul(Tensor(2.0), Tensor([1.0, 2.0]))
    assert "use * to multiply by a scalar" in str(info.value)


# --------------------------------------------------------------------------- autograd.grad


def _unused_setup():
    x = Tensor([1.0, 2.0], requires_grad=True)
    unused = Tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    out = (x * x).sum()
    return x, unused, out


def test_grad_of_unused_input_raises():
    x, unused, out = _unused_setup()
    with pytest.raises(RuntimeError,
                       match=phrase("appears to not have been used in the graph")) as info:
        autograd.grad(out, [x, unused])
    msg = str(info.value)
    assert "input 1" in msg and "(1, 3)" in msg
    assert "allow_unused=True" in msg
    assert "materialize_grads=True" in msg


def test_grad_allow_unused_gives_none():
    x, unused, out = _unused_setup()
    gx, gu = autograd.grad(out, [x, unused], allow_unused=True)
    close(gx, [2.0, 4.0])
    assert gu is None
    assert x.grad is None and unused.grad is None       # grad() touches no .grad


def test_grad_materialize_grads_gives_zeros():
    x, unused, out = _unused_setup()
    gx, gu = autograd.grad(out, [x, unused], materialize_grads=True)
    close(gx, [2.0, 4.0])
    assert isinstance(gu, Tensor)
    assert gu.shape == (1, 3) and gu.dtype == np.float64
    np.testing.assert_array_equal(gu.data, np.zeros((1, 3)))


def test_grad_of_input_not_requiring_grad():
    x = Tensor([1.0, 2.0], requires_grad=True)
    c = Tensor([3.0, 4.0])
    out = (x * c).sum()
    with pytest.raises(RuntimeError, match=phrase("does not require grad")) as info:
        autograd.grad(out, [x, c])
    assert "requires_grad=True" in str(info.value)


# --------------------------------------------------------------------------- .grad of non-leaves


def test_grad_of_non_leaf_warns_and_is_none():
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.sum().backward()
    with pytest.warns(UserWarning, match=phrase("not a leaf Tensor")) as record:
        g = y.grad
    assert g is None
    assert any(".retain_grad()" in str(w.message) for w in record)
    close(x.grad, [3.0, 3.0])


def test_grad_of_leaf_or_retained_non_leaf_does_not_warn():
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    y.sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        close(x.grad, [3.0, 3.0])
        close(y.grad, [1.0, 1.0])
        assert Tensor([1.0]).grad is None


def test_retain_grad_on_tensor_not_requiring_grad():
    with pytest.raises(RuntimeError, match=phrase("requires_grad=False")):
        Tensor([1.0]).retain_grad()


def test_register_hook_on_tensor_not_requiring_grad():
    with pytest.raises(RuntimeError, match=phrase("doesn't require gradient")):
        Tensor([1.0]).register_hook(lambda g: g)


@pytest.mark.parametrize("leaf", [True, False])
def test_hook_returning_another_shape_is_refused_as_torch_does(leaf):
    """The gradient a hook returns replaces the tensor's; one of another shape used to be
    stored (x.grad of shape (1,) on a (2,) tensor)."""
    x = Tensor([1.0, 2.0], requires_grad=True)
    watched = x if leaf else x * 2

    def shrink(g):
        return Tensor([1.0])

    watched.register_hook(shrink)
    with pytest.raises(RuntimeError, match=phrase("hook 'shrink' has changed the size of value")) as info:
        (watched * 3).sum().backward()
    assert "(2,)" in str(info.value) and "(1,)" in str(info.value)
    assert x.grad is None


def test_requires_grad_false_on_non_leaf():
    x = Tensor([1.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError,
                       match=phrase("you can only change requires_grad flags of leaf variables")) as info:
        y.requires_grad = False
    assert "detach()" in str(info.value)
    assert y.requires_grad


# --------------------------------------------------------------------------- non-finite values


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_log_of_zero_negative_inf_and_nan_follow_numpy():
    values = np.array([0.0, -1.0, np.inf, np.nan, 1.0, 0.5])
    x = Tensor(values, requires_grad=True)
    y = E.log(x)
    with np.errstate(all="ignore"):
        expected_y = np.log(values)               # [-inf, nan, inf, nan, 0, log .5]
        expected_g = 1.0 / values                 # [inf, -1, 0, nan, 1, 2]
    np.testing.assert_array_equal(y.data, expected_y)
    assert y.data[0] == -np.inf
    y.backward(np.ones(6))
    np.testing.assert_array_equal(x.grad.data, expected_g)
    assert x.grad.data[0] == np.inf and np.isnan(x.grad.data[3])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nan_and_inf_propagate_through_arithmetic():
    values = np.array([np.nan, np.inf, -np.inf, 2.0])
    x = Tensor(values, requires_grad=True)
    y = (x * x).sum()                              # nan + inf + ... = nan
    assert np.isnan(y.item())
    y.backward()
    np.testing.assert_array_equal(x.grad.data, 2 * values)   # [nan, inf, -inf, 4]
    # 0 * inf = nan in the gradient, as NumPy
    z = Tensor([0.0, 1.0], requires_grad=True)
    (z * Tensor([np.inf, 1.0])).sum().backward()
    np.testing.assert_array_equal(z.grad.data, [np.inf, 1.0])
    w = Tensor([np.inf, 1.0], requires_grad=True)
    (w * Tensor([0.0, 1.0])).sum().backward()
    np.testing.assert_array_equal(w.grad.data, [0.0, 1.0])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_division_by_zero_gives_inf_not_exception():
    x = Tensor([0.0, 2.0], requires_grad=True)
    y = 1 / x
    np.testing.assert_array_equal(y.data, [np.inf, 0.5])
    y.backward(np.ones(2))
    np.testing.assert_array_equal(x.grad.data, [-np.inf, -0.25])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_sqrt_of_zero_forward_zero_gradient_inf():
    x = Tensor([0.0, 4.0], requires_grad=True)
    y = E.sqrt(x)
    np.testing.assert_array_equal(y.data, [0.0, 2.0])
    y.backward(np.ones(2))
    np.testing.assert_array_equal(x.grad.data, [np.inf, 0.25])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_exp_overflow_gives_inf():
    x = Tensor([1000.0, -1000.0], requires_grad=True)
    y = x.exp()
    np.testing.assert_array_equal(y.data, [np.inf, 0.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.data, [np.inf, 0.0])


def test_expand_dims_out_of_range_axis_is_an_error():
    with pytest.raises(ValueError, match=r"axis 5 is out of bounds.*\[-3, 2\]"):
        E.expand_dims(Tensor(np.ones((2, 3))), 5)


def test_detach_in_place_of_a_view_is_refused_as_torch_does():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = x[1:]
    with pytest.raises(RuntimeError, match=phrase("Can't detach views in-place. Use detach() instead")):
        v.detach_()
    assert v.grad_fn is not None and v.requires_grad     # left as it was
    y = x * 2                                            # not a view: detached in place
    assert y.detach_() is y and y.grad_fn is None and not y.requires_grad


def test_a_float_index_tensor_gets_torchs_message_and_an_integer_one_indexes():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(IndexError, match=phrase("tensors used as indices must be long, int, byte "
                                                "or bool tensors")) as info:
        x[Tensor([0, 1, 1])]
    assert "x[[0, 1, 1]]" in str(info.value)
    y = x[Tensor(np.array([0, 1, 1]))]
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.data, [1.0, 2.0, 0.0])


def test_split_by_a_chunk_size_of_zero_is_torchs_error_not_a_zero_division():
    with pytest.raises(ValueError, match=phrase("split_size can only be 0 if dimension size is 0")):
        E.split(Tensor([1.0, 2.0, 3.0]), 0)
    with pytest.raises(ValueError, match="positive chunk size"):
        E.split(Tensor([1.0, 2.0, 3.0]), -1)
    (whole,) = E.split(Tensor(np.zeros(0)), 0)
    assert whole.shape == (0,)
