"""The engine's torch face (``import diffcompare.engine.torch as torch``): constructors,
dtypes, methods and printing as PyTorch has them, on the engine's own Tensor, without
breaking NumPy-style code that reads ``x.size`` / ``x.shape`` as NumPy does."""
import sys

import numpy as np
import pytest

import diffcompare.engine as E
import diffcompare.engine.torch as face
from diffcompare.engine import Tensor

torch = pytest.importorskip("torch")


def test_the_face_makes_the_engines_own_tensor():
    t = face.tensor([1.0, 2.0])
    assert type(t) is Tensor                    # no subclass: the engine's fast paths hold
    assert isinstance(t, face.Tensor) and isinstance(E.Tensor([1.0]), face.Tensor)


@pytest.mark.parametrize("make, dtype", [
    (lambda T: T.tensor([1.0, 2.0]), "float32"),
    (lambda T: T.tensor([1, 2]), "int64"),
    (lambda T: T.tensor([True]), "bool"),
    (lambda T: T.tensor(np.array([1.0])), "float64"),
    (lambda T: T.arange(10.), "float32"),
    (lambda T: T.arange(10), "int64"),
    (lambda T: T.linspace(0, 1, 5), "float32"),
    (lambda T: T.ones(2, 3), "float32"),
    (lambda T: T.zeros((2, 3), dtype=T.float64), "float64"),
    (lambda T: T.full((2,), 3), "int64"),
    (lambda T: T.full((2,), 3.0), "float32"),
    (lambda T: T.eye(3), "float32"),
    (lambda T: T.FloatTensor([[1, 2, 3, 4]]), "float32"),
    (lambda T: T.DoubleTensor([1, 2]), "float64"),
    (lambda T: T.Tensor([1, 2]), "float32"),
    (lambda T: T.tensor([1, 2]).float(), "float32"),
    (lambda T: T.tensor([1.0]).double(), "float64"),
    (lambda T: T.randn(2, 3), "float32"),
])
def test_dtypes_are_pytorchs(make, dtype):
    ours, theirs = make(face), make(torch)
    assert ours.dtype == np.dtype(dtype) and str(theirs.dtype) == f"torch.{dtype}"
    assert tuple(ours.shape) == tuple(theirs.shape)


@pytest.mark.parametrize("values", [
    [1.0, 2.0], [0.1, 1.0, 0.0001], [[1.0, -2.5], [3.25, 4.0]], 0.2929, 3.0, [1e-5, 1.0],
    [1.0, float("inf"), float("nan")], [123456789.0, 1.0], (np.arange(30) / 7).tolist(),
    np.linspace(-1, 1, 2000).tolist(), [[0.5] * 12] * 3, [], [-0.0, 0.0],
])
def test_repr_is_pytorchs(values):
    assert repr(face.tensor(values)) == repr(torch.tensor(values))
    assert str(face.tensor(values)) == str(torch.tensor(values))


@pytest.mark.parametrize("values", [[1, 2, 300], [True, False], [[1, -2], [3, 4]]])
def test_repr_of_int_and_bool_is_pytorchs(values):
    assert repr(face.tensor(values)) == repr(torch.tensor(values))


def test_repr_suffixes_as_pytorch():
    for T in (face, torch):
        a = T.tensor([1.0, 2.0], requires_grad=True)
        assert repr(a) == "tensor([1., 2.], requires_grad=True)"
        assert repr((1 / a).mean()) == "tensor(0.7500, grad_fn=<MeanBackward0>)"
    assert repr(face.tensor([1, 2], dtype=face.int32)) == repr(torch.tensor([1, 2], dtype=torch.int32))
    # the documented difference: float64 prints without PyTorch's dtype suffix
    assert repr(face.tensor([1.0]).double()) == "tensor([1.])"
    assert repr(torch.tensor([1.0]).double()) == "tensor([1.], dtype=torch.float64)"


