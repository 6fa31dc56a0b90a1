"""Differentiation methods behind one interface, and a checked way to run them.

>>> from diffcompare import backends, problems
>>> p = problems.get("rosenbrock")
>>> inputs = p.inputs(4, seed=0)
>>> g_engine = backends.compute_gradient(backends.get("engine"), p, inputs)
>>> g_central = backends.compute_gradient(backends.get("fd-central"), p, inputs)
>>> bool(abs(g_engine[0] - g_central[0]).max() < 1e-4)
True
"""
from __future__ import annotations

import importlib

import numpy as np

from .base import SUPPORTED, Backend, BackendError, Prepared, Support, Unavailable, UnsupportedError

from .registry import METHODS, MethodInfo, info


def names() -> list[str]:
    """Every registered method, in the registry's order (:data:`registry.METHODS`)."""
    return list(METHODS)


def get(name: str, **options) -> Backend:
    """A backend instance by name (``options`` go to its constructor, e.g. ``step=1e-6``).
    Its module is imported now, so a missing optional library makes only it unavailable."""
    method = info(name)
    return getattr(importlib.import_module(method.module), method.class_name)(**options)


def namespace_of(name: str) -> str:
    """The namespace backend ``name`` runs a problem's ``fn(xp, ...)`` on (a key of
    ``diffcompare.problems.contract.RUNS_ON``), without making one."""
    return info(name).namespace


def devices_of(name: str) -> tuple:
    """The devices backend ``name`` can compute on ("cpu" first), without making one."""
    return info(name).devices


def availability() -> dict[str, Support]:
    """For each backend: can it run on this machine ("unavailable: <reason>" if not)."""
    return {name: get(name).available() for name in METHODS}


def capability_table(problem_list=None):
    """A DataFrame backend x problem of 'ok' or 'unsupported: <reason>' / 'unavailable: <reason>',
    generated from each backend's ``available`` and ``supports``."""
    import pandas as pd

    from .. import problems as _problems

    problem_list = problem_list if problem_list is not None else _problems.all_problems()
    rows = {}
    for name in METHODS:
        backend = get(name)
        avail = backend.available()
        row = {}
        for p in problem_list:
            if not avail:
                row[p.name] = f"unavailable: {avail.reason}"
            else:
                s = backend.supports(p)
                row[p.name] = "ok" if s else f"unsupported: {s.reason}"
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def compute_gradient(backend: Backend, problem, inputs, cotangent=None) -> tuple:
    """prepare + gradient (or vjp) with every failure turned into a ``BackendError``
    naming the problem and the backend, and the results checked (shape, finiteness).
    The function's value is checked first: at a point where it is NaN or infinite a
    gradient means nothing (some methods would still return a finite number)."""
    prepared = checked_prepare(backend, problem, inputs)
    checked_function(backend, prepared, inputs)
    return checked_vjp(backend, prepared, inputs, cotangent)


def checked_prepare(backend: Backend, problem, inputs) -> Prepared:
    avail = backend.available()
    if not avail:
        raise BackendError(problem.name, backend.name, f"unavailable: {avail.reason}")
    support = backend.supports_inputs(problem, inputs)
    if not support:
        raise UnsupportedError(problem.name, backend.name, support.reason)
    with _as_backend_error(problem, backend, "prepare"):
        return backend.prepare(problem, inputs)


def checked_vjp(backend: Backend, prepared: Prepared, inputs, cotangent=None) -> tuple:
    problem = prepared.problem
    if problem.vector_output and cotangent is None:
        raise BackendError(problem.name, backend.name,
                           "this problem has a vector output: pass its cotangent "
                           "(problem.cotangent(size, seed)) to differentiate it.")
    with _as_backend_error(problem, backend, "gradient"):
        grads = backend.vjp(prepared, inputs, cotangent)
    return check_gradients(problem, backend, inputs, grads)


def checked_product(backend: Backend, prepared: Prepared, inputs, product: str,
                    output_shape: tuple = ()) -> tuple:
    """Derivative ``product`` (``problems.PRODUCTS``), checked: one finite array per
    differentiated argument, shaped ``output_shape + arg.shape`` for the Jacobian and like
    the argument for the Hessian diagonal."""
    problem = prepared.problem
    with _as_backend_error(problem, backend, product):
        values = backend.product(prepared, inputs, product)
    lead = tuple(output_shape) if product == "jacobian" else ()
    return _check_arrays(problem, backend, inputs, values, f"{product}: ", "arrays", "the array",
                         lead, "")


def checked_function(backend: Backend, prepared: Prepared, inputs):
    problem = prepared.problem
    with _as_backend_error(problem, backend, "function"):
        value = np.asarray(backend.function(prepared, inputs))
    if not problem.vector_output and value.size != 1:
        raise BackendError(problem.name, backend.name,
                           f"the function returned shape {value.shape} where a scalar is needed; "
                           "reduce it (e.g. xp.sum) or tag the problem 'vector-output' with a cotangent.")
    if not np.all(np.isfinite(value)):
        raise BackendError(problem.name, backend.name,
                           f"the function value is not finite ({_first_bad(value)}), so it has no "
                           "gradient there; check the inputs (their range, a division by zero, an overflow).")
    return value


def check_gradients(problem, backend, inputs, grads) -> tuple:
    return _check_arrays(problem, backend, inputs, grads, "", "gradient arrays", "the gradient", (),
                         " (the argument's shape)")


def _check_arrays(problem, backend, inputs, values, prefix, plural, each, lead, why_shape) -> tuple:
    """One finite array per differentiated argument, shaped ``lead + arg.shape``; else a
    ``BackendError`` saying which (``prefix``/``plural``/``each`` word the message)."""
    if not isinstance(values, tuple) or len(values) != len(problem.wrt):
        got = len(values) if isinstance(values, tuple) else type(values).__name__
        raise BackendError(problem.name, backend.name,
                           f"{prefix}expected {len(problem.wrt)} {plural} (one per differentiated "
                           f"argument), got {got}.")
    for i, v in zip(problem.wrt, values):
        expected = tuple(lead) + np.shape(inputs[i])
        if np.shape(v) != expected:
            raise BackendError(problem.name, backend.name,
                               f"{prefix}{each} for argument {i} has shape {np.shape(v)}, "
                               f"expected {expected}{why_shape}.")
        if not np.all(np.isfinite(v)):
            raise BackendError(problem.name, backend.name,
                               f"{prefix}{each} for argument {i} is not finite ({_first_bad(v)}).")
    return values


def _first_bad(a) -> str:
    a = np.asarray(a)
    bad = np.argwhere(~np.isfinite(a))
    where = tuple(int(i) for i in bad[0]) if a.ndim else ()
    return f"{a[where] if a.ndim else a} at index {where}, {len(bad)} of {a.size} elements"


class _as_backend_error:
    """Context manager: any exception in a backend call becomes a BackendError."""

    def __init__(self, problem, backend, phase):
        self.problem, self.backend, self.phase = problem, backend, phase

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None or isinstance(exc, BackendError):
            return False
        if isinstance(exc, (KeyboardInterrupt, SystemExit, MemoryError)):
            return False
        raise BackendError(self.problem.name, self.backend.name,
                           f"{self.phase} failed: {type(exc).__name__}: {exc}") from exc


__all__ = ["Backend", "BackendError", "Prepared", "Support", "SUPPORTED", "Unavailable",
           "UnsupportedError", "MethodInfo", "METHODS", "info",
           "names", "get", "namespace_of", "devices_of", "availability", "capability_table", "compute_gradient",
           "checked_prepare", "checked_vjp", "checked_function", "checked_product",
           "check_gradients"]
