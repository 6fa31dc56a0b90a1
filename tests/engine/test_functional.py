"""diffcompare.engine.functional: grad / vjp / jvp / jacobian / hessian / hvp of plain
functions of arrays, checked against closed forms and against each other."""
import numpy as np
import pytest

import diffcompare.engine as E
from diffcompare.engine import Tensor
from diffcompare.engine import functional as F

RTOL = 1e-12


def close(actual, expected, rtol=RTOL, atol=1e-14):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# --------------------------------------------------------------------------- closed forms


def cube_sum(x):
    return (x ** 3).sum()


def test_grad_and_hessian_of_sum_of_cubes(rng):
    x = rng.standard_normal(4)
    close(F.grad(cube_sum, x), 3 * x ** 2)
    close(F.hessian(cube_sum, x), np.diag(6 * x))
    value, g = F.value_and_grad(cube_sum, x)
    close(value, np.sum(x ** 3))
    close(g, 3 * x ** 2)


def test_grad_and_hessian_of_sum_of_cubes_on_a_matrix(rng):
    x = rng.standard_normal((2, 3))
    close(F.grad(cube_sum, x), 3 * x ** 2)
    h = F.hessian(cube_sum, x)
    assert h.shape == (2, 3, 2, 3)
    close(h.reshape(6, 6), np.diag(6 * x.ravel()))


def test_quadratic_form(rng):
    A = rng.standard_normal((4, 4))          # not symmetric on purpose
    x = rng.standard_normal(4)

    def quad(t):
        return t @ (Tensor(A) @ t)

    value, g = F.value_and_grad(quad, x)
    close(value, x @ A @ x)
    close(g, (A + A.T) @ x)
    close(F.hessian(quad, x), A + A.T)
    v = rng.standard_normal(4)
    out, hv = F.hvp(quad, x, v)
    close(out, x @ A @ x)
    close(hv, (A + A.T) @ v)


def test_quadratic_form_with_a_numpy_matrix_on_the_left(rng):
    A = rng.standard_normal((3, 3))
    x = rng.standard_normal(3)
    # ndarray @ Tensor goes to Tensor.__rmatmul__
    close(F.grad(lambda t: (t * (A @ t)).sum(), x), (A + A.T) @ x)


def vector_fn(x):
    """f(x) = [x0 x1, sin x0, x1^2 x2, exp(x2)]."""
    x0, x1, x2 = x.unbind()
    return E.stack([x0 * x1, x0.sin(), x1 ** 2 * x2, x2.exp()])


def vector_fn_jacobian(x):
    x0, x1, x2 = x
    return np.array([
        [x1, x0, 0.0],
        [np.cos(x0), 0.0, 0.0],
        [0.0, 2 * x1 * x2, x1 ** 2],
        [0.0, 0.0, np.exp(x2)],
    ])


def test_jacobian_of_a_vector_function(rng):
    x = rng.standard_normal(3)
    J = F.jacobian(vector_fn, x)
    assert J.shape == (4, 3)
    close(J, vector_fn_jacobian(x))


def test_jacobian_shape_is_output_shape_then_input_shape(rng):
    x = rng.standard_normal((2, 3))
    J = F.jacobian(lambda t: t.sin().T, x)       # out (3, 2), in (2, 3)
    assert J.shape == (3, 2, 2, 3)
    expected = np.zeros((3, 2, 2, 3))
    for i in range(2):
        for j in range(3):
            expected[j, i, i, j] = np.cos(x[i, j])
    close(J, expected)


def test_jacobian_of_a_scalar_output_is_the_gradient(rng):
    x = rng.standard_normal(3)
    J = F.jacobian(cube_sum, x)
    assert J.shape == (3,)
    close(J, 3 * x ** 2)


