"""Draw a small directed acyclic graph of text boxes as SVG, in pure Python.

Used by :func:`diffcompare.viz.graph.to_svg` (the engine's and PyTorch's graphs) so
that drawing a graph needs no Graphviz binary. :func:`layered_layout` is a layered ("Sugiyama-style")
layout; the steps are the textbook ones, kept simple:

1. layer = longest path to a sink (the output tensor is the only sink, layer 0);
   sources end up in the highest layer, drawn at the top;
2. an edge spanning several layers gets one invisible "dummy" vertex per
   layer crossed, so it is routed between the boxes instead of through them;
3. the order inside each layer comes from a few barycenter sweeps, keeping the
   order with the fewest crossings;
4. x positions: each vertex is pulled towards the mean x of its neighbours
   (boxes with a single neighbour, like saved tensors, pull less), subject to
   "no overlap, keep the order" (solved exactly by isotonic regression);
5. each edge becomes a list of points: its source's bottom, the dummies, its
   target's top. Ports are spread along a box's side so arrows do not pile up.

:func:`render_svg` sizes boxes to their text, lays them out and writes the SVG.
Nothing here knows about autograd.

>>> lay = layered_layout({'a': (40, 20), 'b': (40, 20), 'c': (60, 20)},
...                      [('a', 'c'), ('b', 'c')])
>>> lay.centers['a'][1] < lay.centers['c'][1]  # sources above the sink
True
>>> len(lay.routes), lay.routes[0][0][1] == lay.centers['a'][1] + 10
(2, True)
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Hashable, Mapping, Sequence

Point = tuple[float, float]

H_GAP = 24.0       # horizontal space between neighbouring boxes
V_GAP = 48.0       # vertical space between layers (room for curves and labels)
MARGIN = 16.0
DUMMY_WIDTH = 8.0  # a long edge passing through a layer takes this much room
SWEEPS = 8         # barycenter ordering passes (each one down and up)
X_PASSES = 40      # x-positioning passes
PENDANT_WEIGHT = 0.2  # how hard a box with a single neighbour pulls on it


@dataclass(frozen=True)
class _Dummy:
    """The point where edge number ``edge`` crosses layer ``layer``."""

    edge: int
    layer: int


@dataclass
class Layout:
    """Result of :func:`layered_layout`.

    ``centers`` maps each key to the centre of its box, ``routes[i]`` is the
    polyline of ``edges[i]`` from its source's bottom side to its target's top
    side, and ``width``/``height`` is the size of the whole drawing.
    """

    centers: dict[Hashable, Point]
    routes: list[list[Point]]
    width: float
    height: float


def layered_layout(sizes: Mapping[Hashable, tuple[float, float]],
                   edges: Sequence[tuple[Hashable, Hashable]]) -> Layout:
    """Lay out boxes ``sizes[key] = (width, height)`` joined by ``edges``.

    Every edge must point downwards in the result, so the graph must be acyclic.
    The result depends only on the insertion order of ``sizes`` and ``edges``.
    """
    layer = _layers(list(sizes), edges)
    size = {k: (float(w), float(h)) for k, (w, h) in sizes.items()}
    chains = []                      # per edge: vertices from source to target
    for i, (src, dst) in enumerate(edges):
        chain = [src]
        for lv in range(layer[src] - 1, layer[dst], -1):
            dummy = _Dummy(i, lv)
            layer[dummy] = lv
            size[dummy] = (DUMMY_WIDTH, 0.0)
            chain.append(dummy)
        chains.append(chain + [dst])
    up, down = _adjacency(size, chains)
    rows = _order(_initial_rows(layer, up, list(sizes)), up, down)
    xs = _x_positions(rows, size, up, down)
    ys, row_height = _y_positions(rows, size)
    centers = {v: (xs[v], ys[v]) for v in size}
    routes = _routes(chains, centers, size, row_height)
    width = max((xs[v] + size[v][0] / 2 for v in size), default=0.0) + MARGIN
    height = max((ys[v] + size[v][1] / 2 for v in size), default=0.0) + MARGIN
    return Layout({k: centers[k] for k in sizes}, routes, width, height)


def _layers(keys, edges):
    """Longest path from each vertex to a sink, computed without recursion."""
    succ = {k: [] for k in keys}
    indeg = {k: 0 for k in keys}
    for src, dst in edges:
        succ[src].append(dst)
        indeg[dst] += 1
    topo = [k for k in keys if indeg[k] == 0]
    for k in topo:                   # Kahn's algorithm; ``topo`` grows as we go
        for d in succ[k]:
            indeg[d] -= 1
            if indeg[d] == 0:
                topo.append(d)
    if len(topo) != len(keys):
        raise ValueError('graph has a cycle')
    layer = {}
    for k in reversed(topo):
        layer[k] = max((layer[d] + 1 for d in succ[k]), default=0)
    return layer


def _adjacency(size, chains):
    """Neighbours one layer up (``up``) and one layer down (``down``)."""
    up = {v: [] for v in size}
    down = {v: [] for v in size}
    for chain in chains:
        for a, b in zip(chain, chain[1:]):
            down[a].append(b)
            up[b].append(a)
    return up, down


def _initial_rows(layer, up, keys):
    """Rows (top layer first) in depth-first order from the sinks upwards."""
    seen, order = set(), []
    for root in keys:
        stack = [root]
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            order.append(v)
            stack.extend(reversed(up[v]))
    rows = [[] for _ in range(max(layer.values(), default=0) + 1)]
    for v in order:
        rows[layer[v]].append(v)
    return rows[::-1]


def _order(rows, up, down):
    """Barycenter sweeps; return the rows with the fewest crossings seen."""
    best, best_cross = [r[:] for r in rows], _crossings(rows, down)
    for _ in range(SWEEPS):
        if best_cross == 0:
            break
        for i in range(1, len(rows)):              # top to bottom
            rows[i] = _by_barycenter(rows[i], rows[i - 1], up)
        for i in range(len(rows) - 2, -1, -1):     # bottom to top
            rows[i] = _by_barycenter(rows[i], rows[i + 1], down)
        cross = _crossings(rows, down)
        if cross < best_cross:
            best, best_cross = [r[:] for r in rows], cross
    return best


def _by_barycenter(row, ref_row, neighbours):
    pos = {v: i for i, v in enumerate(ref_row)}
    scale = len(ref_row) / max(len(row), 1)   # keep unconnected vertices in place

    def key(item):
        i, v = item
        ps = [pos[n] for n in neighbours[v] if n in pos]
        return (sum(ps) / len(ps) if ps else i * scale, i)
    return [v for _, v in sorted(enumerate(row), key=key)]


def _crossings(rows, down):
    total = 0
    for upper, lower in zip(rows, rows[1:]):
        pos = {v: i for i, v in enumerate(lower)}
        segs = [(i, pos[d]) for i, v in enumerate(upper) for d in down[v]]
        total += sum(1 for j, (a, b) in enumerate(segs) for c, d in segs[j + 1:]
                     if (a - c) * (b - d) < 0)
    return total


def _x_positions(rows, size, up, down):
    xs = {}
    for row in rows:                                # start packed left to right
        x = 0.0
        for v in row:
            xs[v] = x + size[v][0] / 2
            x += size[v][0] + H_GAP
    for p in range(X_PASSES):
        order = rows if p % 2 == 0 else rows[::-1]
        for row in order:
            want = []
            for v in row:
                ns = up[v] + down[v]
                ws = [1.0 if len(up[n]) + len(down[n]) > 1 else PENDANT_WEIGHT for n in ns]
                want.append(sum(w * xs[n] for w, n in zip(ws, ns)) / sum(ws) if ns else xs[v])
            gaps = [(size[a][0] + size[b][0]) / 2 + H_GAP for a, b in zip(row, row[1:])]
            for v, x in zip(row, _pack(want, gaps)):
                xs[v] = x
    shift = MARGIN - min((xs[v] - size[v][0] / 2 for v in xs), default=0.0)
    return {v: x + shift for v, x in xs.items()}


def _pack(want, gaps):
    """Closest positions (least squares) to ``want`` with x[i+1] - x[i] >= gaps[i].

    Substituting y[i] = x[i] - offset[i] turns the constraint into "y is
    non-decreasing", i.e. isotonic regression, solved by pool-adjacent-violators.
    """
    offset = [0.0]
    for g in gaps:
        offset.append(offset[-1] + g)
    blocks = []                                      # [mean, count]
    for w, o in zip(want, offset):
        blocks.append([w - o, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, n2 = blocks.pop()
            m1, n1 = blocks.pop()
            blocks.append([(m1 * n1 + m2 * n2) / (n1 + n2), n1 + n2])
    ys = [m for m, n in blocks for _ in range(n)]
    return [y + o for y, o in zip(ys, offset)]


def _y_positions(rows, size):
    """Centre y of each vertex, and the height of the row it sits in."""
    ys, row_height, top = {}, {}, MARGIN
    for row in rows:
        h = max((size[v][1] for v in row), default=0.0)
        for v in row:
            ys[v], row_height[v] = top + h / 2, h
        top += h + V_GAP
    return ys, row_height


def _routes(chains, centers, size, row_height):
    """Polylines for each chain, with ports spread along the boxes' sides."""
    out_ports = _ports([(c[0], c[1], i) for i, c in enumerate(chains)], centers, size)
    in_ports = _ports([(c[-1], c[-2], i) for i, c in enumerate(chains)], centers, size)
    routes = []
    for i, chain in enumerate(chains):
        pts = [(out_ports[i], centers[chain[0]][1] + size[chain[0]][1] / 2)]
        for d in chain[1:-1]:
            x, y = centers[d]     # pass the whole row height straight down
            pts += [(x, y - row_height[d] / 2), (x, y + row_height[d] / 2)]
        pts.append((in_ports[i], centers[chain[-1]][1] - size[chain[-1]][1] / 2))
        routes.append(pts)
    return routes


