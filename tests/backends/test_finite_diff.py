"""Finite differences: accuracy on known closed forms, evaluation counts, options, refusals."""
import mpmath
import numpy as np
import pytest

from diffcompare import backends
from diffcompare.backends.base import BackendError
from diffcompare.backends.finite_diff import Richardson, StepTooSmall
from diffcompare.problems import Problem

FD = ["fd-forward", "fd-central", "fd-complex-step", "fd-richardson"]


def fixed(*arrays):
    """An input maker that ignores size and seed."""
    return lambda size, seed: tuple(np.array(a, dtype=np.float64) for a in arrays)


def squire_trapp(x0=1.5):
    """Squire & Trapp (1998): e^x / sqrt(sin^3 x + cos^3 x)."""
    return Problem("squire_trapp",
                   lambda xp, x: xp.sum(xp.exp(x) / xp.sqrt(xp.sin(x) ** 3 + xp.cos(x) ** 3)),
                   fixed([x0]), "Squire-Trapp test function")


def squire_trapp_derivative(x0=1.5) -> float:
    """The analytic derivative f (1 - s'/(2s)), s = sin^3 + cos^3, to 40 digits."""
    with mpmath.workdps(40):
        x = mpmath.mpf(x0)
        s = mpmath.sin(x) ** 3 + mpmath.cos(x) ** 3
        ds = 3 * mpmath.sin(x) ** 2 * mpmath.cos(x) - 3 * mpmath.cos(x) ** 2 * mpmath.sin(x)
        f = mpmath.exp(x) / mpmath.sqrt(s)
        return float(f * (1 - ds / (2 * s)))


def rosenbrock(n=5):
    return Problem("rosenbrock",
                   lambda xp, x: xp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
                   lambda size, seed: (np.random.default_rng(seed).uniform(-2, 2, size),),
                   "Rosenbrock", sizes=(n,))


def rosenbrock_grad(x):
    g = np.zeros_like(x)
    a = x[1:] - x[:-1] ** 2
    g[:-1] = -400 * a * x[:-1] - 2 * (1 - x[:-1])
    g[1:] += 200 * a
    return g


def rosenbrock_hessian(x):
    n = len(x)
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        H[i + 1, i + 1] += 200
        H[i, i + 1] = H[i + 1, i] = -400 * x[i]
    return H


def seed002():
    """Seed 002: y = 3a + 2b^2 + log(c), differentiated with y.backward(gradients)."""
    return Problem("seed002", lambda xp, a, b, c: 3 * a + 2 * b * b + xp.log(c),
                   fixed([1.0, 2.0, 3.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]), "seed 002",
                   wrt=(0, 1, 2), tags={"smooth", "vector-output"},
                   make_cotangent=lambda size, seed: np.array([0.1, 1.0, 0.0001]))


def abs_problem(tags=frozenset({"nonsmooth"})):
    return Problem("abs_sum", lambda xp, x: xp.sum(xp.abs(x)), fixed([1.0, -2.0]), "sum |x|",
                   tags=tags)


def grad_of(name, problem, size=1, **options):
    backend = backends.get(name, **options)
    inputs = problem.inputs(size)
    prepared = backends.checked_prepare(backend, problem, inputs)
    grads = backends.checked_vjp(backend, prepared, inputs, problem.cotangent(size))
    return grads, prepared


# --- accuracy on Squire-Trapp -----------------------------------------------------------

ST_BOUNDS = {"fd-forward": 1e-7, "fd-central": 1e-9, "fd-complex-step": 1e-15,
             "fd-richardson": 1e-11}


def test_squire_trapp_accuracy_at_default_steps():
    exact = squire_trapp_derivative()
    errors = {}
    for name, bound in ST_BOUNDS.items():
        (g,), _ = grad_of(name, squire_trapp())
        errors[name] = abs(g[0] - exact) / abs(exact)
        assert errors[name] < bound, (name, errors[name])
    # forward (O(sqrt eps)) > central (O(eps^2/3)) > Richardson > complex step (O(eps))
    assert errors["fd-forward"] > 1e-9
    assert errors["fd-forward"] > errors["fd-central"] > errors["fd-richardson"] \
        > errors["fd-complex-step"]


def test_richardson_error_estimate_bounds_actual_error():
    exact = squire_trapp_derivative()
    (g,), prepared = grad_of("fd-richardson", squire_trapp())
    (est,) = prepared.info["error_estimate"]
    assert est.shape == g.shape
    assert abs(g[0] - exact) <= est[0] < 1e-9 * abs(exact)
    assert backends.get("fd-richardson").error_estimate(prepared) is prepared.info["error_estimate"]