def test_jvp_and_vjp_agree_with_the_jacobian(rng):
    x = rng.standard_normal(3)
    J = vector_fn_jacobian(x)
    v_in = rng.standard_normal(3)
    v_out = rng.standard_normal(4)
    out, jv = F.jvp(vector_fn, x, v_in)
    close(out, vector_fn(Tensor(x)).data)
    close(jv, J @ v_in)
    out, vj = F.vjp(vector_fn, x, v_out)
    close(out, vector_fn(Tensor(x)).data)
    close(vj, v_out @ J)
    # and with the engine's own Jacobian
    Je = F.jacobian(vector_fn, x)
    close(F.jvp(vector_fn, x, v_in)[1], Je @ v_in)
    close(F.vjp(vector_fn, x, v_out)[1], v_out @ Je)


def test_jvp_and_vjp_of_matrix_valued_function(rng):
    x = rng.standard_normal((2, 3))
    W = rng.standard_normal((3, 2))

    def f(t):
        return (t @ Tensor(W)).tanh()          # (2, 2)

    J = F.jacobian(f, x).reshape(4, 6)
    v = rng.standard_normal((2, 3))
    u = rng.standard_normal((2, 2))
    _, jv = F.jvp(f, x, v)
    _, vj = F.vjp(f, x, u)
    assert jv.shape == (2, 2) and vj.shape == (2, 3)
    close(jv.ravel(), J @ v.ravel())
    close(vj.ravel(), u.ravel() @ J)
    # closed form: d tanh(xW) = (1 - tanh^2) * (v W)
    y = np.tanh(x @ W)
    close(jv, (1 - y ** 2) * (v @ W))
    close(vj, ((1 - y ** 2) * u) @ W.T)


def test_vjp_of_a_scalar_function_needs_no_cotangent(rng):
    x = rng.standard_normal(3)
    out, g = F.vjp(cube_sum, x)
    close(out, np.sum(x ** 3))
    close(g, 3 * x ** 2)


def test_hvp_equals_hessian_times_v(rng):
    x = rng.standard_normal(4)

    def f(t):
        return (t.sin() * t.sum()).sum() + E.logsumexp(t * t)

    H = F.hessian(f, x)
    close(H, H.T, rtol=1e-10)
    v = rng.standard_normal(4)
    out, hv = F.hvp(f, x, v)
    close(out, F.value_and_grad(f, x)[0])
    close(hv, H @ v, rtol=1e-10)


def test_hessian_of_softmax_cross_entropy(rng):
    """For L(z) = logsumexp(z) - z_k, the Hessian is diag(p) - p p^T with p = softmax(z)."""
    z = rng.standard_normal(5)
    H = F.hessian(lambda t: E.cross_entropy(t, np.array(2)), z)
    p = np.exp(z - z.max())
    p /= p.sum()
    close(H, np.diag(p) - np.outer(p, p))
    close(F.grad(lambda t: E.cross_entropy(t, np.array(2)), z), p - np.eye(5)[2])


# --------------------------------------------------------------------------- several inputs


def test_several_inputs_return_tuples(rng):
    x, y = rng.standard_normal(3), rng.standard_normal(3)

    def f(a, b):
        return (a * b).sum() + (a ** 2).sum()

    gx, gy = F.grad(f, (x, y))
    close(gx, y + 2 * x)
    close(gy, x)
    value, grads = F.value_and_grad(f, [x, y])
    assert isinstance(grads, tuple) and len(grads) == 2
    close(value, np.sum(x * y) + np.sum(x ** 2))


def test_single_input_in_a_tuple_gives_a_tuple(rng):
    x = rng.standard_normal(3)
    grads = F.grad(cube_sum, (x,))
    assert isinstance(grads, tuple) and len(grads) == 1
    close(grads[0], 3 * x ** 2)


def test_jacobian_with_several_inputs(rng):
    x = rng.standard_normal(3)
    W = rng.standard_normal((2, 3))
    Jx, JW = F.jacobian(lambda t, w: w @ t, (x, W))
    assert Jx.shape == (2, 3) and JW.shape == (2, 2, 3)
    close(Jx, W)
    expected = np.zeros((2, 2, 3))
    for i in range(2):
        expected[i, i, :] = x                  # d (W x)_i / d W_jk = delta_ij x_k
    close(JW, expected)


