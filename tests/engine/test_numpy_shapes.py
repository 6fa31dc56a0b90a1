"""NumPy's shape functions, sorting and indexing on the engine (issue 19).

Each case goes through ``opcheck.check``: value, VJP, second-order VJP (create_graph), JVP
and the compiled gradient against PyTorch, or JAX where torch lacks the function (rollaxis,
append, pad's modes, select, NumPy's split, linspace of arrays).  Ties are tested for sort
(stable, as ``torch.sort(stable=True)``), repeated indices for take / repeat / pad.
"""
import numpy as np
import pytest
import torch

import diffcompare.engine as E
from diffcompare.engine import Tensor, array_api as xp

from opcheck import BROADCAST_SHAPES, check, rng


def normal(shape, key=0):
    return rng("shapes", key).standard_normal(shape)


def _jnp():
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    return jnp


# --- moving axes, ravel, flatten, atleast ---------------------------------------------------

@pytest.mark.parametrize("shape,src,dst", [((2, 3, 4), 0, -1), ((2, 3, 4), (0, 1), (2, 0)),
                                           ((1, 3), 1, 0), ((0, 2, 3), -1, 0)])
def test_moveaxis(shape, src, dst):
    check(lambda a: E.moveaxis(a, src, dst), lambda a: torch.moveaxis(a, src, dst), [normal(shape, 1)])


@pytest.mark.parametrize("shape,axis,start", [((2, 3, 4), 2, 0), ((2, 3, 4), 0, 3), ((2, 3, 4), 1, 1),
                                              ((2, 1, 4), -1, 1)])
def test_rollaxis(shape, axis, start):
    ref_order = _rollaxis_order(len(shape), axis, start)
    check(lambda a: E.rollaxis(a, axis, start), lambda a: a.permute(ref_order), [normal(shape, 2)])


def _rollaxis_order(ndim, axis, start):
    """The permutation np.rollaxis applies, read off an array whose axes all differ in length."""
    probe = np.empty(tuple(range(2, ndim + 2)))
    return [s - 2 for s in np.rollaxis(probe, axis, start).shape]


@pytest.mark.parametrize("shape", [(2, 3, 4), (5,), (), (0, 3)])
def test_ravel_and_flatten(shape):
    check(E.ravel, torch.ravel, [normal(shape, 3)])
    if len(shape) == 3:
        check(lambda a: a.flatten(1), lambda a: a.flatten(1), [normal(shape, 3)])
        check(lambda a: a.flatten(0, 1), lambda a: a.flatten(0, 1), [normal(shape, 3)])


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4)])
def test_atleast(n, shape):
    name = f"atleast_{n}d"
    check(getattr(E, name), getattr(torch, name), [normal(shape, 4)])


def test_atleast_of_several_gives_a_list():
    a, b = E.atleast_2d(1.0, np.ones(3))
    assert (a.shape, b.shape) == ((1, 1), (1, 3))


# --- stacking and appending -----------------------------------------------------------------

@pytest.mark.parametrize("name,shapes", [
    ("vstack", [(3,), (2, 3)]), ("vstack", [(2, 3), (1, 3), (0, 3)]),
    ("hstack", [(3,), (2,)]), ("hstack", [(2, 3), (2, 1)]),
    ("dstack", [(3,), (3,)]), ("dstack", [(2, 3), (2, 3, 2)]),
    ("column_stack", [(3,), (3, 2)]), ("column_stack", [(4,), (4,)]),
])
def test_stacking(name, shapes):
    inputs = [normal(s, 5 + i) for i, s in enumerate(shapes)]
    check(lambda *ts: getattr(E, name)(list(ts)), lambda *ts: getattr(torch, name)(list(ts)), inputs)


@pytest.mark.parametrize("a_shape,b_shape", BROADCAST_SHAPES)
def test_append_flattened(a_shape, b_shape):
    check(lambda a, b: E.append(a, b), lambda a, b: torch.cat([a.ravel(), b.ravel()]),
          [normal(a_shape, 6), normal(b_shape, 7)])