@pytest.mark.parametrize("func, mfunc", [
    (lambda xp, x: xp.exp(x), mpmath.exp),
    (lambda xp, x: xp.sin(x), mpmath.sin),
    (lambda xp, x: xp.log(x), mpmath.log),
    (lambda xp, x: xp.tanh(3 * x), lambda x: mpmath.tanh(3 * x)),
    (lambda xp, x: 1 / (1 + 25 * x * x), lambda x: 1 / (1 + 25 * x * x)),
])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_richardson_estimate_bounds_error_elementwise(func, mfunc, dtype):
    xs = [0.3, 1.5, 7.0, 40.0]
    p = Problem("f", lambda xp, x: xp.sum(func(xp, x)), fixed(xs), "test function")
    (g,), prepared = grad_of("fd-richardson", p, dtype=dtype)
    with mpmath.workdps(30):
        exact = np.array([float(mpmath.diff(mfunc, mpmath.mpf(x))) for x in xs])
    (est,) = prepared.info["error_estimate"]
    assert np.all(np.abs(g - exact) <= est)


def test_richardson_estimate_refreshed_per_call_and_levels():
    p = rosenbrock()
    inputs = p.inputs(5)
    backend = backends.get("fd-richardson", levels=2)
    prepared = backend.prepare(p, inputs)
    with pytest.raises(ValueError, match="call gradient"):
        backend.error_estimate(prepared)
    (g,) = backend.gradient(prepared, inputs)
    assert prepared.evaluations == 4 * 5
    np.testing.assert_allclose(g, rosenbrock_grad(inputs[0]), rtol=1e-8)
    first = prepared.info["error_estimate"]
    backend.gradient(prepared, p.inputs(5, seed=1))
    assert prepared.info["error_estimate"] is not first
    assert backend.order == 4 and prepared.info["levels"] == 2
    with pytest.raises(ValueError, match="levels >= 2"):
        backends.get("fd-richardson", levels=1)
    np.testing.assert_allclose(Richardson.weights(3), [1 / 45, -20 / 45, 64 / 45])


# --- evaluation counts ------------------------------------------------------------------

@pytest.mark.parametrize("name, count", [("fd-forward", 6), ("fd-central", 10),
                                         ("fd-complex-step", 5), ("fd-richardson", 30)])
def test_evaluation_counts(name, count):
    p = rosenbrock()
    (g,), prepared = grad_of(name, p, size=5)
    assert prepared.evaluations == count
    backend = backends.get(name)
    prepared = backend.prepare(p, p.inputs(5))
    assert prepared.evaluations == 0                       # prepare evaluates nothing
    backends.checked_function(backend, prepared, p.inputs(5))
    assert prepared.evaluations == 1
    np.testing.assert_allclose(g, rosenbrock_grad(p.inputs(5)[0]), rtol=1e-6, atol=1e-6)


def test_counts_span_every_differentiated_argument():
    p = seed002()          # 3 arguments of 3 scalars: n = 9
    expected = {"fd-forward": 10, "fd-central": 18, "fd-complex-step": 9, "fd-richardson": 54}
    for name, count in expected.items():
        _, prepared = grad_of(name, p)
        assert prepared.evaluations == count, name
        assert prepared.info["evaluations_per_gradient"] in ("n+1", "2n", "n", "6n")


# --- vector outputs ---------------------------------------------------------------------

@pytest.mark.parametrize("name, tol", [("fd-forward", 1e-6), ("fd-central", 1e-9),
                                       ("fd-complex-step", 1e-14), ("fd-richardson", 1e-10)])
def test_vector_output_vjp_seed002(name, tol):
    (ga, gb, gc), _ = grad_of(name, seed002())
    cot = np.array([0.1, 1.0, 0.0001])
    np.testing.assert_allclose(ga, 3 * cot, rtol=tol)                    # [0.3, 3, 3e-4]
    np.testing.assert_allclose(gb, 4 * np.array([3.0, 4.0, 5.0]) * cot, rtol=tol)
    np.testing.assert_allclose(gc, cot / np.array([6.0, 7.0, 8.0]), rtol=tol, atol=tol * 1e-4)


