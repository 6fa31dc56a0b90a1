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
  gradient/function cost ratio; ``hvp`` where the method can.

Each prepared problem counts the function evaluations made through it
(``prepared.evaluations``): finite differences make n+1, 2n, ...; AD makes one
forward pass per gradient.
"""
from __future__ import annotations

import dataclasses
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
    """Base class; subclasses set ``name``/``family`` and implement ``prepare`` and ``vjp``."""

    name = "backend"
    family = "backend"         # engine | symbolic | finite-difference | jax | torch | manual
    exact = True               # exact up to rounding (AD, symbolic) vs approximate (FD)

    def available(self) -> Support:
        """Whether the backend can run on this machine at all."""
        return SUPPORTED

    def supports(self, problem) -> Support:
        return SUPPORTED

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

    def hvp(self, prepared: Prepared, inputs, v) -> tuple:
        raise NotImplementedError(f"backend {self.name!r} does not compute Hessian-vector products")

    @property
    def has_hvp(self) -> bool:
        return type(self).hvp is not Backend.hvp

    def __repr__(self):
        return f"<backend {self.name}>"


def as_float64_arrays(values) -> tuple:
    """Gradients as a tuple of float64 NumPy arrays (real part only for complex inputs)."""
    return tuple(np.array(np.real(v) if np.iscomplexobj(v) else v, dtype=np.float64)
                 for v in values)