@pytest.mark.parametrize("a_shape,b_shape,axis", [((2, 3), (1, 3), 0), ((2, 3), (2, 4), 1),
                                                  ((2, 0), (2, 2), -1)])
def test_append_on_an_axis(a_shape, b_shape, axis):
    check(lambda a, b: E.append(a, b, axis), lambda a, b: torch.cat([a, b], axis),
          [normal(a_shape, 8), normal(b_shape, 9)])


# --- flip, roll, rot90 ----------------------------------------------------------------------

@pytest.mark.parametrize("shape,axis", [((5,), None), ((3, 4), 0), ((3, 4), (0, 1)), ((2, 3, 4), -1),
                                        ((1, 3), 0), ((0, 3), 1)])
def test_flip(shape, axis):
    dims = tuple(range(len(shape))) if axis is None else axis
    check(lambda a: E.flip(a, axis), lambda a: torch.flip(a, (dims,) if isinstance(dims, int) else dims),
          [normal(shape, 10)])


def test_flipud_fliplr():
    x = normal((3, 4, 2), 11)
    check(E.flipud, torch.flipud, [x])
    check(E.fliplr, torch.fliplr, [x])


@pytest.mark.parametrize("shape,shift,axis", [((5,), 2, None), ((3, 4), -1, None), ((3, 4), 1, 1),
                                              ((3, 4), (1, 2), (0, 1)), ((2, 3, 4), 5, -1),
                                              ((3, 4), (1, 1), 0), ((0, 3), 1, 1)])
def test_roll(shape, shift, axis):
    def ref(a):
        if axis is None:
            return torch.roll(a, shift)
        if isinstance(axis, int) and not isinstance(shift, int):   # NumPy: each shift on axis
            return torch.roll(a, (sum(shift),), (axis,))
        return torch.roll(a, shift, axis)
    check(lambda a: E.roll(a, shift, axis), ref, [normal(shape, 12)])


def test_roll_method_is_torchs():
    x = normal((3, 4), 13)
    check(lambda a: a.roll(1, 0), lambda a: a.roll(1, 0), [x])
    check(lambda a: a.roll((1, -2), (0, 1)), lambda a: a.roll((1, -2), (0, 1)), [x])


@pytest.mark.parametrize("k", [0, 1, 2, 3, -1, 5])
@pytest.mark.parametrize("axes", [(0, 1), (2, 0)])
def test_rot90(k, axes):
    check(lambda a: E.rot90(a, k, axes), lambda a: torch.rot90(a, k, axes), [normal((2, 3, 4), 14)])


# --- repeat, tile, diff ----------------------------------------------------------------------

@pytest.mark.parametrize("shape,repeats,axis", [((3,), 2, None), ((2, 3), 2, None), ((2, 3), 3, 1),
                                                ((2, 3), [1, 0, 2], 1), ((3, 2), [2, 2, 1], 0),
                                                ((2, 1), 3, 1), ((0, 2), 2, 0)])
def test_repeat(shape, repeats, axis):
    def ref(a):
        r = torch.tensor(repeats) if isinstance(repeats, list) else repeats
        return torch.repeat_interleave(a, r, dim=axis)
    check(lambda a: E.repeat(a, repeats, axis), ref, [normal(shape, 15)])


@pytest.mark.parametrize("shape,reps", [((3,), 2), ((2, 3), (2, 1)), ((2, 3), (1, 2, 2)), ((2, 1, 3), (2,)),
                                        ((2, 3), (0, 2)), ((), (2, 3))])
def test_tile(shape, reps):
    check(lambda a: E.tile(a, reps), lambda a: torch.tile(a, (reps,) if isinstance(reps, int) else reps),
          [normal(shape, 16)])


@pytest.mark.parametrize("shape,n,axis", [((6,), 1, -1), ((6,), 3, 0), ((3, 4), 1, 0), ((3, 4), 2, 1),
                                          ((3, 4), 0, 1), ((2, 1), 1, 1)])
def test_diff(shape, n, axis):
    check(lambda a: E.diff(a, n, axis), lambda a: torch.diff(a, n, axis), [normal(shape, 17)])


