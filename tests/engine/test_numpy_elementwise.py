"""NumPy's elementwise math on the engine (issue 19): each name in every engine mode
(value, VJP, create_graph VJP, JVP, compiled gradient) against torch, or JAX where torch
lacks the op (``opcheck.check``); shapes with broadcasting, size-0 and size-1 axes;
float32 kept float32; subgradients at kinks as torch; integer powers by multiplication."""
import numpy as np
import pytest

import diffcompare.engine as E
from diffcompare.engine import Tensor, array_api as xp, autograd
from diffcompare.engine import compile as engine_compile

from opcheck import BROADCAST_SHAPES, check, rng

torch = pytest.importorskip("torch")


def _normal(g, shape):
    return g.standard_normal(shape)


def _positive(g, shape):
    return g.uniform(0.2, 3.0, shape)


def _unit(g, shape):
    return g.uniform(-0.9, 0.9, shape)


def _above_one(g, shape):
    return g.uniform(1.1, 3.0, shape)


def _off_integers(g, shape):
    # away from integers and halves, where the piecewise-constant ops jump
    return np.floor(g.uniform(-4, 4, shape)) + g.uniform(0.05, 0.45, shape) + 0.5 * (
        g.random(shape) > 0.5)


def _nonzero(g, shape):
    return g.uniform(0.3, 2.0, shape) * np.where(g.random(shape) > 0.5, 1, -1)


def _jnp(name):
    def fn(*xs):
        import jax.numpy as jnp
        return getattr(jnp, name)(*xs)
    return fn


# name -> (the torch function or None for JAX's, the input domain)
UNARY = {
    # abs: JAX's reference, torch's double backward of abs is a ZeroTensor opcheck cannot read
    "absolute": (None, _nonzero), "fabs": (None, _nonzero),
    "exp2": (torch.exp2, _normal), "expm1": (torch.expm1, _normal),
    "log2": (torch.log2, _positive), "log10": (torch.log10, _positive),
    "log1p": (torch.log1p, _positive), "sinh": (torch.sinh, _normal),
    "cosh": (torch.cosh, _normal), "tan": (torch.tan, _unit),
    "arcsin": (torch.asin, _unit), "arccos": (torch.acos, _unit), "arctan": (torch.atan, _normal),
    "arcsinh": (torch.asinh, _normal), "arccosh": (torch.acosh, _above_one),
    "arctanh": (torch.atanh, _unit),
    "ceil": (torch.ceil, _off_integers), "floor": (torch.floor, _off_integers),
    "round": (torch.round, _off_integers), "around": (torch.round, _off_integers),
    "rint": (torch.round, _off_integers), "trunc": (torch.trunc, _off_integers),
    "fix": (torch.trunc, _off_integers), "sign": (torch.sign, _nonzero),
    "deg2rad": (torch.deg2rad, _normal), "radians": (torch.deg2rad, _normal),
    "rad2deg": (torch.rad2deg, _normal), "degrees": (torch.rad2deg, _normal),
    "reciprocal": (torch.reciprocal, _nonzero), "square": (torch.square, _normal),
    "sinc": (torch.sinc, _normal), "cbrt": (None, _nonzero),
    "positive": (torch.positive, _normal), "real": (torch.real, _normal),
    "conj": (torch.conj, _normal), "conjugate": (torch.conj, _normal),
    "imag": (None, _normal), "nan_to_num": (torch.nan_to_num, _normal),
}
UNARY_SHAPES = [(), (4,), (2, 3), (0, 3), (1, 1)]


@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_in_every_mode(name, shape):
    torch_fn, domain = UNARY[name]
    x = domain(rng(name, len(shape)), shape)
    if torch_fn is None:
        check(getattr(xp, name), _jnp(name), [x], reference="jax")
    else:
        check(getattr(xp, name), torch_fn, [x])


def _divisor(g, shape):
    return _nonzero(g, shape)


