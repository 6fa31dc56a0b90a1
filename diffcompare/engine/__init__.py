"""diffcompare's own reverse-mode automatic differentiation engine (PyTorch-style, over NumPy).

>>> from diffcompare.engine import Tensor
>>> w = Tensor([2.0], requires_grad=True)      # a leaf that requires grad
>>> x = Tensor([1.0, 2.0])                     # a leaf that does not
>>> L = (x * w).mean()
>>> L.backward()
>>> w.grad                                     # dL/dw = mean(x)
tensor([1.5000])
"""
from .tensor import Tensor, tensor
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .function import AccumulateGrad, Function, Node, SavedTensor
from . import autograd, ops
from .ops import *  # noqa: F403  (the op functions: ops.__all__)
from . import methods  # noqa: F401  (gives Tensor its operators and methods)

__all__ = [
    "Tensor", "tensor", "no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled",
    "Node", "Function", "AccumulateGrad", "SavedTensor", "autograd", "ops",
] + ops.__all__

from .compiler import compile  # noqa: E402  (imports the engine's modules above)

__all__ += ["compile"]
