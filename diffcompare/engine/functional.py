"""Derivatives of plain functions of arrays: the form the comparison backends call.

``func`` takes Tensors (one per input array) and returns a Tensor; it is
usually a problem written against an array namespace (``x.__array_namespace__()``),
so the same code runs on NumPy, JAX and this engine.  Inputs are NumPy arrays
(or numbers); results are NumPy arrays, one per input (a single array when a
single input was given, as in ``torch.autograd.functional``).

>>> import numpy as np
>>> from diffcompare.engine import functional as F
>>> f = lambda x: (x ** 3).sum()
>>> F.grad(f, np.array([1.0, 2.0]))
array([ 3., 12.])
>>> F.hessian(f, np.array([1.0, 2.0]))
array([[ 6.,  0.],
       [ 0., 12.]])
>>> F.hvp(f, np.array([1.0, 2.0]), np.array([1.0, 1.0]))[1]
array([ 6., 12.])

An input the function does not use is an error, or zeros with ``allow_unused=True``.
"""
from __future__ import annotations

import numpy as np

from . import autograd
from .grad_mode import enable_grad
from .tensor import Tensor


def value_and_grad(func, inputs, allow_unused: bool = False):
    """``(func(*inputs), gradient)`` for a scalar-valued ``func``."""
    xs, single = _leaves(inputs)
    with enable_grad():
        out = _call(func, xs)
    if out.size != 1:
        raise ValueError(
            f"grad needs a function with a scalar output; this one returned shape {out.shape}. "
            "Use vjp (with a cotangent) or jacobian for vector outputs."
        )
    grads = _grads(out, xs, None, allow_unused, create_graph=False)
    return out.data, _arrays(grads, single)


def grad(func, inputs, allow_unused: bool = False):
    """The gradient of a scalar-valued ``func`` at ``inputs``."""
    return value_and_grad(func, inputs, allow_unused)[1]


def vjp(func, inputs, v=None, allow_unused: bool = False):
    """``(func(*inputs), vᵀJ)``: the vector-Jacobian product that reverse mode computes.

    ``v`` has the output's shape (``None`` for a scalar output, meaning 1).
    """
    xs, single = _leaves(inputs)
    with enable_grad():
        out = _call(func, xs)
    grads = _grads(out, xs, _cotangent(v, out), allow_unused, create_graph=False)
    return out.data, _arrays(grads, single)


def jvp(func, inputs, v, allow_unused: bool = False):
    """``(func(*inputs), J v)``: a forward-mode product, by differentiating a VJP.

    The VJP ``u -> uᵀJ`` is linear in ``u``; its own VJP with cotangent ``v``
    is ``J v``.  Costs two reverse passes.
    """
    xs, single = _leaves(inputs)
    vs = _as_tuple_of_arrays(v, len(xs), single)
    with enable_grad():
        out = _call(func, xs)
        u = Tensor(np.zeros_like(out.data), requires_grad=True)
        vjps = _grads(out, xs, u, allow_unused, create_graph=True)
        used = [(g, vi) for g, vi in zip(vjps, vs) if g._requires_grad]
        if not used:   # J does not depend on u: the function is constant in its inputs
            return out.data, np.zeros_like(out.data)
        (jv,) = autograd.grad([g for g, _ in used], [u], [vi for _, vi in used],
                              materialize_grads=True)
    return out.data, jv.data


def jacobian(func, inputs, allow_unused: bool = False):
    """The Jacobian ``d out / d input``, of shape ``out.shape + input.shape`` per input.

    One reverse pass per output element (reverse mode pays per output).
    """
    xs, single = _leaves(inputs)
    with enable_grad():
        out = _call(func, xs)
    rows = [[] for _ in xs]
    for i in range(out.size):
        seed = np.zeros(out.size, dtype=out.dtype)
        seed[i] = 1.0
        grads = _grads(out, xs, seed.reshape(out.shape), allow_unused,
                       create_graph=False, retain_graph=True)
        for row, g in zip(rows, grads):
            row.append(g.data)
    jac = [np.stack(row).reshape(out.shape + x.shape) for row, x in zip(rows, xs)]
    return jac[0] if single else tuple(jac)