# name -> (torch function, domain of a, domain of b)
BINARY = {
    "arctan2": (torch.atan2, _normal, _normal),
    "logaddexp": (torch.logaddexp, _normal, _normal),
    "logaddexp2": (torch.logaddexp2, _normal, _normal),
    "remainder": (torch.remainder, _normal, _divisor),
    "mod": (torch.remainder, _normal, _divisor),
    "fmod": (torch.fmod, _normal, _divisor),
    "fmax": (torch.fmax, _normal, _normal),
    "fmin": (torch.fmin, _normal, _normal),
    "hypot": (torch.hypot, _normal, _normal),
    "true_divide": (torch.true_divide, _normal, _divisor),
}


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_in_every_mode_with_broadcasting(name, shapes):
    torch_fn, da, db = BINARY[name]
    g = rng(name, *map(len, shapes))
    check(getattr(xp, name), torch_fn, [da(g, shapes[0]), db(g, shapes[1])])


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_with_a_size_zero_axis_and_a_number(name):
    torch_fn, da, db = BINARY[name]
    g = rng(name, "zero")
    check(getattr(xp, name), torch_fn, [da(g, (0, 3)), db(g, (1, 3))])
    b = float(db(g, ()))
    check(lambda a: getattr(xp, name)(a, b), lambda a: torch_fn(a, torch.tensor(b, dtype=torch.float64)),
          [da(g, (2, 3))])


def test_the_mod_operators_are_numpys_floor_remainder():
    a = np.array([5.5, -5.5, 5.5, -5.5, 3.0])
    b = np.array([2.0, 2.0, -2.0, -2.0, 1.5])
    ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    out = ta % tb
    np.testing.assert_array_equal(out.data, np.remainder(a, b))   # the divisor's sign
    out.backward(np.ones(5))
    np.testing.assert_array_equal(ta.grad.data, np.ones(5))
    np.testing.assert_array_equal(tb.grad.data, -np.floor_divide(a, b))   # exact multiple: -2
    check(lambda x: 7.0 % x, lambda x: 7.0 - torch.floor(7.0 / x) * x, [b])   # __rmod__
    c = Tensor(a.copy())
    c %= 2.0
    np.testing.assert_array_equal(c.data, np.remainder(a, 2.0))
    assert (ta % 2.0).grad_fn.name() == "RemainderBackward0"
    assert (ta % tb).grad_fn.name() == "RemainderBackward1"
    assert E.fmod(ta, tb).grad_fn.name() == "FmodBackward1"
    np.testing.assert_array_equal(E.fmod(ta, tb).data, np.fmod(a, b))   # the dividend's sign


def test_names_in_the_namespace_the_table_and_on_tensors():
    t = Tensor([0.5], requires_grad=True)
    for name in list(UNARY) + list(BINARY) + ["power", "asin", "acos", "atan", "atan2",
                                              "asinh", "acosh", "atanh"]:
        assert callable(getattr(xp, name)), name
    for method in ["exp2", "expm1", "log2", "log10", "log1p", "sinh", "cosh", "tan", "asin",
                   "arcsin", "acos", "atan", "asinh", "acosh", "atanh", "ceil", "floor", "round",
                   "trunc", "sign", "deg2rad", "rad2deg", "reciprocal", "square", "sinc",
                   "positive", "conj", "nan_to_num", "absolute"]:
        assert torch.is_tensor(getattr(torch.tensor([0.5]), method)()), method   # torch has it
        with np.errstate(invalid="ignore"):   # arccosh(0.5): NaN, as NumPy
            assert isinstance(getattr(t, method)(), Tensor), method
    for method in ["atan2", "logaddexp", "logaddexp2", "remainder", "fmod", "fmax", "fmin", "hypot"]:
        assert isinstance(getattr(t, method)(t), Tensor), method
    assert xp.absolute is xp.abs and xp.true_divide is xp.divide and xp.mod is xp.remainder


