"""Colourings of sparsity patterns: which columns (or rows) one product can recover together.

Two columns may share a colour when they are *structurally orthogonal*: no row has a
nonzero in both.  Then ``J @ (sum of the colour's unit vectors)`` holds every nonzero of
those columns separately, and ``n_colours`` products give the whole Jacobian.  The columns'
intersection graph (an edge where two columns share a row) is coloured greedily; a row
with ``k`` nonzeros makes ``k`` columns pairwise adjacent, so ``k`` colours at least are
needed: ``lower_bound`` is the largest row count.

>>> import numpy as np, scipy.sparse as sp
>>> banded = sp.csr_array(np.tri(6, 6, 1, dtype=bool) & ~np.tri(6, 6, -2, dtype=bool))
>>> c = colour_columns(banded)
>>> c.n_colours, c.lower_bound, c.colours.tolist()
(3, 3, [1, 2, 0, 1, 2, 0])

The greedy colouring with ``largest_first`` or ``natural`` order runs on the intersection
graph's CSR arrays (it gives networkx's ``greedy_color`` colouring, and scales to patterns
with millions of columns); other orderings are networkx's ``greedy_color`` strategies on a
networkx graph built from it.

A Hessian is symmetric, which a *star colouring* of its adjacency graph uses (Gebremedhin,
Manne & Pothen 2005, "What color is your Jacobian?", distance-1.5 colouring): neighbours
differ, and every path on four vertices has at least three colours.  Then each nonzero
``H[i, j]`` is alone among row i's columns of colour ``colours[j]`` or alone among row j's of
colour ``colours[i]``, so it is read directly from one Hessian-vector product.  An arrowhead
(one dense row and column) needs n column colours but 2 star colours:

>>> arrow = np.eye(6, dtype=bool); arrow[0] = arrow[:, 0] = True
>>> colour_hessian(arrow, kind="column").n_colours, colour_hessian(arrow, kind="star").n_colours
(6, 2)
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.sparse as sp

__all__ = ["Colouring", "colour_columns", "colour_rows", "colour_hessian", "compare_orderings",
           "is_star_colouring", "ORDERINGS", "STAR_ORDERINGS", "HESSIAN_KINDS"]

#: networkx strategies compared by ``compare_orderings``
ORDERINGS = ("largest_first", "smallest_last", "independent_set", "connected_sequential_bfs",
             "saturation_largest_first", "random_sequential")
#: the vertex orders the star colouring takes (a fixed order: networkx's dynamic strategies,
#: which choose the next vertex from the colours so far, are column colouring's only)
STAR_ORDERINGS = ("largest_first", "natural", "smallest_last", "connected_sequential_bfs",
                  "random_sequential")
#: ``colour_hessian``'s kinds: ``auto`` takes whichever of the two needs fewer colours
HESSIAN_KINDS = ("auto", "star", "column")


@dataclasses.dataclass(frozen=True)
class Colouring:
    """``colours[j]``: the colour of column (row, for ``kind="row"``) j; ``n_colours``;
    ``lower_bound``: colours any colouring of this kind needs -- the most nonzeros in one
    row (column) of the pattern; for ``"star"``, 2 where the pattern has an off-diagonal
    entry (star colourings have no cheap tight bound: an arrowhead's dense row has n entries
    yet takes 2); ``ordering``: the greedy order; ``kind``: ``"column"``, ``"row"``,
    ``"symmetric-column"`` or ``"star"`` (see ``colour_hessian``); ``seconds``."""

    colours: np.ndarray
    n_colours: int
    lower_bound: int
    ordering: str
    kind: str
    seconds: float


def colour_columns(pattern, ordering: str = "largest_first") -> Colouring:
    """Greedy colouring of the pattern's columns (structurally orthogonal groups)."""
    return _colour(_matrix(pattern), ordering, "column")


def colour_rows(pattern, ordering: str = "largest_first") -> Colouring:
    """Greedy colouring of the pattern's rows: rows sharing no column share a colour (for
    reverse mode: one vector-Jacobian product per colour)."""
    return _colour(sp.csr_array(_matrix(pattern).T), ordering, "row")


