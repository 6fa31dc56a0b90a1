"""The engine backend: diffcompare's own reverse mode, through its functional API."""
from __future__ import annotations

import numpy as np

from ..engine import Tensor, array_api, functional, no_grad
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
        wrt = tuple(inputs[i] for i in prepared.problem.wrt)
        func = self._func(prepared, inputs)

        def call():
            # an argument the function ignores has gradient zero, as in JAX and SymPy
            return functional.vjp(func, wrt, cotangent, allow_unused=True)[1]

        return call, as_float64_arrays

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
