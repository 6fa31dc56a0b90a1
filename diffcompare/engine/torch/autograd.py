"""``torch.autograd`` on the engine: ``grad``, ``backward`` and the legacy ``Variable``.

>>> import diffcompare.engine.torch as torch
>>> x = torch.tensor([1., 2.], requires_grad=True)
>>> torch.autograd.grad((x * x).sum(), x)
(tensor([2., 4.]),)
"""
from __future__ import annotations

from .. import autograd as _engine
from ..tensor import Tensor as _Tensor

__all__ = ["grad", "backward", "Variable"]


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """d(outputs)/d(inputs) as a tuple, ``.grad`` untouched (``torch.autograd.grad``)."""
    if is_grads_batched:
        raise NotImplementedError("is_grads_batched is not supported by the engine; call grad "
                                  "once per row of grad_outputs.")
    return tuple(_engine.grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                              bool(allow_unused), materialize_grads))


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of ``tensors`` into the leaves' ``.grad``."""
    _engine.backward(tensors, grad_tensors, retain_graph, create_graph, inputs)


def Variable(data, requires_grad=False, volatile=False):
    """The old ``Variable(t, requires_grad=True)``: since PyTorch 0.4 a plain tensor, here a
    new leaf sharing ``t``'s data."""
    if not isinstance(data, _Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}; wrap it "
                        "first: Variable(torch.tensor(data)).")
    out = data.detach()
    out.requires_grad = requires_grad
    return out
