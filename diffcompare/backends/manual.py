"""Hand-written NumPy gradients: the floor any NumPy autograd engine can reach.

The backward passes are written out by hand in the style of seed 001 --
``inp.g = out.g @ w.T``, ``w.g = inp.T @ out.g``, ``b.g = out.g.sum(0)``, a ReLU mask,
the MSE gradient ``2 (out - y) / n`` -- for a few problems of the catalog, fusing the
forward and backward passes and reusing buffers in place.  A gradient costs one forward
pass (counted in ``prepared.evaluations``) and no graph.

Argument layouts.  The gradients below are written for these exact signatures; a problem
of the same name must use them (``prepare`` checks, see below):

==========================  ========================  ==============================================  =============
problem name                ``fn(xp, ...)`` args       value                                           ``wrt``
==========================  ========================  ==============================================  =============
``linear_mse``              ``(w, b, x, y)``           ``mean((x @ w + b - y) ** 2)``                  ``(0, 1)``
``mlp_tanh``                ``(w1, b1, w2, b2, x, y)`` ``h = tanh(x @ w1 + b1)``;                      ``(0, 1, 2, 3)``
                                                       ``mean((h @ w2 + b2 - y) ** 2)``
``mlp_relu``                ``(w1, b1, w2, b2, x, y)`` as ``mlp_tanh`` with ``h = relu(x @ w1 + b1)``  ``(0, 1, 2, 3)``
``linear_mean``             ``(x, w)``                 ``mean(x * w)``                                 ``(1,)``
``minibatch_inverse_mean``  ``(x,)``                   ``mean(1 / x)``                                 ``(0,)``
``rosenbrock``              ``(x,)``                   ``sum(100 (x[1:] - x[:-1]**2)**2                ``(0,)``
                                                       + (1 - x[:-1])**2)``
``linear_least_squares``    ``(x, A, b)``              ``sum((A @ x - b) ** 2)``                       ``(0,)``
``gmm`` (and every name in  ``(alphas, means, icf,     ADBench's GMM objective (catalog ``adbench``)   ``(0, 1, 2)``
``adbench.GMM_PROBLEMS``)   x)``
==========================  ========================  ==============================================  =============

Shapes: ``x`` is 2-D ``(batch, features)`` for the linear and MLP problems; weights are
2-D (or a 1-D final weight for a single output); biases broadcast against the layer
output (``b.g`` is ``out.g`` summed over the broadcast axes -- the ``sum(0)`` of seed 001);
``y`` broadcasts against the output (if it broadcasts the output *up*, as ``(n,)``
against ``(n, 1)`` does, the gradient follows what the function computes).
``rosenbrock`` works along axis 0.  ``wrt`` may be any subset of the differentiable
arguments listed in ``MANUAL_GRADIENTS[name].differentiable`` (all of them, ``x`` and ``y``
included, have a hand-written gradient); the table shows the catalog's choice.

ReLU: ``relu'(0) = 0`` (the mask ``z > 0``), as in the engine; a problem that writes ReLU
as ``maximum(z, 0)`` gets the engine's tie rule ``1/2`` at exact zeros, which random
inputs never hit.

Contract checks.  ``supports`` refuses other names (``"no hand-written gradient for
<name>"``) and differentiated arguments outside the table.  ``prepare`` checks the
argument count and shapes, and evaluates the problem's own ``fn`` once on NumPy to
confirm it computes the value the hand-written gradient assumes; a catalog layout that
differs is a ``ValueError`` naming the expected signature.

>>> import numpy as np
>>> from diffcompare import backends
>>> from diffcompare.problems import Problem
>>> p = Problem("minibatch_inverse_mean", lambda xp, x: xp.mean(1 / x),
...             lambda size, seed: (np.arange(1.0, size + 1),), "mean of 1/x")
>>> manual = backends.get("manual")
>>> prepared = manual.prepare(p, p.inputs(2))
>>> manual.gradient(prepared, p.inputs(2))
(array([-0.5  , -0.125]),)
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from ..problems.catalog import adbench
from .base import SUPPORTED, Backend, Prepared, Support


# --- shared pieces ----------------------------------------------------------------------

def unbroadcast(g: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``g`` down to ``shape``: the gradient of broadcasting (seed 001's ``b.g = out.g.sum(0)``)."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    if lead:
        g = g.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g.reshape(shape)


def matmul_backward(a, b, g, need_a: bool, need_b: bool):
    """``(a.g, b.g)`` for ``out = a @ b`` with ``out.g = g`` (a, b 1-D or 2-D)."""
    ga = gb = None
    if need_a:
        if b.ndim == 1:
            ga = np.multiply.outer(g, b) if a.ndim == 2 else g * b
        else:
            ga = g @ b.T                          # inp.g = out.g @ w.t()
    if need_b:
        if a.ndim == 1:
            gb = np.multiply.outer(a, g) if b.ndim == 2 else g * a
        else:
            gb = a.T @ g                          # w.g = inp.T @ out.g
    return ga, gb


def _mse(diff) -> float:
    """mean(diff**2) in one pass."""
    return float(np.vdot(diff, diff)) / diff.size


def _mse_forward_backward(out, y):
    """``(mean((out - y)**2), d loss / d out)``; ``out`` is consumed as a buffer."""
    if np.broadcast_shapes(out.shape, np.shape(y)) == out.shape:
        diff = np.subtract(out, y, out=out)
    else:                                        # y broadcasts the output up (seed 001's trap)
        diff = out - y
    loss = _mse(diff)
    diff *= 2.0 / diff.size                      # mse grad: 2 (out - y) / n
    return loss, unbroadcast(diff, out.shape), diff


def _affine(x, w, b):
    z = x @ w
    if np.broadcast_shapes(z.shape, np.shape(b)) == z.shape:
        z += b
    else:
        z = z + b
    return z


# --- the problems -----------------------------------------------------------------------

def _linear_mse(args, need, value_only=False):
    x, w, b, y = args
    out = _affine(x, w, b)
    if value_only:
        return _mse(out - y), None
    loss, g_out, g_diff = _mse_forward_backward(out, y)
    grads = {}
    grads[0], grads[1] = matmul_backward(x, w, g_out, 0 in need, 1 in need)
    if 2 in need:
        grads[2] = unbroadcast(g_out, np.shape(b))           # b.g = out.g.sum(0)
    if 3 in need:
        grads[3] = -unbroadcast(g_diff, np.shape(y))
    return loss, grads


def mlp(activation):
    """The hand-written ``forward_backward(args, need, value_only=False) -> (loss, grads)``
    of the catalog's one-hidden-layer MLP (``activation`` "tanh" or "relu"), args
    ``(x, w1, b1, w2, b2, y)``; grads ``{index: gradient}`` for the indices in ``need``."""

    def forward_backward(args, need, value_only=False):
        x, w1, b1, w2, b2, y = args
        z = _affine(x, w1, b1)
        if activation == "tanh":
            h = np.tanh(z, out=z)                  # z is not needed again: tanh' = 1 - h^2
            mask = None
        else:
            mask = z > 0
            h = np.multiply(z, mask, out=z)       # relu, in place
        out = _affine(h, w2, b2)
        if value_only:
            return _mse(out - y), None
        loss, g_out, g_diff = _mse_forward_backward(out, y)
        grads = {}
        g_h, grads[3] = matmul_backward(h, w2, g_out, bool(need & {0, 1, 2}), 3 in need)
        if 4 in need:
            grads[4] = unbroadcast(g_out, np.shape(b2))
        if 5 in need:
            grads[5] = -unbroadcast(g_diff, np.shape(y))
        if need & {0, 1, 2}:
            if mask is None:                       # tanh backward: g_h * (1 - h^2)
                t = np.multiply(h, h)
                np.subtract(1.0, t, out=t)
                g_z = np.multiply(g_h, t, out=g_h)
            else:
                g_z = np.multiply(g_h, mask, out=g_h)   # relu mask
            grads[0], grads[1] = matmul_backward(x, w1, g_z, 0 in need, 1 in need)
            if 2 in need:
                grads[2] = unbroadcast(g_z, np.shape(b1))
        return loss, grads
    return forward_backward


def _linear_mean(args, need, value_only=False):
    x, w = args
    shape = np.broadcast_shapes(np.shape(x), np.shape(w))
    n = int(np.prod(shape))
    value = float(np.sum(x * w)) / n
    if value_only:
        return value, None
    grads = {}
    if 1 in need:
        grads[1] = unbroadcast(np.broadcast_to(x, shape) * (1.0 / n), np.shape(w))
    if 0 in need:
        grads[0] = unbroadcast(np.broadcast_to(w, shape) * (1.0 / n), np.shape(x))
    return value, grads


def _minibatch_inverse_mean(args, need, value_only=False):
    (x,) = args
    n = x.size
    if value_only:
        return float(np.sum(1.0 / x)) / n, None
    inv = np.divide(1.0, x)
    value = float(np.sum(inv)) / n
    inv *= inv                                    # 1/x^2
    inv *= -1.0 / n                               # d mean(1/x) = -1 / (n x^2)
    return value, {0: inv}


def _rosenbrock(args, need, value_only=False):
    (x,) = args
    head = x[:-1]
    a = x[1:] - head * head                       # x[i+1] - x[i]^2
    b = 1.0 - head
    value = float(100.0 * np.vdot(a, a) + np.vdot(b, b))
    if value_only:
        return value, None
    g = np.zeros_like(x, dtype=np.float64)
    a *= 200.0                                    # d/da of 100 a^2
    g[1:] = a
    a *= head
    g[:-1] -= 2.0 * a + 2.0 * b                   # -400 a x[i] - 2 (1 - x[i])
    return value, {0: g}


def _lls(args, need, value_only=False):
    x, A, b = args
    r = A @ x - b
    value = float(np.vdot(r, r))
    if value_only:
        return value, None
    r *= 2.0                                      # d ||r||^2 / dr
    grads = {}
    if 0 in need:
        grads[0] = A.T @ r                        # 2 A^T (A x - b)
    if 1 in need:
        grads[1] = np.multiply.outer(r, x)
    if 2 in need:
        grads[2] = -r
    return value, grads


def _gmm_lower_positions(d):
    """(rows, cols) of icf[d:]'s entries in Q, in ADBench's column-major order."""
    idx = adbench.lower_index(d)
    r, c = np.nonzero(idx)
    order = idx[r, c] - 1
    rows, cols = np.empty_like(r), np.empty_like(c)
    rows[order], cols[order] = r, c
    return rows, cols


def _gmm(args, need, value_only=False):
    """ADBench's GMM objective and its gradient (responsibilities r = softmax_k of the
    inner terms; y = Q_k (x_i - μ_k)): dα = Σ_i r - n softmax(α); dμ_k = Q_kᵀ Σ_i r y;
    dQ_k = -Σ_i r y (x_i - μ_k)ᵀ, mapped to icf through the exp'd diagonal, plus the prior."""
    alphas, means, icf, x = args
    n, d = x.shape
    k_count = alphas.shape[0]
    log_diag, lower = icf[:, :d], icf[:, d:]
    q_diag = np.exp(log_diag)
    sum_qs = log_diag.sum(axis=1)
    rows, cols = _gmm_lower_positions(d)
    Q = np.zeros((k_count, d, d))
    Q[:, rows, cols] = lower
    Q[:, np.arange(d), np.arange(d)] = q_diag
    inner = np.empty((n, k_count))
    for k in range(k_count):
        y = (x - means[k]) @ Q[k].T
        inner[:, k] = alphas[k] + sum_qs[k] - 0.5 * np.einsum("ij,ij->i", y, y)
    top = inner.max(axis=1, keepdims=True)
    e = np.exp(inner - top)
    s = e.sum(axis=1, keepdims=True)
    a_top = alphas.max()
    a_exp = np.exp(alphas - a_top)
    gamma2 = adbench.WISHART_GAMMA ** 2
    value = float(-n * d * 0.5 * np.log(2 * np.pi) + np.sum(np.log(s) + top)
                  - n * (a_top + np.log(a_exp.sum()))
                  + 0.5 * gamma2 * (np.vdot(q_diag, q_diag) + np.vdot(lower, lower))
                  - adbench.WISHART_M * sum_qs.sum() - adbench.wishart_constant(d, k_count))
    if value_only:
        return value, None
    r = np.divide(e, s, out=e)                    # responsibilities, (n, K)
    r_sum = r.sum(axis=0)
    g_means = np.empty_like(means)
    g_icf = np.empty_like(icf)
    for k in range(k_count):
        xc = x - means[k]
        y = xc @ Q[k].T
        y *= r[:, k:k + 1]                        # W = r y
        g_means[k] = Q[k].T @ y.sum(axis=0)
        g_q = -(y.T @ xc)                         # d loss / d Q_k
        g_icf[k, :d] = q_diag[k] * np.diagonal(g_q) + r_sum[k] + gamma2 * q_diag[k] ** 2 - adbench.WISHART_M
        g_icf[k, d:] = g_q[rows, cols] + gamma2 * lower[k]
    g_alphas = r_sum - n * a_exp / a_exp.sum()
    return value, {0: g_alphas, 1: g_means, 2: g_icf}


