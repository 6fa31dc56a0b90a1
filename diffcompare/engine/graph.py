"""Look at the autograd graph behind a tensor: its nodes, size, saved tensors, a picture.

Answers "can I see the graph, or at least its size?" without any system binary:

- :func:`nodes` lists the backward nodes, :func:`summarize` counts them and the
  bytes their saved tensors hold, :func:`summary_text` prints that for a
  terminal and :func:`to_records` gives rows for ``pandas.DataFrame``;
- the pictures (DOT text, an SVG drawn in pure Python) are :mod:`diffcompare.viz.graph`'s,
  which draws PyTorch's graphs the same way.

>>> from diffcompare.engine import Tensor
>>> w = Tensor([2.], requires_grad=True)
>>> loss = (Tensor([1., 2.]) * w).mean()
>>> [n.name() for n in nodes(loss)]
['MeanBackward0', 'MulBackward0', 'AccumulateGrad']
>>> summarize(loss).total_saved_bytes
16
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..units import fmt_bytes

__all__ = ['nodes', 'SavedRow', 'GraphSummary', 'summarize', 'summary_text',
           'to_records']

# --------------------------------------------------------------------------- traversal


def _root(t):
    """The node to start from: ``t.grad_fn`` for a tensor, ``t`` itself for a node."""
    return t if hasattr(t, 'next_functions') else getattr(t, 'grad_fn', None)


def _children(node):
    """``(child, input_nr)`` pairs of ``node``, skipping inputs that need no grad."""
    return [(c, nr) for c, nr in getattr(node, 'next_functions', ()) if c is not None]


def _is_accumulate(node) -> bool:
    return node.name() == 'AccumulateGrad'


def _saved(node) -> dict:
    """``node.saved``, or ``{}`` for nodes that save nothing or were released."""
    return getattr(node, 'saved', None) or {}


def nodes(t) -> list:
    """Every node reachable from ``t.grad_fn``, once each, output first.

    The order is topological (a node comes after every node that points to it)
    and deterministic: Kahn's algorithm, visiting ``next_functions`` in order.
    ``t`` may also be a node. Returns ``[]`` when ``t`` has no ``grad_fn``.  It reads only
    ``grad_fn`` and ``next_functions``, so it walks PyTorch's graphs too: the one walk the
    drawings (:mod:`diffcompare.viz`), the seed examples and the studies share.

    >>> from diffcompare.engine import Tensor
    >>> a = Tensor([1., 2.], requires_grad=True)
    >>> [n.name() for n in nodes((a * a).sum())]
    ['SumBackward0', 'MulBackward0', 'AccumulateGrad']
    >>> nodes(a)
    []
    """
    root = _root(t)
    if root is None:
        return []
    indegree, stack = {id(root): 0}, [root]
    while stack:                              # count incoming edges of each node
        for child, _ in _children(stack.pop()):
            if id(child) not in indegree:
                indegree[id(child)] = 0
                stack.append(child)
            indegree[id(child)] += 1
    order = [root]
    for node in order:                        # ``order`` grows while we walk it
        for child, _ in _children(node):
            indegree[id(child)] -= 1
            if indegree[id(child)] == 0:
                order.append(child)
    return order


def _edges(order):
    """``(parent index, child index, input_nr)`` for every edge, in order."""
    index = {id(n): i for i, n in enumerate(order)}
    return [(i, index[id(c)], nr) for i, n in enumerate(order) for c, nr in _children(n)]


# --------------------------------------------------------------------------- summary


@dataclass(frozen=True)
class SavedRow:
    """One tensor saved for backward by one node."""

    node_index: int        # position of the node in :func:`nodes`
    node: str              # e.g. 'MulBackward0'
    name: str              # e.g. 'other'
    shape: tuple
    dtype: str             # e.g. 'float64'
    nbytes: int
    is_output: bool        # the node's own result (PyTorch's ``_saved_result``)


@dataclass
class GraphSummary:
    """What :func:`summarize` counts. ``total_saved_bytes`` counts shared memory once."""

    node_count: int
    by_name: dict          # node name -> count, sorted by name
    leaves: int            # number of AccumulateGrad nodes
    edges: int             # non-None entries of all next_functions
    saved: list            # of SavedRow
    total_saved_bytes: int
    released_nodes: int    # nodes whose saved tensors backward() already freed


def _saved_items(order):
    """``(node index, node, saved name, SavedTensor)`` for every saved tensor."""
    return [(i, n, name, st) for i, n in enumerate(order) for name, st in _saved(n).items()]


def _distinct_nbytes(saved_tensors) -> int:
    """Bytes held by the saved tensors, each memory region counted once.

    Two saved tensors that are the same array, or views of the same bytes
    (same address, shape and strides), count once; different views of one
    buffer count at most that buffer's size. Released tensors count zero.
    """
    per_buffer = {}                 # root buffer id -> (buffer size, {region: nbytes})
    for st in saved_tensors:
        arr = getattr(st, 'data', None)
        if arr is None:
            continue
        if not isinstance(arr, np.ndarray):
            per_buffer[id(arr)] = (None, {id(arr): st.nbytes})
            continue
        root = arr
        while isinstance(root.base, np.ndarray):
            root = root.base
        owner = root.base if root.base is not None else root
        region = (arr.__array_interface__['data'][0], arr.shape, arr.strides, arr.dtype.str)
        per_buffer.setdefault(id(owner), (root.nbytes, {}))[1][region] = st.nbytes
    return sum(min(sum(r.values()), cap) if cap is not None else sum(r.values())
               for cap, r in per_buffer.values())


def summarize(t) -> GraphSummary:
    """Count the nodes, edges, leaves and saved bytes of ``t``'s graph.

    >>> from diffcompare.engine import Tensor
    >>> w = Tensor([2.], requires_grad=True)
    >>> s = summarize((Tensor([1., 2.]) * w).mean())
    >>> s.node_count, s.leaves, s.edges, s.total_saved_bytes
    (3, 1, 2, 16)
    >>> s.by_name
    {'AccumulateGrad': 1, 'MeanBackward0': 1, 'MulBackward0': 1}
    """
    return _summarize(nodes(t))


def _summarize(order) -> GraphSummary:
    items = _saved_items(order)
    rows = [SavedRow(i, n.name(), name, tuple(st.shape), str(np.dtype(st.dtype)),
                     int(st.nbytes), bool(getattr(st, 'is_output', False)))
            for i, n, name, st in items]
    counts = Counter(n.name() for n in order)
    return GraphSummary(
        node_count=len(order),
        by_name=dict(sorted(counts.items())),
        leaves=sum(1 for n in order if _is_accumulate(n)),
        edges=len(_edges(order)),
        saved=rows,
        total_saved_bytes=_distinct_nbytes(st for *_, st in items),
        released_nodes=sum(1 for n in order if getattr(n, 'released', False)))


def _shape(shape) -> str:
    return str(tuple(shape))


def _name_lookup(names) -> dict:
    """``names`` maps a tensor or ``id(tensor)`` to a label; return ``{id: label}``."""
    return {k if isinstance(k, int) else id(k): str(v) for k, v in (names or {}).items()}


def _next_text(node, index) -> str:
    parts = []
    for child, nr in getattr(node, 'next_functions', ()):
        if child is None:
            parts.append('-')
        else:
            many = getattr(child, 'num_outputs', 1) > 1
            parts.append(f'{index[id(child)]}:{nr}' if many else str(index[id(child)]))
    return ', '.join(parts)


def _count(n: int, word: str, plural: str = '') -> str:
    return f'{n} {word if n == 1 else plural or word + "s"}'


def _node_table(order, label) -> list:
    """Rows ``[#, name, next, note]``; a node with several notes takes several rows."""
    index = {id(n): i for i, n in enumerate(order)}
    table = []
    for i, n in enumerate(order):
        notes = [f'{name}: {_shape(st.shape)} {np.dtype(st.dtype)}, {fmt_bytes(st.nbytes)}'
                 for name, st in _saved(n).items()]
        if _is_accumulate(n):
            var = n.variable
            tag = f'leaf {label[id(var)]}' if id(var) in label else 'leaf'
            notes.append(f'{tag}: {_shape(var.shape)} {np.dtype(var.dtype)}')
        if getattr(n, 'released', False):
            notes.append('(released)')
        table.append([str(i), n.name(), _next_text(n, index), notes[0] if notes else ''])
        table += [['', '', '', note] for note in notes[1:]]
    return table


def summary_text(t, names: Mapping | None = None) -> str:
    """A table of ``t``'s graph for a terminal: nodes, their inputs, saved tensors, totals.

    The ``next`` column lists, for each input of the op, the node its gradient
    goes to (``-``: the input needs no grad; ``1:2``: output 2 of node 1).
    ``names`` maps a tensor (or its ``id``) to a label for the leaves.

    >>> from diffcompare.engine import Tensor
    >>> w = Tensor([2.], requires_grad=True)
    >>> print(summary_text((Tensor([1., 2.]) * w).mean(), names={w: 'w'}))
    graph of tensor () float64, grad_fn=MeanBackward0
     #  node            next  saved / leaf
     0  MeanBackward0   1
     1  MulBackward0    -, 2  self: (2,) float64, 16 B
     2  AccumulateGrad        leaf w: (1,) float64
    3 nodes (AccumulateGrad 1, MeanBackward0 1, MulBackward0 1), 2 edges, 1 leaf
    1 saved tensor holding 16 bytes (shared memory counted once)
    """
    head = f'graph of tensor {_shape(t.shape)} {np.dtype(t.dtype)}'
    order = nodes(t)
    if not order:
        return head + ': no grad_fn, so no graph (a leaf, or computed without grad)'
    table = _node_table(order, _name_lookup(names))
    widths = [max(len(r[c]) for r in table + [['#', 'node', 'next']]) for c in range(3)]
    fmt = ' {:>%d}  {:<%d}  {:<%d}  {}' % tuple(widths)
    lines = [f'{head}, grad_fn={order[0].name()}', fmt.format('#', 'node', 'next', 'saved / leaf')]
    lines += [fmt.format(*row).rstrip() for row in table]
    s = _summarize(order)
    kinds = ', '.join(f'{k} {v}' for k, v in s.by_name.items())
    lines.append(f"{_count(s.node_count, 'node')} ({kinds}), {_count(s.edges, 'edge')}, "
                 f"{_count(s.leaves, 'leaf', 'leaves')}")
    lines.append(f"{_count(len(s.saved), 'saved tensor')} holding {s.total_saved_bytes} bytes "
                 '(shared memory counted once)')
    if s.released_nodes:
        lines.append(f"{_count(s.released_nodes, 'node')} released by backward(): saved "
                     'tensors freed (pass retain_graph=True to keep them)')
    return '\n'.join(lines)


def to_records(t) -> list[dict]:
    """One dict per node, ready for ``pandas.DataFrame(to_records(t))``.

    Keys: ``id`` (position in :func:`nodes`), ``name``, ``num_outputs``,
    ``next`` (list of ``(id, input_nr)``, ``None`` for inputs without grad),
    ``saved`` (``{name: (shape, dtype, nbytes)}``) and ``saved_bytes``.

    >>> from diffcompare.engine import Tensor
    >>> w = Tensor([2.], requires_grad=True)
    >>> to_records((Tensor([1., 2.]) * w).mean())[1]
    {'id': 1, 'name': 'MulBackward0', 'num_outputs': 1, 'next': [None, (2, 0)], \
'saved': {'self': ((2,), 'float64', 16)}, 'saved_bytes': 16}
    """
    order = nodes(t)
    index = {id(n): i for i, n in enumerate(order)}
    records = []
    for i, n in enumerate(order):
        saved = {name: (tuple(st.shape), str(np.dtype(st.dtype)), int(st.nbytes))
                 for name, st in _saved(n).items()}
        records.append({
            'id': i, 'name': n.name(), 'num_outputs': getattr(n, 'num_outputs', 1),
            'next': [None if c is None else (index[id(c)], nr)
                     for c, nr in getattr(n, 'next_functions', ())],
            'saved': saved, 'saved_bytes': sum(v[2] for v in saved.values())})
    return records