def _ports(ends, centers, size):
    """x of each edge's end on box ``v``, in the order of the far ends' x."""
    by_box = {}
    for v, far, i in ends:
        by_box.setdefault(v, []).append((centers[far][0], i))
    ports = {}
    for v, items in by_box.items():
        items.sort()
        span = 0.8 * size[v][0] if len(items) > 1 else 0.0
        for j, (_, i) in enumerate(items):
            frac = j / (len(items) - 1) - 0.5 if len(items) > 1 else 0.0
            ports[i] = centers[v][0] + frac * span
    return ports


# --------------------------------------------------------------------------- SVG

FONT_FAMILY = 'DejaVu Sans, Arial, sans-serif'
FONT_SIZE, LINE_H, PAD_X, PAD_Y = 12, 15, 8, 5
EDGE_COLOR = '#555555'


@dataclass
class Box:
    """A box with centred lines of text; ``kind`` becomes the CSS class ``node-KIND``."""

    key: Hashable
    lines: list
    fill: str
    kind: str = 'box'
    tooltip: str = ''


@dataclass
class Edge:
    """``style``: 'arrow' (solid, arrowhead at ``dst``), 'line' or 'dashed' (no arrowhead).

    ``label`` is written next to the edge's start, at the source's side, or next
    to its arrowhead when the source has too many labelled edges to tell apart.
    """

    src: Hashable
    dst: Hashable
    label: str = ''
    style: str = 'arrow'


