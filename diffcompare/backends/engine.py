"""The engine backend: diffcompare's own reverse mode, through its functional API."""
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
    family = "engine"
    mode = "reverse"

    def prepare(self, problem, inputs) -> Prepared:
        # Nothing to derive or compile: the graph is recorded anew on every call.
        return Prepared(problem)

    def _func(self, prepared, inputs):
        problem = prepared.problem
        constants = [Tensor(a) for a in inputs]   # non-differentiated arguments

        def func(*wrt_tensors):
            prepared.evaluations += 1
            return problem.fn(array_api, *substitute(problem, constants, wrt_tensors))

        return func

    def timed_vjp(self, prepared, inputs, cotangent=None):
        """The loop an engine user writes, as with ``torch.autograd.grad``: fresh leaves on
        the input arrays, the forward pass, ``autograd.grad``; no per-call conversions."""
        problem = prepared.problem
        func = self._func(prepared, inputs)
        wrt = tuple(_float_array(inputs[i]) for i in problem.wrt)
        seed = None if cotangent is None else np.asarray(cotangent)

        def call():
            leaves = [Tensor(a, requires_grad=True) for a in wrt]
            out = func(*leaves)
            if seed is None and out.size != 1:
                raise ValueError(f"the output has shape {out.shape}: pass a cotangent.")
            if not out.requires_grad:      # depends on no differentiated argument
                return tuple(np.zeros_like(a) for a in wrt)
            # an argument the function ignores has gradient zero, as in JAX and SymPy
            return autograd.grad(out, leaves, seed, allow_unused=True, materialize_grads=True)

        return call, _to_float64_arrays

    def vjp(self, prepared, inputs, cotangent=None):
        call, finish = self.timed_vjp(prepared, inputs, cotangent)
        return finish(call())

    def function(self, prepared, inputs):
        with no_grad():
            return np.asarray(self._func(prepared, inputs)(*(Tensor(inputs[i]) for i in prepared.problem.wrt)).data)

    def hvp(self, prepared, inputs, v):
        wrt = tuple(inputs[i] for i in prepared.problem.wrt)
        _, hv = functional.hvp(self._func(prepared, inputs), wrt, tuple(v), allow_unused=True)
        return as_float64_arrays(hv)

    def graph_stats(self, prepared, inputs) -> dict:
        """The recorded graph of one forward pass: node count and saved bytes (shared memory once)."""
        from ..engine import graph

        problem = prepared.problem
        wrt = [Tensor(inputs[i], requires_grad=True) for i in problem.wrt]
        out = problem.fn(array_api, *substitute(problem, [Tensor(a) for a in inputs], wrt))
        summary = graph.summarize(out)
        return {"nodes": summary.node_count, "saved_bytes": summary.total_saved_bytes}


def _float_array(a):
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype.kind in "iub" else a


def _to_float64_arrays(grads):
    return as_float64_arrays(getattr(g, "data", g) for g in grads)