def test_node_names_are_torchs():
    x = np.array([1.3, 1.6])
    for name, (torch_fn, _) in UNARY.items():
        torch_fn = torch.abs if name in ("absolute", "fabs") else torch_fn
        with np.errstate(invalid="ignore"):   # arcsin(1.3): NaN, as NumPy
            ours = getattr(xp, name)(Tensor(x, requires_grad=True)).grad_fn
        theirs = torch_fn(torch.tensor(x, requires_grad=True)).grad_fn if torch_fn else None
        if theirs is None:   # positive, real, conj: the input itself, as torch; cbrt, imag: ours
            assert ours is None or name in ("cbrt", "imag"), name
        else:
            assert ours.name() == type(theirs).__name__, name
    for name, (torch_fn, _, _) in BINARY.items():
        a, b = Tensor(x, requires_grad=True), Tensor(x[::-1].copy(), requires_grad=True)
        assert getattr(xp, name)(a, b).grad_fn.name() == type(
            torch_fn(torch.tensor(x, requires_grad=True), torch.tensor(x[::-1].copy()))
            .grad_fn).__name__, name
    assert xp.round(Tensor(x, requires_grad=True), 1).grad_fn.name() == "RoundBackward1"


# --- dtypes --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(UNARY) + sorted(BINARY))
def test_float32_stays_float32_forward_and_backward(name):
    g = rng(name, "f32")
    if name in UNARY:
        xs = [UNARY[name][1](g, (2, 3)).astype(np.float32)]
    else:
        xs = [BINARY[name][1](g, (2, 3)).astype(np.float32),
              BINARY[name][2](g, (3,)).astype(np.float32)]
    ts = [Tensor(x, requires_grad=True) for x in xs]
    out = getattr(xp, name)(*ts)
    assert out.dtype == np.float32, name
    expected = getattr(np, name)(*xs) if name not in ("positive", "real", "conj", "conjugate") else xs[0]
    np.testing.assert_allclose(out.data, expected, rtol=2e-6, atol=1e-6)
    if name not in ("positive", "real", "conj", "conjugate"):
        grads = autograd.grad((out * 1.5).sum(), ts, materialize_grads=True)
        assert all(gr.dtype == np.float32 for gr in grads), name
    if len(ts) == 2:   # a Python number keeps the tensor's float32
        assert getattr(xp, name)(ts[0], 2.0).dtype == np.float32


# --- kinks, edges and stability ---------------------------------------------------------------

def _torch_grad(fn, *xs):
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    fn(*ts).sum().backward()
    return [t.grad.numpy() if t.grad is not None else np.zeros_like(x) for t, x in zip(ts, xs)]


def _grads(fn, *xs):
    ts = [Tensor(np.asarray(x, dtype=np.float64), requires_grad=True) for x in xs]
    out = fn(*ts)
    return out.data, [g.data for g in autograd.grad(out.sum(), ts, materialize_grads=True)]


@pytest.mark.parametrize("name", ["ceil", "floor", "round", "rint", "trunc", "sign"])
def test_piecewise_constant_ops_have_zero_gradient_at_their_jumps_as_torch(name):
    x = np.array([-2.0, -1.5, -0.5, 0.0, 0.5, 1.0, 1.5, 2.5])
    torch_fn = UNARY[name][0]
    value, (grad,) = _grads(getattr(xp, name), x)
    np.testing.assert_array_equal(value, torch_fn(torch.tensor(x)).numpy())   # halves to even
    np.testing.assert_array_equal(grad, _torch_grad(torch_fn, x)[0])
    np.testing.assert_array_equal(grad, np.zeros_like(x))


def test_sinc_at_zero_and_inverse_trig_at_the_domain_edge_as_torch():
    for name, x in [("sinc", [0.0, 1.0, -2.0]), ("arcsin", [-1.0, 1.0]), ("arccos", [-1.0, 1.0]),
                    ("arctanh", [-1.0, 1.0]), ("arccosh", [1.0]),
                    ("reciprocal", [0.0]), ("absolute", [0.0])]:
        x = np.array(x)
        torch_fn = torch.abs if name == "absolute" else UNARY[name][0]
        with np.errstate(divide="ignore", invalid="ignore"):
            value, (grad,) = _grads(getattr(xp, name), x)
            np.testing.assert_array_equal(value, getattr(np, name)(x))
        np.testing.assert_array_equal(grad, _torch_grad(torch_fn, x)[0], err_msg=name)


def test_cbrt_at_zero_is_infinite_as_jax():
    with np.errstate(divide="ignore"):
        assert _grads(xp.cbrt, np.array([0.0]))[1][0][0] == np.inf