def test_size_is_numpys_int_and_pytorchs_call():
    x = face.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    t = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert x.size() == t.size() == (2, 3) and repr(x.size()) == repr(t.size()) == "torch.Size([2, 3])"
    assert x.size(0) == t.size(0) == 2 and x.size(-1) == t.size(-1) == 3
    assert repr(x.shape) == repr(t.shape) == "torch.Size([2, 3])"
    assert x.shape == x.size() == (2, 3)
    # NumPy's meaning, for code written against NumPy names
    assert x.size == 6 and isinstance(x.size, int) and x.size + 1 == 7 and range(x.size)[-1] == 5
    assert np.zeros(x.size).shape == (6,) and np.zeros(x.shape).shape == (2, 3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.size(2)


def test_array_namespace_code_still_reads_numpy_size_and_shape():
    def fn(xp, x):                      # a problem written against NumPy names
        return xp.sum(x * x) / x.size + x.shape[0]

    x = Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = fn(x.__array_namespace__(), x)
    y.backward()
    assert float(y) == pytest.approx(55 / 6 + 2)
    np.testing.assert_allclose(x.grad.data, 2 * np.arange(6.0).reshape(2, 3) / 6)
    assert fn(np, np.arange(6.0).reshape(2, 3)) == pytest.approx(55 / 6 + 2)


def test_torch_methods():
    x = face.tensor([[1.0, 2.0], [3.0, 4.0]])
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    for f in (lambda a: a.t(), lambda a: a.T, lambda a: a.view(4), lambda a: a.reshape(1, 4),
              lambda a: a.unsqueeze(0), lambda a: a.unsqueeze(0).squeeze(), lambda a: a.mm(a),
              lambda a: a.matmul(a), lambda a: a.mul(2), lambda a: a.add(a), lambda a: a.sum(0),
              lambda a: a.mean(dim=1, keepdim=True), lambda a: a.double().float()):
        assert repr(f(x)) == repr(f(t))
    assert face.tensor(2.5).item() == torch.tensor(2.5).item() == 2.5
    assert float(face.tensor([2.5])) == float(torch.tensor([2.5])) == 2.5
    assert x.tolist() == t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert isinstance(x.numpy(), np.ndarray) and x.numpy().dtype == np.float32
    assert face.mm(x, x).tolist() == torch.mm(t, t).tolist()
    assert face.mul(x, 2).tolist() == torch.mul(t, 2).tolist()


def test_integer_tensor_cannot_require_grad_with_pytorchs_message():
    for T in (face, torch):
        with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype "
                                               "can require gradients"):
            T.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"t\.float\(\)"):
        face.tensor([1, 2]).requires_grad_()


def test_grad_zero_no_grad_autograd_grad_and_functional():
    w = face.tensor([2.0], requires_grad=True)
    x = face.tensor([1.0, 2.0])
    loss = face.nn.functional.mse_loss(x * w, face.tensor([1.0, 1.0]))
    (g,) = face.autograd.grad(loss, w, retain_graph=True)
    loss.backward()
    assert g.tolist() == w.grad.tolist() == pytest.approx([7.0])     # mean(2(2x-1)x) = (2+12)/2
    w.grad.zero_()
    assert w.grad.tolist() == [0.0]
    with face.no_grad():
        assert not (w * 2).requires_grad
    assert face.nn.functional.relu(face.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]


def test_manual_seed_repeats_but_is_not_pytorchs_generator():
    face.manual_seed(0)
    a = face.randn(3)
    face.manual_seed(0)
    b = face.randn(3)
    assert a.tolist() == b.tolist() and a.dtype == np.float32
    torch.manual_seed(0)
    assert a.tolist() != torch.randn(3).tolist()           # documented: not PyTorch's numbers
    assert 0 <= float(face.rand(1)) < 1


def test_as_torch_lends_the_name_and_gives_it_back():
    before = sys.modules.get("torch")
    with face.as_torch():
        import torch as inside
        from torch.autograd import Variable
        assert inside is face and Variable is face.autograd.Variable
    assert sys.modules.get("torch") is before


def test_a_missing_name_says_what_to_do():
    with pytest.raises(AttributeError, match="covers what the seed threads"):
        face.fft
    with pytest.raises(AttributeError, match="no modules or layers"):
        face.nn.Linear
    with pytest.raises(RuntimeError, match="CPU only"):
        face.zeros(2, device="cuda")


def test_complex_tensors_are_refused_with_a_reason_unlike_pytorch():
    assert torch.tensor([1 + 1j], requires_grad=True).requires_grad       # PyTorch: allowed
    with pytest.raises(RuntimeError, match="real floating-point tensors only"):
        face.tensor([1 + 1j], requires_grad=True)


def test_squeeze_function_follows_pytorch_on_a_dim_of_size_other_than_one():
    x = face.ones(2, 1)
    assert face.squeeze(x, 0).shape == torch.squeeze(torch.ones(2, 1), 0).shape == (2, 1)
    assert face.squeeze(x, 1).shape == (2,)
