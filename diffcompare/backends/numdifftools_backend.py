"""``numdifftools``: adaptive finite differences with an error estimate per derivative.

``numdifftools.Gradient`` takes central differences at a sequence of steps and Richardson-
extrapolates them, returning the derivative and an estimate of its error.  Here it
differentiates the scalar ``f`` (or ``cotangentᵀ f`` for a vector output, which is the VJP)
as a function of the differentiated arguments flattened into one vector, evaluated on NumPy.
The largest error estimate of the last gradient is kept in ``prepared.info`` (key
``error_estimate_max``).  An optional extra: ``pip install numdifftools``.

Limits: about 30 function evaluations per differentiated scalar, so more than
``max_inputs`` (default 100) are refused (``supports_inputs``).

>>> import numpy as np
>>> from diffcompare import backends, problems
>>> b = backends.get("numdifftools")
>>> p = problems.get("rosenbrock")
>>> x = p.inputs(3)
>>> not b.available() or np.allclose(backends.compute_gradient(b, p, x)[0],
...                                  backends.compute_gradient(backends.get("engine"), p, x)[0],
...                                  rtol=1e-8)
True
"""
from __future__ import annotations

import numpy as np

from .base import SUPPORTED, Backend, Prepared, Support

INSTALL_HINT = "numdifftools is not installed (pip install numdifftools)"


class NumdifftoolsBackend(Backend):
    name = "numdifftools"
    requires = ("numdifftools", INSTALL_HINT)

    def __init__(self, max_inputs: int = 100):
        self.max_inputs = int(max_inputs)

    def supports_inputs(self, problem, inputs) -> Support:
        n = int(sum(np.size(inputs[i]) for i in problem.wrt))
        if n > self.max_inputs:
            return Support(False, f"about 30 function evaluations per input: n={n} differentiated "
                                  f"scalars > {self.max_inputs} (max_inputs)")
        return SUPPORTED

    def prepare(self, problem, inputs) -> Prepared:
        return Prepared(problem)

    def _scalar(self, prepared, inputs, cotangent):
        problem = prepared.problem
        shapes = [np.shape(inputs[i]) for i in problem.wrt]
        sizes = [int(np.prod(s)) for s in shapes]
        weights = None if cotangent is None else np.asarray(cotangent, dtype=np.float64)

        def f(flat):
            prepared.evaluations += 1
            args = [np.array(a) for a in inputs]
            start = 0
            for i, shape, n in zip(problem.wrt, shapes, sizes):
                args[i] = flat[start:start + n].reshape(shape)
                start += n
            out = np.asarray(problem.fn(np, *args), dtype=np.float64)
            return float(np.sum(out * weights)) if weights is not None else float(out.reshape(-1)[0])

        return f, shapes, sizes

    def vjp(self, prepared, inputs, cotangent=None):
        import numdifftools as nd

        problem = prepared.problem
        f, shapes, sizes = self._scalar(prepared, inputs, cotangent)
        x0 = np.concatenate([np.asarray(inputs[i], dtype=np.float64).reshape(-1)
                             for i in problem.wrt]) if sizes else np.zeros(0)
        result = nd.Gradient(f, full_output=True)(x0)   # (estimate, error_estimate, ...)
        grad, error = result[0], np.asarray(result[1])
        grad = np.atleast_1d(np.asarray(grad, dtype=np.float64)).reshape(-1)
        prepared.info["error_estimate_max"] = float(np.max(error)) if grad.size else 0.0
        out, start = [], 0
        for shape, n in zip(shapes, sizes):
            out.append(grad[start:start + n].reshape(shape))
            start += n
        return tuple(out)

    def function(self, prepared, inputs):
        prepared.evaluations += 1
        return np.asarray(prepared.problem.fn(np, *inputs))
