"""The engine backend: diffcompare's own reverse mode, through its functional API.

Derivative products, as an engine user writes them: the ``jacobian`` is
``functional.jacobian`` (one forward pass, one reverse pass per output element with the
graph retained); the ``hessian_diagonal`` differentiates the gradient again
(``create_graph=True``): one reverse pass through the gradient's graph per input element,
keeping the diagonal entry of each Hessian row.  Both pay per element, so each has a
declared limit (``product_limits``).
"""
from __future__ import annotations

import numpy as np

from ..engine import Tensor, array_api, autograd, functional, no_grad
from .base import Backend, Prepared, as_float64_arrays


def substitute(problem, inputs, wrt_values):
    """The full argument list with the differentiated arguments replaced."""
    args = list(inputs)
    for i, v in zip(problem.wrt, wrt_values):
        args[i] = v
    return args


class EngineBackend(Backend):
    name = "engine"
    timed_path = "the engine's tensors over NumPy (the function without recording a graph)"
    product_limits = {
        "jacobian": (1_000_000, "one reverse pass per output element: about 8 s a call at 2.3 M "
                                "entries (bundle adjustment, 8 cameras) on one core"),
        "hessian_diagonal": (4_096, "one reverse pass through the gradient's graph per input "
                                    "element")}

    def timed_jacobian(self, prepared, inputs):
        """``functional.jacobian``: per differentiated argument, shape out.shape + arg.shape."""
        func = self.wrt_function(prepared, inputs)
        wrt = tuple(_float_array(inputs[i]) for i in prepared.problem.wrt)
        return (lambda: functional.jacobian(func, wrt, allow_unused=True)), as_float64_arrays

    def timed_hessian_diagonal(self, prepared, inputs):
        """The gradient with ``create_graph=True``, then one reverse pass per input element."""
        func = self.wrt_function(prepared, inputs)
        wrt = tuple(_float_array(inputs[i]) for i in prepared.problem.wrt)

        def call():
            leaves = [Tensor(a, requires_grad=True) for a in wrt]
            out = func(*leaves)
            diagonal = [np.zeros(a.size, dtype=a.dtype) for a in wrt]
            if not out.requires_grad:
                return diagonal
            grads = autograd.grad(out, leaves, create_graph=True, allow_unused=True,
                                  materialize_grads=True)
            for g, leaf, diag in zip(grads, leaves, diagonal):
                if not getattr(g, "requires_grad", False):   # linear in this argument
                    continue
                seed = np.zeros(g.shape, dtype=g.dtype)
                flat = seed.reshape(-1)
                for k in range(g.size):
                    flat[k] = 1.0
                    row, = autograd.grad(g, [leaf], seed, retain_graph=True, allow_unused=True,
                                         materialize_grads=True)
                    diag[k] = getattr(row, "data", row).reshape(-1)[k]
                    flat[k] = 0.0      # (after reading: the row may share the seed's memory)
            return [d.reshape(a.shape) for d, a in zip(diagonal, wrt)]

        return call, as_float64_arrays

    def prepare(self, problem, inputs) -> Prepared:
        # Nothing to derive or compile: the graph is recorded anew on every call.
        return Prepared(problem)

    def wrt_function(self, prepared, inputs):
        """The problem as a function of its differentiated arguments' tensors (the others
        fixed to ``inputs``), counting evaluations: what ``functional``'s operators take."""
        problem = prepared.problem
        fn, wrt = problem.fn, problem.wrt
        constants = [Tensor(a) for a in inputs]   # non-differentiated arguments

        def func(*wrt_tensors):
            args = list(constants)
            for i, v in zip(wrt, wrt_tensors):
                args[i] = v
            prepared.evaluations += 1
            out = fn(array_api, *args)
            if type(out) is not Tensor:
                raise _not_a_tensor(out)
            return out

        return func

    def timed_vjp(self, prepared, inputs, cotangent=None):
        """The loop an engine user writes, as with ``torch.autograd.grad``: fresh leaves on
        the input arrays, the forward pass, ``autograd.grad``; no per-call conversions, and
        ``wrt_function`` inlined: a call layer a user's loop does not have costs ~1% of a 40 µs
        gradient."""
        fn, wrt = prepared.problem.fn, prepared.problem.wrt
        constants = [Tensor(a) for a in inputs]   # non-differentiated arguments
        arrays = {i: _float_array(inputs[i]) for i in wrt}
        seed = None if cotangent is None else np.asarray(cotangent)
        one = len(wrt) == 1        # one leaf goes to grad alone, as users write it

        def call():
            args = list(constants)
            leaves = []
            for i in wrt:
                args[i] = leaf = Tensor(arrays[i], requires_grad=True)
                leaves.append(leaf)
            prepared.evaluations += 1
            out = fn(array_api, *args)
            if type(out) is not Tensor:
                raise _not_a_tensor(out)
            if seed is None and out.data.size != 1:
                raise ValueError(f"the output has shape {out.shape}: pass a cotangent.")
            if not out.requires_grad:      # depends on no differentiated argument
                return tuple(np.zeros_like(arrays[i]) for i in wrt)
            # an argument the function ignores has gradient zero, as in JAX and SymPy
            return autograd.grad(out, leaves[0] if one else leaves, seed, allow_unused=True,
                                 materialize_grads=True)

        return call, _to_float64_arrays

    def vjp(self, prepared, inputs, cotangent=None):
        call, finish = self.timed_vjp(prepared, inputs, cotangent)
        return finish(call())

    def function(self, prepared, inputs):
        with no_grad():
            return np.asarray(self.wrt_function(prepared, inputs)(*(Tensor(inputs[i]) for i in prepared.problem.wrt)).data)

    def hvp(self, prepared, inputs, v):
        wrt = tuple(inputs[i] for i in prepared.problem.wrt)
        _, hv = functional.hvp(self.wrt_function(prepared, inputs), wrt, tuple(v), allow_unused=True)
        return as_float64_arrays(hv)

    def graph_stats(self, prepared, inputs) -> dict:
        """The recorded graph of one forward pass: node count and saved bytes (shared memory once)."""
        from ..engine import graph

        problem = prepared.problem
        wrt = [Tensor(inputs[i], requires_grad=True) for i in problem.wrt]
        out = problem.fn(array_api, *substitute(problem, [Tensor(a) for a in inputs], wrt))
        summary = graph.summarize(out)
        return {"nodes": summary.node_count, "saved_bytes": summary.total_saved_bytes}


def _not_a_tensor(out) -> TypeError:
    # a Python number is either a constant or a value taken out of the graph with float() /
    # .item(): the engine cannot tell which, so it does not guess zero
    return TypeError(f"the function returned a {type(out).__name__}, not a Tensor: compute it "
                     "from its arguments with xp's functions (a value converted with float() "
                     "or .item() leaves the graph).")


def _float_array(a):
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype.kind in "iub" else a


def _to_float64_arrays(grads):
    return as_float64_arrays(getattr(g, "data", g) for g in grads)
