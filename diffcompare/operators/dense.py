"""Dense operators, natively per method: the one table ``TABLE[operator][method]``.

Each cell is ``Native(how, build)`` -- ``build(ctx)`` is the prepare phase and returns
``evaluate(inputs, vector) -> flat float64 array`` -- or ``Refused(reason)``.  A method never
falls back on another method's machinery: what it cannot compute itself it refuses, saying
why.  The builders reuse the backends (``Backend.prepare``/``vjp``/``hvp``/``product``) and
the libraries' own operators (``jax.hessian``, ``torch.func.jvp``, ``autograd.jacobian``,
``numdifftools.Hessian``, ...); shapes are those of :mod:`diffcompare.operators.layout`.

>>> TABLE["hessian"]["jax-jit"].how
'jax.hessian (forward over reverse) under jit'
>>> TABLE["hvp"]["manual"].reason
'hand-written gradients only: no hvp'
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable

import numpy as np

from .. import backends as _backends
from ..backends.base import Backend, UnsupportedError, compute_dtype
from .layout import Layout

OPERATORS = ("gradient", "pullback", "pushforward", "jacobian", "hessian", "hvp")


@dataclasses.dataclass(frozen=True)
class Native:
    """The method computes the operator itself: ``how`` says how, ``build`` prepares it.
    ``input_limit``: whether the backend's limit on differentiated inputs applies (it is
    sized for its own gradient, n forward products; one product needs one)."""

    how: str
    build: Callable
    input_limit: bool = True


@dataclasses.dataclass(frozen=True)
class Refused:
    """The method has no native way to the operator, and why."""

    reason: str


@dataclasses.dataclass
class Context:
    """What a builder gets: the problem (its ``wrt`` and output tag already fitted to the
    operator), a fresh backend instance, the prepare inputs and their layout."""

    operator: str
    method: str
    backend: Backend
    problem: Any
    inputs: tuple
    layout: Layout

    def unsupported(self, reason: str):
        from . import OperatorUnsupported

        return OperatorUnsupported(self.operator, self.method, reason, self.problem.name)

    def prepared(self):
        """``backend.prepare`` with a backend's refusal as ``OperatorUnsupported``."""
        try:
            return self.backend.prepare(self.problem, self.inputs)
        except UnsupportedError as exc:
            raise self.unsupported(exc.reason) from exc


# --- builders over the backends' own calls ---------------------------------------------

def _vjp(ctx):
    """``Backend.vjp``: the gradient (no cotangent) or the pullback of a cotangent."""
    prepared, lay, backend = ctx.prepared(), ctx.layout, ctx.backend

    def evaluate(inputs, u):
        cot = None if u is None else u.reshape(lay.out_shape)
        return lay.concat(_refusing(ctx, lambda: backend.vjp(prepared, inputs, cot)))

    return evaluate


def _jacobian_product(ctx):
    """``Backend.product(..., "jacobian")``: the backend's own Jacobian."""
    support = ctx.backend.supports_product(ctx.problem, "jacobian", ctx.inputs)
    if not support:
        raise ctx.unsupported(support.reason)
    prepared, lay = ctx.prepared(), ctx.layout
    return lambda inputs, _: lay.jacobian_blocks(ctx.backend.product(prepared, inputs, "jacobian"))


def _hvp(ctx):
    """``Backend.hvp``."""
    prepared, lay, backend = ctx.prepared(), ctx.layout, ctx.backend
    return lambda inputs, v: lay.concat(_refusing(ctx, lambda: backend.hvp(prepared, inputs,
                                                                          lay.split(v))))


def _columns(build_product):
    """A matrix from one product per unit vector: the Hessian's columns from HVPs, a
    Jacobian's columns from JVPs (``n`` products) or its rows from VJPs (``rows=True``, ``m``)."""
    def build(ctx, rows=False):
        product = build_product(ctx)
        k = ctx.layout.m if rows else ctx.layout.n

        def evaluate(inputs, _):
            eye = np.eye(k)
            vectors = [product(inputs, eye[j]) for j in range(k)]
            if not vectors:
                return np.zeros((ctx.layout.m, 0) if not rows else (0, ctx.layout.n))
            return np.stack(vectors, axis=0 if rows else 1)

        return evaluate

    return build


_hessian_by_hvp = _columns(_hvp)


def _jacobian_by_pullbacks(ctx):
    return _columns(_vjp)(ctx, rows=True)