def test_diff_prepend_append():
    x = normal((3, 4), 18)
    check(lambda a: E.diff(a, 2, 1, prepend=0.5, append=np.ones((3, 2))),
          lambda a: _jnp().diff(a, 2, 1, prepend=0.5, append=np.ones((3, 2))), [x], reference="jax")


# --- pad ----------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
@pytest.mark.parametrize("shape,width", [((5,), 2), ((2, 1, 3), ((0, 0), (2, 1), (1, 2)))])
def test_pad(mode, shape, width):
    check(lambda a: E.pad(a, width, mode), lambda a: _jnp().pad(a, width, mode), [normal(shape, 19)],
          reference="jax")


def test_pad_constant_values_and_torch_node():
    x = normal((3, 4), 20)
    check(lambda a: E.pad(a, ((1, 0), (2, 1)), constant_values=1.5),
          lambda a: torch.nn.functional.pad(a, (2, 1, 1, 0), value=1.5), [x])
    check(lambda a: E.pad(a, ((1, 2), (2, 1)), constant_values=((1.0, 2.0), (3.0, 4.0))),
          lambda a: _jnp().pad(a, ((1, 2), (2, 1)), constant_values=((1.0, 2.0), (3.0, 4.0))),
          [x], reference="jax")
    assert E.pad(Tensor(x, requires_grad=True), 1).grad_fn.name() == "ConstantPadNdBackward0"


# --- select, split ------------------------------------------------------------------------

@pytest.mark.parametrize("a_shape,b_shape", BROADCAST_SHAPES)
def test_select(a_shape, b_shape):
    def engine(a, b):
        return E.select([a > 0.5, b < 0], [a, a * b], default=-1.0)

    def ref(a, b):   # NumPy's select: the first true condition wins
        default = torch.tensor(-1.0, dtype=a.dtype)
        return torch.where(a > 0.5, a, torch.where(b < 0, a * b, default))
    check(engine, ref, [normal(a_shape, 21), normal(b_shape, 22)])


@pytest.mark.parametrize("name,shape,arg,axis", [
    ("split", (6,), 3, 0), ("split", (2, 6), [1, 4], 1), ("split", (4, 3), [2, 4], 0),
    ("array_split", (7,), 3, 0), ("array_split", (2, 5), 4, 1), ("array_split", (5, 2), [3], 0),
])
def test_numpy_split(name, shape, arg, axis):
    def engine(a):
        return E.concatenate([p * (i + 1) for i, p in enumerate(getattr(xp, name)(a, arg, axis))][::-1], axis)

    def ref(a):   # torch.tensor_split is NumPy's array_split (and split, where that divides)
        return torch.cat([p * (i + 1) for i, p in enumerate(torch.tensor_split(a, arg, axis))][::-1], axis)
    check(engine, ref, [normal(shape, 23)])


@pytest.mark.parametrize("name,shape,arg", [("vsplit", (4, 3), 2), ("hsplit", (2, 6), [1, 3]),
                                            ("hsplit", (6,), 2), ("dsplit", (2, 2, 4), 2)])
def test_vhd_split(name, shape, arg):
    def engine(a):
        return E.concatenate([E.ravel(p) * (i + 1) for i, p in enumerate(getattr(E, name)(a, arg))])

    def ref(a):
        return torch.cat([torch.ravel(p) * (i + 1) for i, p in enumerate(getattr(torch, name)(a, arg))])
    check(engine, ref, [normal(shape, 24)])


def test_xp_split_is_numpys_and_the_method_torchs():
    t = Tensor(np.arange(6.0))
    assert [p.shape for p in xp.split(t, 3)] == [(2,), (2,), (2,)]        # 3 sections
    assert [p.shape for p in t.split(3)] == [(3,), (3,)]                   # chunks of 3
    assert [p.shape for p in E.split(t, [1, 5])] == [(1,), (5,)]           # torch's sizes
    with pytest.raises(ValueError, match="equal division"):
        xp.split(t, 4)
    # cut indices as NumPy's: negative ones count from the end, past the end give empty parts
    for cuts in ([-2], [2, 9], [0, 0, 3]):
        assert [p.shape for p in xp.split(t, cuts)] == [p.shape for p in np.split(t.data, cuts)]


