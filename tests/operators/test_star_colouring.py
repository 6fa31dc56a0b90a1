"""Star colouring of Hessian patterns: known answers, the star property, direct recovery."""
import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse", reason="sparse Hessians need scipy (the `sparse` extra)")
pytest.importorskip("networkx", reason="colouring orderings use networkx (the `sparse` extra)")

from diffcompare.engine import array_api, functional as F  # noqa: E402
from diffcompare.operators.coloured import hessian_forward_over_reverse  # noqa: E402
from diffcompare.operators.colouring import (STAR_ORDERINGS, colour_hessian,  # noqa: E402
                                              is_star_colouring)
from diffcompare.operators.sparsity import hessian_pattern  # noqa: E402


def banded(n, half):
    i, j = np.indices((n, n))
    return sp.csr_array(np.abs(i - j) <= half)


def arrowhead(n):
    m = np.eye(n, dtype=bool)
    m[0, :] = m[:, 0] = True
    return sp.csr_array(m)


def random_symmetric(n, density, seed):
    a = np.random.default_rng(seed).random((n, n)) < density
    return sp.csr_array(a | a.T | np.eye(n, dtype=bool))


@pytest.mark.parametrize("n", [5, 40])
def test_arrowhead_takes_two_star_colours_against_n_column_colours(n):
    star = colour_hessian(arrowhead(n), kind="star")
    column = colour_hessian(arrowhead(n), kind="column")
    assert (star.kind, star.n_colours, star.lower_bound) == ("star", 2, 2)
    assert (column.kind, column.n_colours) == ("symmetric-column", n)
    assert star.colours[0] != star.colours[1] and len(set(star.colours[1:])) == 1
    assert colour_hessian(arrowhead(n)).kind == "star"              # auto: fewer colours


def test_tridiagonal_takes_three_and_auto_keeps_column_on_a_tie():
    star = colour_hessian(banded(12, 1), kind="star", ordering="natural")
    assert star.colours.tolist() == [0, 1, 0, 2, 0, 1, 0, 2, 0, 1, 0, 2]
    assert star.n_colours == 3                 # a path of 4 vertices needs 3 star colours
    assert colour_hessian(banded(12, 1), kind="column").n_colours == 3
    assert colour_hessian(banded(12, 1)).kind == "symmetric-column"


def test_pentadiagonal_star_beats_column():
    star = colour_hessian(banded(30, 2), kind="star")
    assert colour_hessian(banded(30, 2), kind="column").n_colours == 5
    assert is_star_colouring(banded(30, 2), star.colours)
    assert 3 <= star.n_colours <= 5


def test_diagonal_and_empty():
    assert colour_hessian(sp.eye_array(4, format="csr"), kind="star").n_colours == 1
    empty = colour_hessian(sp.csr_array((3, 3), dtype=bool), kind="star")
    assert (empty.n_colours, empty.lower_bound) == (1, 0)   # every vertex takes colour 0


@pytest.mark.parametrize("ordering", STAR_ORDERINGS)
@pytest.mark.parametrize("seed", range(4))
def test_star_property_on_random_patterns(seed, ordering):
    m = random_symmetric(25, 0.12, seed)
    c = colour_hessian(m, ordering=ordering, kind="star")
    assert is_star_colouring(m, c.colours)
    assert c.n_colours <= colour_hessian(m, ordering="largest_first", kind="column").n_colours + 2


def test_the_checker_rejects_a_two_coloured_path():
    path = banded(4, 1)
    assert not is_star_colouring(path, [0, 1, 0, 1])       # distance-2 proper, not star
    assert not is_star_colouring(path, [0, 0, 1, 2])       # neighbours share a colour
    assert is_star_colouring(path, [0, 1, 0, 2])


def test_unknown_kind_and_dynamic_ordering_are_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        colour_hessian(banded(4, 1), kind="acyclic")
    with pytest.raises(ValueError, match="fixed vertex order"):
        colour_hessian(banded(4, 1), ordering="saturation_largest_first", kind="star")
    # auto with a dynamic ordering: column colouring only
    assert colour_hessian(banded(6, 2), ordering="saturation_largest_first").kind == \
        "symmetric-column"


def test_recovery_refuses_a_colouring_that_is_not_star():
    import dataclasses

    path = banded(4, 1)
    star = colour_hessian(path, kind="star")
    fake = dataclasses.replace(star, colours=np.array([0, 1, 0, 1]), n_colours=2)
    with pytest.raises(ValueError, match="not a star colouring"):
        hessian_forward_over_reverse(lambda v: path.toarray() @ v, path, fake)


# --- recovered Hessians against the dense reverse-mode Hessian ---------------------------

def _random_sparse_hessian_fn(n, seed):
    """Σ over random pairs (i, j) of c sin(x_i x_j + d) plus a random arrowhead hub:
    a nonlinear function whose Hessian's pattern is the pairs' (and the diagonal)."""
    rng = np.random.default_rng(seed)
    k = 2 * n
    i, j = rng.integers(0, n, k), rng.integers(0, n, k)
    c, d = rng.standard_normal(k), rng.standard_normal(k)
    hub = int(rng.integers(0, n))

    def fn(xp, x):
        return (xp.sum(c * xp.sin(x[i] * x[j] + d)) + xp.sum(xp.exp(0.1 * x[hub] * x))
                + xp.sum(x ** 4))

    return fn


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("kind", ["star", "column"])
def test_recovered_hessian_equals_dense_reverse_mode(seed, kind):
    n = 24
    fn = _random_sparse_hessian_fn(n, seed)
    x = np.random.default_rng([seed, 1]).standard_normal(n)
    pattern = hessian_pattern(fn, (x,))
    colouring = colour_hessian(pattern, kind=kind)
    scalar = lambda t: fn(array_api, t)      # noqa: E731
    r = hessian_forward_over_reverse(lambda v: F.hvp(scalar, x, v)[1], pattern, colouring)
    dense = F.hessian(scalar, x)
    assert r.passes == colouring.n_colours
    np.testing.assert_allclose(r.matrix.toarray(), dense, rtol=0, atol=1e-12)
    if kind == "star":
        assert is_star_colouring(pattern, colouring.colours)
        assert colouring.n_colours < colour_hessian(pattern, kind="column").n_colours