def hessian(func, inputs, allow_unused: bool = False):
    """The Hessian of a scalar ``func``: ``H[i][j]`` of shape ``x_i.shape + x_j.shape``
    (a single array for a single input).  One reverse pass per input element,
    through the recorded gradient (``create_graph``)."""
    xs, single = _leaves(inputs)
    with enable_grad():
        out = _call(func, xs)
        grads = _grads(out, xs, None, allow_unused, create_graph=True)
        blocks = [[None] * len(xs) for _ in xs]
        for i, (g, xi) in enumerate(zip(grads, xs)):
            rows = [[] for _ in xs]
            for k in range(g.size):
                if g._requires_grad:
                    seed = np.zeros(g.size, dtype=g.dtype)
                    seed[k] = 1.0
                    second = autograd.grad(g, xs, seed.reshape(g.shape), retain_graph=True,
                                           materialize_grads=True)
                else:   # the gradient is constant: the Hessian row is zero
                    second = [np.zeros_like(x.data) for x in xs]
                for row, s in zip(rows, second):
                    row.append(s.data if isinstance(s, Tensor) else s)
            for j, (row, xj) in enumerate(zip(rows, xs)):
                blocks[i][j] = np.stack(row).reshape(xi.shape + xj.shape)
    return blocks[0][0] if single else tuple(tuple(b) for b in blocks)


def hvp(func, inputs, v, allow_unused: bool = False):
    """``(func(*inputs), H v)`` for a scalar ``func``: two reverse passes, no Hessian formed."""
    xs, single = _leaves(inputs)
    vs = _as_tuple_of_arrays(v, len(xs), single)
    with enable_grad():
        out = _call(func, xs)
        grads = _grads(out, xs, None, allow_unused, create_graph=True)
        used = [(g, vi) for g, vi in zip(grads, vs) if g._requires_grad]
        if not used:
            return out.data, _arrays([np.zeros_like(x.data) for x in xs], single)
        hv = autograd.grad([g for g, _ in used], xs, [vi for _, vi in used],
                           materialize_grads=True)
    return out.data, _arrays(hv, single)


# --- helpers --------------------------------------------------------------------------

def _leaves(inputs):
    """Fresh leaf tensors requiring grad, one per input array; and whether one was given."""
    single = not isinstance(inputs, (tuple, list))
    arrays = (inputs,) if single else tuple(inputs)
    leaves = []
    for i, a in enumerate(arrays):
        data = a.data if isinstance(a, Tensor) else np.asarray(a)
        if data.dtype.kind in "iub":
            data = data.astype(np.float64)
        if data.dtype.kind != "f":
            raise TypeError(
                f"input {i} has dtype {data.dtype}; the engine differentiates real "
                "floating-point arrays (float64 or float32)."
            )
        leaves.append(Tensor(data, requires_grad=True))
    return tuple(leaves), single


def _call(func, xs) -> Tensor:
    out = func(*xs)
    if not isinstance(out, Tensor):
        raise TypeError(
            f"func returned a {type(out).__name__}, not a Tensor: compute the result from "
            "its Tensor arguments (with the engine's ops or its array namespace)."
        )
    return out


def _cotangent(v, out):
    if v is None:
        if out.size != 1:
            raise ValueError(
                f"the output has shape {out.shape}: pass v, a cotangent of that shape "
                "(the vector in the vector-Jacobian product)."
            )
        return None
    return v


def _grads(out, xs, cotangent, allow_unused, create_graph, retain_graph=None):
    """Gradients of ``out`` w.r.t. ``xs``; an output that depends on no input gives zeros
    if ``allow_unused`` and an error otherwise."""
    if not out._requires_grad:
        if allow_unused:
            return tuple(Tensor(np.zeros_like(x.data)) for x in xs)
        raise RuntimeError(
            "The function's output does not depend on any of its inputs, so every gradient "
            "is zero. Pass allow_unused=True to get zeros."
        )
    grads = autograd.grad(out, xs, cotangent, retain_graph=retain_graph,
                          create_graph=create_graph, allow_unused=True,
                          materialize_grads=allow_unused)
    for i, (g, x) in enumerate(zip(grads, xs)):
        if g is None:   # only without allow_unused: materialize_grads fills in zeros
            raise RuntimeError(
                f"Input {i} (shape {x.shape}) does not appear in the function's graph, so "
                "its gradient is zero. Pass allow_unused=True to get zeros for it."
            )
    return grads


def _as_tuple_of_arrays(v, n, single):
    """Tangents in the structure of the inputs: one array, or one per input in a tuple."""
    vs = (v,) if single else tuple(v)
    if len(vs) != n:
        raise ValueError(f"expected {n} tangent vectors (one per input), got {len(vs)}.")
    return tuple(np.asarray(vi.data if isinstance(vi, Tensor) else vi) for vi in vs)


def _arrays(tensors, single):
    arrays = tuple(t.data if isinstance(t, Tensor) else np.asarray(t) for t in tensors)
    return arrays[0] if single else arrays
