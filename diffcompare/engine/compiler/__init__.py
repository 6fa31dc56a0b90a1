"""``compile``: trace a function once, get its gradient as a straight-line NumPy program.

The engine's own forward and backward formulas run once on Tracers (see
``tracing``), so the compiled and the eager engine cannot disagree about a
derivative; what comes out is plain Python over NumPy, with no Tensor or Node
left, that a person can read:

>>> import numpy as np
>>> from diffcompare.engine import compile, relu
>>> def loss(X, W1, b1, W2, b2, Y):
...     return ((relu(X @ W1 + b1) @ W2 + b2 - Y) ** 2).mean()
>>> g = compile(loss, wrt=(1, 2, 3, 4))
>>> rng = np.random.default_rng(0)
>>> X, Y = rng.standard_normal((64, 10)), rng.standard_normal((64, 1))
>>> W1, b1 = rng.standard_normal((10, 50)), np.zeros(50)
>>> W2, b2 = rng.standard_normal((50, 1)), np.zeros(1)
>>> value, (gW1, gb1, gW2, gb2) = g(X, W1, b1, W2, b2, Y)
>>> print(g.ssa_source)                  # one name per value; g.source reuses buffers
def loss_and_grad(X, W1, b1, W2, b2, Y):
    t1 = X @ W1
    t2 = t1 + b1
    t3 = np.maximum(t2, 0)
    t4 = t3 @ W2
    t5 = t4 + b2
    t6 = t5 - Y
    t7 = t6 ** 2
    t8 = t7.sum()
    value = t8 / 64
    # backward: the recorded graph in reverse order
    g_t6 = 0.03125 * t6
    g_b2 = g_t6.sum(axis=0)
    g_t3 = g_t6 @ W2.T
    g_W2 = t3.T @ g_t6
    g_t2 = g_t3 * (t3 > 0)
    g_b1 = g_t2.sum(axis=0)
    g_W1 = X.T @ g_t2
    return value, (g_W1, g_b1, g_W2, g_b2)
<BLANKLINE>
>>> print(g.math())
forward:
  t1 = X W1
  t2 = t1 + b1
  t3 = relu(t2)
  t4 = t3 W2
  t5 = t4 + b2
  t6 = t5 − Y
  t7 = t6²
  t8 = Σ t7
  L = t8 / 64
backward (∂v means ∂L/∂v):
  ∂t6 = 0.03125·t6
  ∂b2 = 𝟙ᵀ ∂t6
  ∂t3 = ∂t6 W2ᵀ
  ∂W2 = t3ᵀ ∂t6
  ∂t2 = ∂t3 ⊙ relu′(t2)
  ∂b1 = 𝟙ᵀ ∂t2
  ∂W1 = Xᵀ ∂t2

Tracing happens on the first call for each signature (shapes and dtypes of
the arguments) and is cached, as ``jax.jit`` does.  Python control flow is
unrolled; a branch decided by a traced value (``if x.sum() > 0``) becomes a
guard checked on every call, and a call whose guard flips traces again (up to
``max_variants`` programs per signature, then a ``TraceError`` names the line).
In-place updates of traced values and conversions to Python numbers are
refused with a ``TraceError`` naming the operation and the line.  Arrays and
tensors the function reads from a closure or a global are baked in at trace
time (as ``jax.jit`` does): a later change to them is not seen, and a tensor
there that requires grad gets no gradient -- a warning says so; pass it as an
argument and list it in ``wrt``.
"""
from __future__ import annotations

import inspect
import time

import numpy as np

from .codegen import Program
from .fusion import fuse_slices
from .tracer import GuardFailed, TraceError, Tracer
from .tracing import KERNELS, trace as _trace

__all__ = ["compile", "CompiledGradient", "TraceError"]

#: names the generated code uses itself (an argument so named gets a "_" appended)
_RESERVED = {"np", "_Retrace", *KERNELS}


def compile(fn, wrt=(0,), *, xp=None, names=None, max_variants=8):
    """The gradient of scalar ``fn`` w.r.t. the arguments at ``wrt``, as generated code.

    ``fn(*tensors)`` uses the engine's ops; ``fn(xp, *args)`` (detected by a first
    parameter named ``xp``, or ``xp=True``) is written against an array namespace.
    ``names``: argument names for the generated code (default: ``fn``'s parameters).

    A program makes the same temporaries on every call; glibc gives large ones back to the OS
    and faults them in again the next time (GMM, K=50, n=10^4: 2,900 page faults a call).
    To time it in your own process as the runner's workers run it, keep freed memory with
    ``diffcompare.malloc_settings.keep_freed_memory()``.
    """
    return CompiledGradient(fn, wrt, xp=xp, names=names, max_variants=max_variants)


class _Variant:
    """The programs of one trace: value+gradient, value only, and the trace's facts."""

    def __init__(self, trace, value, grads, arrays, wrt, func_name, trace_s):
        start = time.perf_counter()
        fuse_slices(trace)        # same steps on side-by-side slices: one step (fusion.py)
        zero = [g if g is not None else np.zeros(arrays[i].shape, arrays[i].dtype)
                for g, i in zip(grads, wrt)]
        arg_names = [trace.args[i].name for i in wrt]
        outputs = [value] + zero
        grad_names = getattr(trace, "grad_names", {})
        self.grad = Program(trace, outputs, ["value"] + [f"g_{n}" for n in arg_names],
                            func_name + "_and_grad", grad_names)
        self.value = Program(trace, [value], ["value"], func_name, value_only=True)
        trace.release_values()
        self.trace = trace
        self.codegen_s = time.perf_counter() - start
        self._readable = None
        self.trace_s = trace_s

    @property
    def readable(self):
        """The program with one name per value (no buffer reuse): for reading and for math()."""
        if self._readable is None:
            self._readable = self.grad.without_reuse()
        return self._readable