def _refusing(ctx, call):
    """``call()`` with a backend's ``UnsupportedError`` as ``OperatorUnsupported``."""
    try:
        return call()
    except UnsupportedError as exc:
        raise ctx.unsupported(exc.reason) from exc


# --- flat functions for the libraries' own operators ------------------------------------

def flat_function(problem, lay: Layout, xp, others, scalar: bool):
    """``f(x)`` of the flat differentiated vector ``x`` on namespace ``xp`` (the other
    arguments fixed to ``others``): scalar ``()`` or flat ``(m,)`` output."""
    def f(x, others=others):
        args, start = list(others), 0
        for i, shape, size in zip(problem.wrt, lay.shapes, lay.sizes):
            args[i] = x[start:start + size].reshape(shape)
            start += size
        out = problem.fn(xp, *args)
        return out.reshape(()) if scalar else out.reshape((-1,))

    return f


# --- engine ---------------------------------------------------------------------------

def _engine_hessian(ctx):
    """``functional.hessian``: one reverse pass through the gradient's graph per input."""
    from ..engine import functional

    prepared, lay, backend = ctx.prepared(), ctx.layout, ctx.backend

    def evaluate(inputs, _):
        wrt = tuple(np.asarray(inputs[i], dtype=np.float64) for i in ctx.problem.wrt)
        blocks = functional.hessian(backend.wrt_function(prepared, inputs), wrt, allow_unused=True)
        return np.block([[np.asarray(b, dtype=np.float64).reshape(si, sj)
                          for b, sj in zip(row, lay.sizes)]
                         for row, si in zip(blocks, lay.sizes)])

    return evaluate


def _engine_jvp(ctx):
    """``functional.jvp`` (the engine's forward product: the VJP of a VJP)."""
    from ..engine import functional

    prepared, lay, backend = ctx.prepared(), ctx.layout, ctx.backend

    def evaluate(inputs, v):
        wrt = tuple(np.asarray(inputs[i], dtype=np.float64) for i in ctx.problem.wrt)
        _, jv = functional.jvp(backend.wrt_function(prepared, inputs), wrt, lay.split(v), allow_unused=True)
        return np.asarray(jv, dtype=np.float64).reshape(-1)

    return evaluate


# --- JAX ------------------------------------------------------------------------------

def _jax(transform):
    """A JAX operator on the flat function, with the backend's device, 64-bit mode and
    matmul precision (``jax_runtime.placement``), compiled in prepare unless the backend is
    eager.  ``transform(jax, f, scalar)`` returns ``g(x, others, v)``."""
    def build(ctx):
        from ..backends.jax_runtime import block_until_ready, import_jax, pick_device, placement

        support = ctx.backend.available()
        if not support:
            from ..backends.base import Unavailable
            raise Unavailable(support.reason)
        jax, b, lay, problem = import_jax(), ctx.backend, ctx.layout, ctx.problem
        device = pick_device(jax, b.device)
        dtype = compute_dtype(problem, ctx.inputs)
        scalar = ctx.operator in ("hessian", "hvp")

        def scope():
            return placement(jax, dtype == np.float64, device, b.matmul_precision)

        def place(inputs, v):
            x = np.concatenate([np.asarray(inputs[i], dtype=dtype).reshape(-1) for i in problem.wrt])
            others = tuple(jax.device_put(np.asarray(a), device) for a in inputs)
            vec = jax.device_put(np.zeros(lay.n, dtype) if v is None else np.asarray(v, dtype),
                                 device)
            return jax.device_put(x, device), others, vec

        def g(x, others, v):
            return transform(jax, flat_function(problem, lay, jax.numpy, others, scalar), x, v)

        with scope():
            if getattr(b, "jit", True):
                fn = jax.jit(g).lower(*place(ctx.inputs, None)).compile()
            else:
                fn = g
        eager_scope = jax.disable_jit if getattr(b, "_disable_jit", False) else _nothing

        def evaluate(inputs, v):
            with scope(), eager_scope():
                out = block_until_ready(fn(*place(inputs, v)))
            return np.asarray(out, dtype=np.float64)

        return evaluate

    return build


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_jax_hessian = _jax(lambda jax, f, x, v: jax.hessian(f)(x))
_jax_hessian_fwd = _jax(lambda jax, f, x, v: jax.jacfwd(jax.jacfwd(f))(x))
_jax_hvp_fwd = _jax(lambda jax, f, x, v: jax.jvp(jax.jacfwd(f), (x,), (v,))[1])
_jax_jvp = _jax(lambda jax, f, x, v: jax.jvp(f, (x,), (v,))[1])