def render_svg(boxes: Sequence[Box], edges: Sequence[Edge], legend: Sequence = ()) -> str:
    """A standalone SVG document of ``boxes`` joined by ``edges``, laid out top-down.

    ``legend`` is a list of ``(fill, label)`` pairs drawn as a key under the graph
    (``fill`` None: a dashed line, the saved-tensor edge).

    >>> svg = render_svg([Box('a', ['x < 1'], '#ffffff'), Box('b', ['y'], '#dddddd')],
    ...                  [Edge('a', 'b', '0')], legend=[('#dddddd', 'op')])
    >>> svg.count('<rect'), 'x &lt; 1' in svg, 'class="legend"' in svg
    (4, True, True)
    """
    sizes = {b.key: _box_size(b.lines) for b in boxes}
    lay = layered_layout(sizes, [(e.src, e.dst) for e in edges])
    key_parts, key_w, key_h = _svg_legend(legend, lay.height, lay.width)
    width, height = max(lay.width, key_w), lay.height + key_h
    w, h = _f(width), _f(height)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'viewBox="0 0 {w} {h}" font-family="{FONT_FAMILY}" font-size="{FONT_SIZE}">',
             '<rect class="background" width="100%" height="100%" fill="#ffffff"/>']
    crowded = _crowded_sources(edges, lay.routes)
    for e, pts in zip(edges, lay.routes):
        parts += _svg_edge(e, pts, label_at_end=e.src in crowded)
    for b in boxes:
        parts += _svg_box(b, lay.centers[b.key], sizes[b.key])
    parts += key_parts
    parts.append('</svg>')
    return '\n'.join(parts) + '\n'