def test_vector_output_needs_matching_cotangent():
    p = seed002()
    backend = backends.get("fd-central")
    prepared = backend.prepare(p, p.inputs(1))
    with pytest.raises(BackendError, match="pass its cotangent"):
        backends.checked_vjp(backend, prepared, p.inputs(1), None)
    with pytest.raises(BackendError, match=r"cotangent has shape \(2,\).*\(3,\)"):
        backends.checked_vjp(backend, prepared, p.inputs(1), np.ones(2))
    untagged = Problem("vec", lambda xp, x: x * x, fixed([1.0, 2.0]), "untagged vector")
    with pytest.raises(BackendError, match="not a scalar"):
        grad_of("fd-forward", untagged)


def test_output_aliasing_an_input_is_copied():
    # fn returns a view of its input: restoring the perturbed element must not change it.
    p = Problem("view", lambda xp, x: x[1:], fixed([1.0, 2.0, 3.0]), "a view",
                tags={"smooth", "vector-output"}, make_cotangent=lambda s, seed: np.array([1.0, 2.0]))
    for name in FD:
        (g,), _ = grad_of(name, p)
        np.testing.assert_allclose(g, [0.0, 1.0, 2.0], atol=1e-9)


# --- step options -----------------------------------------------------------------------

def cube_sum(xs):
    return Problem("cube_sum", lambda xp, x: xp.sum(x ** 3), fixed(xs), "sum of cubes")


def test_step_option_absolute_and_relative():
    x = np.array([0.5, 1.5, 3.0])
    h = 2.0 ** -7                   # exactly representable: x +- h are exact
    # central: ((x+h)^3 - (x-h)^3) / 2h = 3x^2 + h^2 ; forward: 3x^2 + 3xh + h^2
    (g,), prepared = grad_of("fd-central", cube_sum(x), step=h, relative=False)
    np.testing.assert_allclose(g, 3 * x ** 2 + h ** 2, rtol=1e-12)
    assert prepared.info["step"] == h and prepared.info["relative"] is False
    (g,), _ = grad_of("fd-forward", cube_sum(x), step=h, relative=False)
    np.testing.assert_allclose(g, 3 * x ** 2 + 3 * x * h + h ** 2, rtol=1e-12)
    # relative: h_i = h * max(1, |x_i|)
    hi = h * np.maximum(1, np.abs(x))
    (g,), _ = grad_of("fd-central", cube_sum(x), step=h)
    np.testing.assert_allclose(g, 3 * x ** 2 + hi ** 2, rtol=1e-12)
    # complex step: Im (x + ih)^3 / h = 3x^2 - h^2
    (g,), _ = grad_of("fd-complex-step", cube_sum(x), step=h, relative=False)
    np.testing.assert_allclose(g, 3 * x ** 2 - h ** 2, rtol=1e-14)


def test_default_steps():
    eps = np.finfo(np.float64).eps
    assert backends.get("fd-forward").step == pytest.approx(np.sqrt(eps))
    assert backends.get("fd-central").step == pytest.approx(np.cbrt(eps))
    assert backends.get("fd-complex-step").step == 1e-20
    assert backends.get("fd-richardson").step == pytest.approx(eps ** 0.2)
    eps32 = np.finfo(np.float32).eps
    assert backends.get("fd-central", dtype="float32").step == pytest.approx(np.cbrt(eps32))
    for bad in (0, -1e-3, float("nan")):
        with pytest.raises(ValueError, match="positive finite"):
            backends.get("fd-central", step=bad)
    with pytest.raises(ValueError, match="float64' or 'float32"):
        backends.get("fd-central", dtype="float16")


@pytest.mark.parametrize("x0", [0.1, 1 / 3, 7.7])
def test_exactly_representable_step(x0):
    # f(x) = x: f(x+h) - f(x) is exactly the step actually taken, so dividing by it gives 1.
    p = Problem("identity", lambda xp, x: xp.sum(x), fixed([x0]), "x")
    (g,), _ = grad_of("fd-forward", p, step=1e-9)
    assert g[0] == 1.0
    (g,), _ = grad_of("fd-central", p, step=1e-9)
    assert g[0] == 1.0
    (g,), _ = grad_of("fd-forward", p, step=1e-9, exact_step=False)   # textbook: off by ulp/h
    assert abs(g[0] - 1) > 1e-11


