"""The one small interface every differentiation method implements.

A backend adapts one method (the engine, SymPy, finite differences, JAX, ...)
to the same four calls, so a comparison can run any problem through any method:

- ``supports(problem)`` -> ``Support``: can it, and if not, why not;
- ``prepare(problem, inputs)`` -> ``Prepared``: everything done once (symbolic
  derivation, code generation, tracing, compiling), timed as its own phase;
- ``vjp(prepared, inputs, cotangent)``: the gradient, as float64 NumPy arrays,
  one per differentiated argument (``cotangent=None`` for a scalar output);
  ``gradient`` is the same with no cotangent;
- ``function(prepared, inputs)``: the plain function value, for the
  gradient/function cost ratio, as a NumPy array in the dtype the method computed
  it in (so a float64 value from float32 inputs shows an upcast); ``hvp`` where
  the method can.

For timing, ``timed_vjp`` and ``timed_function`` split a call into the library's
own work and the adapter's conversions: ``call()`` computes on inputs converted
beforehand and returns the library's arrays (computed to completion); ``finish``
converts them.  Both run on the same execution path (jitted for a jitted gradient, eager
for an eager one), named by ``timed_path``, so the gradient ÷ function ratio compares
like with like.  ``vjp(...) == finish(call())``; the measure layer times ``call``
alone, so a method's time is the library's time, not the adapter's.  What the
prepared state keeps (compiled code, device copies) is ``retained_bytes``.

Derivative products beyond the gradient (``diffcompare.problems.PRODUCTS``: a vector
output's full ``jacobian``, a scalar function's ``hessian_diagonal``) are methods named
``timed_<product>(prepared, inputs) -> (call, finish)``, timed like ``timed_vjp``;
``product(prepared, inputs, name)`` is ``finish(call())``, one array per differentiated
argument.  ``supports_product`` says whether a backend computes one, and why not: the
default refuses, naming the backend, for every product it has no method for.

Each prepared problem counts the function evaluations made through it
(``prepared.evaluations``): finite differences make n+1, 2n, ...; AD makes one
forward pass per gradient.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class Support:
    ok: bool
    reason: str = ""

    def __bool__(self):
        return self.ok


SUPPORTED = Support(True)


class BackendError(RuntimeError):
    """A backend failed on a problem; the message names both."""

    def __init__(self, problem: str, backend: str, message: str):
        self.problem, self.backend, self.detail = problem, backend, message
        super().__init__(f"problem {problem!r} on backend {backend!r}: {message}")


class UnsupportedError(BackendError):
    """The backend refuses this problem (at these inputs): ``supports``/``supports_inputs``
    said no, or ``prepare`` hit one of the backend's declared limits.  A runner records it
    as status "unsupported" with ``detail`` as the reason, not as an error."""

    def __init__(self, problem: str, backend: str, reason: str):
        super().__init__(problem, backend, f"unsupported: {reason}")
        self.reason = reason


class Unavailable(RuntimeError):
    """The backend cannot run here (library missing, no GPU, ...)."""


@dataclasses.dataclass
class Prepared:
    """What ``prepare`` made: the backend's own state plus facts worth reporting."""

    problem: Any
    state: Any = None
    info: dict = dataclasses.field(default_factory=dict)   # e.g. expression sizes, device
    evaluations: int = 0                                    # function evaluations so far