def _svg_legend(items, top: float, max_w: float) -> tuple[list, float, float]:
    """The key under the drawing: swatches and labels in rows no wider than the
    drawing (or 360 px for a narrow one). Returns (parts, width, height)."""
    if not items:
        return [], 0.0, 0.0
    limit = max(max_w, 360.0)
    placed, x, y = [], MARGIN, top + 4
    for fill, label in items:
        w = 18 + 6 + _text_width(label) + 14
        if x + w > limit - MARGIN and x > MARGIN:
            x, y = MARGIN, y + LINE_H + 6
        placed.append((x, y, fill, label))
        x += w
    width = max(x for x, *_ in placed) + max(_text_width(lbl) for *_, lbl in placed) + 40
    parts = ['<g class="legend">']
    for x, y, fill, label in placed:
        if fill is None:
            parts.append(f'<line x1="{_f(x)}" y1="{_f(y + 7)}" x2="{_f(x + 18)}" y2="{_f(y + 7)}" '
                         f'stroke="{EDGE_COLOR}" stroke-width="1.2" stroke-dasharray="4 3"/>')
        else:
            parts.append(f'<rect x="{_f(x)}" y="{_f(y)}" width="18" height="14" rx="3" '
                         f'fill="{html.escape(fill)}" stroke="#333333"/>')
        parts.append(f'<text x="{_f(x + 24)}" y="{_f(y + 11.5)}">{html.escape(label)}</text>')
    parts.append('</g>')
    return parts, min(width, limit), y + LINE_H + 6 + MARGIN - top


def _crowded_sources(edges, routes, min_gap: float = 14.0) -> set:
    """Sources whose labelled edges start closer than ``min_gap`` px to each other."""
    starts = {}
    for e, pts in zip(edges, routes):
        if e.label:
            starts.setdefault(e.src, []).append(pts[0][0])
    crowded = set()
    for src, xs in starts.items():
        xs.sort()
        if any(b - a < min_gap for a, b in zip(xs, xs[1:])):
            crowded.add(src)
    return crowded


def _text_width(s: str) -> float:
    """Rough width in px of ``s`` in DejaVu Sans at FONT_SIZE; errs on the wide side."""
    em = 0.0
    for ch in s:
        if ch in 'MWmw@%':
            em += 0.9
        elif ch.isupper() or ch.isdigit():
            em += 0.7
        elif ch in "ijlt.,:;|!()[]' ":
            em += 0.35
        else:
            em += 0.62
    return em * FONT_SIZE


def _box_size(lines) -> tuple[float, float]:
    return (max((_text_width(s) for s in lines), default=0.0) + 2 * PAD_X,
            max(len(lines), 1) * LINE_H + 2 * PAD_Y)


def _f(v: float) -> str:
    return f'{v:.1f}'


def _svg_edge(e: Edge, pts, label_at_end: bool = False) -> list:
    arrow = e.style == 'arrow'
    if arrow:                               # stop short of the arrowhead's tip
        pts = pts[:-1] + [(pts[-1][0], pts[-1][1] - 5)]
    d = [f'M{_f(pts[0][0])},{_f(pts[0][1])}']
    for (x1, y1), (x2, y2) in zip(pts, pts[1:]):   # vertical tangents at every point
        ym = (y1 + y2) / 2
        d.append(f'C{_f(x1)},{_f(ym)} {_f(x2)},{_f(ym)} {_f(x2)},{_f(y2)}')
    dash = ' stroke-dasharray="4 3"' if e.style == 'dashed' else ''
    out = [f'<path class="edge edge-{e.style}" d="{" ".join(d)}" fill="none" '
           f'stroke="{EDGE_COLOR}" stroke-width="1.2"{dash}/>']
    if arrow:
        x, y = pts[-1][0], pts[-1][1] + 5
        out.append(f'<polygon class="arrowhead" points="{_f(x)},{_f(y)} {_f(x - 4)},'
                   f'{_f(y - 8)} {_f(x + 4)},{_f(y - 8)}" fill="{EDGE_COLOR}"/>')
    if e.label:
        (x, y), dx, dy = (pts[-1], 5, -6) if label_at_end else (pts[0], 4, 13)
        x, y = x + dx, y + dy
        out.append(f'<text class="edge-label" x="{_f(x)}" y="{_f(y)}" font-size="12" '
                   f'fill="#000080">{html.escape(e.label)}</text>')
    return out


def _svg_box(b: Box, center: Point, size: tuple[float, float]) -> list:
    (cx, cy), (w, h) = center, size
    x, y = cx - w / 2, cy - h / 2
    out = [f'<g class="node node-{html.escape(b.kind)}" data-key="{html.escape(str(b.key))}">']
    if b.tooltip:
        out.append(f'<title>{html.escape(b.tooltip)}</title>')
    out.append(f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(w)}" height="{_f(h)}" rx="3" '
               f'fill="{html.escape(b.fill)}" stroke="#333333"/>')
    for k, line in enumerate(b.lines):
        out.append(f'<text x="{_f(cx)}" y="{_f(y + PAD_Y + k * LINE_H + 11.5)}" '
                   f'text-anchor="middle">{html.escape(line)}</text>')
    out.append('</g>')
    return out
