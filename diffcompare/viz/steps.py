"""A graph's forward and backward pass, one node at a time, recorded from a real backward.

:func:`record` runs ``root.backward`` once more (``retain_graph=True``) while watching every
node: on PyTorch through ``register_prehook``/``register_hook`` on the ``grad_fn`` nodes, on
the engine by wrapping each node's ``backward`` (and each ``AccumulateGrad``'s
``accumulate_from``) for the length of the pass.  Each node that runs gives one step: the
gradient flowing in, what the node saved (name, value when small, bytes, version), what it
sends along each of its ``next_functions``, and, for an ``AccumulateGrad``, what it adds to
the leaf's ``.grad``.  The forward steps are the nodes in the order they were made, each with
what it saved.  Every ``.grad`` the pass touches is put back afterwards, so recording leaves
the example as it was.  The report's stepper (``report/static/stepper.js``) only displays
these steps.

>>> from diffcompare.viz.libs import engine
>>> E = engine()
>>> a = E.torch.tensor(2.0, requires_grad=True); b = E.torch.tensor(3.0, requires_grad=True)
>>> s = record(a * b, E, {a: "a", b: "b"})
>>> [x["node"] for x in s["backward"]], s["backward"][0]["sends"][0]["value"], a.grad
(['MulBackward0', 'AccumulateGrad (b)', 'AccumulateGrad (a)'], '3', None)
"""
from __future__ import annotations

import numpy as np

SMALL = 16          # saved tensors and gradients with at most this many elements show values


def _fmt(value) -> str | None:
    from .values import fmt

    if value is None:
        return None
    if hasattr(value, "detach"):               # a torch tensor
        value = value.detach().numpy()
    elif hasattr(value, "data") and not isinstance(value, np.ndarray):   # an engine Tensor
        value = value.data
    return fmt(np.asarray(value))


def _sequence_nr(node) -> int:
    nr = getattr(node, "_sequence_nr", None)
    if callable(nr):                            # torch
        return nr()
    return getattr(node, "sequence_nr", -1)


def _labels(nodes, view, names) -> dict:
    """node id -> a label a reader can find in the drawing: ``MulBackward0 (e)``."""
    out = {}
    pairs = list(names.items())
    for node in nodes:
        base = view.name(node)
        if base == "AccumulateGrad":
            var = view.variable(node)
            label = next((lb for t, lb in pairs if view.same(t, var)), None)
        else:
            made = [lb for t, lb in pairs if getattr(t, "grad_fn", None) is node]
            label = ", ".join(dict.fromkeys(made)) or None      # unbind: (b, c, d)
        out[id(node)] = f"{base} ({label})" if label else base
    seen = {}
    for node in sorted(nodes, key=_sequence_nr):        # the same name twice: number them
        lb = out[id(node)]
        seen[lb] = seen.get(lb, 0) + 1
        if seen[lb] > 1:
            out[id(node)] = f"{lb} #{seen[lb]}"
    return out


def _saved(node, view) -> list:
    out = []
    engine_saved = getattr(node, "saved", None)
    for name, arr, source, _ in view.saved(node):
        arr = np.asarray(arr)
        st = engine_saved.get(name) if isinstance(engine_saved, dict) else None
        version = getattr(st, "version", None) if st is not None else getattr(source, "_version", None)
        out.append({"name": name, "shape": list(arr.shape), "dtype": str(arr.dtype),
                    "bytes": int(arr.nbytes), "version": version,
                    "value": _fmt(arr) if arr.size <= SMALL else None})
    return out