def test_sinc_second_derivative_away_from_zero():
    check(xp.sinc, torch.sinc, [np.array([0.3, -1.7, 2.5])])


@pytest.mark.parametrize("name", ["arctan2", "hypot"])
def test_arctan2_at_the_origin_is_0_and_hypot_nan_as_torch(name):
    torch_fn = BINARY[name][0]
    value, grads = _grads(getattr(xp, name), np.array([0.0, 1.0]), np.array([0.0, 2.0]))
    theirs = _torch_grad(torch_fn, np.array([0.0, 1.0]), np.array([0.0, 2.0]))
    for ours, t in zip(grads, theirs):
        np.testing.assert_array_equal(ours, t)
    assert (grads[0][0] == 0) if name == "arctan2" else np.isnan(grads[0][0])


@pytest.mark.parametrize("name, pick", [("fmax", np.fmax), ("fmin", np.fmin)])
def test_fmax_fmin_ignore_nan_and_split_ties(name, pick):
    a = np.array([1.0, 2.0, np.nan, 3.0, np.nan])
    b = np.array([1.0, np.nan, 2.0, 4.0, np.nan])
    value, (ga, gb) = _grads(getattr(xp, name), a, b)
    np.testing.assert_array_equal(value, pick(a, b))
    # tie: half each (as maximum; torch's fmax gives a all); b NaN: all to a; a NaN: all to b
    first = 0.0 if name == "fmax" else 1.0
    np.testing.assert_array_equal(ga, [0.5, 1.0, 0.0, first, 1.0])
    np.testing.assert_array_equal(gb, [0.5, 0.0, 1.0, 1 - first, 0.0])
    value, (ga, gb) = _grads(getattr(xp, "maximum" if name == "fmax" else "minimum"), a[:1], b[:1])
    np.testing.assert_array_equal(ga, [0.5])   # the same split as maximum / minimum


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_is_stable_for_large_and_very_different_inputs(name):
    a = np.array([1000.0, -1000.0, 800.0, 0.0])
    b = np.array([1000.0, -1000.0, -800.0, -np.inf])
    value, (ga, gb) = _grads(getattr(xp, name), a, b)
    np.testing.assert_allclose(value, getattr(np, name)(a, b), rtol=1e-15)
    np.testing.assert_array_equal(ga, [0.5, 0.5, 1.0, 1.0])
    np.testing.assert_array_equal(gb, [0.5, 0.5, 0.0, 0.0])


def test_log1p_and_expm1_are_accurate_near_zero():
    x = np.array([1e-20, -3e-17, 1e-10])
    value, (grad,) = _grads(xp.log1p, x)
    np.testing.assert_array_equal(value, np.log1p(x))
    assert value[0] == 1e-20 and grad[0] == 1.0   # log(1 + x) would give 0
    value, (grad,) = _grads(xp.expm1, x)
    assert value[0] == 1e-20 and grad[0] == 1.0


def test_nan_to_num_passes_the_gradient_only_where_finite_as_torch():
    x = np.array([1.0, np.nan, np.inf, -np.inf, -2.0])
    value, (grad,) = _grads(xp.nan_to_num, x)
    np.testing.assert_array_equal(value, np.nan_to_num(x))
    np.testing.assert_array_equal(grad, _torch_grad(torch.nan_to_num, x)[0])
    np.testing.assert_array_equal(grad, [1, 0, 0, 0, 1])
    value, _ = _grads(lambda t: xp.nan_to_num(t, nan=7.0, posinf=1.0, neginf=-1.0), x)
    np.testing.assert_array_equal(value, [1.0, 7.0, 1.0, -1.0, -2.0])

    def f(t):
        return (xp.nan_to_num(t, nan=7.0, posinf=1.0) * t).sum()   # compiled, kwargs printed

    val, (g,) = engine_compile(f, wrt=(0,))(np.array([1.0, np.nan, 2.0]))
    np.testing.assert_array_equal(g[[0, 2]], [2.0, 4.0])