# --- sort, take, take_along_axis ------------------------------------------------------------

@pytest.mark.parametrize("shape,axis", [((6,), -1), ((3, 4), 0), ((3, 4), 1), ((2, 3, 4), 1),
                                        ((1, 3), 0), ((0, 3), 1), ((2, 3), None)])
def test_sort(shape, axis):
    def ref(a):
        return torch.sort(a.reshape(-1) if axis is None else a, dim=0 if axis is None else axis,
                          stable=True)[0]
    check(lambda a: E.sort(a, axis), ref, [normal(shape, 25)])


def test_sort_ties_go_back_in_stable_order():
    """Tied values: the first of them (in input order) gets the first sorted gradient, as
    torch.sort(stable=True): a sort that broke ties otherwise would send g to the wrong element."""
    x = np.array([[1.0, 0.5, 1.0, 0.5, 1.0], [2.0, 2.0, 2.0, -1.0, 2.0]])
    check(lambda a: E.sort(a, 1), lambda a: torch.sort(a, dim=1, stable=True)[0], [x])
    t = Tensor(x[0], requires_grad=True)
    E.sort(t).backward(np.arange(5.0))
    np.testing.assert_array_equal(t.grad.data, [2.0, 0.0, 3.0, 1.0, 4.0])


@pytest.mark.parametrize("shape,idx,axis", [((3, 4), [0, 5, 5, 11], None), ((3, 4), [[1, 1], [0, 2]], None),
                                            ((3, 4), [2, 0, 2], 1), ((3, 4), [1, -1], 0), ((3, 4), [], 1)])
def test_take(shape, idx, axis):
    def ref(a):
        i = torch.tensor(idx, dtype=torch.long)
        return a.reshape(-1)[i] if axis is None else a[(slice(None),) * axis + (i,)]
    check(lambda a: E.take(a, idx, axis), ref, [normal(shape, 26)])


@pytest.mark.parametrize("axis", [0, 1])
def test_take_along_axis(axis):
    idx = rng("idx", axis).integers(0, 3, (3, 3))
    check(lambda a: E.take_along_axis(a, idx, axis),
          lambda a: torch.take_along_dim(a, torch.tensor(idx), axis), [normal((3, 3), 27)])


# --- diag, diagonal, tril, triu -------------------------------------------------------------

@pytest.mark.parametrize("shape,offset,axis1,axis2", [
    ((3, 3), 0, 0, 1), ((3, 4), 1, 0, 1), ((4, 3), -2, 0, 1), ((2, 3, 4), 0, 2, 1), ((2, 3, 4), -1, 0, 2),
    ((3, 3), 5, 0, 1), ((1, 3), 0, 0, 1)])
def test_diagonal(shape, offset, axis1, axis2):
    check(lambda a: E.diagonal(a, offset, axis1, axis2), lambda a: torch.diagonal(a, offset, axis1, axis2),
          [normal(shape, 28)])


@pytest.mark.parametrize("shape,k", [((3,), 0), ((3,), 2), ((3,), -1), ((3, 4), 1), ((4, 3), -1), ((1,), 0)])
def test_diag(shape, k):
    check(lambda a: E.diag(a, k), lambda a: torch.diag(a, k), [normal(shape, 29)])


@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("shape,k", [((3, 3), 0), ((3, 4), 1), ((4, 3), -1), ((2, 3, 3), 0), ((3, 3), 9)])
def test_tril_triu(name, shape, k):
    check(lambda a: getattr(E, name)(a, k), lambda a: getattr(torch, name)(a, k), [normal(shape, 30)])


# --- linspace, array ----------------------------------------------------------------------

