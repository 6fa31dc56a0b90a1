"""The engine, compiled: ``diffcompare.engine.compile`` traces the problem once and runs
the generated straight-line NumPy program (no Tensor, no graph) on every call.

``prepare`` = trace + generate + compile, for the inputs' shapes (a new shape
traces again); ``vjp`` and ``function`` run the generated code.  A vector-output
problem is compiled as ``sum(f(args) * cotangent)`` with the cotangent as one
more argument, so one program serves every cotangent.  Integer inputs that are not
differentiated (index arrays such as bundle adjustment's observations) are baked into the
program as constants, as ``jax.jit`` bakes closure constants; a later call with different
ones is refused rather than answered with the old program.
"""
from __future__ import annotations

import numpy as np

from ..engine.compiler import CompiledGradient, TraceError
from .base import Backend, Prepared, UnsupportedError, as_float64_arrays


def _weighted(fn):
    def weighted(xp, *args):
        return xp.sum(fn(xp, *args[:-1]) * args[-1])

    return weighted


def _integer_constants(problem, inputs) -> dict:
    """The non-differentiated integer (or bool) inputs, by position: baked in as constants."""
    return {i: np.array(a, copy=True) for i, a in enumerate(inputs)
            if i not in problem.wrt and np.asarray(a).dtype.kind in "biu"}


def _baked(fn, n_args: int, constants: dict):
    """``fn(xp, *all_args)`` as a function of the other arguments, ``constants`` filled in."""
    def baked(xp, *free):
        rest = iter(free)
        return fn(xp, *[constants[i] if i in constants else next(rest) for i in range(n_args)])

    return baked


class EngineCompiledBackend(Backend):
    name = "engine-compiled"
    timed_path = "the engine's compiled program (generated Python over NumPy)"

    def prepare(self, problem, inputs) -> Prepared:
        inputs = tuple(np.asarray(a) for a in inputs)
        constants = _integer_constants(problem, inputs)
        fn = _baked(problem.fn, len(inputs), constants) if constants else problem.fn
        wrt = tuple(w - sum(1 for i in constants if i < w) for w in problem.wrt)
        free = tuple(a for i, a in enumerate(inputs) if i not in constants)
        value = CompiledGradient(fn, wrt=(), xp=True)
        try:
            value.trace(*free)
            if problem.vector_output:
                names = value._arg_names(len(free)) + ["cotangent"]
                grad = CompiledGradient(_weighted(fn), wrt=wrt, xp=True, names=names)
                out_shape = np.shape(value._variant().value.fn(*free))
                grad.trace(*free, np.ones(out_shape))
            else:
                grad = CompiledGradient(fn, wrt=wrt, xp=True)
                grad.trace(*free)
        except TraceError as exc:
            raise UnsupportedError(problem.name, self.name, str(exc)) from None
        stats = grad.stats()
        info = {"steps": stats["forward_steps"] + stats["backward_steps"],
                "forward_steps": stats["forward_steps"], "backward_steps": stats["backward_steps"],
                "saved_bytes": stats["saved_bytes"], "guards": stats["guards"]}
        return Prepared(problem, state=(value, grad, constants), info=info)

    @staticmethod
    def _free(prepared, inputs) -> tuple:
        """The inputs the program takes: all but the baked-in integer constants, which must be
        the ones it was traced with."""
        constants = prepared.state[2]
        for i, baked in constants.items():
            if not np.array_equal(np.asarray(inputs[i]), baked):
                raise ValueError(f"engine-compiled: integer input {i} of {prepared.problem.name!r} differs "
                                 "from the one baked into the program at prepare; prepare again.")
        return tuple(np.asarray(a) for i, a in enumerate(inputs) if i not in constants)

    def vjp(self, prepared, inputs, cotangent=None):
        grad = prepared.state[1]
        prepared.evaluations += 1
        args = self._free(prepared, inputs)
        if prepared.problem.vector_output:
            args += (np.asarray(cotangent, dtype=np.float64),)
        _, grads = grad(*args)
        if cotangent is not None and not prepared.problem.vector_output:
            scale = float(np.asarray(cotangent, np.float64).reshape(-1)[0])
            grads = tuple(g * scale for g in grads)
        return as_float64_arrays(grads)

    def function(self, prepared, inputs):
        value = prepared.state[0]
        prepared.evaluations += 1
        return np.asarray(value.value(*self._free(prepared, inputs)))

    def graph_stats(self, prepared, inputs) -> dict:
        """The compiled program's size: steps, and bytes kept from forward for backward."""
        grad = prepared.state[1]
        stats = grad.stats()
        return {"nodes": stats["forward_steps"] + stats["backward_steps"],
                "saved_bytes": stats["saved_bytes"]}