def test_hessian_with_several_inputs(rng):
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    (Hxx, Hxy), (Hyx, Hyy) = F.hessian(lambda a, b: (a ** 2 * b).sum(), (x, y))
    close(Hxx, np.diag(2 * y))
    close(Hxy, np.diag(2 * x))
    close(Hyx, np.diag(2 * x))
    close(Hyy, np.zeros((3, 3)))


def test_hessian_blocks_with_different_shapes(rng):
    x = rng.standard_normal(2)
    W = rng.standard_normal((3, 2))
    (Hxx, HxW), (HWx, HWW) = F.hessian(lambda t, w: ((w @ t) ** 2).sum() / 2, (x, W))
    assert Hxx.shape == (2, 2) and HxW.shape == (2, 3, 2)
    assert HWx.shape == (3, 2, 2) and HWW.shape == (3, 2, 3, 2)
    close(Hxx, W.T @ W)
    # d/dW_jk of (W^T W x)_i = delta_ik (W x)_j + W_ji x_k
    r = W @ x
    expected = np.einsum("ik,j->ijk", np.eye(2), r) + np.einsum("ji,k->ijk", W, x)
    close(HxW, expected)
    close(HWx, np.transpose(expected, (1, 2, 0)))


def test_jvp_vjp_hvp_with_several_inputs(rng):
    x, y = rng.standard_normal(3), rng.standard_normal(3)

    def f(a, b):
        return a.sin() * b + a * a

    Jx, Jy = F.jacobian(f, (x, y))
    vx, vy = rng.standard_normal(3), rng.standard_normal(3)
    u = rng.standard_normal(3)
    _, jv = F.jvp(f, (x, y), (vx, vy))
    close(jv, Jx @ vx + Jy @ vy)
    _, (ux, uy) = F.vjp(f, (x, y), u)
    close(ux, u @ Jx)
    close(uy, u @ Jy)

    def g(a, b):
        return (f(a, b) ** 2).sum()

    (Hxx, Hxy), (Hyx, Hyy) = F.hessian(g, (x, y))
    _, (hx, hy) = F.hvp(g, (x, y), (vx, vy))
    close(hx, Hxx @ vx + Hxy @ vy, rtol=1e-10)
    close(hy, Hyx @ vx + Hyy @ vy, rtol=1e-10)


def test_jvp_and_hvp_with_one_input_in_a_tuple_take_one_tangent_in_a_tuple(rng):
    """As torch.autograd.functional: inputs (x,) go with tangents (v,)."""
    x, v = rng.standard_normal(3), rng.standard_normal(3)
    out, jv = F.jvp(lambda t: t ** 3, (x,), (v,))
    close(out, x ** 3)
    close(jv, 3 * x ** 2 * v)
    out, hv = F.hvp(cube_sum, (x,), (v,))
    assert isinstance(hv, tuple) and len(hv) == 1
    close(hv[0], 6 * x * v)


def test_jvp_wrong_number_of_tangents():
    with pytest.raises(ValueError, match="expected 2 tangent vectors"):
        F.jvp(lambda a, b: a * b, (np.ones(2), np.ones(2)), (np.ones(2),))


# --------------------------------------------------------------------------- linear / identity


def test_identity_function():
    x = np.array([1.0, -2.0, 3.0])
    close(F.jacobian(lambda t: t, x), np.eye(3))
    close(F.jvp(lambda t: t, x, np.array([3.0, 4.0, 5.0]))[1], [3.0, 4.0, 5.0])
    close(F.vjp(lambda t: t, x, np.array([3.0, 4.0, 5.0]))[1], [3.0, 4.0, 5.0])


def test_linear_function_has_zero_hessian():
    x = np.array([1.0, 2.0, 3.0])
    close(F.hessian(lambda t: (t * np.array([1.0, 2.0, 3.0])).sum(), x), np.zeros((3, 3)))
    close(F.hvp(lambda t: t.sum() * 2, x, np.ones(3))[1], np.zeros(3))