def colour_hessian(pattern, ordering: str = "largest_first", kind: str = "auto") -> Colouring:
    """A colouring for a symmetric (Hessian) pattern, of ``kind``:

    - ``"column"``: column colouring of the symmetric pattern (distance-2 colouring of its
      adjacency graph): every nonzero read from one Hessian-vector product, row by row;
    - ``"star"``: greedy star colouring (distance-1.5; Gebremedhin, Manne & Pothen 2005,
      Algorithm StarColoringAlg1), which uses symmetry: each off-diagonal entry read from
      whichever of ``H[i, j]`` and ``H[j, i]`` its colour leaves alone in its row
      (``coloured.hessian_forward_over_reverse``); never more colours than the
      column colouring's bound on a path, far fewer on a dense row (an arrowhead: 2, not n);
    - ``"auto"``: both, the one with fewer colours (the column colouring on a tie: its
      recovery reads each entry where it is).

    ``ordering``: the greedy order; star colouring takes the fixed orders
    (``STAR_ORDERINGS``), so ``auto`` with a dynamic one is the column colouring."""
    if kind not in HESSIAN_KINDS:
        raise ValueError(f"kind must be one of {', '.join(HESSIAN_KINDS)}, got {kind!r}.")
    m = _matrix(pattern)
    m = sp.csr_array((m + m.T).astype(bool))
    if kind == "column" or (kind == "auto" and ordering not in STAR_ORDERINGS):
        return _colour(m, ordering, "symmetric-column")
    star = _star_colour(m, ordering)
    if kind == "star":
        return star
    column = _colour(m, ordering, "symmetric-column")
    return column if column.n_colours <= star.n_colours else star


def is_star_colouring(pattern, colours) -> bool:
    """Whether ``colours`` star-colour the symmetric pattern's adjacency graph: neighbours
    differ and no path on four vertices is two-coloured (checked path by path; for tests
    and small patterns)."""
    m = _matrix(pattern)
    graph = _adjacency(sp.csr_array((m + m.T).astype(bool)))
    colours = np.asarray(colours)
    adj = [graph.indices[graph.indptr[v]:graph.indptr[v + 1]].tolist()
           for v in range(graph.shape[0])]
    for a in range(len(adj)):
        for b in adj[a]:
            if colours[a] == colours[b]:
                return False
            for c in adj[b]:
                if c == a or colours[c] != colours[a]:
                    continue
                if any(d != b and colours[d] == colours[b] for d in adj[c]):
                    return False
    return True


def compare_orderings(pattern, orderings=ORDERINGS) -> dict:
    """``{ordering: n_colours}`` of the column colouring under several networkx strategies,
    plus ``"lower_bound"``."""
    m = _matrix(pattern)
    counts = {o: colour_columns(m, o).n_colours for o in orderings}
    counts["lower_bound"] = _lower_bound(m)
    return counts


# --- implementation ----------------------------------------------------------------------

def _matrix(pattern):
    m = getattr(pattern, "matrix", pattern)
    return sp.csr_array(m, dtype=bool)


def _lower_bound(m) -> int:
    return int(np.diff(m.indptr).max()) if m.shape[0] and m.nnz else 0


def _colour(m, ordering, kind):
    start = time.perf_counter()
    m.sum_duplicates()
    graph = _intersection_graph(m)
    if ordering in ("largest_first", "natural"):
        colours = _greedy(graph, ordering)
    else:
        colours = _networkx_greedy(graph, ordering)
    n = int(colours.max()) + 1 if colours.size else 0
    return Colouring(colours, n, _lower_bound(m), ordering, kind, time.perf_counter() - start)