@dataclasses.dataclass(frozen=True)
class ManualGradient:
    name: str
    signature: tuple              # argument names, in order
    formula: str                  # the value, for messages
    wrt: tuple                    # the catalog's differentiated arguments
    differentiable: tuple         # every argument with a hand-written gradient
    forward_backward: Callable    # (args, need, value_only=False) -> (value, {index: grad})
    matrix_args: tuple = ()       # arguments that must be 1-D or 2-D (matmul operands)

    def describe(self) -> str:
        return f"{self.name}({', '.join(self.signature)}) = {self.formula}, wrt {self.wrt}"


def _parameters_first(forward_backward, n_params):
    """Adapt a formula written as (x, params..., y) to the catalog's (params..., x, y)."""
    def to_internal(k):        # catalog position -> position in the formula's arguments
        return k + 1 if k < n_params else (0 if k == n_params else k)

    def adapted(args, need, value_only=False):
        internal = (args[n_params],) + tuple(args[:n_params]) + tuple(args[n_params + 1:])
        value, grads = forward_backward(internal, frozenset(map(to_internal, need)), value_only)
        if grads is None:
            return value, None
        back = {to_internal(k): k for k in range(len(args))}
        return value, {back[i]: g for i, g in grads.items()}

    return adapted


MANUAL_GRADIENTS = {spec.name: spec for spec in [
    ManualGradient("linear_mse", ("w", "b", "x", "y"), "mean((x @ w + b - y)**2)",
                   (0, 1), (0, 1, 2, 3), _parameters_first(_linear_mse, 2), matrix_args=(2, 0)),
    ManualGradient("mlp_tanh", ("w1", "b1", "w2", "b2", "x", "y"),
                   "mean((tanh(x @ w1 + b1) @ w2 + b2 - y)**2)",
                   (0, 1, 2, 3), (0, 1, 2, 3, 4, 5), _parameters_first(mlp("tanh"), 4),
                   matrix_args=(4, 0, 2)),
    ManualGradient("mlp_relu", ("w1", "b1", "w2", "b2", "x", "y"),
                   "mean((relu(x @ w1 + b1) @ w2 + b2 - y)**2)",
                   (0, 1, 2, 3), (0, 1, 2, 3, 4, 5), _parameters_first(mlp("relu"), 4),
                   matrix_args=(4, 0, 2)),
    ManualGradient("linear_mean", ("x", "w"), "mean(x * w)", (1,), (0, 1), _linear_mean),
    ManualGradient("minibatch_inverse_mean", ("x",), "mean(1 / x)", (0,), (0,),
                   _minibatch_inverse_mean),
    ManualGradient("rosenbrock", ("x",), "sum(100 (x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2)",
                   (0,), (0,), _rosenbrock),
    ManualGradient("linear_least_squares", ("x", "A", "b"), "sum((A @ x - b)**2)",
                   (0,), (0, 1, 2), _lls, matrix_args=(1,)),
    # every GMM problem of the catalog (gmm, gmm_d64, gmm_10k, ...: one per (d, n) of
    # ADBench's grid) is the same function at other shapes
    *(ManualGradient(name, ("alphas", "means", "icf", "x"),
                     "ADBench's GMM log-likelihood with Wishart prior (d = x.shape[1])",
                     (0, 1, 2), (0, 1, 2), _gmm, matrix_args=(1, 2, 3))
      for name in adbench.GMM_PROBLEMS),
]}