# --- torch ----------------------------------------------------------------------------

def _torch(transform):
    """A ``torch.func`` operator on the flat function, on the tensors the torch backend
    makes (its dtype rule).  ``transform(torch, f, x, v)``."""
    def build(ctx):
        prepared, lay, problem, b = ctx.prepared(), ctx.layout, ctx.problem, ctx.backend
        state = prepared.state
        torch, scalar = state.torch, ctx.operator in ("hessian", "hvp")

        def evaluate(inputs, v):
            args, _ = b.tensor_args(state, problem, inputs, requires_grad=False)
            x = torch.cat([args[i].detach().reshape(-1) for i in problem.wrt])
            vec = None if v is None else torch.as_tensor(np.asarray(v, dtype=state.dtype))
            f = flat_function(problem, lay, state.xp, args, scalar)
            out = transform(torch, f, x, vec)
            return np.asarray(out.detach().numpy(), dtype=np.float64)

        return evaluate

    return build


_torch_hessian = _torch(lambda torch, f, x, v: torch.func.hessian(f)(x))
_torch_jvp = _torch(lambda torch, f, x, v: torch.func.jvp(f, (x,), (v,))[1])


# --- HIPS autograd --------------------------------------------------------------------

def _autograd(transform):
    """An ``autograd`` operator on the flat function over ``autograd.numpy``."""
    def build(ctx):
        import autograd
        import autograd.numpy as anp

        ctx.prepared()
        lay, problem, scalar = ctx.layout, ctx.problem, ctx.operator in ("hessian", "hvp")

        def evaluate(inputs, v):
            x = lay.concat(inputs[i] for i in problem.wrt)
            f = flat_function(problem, lay, anp, inputs, scalar)
            return np.asarray(transform(autograd, f, x, v), dtype=np.float64)

        return evaluate

    return build


_autograd_jacobian = _autograd(lambda ag, f, x, v: ag.jacobian(f)(x))
_autograd_hessian = _autograd(lambda ag, f, x, v: ag.hessian(f)(x))
_autograd_hvp = _autograd(lambda ag, f, x, v: ag.hessian_vector_product(f)(x, v))
_autograd_jvp = _autograd(lambda ag, f, x, v: ag.make_jvp(f)(x)(v)[1])


# --- symbolic -------------------------------------------------------------------------

def _symbolic_jacobian_entries(ctx):
    """The symbolic backends' Jacobian: the nonzero entries ``∂y_i/∂x_j`` derived and
    lambdified in ``prepare`` (a vector output), scattered into the dense matrix."""
    prepared, lay, backend = ctx.prepared(), ctx.layout, ctx.backend
    state = prepared.state

    def evaluate(inputs, _):
        values = np.asarray(state.g_fn(*backend.call_values(prepared, inputs)), dtype=np.float64)
        jac = np.zeros((lay.m, lay.n))
        jac[state.jac_rows, state.jac_cols] = values.reshape(-1)
        prepared.evaluations += 1
        return jac

    return evaluate


def _symbolic_jvp(ctx):
    jacobian = _symbolic_jacobian_entries(ctx)
    return lambda inputs, v: jacobian(inputs, None) @ v


# --- finite differences ---------------------------------------------------------------

def _directional(kind):
    """A JVP by one difference along the tangent ``v``, on NumPy: ``forward``
    ``(f(x + t v) - f(x)) / t``, ``central`` ``(f(x + t v) - f(x - t v)) / 2t`` with
    ``t = h0 max(1, max|x|) / max|v|`` (``h0`` the method's step), or the complex step
    ``Im f(x + i h v) / h``: no subtraction, exact to rounding for an analytic ``f``."""
    def build(ctx):
        prepared, lay, problem, b = ctx.prepared(), ctx.layout, ctx.problem, ctx.backend
        if kind == "complex":
            support = b.supports(problem)
            if not support:
                raise ctx.unsupported(support.reason)

        def at(inputs, x):
            args = list(inputs)
            for i, part in zip(problem.wrt, lay.split(x)):
                args[i] = part
            prepared.evaluations += 1
            return np.asarray(problem.fn(np, *args)).reshape(-1)

        def evaluate(inputs, v):
            x = lay.concat(inputs[i] for i in problem.wrt)
            vmax = float(np.max(np.abs(v), initial=0.0))
            if vmax == 0:
                return np.zeros(lay.m)
            if kind == "complex":
                h = b.step / vmax
                return np.asarray(at(inputs, x + 1j * h * v).imag, dtype=np.float64) / h
            t = b.step * max(1.0, float(np.max(np.abs(x), initial=0.0))) / vmax
            if kind == "forward":
                return (at(inputs, x + t * v) - at(inputs, x)) / t
            return (at(inputs, x + t * v) - at(inputs, x - t * v)) / (2 * t)

        return evaluate

    return build