@pytest.mark.parametrize("name", ["fd-forward", "fd-central", "fd-richardson"])
def test_step_below_spacing(name):
    p = squire_trapp()
    with pytest.raises(BackendError, match=r"too small.*x \+ h rounds to x"):
        grad_of(name, p, step=1e-20)
    backend = backends.get(name, step=1e-20)
    prepared = backend.prepare(p, p.inputs(1))
    with pytest.raises(StepTooSmall):
        backend.gradient(prepared, p.inputs(1))
    (g,), _ = grad_of(name, p, step=1e-20, exact_step=False)   # textbook quotient: 0
    np.testing.assert_array_equal(g, 0.0)


def test_complex_step_takes_tiny_steps():
    exact = squire_trapp_derivative()
    for h in (1e-8, 1e-20, 1e-100):
        (g,), _ = grad_of("fd-complex-step", squire_trapp(), step=h)
        assert abs(g[0] - exact) / exact < 1e-15


# --- complex step refusals --------------------------------------------------------------

@pytest.mark.parametrize("tag", ["nonsmooth", "not-complex-analytic"])
def test_complex_step_refuses_non_analytic(tag):
    p = abs_problem(tags={tag})
    support = backends.get("fd-complex-step").supports(p)
    assert not support
    assert "complex-analytic" in support.reason and tag in support.reason
    assert "abs" in support.reason
    with pytest.raises(BackendError, match="unsupported: complex step needs"):
        grad_of("fd-complex-step", p)
    for name in ("fd-forward", "fd-central", "fd-richardson"):     # the real methods still run
        assert backends.get(name).supports(p)
        (g,), _ = grad_of(name, p)
        np.testing.assert_allclose(g, [1.0, -1.0])


def test_complex_step_refuses_an_untagged_abs_naming_the_op_and_line():
    """A user's ridge + L1 objective carries no tags: the complex step used to return
    status ok with the L1 term's gradient missing (np.abs of x + ih is the modulus)."""
    def ridge_l1(xp, w):
        return xp.sum(w ** 2) + 0.5 * xp.sum(xp.abs(w))   # the line the refusal names

    line = ridge_l1.__code__.co_firstlineno + 1
    p = Problem("ridge_l1", ridge_l1, fixed([1.0, -2.0, 0.5]), "ridge + L1", tags={"smooth"})
    support = backends.get("fd-complex-step").supports(p)
    assert not support
    assert f"abs at test_finite_diff.py:{line}" in support.reason
    with pytest.raises(BackendError, match="unsupported: complex step needs"):
        grad_of("fd-complex-step", p)
    (g,), _ = grad_of("fd-central", p)                     # the real methods still run
    np.testing.assert_allclose(g, [2.5, -4.5, 1.5], rtol=1e-8)


@pytest.mark.parametrize("op", ["sign", "linalg.norm"])
def test_complex_step_refuses_other_non_analytic_ops(op):
    fn = {"sign": lambda xp, x: xp.sum(x * xp.sign(x)),
          "linalg.norm": lambda xp, x: xp.linalg.norm(x) + xp.sum(x)}[op]
    p = Problem("non_analytic", fn, fixed([1.0, -2.0]), op, tags={"smooth"})
    support = backends.get("fd-complex-step").supports(p)
    assert not support and "complex step needs" in support.reason


def test_complex_step_analytic_functions_still_run():
    p = Problem("analytic", lambda xp, x: xp.sum(xp.exp(x) * xp.sin(x) + xp.maximum(x, 0.0)),
                fixed([1.0, -2.0]), "exp sin + relu", tags={"smooth"})
    assert backends.get("fd-complex-step").supports(p)
    (g,), _ = grad_of("fd-complex-step", p)
    x = np.array([1.0, -2.0])
    np.testing.assert_allclose(g, np.exp(x) * (np.sin(x) + np.cos(x)) + (x > 0), rtol=1e-14)


def test_complex_step_of_a_constant_function_is_zero():
    p = Problem("constant", lambda xp, x: xp.asarray(3.0), fixed([1.5, -2.5]),
                "constant", tags={"smooth"})
    (g,), _ = grad_of("fd-complex-step", p)
    assert np.array_equal(g, [0.0, 0.0])


def test_complex_step_runtime_guard_when_the_engine_cannot_run_it():
    # the engine cannot evaluate it (np.abs of a Tensor), so nothing is
    # known before the run; the run refuses the real value the complex input gave
    p = Problem("np_abs", lambda xp, x: np.sum(np.abs(x)), fixed([1.0, -2.0]), "sum |x|",
                tags={"smooth"})
    assert backends.get("fd-complex-step").supports(p)
    with pytest.raises(BackendError, match="returned a real .* for a complex input"):
        grad_of("fd-complex-step", p)


