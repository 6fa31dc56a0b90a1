"""The PyTorch backend: the reference most users already trust, in float64 on the CPU.

The problem runs as ``problem.fn(xp, *args)`` with ``xp`` the NumPy-named torch
namespace (``diffcompare.backends.torch_namespace``), on float64 tensors.
Gradients come from ``torch.autograd.grad`` (vector outputs: ``grad_outputs`` is
the cotangent), Hessian-vector products from a double backward
(``create_graph=True``).  The graph is recorded anew on every call, as in the
engine, so there is nothing to compile.  Thread count is left to the caller
(``torch.set_num_threads``; the runner sets one); ``prepared.info`` records it.

The module imports without torch; ``available()`` says how to install it.

>>> from diffcompare import backends
>>> b = backends.get("torch")
>>> b.family
'torch'
>>> bool(b.available()) or b.available().reason.startswith("torch is not installed")
True
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .base import Backend, Prepared, Support, SUPPORTED, Unavailable, as_float64_arrays

INSTALL_HINT = "torch is not installed: pip install torch==2.13.0 (the CPU build)"


def _import_torch():
    try:
        import torch
    except ImportError as exc:
        raise Unavailable(f"{INSTALL_HINT} ({exc})") from exc
    from . import torch_namespace
    return torch, torch_namespace.namespace()


@dataclasses.dataclass
class _State:
    torch: Any
    xp: Any
    host_inputs: tuple        # the arrays given to prepare (compared by identity)
    tensors: tuple            # their tensors (constants reused; leaves are made per call)


class TorchBackend(Backend):
    name = "torch"
    family = "torch"

    def available(self) -> Support:
        try:
            import torch  # noqa: F401
        except ImportError:
            return Support(False, INSTALL_HINT)
        return SUPPORTED

    def prepare(self, problem, inputs) -> Prepared:
        torch, xp = _import_torch()
        inputs = tuple(inputs)
        tensors = tuple(self._tensor(torch, problem, i, a) for i, a in enumerate(inputs))
        info = {"device": "cpu", "torch_version": torch.__version__,
                "threads": torch.get_num_threads()}
        return Prepared(problem, state=_State(torch, xp, inputs, tensors), info=info)

    @staticmethod
    def _tensor(torch, problem, i, a):
        a = np.asarray(a)
        if i in problem.wrt and a.dtype != np.float64:
            a = a.astype(np.float64)
        # share memory where NumPy allows writing (torch warns on read-only arrays)
        return torch.from_numpy(a if a.flags.writeable else a.copy())

    def _args(self, state: _State, problem, inputs, requires_grad: bool):
        """The call's arguments as tensors, and fresh leaves for the differentiated ones."""
        if len(inputs) != len(state.host_inputs):
            raise ValueError(f"expected {len(state.host_inputs)} arguments (as given to prepare), "
                             f"got {len(inputs)}.")
        args = [t if a is host else self._tensor(state.torch, problem, i, a)
                for i, (a, host, t) in enumerate(zip(inputs, state.host_inputs, state.tensors))]
        leaves = []
        for i in problem.wrt:
            # a new leaf per call (detach shares the data), like a fresh requires_grad tensor
            args[i] = args[i].detach().requires_grad_(requires_grad)
            leaves.append(args[i])
        return args, leaves

    def _output(self, state, problem, args):
        out = problem.fn(state.xp, *args)
        if not isinstance(out, state.torch.Tensor):
            raise TypeError(f"the function returned a {type(out).__name__}, not a torch tensor: "
                            "compute it from its arguments with xp's functions.")
        if not problem.vector_output and out.numel() != 1:
            raise ValueError(f"the function returned shape {tuple(out.shape)} where a scalar is "
                             "needed; reduce it (e.g. xp.sum) or tag the problem 'vector-output'.")
        return out

    def vjp(self, prepared, inputs, cotangent=None):
        state, problem = prepared.state, prepared.problem
        torch = state.torch
        with torch.enable_grad():
            args, leaves = self._args(state, problem, inputs, requires_grad=True)
            out = self._output(state, problem, args)
            prepared.evaluations += 1
            if cotangent is None:
                if out.numel() != 1:
                    raise ValueError(f"the output has shape {tuple(out.shape)}: pass a cotangent.")
                grad_out = None
                out = out.reshape(())
            else:
                grad_out = torch.as_tensor(np.asarray(cotangent, dtype=np.float64)).to(out.dtype)
                if tuple(grad_out.shape) != tuple(out.shape):
                    grad_out = grad_out.reshape(out.shape)
            if not out.requires_grad:      # the output depends on no differentiated argument
                return tuple(np.zeros(np.shape(inputs[i]), dtype=np.float64) for i in problem.wrt)
            grads = torch.autograd.grad(out, leaves, grad_outputs=grad_out,
                                        allow_unused=True, materialize_grads=True)
        return as_float64_arrays(g.numpy() for g in grads)

    def function(self, prepared, inputs):
        state, problem = prepared.state, prepared.problem
        with state.torch.no_grad():
            args, _ = self._args(state, problem, inputs, requires_grad=False)
            out = self._output(state, problem, args)
            prepared.evaluations += 1
        return np.array(out.numpy(), dtype=np.float64)

    def hvp(self, prepared, inputs, v):
        state, problem = prepared.state, prepared.problem
        torch = state.torch
        if problem.vector_output:
            raise ValueError(f"problem {problem.name!r} has a vector output; a Hessian-vector "
                             "product needs a scalar function.")
        v = tuple(v)
        if len(v) != len(problem.wrt):
            raise ValueError(f"expected {len(problem.wrt)} tangent vectors (one per differentiated "
                             f"argument), got {len(v)}.")
        with torch.enable_grad():
            args, leaves = self._args(state, problem, inputs, requires_grad=True)
            out = self._output(state, problem, args).reshape(())
            prepared.evaluations += 1
            zeros = tuple(np.zeros(np.shape(inputs[i]), dtype=np.float64) for i in problem.wrt)
            if not out.requires_grad:
                return zeros
            grads = torch.autograd.grad(out, leaves, create_graph=True, allow_unused=True,
                                        materialize_grads=True)
            used = [(g, torch.as_tensor(np.asarray(vi, dtype=np.float64)))
                    for g, vi in zip(grads, v) if g.requires_grad]
            if not used:                   # a linear function: the Hessian is zero
                return zeros
            hv = torch.autograd.grad([g for g, _ in used], leaves, grad_outputs=[vi for _, vi in used],
                                     allow_unused=True, materialize_grads=True)
        return as_float64_arrays(h.detach().numpy() for h in hv)
