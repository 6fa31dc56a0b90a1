"""The unary elementwise rules table (``ops/elementwise.py``): every row makes the node
PyTorch makes (name, saved tensors and their values, gradient), differentiates twice,
and compiles to the eager engine's gradient."""
import numpy as np
import pytest

from diffcompare.engine import Tensor, compile, ops
from diffcompare.engine.gradcheck import gradgradcheck
from diffcompare.engine.ops import elementwise as ew

ROWS = sorted(ew.RULES)
X = np.array([0.3, 0.8, 1.4])   # positive and away from kinks: the rows' domain, but ...
DOMAIN = {"Arcsin": X / 2, "Arccos": X / 2, "Arctanh": X / 2, "Arccosh": X + 1}   # ... these
NO_TORCH = {"Cbrt", "Imag"}   # torch lacks them: tests/engine/test_numpy_elementwise.py uses JAX
TORCH_NAME = {"Rint": "round"}   # torch's function where it is not the row's name in lower case


def _x(name):
    return DOMAIN.get(name, X)


def test_the_table_made_the_classes_the_ops_use():
    assert {"Exp", "Log", "Sqrt", "Sin", "Cos", "Tanh", "Sigmoid", "Abs", "Neg", "Clone"} <= set(ROWS)
    for name in ROWS:
        cls = ew.RULES[name]
        assert getattr(ew, name) is cls and cls.__module__ == ew.__name__
        assert ops.OPS[name.lower()].node is cls
        a = Tensor(_x(name), requires_grad=True)
        assert type(ops.OPS[name.lower()].function(a).grad_fn) is cls


@pytest.mark.parametrize("name", sorted(set(ROWS) - NO_TORCH) + ["Relu"])
def test_row_makes_torchs_node_saved_tensors_and_gradient(name):
    torch = pytest.importorskip("torch")
    x = _x(name)
    a = Tensor(x, requires_grad=True)
    ta = torch.tensor(x, requires_grad=True)
    y = ops.OPS[name.lower()].function(a)
    ty = getattr(torch, TORCH_NAME.get(name, name.lower()))(ta)
    node, tnode = y.grad_fn, ty.grad_fn
    assert node.name() == type(tnode).__name__
    torch_saved = sorted(n[len("_saved_"):] for n in dir(tnode) if n.startswith("_saved_"))
    assert sorted(node.saved) == torch_saved
    for key, saved in node.saved.items():
        np.testing.assert_allclose(saved.data, getattr(tnode, f"_saved_{key}").detach().numpy(),
                                   rtol=1e-14)
    weights = np.array([1.0, -2.0, 0.5])
    (y * weights).sum().backward()
    (ty * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(a.grad.data, ta.grad.numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("name", ROWS)
def test_row_differentiates_twice(name):
    fn = ops.OPS[name.lower()].function
    assert gradgradcheck(lambda t: fn(t * 1.1), [_x(name)]) is True


@pytest.mark.parametrize("name", ROWS)
def test_row_compiles_to_the_eager_gradient(name):
    fn = ops.OPS[name.lower()].function

    def f(x):
        return (fn(x) * x).sum()

    value, (grad,) = compile(f, wrt=(0,))(_x(name))
    x = Tensor(_x(name), requires_grad=True)
    out = f(x)
    out.backward()
    assert np.allclose(value, out.data, rtol=1e-14)
    np.testing.assert_allclose(grad, x.grad.data, rtol=1e-14, atol=1e-15)


def test_a_row_with_an_unknown_saved_name_is_refused():
    with pytest.raises(ValueError, match="saves must be 'self', 'result' or None"):
        ew.unary_rule("Bad", np.exp, "input", lambda g, x: g)
    assert "Bad" not in ew.RULES
