"""Draw an autograd graph, the engine's or PyTorch's, as DOT text or a pure-Python SVG.

The same drawer serves both libraries: a small *view* (:class:`EngineView`,
:class:`TorchView`) says how to read one library's nodes — their name, their
``next_functions``, the leaf behind an ``AccumulateGrad``, the tensors saved for
backward (the engine's ``node.saved``; torch's ``_saved_*`` attributes, walked as
torchviz does) — and everything else is shared, so the two drawings of the same code
can be compared box by box.

The drawings follow torchviz: arrows go in the forward direction (leaves on top, the
output at the bottom); the output tensor is green, backward nodes grey,
``AccumulateGrad`` nodes light blue under their leaf tensor, saved tensors orange and
attached with dashed lines, a key under every drawing.  A saved tensor is named by the
variable it came from (``self = x``) and shows its value when it has at most
:data:`SMALL` elements.  An edge leaving a node with several outputs (``unbind``) is
labelled with the output index it comes from.

>>> from diffcompare.engine import Tensor
>>> w = Tensor([2.], requires_grad=True)
>>> x = Tensor([1., 2.])
>>> svg = to_svg((x * w).mean(), names={w: 'w', x: 'x'})
>>> 'self = x' in svg and '[1, 2]' in svg and 'class="legend"' in svg
True
"""
from __future__ import annotations

import re
import shutil
import subprocess
from typing import Mapping

import numpy as np

from ..engine.graph import nodes
from .layout import FONT_FAMILY, Box, Edge, render_svg

__all__ = ['COLORS', 'SMALL', 'EngineView', 'TorchView', 'view_for', 'to_dot', 'to_svg',
           'render_with_graphviz']

COLORS = {'output': '#caff70', 'op': '#d3d3d3', 'accumulate': '#add8e6',
          'leaf': '#eef6ff', 'saved': '#ffa500'}
LEGEND = {'output': 'output tensor', 'op': 'backward node', 'accumulate': 'AccumulateGrad',
          'leaf': 'leaf tensor', 'saved': 'saved for backward'}
_SAVED_ORDER = {'_saved_self': 0, '_saved_other': 1}
SMALL = 4          # saved tensors with at most this many elements show their values


# --------------------------------------------------------------------------- views


class EngineView:
    """How to read :mod:`diffcompare.engine`'s graph."""

    library = 'engine'

    def name(self, node) -> str:
        return node.name()

    def next_functions(self, node):
        return getattr(node, 'next_functions', ())

    def num_outputs(self, node) -> int:
        return getattr(node, 'num_outputs', 1)

    def released(self, node) -> bool:
        return bool(getattr(node, 'released', False))

    def variable(self, node):
        return node.variable

    def saved(self, node) -> list:
        """``[(name, array, source tensor or None, is_output)]``."""
        items = getattr(node, 'saved', None) or {}
        # a saved output keeps no Tensor (that would be a cycle): the SavedTensor stands in,
        # matched to its variable by the array they share
        return [(k, st.data, st if getattr(st, 'tensor', None) is None else st.tensor,
                 bool(getattr(st, 'is_output', False)))
                for k, st in items.items() if getattr(st, 'data', None) is not None]

    def array(self, t):
        return np.asarray(t.data)

    def same(self, a, b) -> bool:
        return a is b or getattr(a, 'data', None) is getattr(b, 'data', False)


class TorchView:
    """How to read PyTorch's graph: ``grad_fn``, ``next_functions``, ``_saved_*`` tensors."""

    library = 'torch'

    def name(self, node) -> str:
        return node.name().replace('torch::autograd::', '')

    def next_functions(self, node):
        return getattr(node, 'next_functions', ())

    def num_outputs(self, node) -> int:
        return 1          # not exposed by torch; :func:`drawing` infers it from input_nr

    def released(self, node) -> bool:
        for attr in dir(node):
            if attr.startswith('_saved_'):
                try:
                    getattr(node, attr)
                except RuntimeError:        # "Trying to backward through the graph a second time"
                    return True
        return False

    def variable(self, node):
        return node.variable

    def saved(self, node) -> list:
        import torch

        out = []
        for attr in sorted((a for a in dir(node) if a.startswith('_saved_')),
                           key=lambda a: (_SAVED_ORDER.get(a, 9), a)):   # as the engine lists them
            try:
                value = getattr(node, attr)
            except RuntimeError:           # freed by backward()
                continue
            if isinstance(value, torch.Tensor):
                name = attr[len('_saved_'):]
                out.append((name, value.detach().numpy(), value, name == 'result'))
        return out

    def array(self, t):
        return t.detach().numpy()

    def same(self, a, b) -> bool:
        return a is b or (a.data_ptr() == b.data_ptr() and tuple(a.shape) == tuple(b.shape)
                          and a.dtype == b.dtype)


