"""JAX backends: ``jax-jit`` (traced, lowered and compiled once) and ``jax-eager``.

The problem runs as ``problem.fn(jax.numpy, *args)`` in the dtype of the differentiated
inputs: float32 inputs compute in float32 (JAX's 64-bit mode off), anything else in
float64 (64-bit mode on).  The mode is set per call with JAX's thread-local
``enable_x64`` context (``jax_runtime.x64_scope``), never globally, so other JAX code in the same
process keeps its own setting.  It runs on the device it is given (``device="cpu"``, the
default, or ``device="gpu"``), never elsewhere: a GPU that is asked for and missing makes the
backend unavailable, one that is present but cannot start (CUDA fails to initialize) raises
``GpuStartError`` naming JAX's cause, never a quiet CPU run.  ``prepared.info["output_device"]``
is the device read back from the arrays a call returned.  float32 matrix products run at
``matmul_precision`` (``"highest"`` by default: full float32, not the TF32 a GPU's tensor
cores use under JAX's default; ``jax-jit-tf32`` is the TF32 variant), recorded in ``info``.
Gradients come from
``jax.grad`` (scalar output) or ``jax.vjp`` with the cotangent (vector output), taken
with respect to ``problem.wrt``; the other arguments are inputs that are not
differentiated.  Hessian-vector products are forward-over-reverse,
``jax.jvp(jax.grad(f), ...)``.

- ``jax-jit``: ``prepare`` traces, lowers and compiles the gradient (the VJP with a
  cotangent argument for vector outputs) and the plain function ahead of time
  (``jax.jit(f).lower(*args).compile()``), so the evaluate phase only calls the
  compiled executables and never retraces.  ``prepared.info`` keeps the lower and
  compile seconds and what XLA says about each executable: ``memory_analysis()``
  (``gradient_temp_bytes``, ``gradient_argument_bytes``, ``gradient_output_bytes``,
  ...; JAX's memory source on the CPU) and ``cost_analysis()`` (``gradient_flops``).
  The non-differentiated arguments are arguments of the executables too; only a
  problem that needs one of them as a Python number (``range(int(k))``) gets them
  fixed at their ``prepare`` values (``info["constants"]`` says which).  The HVP is
  compiled on its first call (``info["hvp_compile_seconds"]``): warm up before timing it.
  The derivative products likewise (``info["<product>_compile_seconds"]``), so the prepare
  phase stays the gradient's: the ``jacobian`` is ``jax.jacrev`` (the VJPs of the output's
  unit cotangents, vmapped), the ``hessian_diagonal`` the diagonal of forward-over-reverse
  HVPs ``jax.jvp(jax.grad(f), x, e_i)`` vmapped over the unit vectors ``e_i``; both batch
  every element in one program (memory grows with it: ``product_limits``).
- ``jax-eager``: no ``jit``.  Every call runs the Python function again and JAX
  dispatches it primitive by primitive (each primitive compiled once and cached).
  ``JaxEagerBackend(disable_jit=True)`` also runs the jitted insides of
  ``jax.numpy`` op by op.

Inputs are placed on the device once, in ``prepare``; later calls with the *same
array objects* reuse those device copies, other arrays are uploaded on each call.
``timed_vjp``/``timed_function`` give the call alone (the executable and
``block_until_ready``, what a bare loop of JAX times), with the upload done before
and the copy back to NumPy after.  Do not modify the input arrays in place between
calls.  ``retained_bytes`` is the compiled executables and the device copies.

The module imports without JAX; ``available()`` says how to install it.

>>> from diffcompare import backends
>>> b = backends.get("jax-jit")
>>> b.family
'jax'
>>> bool(b.available()) or b.available().reason.startswith("jax is not installed")
True
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
from typing import Any

import numpy as np

from .base import Backend, Prepared, Support, as_float64_arrays, compute_dtype
from .jax_runtime import (DEFAULT_MATMUL_PRECISION, INSTALL_HINT, block_until_ready, check_device,
                          check_matmul_precision, describe_device, device_support, import_jax,
                          output_device, pick_device, placement)

# Concretization errors: the function needs a concrete value (a Python number,
# bool or NumPy array) of something that jit traces.
_CONCRETE_ERRORS = ("ConcretizationTypeError", "TracerIntegerConversionError",
                    "TracerArrayConversionError")



def _memory_info(compiled, prefix: str) -> dict:
    try:
        stats = compiled.memory_analysis()
    except Exception:
        return {}
    if stats is None:
        return {}
    fields = {"temp": "temp_size_in_bytes", "argument": "argument_size_in_bytes",
              "output": "output_size_in_bytes", "alias": "alias_size_in_bytes",
              "generated_code": "generated_code_size_in_bytes"}
    out = {}
    for short, field in fields.items():
        value = getattr(stats, field, None)
        if value is not None:
            out[f"{prefix}_{short}_bytes"] = int(value)
    return out


def _executable_bytes(compiled) -> int:
    """Size of a compiled executable: XLA's generated-code size where it reports one (the
    CPU client reports 0), else the length of the serialized executable (machine code
    and metadata)."""
    try:
        executable = compiled.runtime_executable()
        size = int(executable.size_of_generated_code_in_bytes())
        return size if size > 0 else len(executable.serialize())
    except Exception:          # a client that cannot serialize
        return 0


def _cost_info(compiled, prefix: str) -> dict:
    try:
        cost = compiled.cost_analysis()
    except Exception:
        return {}
    if isinstance(cost, (list, tuple)):      # older JAX: one dict per computation
        cost = cost[0] if cost else None
    if not cost:
        return {}
    out = {}
    for key, name in (("flops", "flops"), ("transcendentals", "transcendentals"),
                      ("bytes accessed", "bytes_accessed")):
        if key in cost:
            out[f"{prefix}_{name}"] = float(cost[key])
    return out


def _dispatch(compiled):
    """The C++ call of a compiled executable: ``Compiled.__call__`` makes it on its first
    call and keeps it (``_call``, JAX 0.4.31 to 0.10 at least), then reaches it through a
    Python frame that costs ~0.4 µs a call -- 7% of a 6 µs gradient, a cost ``jax.jit``'s own
    call does not have.  ``compiled`` itself before that first call, or where a JAX keeps no
    such attribute (the same result, a little slower)."""
    fast = getattr(compiled, "_call", None)
    return compiled if fast is None else fast


def _to_float64_tuple(out):
    return as_float64_arrays(out if isinstance(out, (tuple, list)) else (out,))


def _explain(exc):
    """A concretization error, said in the problem's terms (other errors unchanged)."""
    if type(exc).__name__ not in _CONCRETE_ERRORS:
        return exc
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return TypeError(
        "JAX traces the differentiated arguments (under jax.grad and jax.jit alike), so the "
        "function cannot turn a value computed from them into a Python number, bool or NumPy "
        "array (data-dependent Python control flow): write branches with xp.where and take loop "
        f"counts from shapes. JAX said: {first}")