# --------------------------------------------------------------------------- unused inputs


def uses_only_first(a, b):
    return (a ** 2).sum()


@pytest.mark.parametrize("call", [
    pytest.param(lambda xs, **kw: F.grad(uses_only_first, xs, **kw), id="grad"),
    pytest.param(lambda xs, **kw: F.vjp(uses_only_first, xs, **kw), id="vjp"),
    pytest.param(lambda xs, **kw: F.jvp(uses_only_first, xs, (np.ones(2), np.ones(3)), **kw), id="jvp"),
    pytest.param(lambda xs, **kw: F.jacobian(uses_only_first, xs, **kw), id="jacobian"),
    pytest.param(lambda xs, **kw: F.hessian(uses_only_first, xs, **kw), id="hessian"),
    pytest.param(lambda xs, **kw: F.hvp(uses_only_first, xs, (np.ones(2), np.ones(3)), **kw), id="hvp"),
])
def test_unused_input_is_an_error_mentioning_allow_unused(call):
    xs = (np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0]))
    with pytest.raises(RuntimeError, match="allow_unused"):
        call(xs)


def test_unused_input_gives_zeros_with_allow_unused():
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    gx, gy = F.grad(uses_only_first, (x, y), allow_unused=True)
    close(gx, 2 * x)
    assert gy.shape == (3,)
    close(gy, np.zeros(3))

    _, (vx, vy) = F.vjp(uses_only_first, (x, y), allow_unused=True)
    close(vx, 2 * x)
    close(vy, np.zeros(3))

    _, jv = F.jvp(uses_only_first, (x, y), (np.ones(2), np.ones(3)), allow_unused=True)
    close(jv, 2 * x.sum())

    Jx, Jy = F.jacobian(uses_only_first, (x, y), allow_unused=True)
    close(Jx, 2 * x)
    close(Jy, np.zeros(3))

    (Hxx, Hxy), (Hyx, Hyy) = F.hessian(uses_only_first, (x, y), allow_unused=True)
    close(Hxx, 2 * np.eye(2))
    assert Hxy.shape == (2, 3) and Hyx.shape == (3, 2) and Hyy.shape == (3, 3)
    for block in (Hxy, Hyx, Hyy):
        close(block, np.zeros_like(block))

    _, (hx, hy) = F.hvp(uses_only_first, (x, y), (np.ones(2), np.ones(3)), allow_unused=True)
    close(hx, [2.0, 2.0])
    close(hy, np.zeros(3))


def test_output_independent_of_every_input():
    x = np.array([1.0, 2.0])
    const = lambda t: Tensor(np.array(3.0))  # noqa: E731
    with pytest.raises(RuntimeError, match="allow_unused"):
        F.grad(const, x)
    value, g = F.value_and_grad(const, x, allow_unused=True)
    close(value, 3.0)
    close(g, np.zeros(2))
    close(F.jacobian(lambda t: Tensor(np.ones(3)), x, allow_unused=True), np.zeros((3, 2)))
    close(F.hessian(const, x, allow_unused=True), np.zeros((2, 2)))


# --------------------------------------------------------------------------- dtypes


def test_float32_inputs_keep_float32_results():
    x = np.array([1.0, 2.0, -0.5], dtype=np.float32)
    v = np.array([1.0, 0.5, 2.0], dtype=np.float32)
    value, g = F.value_and_grad(cube_sum, x)
    assert value.dtype == np.float32 and g.dtype == np.float32
    np.testing.assert_allclose(g, 3 * x.astype(np.float64) ** 2, rtol=1e-6)
    out, vj = F.vjp(lambda t: t ** 3, x, v)
    assert out.dtype == np.float32 and vj.dtype == np.float32
    out, jv = F.jvp(lambda t: t ** 3, x, v)
    assert out.dtype == np.float32 and jv.dtype == np.float32
    np.testing.assert_allclose(jv, 3 * x.astype(np.float64) ** 2 * v, rtol=1e-6)
    J = F.jacobian(lambda t: t ** 3, x)
    assert J.dtype == np.float32
    H = F.hessian(cube_sum, x)
    assert H.dtype == np.float32
    np.testing.assert_allclose(H, np.diag(6 * x.astype(np.float64)), rtol=1e-6)
    out, hv = F.hvp(cube_sum, x, v)
    assert hv.dtype == np.float32


