"""Check the engine's derivatives against central finite differences (in float64).

>>> import numpy as np
>>> from diffcompare.engine.gradcheck import gradcheck, gradgradcheck
>>> gradcheck(lambda x, w: (x @ w).tanh().sum(), [np.ones((2, 3)), np.full((3, 2), 0.1)])
True
>>> gradgradcheck(lambda x: (x.sin() * x).sum(), [np.array([0.5, 1.5])])
True

On a mismatch, ``GradcheckError`` reports the worst element: which output
and input, the element index, both values and the tolerance.
"""
from __future__ import annotations

import warnings

import numpy as np

from . import autograd, functional, ops
from .grad_mode import enable_grad
from .tensor import Tensor


class GradcheckError(AssertionError):
    """The analytical and numerical derivatives disagree."""


def numerical_jacobian(func, inputs, eps: float = 1e-6):
    """Central differences ``(f(x + eps e_k) - f(x - eps e_k)) / 2 eps``, one column per element.

    Returns one array per input, shaped ``out.shape + input.shape``.
    """
    xs = _float64_arrays(inputs)

    def f(*arrays):
        return np.array(func(*(Tensor(a) for a in arrays)).data, dtype=np.float64)

    out_shape = f(*xs).shape
    jacs = []
    for i, x in enumerate(xs):
        jac = np.empty((x.size,) + out_shape)
        flat = x.reshape(-1)
        for k in range(x.size):
            orig = flat[k]
            flat[k] = orig + eps
            plus = f(*xs)
            flat[k] = orig - eps
            minus = f(*xs)
            flat[k] = orig
            jac[k] = (plus - minus) / (2 * eps)
        jacs.append(np.moveaxis(jac, 0, -1).reshape(out_shape + x.shape))
    return jacs


def gradcheck(func, inputs, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True) -> bool:
    """Compare the engine's Jacobian of ``func`` with central differences, elementwise:
    ``|analytical - numerical| <= atol + rtol * |numerical|``.

    Both are computed in float64; a lower-precision input is converted, with a
    warning (as ``torch.autograd.gradcheck`` warns), since the check then says
    nothing about the function in that precision.
    """
    _warn_if_not_double(inputs)
    xs = _float64_arrays(inputs)
    analytical = functional.jacobian(func, tuple(xs), allow_unused=True)
    numerical = numerical_jacobian(func, xs, eps)
    for i, (a, n) in enumerate(zip(analytical, numerical)):
        message = _mismatch(a, n, atol, rtol, f"input {i} (shape {xs[i].shape})")
        if message:
            if raise_exception:
                raise GradcheckError(message)
            return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, raise_exception: bool = True, seed: int = 0) -> bool:
    """Check second derivatives: gradcheck the engine's recorded VJP ``v -> vᵀJ`` of ``func``.

    ``grad_outputs`` (the fixed ``v``) defaults to seeded random values.
    """
    _warn_if_not_double(inputs)
    xs = _float64_arrays(inputs)
    if grad_outputs is None:
        with enable_grad():
            out_shape = func(*(Tensor(x) for x in xs)).shape
        grad_outputs = np.random.default_rng(seed).standard_normal(out_shape)

    def first_derivative(*ts):
        with enable_grad():
            leaves = [t if t._requires_grad else Tensor(t.data, requires_grad=True) for t in ts]
            out = func(*leaves)
            grads = autograd.grad(out, leaves, grad_outputs, create_graph=True,
                                  materialize_grads=True)
        return ops.concatenate([g.reshape(-1) for g in grads])

    return gradcheck(first_derivative, xs, eps, atol, rtol, raise_exception)


def _float64_arrays(inputs) -> list:
    """The inputs' values as float64 arrays: arrays, numbers, or Tensors (which may require
    grad, as torch.autograd.gradcheck asks of its inputs)."""
    return [np.array(x.data if isinstance(x, Tensor) else x, dtype=np.float64) for x in inputs]


def _warn_if_not_double(inputs):
    for i, x in enumerate(inputs):
        dtype = x.dtype if isinstance(x, (Tensor, np.ndarray)) else None
        if dtype is not None and dtype.kind == "f" and dtype != np.float64:
            warnings.warn(
                f"Input #{i} is not a double precision floating point tensor ({dtype}): "
                "gradcheck converts it to float64 and checks the derivative there, not in "
                f"{dtype}. Pass float64 inputs to say so explicitly.",
                UserWarning, stacklevel=3,
            )


def _mismatch(analytical, numerical, atol, rtol, what) -> str:
    """A report of the worst element if any element is out of tolerance, else ''."""
    tol = atol + rtol * np.abs(numerical)
    diff = np.abs(analytical - numerical)
    bad = ~(diff <= tol)   # NaN counts as bad
    if not bad.any():
        return ""
    excess = np.where(np.isnan(diff), np.inf, diff - tol)
    worst = np.unravel_index(np.argmax(excess), diff.shape)
    return (
        f"Jacobian mismatch with respect to {what}: {int(bad.sum())} of {bad.size} elements "
        f"out of tolerance. Worst at index {tuple(int(i) for i in worst)} "
        "(output index then input index): "
        f"analytical {analytical[worst]!r}, numerical {numerical[worst]!r}, "
        f"|difference| {diff[worst]:.3g} > tolerance {tol[worst]:.3g} "
        f"(atol={atol}, rtol={rtol})."
    )