def _raise_explained(exc):
    explained = _explain(exc)
    if explained is exc:
        raise exc
    raise explained from exc


# --- the differentiated functions ----------------------------------------------------

@dataclasses.dataclass
class _Calls:
    """How the problem's arguments map to the arguments of the JAX functions.

    With ``static=False`` every argument is an argument of the JAX function (the
    non-differentiated ones too, so data is an input of the executable, not a
    constant baked into it).  With ``static=True`` only the differentiated
    arguments are, and the others are fixed at their ``prepare`` values (needed
    when the problem reads a concrete Python number from one of them).
    """

    problem: Any
    static: bool
    constants: tuple          # device arrays of all the prepare inputs

    @property
    def positions(self) -> tuple:
        """Where the differentiated arguments sit among the call arguments."""
        return tuple(range(len(self.problem.wrt))) if self.static else self.problem.wrt

    def call_args(self, device_inputs) -> tuple:
        return tuple(device_inputs[i] for i in self.problem.wrt) if self.static else tuple(device_inputs)

    def full_args(self, call_args) -> list:
        if not self.static:
            return list(call_args)
        args = list(self.constants)
        for i, a in zip(self.problem.wrt, call_args):
            args[i] = a
        return args


def _make_functions(jax, calls: _Calls):
    """The plain function, the gradient (or VJP) and the HVP over the call arguments."""
    jnp = jax.numpy
    problem = calls.problem
    positions = calls.positions

    def value(*call_args):
        out = problem.fn(jnp, *calls.full_args(call_args))
        if not isinstance(out, jax.Array):     # jnp.asarray of a tracer is not free under grad
            out = jnp.asarray(out)
        if problem.vector_output:
            return out
        if out.shape != ():
            if out.size != 1:
                raise ValueError(
                    f"the function returned shape {out.shape} where a scalar is needed; reduce it "
                    "(e.g. xp.sum) or tag the problem 'vector-output' with a cotangent.")
            out = out.reshape(())
        return out

    def of_wrt(call_args):
        return _of_wrt(value, positions, call_args)

    # made once: jax.grad inspects the function's signature each time it wraps one, which
    # in eager mode would be charged to every call.  One differentiated argument gives its
    # gradient alone, as ``jax.grad(f)`` does (a 1-tuple costs a jitted call ~2% at 30 µs)
    gradient = jax.grad(value, argnums=positions[0] if len(positions) == 1 else tuple(positions))

    def vjp(*call_args_and_cotangent):
        *call_args, cotangent = call_args_and_cotangent
        wrt_values = [call_args[p] for p in positions]
        out, pullback = jax.vjp(of_wrt(call_args), *wrt_values)
        return pullback(jnp.asarray(cotangent, dtype=out.dtype))

    def hvp(*call_args_and_tangents):
        call_args = call_args_and_tangents[:-len(positions)]
        tangents = call_args_and_tangents[-len(positions):]
        wrt_values = [call_args[p] for p in positions]
        grad_f = jax.grad(of_wrt(call_args), argnums=tuple(range(len(positions))))
        _, hv = jax.jvp(grad_f, tuple(wrt_values),
                        tuple(jnp.asarray(t, dtype=w.dtype) for t, w in zip(tangents, wrt_values)))
        return hv

    return value, gradient, vjp, hvp


