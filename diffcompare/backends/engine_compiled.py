"""The engine, compiled: ``diffcompare.engine.compile`` traces the problem once and runs
the generated straight-line NumPy program (no Tensor, no graph) on every call.

``prepare`` = trace + generate + compile, for the inputs' shapes (a new shape
traces again); ``vjp`` and ``function`` run the generated code.  A vector-output
problem is compiled as ``sum(f(args) * cotangent)`` with the cotangent as one
more argument, so one program serves every cotangent.
"""
from __future__ import annotations

import numpy as np

from ..engine.compiler import CompiledGradient, TraceError
from .base import Backend, Prepared, UnsupportedError, as_float64_arrays


def _weighted(fn):
    def weighted(xp, *args):
        return xp.sum(fn(xp, *args[:-1]) * args[-1])

    return weighted


class EngineCompiledBackend(Backend):
    name = "engine-compiled"
    family = "engine"

    def prepare(self, problem, inputs) -> Prepared:
        inputs = tuple(np.asarray(a) for a in inputs)
        value = CompiledGradient(problem.fn, wrt=(), xp=True)
        try:
            value.trace(*inputs)
            if problem.vector_output:
                names = value._arg_names(len(inputs)) + ["cotangent"]
                grad = CompiledGradient(_weighted(problem.fn), wrt=problem.wrt, xp=True, names=names)
                out_shape = np.shape(value._variant().value.fn(*inputs))
                grad.trace(*inputs, np.ones(out_shape))
            else:
                grad = CompiledGradient(problem.fn, wrt=problem.wrt, xp=True)
                grad.trace(*inputs)
        except TraceError as exc:
            raise UnsupportedError(problem.name, self.name, str(exc)) from None
        stats = grad.stats()
        info = {"steps": stats["forward_steps"] + stats["backward_steps"],
                "forward_steps": stats["forward_steps"], "backward_steps": stats["backward_steps"],
                "saved_bytes": stats["saved_bytes"], "guards": stats["guards"]}
        return Prepared(problem, state=(value, grad), info=info)

    def vjp(self, prepared, inputs, cotangent=None):
        _, grad = prepared.state
        prepared.evaluations += 1
        args = tuple(np.asarray(a) for a in inputs)
        if prepared.problem.vector_output:
            args += (np.asarray(cotangent, dtype=np.float64),)
        _, grads = grad(*args)
        if cotangent is not None and not prepared.problem.vector_output:
            scale = float(np.asarray(cotangent, np.float64).reshape(-1)[0])
            grads = tuple(g * scale for g in grads)
        return as_float64_arrays(grads)

    def function(self, prepared, inputs):
        value, _ = prepared.state
        prepared.evaluations += 1
        return np.asarray(value.value(*inputs))

    def graph_stats(self, prepared, inputs) -> dict:
        """The compiled program's size: steps, and bytes kept from forward for backward."""
        _, grad = prepared.state
        stats = grad.stats()
        return {"nodes": stats["forward_steps"] + stats["backward_steps"],
                "saved_bytes": stats["saved_bytes"]}