_jacobian_by_pushforward = _columns(_directional("complex"))


# --- numdifftools ---------------------------------------------------------------------

def _numdifftools(kind):
    """``numdifftools.Jacobian`` / ``numdifftools.Hessian`` of the flat function on NumPy."""
    def build(ctx):
        import numdifftools as nd

        ctx.prepared()
        lay, problem = ctx.layout, ctx.problem
        scalar = kind == "Hessian"
        shape = (lay.n, lay.n) if scalar else (lay.m, lay.n)

        def evaluate(inputs, _):
            x = lay.concat(inputs[i] for i in problem.wrt)
            f = flat_function(problem, lay, np, [np.asarray(a) for a in inputs], scalar)
            return np.asarray(getattr(nd, kind)(f)(x), dtype=np.float64).reshape(shape)

        return evaluate

    return build


# --- the table ------------------------------------------------------------------------

#: the JAX methods that run the library's own operators under ``jax.jit`` (reverse mode)
JAX_JIT = ("jax-jit", "jax-jit-cpu", "jax-jit-tf32")
#: the symbolic methods that differentiate each entry (``diff`` per input): their Jacobian
#: and Hessian are the nonzero entries, and so their sparsity pattern
SYMBOLIC_DIFF = ("sympy", "sympy-cse", "symengine")
_SYMBOLIC = SYMBOLIC_DIFF + ("sympy-reverse",)