def test_mixed_float32_and_float64_inputs_keep_their_dtypes():
    x32 = np.array([1.0, 2.0], dtype=np.float32)
    y64 = np.array([3.0, 4.0])
    gx, gy = F.grad(lambda a, b: (a * a).sum() + (b * b).sum(), (x32, y64))
    assert gx.dtype == np.float32 and gy.dtype == np.float64
    close(gx, 2 * x32)
    close(gy, 2 * y64)


def test_complex_input_is_a_clear_type_error():
    with pytest.raises(TypeError, match=r"input 0 has dtype complex128.*real floating-point"):
        F.grad(cube_sum, np.array([1.0 + 1.0j, 2.0]))
    with pytest.raises(TypeError, match=r"input 1 has dtype complex64"):
        F.jacobian(lambda a, b: a * b, (np.ones(2), np.ones(2, dtype=np.complex64)))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.bool_])
def test_integer_and_bool_inputs_are_promoted_to_float64(dtype):
    """functional converts integer/bool arrays to float64 (documented in _leaves)."""
    x = np.array([1, 2, 0], dtype=dtype)
    g = F.grad(lambda t: (t * t).sum(), x)
    assert g.dtype == np.float64
    close(g, 2 * x.astype(np.float64))


def test_python_number_input():
    value, g = F.value_and_grad(lambda t: t ** 3, 2.0)
    close(value, 8.0)
    close(g, 12.0)
    close(F.hessian(lambda t: t ** 3, 2.0), 12.0)


def test_tensor_inputs_are_accepted_and_not_modified():
    t = Tensor([1.0, 2.0], requires_grad=True)
    g = F.grad(cube_sum, t)
    close(g, [3.0, 12.0])
    assert t.grad is None
    a = np.array([1.0, 2.0])
    F.hessian(cube_sum, a)
    close(a, [1.0, 2.0])


# --------------------------------------------------------------------------- misuse


@pytest.mark.parametrize("returned", [
    pytest.param(lambda t: 1.0, id="float"),
    pytest.param(lambda t: t.data.sum(), id="numpy-scalar"),
    pytest.param(lambda t: t.data * 2, id="ndarray"),
    pytest.param(lambda t: [t], id="list"),
])
@pytest.mark.parametrize("call", [
    pytest.param(lambda f, x: F.grad(f, x), id="grad"),
    pytest.param(lambda f, x: F.vjp(f, x, np.ones(2)), id="vjp"),
    pytest.param(lambda f, x: F.jvp(f, x, np.ones(2)), id="jvp"),
    pytest.param(lambda f, x: F.jacobian(f, x), id="jacobian"),
    pytest.param(lambda f, x: F.hessian(f, x), id="hessian"),
    pytest.param(lambda f, x: F.hvp(f, x, np.ones(2)), id="hvp"),
])
def test_func_returning_a_non_tensor_is_a_clear_type_error(call, returned):
    with pytest.raises(TypeError, match="not a Tensor"):
        call(returned, np.array([1.0, 2.0]))


def test_grad_of_a_vector_output_is_a_clear_error():
    with pytest.raises(ValueError, match=r"scalar output.*shape \(2,\)"):
        F.grad(lambda t: t * 2, np.array([1.0, 2.0]))


def test_vjp_of_a_vector_output_needs_a_cotangent():
    with pytest.raises(ValueError, match="pass v"):
        F.vjp(lambda t: t * 2, np.array([1.0, 2.0]))
