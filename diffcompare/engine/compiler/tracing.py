"""Trace a function once: the engine's forward, then the engine's own backward, on Tracers.

Nothing here knows a derivative.  The function runs on ordinary engine Tensors
whose ``data`` are Tracers; ``Function.apply`` records the graph as it always
does, and ``autograd``'s backward loop runs every node's ``backward`` formula
(the one written once in ``ops/``) with Tracer gradients.  Every NumPy call made
along the way becomes a step.

Two seams of the engine let Tracers through: ``Tracer`` is registered, once, in
``tensor.data_types``, so ``Tensor._make`` keeps it as ``data`` (and tells us
which node made it, so the gradients arriving there can be named after its
outputs: each traced node's ``backward`` is wrapped on the instance, and those
nodes are private to the trace); and the engine's shape-dependent kernels
(``engine/kernels.py``, those in ``kernels.TRACED``) are swapped, only while
tracing and under a lock, for versions that record one step ``("kernel", name)``
each (another thread's arrays pass through them unchanged), so that the
generated program calls the same kernel and takes its fast paths.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np


from .. import autograd, grad_mode, kernels
from ..tensor import Tensor, data_types
from .tracer import Trace, TraceError, Tracer, traced_call, trace_of, user_line

_LOCK = threading.RLock()


def _adopt(data: Tracer, grad_fn, output_nr):
    """Called by ``Tensor._make`` when a tensor is made with a Tracer as its data."""
    if grad_fn is not None:
        _label_gradients(grad_fn, output_nr, data)


data_types[Tracer] = _adopt


def _label_gradients(node, output_nr, out: Tracer):
    """Remember node's outputs, so the gradients arriving there can be named after them."""
    outs = node.__dict__.get("_traced_outputs")
    if outs is None:
        outs = node._traced_outputs = {}
        run = node.backward      # the backward loop calls node.backward(*grads)

        def backward(*grads, _run=run, _outs=outs):
            for nr, g in enumerate(grads):
                if type(g) is Tracer and g.name is None and nr in _outs and g.step is not None:
                    g.trace.grad_names.setdefault(id(g), (g, _outs[nr]))
            return _run(*grads)

        node.backward = backward
    outs[output_nr] = out


def _recording(name, kernel):
    """``kernel``, recording one step when an operand is traced (a traced array, or a
    traced index such as sort's permutation, computed when the program is called); where
    ``kernels.MIN_SIZE`` says the kernel is its plain form at this size, that form."""
    least = kernels.MIN_SIZE.get(name, 0)

    def call(*args, **kwargs):
        if trace_of((args, tuple(kwargs.values()))) is None or (least and np.size(args[0]) < least):
            return kernel(*args, **kwargs)
        return traced_call(("kernel", name), kernel, args, kwargs)
    call.__name__ = call.__qualname__ = name
    return call


#: the kernels as they are (what a generated program calls), by name
KERNELS = {name: getattr(kernels, name) for name in kernels.TRACED + kernels.NUMPY_EQUIVALENTS}
_PATCHES = {name: (kernels, name, _recording(name, KERNELS[name])) for name in kernels.TRACED}


def traced_tensor(trace: Trace, array, name: str) -> Tensor:
    """A leaf Tensor whose data is the Tracer of ``trace``'s argument ``name`` (``array``)."""
    return Tensor._make(trace.argument(array, name))


@contextlib.contextmanager
def recording_kernels(recorded=kernels.TRACED):
    """Swap the kernels named in ``recorded`` for recording versions (the sparsity walker,
    whose rules know NumPy's operations, records only ``index_add``: the others' plain
    forms are traced op by op)."""
    patches = [_PATCHES[name] for name in recorded]
    with _LOCK:
        missing = [f"{obj.__name__}.{name}" for obj, name, _ in patches if name not in obj.__dict__]
        if missing:
            raise TraceError(f"compile: the engine no longer has {missing}, which tracing "
                             "swaps for a Tracer-keeping version; update "
                             "diffcompare/engine/compiler/tracing.py to the engine's new names.")
        saved = [(obj, name, obj.__dict__[name]) for obj, name, _ in patches]
        try:
            for obj, name, new in patches:
                setattr(obj, name, new)
            yield
        finally:
            for obj, name, old in saved:
                setattr(obj, name, old)


def trace(fn, arrays, names, wrt, takes_xp):
    """Run ``fn`` on traced Tensors and its backward; returns ``(trace, value, grads)``
    where ``grads[i]`` is the gradient for ``wrt[i]`` (a Tracer, a constant, or None)."""
    from .. import array_api

    tr = Trace()
    tr.grad_names = {}
    with recording_kernels():
        tensors = []
        for i, (a, name) in enumerate(zip(arrays, names)):
            t = traced_tensor(tr, a, name)
            if i in wrt:
                t.requires_grad = True
            tensors.append(t)
        with grad_mode.enable_grad():
            out = fn(array_api, *tensors) if takes_xp else fn(*tensors)
        if not isinstance(out, Tensor):
            raise TraceError(f"compile: the function returned a {type(out).__name__}, not a "
                             "Tensor; return the value computed with the engine's ops.")
        if wrt and out.data.size != 1:
            raise TraceError(f"compile: the function's value has shape {out.shape}; compile "
                             "differentiates a scalar: reduce it (e.g. .sum()) first.")
        tr.phase = "backward"
        wrt_tensors = [tensors[i] for i in wrt]
        _warn_captured_parameters(out, tensors)
        if wrt and out._requires_grad:
            grads = autograd.run_backward(out, wrt_tensors)
        else:
            grads = [None] * len(wrt)
    return tr, out.data, list(grads)


def _warn_captured_parameters(out, arguments):
    """Warn about leaves that require grad but are not arguments: tensors the function reads
    from a closure or a global.  Eager fills their ``.grad``; the compiled program bakes
    their values in as constants (as ``jax.jit`` does) and computes no gradient for them."""
    from ..function import AccumulateGrad

    mine = {id(t) for t in arguments}
    seen, stack, captured = set(), [out.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            v = node.variable
            if v is not None and id(v) not in mine:
                captured.append(v)
            continue
        stack.extend(fn for fn, _ in node.next_functions)
    if captured:
        import warnings

        shapes = ", ".join(str(t.shape) for t in captured)
        warnings.warn(
            f"compile: the function uses {len(captured)} tensor(s) that require grad but are not "
            f"its arguments (shapes {shapes}), read from a closure or a global: the compiled "
            "program bakes their current values in as constants and computes no gradient for "
            "them (eager would fill their .grad). Pass them as arguments and list them in wrt.",
            UserWarning, stacklevel=_user_stacklevel())


def _user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside the engine."""
    import os
    import sys

    engine = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(2), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(engine):
        frame, level = frame.f_back, level + 1
    return level


__all__ = ["trace", "traced_tensor", "recording_kernels", "TraceError", "user_line"]