def _table() -> dict:
    names = _backends.names()
    t = {op: {} for op in OPERATORS}
    for m in names:          # ``Backend.vjp``, as each method's description says
        how = _backends.info(m).gradient
        t["gradient"][m] = Native(how, _vjp)
        t["pullback"][m] = Native(how, _vjp)

    # pushforward (JVP)
    push = t["pushforward"]
    push["engine"] = Refused("the engine's forward product is the method engine-jvp")
    push["engine-jvp"] = Native("functional.jvp (the transposed VJP: two reverse passes)",
                                _engine_jvp, input_limit=False)
    push["engine-compiled"] = Refused("the compiled program is reverse mode only (a VJP)")
    for m in JAX_JIT + ("jax-jacfwd",):
        push[m] = Native("jax.jvp under jit", _jax_jvp, input_limit=False)
    push["jax-eager"] = Native("jax.jvp, eager", _jax_jvp)
    push["torch"] = Native("torch.func.jvp (forward mode)", _torch_jvp)
    push["autograd"] = Native("autograd.make_jvp (forward mode)", _autograd_jvp)
    for m in SYMBOLIC_DIFF:
        push[m] = Native("symbolic Jacobian (lambdified entries) times v", _symbolic_jvp)
    push["sympy-reverse"] = Refused("reverse accumulation gives vector-Jacobian products only; "
                                    "sympy differentiates per input")
    push["fd-forward"] = Native("forward difference of f along v, 2 evaluations",
                                _directional("forward"))
    push["fd-central"] = Native("central difference of f along v, 2 evaluations",
                                _directional("central"))
    push["fd-complex-step"] = Native("complex step along v: Im f(x + ih v) / h, 1 evaluation",
                                     _directional("complex"))
    push["numdifftools"] = Refused("numdifftools differentiates along coordinates (Jacobian, "
                                   "Hessian), not along a direction of the caller's")

    # jacobian
    jac = t["jacobian"]
    jac["engine"] = Native("m reverse passes (functional.jacobian)", _jacobian_product)
    jac["engine-compiled"] = Native("m passes of the compiled reverse program", _jacobian_by_pullbacks)
    jac["engine-jvp"] = Native("n forward products (functional.jvp per unit tangent)",
                               _jacobian_product)
    for m in JAX_JIT:
        jac[m] = Native("jax.jacrev under jit", _jacobian_product)
    jac["jax-eager"] = Native("jax.jacrev, eager", _jacobian_product)
    jac["jax-jacfwd"] = Native("jax.jacfwd under jit", _jacobian_product)
    jac["torch"] = Native("torch.func.jacrev", _jacobian_product)
    jac["autograd"] = Native("autograd.jacobian (m reverse passes)", _autograd_jacobian)
    for m in SYMBOLIC_DIFF:
        jac[m] = Native("symbolic closed form (nonzero entries, lambdified)",
                        _symbolic_jacobian_entries)
    jac["sympy-reverse"] = Native("the symbolic reverse program once per output",
                                  _jacobian_by_pullbacks)
    jac["fd-forward"] = Native("forward differences of f, n + 1 evaluations", _jacobian_product)
    jac["fd-central"] = Native("central differences of f, 2n evaluations", _jacobian_product)
    jac["fd-complex-step"] = Native("complex step per input, n evaluations",
                                    _jacobian_by_pushforward)
    jac["numdifftools"] = Native("numdifftools.Jacobian (adaptive differences)",
                                 _numdifftools("Jacobian"))

    # hessian and hvp
    hes, hvp = t["hessian"], t["hvp"]
    hes["engine"] = Native("n reverse passes through the gradient's graph (functional.hessian)",
                           _engine_hessian)
    hvp["engine"] = Native("reverse over reverse (functional.hvp)", _hvp)
    for m in ("engine-compiled",):
        hes[m] = hvp[m] = Refused("the compiled program computes first derivatives only")
    for m in ("engine-jvp",):
        hes[m] = hvp[m] = Refused("forward mode here is first order; the engine's second "
                                  "derivatives are the method engine")
    for m in JAX_JIT:
        hes[m] = Native("jax.hessian (forward over reverse) under jit", _jax_hessian)
        hvp[m] = Native("jax.jvp of jax.grad (forward over reverse) under jit", _hvp)
    hes["jax-eager"] = Native("jax.hessian (forward over reverse), eager", _jax_hessian)
    hvp["jax-eager"] = Native("jax.jvp of jax.grad (forward over reverse), eager", _hvp)
    hes["jax-jacfwd"] = Native("jax.jacfwd of jax.jacfwd (forward over forward) under jit",
                               _jax_hessian_fwd)
    hvp["jax-jacfwd"] = Native("jax.jvp of jax.jacfwd (forward over forward) under jit",
                               _jax_hvp_fwd)
    hes["torch"] = Native("torch.func.hessian (forward over reverse)", _torch_hessian)
    hvp["torch"] = Native("double backward (torch.autograd.grad, create_graph)", _hvp)
    hes["autograd"] = Native("autograd.hessian", _autograd_hessian)
    hvp["autograd"] = Native("autograd.hessian_vector_product (reverse over reverse)",
                             _autograd_hvp)
    for m in _SYMBOLIC:
        hes[m] = Native("symbolic Hessian-vector product, derived once, per unit vector",
                        _hessian_by_hvp)
        hvp[m] = Native("symbolic Hessian-vector product, derived once, lambdified", _hvp)
    hes["fd-central"] = Native("central differences of the central-difference gradient, "
                               "per unit vector", _hessian_by_hvp)
    hvp["fd-central"] = Native("central differences of the central-difference gradient "
                               "along v", _hvp)
    for m in ("fd-forward", "fd-complex-step"):
        hes[m] = hvp[m] = Refused("second derivatives by differences are fd-central's "
                                  "(differences of its gradient)")
    hes["numdifftools"] = Native("numdifftools.Hessian (adaptive differences)",
                                 _numdifftools("Hessian"))
    hvp["numdifftools"] = Refused("numdifftools has no Hessian-vector product (only the whole "
                                  "Hessian, numdifftools' hessian)")

    for m in names:          # one reason covers all it lacks
        why = _backends.info(m).gradient_only
        for op in OPERATORS if why else ():
            t[op].setdefault(m, Refused(f"{why}: no {op}"))
    for op in OPERATORS:
        missing = [m for m in names if m not in t[op]]
        assert not missing, f"operator table: {op} says nothing of {missing}"
    return t


#: operator -> {method -> Native(how, build) | Refused(reason)}: every method, every operator
TABLE = _table()
