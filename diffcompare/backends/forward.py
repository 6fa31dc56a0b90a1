"""Forward mode: the gradient from one Jacobian-vector product per input.

Reverse mode pays one backward pass per *output*; forward mode one JVP per *input*.  For a
scalar loss with n inputs forward mode is n times the work -- the comparison shows it as n
grows -- and for a vector output (bundle adjustment's residuals) it is the natural way to a
Jacobian with few inputs and many outputs.  A VJP ``cᵀJ`` is computed here as the gradient
of the scalar ``cᵀf`` by forward mode (n JVPs either way).

- ``jax-jacfwd``: ``jax.jit(jax.jacfwd(f))`` -- the n JVPs batched (vmapped) in one
  compiled program; memory grows like n × the function's intermediates, so more than
  ``max_inputs`` (default 2000) differentiated scalars are refused.
- ``engine-jvp``: the engine's ``functional.jvp`` once per input with a unit tangent
  (the engine's JVP differentiates a VJP: two reverse passes each); more than
  ``max_inputs`` (default 300) are refused.

Both compute the full ``jacobian`` product the forward way, one column per input: the JVPs
above, stacked (``jax.jit(jax.jacfwd(f))``, compiled on first use; the engine's ``jvp`` per
unit tangent), so a vector output's Jacobian costs what its VJP does here.

>>> import numpy as np
>>> from diffcompare import backends, problems
>>> p = problems.get("rosenbrock")
>>> x = p.inputs(4)
>>> g = backends.compute_gradient(backends.get("engine-jvp"), p, x)[0]
>>> bool(np.allclose(g, backends.compute_gradient(backends.get("engine"), p, x)[0], rtol=1e-12))
True
"""
from __future__ import annotations

import time

import numpy as np

from ..engine import functional
from .base import SUPPORTED, Backend, Prepared, Support, as_float64_arrays
from .engine import EngineBackend
from .jax_runtime import INSTALL_HINT as JAX_INSTALL_HINT, check_device, check_matmul_precision


def _limit(problem, inputs, max_inputs, why) -> Support:
    n = int(sum(np.size(inputs[i]) for i in problem.wrt))
    if n > max_inputs:
        return Support(False, f"forward mode pays one JVP per input ({why}): n={n} "
                              f"differentiated scalars > {max_inputs} (max_inputs)")
    return SUPPORTED


class EngineJvpBackend(EngineBackend):
    """The engine in forward mode: ``functional.jvp`` per unit tangent."""

    name = "engine-jvp"

    def __init__(self, max_inputs: int = 300):
        self.max_inputs = int(max_inputs)

    # the reverse-mode engine's timed loop and recorded graph are not this method's: time
    # ``vjp`` itself (Backend's default) and report no saved graph
    timed_vjp = Backend.timed_vjp
    graph_stats = None

    def supports_inputs(self, problem, inputs) -> Support:
        return _limit(problem, inputs, self.max_inputs, "each is two reverse passes here")

    def vjp(self, prepared, inputs, cotangent=None):
        wrt = tuple(np.asarray(inputs[i], dtype=np.float64) for i in prepared.problem.wrt)
        weights = None if cotangent is None else np.asarray(cotangent, dtype=np.float64)
        grads = [np.zeros_like(w) for w in wrt]
        for a, j, jv in _unit_jvps(self.wrt_function(prepared, inputs), wrt):
            grads[a].reshape(-1)[j] = np.sum(jv * weights) if weights is not None else jv.sum()
        return tuple(grads)

    def supports_product(self, problem, product, inputs) -> Support:
        if product != "jacobian":   # its other products would be the engine's reverse-mode ones
            return Support(False, f"engine-jvp computes only the jacobian in forward mode; its "
                                  f"{product} would be the engine's (reverse mode): see the engine")
        return SUPPORTED          # within max_inputs (supports_inputs): one JVP per input

    def timed_jacobian(self, prepared, inputs):
        """One ``functional.jvp`` per unit tangent: the Jacobian's columns."""
        wrt = tuple(np.asarray(inputs[i], dtype=np.float64) for i in prepared.problem.wrt)
        func = self.wrt_function(prepared, inputs)

        def call():
            columns = [[] for _ in wrt]
            for a, _, jv in _unit_jvps(func, wrt):
                columns[a].append(jv)
            return tuple(np.stack(cols, axis=-1).reshape(cols[0].shape + w.shape)
                         for cols, w in zip(columns, wrt))

        return call, as_float64_arrays