def _star_colour(m, ordering):
    """Greedy star colouring of the symmetric pattern ``m``'s adjacency graph (StarColoringAlg1
    of Gebremedhin, Manne & Pothen 2005).  Vertex ``v`` in turn takes the smallest colour not
    forbidden: its coloured neighbours' colours; for each path ``v - w - x`` with ``x``
    coloured, ``x``'s colour when ``w`` is not yet coloured (so two coloured neighbours of an
    uncoloured vertex always differ, and no vertex can become the middle of a two-coloured
    path), or when ``x`` has a neighbour other than ``w`` of ``w``'s colour (that path would
    be ``v - w - x - y`` in two colours).  ``counts[x, c]``: ``x``'s coloured neighbours of
    colour ``c``, so the last test is ``counts[x, colour(w)] >= 2``."""
    start = time.perf_counter()
    if ordering not in STAR_ORDERINGS:
        raise ValueError(f"star colouring takes a fixed vertex order, one of "
                         f"{', '.join(STAR_ORDERINGS)}; got {ordering!r}.")
    graph = _adjacency(m)
    n = graph.shape[0]
    indptr, indices = graph.indptr, graph.indices
    colours = np.full(n, -1, dtype=np.int64)
    counts = np.zeros((n, 8), dtype=np.int32)
    for v in _order(graph, ordering):
        ws = indices[indptr[v]:indptr[v + 1]]
        cw = colours[ws]
        forbidden = [cw[cw >= 0]]
        lens = indptr[ws + 1] - indptr[ws]
        total = int(lens.sum())
        if total:
            offsets = np.repeat(indptr[ws] - (np.cumsum(lens) - lens), lens)
            xs = indices[np.arange(total) + offsets]
            w_of = np.repeat(cw, lens)
            keep = (xs != v) & (colours[xs] >= 0)
            xs, w_of = xs[keep], w_of[keep]
            open_w = w_of < 0
            forbidden.append(colours[xs[open_w]])
            xs, w_of = xs[~open_w], w_of[~open_w]
            forbidden.append(colours[xs[counts[xs, w_of] >= 2]])
        taken = np.concatenate(forbidden)
        free = np.ones(taken.size + 1, dtype=bool)
        free[taken[taken <= taken.size]] = False
        c = int(np.argmax(free))
        colours[v] = c
        if c >= counts.shape[1]:
            counts = np.concatenate([counts, np.zeros_like(counts)], axis=1)
        counts[ws, c] += 1
    n_colours = int(colours.max()) + 1 if n else 0
    bound = 2 if graph.nnz else int(m.nnz > 0)
    return Colouring(colours, n_colours, bound, ordering, "star", time.perf_counter() - start)


def _adjacency(m):
    """The symmetric pattern's graph: ``m`` without its diagonal (csr, sorted)."""
    g = sp.csr_array(m, dtype=bool, copy=True)
    g.setdiag(False)
    g.eliminate_zeros()
    g.sum_duplicates()
    g.sort_indices()
    return g


def _order(graph, ordering):
    """The vertices in ``ordering``: by degree, largest first, ties in index order
    (``largest_first``), in index order (``natural``), or a networkx strategy's order."""
    if ordering == "natural":
        return range(graph.shape[0])
    if ordering == "largest_first":
        return np.argsort(-np.diff(graph.indptr), kind="stable")
    import networkx as nx

    g = _networkx_graph(graph)
    strategy = getattr(nx.algorithms.coloring, f"strategy_{ordering}")
    kwargs = {"seed": 0} if ordering == "random_sequential" else {}
    return [int(v) for v in strategy(g, {}, **kwargs)]


def _intersection_graph(m):
    """Columns sharing a row: ``mᵀm`` without its diagonal (csr, structure only)."""
    c = sp.csr_array(m.T.astype(np.int8) @ m.astype(np.int8)).astype(bool)
    c.setdiag(False)
    c.eliminate_zeros()
    c.sort_indices()
    return c


def _greedy(graph, ordering):
    """Each vertex in turn takes the smallest colour no coloured neighbour has.

    ``largest_first`` visits by degree, largest first, ties in index order (networkx's
    ``strategy_largest_first`` on a graph whose nodes were added in index order)."""
    n = graph.shape[0]
    indptr, indices = graph.indptr, graph.indices
    degree = np.diff(indptr)
    order = np.argsort(-degree, kind="stable") if ordering == "largest_first" else range(n)
    colours = np.full(n, -1, dtype=np.int64)
    seen = np.full(int(degree.max(initial=0)) + 2, -1, dtype=np.int64)   # colour -> last vertex
    for v in order:
        used = colours[indices[indptr[v]:indptr[v + 1]]]
        seen[used[used >= 0]] = v
        colours[v] = int(np.argmax(seen != v))
    return colours


def _networkx_graph(graph):
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(range(graph.shape[0]))
    coo = sp.triu(graph, k=1).tocoo()
    g.add_edges_from(zip(coo.row.tolist(), coo.col.tolist()))
    return g


def _networkx_greedy(graph, ordering):
    import networkx as nx

    g = _networkx_graph(graph)
    kwargs = {"seed": 0} if ordering == "random_sequential" else {}
    strategy = ordering
    if ordering == "random_sequential":
        strategy = lambda G, colors: nx.algorithms.coloring.strategy_random_sequential(  # noqa: E731
            G, colors, seed=0)
        kwargs = {}
    found = nx.greedy_color(g, strategy=strategy, **kwargs)
    return np.array([found[v] for v in range(graph.shape[0])], dtype=np.int64)
