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
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.sparse as sp

__all__ = ["Colouring", "colour_columns", "colour_rows", "colour_hessian", "compare_orderings",
           "ORDERINGS"]

#: networkx strategies compared by ``compare_orderings``
ORDERINGS = ("largest_first", "smallest_last", "independent_set", "connected_sequential_bfs",
             "saturation_largest_first", "random_sequential")


@dataclasses.dataclass(frozen=True)
class Colouring:
    """``colours[j]``: the colour of column (row, for ``kind="row"``) j; ``n_colours``;
    ``lower_bound``: the most nonzeros in one row (column) of the pattern, which any
    colouring of this kind needs; ``ordering``: the greedy order; ``kind``: ``"column"``,
    ``"row"`` or ``"symmetric-column"`` (see ``colour_hessian``); ``seconds``."""

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


def colour_hessian(pattern, ordering: str = "largest_first") -> Colouring:
    """A colouring for a symmetric (Hessian) pattern: *column* colouring of the symmetric
    pattern (distance-2 colouring of its adjacency graph), not star colouring.

    Star colouring would use symmetry to need fewer colours (each off-diagonal entry read
    from whichever of ``H[i, j]`` and ``H[j, i]`` is recoverable); column colouring needs no
    symmetric decompression: every nonzero comes directly from one Hessian-vector product.
    """
    m = _matrix(pattern)
    m = sp.csr_array((m + m.T).astype(bool))
    return _colour(m, ordering, "symmetric-column")


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


def _networkx_greedy(graph, ordering):
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(range(graph.shape[0]))
    coo = sp.triu(graph, k=1).tocoo()
    g.add_edges_from(zip(coo.row.tolist(), coo.col.tolist()))
    kwargs = {"seed": 0} if ordering == "random_sequential" else {}
    strategy = ordering
    if ordering == "random_sequential":
        strategy = lambda G, colors: nx.algorithms.coloring.strategy_random_sequential(  # noqa: E731
            G, colors, seed=0)
        kwargs = {}
    found = nx.greedy_color(g, strategy=strategy, **kwargs)
    return np.array([found[v] for v in range(graph.shape[0])], dtype=np.int64)