@pytest.mark.parametrize("num,endpoint", [(5, True), (4, False), (1, True), (0, True)])
def test_linspace_in_start_and_stop(num, endpoint):
    check(lambda a, b: E.linspace(a, b, num, endpoint), lambda a, b: _jnp().linspace(a, b, num, endpoint),
          [np.array(-0.7), np.array(1.9)], reference="jax")


@pytest.mark.parametrize("a_shape,b_shape,axis", [shapes + (0,) for shapes in BROADCAST_SHAPES]
                         + [((2, 3), (), -1), ((4, 1, 3), (2, 3), 1)])
def test_linspace_of_arrays(a_shape, b_shape, axis):
    check(lambda a, b: E.linspace(a, b, 4, axis=axis), lambda a, b: _jnp().linspace(a, b, 4, axis=axis),
          [normal(a_shape, 31), normal(b_shape, 32)], reference="jax")


def test_linspace_of_numbers_is_numpys():
    out = xp.linspace(0.0, 1.0, 7, endpoint=False)
    np.testing.assert_array_equal(out.data, np.linspace(0.0, 1.0, 7, endpoint=False))
    out, step = xp.linspace(0.0, 2.0, 5, retstep=True)
    assert step == 0.5


def test_array_from_a_nested_list_of_tensors_and_numbers():
    def engine(a, b):
        return xp.asarray([[a[0], 2.0, b], [b * a[1], a[1], 0.5]])

    def ref(a, b):
        c = lambda v: torch.tensor(v, dtype=a.dtype)
        return torch.stack([torch.stack([a[0], c(2.0), b]), torch.stack([b * a[1], a[1], c(0.5)])])
    check(engine, ref, [normal((2,), 33), np.array(0.3)])
    check(lambda a, b: xp.array([a, b, a]), lambda a, b: torch.stack([a, b, a]),
          [normal((2, 3), 34), normal((2, 3), 35)])
    assert xp.asarray([1.0, 2.0]).dtype == np.float64
    with pytest.raises(ValueError, match="ragged"):
        xp.array([Tensor(np.ones(2)), Tensor(np.ones(3))])


# --- names, methods, dtypes, errors ---------------------------------------------------------

def test_node_names_are_torchs():
    t = Tensor(normal((3, 4), 36), requires_grad=True)
    names = {
        "FlipBackward0": E.flip(t, 0), "RollBackward0": E.roll(t, 1, 1), "SortBackward0": t.sort()[0],
        "RepeatBackward0": E.tile(t, 2), "IndexSelectBackward0": E.repeat(t, 2, 0),
        "DiagonalBackward0": E.diagonal(t), "DiagEmbedBackward0": E.diag(t[0]),
        "TrilBackward0": E.tril(t), "TriuBackward0": E.triu(t), "GatherBackward0":
        E.take_along_axis(t, np.zeros((3, 1), int), 1), "PermuteBackward0": E.moveaxis(t, 0, 1),
    }
    for name, out in names.items():
        assert out.grad_fn.name() == name


def test_torch_style_methods():
    x = normal((3, 4), 37)
    check(lambda a: a.flip(0, 1), lambda a: a.flip(0, 1), [x])
    check(lambda a: a.repeat_interleave(2, dim=1), lambda a: a.repeat_interleave(2, dim=1), [x])
    check(lambda a: a.diagonal(1), lambda a: a.diagonal(1), [x])
    check(lambda a: a.tile(2, 1), lambda a: a.tile(2, 1), [x])
    check(lambda a: a.sort(0)[0], lambda a: a.sort(dim=0, stable=True)[0], [x])
    ties = np.array([[1.0, 0.5, 1.0, 0.5, 1.0], [2.0, 2.0, 2.0, -1.0, 2.0]])
    check(lambda a: a.sort(1, descending=True)[0], lambda a: a.sort(dim=1, descending=True, stable=True)[0],
          [ties])
    np.testing.assert_array_equal(Tensor(ties).sort(descending=True)[1].data,
                                  torch.tensor(ties).sort(descending=True, stable=True)[1].numpy())
    check(lambda a: a.tril(-1) + a.triu(2), lambda a: a.tril(-1) + a.triu(2), [x])
    check(lambda a: a.repeat(2, 1, 3), lambda a: a.repeat(2, 1, 3), [x])
    check(lambda a: a.movedim(0, 1).fliplr().rot90(1, (0, 1)),
          lambda a: a.movedim(0, 1).fliplr().rot90(1, (0, 1)), [x])
    check(lambda a: a.diff(1, 0).take([0, 3, 3]) * a.trace(),
          lambda a: a.diff(1, 0).take(torch.tensor([0, 3, 3])) * a.trace(), [x])
    check(lambda a: a.nansum(dim=1) + a.nanmean(1), lambda a: a.nansum(dim=1) + a.nanmean(1), [x])
    with pytest.raises(RuntimeError, match="one count per dim"):
        Tensor(x).repeat(2)