def _of_wrt(value, positions, call_args):
    """``value`` as a function of the differentiated arguments only (at ``positions`` of
    ``call_args``; the others fixed)."""
    def f(*wrt_values):
        args = list(call_args)
        for p, w in zip(positions, wrt_values):
            args[p] = w
        return value(*args)
    return f


def _make_products(jax, calls: _Calls) -> dict:
    """The derivative products over the call arguments, by name (``problems.PRODUCTS``)."""
    from jax.flatten_util import ravel_pytree

    jnp = jax.numpy
    value = _make_functions(jax, calls)[0]
    positions = calls.positions
    argnums = tuple(range(len(positions)))

    def of_wrt(call_args):
        return _of_wrt(value, positions, call_args)

    def jacobian(*call_args):
        wrt_values = [call_args[p] for p in positions]
        return jax.jacrev(of_wrt(call_args), argnums=argnums)(*wrt_values)

    def hessian_diagonal(*call_args):
        wrt_values = tuple(call_args[p] for p in positions)
        flat, unravel = ravel_pytree(wrt_values)
        grad_f = jax.grad(of_wrt(call_args), argnums=argnums)

        def hvp(v):                  # forward over reverse, on the flattened arguments
            tangent = jax.jvp(lambda x: ravel_pytree(grad_f(*unravel(x)))[0], (flat,), (v,))[1]
            return jnp.vdot(v, tangent)      # the diagonal entry of a unit vector v

        return unravel(jax.vmap(hvp)(jnp.eye(flat.size, dtype=flat.dtype)))

    return {"jacobian": jacobian, "hessian_diagonal": hessian_diagonal}


@dataclasses.dataclass
class _State:
    jax: Any
    device: Any
    host_inputs: tuple        # the arrays given to prepare (compared by identity)
    device_inputs: tuple      # their copies on the device
    calls: _Calls
    value: Any                # plain function (compiled for jit)
    gradient: Any             # grad (scalar output) or vjp(*args, cotangent) (vector output)
    hvp_fn: Any               # uncompiled HVP function
    hvp: Any = None           # compiled HVP (jit), made on first use
    dtype: Any = np.dtype(np.float64)   # the dtype computed in (float32 runs with x64 off)
    output_shape: tuple | None = None
    arg_specs: tuple = ()     # (shape, dtype) per call argument, for clear errors (jit)
    cotangent: tuple = (None, None)   # (host array, device copy) of the last cotangent
    products: dict = dataclasses.field(default_factory=dict)   # product -> callable (compiled for jit)
    matmul_precision: str = DEFAULT_MATMUL_PRECISION