def view_for(t):
    """The view of ``t``'s library (a torch tensor or node gets :class:`TorchView`)."""
    mod = type(t).__module__ or ''
    return TorchView() if mod.startswith('torch') else EngineView()


# --------------------------------------------------------------------------- edges


def _children(view, node):
    return [(c, nr) for c, nr in view.next_functions(node) if c is not None]


def counts_text(t, view=None) -> str:
    """``'3 nodes (1 AccumulateGrad), 1 saved tensor(s), 16 bytes saved'`` for ``t``'s graph
    (engine or torch; every saved tensor counted, shared memory not merged)."""
    view = view or view_for(t)
    order = nodes(t)
    saved = [item for n in order for item in view.saved(n)]
    nbytes = sum(np.asarray(a).nbytes for _, a, _, _ in saved)
    leaves = sum(1 for n in order if view.name(n) == 'AccumulateGrad')
    return (f'{len(order)} nodes ({leaves} AccumulateGrad), {len(saved)} saved tensor(s), '
            f'{nbytes:,} bytes saved')


# --------------------------------------------------------------------------- drawing model


def _values(a) -> str:
    """A small array's values, 4 significant digits: ``[1, 2]``, ``3``."""
    a = np.asarray(a)
    if a.ndim == 0:
        return f'{a.item():.4g}'
    return '[' + ', '.join(f'{v:.4g}' for v in a.ravel()) + ']'


def _shape_text(a) -> str:
    a = np.asarray(a)
    return f'{tuple(a.shape)} {a.dtype}, {a.nbytes} B'


def _tensor_lines(view, t, names) -> list:
    label = label_of(view, t, names)
    a = view.array(t)
    text = _values(a) if a.size <= SMALL else f'{tuple(a.shape)}'
    return ([label] if label else []) + [text]


def label_of(view, t, names):
    for tensor, label in names:
        if t is None:
            break
        if isinstance(tensor, int) and not isinstance(tensor, bool):   # an id(tensor)
            if id(t) == tensor:
                return label
        elif view.same(t, tensor):
            return label
    return None


def name_pairs(names) -> list:
    """``names`` maps tensor (or its ``id``) -> label, or label -> tensor: a list of
    (tensor or id, label)."""
    out = []
    for k, v in (names or {}).items():
        out.append((v, k) if isinstance(k, str) else (k, str(v)))
    return out


def _saved_box(view, i, k, node, item, names) -> Box:
    name, arr, source, is_output = item
    label = label_of(view, source, names) if source is not None else None
    title = f'{name} = {label}' if label else name + (' (output)' if is_output else '')
    arr = np.asarray(arr)
    detail = _values(arr) if arr.size <= SMALL else _shape_text(arr)
    tooltip = f'{view.name(node)} saved {name}' + (f' (the tensor {label})' if label else '') \
        + f': {_shape_text(arr)}'
    return Box(f's{i}_{k}', [title, detail], COLORS['saved'], 'saved', tooltip)


def drawing(t, show_saved: bool = True, names: Mapping | None = None, view=None):
    """The boxes, edges and legend shared by :func:`to_dot` and :func:`to_svg`.

    Keys are 'out', 'n<i>' (node i of :func:`diffcompare.engine.graph.nodes`), 'leaf<i>' and 's<i>_<k>' (saved
    tensor k of node i): deterministic, never an ``id()``.
    """
    view = view or view_for(t)
    names = name_pairs(names)
    order = nodes(t)
    index = {id(n): i for i, n in enumerate(order)}
    multi = {id(c) for n in order for c, nr in _children(view, n) if nr > 0}
    if order and getattr(t, 'output_nr', 0):
        multi.add(id(order[0]))
    out_kind = 'output' if order or not getattr(t, 'requires_grad', False) else 'leaf'
    lines = _tensor_lines(view, t, names)
    boxes = [Box('out', lines, COLORS[out_kind], out_kind, f"output {' '.join(lines)}")]
    edges = []
    if order:
        many = view.num_outputs(order[0]) > 1 or id(order[0]) in multi
        edges.append(Edge('n0', 'out', str(getattr(t, 'output_nr', 0)) if many else ''))
    for i, node in enumerate(order):
        name = view.name(node)
        kind = 'accumulate' if name == 'AccumulateGrad' else 'op'
        extra = ['(released)'] if view.released(node) else []
        boxes.append(Box(f'n{i}', [name] + extra, COLORS[kind], kind, name))
        if kind == 'accumulate':
            var = view.variable(node)
            leaf_lines = _tensor_lines(view, var, names)
            boxes.append(Box(f'leaf{i}', leaf_lines, COLORS['leaf'], 'leaf',
                             f"leaf {' '.join(leaf_lines)}"))
            edges.append(Edge(f'leaf{i}', f'n{i}', style='line'))
        for k, item in enumerate(view.saved(node) if show_saved else ()):
            boxes.append(_saved_box(view, i, k, node, item, names))
            edges.append(Edge(f's{i}_{k}', f'n{i}', style='dashed'))
    for i, node in enumerate(order):
        for child, nr in _children(view, node):
            many = view.num_outputs(child) > 1 or id(child) in multi
            edges.append(Edge(f'n{index[id(child)]}', f'n{i}', str(nr) if many else ''))
    kinds = {b.kind for b in boxes}
    legend = [(COLORS[k], LEGEND[k]) for k in COLORS if k in kinds]
    if 'saved' in kinds:
        legend.append((None, 'saved by'))
    return boxes, edges, legend


