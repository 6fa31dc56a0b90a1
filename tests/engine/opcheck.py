"""One check for an op in every engine mode, against an independent reference (torch or JAX).

``check(engine_fn, reference_fn, inputs)`` runs ``engine_fn`` (a function of engine Tensors)
and ``reference_fn`` (the same function of torch tensors, or of ``jax.numpy`` arrays with
``reference="jax"``) on the same float64 inputs and asserts, each against the reference:

- the value;
- the VJP with a seeded random cotangent (eager backward);
- the second-order VJP, d/dx <VJP(x), w> (``create_graph=True``: the backward formula is
  itself differentiated);
- the JVP with a seeded random tangent (``functional.jvp``, the engine's forward mode);
- the compiled gradient of <f(x), v> (``engine.compile``), against the reference, not
  against the eager engine it shares rules with.

Tolerances are analytic-against-analytic (rtol 1e-9, atol 1e-11 by default): a wrong rule
is off by O(1).  Inputs are differentiated all; constants go in the functions' closures.

>>> import numpy as np, torch                                    # doctest: +SKIP
>>> import diffcompare.engine as E
>>> check(E.exp, torch.exp, [np.linspace(-1, 1, 5)])            # doctest: +SKIP
"""
from __future__ import annotations

import numpy as np

from diffcompare.engine import Tensor, autograd, compile as engine_compile
from diffcompare.engine import functional as F

RTOL, ATOL = 1e-9, 1e-11

#: Pairs of broadcasting shapes: equal, scalar, extra leading axes, size-1 axes both ways.
BROADCAST_SHAPES = [((3,), (3,)), ((2, 3), ()), ((4, 1, 3), (2, 3)), ((2, 1), (1, 3)),
                    ((1, 2, 1), (3, 1, 1, 4))]


def rng(*key):
    """A generator seeded from 0 and a case key."""
    return np.random.default_rng([0, *[abs(hash(k)) % (2 ** 32) if isinstance(k, str) else k
                                       for k in key]])


def _close(ours, theirs, what, rtol, atol):
    ours = np.asarray(ours, dtype=np.float64)
    theirs = np.asarray(theirs, dtype=np.float64)
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape}, reference {theirs.shape}"
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, err_msg=what)


# --- references ---------------------------------------------------------------------------

def _torch_reference(fn, xs, v, t, w):
    import torch

    X = [torch.tensor(x, requires_grad=True) for x in xs]
    out = fn(*X)
    V = torch.tensor(v)
    gs = torch.autograd.grad(out, X, V, create_graph=True, allow_unused=True)
    gs = [torch.zeros_like(x) if g is None else g for g, x in zip(gs, X)]
    s = sum((g * torch.tensor(wi)).sum() for g, wi in zip(gs, w))
    if s.requires_grad:
        hs = torch.autograd.grad(s, X, allow_unused=True)
        hs = [np.zeros_like(x) if h is None else h.detach().numpy(force=True) for h, x in zip(hs, xs)]
    else:
        hs = [np.zeros_like(x) for x in xs]
    # J t by the double-vjp trick, so ops without forward-mode formulas in torch are covered
    Xt = [torch.tensor(x, requires_grad=True) for x in xs]
    out_t = fn(*Xt)
    u = torch.zeros_like(out_t, requires_grad=True)
    gu = torch.autograd.grad(out_t, Xt, u, create_graph=True, allow_unused=True)
    pairs = [(g, torch.tensor(ti)) for g, ti in zip(gu, t) if g is not None and g.requires_grad]
    if pairs:
        (jt,) = torch.autograd.grad([g for g, _ in pairs], [u], [ti for _, ti in pairs],
                                    allow_unused=True, materialize_grads=True)
        jt = jt.detach().numpy(force=True)
    else:
        jt = np.zeros(out.shape)
    return (out.detach().numpy(), [g.detach().numpy(force=True) for g in gs], hs, jt)


def _jax_reference(fn, xs, v, t, w):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    xs_j = [jnp.asarray(x) for x in xs]
    out, pullback = jax.vjp(fn, *xs_j)
    gs = pullback(jnp.asarray(v))

    def inner(*ys):
        g = jax.vjp(fn, *ys)[1](jnp.asarray(v))
        return sum(jnp.sum(gi * wi) for gi, wi in zip(g, w))

    hs = jax.grad(inner, argnums=tuple(range(len(xs))))(*xs_j)
    jt = jax.jvp(fn, tuple(xs_j), tuple(jnp.asarray(ti) for ti in t))[1]
    return (np.asarray(out), [np.asarray(g) for g in gs], [np.asarray(h) for h in hs],
            np.asarray(jt))


REFERENCES = {"torch": _torch_reference, "jax": _jax_reference}


# --- the engine in each mode --------------------------------------------------------------

def _engine_vjp_and_second(fn, xs, v, w):
    X = [Tensor(x, requires_grad=True) for x in xs]
    out = fn(*X)
    gs = autograd.grad(out, X, v, create_graph=True, materialize_grads=True)
    s = None
    for g, wi in zip(gs, w):
        if g._requires_grad:
            term = (g * wi).sum()
            s = term if s is None else s + term
    if s is None:
        hs = [np.zeros_like(x) for x in xs]
    else:
        hs = [h.data for h in autograd.grad(s, X, materialize_grads=True)]
    X1 = [Tensor(x, requires_grad=True) for x in xs]   # a plain backward (no create_graph)
    out1 = fn(*X1)
    plain = autograd.grad(out1, X1, v, materialize_grads=True)
    return out.data, [g.data for g in gs], [g.data for g in plain], hs


def check(engine_fn, reference_fn, inputs, *, reference="torch", compiled=True, second=True,
          forward=True, rtol=RTOL, atol=ATOL, key=0):
    """Assert the engine's value, VJP, second-order VJP, JVP and compiled gradient of
    ``engine_fn`` at ``inputs`` equal the reference's (see the module docstring)."""
    xs = [np.array(x, dtype=np.float64) for x in inputs]
    X = [Tensor(x) for x in xs]
    out_shape = engine_fn(*X).shape
    g = rng("opcheck", key)
    v = g.standard_normal(out_shape)
    t = [g.standard_normal(x.shape) for x in xs]
    w = [g.standard_normal(x.shape) for x in xs]
    ref_out, ref_g, ref_h, ref_jt = REFERENCES[reference](reference_fn, xs, v, t, w)

    out, gs, plain, hs = _engine_vjp_and_second(engine_fn, xs, v, w)
    _close(out, ref_out, "value", rtol, atol)
    for i, (ours, mine, theirs) in enumerate(zip(plain, gs, ref_g)):
        _close(ours, theirs, f"VJP of input {i}", rtol, atol)
        _close(mine, theirs, f"VJP of input {i} (create_graph)", rtol, atol)
    if second:
        for i, (ours, theirs) in enumerate(zip(hs, ref_h)):
            _close(ours, theirs, f"second-order VJP of input {i}", rtol, atol)
    if forward:
        _, jt = F.jvp(engine_fn, tuple(xs), tuple(t), allow_unused=True)
        _close(jt, ref_jt, "JVP", rtol, atol)
    if compiled:
        def scalar(*ts):
            return (engine_fn(*ts) * v).sum()

        value, cgs = engine_compile(scalar, wrt=tuple(range(len(xs))))(*xs)
        _close(value, np.sum(ref_out * v), "compiled value", rtol, atol)
        for i, (ours, theirs) in enumerate(zip(cgs, ref_g)):
            _close(ours, theirs, f"compiled gradient of input {i}", rtol, atol)