class Backend:
    """Base class; subclasses set ``name`` (their entry in :data:`registry.METHODS`, which
    holds every fact about the method, ``info``: ``family``, ``mode``, ``devices`` and
    ``xp_namespace`` are read from it) and implement ``prepare`` and ``vjp``."""

    name = "backend"
    numpy_arrays = True        # computes on NumPy arrays, which tracemalloc sees too
    #: what the timed calls run, the function's and the gradient's alike, so that gradient ÷
    #: function compares like with like (recorded on the function row: ``timed_path``)
    timed_path = "Python over NumPy"

    #: ``(module, hint)``: the library the backend needs beyond the core dependencies, and
    #: what to tell a user who lacks it (``available()`` imports it); a tuple of such pairs
    #: for several libraries (the first one missing is reported); None if nothing.
    requires: tuple | None = None

    @property
    def info(self):
        """This method's description (:class:`~diffcompare.backends.registry.MethodInfo`)."""
        from .registry import info

        return info(self.name)

    @property
    def family(self) -> str:
        """Its family, one of ``registry.FAMILIES``."""
        return self.info.family

    @property
    def mode(self) -> str | None:
        """How derivatives accumulate: "reverse" (a backward pass per output, whatever the
        number of inputs) or "forward" (a JVP per input); None for symbolic and FD methods."""
        return self.info.mode

    @property
    def devices(self) -> tuple:
        """Where it can compute: ``device=`` constructor values (the first is the default)."""
        return self.info.devices

    @property
    def xp_namespace(self) -> str:
        """The namespace ``problem.fn(xp, ...)`` runs on (a key of
        ``diffcompare.problems.contract.RUNS_ON``): which names outside the xp contract the
        method can still run."""
        return self.info.namespace

    def available(self) -> Support:
        """Whether the backend can run on this machine at all (its ``requires`` import)."""
        if self.requires is None:
            return SUPPORTED
        pairs = self.requires if isinstance(self.requires[0], tuple) else (self.requires,)
        for module, hint in pairs:
            try:
                importlib.import_module(module)
            except ImportError:
                return Support(False, hint)
        return SUPPORTED

    def supports(self, problem) -> Support:
        return SUPPORTED

    def library(self) -> str:
        """The library that computes this method's derivatives, with its installed version
        (``"torch 2.13.0"``; ``"jax not installed"``): what a convention found is a fact of."""
        if self.requires is not None:
            pairs = self.requires if isinstance(self.requires[0], tuple) else (self.requires,)
            dist = pairs[0][0]
        else:
            dist = {"symbolic": "sympy", "engine": "diffcompare"}.get(self.family, "numpy")
        try:
            return f"{dist} {importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            return f"{dist} not installed"

    def supports_inputs(self, problem, inputs) -> Support:
        """Like ``supports``, knowing the inputs (so the size): for limits such as the
        symbolic backends' number of differentiated scalars.  Defaults to ``supports``."""
        return self.supports(problem)

    def prepare(self, problem, inputs) -> Prepared:
        raise NotImplementedError

    def vjp(self, prepared: Prepared, inputs, cotangent=None) -> tuple:
        raise NotImplementedError

    def gradient(self, prepared: Prepared, inputs) -> tuple:
        return self.vjp(prepared, inputs, None)

    def function(self, prepared: Prepared, inputs):
        raise NotImplementedError

    def timed_vjp(self, prepared: Prepared, inputs, cotangent=None):
        """``(call, finish)``: ``call()`` computes one gradient with the library alone
        (inputs converted beforehand), ``finish(call())`` is what ``vjp`` returns.
        The default times ``vjp`` itself: right for methods that work on NumPy arrays."""
        return (lambda: self.vjp(prepared, inputs, cotangent)), _unchanged

    def timed_function(self, prepared: Prepared, inputs):
        """``(call, finish)`` for the plain function, as ``timed_vjp``."""
        return (lambda: self.function(prepared, inputs)), _unchanged

    def retained_bytes(self, prepared: Prepared) -> dict:
        """What the prepared state keeps between calls, in bytes, by part (e.g.
        ``{"generated_code": 5120}``); ``{}`` when it keeps nothing beyond the inputs."""
        return {}

    #: declared limits of the derivative products: ``{product: (max_scalars, why)}``, refused
    #: past ``max_scalars`` (the Jacobian's entries, the Hessian diagonal's inputs) because
    #: ``why``: the cost that grows with them, measured (see :func:`product_limit`)
    product_limits: dict = {}

    def supports_product(self, problem, product: str, inputs) -> Support:
        """Whether this backend computes derivative ``product`` of ``problem`` at ``inputs``
        (a ``timed_<product>`` method, and within its ``product_limits``)."""
        if getattr(self, f"timed_{product}", None) is None:
            return Support(False, f"{self.name} has no {product} method")
        if product in self.product_limits:
            max_scalars, why = self.product_limits[product]
            return product_limit(problem, product, inputs, max_scalars, why)
        return SUPPORTED

    def timed_product(self, prepared: Prepared, inputs, product: str):
        """``(call, finish)`` of derivative ``product`` (``timed_<product>``), as ``timed_vjp``."""
        method = getattr(self, f"timed_{product}", None)
        if method is None:
            raise UnsupportedError(prepared.problem.name, self.name,
                                   self.supports_product(prepared.problem, product, inputs).reason)
        return method(prepared, inputs)

    def product(self, prepared: Prepared, inputs, product: str) -> tuple:
        """Derivative ``product`` as float64 NumPy arrays, one per differentiated argument."""
        call, finish = self.timed_product(prepared, inputs, product)
        return finish(call())

    def hvp(self, prepared: Prepared, inputs, v) -> tuple:
        raise NotImplementedError(f"backend {self.name!r} does not compute Hessian-vector products")

    @property
    def has_hvp(self) -> bool:
        return type(self).hvp is not Backend.hvp

    def __repr__(self):
        return f"<backend {self.name}>"


def product_limit(problem, product, inputs, max_scalars: int, why: str) -> Support:
    """A declared limit on a derivative product: refused when its scalars -- the Jacobian's
    entries (outputs × inputs), the Hessian diagonal's inputs -- exceed ``max_scalars``,
    because ``why`` (the cost that grows with them)."""
    n_in = int(sum(np.size(inputs[i]) for i in problem.wrt))
    n = n_in * _n_outputs(problem, inputs) if product == "jacobian" else n_in
    if n > max_scalars:
        what = "entries (outputs × inputs)" if product == "jacobian" else "differentiated scalars"
        sparse = ("; a sparse Jacobian stores only the nonzeros: the operator jacobian_sparse "
                  "(--operators jacobian_sparse, operators.jacobian(..., sparse=True))"
                  if product == "jacobian" else "")
        return Support(False, f"{product}: {n:,} {what} > {max_scalars:,}: {why}{sparse}")
    return SUPPORTED


def _n_outputs(problem, inputs) -> int:
    """The size of the output: one evaluation of the function in NumPy."""
    return int(np.size(problem.fn(np, *inputs)))


def compute_dtype(problem, inputs):
    """The dtype a library backend (JAX, torch) computes in: float32 when every differentiated
    input is float32, else float64 (integers and float64 alike)."""
    wrt = [np.asarray(inputs[i]).dtype for i in problem.wrt]
    return np.dtype(np.float32) if wrt and all(d == np.float32 for d in wrt) else np.dtype(np.float64)


def _unchanged(result):
    return result


def as_float64_arrays(values) -> tuple:
    """Gradients as a tuple of float64 NumPy arrays (real part only for complex inputs)."""
    return tuple(np.array(np.real(v) if np.iscomplexobj(v) else v, dtype=np.float64)
                 for v in values)
