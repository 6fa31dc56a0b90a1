"""Where a learner comparing the engine with PyTorch would notice a difference: each
behaviour checked against torch itself (copies, conversions, graph shape, saved
tensors, grad mode on generators, edge cases of reductions, errors and warnings)."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: nothing to compare against")

import diffcompare.engine as E  # noqa: E402
from diffcompare.engine import Tensor, functional as F, no_grad, is_grad_enabled  # noqa: E402
from diffcompare.engine.gradcheck import gradcheck, gradgradcheck  # noqa: E402


def _node_names(next_functions):
    return [(None if n is None else n.name(), nr) for n, nr in next_functions]


def _torch_names(next_functions):
    return [(None if n is None else type(n).__name__, nr) for n, nr in next_functions]


# --------------------------------------------------------------------------- copies and conversions

def test_tensor_of_a_tensor_copies_so_inplace_does_not_corrupt_the_graph():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    c = Tensor(x)
    c += 1
    y.sum().backward()
    tx = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    ty = tx * tx
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # torch suggests clone().detach()
        tc = torch.tensor(tx)
    tc += 1
    ty.sum().backward()
    np.testing.assert_array_equal(x.grad.data, tx.grad.numpy())   # [2, 4, 6]
    np.testing.assert_array_equal(x.data, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(c.data, tc.numpy())
    assert c._version == 1 and x._version == 0
    assert not c.requires_grad and not tc.requires_grad


def test_int_and_index_of_single_element_tensors():
    k = Tensor(np.array(2))
    x = Tensor([5.0, 6.0, 7.0])
    tk, tx = torch.tensor(2), torch.tensor([5.0, 6.0, 7.0])
    assert int(k) == int(tk) == 2
    assert k.__index__() == tk.__index__() == 2
    np.testing.assert_array_equal(x[:int(k)].data, tx[:int(tk)].numpy())
    assert [10, 20, 30][k] == 30
    assert int(Tensor(2.7)) == int(torch.tensor(2.7)) == 2
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        Tensor(2.0).__index__()
    with pytest.raises(TypeError):
        torch.tensor(2.0).__index__()


# --------------------------------------------------------------------------- graph shape and saved tensors

@pytest.mark.parametrize("spell", ["3 * a", "a * 3", "3 + a", "a + 3"])
def test_scalar_operand_next_functions_in_torch_order(spell):
    a = Tensor([1.0, 2.0], requires_grad=True)
    ta = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    ours = eval(spell, {"a": a}).grad_fn
    theirs = eval(spell, {"a": ta}).grad_fn
    assert ours.name() == type(theirs).__name__
    assert _node_names(ours.next_functions) == _torch_names(theirs.next_functions)
    assert _node_names(ours.next_functions) == [("AccumulateGrad", 0), (None, 0)]


def test_pow_with_a_number_saves_base_and_exponent_as_number_like_torch():
    a = Tensor([1.0, 2.0], requires_grad=True)
    ta = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    node, tnode = (a ** 3).grad_fn, (ta ** 3).grad_fn
    assert node.name() == type(tnode).__name__ == "PowBackward0"
    assert list(node.saved) == ["self"]
    np.testing.assert_array_equal(node.saved["self"].data, tnode._saved_self.detach().numpy())
    assert node.exponent == tnode._saved_exponent == 3
    (a ** 3).sum().backward()
    (ta ** 3).sum().backward()
    np.testing.assert_array_equal(a.grad.data, ta.grad.numpy())


def test_pow_with_a_tensor_exponent_is_powbackward1_like_torch():
    a = Tensor([1.0, 2.0], requires_grad=True)
    b = Tensor([2.0, 0.5], requires_grad=True)
    ta, tb = (torch.tensor(v, dtype=torch.float64, requires_grad=True)
              for v in ([1.0, 2.0], [2.0, 0.5]))
    node, tnode = (a ** b).grad_fn, (ta ** tb).grad_fn
    assert node.name() == type(tnode).__name__ == "PowBackward1"
    assert sorted(node.saved) == ["exponent", "result", "self"]
    (a ** b).sum().backward()
    (ta ** tb).sum().backward()
    np.testing.assert_allclose(a.grad.data, ta.grad.numpy(), rtol=1e-15)
    np.testing.assert_allclose(b.grad.data, tb.grad.numpy(), rtol=1e-15)


@pytest.mark.parametrize("exponent", [0, 1, 2, 2.5, -1])
def test_pow_number_exponents_value_gradient_and_second_derivative(exponent):
    x = np.array([0.5, 1.5, 3.0])
    ours = Tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    (g,) = E.autograd.grad((ours ** exponent).sum(), ours, create_graph=True)
    (tg,) = torch.autograd.grad((theirs ** exponent).sum(), theirs, create_graph=True)
    np.testing.assert_allclose(g.data, tg.detach().numpy(), rtol=1e-14)
    if g.requires_grad:
        (h,) = E.autograd.grad(g.sum(), ours)
        (th,) = torch.autograd.grad(tg.sum(), theirs)
        np.testing.assert_allclose(h.data, th.numpy(), rtol=1e-14)


# --------------------------------------------------------------------------- grad mode

def test_no_grad_decorating_a_generator_function_disables_recording_inside():
    w = Tensor([2.0], requires_grad=True)
    tw = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)

    def make(decorator, enabled):
        @decorator()
        def gen(t):
            for k in range(2):
                got = yield (t * k, enabled())
            yield got
        return gen

    for gen, param, enabled in ((make(no_grad, is_grad_enabled), w, is_grad_enabled),
                                (make(torch.no_grad, torch.is_grad_enabled), tw,
                                 torch.is_grad_enabled)):
        it = gen(param)
        y0, mode0 = next(it)
        assert enabled()                         # the caller's mode between resumptions
        y1, mode1 = it.send("ignored")
        assert not mode0 and not mode1
        assert not y0.requires_grad and not y1.requires_grad
        assert it.send("sent") == "sent"


# --------------------------------------------------------------------------- edge cases

def test_complex_gradient_raises_like_torch():
    y = Tensor([1.0, 2.0], requires_grad=True) * 2
    ty = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True) * 2
    with pytest.raises(RuntimeError):
        ty.backward(torch.tensor([1 + 1j, 1.0]))
    with pytest.raises(RuntimeError, match="complex"):
        y.backward(np.array([1 + 1j, 1.0]))


def test_mean_of_empty_is_nan_like_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = Tensor(np.zeros(0), requires_grad=True)
        out = m.mean()
        out.backward()
    tm = torch.zeros(0, dtype=torch.float64, requires_grad=True)
    tout = tm.mean()
    tout.backward()
    assert np.isnan(out.item()) and np.isnan(tout.item())
    assert m.grad.shape == tuple(tm.grad.shape) == (0,)
    per_row = Tensor(np.zeros((3, 0))).mean(axis=1)
    np.testing.assert_array_equal(per_row.data, torch.zeros(3, 0).mean(1).double().numpy())


@pytest.mark.parametrize("shape, axis", [((0,), 0), ((3, 0), 1), ((0, 3), 0), ((0, 3), 1)])
def test_softmax_family_over_zero_size_axes_like_torch(shape, axis):
    x = np.zeros(shape)
    tx = torch.zeros(shape, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for ours, theirs in ((E.softmax(x, axis), torch.softmax(tx, axis)),
                             (E.log_softmax(x, axis), torch.log_softmax(tx, axis)),
                             (E.logsumexp(x, axis), torch.logsumexp(tx, axis))):
            np.testing.assert_array_equal(ours.data, theirs.numpy())


def test_logsumexp_over_zero_size_axis_has_a_gradient():
    x = Tensor(np.zeros((2, 0)), requires_grad=True)
    tx = torch.zeros((2, 0), dtype=torch.float64, requires_grad=True)
    E.logsumexp(x, 1).sum().backward()
    torch.logsumexp(tx, 1).sum().backward()
    assert x.grad.shape == tuple(tx.grad.shape) == (2, 0)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_inplace_on_broadcast_to_result_is_an_autograd_error(requires_grad):
    a = Tensor([1.0, 2.0], requires_grad=requires_grad)
    b = E.broadcast_to(a, (3, 2))
    ta = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=requires_grad)
    tb = ta.expand(3, 2)
    with pytest.raises(RuntimeError):   # torch names the leaf view first when it requires grad
        tb += 1
    with pytest.raises(RuntimeError, match="single memory location.*clone"):
        b += 1
    with pytest.raises(RuntimeError, match="single memory location"):
        b[0] = 5.0
    np.testing.assert_array_equal(a.data, [1.0, 2.0])


def test_retain_grad_follows_a_tensor_modified_in_place_like_torch():
    # y *= 3 makes y the output of a new node: its retained gradient is the new value's
    def run(leaf):
        y = leaf * 2
        y.retain_grad()
        y.mul_(3)
        (y * y).sum().backward()
        return leaf.grad, y.grad

    ours = run(Tensor([1.0, -2.0], requires_grad=True))
    theirs = run(torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.data, b.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours[1].data, [12.0, -24.0])        # 2 y, y = 6 x


# --------------------------------------------------------------------------- checks and messages

def test_gradcheck_warns_on_float32_inputs_like_torch():
    x32 = np.array([0.5, 1.5], dtype=np.float32)
    with pytest.warns(UserWarning, match="not a double precision"):
        assert gradcheck(lambda x: (x * x).sum(), [x32])
    with pytest.warns(UserWarning, match="double precision"):
        torch.autograd.gradcheck(lambda x: (x * x).sum(),
                                 (torch.tensor(x32, requires_grad=True),),
                                 raise_exception=False)
    with pytest.warns(UserWarning, match="not a double precision"):
        assert gradgradcheck(lambda x: (x * x * x).sum(), [x32])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gradcheck(lambda x: (x * x).sum(), [x32.astype(np.float64)])


def test_functional_grad_message_for_unused_input_names_its_own_option():
    def f(x, y):
        return (x * x).sum()

    with pytest.raises(RuntimeError, match="Input 1 .*allow_unused=True") as info:
        F.grad(f, (np.ones(2), np.ones(3)))
    assert "materialize_grads" not in str(info.value)
    gx, gy = F.grad(f, (np.ones(2), np.ones(3)), allow_unused=True)
    np.testing.assert_array_equal(gx, [2.0, 2.0])
    np.testing.assert_array_equal(gy, np.zeros(3))