F32 = [lambda a: E.flip(a, 0), lambda a: E.roll(a, 1), lambda a: E.tile(a, 2), lambda a: E.repeat(a, 2, 1),
       lambda a: E.sort(a), lambda a: E.diagonal(a), lambda a: E.diag(a[0]), lambda a: E.tril(a),
       lambda a: E.pad(a, 1), lambda a: E.pad(a, 1, "reflect"), lambda a: E.take(a, [0, 3]),
       lambda a: E.diff(a), lambda a: E.rot90(a), lambda a: E.vstack([a, a]), lambda a: E.append(a, 1.0),
       lambda a: E.select([a > 0], [a], 0.0), lambda a: E.linspace(a[0], a[1], 3),
       lambda a: xp.asarray([a[0, 0], 1.0]), lambda a: E.concatenate(xp.array_split(a, 2, 1), 1),
       lambda a: E.moveaxis(a, 0, 1), lambda a: E.take_along_axis(a, np.zeros((3, 1), int), 1)]


@pytest.mark.parametrize("fn", F32)
def test_float32_stays_float32(fn):
    t = Tensor(normal((3, 4), 38).astype(np.float32), requires_grad=True)
    out = fn(t)
    assert out.dtype == np.float32
    (out * 1.0).sum().backward()
    assert t.grad.dtype == np.float32


def test_compiled_program_calls_numpys_functions():
    f = E.compile(lambda a: (E.sort(E.flip(E.roll(a, 1, 0), 1), 0) * np.arange(12.0).reshape(3, 4)).sum(),
                  wrt=(0,))
    x = normal((3, 4), 39)
    f(x)
    for name in ("np.argsort", "np.take_along_axis", "np.flip", "np.roll", "kind='stable'"):
        assert name in f.source
    x2 = normal((3, 4), 40)   # a new permutation: computed when called, not traced once
    value, (g,) = f(x2)
    t = Tensor(x2, requires_grad=True)
    y = (E.sort(E.flip(E.roll(t, 1, 0), 1), 0) * np.arange(12.0).reshape(3, 4)).sum()
    y.backward()
    np.testing.assert_allclose(g, t.grad.data, rtol=1e-12)


@pytest.mark.parametrize("call,error,match", [
    (lambda t: E.fliplr(t[0]), ValueError, "at least 2"),
    (lambda t: E.rot90(t, 1, (0, 0)), ValueError, "axes"),
    (lambda t: E.repeat(t, [1, 2], 0), ValueError, "one per element"),
    (lambda t: E.repeat(t, -1), ValueError, "non-negative"),
    (lambda t: E.pad(t, 1, "median"), ValueError, "not supported"),
    (lambda t: E.pad(t, -1), ValueError, "non-negative"),
    (lambda t: E.diagonal(t[0]), ValueError, "at least 2"),
    (lambda t: E.diag(t[None]), ValueError, "1-D or 2-D"),
    (lambda t: E.take(t, [12]), IndexError, "out of bounds"),
    (lambda t: E.moveaxis(t, (0, 1), 0), ValueError, "same number"),
    (lambda t: E.sort(t, 2), ValueError, "out of bounds"),
    (lambda t: xp.split(t, [3, 1]), ValueError, "increasing"),
    (lambda t: E.select([t > 0], [t, t]), ValueError, "same length"),
    (lambda t: E.diff(t, -1), ValueError, "non-negative"),
])
def test_bad_input_says_what_to_do(call, error, match):
    with pytest.raises(error, match=match):
        call(Tensor(normal((3, 4), 41)))


