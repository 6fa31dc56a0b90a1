"""The PyTorch backend: the reference most users already trust, on the CPU.

The problem runs as ``problem.fn(xp, *args)`` with ``xp`` the NumPy-named torch
namespace (``diffcompare.problems.torch_namespace``), on tensors in the dtype of the
differentiated inputs (float32 stays float32; anything else computes in float64).
Gradients come from ``torch.autograd.grad`` (vector outputs: ``grad_outputs`` is
the cotangent), Hessian-vector products from a double backward
(``create_graph=True``).  The graph is recorded anew on every call, as in the
engine, so there is nothing to compile and the prepared state keeps only tensors
that share the inputs' memory (``retained_bytes`` is empty).  ``timed_vjp`` times
the forward pass and ``torch.autograd.grad`` on tensors made in ``prepare``, as a
bare loop of torch would; the copy back to NumPy comes after.  Derivative products use
``torch.func``, as a torch user computes them: the ``jacobian`` is ``torch.func.jacrev``
(the VJPs of the output's unit cotangents, vmapped), the ``hessian_diagonal`` the diagonal
of forward-over-reverse HVPs (``torch.func.jvp`` of ``torch.func.grad``) vmapped over the
unit vectors; both batch every element (declared limits:
``product_limits``).  Thread count is left to the caller
(``torch.set_num_threads``; the runner sets one); ``prepared.info`` records it.

The module imports without torch; ``available()`` says how to install it (and
array-api-compat, which the namespace is built on).

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

from .base import Backend, Prepared, Unavailable, as_float64_arrays, compute_dtype

INSTALL_HINT = "torch is not installed: pip install torch==2.13.0 (the CPU build)"
COMPAT_HINT = ("array-api-compat >= 1.14 is not installed (the torch namespace is built on it): "
               "pip install 'diffcompare[torch]', or pip install 'array-api-compat>=1.14'")


def _import_torch():
    try:
        import torch
    except ImportError as exc:
        raise Unavailable(f"{INSTALL_HINT} ({exc})") from exc
    from ..problems import torch_namespace
    try:
        return torch, torch_namespace.namespace()
    except ImportError as exc:
        raise Unavailable(f"{COMPAT_HINT} ({exc})") from exc


@dataclasses.dataclass
class _State:
    torch: Any
    xp: Any
    host_inputs: tuple        # the arrays given to prepare (compared by identity)
    tensors: tuple            # their tensors (constants reused; leaves are made per call)
    dtype: Any                # the NumPy dtype computed in


class TorchBackend(Backend):
    name = "torch"
    timed_path = "torch eager (the function under no_grad)"
    numpy_arrays = False
    requires = (("torch", INSTALL_HINT), ("array_api_compat", COMPAT_HINT))

    def prepare(self, problem, inputs) -> Prepared:
        torch, xp = _import_torch()
        inputs = tuple(inputs)
        dtype = compute_dtype(problem, inputs)
        tensors = tuple(self._tensor(torch, problem, i, a, dtype) for i, a in enumerate(inputs))
        info = {"device": "cpu", "torch_version": torch.__version__,
                "threads": torch.get_num_threads()}
        return Prepared(problem, state=_State(torch, xp, inputs, tensors, dtype), info=info)

    @staticmethod
    def _tensor(torch, problem, i, a, dtype):
        a = np.asarray(a)
        if i in problem.wrt and a.dtype != dtype:
            a = a.astype(dtype)
        # share memory where NumPy allows writing (torch warns on read-only arrays)
        return torch.from_numpy(a if a.flags.writeable else a.copy())

    def tensor_args(self, state: _State, problem, inputs, requires_grad: bool):
        """The call's arguments as tensors, and fresh leaves for the differentiated ones."""
        if len(inputs) != len(state.host_inputs):
            raise ValueError(f"expected {len(state.host_inputs)} arguments (as given to prepare), "
                             f"got {len(inputs)}.")
        args = [t if a is host else self._tensor(state.torch, problem, i, a, state.dtype)
                for i, (a, host, t) in enumerate(zip(inputs, state.host_inputs, state.tensors))]
        leaves = []
        for i in problem.wrt:
            # a new leaf per call (detach shares the data), like a fresh requires_grad tensor
            args[i] = args[i].detach().requires_grad_(requires_grad)
            leaves.append(args[i])
        return args, leaves

    def _output(self, state, problem, args):
        out = problem.fn(state.xp, *args)
        _check_output(state.torch, problem, out)
        return out

    def timed_vjp(self, prepared, inputs, cotangent=None):
        """The forward pass on fresh leaves and ``torch.autograd.grad``, as a bare loop of torch
        writes it: every check a user's loop does not make is one comparison on the fast path
        (a call layer, a context manager or a generator here costs 1-2% of a 40 µs gradient)."""
        state, problem = prepared.state, prepared.problem
        torch, xp, fn = state.torch, state.xp, problem.fn
        args, _ = self.tensor_args(state, problem, inputs, requires_grad=False)
        grad_out = None
        if cotangent is not None:
            grad_out = torch.from_numpy(np.array(cotangent, dtype=state.dtype))
        wrt, tensor = problem.wrt, torch.Tensor
        one = len(wrt) == 1        # one leaf goes to grad alone, as users write it

        def call():
            call_args = list(args)
            leaves = []
            for i in wrt:
                # a new leaf per call (detach shares the data), like a fresh requires_grad tensor
                call_args[i] = leaf = args[i].detach().requires_grad_(True)
                leaves.append(leaf)
            out = fn(xp, *call_args)
            prepared.evaluations += 1
            if not isinstance(out, tensor) or (grad_out is None and out.numel() != 1):
                _check_output(torch, problem, out)         # raises the error that says why
                raise ValueError(f"the output has shape {tuple(out.shape)}: pass a cotangent.")
            go = grad_out
            if go is not None:
                if go.dtype != out.dtype:
                    go = go.to(out.dtype)
                if go.shape != out.shape:
                    go = go.reshape(out.shape)
            if not out.requires_grad:      # the output depends on no differentiated argument
                return tuple(torch.zeros_like(leaf) for leaf in leaves)
            grads = torch.autograd.grad(out, leaves[0] if one else leaves, go, allow_unused=True)
            for g in grads:
                if g is None:              # an argument the function ignores has gradient zero
                    return tuple(torch.zeros_like(leaf) if g is None else g
                                 for g, leaf in zip(grads, leaves))
            return grads

        if torch.is_grad_enabled():        # as it is unless a caller switched it off
            return call, _to_float64_arrays

        def call_with_grad():
            with torch.enable_grad():
                return call()

        return call_with_grad, _to_float64_arrays

    def vjp(self, prepared, inputs, cotangent=None):
        call, finish = self.timed_vjp(prepared, inputs, cotangent)
        return finish(call())

    def timed_function(self, prepared, inputs):
        state, problem = prepared.state, prepared.problem
        args, _ = self.tensor_args(state, problem, inputs, requires_grad=False)

        def call():
            with state.torch.no_grad():
                out = self._output(state, problem, args)
            prepared.evaluations += 1
            return out

        return call, _to_numpy

    def function(self, prepared, inputs):
        call, finish = self.timed_function(prepared, inputs)
        return finish(call())

    # -- derivative products (torch.func) -----------------------------------------------

    product_limits = {
        "jacobian": (4_000_000, "jacrev batches one VJP per output element, memory grows with them"),
        "hessian_diagonal": (256, "one HVP per input element, vmapped, each with its own copy of "
                                  "the intermediates: 3 GB and 27 s a call at 1,024 inputs "
                                  "(k-means, k = 128)")}

    def _of_wrt(self, prepared, inputs):
        """The function of the differentiated tensors alone, and their values."""
        state, problem = prepared.state, prepared.problem
        args, _ = self.tensor_args(state, problem, inputs, requires_grad=False)
        wrt = [args[i].detach() for i in problem.wrt]

        def f(*wrt_values):
            call_args = list(args)
            for i, w in zip(problem.wrt, wrt_values):
                call_args[i] = w
            prepared.evaluations += 1
            return self._output(state, problem, call_args)

        return f, wrt

    def timed_jacobian(self, prepared, inputs):
        torch = prepared.state.torch
        f, wrt = self._of_wrt(prepared, inputs)
        jacobian = torch.func.jacrev(f, argnums=tuple(range(len(wrt))))
        return (lambda: jacobian(*wrt)), _to_float64_arrays

    def timed_hessian_diagonal(self, prepared, inputs):
        torch = prepared.state.torch
        f, wrt = self._of_wrt(prepared, inputs)
        sizes, shapes = [w.numel() for w in wrt], [w.shape for w in wrt]
        flat = torch.cat([w.reshape(-1) for w in wrt])
        grad = torch.func.grad(lambda *w: f(*w).reshape(()), argnums=tuple(range(len(wrt))))

        def unflatten(x):
            return [t.reshape(s) for t, s in zip(torch.split(x, sizes), shapes)]

        def grad_flat(x):
            return torch.cat([g.reshape(-1) for g in grad(*unflatten(x))])

        def diagonal_entry(v):         # vᵀ H v: the diagonal entry of a unit vector v
            return torch.dot(v, torch.func.jvp(grad_flat, (flat,), (v,))[1])

        entries = torch.func.vmap(diagonal_entry)
        eye = torch.eye(flat.numel(), dtype=flat.dtype)
        return (lambda: unflatten(entries(eye))), _to_float64_arrays

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
            args, leaves = self.tensor_args(state, problem, inputs, requires_grad=True)
            out = self._output(state, problem, args).reshape(())
            prepared.evaluations += 1
            zeros = tuple(np.zeros(np.shape(inputs[i]), dtype=np.float64) for i in problem.wrt)
            if not out.requires_grad:
                return zeros
            grads = torch.autograd.grad(out, leaves, create_graph=True, allow_unused=True,
                                        materialize_grads=True)
            used = [(g, torch.as_tensor(np.asarray(vi, dtype=state.dtype)))
                    for g, vi in zip(grads, v) if g.requires_grad]
            if not used:                   # a linear function: the Hessian is zero
                return zeros
            hv = torch.autograd.grad([g for g, _ in used], leaves, grad_outputs=[vi for _, vi in used],
                                     allow_unused=True, materialize_grads=True)
        return as_float64_arrays(h.detach().numpy() for h in hv)


def _check_output(torch, problem, out):
    """A clear error for an output that is no torch tensor, or no scalar where one is needed."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"the function returned a {type(out).__name__}, not a torch tensor: "
                        "compute it from its arguments with xp's functions.")
    if not problem.vector_output and out.numel() != 1:
        raise ValueError(f"the function returned shape {tuple(out.shape)} where a scalar is "
                         "needed; reduce it (e.g. xp.sum) or tag the problem 'vector-output'.")


def _to_numpy(tensor):
    return tensor.detach().numpy()


def _to_float64_arrays(grads):
    return as_float64_arrays(g.detach().numpy() for g in grads)