class ManualBackend(Backend):
    name = "manual"

    #: relative tolerance of the prepare-time check that ``problem.fn`` computes the same value
    value_check_rtol = 1e-9

    def supports(self, problem) -> Support:
        spec = MANUAL_GRADIENTS.get(problem.name)
        if spec is None:
            return Support(False, f"no hand-written gradient for {problem.name}")
        extra = [i for i in problem.wrt if i not in spec.differentiable]
        if extra:
            return Support(False, f"the hand-written gradient of {spec.describe()} has no "
                                  f"argument(s) {extra} to differentiate; the problem asks for "
                                  f"wrt={problem.wrt}")
        return SUPPORTED

    def prepare(self, problem, inputs) -> Prepared:
        support = self.supports(problem)
        if not support:
            raise ValueError(support.reason)
        spec = MANUAL_GRADIENTS[problem.name]
        expected = f"expected the layout {spec.describe()}"
        if len(inputs) != len(spec.signature):
            raise ValueError(f"problem {problem.name!r} passes {len(inputs)} argument(s) but the "
                             f"hand-written gradient takes {len(spec.signature)}: {expected}.")
        # the definitions are compared in float64: in float32 two summation orders of 10^7
        # terms differ by rounding (3e-5 relative on rosenbrock), not by definition
        args = tuple(np.asarray(a, dtype=np.float64) if np.asarray(a).dtype.kind == "f"
                     else np.asarray(a) for a in inputs)
        for i in spec.matrix_args:
            if args[i].ndim not in (1, 2):
                raise ValueError(f"problem {problem.name!r}: argument {i} ({spec.signature[i]}) "
                                 f"has shape {args[i].shape}; the hand-written gradient needs it "
                                 f"1-D or 2-D: {expected}.")
        try:
            mine, _ = spec.forward_backward(args, frozenset(), value_only=True)
        except ValueError as exc:            # shapes that do not fit the formula
            raise ValueError(f"problem {problem.name!r}: the inputs do not fit the hand-written "
                             f"formula ({exc}): {expected}.") from None
        theirs = np.asarray(problem.fn(np, *args), dtype=np.float64)
        rtol = self.value_check_rtol
        if theirs.size != 1 or not np.isclose(float(theirs.reshape(-1)[0]), mine,
                                              rtol=rtol, atol=0.0):
            raise ValueError(f"problem {problem.name!r} computes {theirs.reshape(-1)[:3]} at these "
                             f"inputs but the hand-written gradient assumes {mine!r}: the "
                             f"catalog's definition differs; {expected}.")
        return Prepared(problem, state=spec, info={"layout": spec.describe(),
                                                    "layout_checked": True})

    def vjp(self, prepared, inputs, cotangent=None):
        spec, wrt = prepared.state, prepared.problem.wrt
        prepared.evaluations += 1
        _, grads = spec.forward_backward(tuple(np.asarray(a) for a in inputs), frozenset(wrt))
        out = []
        scale = None if cotangent is None else float(np.asarray(cotangent, np.float64).reshape(-1)[0])
        for i in wrt:
            g = np.asarray(grads[i], dtype=np.float64)
            if g.shape != np.shape(inputs[i]):        # 0-d arguments come back as 0-d arrays
                g = g.reshape(np.shape(inputs[i]))
            out.append(g if scale is None else g * scale)
        return tuple(out)

    def function(self, prepared, inputs):
        prepared.evaluations += 1
        value, _ = prepared.state.forward_backward(tuple(np.asarray(a) for a in inputs),
                                                   frozenset(), value_only=True)
        return np.asarray(value, dtype=np.float64)
