"""HIPS ``autograd``: reverse mode over NumPy by tracing -- the closest peer of the engine.

The problem runs as ``problem.fn(autograd.numpy, *args)`` (through the xp contract, so
``logsumexp``/``sigmoid``/... work); the differentiated arguments are passed as one tuple,
so one reverse pass (``autograd.make_vjp``) gives every gradient.  An optional extra:
``pip install autograd``.

Limits: none declared -- every problem of the catalog runs (the equivalence tests check
it).  autograd has no derivative for a few NumPy 2 names (``permute_dims``): a problem that
uses one gets an error naming it; ``swapaxes``/``transpose`` work.

>>> import numpy as np
>>> from diffcompare import backends, problems
>>> b = backends.get("autograd")
>>> p = problems.get("rosenbrock")
>>> x = p.inputs(3)
>>> not b.available() or np.allclose(backends.compute_gradient(b, p, x)[0],
...                                  backends.compute_gradient(backends.get("engine"), p, x)[0])
True
"""
from __future__ import annotations

import numpy as np

from .base import Backend, Prepared, as_float64_arrays

INSTALL_HINT = "HIPS autograd is not installed (pip install autograd)"


class AutogradBackend(Backend):
    name = "autograd"
    timed_path = "autograd.numpy (the function untraced)"
    requires = ("autograd", INSTALL_HINT)

    def prepare(self, problem, inputs) -> Prepared:
        import autograd.numpy as anp

        return Prepared(problem, state=anp)

    def _of_wrt(self, prepared, inputs):
        problem, anp = prepared.problem, prepared.state

        def f(wrt_values):
            prepared.evaluations += 1
            args = list(inputs)
            for i, v in zip(problem.wrt, wrt_values):
                args[i] = v
            return problem.fn(anp, *args)

        return f

    def vjp(self, prepared, inputs, cotangent=None):
        from autograd import make_vjp

        wrt = tuple(np.asarray(inputs[i], dtype=np.float64) for i in prepared.problem.wrt)
        pullback, out = make_vjp(self._of_wrt(prepared, inputs))(wrt)
        g = np.ones_like(np.asarray(out, dtype=np.float64)) if cotangent is None else \
            np.asarray(cotangent, dtype=np.float64).reshape(np.shape(out))
        return as_float64_arrays(pullback(g))

    def function(self, prepared, inputs):
        wrt = tuple(inputs[i] for i in prepared.problem.wrt)
        return np.asarray(self._of_wrt(prepared, inputs)(wrt))