def _unit_jvps(func, wrt):
    """``(argument, flat index, J e)`` for each unit tangent ``e`` of the differentiated
    arguments: one ``functional.jvp`` each, the Jacobian's columns in order."""
    for a, w in enumerate(wrt):
        for j in range(w.size):
            tangents = [np.zeros_like(x) for x in wrt]
            tangents[a].reshape(-1)[j] = 1.0
            _, jv = functional.jvp(func, wrt, tuple(tangents), allow_unused=True)
            yield a, j, np.asarray(jv, dtype=np.float64)


class JaxJacfwdBackend(Backend):
    """``jax.jacfwd`` under ``jax.jit``: the per-input JVPs batched in one program."""

    name = "jax-jacfwd"
    timed_path = "XLA executables (jax.jit)"
    requires = ("jax", JAX_INSTALL_HINT)
    numpy_arrays = False         # XLA's buffers: tracemalloc would see none of them

    def __init__(self, max_inputs: int = 2000, device: str = "cpu",
                 matmul_precision: str = "highest"):
        """``device`` and ``matmul_precision`` as for ``jax-jit`` (the CPU and full float32
        unless asked)."""
        self.max_inputs = int(max_inputs)
        self.device = check_device(device)
        self.matmul_precision = check_matmul_precision(matmul_precision)

    def available(self) -> Support:
        from .jax_runtime import device_support

        support = super().available()
        return device_support(self.device) if support else support


    def supports_inputs(self, problem, inputs) -> Support:
        return _limit(problem, inputs, self.max_inputs,
                      "jacfwd batches them all: memory n × the function's")

    def prepare(self, problem, inputs) -> Prepared:
        from .jax_runtime import describe_device, import_jax, pick_device

        jax = import_jax()
        jnp = jax.numpy
        wrt = problem.wrt
        device = pick_device(jax, self.device)

        def scalar(wrt_values, others, weights):
            args = list(others)
            for i, v in zip(wrt, wrt_values):
                args[i] = v
            out = jnp.asarray(problem.fn(jnp, *args))
            return jnp.sum(out * weights) if problem.vector_output else out.reshape(())

        def gradient(wrt_values, others, weights):
            return jax.jacfwd(scalar)(wrt_values, others, weights)

        def value(wrt_values, others):
            args = list(others)
            for i, v in zip(wrt, wrt_values):
                args[i] = v
            return problem.fn(jnp, *args)

        # computes in the differentiated inputs' dtype, in JAX's thread-local 64-bit scope
        x64 = all(np.asarray(inputs[i]).dtype != np.float32 for i in wrt)
        state = {"jax": jax, "gradient": jax.jit(gradient), "value": jax.jit(value), "x64": x64,
                 "device": device, "matmul_precision": self.matmul_precision}
        prepared = Prepared(problem, state=state,
                            info={"device": describe_device(device), "platform": device.platform,
                                  "device_kind": device.device_kind, "x64": x64,
                                  "matmul_precision": self.matmul_precision})
        # compile now: preparation is timed apart from the gradient
        self._call(prepared, inputs, None, warm=True)
        return prepared

    @staticmethod
    def _scope(state):
        from .jax_runtime import placement

        return placement(state["jax"], state["x64"], state["device"], state["matmul_precision"])

    def _split(self, prepared, inputs):
        jnp = prepared.state["jax"].numpy
        dtype = np.float64 if prepared.state["x64"] else np.float32
        device = prepared.state["device"]
        jax = prepared.state["jax"]
        wrt = tuple(jax.device_put(jnp.asarray(np.asarray(inputs[i], dtype=dtype)), device)
                    for i in prepared.problem.wrt)
        others = tuple(jax.device_put(jnp.asarray(a), device) for a in inputs)
        return wrt, others

    def _call(self, prepared, inputs, cotangent, warm=False):
        call, _ = self._timed(prepared, inputs, cotangent, count=not warm)
        return call()

    def _timed(self, prepared, inputs, cotangent, count=True):
        """The call a timing loop repeats (inputs on the device beforehand) and its count:
        one (batched) JVP per differentiated scalar."""
        state = prepared.state
        jax, gradient, scope = state["jax"], state["gradient"], self._scope
        with scope(state):
            jnp = jax.numpy
            wrt, others = self._split(prepared, inputs)
            if prepared.problem.vector_output:
                if cotangent is None:       # compile with the output's shape, ones as weights
                    cotangent = np.ones(np.shape(state["value"](wrt, others)))
                weights = jnp.asarray(np.asarray(cotangent, dtype=wrt[0].dtype))
            else:
                weights = jnp.asarray(1.0)
        n = int(sum(np.size(w) for w in wrt)) if count else 0

        def call():
            with scope(state):
                grads = jax.block_until_ready(gradient(wrt, others, weights))
            prepared.evaluations += n
            return grads

        return call, as_float64_arrays

    def timed_vjp(self, prepared, inputs, cotangent=None):
        return self._timed(prepared, inputs, cotangent)

    def vjp(self, prepared, inputs, cotangent=None):
        from .jax_runtime import output_device

        call, finish = self._timed(prepared, inputs, cotangent)
        out = call()
        prepared.info["output_device"] = output_device(out)
        return finish(out)

    product_limits = {"jacobian": (4_000_000, "jacfwd batches one JVP per input, memory grows "
                                              "with the entries")}

    def timed_jacobian(self, prepared, inputs):
        """``jax.jit(jax.jacfwd(f))`` over the differentiated arguments, compiled on first use
        (``info["jacobian_compile_seconds"]``)."""
        from .jax_runtime import block_until_ready

        state = prepared.state
        jax = state["jax"]
        with self._scope(state):
            wrt, others = self._split(prepared, inputs)
            if "jacobian" not in state:
                def of_wrt(wrt_values, others):
                    return jax.jacfwd(lambda w: state["value"](w, others))(wrt_values)

                t0 = time.perf_counter()
                state["jacobian"] = jax.jit(of_wrt).lower(wrt, others).compile()
                prepared.info["jacobian_compile_seconds"] = time.perf_counter() - t0
        jacobian = state["jacobian"]

        def call():
            prepared.evaluations += int(sum(np.size(w) for w in wrt))
            return block_until_ready(tuple(jacobian(wrt, others)))

        return call, as_float64_arrays

    def timed_function(self, prepared, inputs):
        """The jitted function on inputs placed on the device beforehand, as ``timed_vjp``
        times the jitted gradient: like with like (uploading the inputs each call cost
        ten times the function and made gradient ÷ function read 0.1×)."""
        from .jax_runtime import block_until_ready

        state = prepared.state
        with self._scope(state):
            wrt, others = self._split(prepared, inputs)
        value, scope = state["value"], self._scope

        def call():
            with scope(state):
                out = block_until_ready(value(wrt, others))
            prepared.evaluations += 1
            return out

        return call, np.asarray

    def function(self, prepared, inputs):
        from .jax_runtime import output_device

        call, finish = self.timed_function(prepared, inputs)
        out = call()
        prepared.info["output_device"] = output_device(out)
        return finish(out)