class CompiledGradient:
    """``value, grads = g(*arrays)``; ``g.source``, ``g.math()``, ``g.stats()`` describe the program."""

    def __init__(self, fn, wrt=(0,), *, xp=None, names=None, max_variants=8):
        self.fn = fn
        self.wrt = (wrt,) if isinstance(wrt, int) else tuple(wrt)
        params = _parameters(fn)
        self.takes_xp = (params[:1] == ["xp"]) if xp is None else bool(xp)
        self._param_names = params[1:] if self.takes_xp else params
        self._names = list(names) if names is not None else None
        self.max_variants = max_variants
        self._cache: dict = {}
        self.traces = 0            # how many times fn was traced (one per signature and branch)
        self._last = None
        self.__name__ = getattr(fn, "__name__", "fn")

    # --- calling ------------------------------------------------------------------
    def __call__(self, *args):
        """``(value, grads)``: the value and one gradient per ``wrt`` argument."""
        try:
            key = tuple([(a.shape, a.dtype) for a in args])
        except AttributeError:
            args = tuple(np.asarray(a) for a in args)
            key = tuple([(a.shape, a.dtype) for a in args])
        variants = self._cache.get(key)
        if variants is not None and len(variants) == 1:
            try:
                return variants[0].grad.fn(*args)
            except GuardFailed:
                pass
        return self._run(key, args, "grad")

    def value(self, *args):
        """The function's value only (the forward steps of the program)."""
        args = tuple(np.asarray(a) for a in args)
        return self._run(tuple((a.shape, a.dtype) for a in args), args, "value")

    def _run(self, key, args, which):
        variants = self._cache.setdefault(key, [])
        failed = []
        for v in variants:
            try:
                return getattr(v, which).fn(*args)
            except GuardFailed as exc:
                failed.append(exc.index)
        if len(variants) >= self.max_variants:
            raise TraceError(
                f"compile: the branch at {', '.join(sorted(set(failed)))} depends on traced values "
                f"and went another way on each of {len(variants)} traces for this signature "
                f"(max_variants={self.max_variants}); write it with the engine's ops "
                "(e.g. where(cond, a, b)) so that one program covers every input.")
        v = self._trace(args)
        variants.append(v)
        return getattr(v, which).fn(*args)

    def _trace(self, args):
        arrays = [np.asarray(a) for a in args]
        names = self._arg_names(len(arrays))
        bad = [i for i in self.wrt if not -len(arrays) <= i < len(arrays)]
        if bad:
            raise ValueError(f"compile: wrt={self.wrt} names argument(s) {bad}, but the call "
                             f"passes {len(arrays)}; pass wrt indices of the function's arguments.")
        wrt = tuple(i % len(arrays) for i in self.wrt)
        start = time.perf_counter()
        tr, value, grads = _trace(self.fn, arrays, names, wrt, self.takes_xp)
        v = _Variant(tr, value, grads, arrays, wrt, _identifier(self.__name__),
                     time.perf_counter() - start)
        self.traces += 1
        self._last = v
        return v

    def _arg_names(self, n):
        names = self._names or self._param_names
        names = [n_ for n_ in names if n_.isidentifier()][:n]
        names += [f"arg{i}" for i in range(len(names), n)]
        seen, out = set(), []
        for nm in names:
            nm = nm if nm not in seen and nm not in _RESERVED else nm + "_"
            seen.add(nm)
            out.append(nm)
        return out

    # --- reading the program ------------------------------------------------------
    def trace(self, *args):
        """Trace for these arguments' signature without running the program; returns self."""
        args = tuple(np.asarray(a) for a in args)
        key = tuple((a.shape, a.dtype) for a in args)
        if not self._cache.get(key):
            self._cache[key] = [self._trace(args)]
        else:
            self._last = self._cache[key][-1]
        return self

    def _variant(self):
        if self._last is None:
            raise RuntimeError("compile: nothing traced yet; call g(*arrays) (or g.trace(*arrays)) "
                               "first: the program depends on the arguments' shapes.")
        return self._last

    @property
    def source(self) -> str:
        """The generated value-and-gradient function that runs (latest trace), as Python text.

        Elementwise steps write into a dead operand's buffer (``t1 += b1``, ``out=``) where
        that is safe; ``ssa_source`` is the same program with one name per value."""
        return self._variant().grad.source

    @property
    def ssa_source(self) -> str:
        """The program with one name per value and no buffer reuse: the easiest to read."""
        return self._variant().readable.source

    @property
    def value_source(self) -> str:
        return self._variant().value.source

    def stats(self) -> dict:
        """Steps of the program, guards, and bytes kept from the forward for the backward."""
        from .report import stats

        return stats(self._variant())

    def math(self) -> str:
        """The gradient as matrix formulas (Xᵀ G, 𝟙ᵀ G, ⊙, f′(·))."""
        from .report import math

        return math(self._variant())

    def __repr__(self):
        return f"<compiled gradient of {self.__name__}, wrt={self.wrt}, {self.traces} trace(s)>"


def _parameters(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _identifier(name):
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return name if name and not name[0].isdigit() and name != "_lambda_" else "fn"
