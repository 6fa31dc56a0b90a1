"""The backward pass: run the graph from outputs to leaves, latest-created node first.

Each node runs once, after the gradients from every path that reaches it have
been summed; then its result is handed to the nodes in ``next_functions``.
``AccumulateGrad`` nodes add the final gradient into the leaves' ``.grad``.
The loop is :func:`_execute`.

Two entry points, as in ``torch.autograd``:

- ``backward(tensors, ...)`` accumulates into ``.grad`` of the leaves;
- ``grad(outputs, inputs, ...)`` returns the gradients and touches no ``.grad``.

``run_backward`` is the loop itself for tools that run the engine on other data (the
compiler's Tracers): the gradients as they arrive, unchecked and unconverted.

>>> from diffcompare.engine import Tensor, autograd
>>> x = Tensor([1.0, 2.0], requires_grad=True)
>>> (gx,) = autograd.grad((x ** 3).sum(), x, create_graph=True)
>>> gx                                   # 3 x^2, itself differentiable
tensor([ 3., 12.], grad_fn=<MulBackward0>)
>>> autograd.grad(gx.sum(), x)[0]        # 6 x
tensor([ 6., 12.])
"""
from __future__ import annotations

from heapq import heappop, heappush

import numpy as np

from . import grad_mode, kernels
from .function import FREED_MESSAGE, AccumulateGrad, accumulator_of, gradient_edge
from .ops.dual import sum_to
from .tensor import Tensor


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of ``tensors`` (weighted by ``grad_tensors``) into leaves' ``.grad``.

    ``inputs`` restricts accumulation to the given tensors (leaves or not).
    """
    tensors, grad_tensors = _outputs_and_seeds(tensors, grad_tensors)
    roots = _roots(tensors, grad_tensors, create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is None:
        _execute(roots, retain_graph, create_graph, captures=None)
        return
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    captured = _execute(roots, retain_graph, create_graph, captures=_capture_keys(inputs))
    for t, g in zip(inputs, captured):
        if g is None:
            continue
        if t.grad_fn is None:
            accumulator_of(t).accumulate(g, create_graph)
        else:
            g = _as_grad_of(t, g if create_graph or type(g) is Tensor else np.array(g))
            t._grad = g if t._grad is None else t._grad + g


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False, materialize_grads=False):
    """Return d(outputs)/d(inputs) (weighted by ``grad_outputs``) without touching ``.grad``.

    An input the outputs don't depend on is an error unless ``allow_unused``
    (then its gradient is ``None``) or ``materialize_grads`` (zeros).
    """
    outputs, grad_outputs = _outputs_and_seeds(outputs, grad_outputs)
    inputs = _as_tuple(inputs)
    for i, t in enumerate(inputs):
        if not t._requires_grad:
            raise RuntimeError(
                f"One of the differentiated Tensors (input {i}, shape {t.shape}) does not "
                "require grad. Create it with requires_grad=True."
            )
    roots = _roots(outputs, grad_outputs, create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    captured = _execute(roots, retain_graph, create_graph, captures=_capture_keys(inputs))
    result = []
    for i, (t, g) in enumerate(zip(inputs, captured)):
        if g is None:
            if materialize_grads:
                g = np.zeros_like(t.data)
            elif not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {i}, shape {t.shape}) appears "
                    "to not have been used in the graph. Set allow_unused=True if this is "
                    "the desired behavior (its gradient is then None), or "
                    "materialize_grads=True for zeros."
                )
            else:
                result.append(None)
                continue
        result.append(_as_grad_of(t, g))
    return tuple(result)


def run_backward(outputs, inputs, grad_outputs=None, retain_graph=False, create_graph=False) -> list:
    """The gradients of ``outputs`` arriving at ``inputs`` as the backward loop leaves them
    (PyTorch's ``Engine.run_backward``): the graph's own data (arrays, the compiler's
    Tracers, Tensors with ``create_graph``), None where none arrives, no dtype cast, no
    ``.grad`` touched.  ``grad`` is this plus its checks and conversions."""
    outputs, grad_outputs = _outputs_and_seeds(outputs, grad_outputs)
    roots = _roots(outputs, grad_outputs, create_graph)
    return _execute(roots, retain_graph, create_graph, captures=_capture_keys(_as_tuple(inputs)))


# --- internals -----------------------------------------------------------------------

def _as_tuple(x):
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


def _outputs_and_seeds(outputs, seeds):
    """Tuples of outputs and seed gradients (a single output takes a single seed,
    which may itself be a list of numbers)."""
    if isinstance(outputs, Tensor):
        return (outputs,), (seeds,)
    outputs = tuple(outputs)
    return outputs, (tuple(seeds) if seeds is not None else (None,) * len(outputs))


def _roots(tensors, grad_tensors, create_graph):
    """(node, output_nr, seed gradient) for each output, with the seeds checked."""
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(
            f"got {len(grad_tensors)} gradients for {len(tensors)} outputs; pass one per output."
        )
    roots = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not isinstance(t, Tensor):
            raise TypeError(f"output {i} is a {type(t).__name__}, not a Tensor.")
        if not t._requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn. "
                "Make sure a leaf it depends on was created with requires_grad=True and that "
                "it was not computed under no_grad()."
            )
        if g is None:
            if t.data.size != 1:
                raise RuntimeError(
                    "grad can be implicitly created only for scalar outputs. This output has "
                    f"shape {t.shape}: pass gradient= (a tensor of that shape; it weights each "
                    "element in the vector-Jacobian product), or reduce it, e.g. y.sum().backward()."
                )
            g = np.array(1, dtype=t.data.dtype).reshape(t.data.shape)
        else:
            g_data = g.data if isinstance(g, Tensor) else np.asarray(g)
            if g_data.dtype.kind == "c" and t.dtype.kind != "c":
                raise RuntimeError(
                    f"grad_output[{i}] is complex ({g_data.dtype}) but output[{i}] is "
                    f"{t.dtype}: the gradient passed to backward must have the output's "
                    "(real) dtype; pass its real part (g.real) if that is what you mean."
                )
            if g_data.shape != t.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {g_data.shape} and "
                    f"output[{i}] has a shape of {t.shape}. The gradient passed to backward must "
                    "have the output's shape."
                )
            if create_graph and isinstance(g, Tensor):
                g = g if g.dtype == t.dtype else g.astype(t.dtype)
            else:
                g = g_data.astype(t.dtype, copy=False)
        if create_graph and type(g) is not Tensor:
            g = Tensor._make(g)
        node, nr = gradient_edge(t)
        roots.append((node, nr, g))
    return roots


def _as_grad_of(t, g) -> Tensor:
    """``g`` as a Tensor of ``t``'s dtype (type promotion upstream may have widened it)."""
    if type(g) is Tensor:
        return g if g.dtype == t.dtype else g.astype(t.dtype)
    return Tensor._make(np.asarray(g, dtype=t.dtype))


def _capture_keys(inputs):
    """Where each input's total gradient appears: its grad_fn output or its AccumulateGrad."""
    return [(t.grad_fn, t.output_nr) if t.grad_fn is not None else (accumulator_of(t), 0)
            for t in inputs]


def _reachable(root_nodes) -> set:
    """All nodes reachable from the roots."""
    seen = set(root_nodes)
    stack = list(seen)
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _execute(roots, retain_graph, create_graph, captures):
    """Run the backward pass from ``roots``, a list of ``(node, output_nr, gradient)``.

    Without ``captures``, every leaf reached adds its gradient into ``.grad``.  With
    ``captures`` (a list of ``(node, output_nr)``), return the gradient arriving at
    each of them instead: only the nodes that lead there run and no ``.grad`` changes.

    The loop is HIPS autograd's ``backward_pass`` with PyTorch's bookkeeping, in five
    steps, written inline (calling a helper for steps 3-4 cost 2-3% of the (1, 3, 4)
    model's step in benchmarks/engine_vs_peers.py):

    1. order: the next node is the latest-created one that has received a gradient
       (a heap on ``sequence_nr``).  A node only consumes tensors made before it, so
       by the time it comes out of the heap every gradient it will receive has
       arrived and been summed: no topological sort, no dependency counts.
    2. hooks: tensor hooks and ``retain_grad`` see the summed gradient, then
       captures take it (:func:`_run_tensor_hooks`, :class:`_Captures`).
    3. call the node: a leaf's ``AccumulateGrad`` adds into ``.grad``; any other
       node's ``backward`` maps its outputs' gradients to its inputs', and where
       the op broadcast, :func:`sum_back` sums them back to the inputs' shapes.
    4. release: the node's saved tensors are dropped unless ``retain_graph``.
    5. accumulate: each input's gradient is added to what the node behind that
       input has received so far (:func:`_send`).

    A node that receives no gradient does not run.
    """
    plan = None if captures is None else _Captures([node for node, _, _ in roots], captures)
    skip = _NO_NODE if plan is None else plan.skip
    pending, heap = {}, []
    for node, nr, g in roots:
        _send(pending, heap, node, nr, g)
    release = not retain_graph
    mode = grad_mode.state           # a create_graph backward records its own ops
    prev_mode, mode.enabled = mode.enabled, create_graph
    try:
        while heap:
            node = heappop(heap)[1]                                     # 1. order
            grads = pending.pop(node)
            if node._hooked:                                            # 2. hooks
                grads = _run_tensor_hooks(node, grads, create_graph)
            if plan is not None and plan.stops_at(node, grads):
                continue
            if type(node) is AccumulateGrad:                            # 3. call the node
                node.accumulate_from(grads, create_graph)
                continue
            if node._released:
                raise RuntimeError(FREED_MESSAGE)
            if node._as_tensor is not create_graph:   # saved tensors unpack as Tensors, to record
                node._as_tensor = create_graph
            input_grads = node.backward(*grads)
            if type(input_grads) is not tuple:
                input_grads = (input_grads,)
            elif node._input_shapes is not None:
                input_grads = sum_back(node, input_grads)
            if release and node._saved is not None:                     # 4. release
                node._saved = None    # (Function.release, inlined)
                node._released = True
            for (nxt, nr), g in zip(node.next_functions, input_grads):  # 5. accumulate
                if g is not None and nxt not in skip:
                    buf = pending.get(nxt)      # (_send, inlined)
                    if buf is None:
                        buf = pending[nxt] = [None] * nxt.num_outputs
                        heappush(heap, (-nxt.sequence_nr, nxt))
                    buf[nr] = g if buf[nr] is None else buf[nr] + g
            # Drop our references, so AccumulateGrad can tell an array nobody else holds.
            input_grads = g = grads = None
    finally:
        mode.enabled = prev_mode
    return None if plan is None else plan.grads


_NO_NODE = frozenset([None])   # the node behind an input that needs no gradient


def _send(pending, heap, node, nr, g):
    """Add ``g`` to the gradient ``node``'s output ``nr`` has received so far; a node's
    first gradient puts it in the heap."""
    buf = pending.get(node)
    if buf is None:
        buf = pending[node] = [None] * node.num_outputs
        heappush(heap, (-node.sequence_nr, node))
    buf[nr] = g if buf[nr] is None else buf[nr] + g


def sum_back(node, grads: tuple) -> tuple:
    """Undo broadcasting, the one place it is done: the gradients of a binary op whose
    inputs were broadcast (``node._input_shapes``, set by ``Function.apply``) summed
    back to the inputs' shapes; None where an input needs no gradient."""
    (sa, sb), (need_a, need_b), (ga, gb) = node._input_shapes, node.needs_input_grad, grads
    if ga is not None and need_a and ga.shape != sa:
        ga = kernels.sum_to(ga, sa) if type(ga) is not Tensor else sum_to(ga, sa)
    if gb is not None and need_b and gb.shape != sb:
        gb = kernels.sum_to(gb, sb) if type(gb) is not Tensor else sum_to(gb, sb)
    return (ga if need_a else None, gb if need_b else None)


class _Captures:
    """What ``grad()`` and ``backward(inputs=...)`` ask of a backward pass: the gradient
    arriving at given ``(node, output_nr)`` pairs, running only what leads there."""

    def __init__(self, root_nodes, captures):
        self.at = {}                                  # node -> [(output_nr, index in grads)]
        for i, (node, nr) in enumerate(captures):
            self.at.setdefault(node, []).append((nr, i))
        # The nodes that must receive a gradient (a path to a capture, or a capture) and,
        # of those, the ones that run (a capture with no path to another only captures).
        # A node's inputs were made before it: creation order visits them first.
        reachable = _reachable(root_nodes)
        needed, self.run = set(), set()
        for node in sorted(reachable, key=_creation):
            if any(n in needed for n, _ in node.next_functions):
                needed.add(node)
                self.run.add(node)
            elif node in self.at:
                needed.add(node)
        self.skip = frozenset(reachable - needed) | _NO_NODE   # edges that carry nothing
        self.grads = [None] * len(captures)

    def stops_at(self, node, grads) -> bool:
        """Take the gradients captured at ``node``; True when ``node`` must not run
        (a capture with no path to another, or a leaf's AccumulateGrad)."""
        for nr, i in self.at.get(node, ()):
            self.grads[i] = grads[nr]
        return node not in self.run


def _creation(node):
    return node.sequence_nr


def _call_hooks(hooks, g, create_graph):
    wrapped = g if type(g) is Tensor else Tensor._make(g)
    for hook in list(hooks):
        new = hook(wrapped)
        if new is not None:
            new = new if isinstance(new, Tensor) else Tensor(new)
            if new.shape != wrapped.shape:   # PyTorch's check and message
                raise RuntimeError(f"hook {getattr(hook, '__name__', repr(hook))!r} has changed "
                                   f"the size of value (from {wrapped.shape} to {new.shape}); "
                                   "a hook must return a gradient of the tensor's shape, or None.")
            wrapped = new
    return wrapped if create_graph else wrapped.data


def _run_tensor_hooks(node, grads, create_graph):
    """The hooks of the tensors whose gradient arrives at ``node`` (its outputs, or the
    leaf of an ``AccumulateGrad``), then retain_grad, in that order, as PyTorch runs them."""
    grads = list(grads)
    for nr, ref in node._hooked:
        t = ref()
        if t is None or grads[nr] is None:
            continue
        if t._hooks:
            grads[nr] = _call_hooks(t._hooks, grads[nr], create_graph)
        if t._retains_grad:
            g = grads[nr]
            if create_graph:
                g = g if type(g) is Tensor else Tensor._make(g)
                t._grad = g if t._grad is None else t._grad + g
            else:
                g = g.data if type(g) is Tensor else g
                t._grad = (Tensor._make(np.array(g, dtype=t.dtype))
                           if t._grad is None else Tensor._make(t._grad.data + g))
    return grads
