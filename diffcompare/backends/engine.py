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
        constants = [a if i in problem.wrt else Tensor(a) for i, a in enumerate(inputs)]
        return Prepared(problem, state=constants)

    def _func(self, prepared):
        problem = prepared.problem

        def func(*wrt_tensors):
            prepared.evaluations += 1
            return problem.fn(array_api, *substitute(problem, prepared.state, wrt_tensors))

        return func

    def vjp(self, prepared, inputs, cotangent=None):
        wrt = tuple(inputs[i] for i in prepared.problem.wrt)
        _, grads = functional.vjp(self._func(prepared), wrt, cotangent)
        return as_float64_arrays(grads)

    def function(self, prepared, inputs):
        problem = prepared.problem
        with no_grad():
            prepared.evaluations += 1
            args = substitute(problem, prepared.state, [Tensor(inputs[i]) for i in problem.wrt])
            return np.asarray(problem.fn(array_api, *args).data)

    def hvp(self, prepared, inputs, v):
        wrt = tuple(inputs[i] for i in prepared.problem.wrt)
        _, hv = functional.hvp(self._func(prepared), wrt, tuple(v))
        return as_float64_arrays(hv)

    def graph_stats(self, prepared, inputs) -> dict:
        """The recorded graph of one forward pass: node count and saved bytes (shared memory once)."""
        from ..engine import graph

        problem = prepared.problem
        wrt = [Tensor(inputs[i], requires_grad=True) for i in problem.wrt]
        out = problem.fn(array_api, *substitute(problem, prepared.state, wrt))
        summary = graph.summarize(out)
        return {"nodes": summary.node_count, "saved_bytes": summary.total_saved_bytes}