# --- float32 ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", FD)
def test_float32_evaluation(name):
    seen = []

    def fn(xp, x, scale):
        seen.append((x.dtype, scale.dtype))
        return xp.sum(scale * xp.exp(x) / xp.sqrt(xp.sin(x) ** 3 + xp.cos(x) ** 3))

    p = Problem("st32", fn, fixed([1.5], [1.0]), "Squire-Trapp in float32")
    exact = squire_trapp_derivative()
    (g64,), _ = grad_of(name, p)
    seen.clear()
    (g32,), prepared = grad_of(name, p, dtype="float32")
    assert prepared.info["dtype"] == "float32" and g32.dtype == np.float64
    expected_x = np.complex64 if name == "fd-complex-step" else np.float32
    assert all(x == expected_x and s == np.float32 for x, s in seen)
    err32, err64 = abs(g32[0] - exact) / exact, abs(g64[0] - exact) / exact
    assert err32 < 1e-2                                 # float32 is still a usable derivative
    assert err32 > 100 * err64 and err32 > 1e-8         # ... but far less accurate


# --- hvp --------------------------------------------------------------------------------

def test_central_hvp_against_analytic_hessian():
    p = rosenbrock()
    inputs = p.inputs(5, seed=3)
    v = np.random.default_rng(7).standard_normal(5)
    backend = backends.get("fd-central")
    assert backend.has_hvp and not backends.get("fd-forward").has_hvp
    prepared = backend.prepare(p, inputs)
    (hv,) = backend.hvp(prepared, inputs, (v,))
    exact = rosenbrock_hessian(inputs[0]) @ v
    assert np.max(np.abs(hv - exact)) / np.max(np.abs(exact)) < 1e-6
    assert prepared.evaluations == 4 * 5
    (zero,) = backend.hvp(prepared, inputs, (np.zeros(5),))
    np.testing.assert_array_equal(zero, 0.0)
    with pytest.raises(ValueError, match="shape"):
        backend.hvp(prepared, inputs, (np.zeros(4),))
    vec = seed002()
    with pytest.raises(ValueError, match="scalar output"):
        backend.hvp(backend.prepare(vec, vec.inputs(1)), vec.inputs(1), (np.ones(3),) * 3)


# --- shapes -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", FD)
def test_matrix_and_scalar_arguments(name):
    # a 0-d argument, a 2-D argument and a non-differentiated integer argument
    p = Problem("mixed", lambda xp, a, W, k: xp.sum(xp.sin(W) * a * k), 
                lambda size, seed: (np.array(0.7), np.arange(6.0).reshape(2, 3) / 5,
                                    np.array(3)),
                "a * sin(W) * k", wrt=(0, 1))
    (ga, gW), _ = grad_of(name, p)
    inputs = p.inputs(1)
    assert ga.shape == () and gW.shape == (2, 3)
    np.testing.assert_allclose(ga, 3 * np.sin(inputs[1]).sum(), rtol=1e-6)
    np.testing.assert_allclose(gW, 3 * 0.7 * np.cos(inputs[1]), rtol=1e-6)


def test_complex_step_probes_a_function_the_engine_cannot_read():
    """np.abs inside a function the engine cannot evaluate (so its ops are unknown), with the
    result staying complex (the ridge term): the probe along a random direction sees the
    complex step disagree with central differences and refuses, naming both numbers."""
    from diffcompare.backends.base import UnsupportedError

    p = Problem("np_ridge_l1", lambda xp, w: xp.sum(w ** 2) + np.sum(np.abs(w)),
                fixed([1.0, -2.0, 0.5]), "ridge + np.abs", tags={"smooth"})
    assert backends.get("fd-complex-step").supports(p)      # nothing known before the run
    with pytest.raises(UnsupportedError, match="by central differences but .* by the complex step"):
        grad_of("fd-complex-step", p)


def test_complex_step_probe_passes_an_analytic_function_the_engine_cannot_read():
    p = Problem("np_exp", lambda xp, x: np.sum(np.exp(x) * np.sin(x)), fixed([0.3, -1.2, 2.0]),
                "exp sin through np", tags={"smooth"})
    (g,), prepared = grad_of("fd-complex-step", p)
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(g, np.exp(x) * (np.sin(x) + np.cos(x)), rtol=1e-14)
    assert prepared.evaluations == 3                         # the probe is not counted
