"""The autograd libraries shown side by side: the engine, and PyTorch where it is installed.

A :class:`Lib` is what the seed examples (:mod:`diffcompare.seeds`) and ``diffcompare graph
FILE`` (:mod:`diffcompare.viz.from_file`) need from a library: float64 tensors, ``no_grad``,
the MSE loss, a tensor's values, memory sharing, and the view that draws its graphs.

>>> [lib.name for lib in libs()][0]
'engine'
>>> float(engine().array(engine().tensor([1.5]))[0])
1.5
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np


@dataclasses.dataclass(frozen=True)
class Lib:
    """What an example needs from a library: float64 tensors, ``no_grad``, the MSE loss,
    a tensor's values as NumPy, and whether two tensors share memory."""

    name: str                      # "engine" or "torch"
    version: str
    tensor: Callable               # tensor(data, requires_grad=False), float64
    no_grad: Callable
    mse_loss: Callable             # mse_loss(input, target, reduction="mean")
    array: Callable                # tensor -> np.ndarray
    shares_memory: Callable        # (a, b) -> bool
    view: object                   # the diffcompare.viz.graph view of its graphs
    torch: object = None           # the module torch code runs on: PyTorch, or the engine's
    #                                torch face (diffcompare.engine.torch)


def engine() -> Lib:
    """The engine as a :class:`Lib`."""
    from .. import __version__ as version
    from .. import engine as E
    from ..engine import torch as face
    from .graph import EngineView

    return Lib("engine", f"diffcompare {version}", lambda data, requires_grad=False:
               E.tensor(data, requires_grad=requires_grad),
               E.no_grad, E.mse_loss, lambda t: np.asarray(t.data),
               lambda a, b: bool(np.shares_memory(a.data, b.data)), EngineView(), face)


def torch() -> Lib | None:
    """PyTorch as a :class:`Lib` (float64), or None when it is not installed."""
    try:
        import torch as T
    except ImportError:
        return None
    from .graph import TorchView

    def tensor(data, requires_grad=False):
        return T.tensor(np.asarray(data, dtype=np.float64), requires_grad=requires_grad)

    return Lib("torch", f"torch {T.__version__}", tensor, T.no_grad,
               lambda a, b, reduction="mean": T.nn.functional.mse_loss(a, b, reduction=reduction),
               lambda t: t.detach().numpy(), lambda a, b: a.data_ptr() == b.data_ptr(), TorchView(), T)


def libs() -> list[Lib]:
    """The engine, and torch where it is installed."""
    return [lib for lib in (engine(), torch()) if lib is not None]