def record(root, lib, names: dict, gradient=None) -> dict:
    """The steps of ``root``'s graph on ``lib`` (a :class:`~diffcompare.viz.libs.Lib`):
    ``{"forward": [...], "backward": [...], "gradient": text}``.  ``gradient`` is what
    ``backward`` starts from; a non-scalar ``root`` needs one (as ``backward`` does)."""
    view = lib.view
    if root.grad_fn is None:
        raise ValueError("record() needs a tensor made by an operation (it has no grad_fn); "
                         "pass the result of the computation, not a leaf.")
    if gradient is None and int(np.prod(root.shape)) != 1:
        raise ValueError(f"record() of a non-scalar tensor (shape {tuple(root.shape)}) needs "
                         "gradient=, the vector backward(gradient) starts from.")
    from ..engine.graph import nodes as graph_nodes

    nodes = graph_nodes(root)
    labels = _labels(nodes, view, names)
    # each node's box in the drawing (viz.graph.drawing's key n<i>, i its place in nodes)
    keys = {id(n): f"n{i}" for i, n in enumerate(nodes)}
    forward = []
    for node in sorted(nodes, key=_sequence_nr):
        name = view.name(node)
        if name == "AccumulateGrad":
            continue
        forward.append({"node": labels[id(node)], "key": keys.get(id(node)), "saved": _saved(node, view),
                        "next": [labels[id(n)] if n is not None else None
                                 for n, _ in view.next_functions(node)]})
    backward = []
    # every .grad this pass may change, to put back afterwards
    watched = {id(t): t for t in names}
    for node in nodes:
        if view.name(node) == "AccumulateGrad":
            watched.setdefault(id(view.variable(node)), view.variable(node))
    before = {k: _grad(t) for k, t in watched.items()}
    for t in watched.values():              # the pass starts from no .grad, as a first backward
        _set_grad(t, None, lib.name)
    try:
        if lib.name == "torch":
            _run_torch(root, nodes, view, labels, gradient, backward)
        else:
            _run_engine(root, nodes, view, labels, gradient, backward)
        for step in backward:
            step["key"] = keys.get(step.pop("_id"))
    finally:
        for k, t in watched.items():
            _set_grad(t, before[k], lib.name)
    return {"forward": forward, "backward": backward,
            "gradient": _fmt(gradient) if gradient is not None else "1"}


def _grad(t):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = t.grad
    return None if g is None else g.clone() if hasattr(g, "clone") else g


def _set_grad(t, g, library):
    if library == "engine":                    # the engine: non-leaves' retained grads too
        t._grad = g
    else:
        t.grad = g


def _step(node, view, labels, incoming, sends, accumulated=None):
    step = {"node": labels[id(node)], "_id": id(node), "incoming": [_fmt(g) for g in incoming],
            "saved": _saved(node, view), "sends": [], "accumulate": None}
    for (nxt, nr), g in zip(view.next_functions(node), sends):
        step["sends"].append({"to": labels[id(nxt)] if nxt is not None else None, "nr": nr,
                              "value": _fmt(g)})
    if accumulated is not None:
        var, adds, after = accumulated
        step["accumulate"] = {"variable": labels[id(node)].partition(" (")[2].rstrip(")") or "leaf",
                              "adds": _fmt(adds), "grad": _fmt(after)}
    return step


def _run_torch(root, nodes, view, labels, gradient, steps):
    handles, pending = [], {}

    def pre(node):
        def hook(grad_outputs):
            pending[id(node)] = (len(steps), grad_outputs)
            steps.append(None)                      # its place in the order of execution
        return hook

    def post(node):
        def hook(grad_inputs, grad_outputs):
            k, incoming = pending.pop(id(node))
            if view.name(node) == "AccumulateGrad":
                var = view.variable(node)
                # the hook runs once the gradient is in .grad
                steps[k] = _step(node, view, labels, incoming, (), (var, incoming[0], var.grad))
            else:
                steps[k] = _step(node, view, labels, incoming, grad_inputs)
        return hook

    for node in nodes:
        handles.append(node.register_prehook(pre(node)))
        handles.append(node.register_hook(post(node)))
    try:
        root.backward(gradient, retain_graph=True)
    finally:
        for h in handles:
            h.remove()
    steps[:] = [s for s in steps if s is not None]


def _run_engine(root, nodes, view, labels, gradient, steps):
    from ..engine.autograd import sum_back

    wrapped = []

    def wrap_op(node):
        original = node.backward

        def backward(*grads):
            out = original(*grads)
            sends = out if type(out) is tuple else (out,)
            if type(out) is tuple and getattr(node, "_input_shapes", None) is not None:
                sends = sum_back(node, out)
            steps.append(_step(node, view, labels, grads, sends))
            return out
        node.backward = backward
        wrapped.append((node, "backward"))

    def wrap_acc(node):
        original = node.accumulate_from

        def accumulate_from(grads, create_graph):
            adds = grads[0]
            adds = adds.data if hasattr(adds, "data") and not isinstance(adds, np.ndarray) else adds
            adds = np.array(adds)                 # a copy: accumulate may reuse the array
            original(grads, create_graph)
            var = node.variable
            steps.append(_step(node, view, labels, (adds,), (), (var, adds, var.grad)))
        node.accumulate_from = accumulate_from
        wrapped.append((node, "accumulate_from"))

    for node in nodes:
        (wrap_acc if view.name(node) == "AccumulateGrad" else wrap_op)(node)
    try:
        root.backward(gradient, retain_graph=True)
    finally:
        for node, attr in wrapped:
            delattr(node, attr)
