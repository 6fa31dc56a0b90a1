"""``torch.nn`` on the engine: only ``functional`` and ``Parameter`` (no modules)."""
from __future__ import annotations

from ...tensor import Tensor as _Tensor
from . import functional

__all__ = ["functional", "Parameter"]


def Parameter(data, requires_grad=True):
    """A leaf that requires grad, holding ``data`` (shared). A function here, not a class:
    ``isinstance(p, nn.Parameter)`` is not supported."""
    out = _Tensor(data.data) if isinstance(data, _Tensor) else _Tensor(data)
    out.requires_grad = requires_grad
    return out


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"the engine's torch face has no torch.nn.{name}: it has no modules or "
                         "layers. Write the layer as tensor operations (x @ w + b), or use "
                         "PyTorch.")