def test_imag_is_zeros_with_zero_gradient_and_real_conj_are_the_input():
    x = Tensor([1.0, -2.0], requires_grad=True)
    assert xp.real(x) is x and xp.conj(x) is x and xp.conjugate(x) is x and xp.positive(x) is x
    out = xp.imag(x)
    np.testing.assert_array_equal(out.data, [0.0, 0.0])
    np.testing.assert_array_equal(autograd.grad(out.sum(), [x])[0].data, [0.0, 0.0])


@pytest.mark.parametrize("name", ["real", "imag", "conj", "conjugate"])
def test_complex_input_is_refused_with_what_to_do(name):
    with pytest.raises(TypeError, match="real arrays only; keep the real and imaginary parts"):
        getattr(xp, name)(Tensor(np.array([1 + 2j])))


# --- integer powers by multiplication -------------------------------------------------------

from diffcompare.engine.ops import elementwise as ew   # noqa: E402


def _ulps(ours, exact):
    return np.max(np.abs(ours - exact) / np.spacing(np.abs(exact)))


@pytest.mark.parametrize("k", [3, 4, 5, 7, 16, 31, 64, 127, -3, -7, 6.0])
def test_integer_power_of_mixed_signs_is_repeated_multiplication_within_k_ulps(k):
    x = rng("ipow", int(k) % 1000).uniform(-1.5, 1.5, 256)   # mixed signs: multiplied
    out = (Tensor(x) ** k).data
    assert out.dtype == np.float64
    assert _ulps(out, x ** float(k)) <= abs(k)   # measured: 1 for k = 3, 88 for k = 127
    if k == 7:   # the binary method's own products, bit for bit (not NumPy's pow)
        x2 = x * x
        np.testing.assert_array_equal(out, (x * x2) * (x2 * x2))
        np.testing.assert_array_equal(xp.power(Tensor(x), 7).data, out)
    if abs(k) == 127:   # not NumPy's pow (which would be within 1 ulp)
        assert _ulps(out, x ** float(k)) > 1


def test_integer_power_takes_numpys_simd_power_for_non_negative_bases_and_tiny_arrays():
    x = rng("ipow-pos").uniform(0.5, 1.5, 128)
    for k in (5, 31, 127, -7):
        np.testing.assert_array_equal((Tensor(x) ** k).data, x ** k)
        np.testing.assert_array_equal((Tensor(-x[:40]) ** k).data, (-x[:40]) ** k)   # too few
    x2 = x * x
    np.testing.assert_array_equal((Tensor(x) ** 3).data, x * x2)   # |k| <= 4: products always
    assert ew.power_by_table(x[:, None], np.arange(128)) is None


@pytest.mark.parametrize("k", [3, 5, 7, 12, -3, 4.0])
@pytest.mark.parametrize("shape", [(70,), (2, 3), ()], ids=str)   # (70,): products
def test_integer_power_in_every_mode(k, shape):
    x = rng("ipow-modes", int(k) % 1000, len(shape)).uniform(0.5, 1.5, shape) * np.where(
        rng("sign", len(shape)).random(shape) > 0.5, 1, -1)
    check(lambda t: t ** k, lambda t: t ** k, [x])


def test_integer_power_keeps_float32_and_numpys_promotion():
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    t = Tensor(x, requires_grad=True)
    y = t ** 7
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.data, x ** 7, rtol=1e-5, atol=1e-7)
    assert autograd.grad(y.sum(), [t])[0].dtype == np.float32
    assert (t ** np.float64(7.0)).dtype == (x ** np.float64(7.0)).dtype == np.float64


def test_compiled_integer_power_multiplies_and_keeps_the_square_fast_path():
    x = np.linspace(-1, 1, 64)

    def f(t):
        return (t ** 7).sum() + (t ** 2).sum()

    compiled = engine_compile(f, wrt=(0,))
    value, (g,) = compiled(x)
    assert "**" not in compiled.source.replace("** 2", "")   # x ** 7 and its x ** 6: products
    np.testing.assert_allclose(g, 7 * x ** 6 + 2 * x, rtol=1e-13, atol=1e-15)
    assert (Tensor(x, requires_grad=True) ** 2).grad_fn.name() == "PowBackward0"