class _JaxBackend(Backend):
    requires = ("jax", INSTALL_HINT)
    numpy_arrays = False
    jit = True
    _disable_jit = False

    def __init__(self, device: str = "cpu", matmul_precision: str = DEFAULT_MATMUL_PRECISION):
        """``device``: "cpu" (the default) or "gpu" -- where every call runs, and nowhere else.
        ``matmul_precision``: JAX's precision of float32 matrix products and convolutions
        (``MATMUL_PRECISIONS``; "highest" = full float32, "tensorfloat32" = a GPU's TF32)."""
        self.device = check_device(device)
        self.matmul_precision = check_matmul_precision(matmul_precision)

    def available(self) -> Support:
        support = super().available()
        return device_support(self.device) if support else support

    # -- placing inputs ------------------------------------------------------------

    @staticmethod
    def _upload_one(jax, device, problem, i, a, dtype):
        """One argument on the device: differentiated ones in ``dtype``; in float32 runs
        every floating argument too (64-bit mode is off there, so JAX holds no float64)."""
        a = np.asarray(a)
        if a.dtype != dtype and (i in problem.wrt or (dtype == np.float32 and a.dtype.kind == "f")):
            a = a.astype(dtype)
        return jax.device_put(a, device)

    @staticmethod
    @contextlib.contextmanager
    def _scope(state):
        """The 64-bit mode, device and matmul precision every JAX call (and every trace) of
        this prepared problem runs under."""
        with placement(state.jax, state.dtype == np.float64, state.device, state.matmul_precision):
            yield

    def _device_inputs(self, state: _State, problem, inputs) -> tuple:
        """The inputs on the device: prepare's copies for the same array objects, else uploaded."""
        if len(inputs) != len(state.host_inputs):
            raise ValueError(f"expected {len(state.host_inputs)} arguments (as given to prepare), "
                             f"got {len(inputs)}.")
        return tuple(dev if a is host else self._upload_one(state.jax, state.device, problem, i, a,
                                                            state.dtype)
                     for i, (a, host, dev) in enumerate(zip(inputs, state.host_inputs,
                                                            state.device_inputs)))

    def _device_cotangent(self, state: _State, cotangent):
        host, dev = state.cotangent
        if cotangent is host and dev is not None:
            return dev
        cot = np.asarray(cotangent, dtype=state.dtype)
        if state.output_shape is not None and cot.shape != state.output_shape:
            raise ValueError(f"the cotangent has shape {cot.shape}; the function's output has shape "
                             f"{state.output_shape}.")
        dev = state.jax.device_put(cot, state.device)
        state.cotangent = (cotangent, dev)
        return dev

    # -- the interface -------------------------------------------------------------

    def prepare(self, problem, inputs) -> Prepared:
        jax = import_jax()
        device = pick_device(jax, self.device)
        inputs = tuple(inputs)
        dtype = compute_dtype(problem, inputs)
        info = {"device": describe_device(device), "platform": device.platform,
                "device_kind": device.device_kind, "jax_version": jax.__version__,
                "mode": "jit" if self.jit else ("eager, jit disabled" if self._disable_jit else "eager"),
                "x64": bool(dtype == np.float64), "matmul_precision": self.matmul_precision}
        with placement(jax, dtype == np.float64, device, self.matmul_precision):
            # the transfers, timed apart from compute: the inputs up, and the gradient's bytes
            # (the differentiated inputs' shapes) back to the host
            t0 = time.perf_counter()
            device_inputs = jax.block_until_ready(tuple(self._upload_one(jax, device, problem, i, a, dtype)
                                                        for i, a in enumerate(inputs)))
            info["transfer_to_device_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            back = [np.asarray(device_inputs[i]) for i in problem.wrt]
            info["transfer_to_host_s"] = time.perf_counter() - t0
            info["transfer_bytes"] = int(sum(np.asarray(d).nbytes for d in device_inputs)
                                         + sum(b.nbytes for b in back))
            state = self._prepare_state(jax, device, problem, inputs, device_inputs, info)
        state.dtype = dtype
        state.matmul_precision = self.matmul_precision
        return Prepared(problem, state=state, info=info)

    def _prepare_state(self, jax, device, problem, inputs, device_inputs, info) -> _State:
        raise NotImplementedError

    def _call(self, state: _State, fn, args):
        """``fn(*args)`` computed to completion, in the prepared problem's scope."""
        try:
            with self._scope(state):
                out = fn(*args)
        except TypeError as exc:
            _raise_explained(exc)
        return block_until_ready(out)

    def timed_vjp(self, prepared, inputs, cotangent=None):
        state, problem = prepared.state, prepared.problem
        with self._scope(state):
            args = state.calls.call_args(self._device_inputs(state, problem, inputs))
            if problem.vector_output:
                if cotangent is None:
                    raise ValueError("this problem has a vector output: pass its cotangent.")
                args = args + (self._device_cotangent(state, cotangent),)
        if not problem.vector_output and cotangent is not None and np.size(cotangent) != 1:
            raise ValueError(f"this problem has a scalar output; got a cotangent of shape "
                             f"{np.shape(cotangent)}.")
        self._check_args(state, args)
        scale = (float(np.asarray(cotangent).reshape(()))
                 if cotangent is not None and not problem.vector_output else None)
        call = self._counted(prepared, state.gradient, args)

        def finish(grads):
            if not isinstance(grads, tuple):       # one differentiated argument's gradient
                grads = (grads,)
            if scale is not None:
                return tuple(np.asarray(g, dtype=np.float64) * scale for g in grads)
            return as_float64_arrays(grads)

        return call, finish

    def vjp(self, prepared, inputs, cotangent=None):
        call, finish = self.timed_vjp(prepared, inputs, cotangent)
        out = call()
        prepared.info["output_device"] = output_device(out)
        return finish(out)

    def timed_function(self, prepared, inputs):
        state = prepared.state
        with self._scope(state):
            args = state.calls.call_args(self._device_inputs(state, prepared.problem, inputs))
        self._check_args(state, args)
        return self._counted(prepared, state.value, args), np.asarray

    def function(self, prepared, inputs):
        call, finish = self.timed_function(prepared, inputs)
        out = call()
        prepared.info["output_device"] = output_device(out)
        return finish(out)

    def _counted(self, prepared, fn, args):
        """The call a timing loop repeats: ``fn(*args)`` to completion, counted."""
        state, run = prepared.state, self._call

        def call():
            out = run(state, fn, args)
            prepared.evaluations += 1
            return out

        return call

    def retained_bytes(self, prepared) -> dict:
        state = prepared.state
        return {"device_inputs": int(sum(a.nbytes for a in state.device_inputs))}

    def hvp(self, prepared, inputs, v):
        state, problem = prepared.state, prepared.problem
        if problem.vector_output:
            raise ValueError(f"problem {problem.name!r} has a vector output; a Hessian-vector "
                             "product needs a scalar function.")
        v = tuple(v)
        if len(v) != len(problem.wrt):
            raise ValueError(f"expected {len(problem.wrt)} tangent vectors (one per differentiated "
                             f"argument), got {len(v)}.")
        with self._scope(state):
            args = state.calls.call_args(self._device_inputs(state, problem, inputs))
            tangents = tuple(state.jax.device_put(np.asarray(t, dtype=state.dtype), state.device)
                             for t in v)
            fn = self._hvp_callable(prepared, args + tangents)
        hv = self._call(state, fn, args + tangents)
        prepared.evaluations += 1
        return as_float64_arrays(hv)

    def _hvp_callable(self, prepared, args):
        return prepared.state.hvp_fn

    # -- derivative products ---------------------------------------------------------

    product_limits = {
        "jacobian": (4_000_000, "jacrev batches one VJP per output element, memory grows with them"),
        "hessian_diagonal": (4_096, "one HVP per input element, batched: memory grows with them")}

    def _timed_product(self, prepared, inputs, product):
        state = prepared.state
        with self._scope(state):
            args = state.calls.call_args(self._device_inputs(state, prepared.problem, inputs))
            fn = self._product_callable(prepared, product, args)
        self._check_args(state, args)
        return self._counted(prepared, fn, args), _to_float64_tuple

    def timed_jacobian(self, prepared, inputs):
        return self._timed_product(prepared, inputs, "jacobian")

    def timed_hessian_diagonal(self, prepared, inputs):
        return self._timed_product(prepared, inputs, "hessian_diagonal")

    def _product_callable(self, prepared, product, args):
        state = prepared.state
        if product not in state.products:
            state.products[product] = _make_products(state.jax, state.calls)[product]
        return state.products[product]

    def _check_args(self, state, args):
        pass


class JaxJitBackend(_JaxBackend):
    """JAX with ``jit``: trace, lower and compile in ``prepare``; evaluate calls the executables."""

    name = "jax-jit"
    jit = True
    timed_path = "XLA executables (jax.jit, compiled in prepare)"

    def _prepare_state(self, jax, device, problem, inputs, device_inputs, info) -> _State:
        has_constants = len(inputs) > len(problem.wrt)
        try:
            state = self._compile(jax, device, problem, inputs, device_inputs, info, static=False)
        except TypeError as exc:
            if not (has_constants and type(exc).__name__ in _CONCRETE_ERRORS):
                _raise_explained(exc)
            # The problem needs a concrete value of a non-differentiated argument
            # (e.g. a loop count): fix those arguments at their prepare values.
            try:
                state = self._compile(jax, device, problem, inputs, device_inputs, info, static=True)
            except TypeError as exc2:
                _raise_explained(exc2)
        info["constants"] = "fixed at prepare" if state.calls.static else "arguments"
        info["compile_seconds"] = sum(info[f"{k}_{phase}_seconds"] for k in ("gradient", "function")
                                      for phase in ("lower", "compile"))
        return state

    def _compile(self, jax, device, problem, inputs, device_inputs, info, static) -> _State:
        calls = _Calls(problem, static, device_inputs)
        value, gradient, vjp, hvp = _make_functions(jax, calls)
        args = calls.call_args(device_inputs)
        sharding = jax.sharding.SingleDeviceSharding(device)

        output_shape = None
        if problem.vector_output:
            out = jax.eval_shape(value, *args)
            output_shape = tuple(out.shape)
            cot_spec = jax.ShapeDtypeStruct(out.shape, out.dtype, sharding=sharding)
            grad_fn, grad_args = vjp, args + (cot_spec,)
        else:
            grad_fn, grad_args = gradient, args

        compiled = {}
        for key, fn, fn_args in (("gradient", grad_fn, grad_args), ("function", value, args)):
            t0 = time.perf_counter()
            lowered = jax.jit(fn).lower(*fn_args)
            t1 = time.perf_counter()
            compiled[key] = lowered.compile()
            t2 = time.perf_counter()
            info[f"{key}_lower_seconds"] = t1 - t0
            info[f"{key}_compile_seconds"] = t2 - t1
            info.update(_memory_info(compiled[key], key))
            info.update(_cost_info(compiled[key], key))
        arg_specs = tuple((tuple(a.shape), a.dtype) for a in args)
        return _State(jax, device, tuple(inputs), device_inputs, calls, compiled["function"],
                      compiled["gradient"], hvp, output_shape=output_shape, arg_specs=arg_specs)

    def _check_args(self, state, args):
        for i, (a, (shape, dtype)) in enumerate(zip(args, state.arg_specs)):
            if tuple(a.shape) != shape or a.dtype != dtype:
                raise ValueError(
                    f"call argument {i} has shape {tuple(a.shape)} and dtype {a.dtype}; the "
                    f"executable was compiled in prepare for shape {shape} and dtype {dtype}. "
                    "Call prepare again for new shapes.")

    def _call(self, state, fn, args):
        # a compiled executable needs neither the 64-bit scope nor the device scope: the
        # bare call, as a user of jax.jit times it
        try:
            out = fn(*args)
        except TypeError as exc:
            _raise_explained(exc)
        return block_until_ready(out)

    def _counted(self, prepared, fn, args):
        """The timed call: ``_call`` inlined (the executable's C++ dispatch, ``_dispatch``;
        every output waited for, their number read from the executable), counted.  A call
        layer here costs ~0.1 µs, 2% of a 6 µs gradient: a bare loop of ``jax.jit`` has none."""
        run = _dispatch(fn)

        def first(*call_args):          # the C++ call is made on the executable's first use
            nonlocal run
            out = fn(*call_args)
            run = _dispatch(fn)
            return out

        if run is fn:
            run = first
        several = not prepared.state.jax.tree_util.treedef_is_leaf(fn.out_tree)

        def call():
            try:
                out = run(*args)
            except TypeError as exc:
                _raise_explained(exc)
            for a in (out if several else (out,)):
                a.block_until_ready()
            prepared.evaluations += 1
            return out

        return call

    def retained_bytes(self, prepared) -> dict:
        parts = super().retained_bytes(prepared)
        parts["executables"] = sum(_executable_bytes(c) for c in (prepared.state.gradient,
                                                                   prepared.state.value))
        return parts

    def _hvp_callable(self, prepared, args):
        state = prepared.state
        if state.hvp is None:
            jax = state.jax
            with self._scope(state):
                t0 = time.perf_counter()
                state.hvp = jax.jit(state.hvp_fn).lower(*args).compile()
            prepared.info["hvp_compile_seconds"] = time.perf_counter() - t0
        return state.hvp

    def _product_callable(self, prepared, product, args):
        """Compiled on first use (``info["<product>_compile_seconds"]``)."""
        state = prepared.state
        if product not in state.products:
            jax = state.jax
            fn = _make_products(jax, state.calls)[product]
            with self._scope(state):
                t0 = time.perf_counter()
                state.products[product] = jax.jit(fn).lower(*args).compile()
            prepared.info[f"{product}_compile_seconds"] = time.perf_counter() - t0
        return state.products[product]


class JaxEagerBackend(_JaxBackend):
    """JAX without ``jit``: each call runs the Python function, dispatched op by op."""

    name = "jax-eager"
    jit = False
    timed_path = "JAX eager, op by op"
    product_limits = {
        "jacobian": (500_000, "eager jacrev dispatches the batched VJPs op by op: about 10 s a "
                              "call at 2.3 M entries (bundle adjustment, 8 cameras) on one core"),
        "hessian_diagonal": (256, "eager vmapped HVPs keep every intermediate per input: about "
                                  "1 s and 200 MB a call at 256 inputs (k-means, k = 32)")}

    def __init__(self, device: str = "cpu", matmul_precision: str = DEFAULT_MATMUL_PRECISION,
                 disable_jit: bool = False):
        """``disable_jit=True`` runs inside ``jax.disable_jit()``, so the jitted helpers
        inside ``jax.numpy`` also run primitive by primitive."""
        super().__init__(device, matmul_precision)
        self._disable_jit = disable_jit
        if disable_jit:
            self.timed_path = "JAX eager, op by op, jit disabled inside jax.numpy too"

    def _prepare_state(self, jax, device, problem, inputs, device_inputs, info) -> _State:
        calls = _Calls(problem, False, device_inputs)
        value, gradient, vjp, hvp = _make_functions(jax, calls)
        return _State(jax, device, tuple(inputs), device_inputs, calls, value,
                      vjp if problem.vector_output else gradient, hvp)

    def _call(self, state, fn, args):
        if not self._disable_jit:
            return super()._call(state, fn, args)
        with state.jax.disable_jit():
            return super()._call(state, fn, args)


class JaxJitCpuBackend(JaxJitBackend):
    """``jax-jit`` on the CPU only: the CPU JAX of a suite that puts the JAX methods on the GPU
    (``device = "gpu"`` moves ``jax-jit``, never this one)."""

    name = "jax-jit-cpu"


class JaxJitTf32Backend(JaxJitBackend):
    """``jax-jit`` with float32 matrix products at TF32 (``matmul_precision="tensorfloat32"``):
    what JAX does by default on an A100/H100 (about 1e-3 relative error in float32), as its
    own stated variant.  TF32 is a GPU's (tensor cores'): on the CPU the method would be
    ``jax-jit`` under another name, so it is unavailable there.  In float64 it computes as
    ``jax-jit`` does."""

    name = "jax-jit-tf32"

    def __init__(self, device: str = "cpu", matmul_precision: str = "tensorfloat32"):
        super().__init__(device, matmul_precision)

    def available(self) -> Support:
        if self.device != "gpu":
            return Support(False, "TF32 matrix products are a GPU's (NVIDIA Ampere and later); on "
                                  "the CPU this would be jax-jit under another name: run it in a "
                                  "suite with device = \"gpu\" (or --device gpu)")
        return super().available()