# --- the xp names mean what NumPy's do (defaults included) ----------------------------------

X = np.arange(24.0).reshape(2, 3, 4) ** 1.5 % 7.0   # distinct-ish values, some ties
NUMPY_CALLS = [
    ("prod", (X,), {}), ("prod", (X, 1), {"keepdims": True}), ("var", (X,), {}), ("std", (X, 2), {"ddof": 1}),
    ("cumsum", (X,), {}), ("cumprod", (X / 7 + 0.5, 1), {}), ("trace", (X,), {}),
    ("diagonal", (X, 1, 1, 2), {}),
    ("diag", (X[0],), {}), ("diag", (X[0, 0], -1), {}), ("tril", (X, -1), {}), ("triu", (X,), {}),
    ("nansum", (np.where(X > 5, np.nan, X), 0), {}), ("nanmean", (np.where(X > 5, np.nan, X),), {}),
    ("average", (X, 1, np.arange(1.0, 4.0)), {}), ("moveaxis", (X, 0, -1), {}), ("rollaxis", (X, 2), {}),
    ("ravel", (X,), {}), ("repeat", (X, 2), {}), ("repeat", (X, [1, 0, 2], 1), {}), ("tile", (X, (2, 1)), {}),
    ("diff", (X,), {}), ("diff", (X, 2, 0), {}), ("roll", (X, 3), {}), ("roll", (X, (1, 2), (0, 2)), {}),
    ("flip", (X,), {}), ("flipud", (X,), {}), ("fliplr", (X,), {}), ("rot90", (X,), {}),
    ("rot90", (X, 3, (1, 2)), {}), ("atleast_3d", (X[0, 0],), {}), ("vstack", ([X[0], X[1, 0]],), {}),
    ("hstack", ([X[0], X[1]],), {}), ("column_stack", ([X[0, 0], X[1, 0]],), {}),
    ("dstack", ([X[0], X[1]],), {}),
    ("append", (X, X[0]), {}), ("append", (X, X[:1], 0), {}), ("pad", (X, 1), {}),
    ("pad", (X, ((0, 0), (1, 2), (2, 0))), {"mode": "symmetric"}), ("sort", (X,), {}),
    ("sort", (X, None), {}),
    ("sort", (X, 0), {}), ("take", (X, [3, 3, 0]), {}), ("take", (X, [[2], [0]], 1), {}),
    ("take_along_axis", (X, np.argsort(X, 1), 1), {}), ("linspace", (0.5, 2.0, 6), {}),
    ("linspace", (X[0], X[1], 3), {"endpoint": False, "axis": -1}),
    ("select", ([X > 4, X < 1], [X, -X], 9.0), {}),
]


@pytest.mark.parametrize("name,args,kwargs", NUMPY_CALLS, ids=[c[0] for c in NUMPY_CALLS])
def test_xp_names_mean_numpys(name, args, kwargs):
    def engine_arg(a):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            return Tensor(a)
        if isinstance(a, list) and a and isinstance(a[0], np.ndarray) and a[0].dtype.kind == "f":
            return [Tensor(v) for v in a]
        return a
    ours = getattr(xp, name)(*map(engine_arg, args), **kwargs)
    theirs = getattr(np, name)(*args, **kwargs)
    assert ours.shape == np.shape(theirs)
    np.testing.assert_allclose(ours.data, theirs, rtol=1e-13, atol=0, equal_nan=True)


@pytest.mark.parametrize("name,arg", [("split", 2), ("split", [1, 3]), ("array_split", 3), ("hsplit", 3),
                                      ("vsplit", [1]), ("dsplit", 2)])
def test_xp_splits_mean_numpys(name, arg):
    ours = getattr(xp, name)(Tensor(X), arg)
    theirs = getattr(np, name)(X, arg)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o.data, t)