# --------------------------------------------------------------------------- DOT


def _dot_str(s: str) -> str:
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n') + '"'


_DOT_EDGE_STYLE = {'arrow': [], 'line': ['dir=none'], 'dashed': ['dir=none', 'style=dashed']}


def to_dot(t, show_saved: bool = True, names: Mapping | None = None) -> str:
    r"""Graphviz DOT text for ``t``'s graph (an engine or a torch tensor).

    ``names`` maps a tensor to a label shown on its box and on what it saved.

    >>> from diffcompare.engine import Tensor
    >>> w = Tensor([2.], requires_grad=True)
    >>> dot = to_dot((Tensor([1., 2.]) * w).mean(), names={w: 'w'})
    >>> '"n1" [label="MulBackward0", fillcolor="#d3d3d3"]' in dot
    True
    >>> '"leaf2" [label="w\\n[2]", fillcolor="#eef6ff"]' in dot
    True
    """
    boxes, edges, _ = drawing(t, show_saved, names)
    lines = ['digraph autograd {',
             f'  node [shape=box, style=filled, fontname={_dot_str(FONT_FAMILY)}, '
             'fontsize=12, height=0.2];',
             f'  edge [fontname={_dot_str(FONT_FAMILY)}, fontsize=12, fontcolor="#000080"];']
    for b in boxes:
        lines.append(f'  {_dot_str(b.key)} [label={_dot_str(chr(10).join(b.lines))}, '
                     f'fillcolor={_dot_str(b.fill)}]')
    for e in edges:
        attrs = [f'label={_dot_str(e.label)}'] if e.label else []
        attrs += _DOT_EDGE_STYLE[e.style]
        tail = f' [{", ".join(attrs)}]' if attrs else ''
        lines.append(f'  {_dot_str(e.src)} -> {_dot_str(e.dst)}{tail}')
    lines.append('}')
    return '\n'.join(lines) + '\n'


def render_with_graphviz(dot: str, fmt: str = 'svg') -> bytes:
    """Render DOT text with the Graphviz ``dot`` program, if it is installed.

    Raises ``RuntimeError`` when ``dot`` is not on ``PATH`` (install Graphviz,
    e.g. ``apt-get install graphviz``, or use :func:`to_svg`, which needs nothing).
    """
    exe = shutil.which('dot')
    if exe is None:
        raise RuntimeError('the Graphviz "dot" program was not found on PATH: install '
                           'Graphviz (e.g. apt-get install graphviz) or use to_svg(), '
                           'which draws the graph without it')
    if not re.fullmatch(r'[A-Za-z0-9_:]+', fmt):
        raise ValueError(f'not a Graphviz output format: {fmt!r}')
    proc = subprocess.run([exe, f'-T{fmt}'], input=dot.encode(), capture_output=True)
    if proc.returncode != 0:
        raise RuntimeError(f'dot failed: {proc.stderr.decode(errors="replace").strip()}')
    return proc.stdout


# --------------------------------------------------------------------------- SVG


def to_svg(t, show_saved: bool = True, names: Mapping | None = None) -> str:
    """A self-contained SVG drawing of ``t``'s graph (engine or torch), in pure Python.

    No Graphviz needed. Each box is a ``<g class="node node-KIND">`` (KIND is
    output, op, accumulate, leaf or saved) with a ``<title>`` tooltip, and a key
    (``<g class="legend">``) explains the colours. The same graph always gives the
    same string.

    >>> from diffcompare.engine import Tensor
    >>> w = Tensor([2.], requires_grad=True)
    >>> svg = to_svg((Tensor([1., 2.]) * w).mean(), names={w: 'w'})
    >>> svg.startswith('<svg xmlns="http://www.w3.org/2000/svg"'), svg.count('<g class="node')
    (True, 6)
    """
    return render_svg(*drawing(t, show_saved, names))