@pytest.mark.parametrize("exponent", [np.arange(128), np.arange(128.0), np.arange(-5, 40)],
                         ids=["int", "float", "negative"])
def test_integer_exponent_array_uses_one_cumulative_product(exponent):
    t = rng("vander", exponent.size).uniform(-1, 1, 40)
    with np.errstate(divide="ignore"):
        exact = t[:, None] ** exponent.astype(float)
    out = (Tensor(t)[:, None] ** exponent).data
    np.testing.assert_allclose(out, exact, rtol=64 * 2.0 ** -52, atol=0)
    assert not np.array_equal(out, exact) or exponent.max() < 64   # not NumPy's power itself
    tab = ew.power_by_table(t[:, None], exponent)
    np.testing.assert_array_equal(out, tab)


@pytest.mark.parametrize("j", [np.arange(6), np.arange(6.0), np.array([3, 0, -2, 5, 1, 4])],
                         ids=["int", "float", "shuffled"])
def test_integer_exponent_array_in_every_mode(j):
    t = rng("vander-modes").uniform(-1, 1, 8)
    check(lambda v: v[:, None] ** j, lambda v: v[:, None] ** torch.tensor(j), [t])
    check(lambda v: xp.power(v[:, None], xp.asarray(j)), lambda v: v[:, None] ** torch.tensor(j),
          [t])   # xp.power with an exponent Tensor (xp.arange's)
    # the general gather: b not a row against a column of x (x (2, 1, 8), b (6, 1))
    x = rng("grid").uniform(-1, 1, (2, 1, 8))
    assert ew.power_by_table(x, j[:, None]) is not None
    check(lambda v: v ** j[:, None], lambda v: v ** torch.tensor(j)[:, None], [x])


def test_integer_exponent_array_compiled_without_power():
    t = rng("vander-modes").uniform(-1, 1, 8)
    j = np.arange(6)
    compiled = engine_compile(lambda v: (v[:, None] ** j).sum(), wrt=(0,))
    compiled(t)
    assert "cumprod" in compiled.source and "**" not in compiled.source


def test_non_integer_or_large_exponent_arrays_are_numpys_power():
    t = rng("frac").uniform(-1.5, 1.5, 40)
    for b in [np.linspace(0.5, 3.5, 7), np.array([0, 200])]:
        with np.errstate(invalid="ignore"):   # negative bases to fractional powers: NaN
            np.testing.assert_array_equal((Tensor(t)[:, None] ** b).data, t[:, None] ** b)
        assert ew.power_by_table(t[:, None], b) is None


@pytest.mark.parametrize("decimals", [1, 2, -1])
def test_round_to_decimals_is_numpys_with_zero_gradient_eager_and_compiled(decimals):
    x = np.array([1.2345, -0.0151, 123.456, 2.5])
    value, (grad,) = _grads(lambda t: xp.round(t, decimals), x)
    np.testing.assert_array_equal(value, np.round(x, decimals))
    np.testing.assert_array_equal(grad, np.zeros(4))
    out, (g,) = engine_compile(lambda t: (xp.around(t, decimals) * t).sum(), wrt=(0,))(x)
    np.testing.assert_allclose(g, np.round(x, decimals), rtol=1e-15)
    with pytest.raises(TypeError, match="decimals must be an int"):
        xp.round(Tensor(x), 1.5)


def test_integer_power_backward_reuses_the_forwards_lower_power_once():
    x = rng("lower").uniform(-1.5, 1.5, 256)
    t = Tensor(x, requires_grad=True)
    y = t ** 9
    assert y.grad_fn._lower is not None   # x ** 8, from the forward's products
    (g1,) = autograd.grad(y.sum(), [t], retain_graph=True)
    assert y.grad_fn._lower is None        # freed after its one use
    (g2,) = autograd.grad(y.sum(), [t])    # a retained graph's second backward recomputes it
    np.testing.assert_allclose(g1.data, g2.data, rtol=1e-14)
    np.testing.assert_allclose(g1.data, 9 * x ** 8.0, rtol=16 * 2.0 ** -52)
    assert (Tensor(x) ** 9).grad_fn is None   # not recorded: nothing kept
