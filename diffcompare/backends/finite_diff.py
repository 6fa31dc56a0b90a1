"""Finite differences: forward, central, complex step and Richardson extrapolation.

Every method evaluates the problem on NumPy (``problem.fn(numpy, *args)``) at
perturbed inputs, one differentiated scalar at a time, so a gradient of ``n``
scalars costs a number of evaluations proportional to ``n``:

===================  ==================================  ===========  ==============  =======================
backend              derivative along coordinate ``i``   evaluations  error           default ``h0`` (float64)
===================  ==================================  ===========  ==============  =======================
``fd-forward``       (f(x + h e_i) - f(x)) / h           n + 1        O(h) + eps/h    sqrt(eps) ~ 1.5e-8
``fd-central``       (f(x + h e_i) - f(x - h e_i)) / 2h  2n           O(h^2) + eps/h  cbrt(eps) ~ 6.1e-6
``fd-complex-step``  Im f(x + i h e_i) / h               n            O(h^2)          1e-20
``fd-richardson``    central differences at h, h/2, h/4  6n           O(h^6) + eps/h  eps^(1/5) ~ 7.4e-4
                     extrapolated, orders 2 -> 4 -> 6
===================  ==================================  ===========  ==============  =======================

Step size.  The step of coordinate ``i`` is ``h_i = h0 * max(1, |x_i|)`` (``relative=True``,
the default) or ``h_i = h0`` (``relative=False``).  The defaults balance truncation against
rounding: forward differences err by ``~ h|f''|/2 + eps|f|/h``, smallest near
``h = sqrt(eps)``; central differences by ``~ h^2|f'''|/6 + eps|f|/h``, smallest near
``h = cbrt(eps)``; the complex step has no subtraction, hence no rounding term, and any tiny
step works.  Richardson's sixth-order entry alone would be most accurate near
``h = eps^(1/7)``, but its error estimate is the error of the fourth-order entry, smallest
near ``h = eps^(1/5)``.  At ``eps^(1/5)`` the result is about as accurate (1e-13 to 1e-15
relative on smooth test functions), the estimate is tighter (around 1e-11 instead of up to
1e-7), and the smaller relative step is safer for oscillating functions at large ``|x|``, so
the default is ``eps^(1/5)`` (``eps^(1/(2L-1))`` for ``L`` levels).  ``eps`` is the machine
epsilon of the evaluation ``dtype``, so the float32 defaults are larger (``sqrt(eps32) ~
3.5e-4``, ``cbrt(eps32) ~ 4.9e-3``, ``eps32^(1/5) ~ 0.041``).  Pass ``step=`` to
override ``h0`` (the step-size experiment sweeps it):

>>> import numpy as np
>>> from diffcompare import backends
>>> from diffcompare.problems import Problem
>>> p = Problem("cube_sum", lambda xp, x: xp.sum(x ** 3),
...             lambda size, seed: (np.arange(1.0, size + 1),), "sum of cubes")
>>> fd = backends.get("fd-central", step=1e-4)
>>> prepared = fd.prepare(p, p.inputs(3))
>>> g, = fd.gradient(prepared, p.inputs(3))
>>> np.round(g, 6), prepared.evaluations
(array([ 3., 12., 27.]), 6)

Exactly representable steps.  ``x + h`` is rounded, so the step actually taken is
``(x + h) - x``, not ``h``; forward and central differences (and Richardson's) divide by the
step actually taken (``(x + h) - x``, resp. ``(x + h) - (x - h)``), which removes an error of
order ``ulp(x)/h`` (``~ 1e-8`` relative at ``h = sqrt(eps)``).  When ``h`` is so small that
``x + h == x`` the quotient is ``0/0`` and the gradient call fails with a message saying so;
``exact_step=False`` divides by the nominal ``h`` instead: the textbook formula, which returns
0 there (the right end of the classic error-versus-step plot).

Precision.  ``dtype="float32"`` casts every floating-point input to float32 (complex64 for
the complex step) before evaluating, to compare float32 against float64 error; the gradient
is still returned as float64.

Vector outputs.  Each perturbed evaluation gives one column of the Jacobian (the whole output
vector); ``vjp`` contracts each column with the cotangent, ``g_i = sum_j c_j J_ji``.

Derivative products.  ``fd-forward`` and ``fd-central`` give a vector output's whole
``jacobian`` from the same evaluations as a VJP (each perturbed evaluation is a column,
stored densely: at most ``product_limits``' entries); ``fd-central`` gives a scalar function's
``hessian_diagonal`` by second differences, ``(f(x + h e_i) - 2 f(x) + f(x - h e_i)) / h²``
with ``h = eps^(1/4) max(1, |x_i|)`` (truncation ``O(h²)`` against rounding ``eps |f| / h²``),
2n + 1 evaluations.

Richardson's error estimate.  After every call ``prepared.info["error_estimate"]`` holds one
float64 array per differentiated argument (the gradient's shapes): the distance between the
two best tableau entries plus a rounding term (see ``Richardson``).  It is an estimate, not a
rigorous bound, but it is deliberately conservative.
"""
from __future__ import annotations

import numpy as np

from .base import SUPPORTED, Backend, Prepared, Support, UnsupportedError
from ..problems import validity

_REAL = {"float64": np.float64, "float32": np.float32}
_COMPLEX = {np.float64: np.complex128, np.float32: np.complex64}


class StepTooSmall(ValueError):
    """``x + h`` rounded back to ``x``: the difference quotient would be 0/0."""


def _resolve_dtype(dtype):
    key = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    try:
        return _REAL[key]
    except KeyError:
        raise ValueError(f"dtype must be 'float64' or 'float32', got {dtype!r}.") from None


class _Contraction:
    """``d -> c . d`` for an output (difference) ``d``: the cotangent's contraction.

    Checks the cotangent against the first output it sees, so no evaluation is spent
    just to learn the output's shape.  ``cotangent=None`` means a scalar output (weight 1).
    """

    def __init__(self, cotangent):
        self.cotangent = None if cotangent is None else np.asarray(cotangent, dtype=np.float64)
        self.c = None

    def _bind(self, shape):
        if self.cotangent is None:
            if int(np.prod(shape)) != 1:
                raise ValueError(
                    f"the function returned shape {shape}, not a scalar: pass a cotangent "
                    "(problem.cotangent(size, seed)) to take a vector-Jacobian product.")
            self.c = np.ones(1)
            return
        if self.cotangent.shape != tuple(shape) and not (self.cotangent.size == 1
                                                          and int(np.prod(shape)) == 1):
            raise ValueError(f"the cotangent has shape {self.cotangent.shape} but the function's "
                             f"output has shape {tuple(shape)}; they must match.")
        self.c = self.cotangent.reshape(-1)

    def __call__(self, d) -> float:
        d = np.asarray(d, dtype=np.float64)
        if self.c is None:
            self._bind(d.shape)
        return float(np.dot(self.c, d.reshape(-1)))

    def scale(self, *values) -> float:
        """``max over values of sum_j |c_j| |f_j|``: what rounding errors are relative to."""
        if self.c is None:
            self._bind(np.shape(values[0]))
        return max(float(np.dot(np.abs(self.c), np.abs(np.asarray(v, np.float64)).reshape(-1)))
                   for v in values)


class FiniteDifference(Backend):
    """Shared machinery: working copies of the inputs, per-coordinate steps, counting.

    Options (every method): ``step`` (the base step ``h0``; default per method and dtype),
    ``relative`` (``h_i = h0 * max(1, |x_i|)`` if true, else ``h_i = h0``), ``dtype``
    (``"float64"`` or ``"float32"``), ``exact_step`` (divide by the step actually taken).
    """

    order = 1                       # truncation order in h
    evaluations_formula = "?"       # evaluations per gradient, for tables

    def __init__(self, step=None, relative=True, dtype="float64", exact_step=True):
        self.dtype = _resolve_dtype(dtype)
        self.eps = float(np.finfo(self.dtype).eps)
        step = self.default_step(self.eps) if step is None else float(step)
        if not np.isfinite(step) or step <= 0:
            raise ValueError(f"{self.name}: the step must be a positive finite number, got {step!r}.")
        self.step = step
        self.relative = bool(relative)
        self.exact_step = bool(exact_step)

    def default_step(self, eps: float) -> float:
        raise NotImplementedError

    product_limits = {"jacobian": (4_000_000, "each perturbed evaluation is a column, "
                                              "stored densely")}

    def _jacobian(self, prepared, inputs, central: bool) -> tuple:
        """The Jacobian's columns from perturbed evaluations: forward (n + 1) or central (2n)."""
        args = self._working_args(prepared.problem, inputs)
        f0 = None if central else np.asarray(self._evaluate(prepared, args), np.float64)
        jac = []
        for a, flat, hs in self._coordinates(prepared.problem, args):
            columns = []
            for j in range(flat.size):
                xj = flat[j]
                xp, xm = xj + hs[j], (xj - hs[j] if central else xj)
                if xp - xm == 0:
                    raise self._too_small(a, j, args[a].shape, xj, hs[j])
                flat[j] = xp
                fp = np.asarray(self._evaluate(prepared, args), np.float64)
                if central:
                    flat[j] = xm
                    fm = np.asarray(self._evaluate(prepared, args), np.float64)
                else:
                    fm = f0
                flat[j] = xj
                denom = float(xp - xm) if self.exact_step else float(hs[j]) * (2 if central else 1)
                columns.append((fp - fm) / denom)
            jac.append(np.stack(columns, axis=-1).reshape(columns[0].shape + args[a].shape))
        return tuple(jac)

    def __repr__(self):
        return (f"<backend {self.name} step={self.step:.3g} "
                f"{'relative' if self.relative else 'absolute'} {np.dtype(self.dtype).name}>")

    # --- the interface ------------------------------------------------------------------

    def prepare(self, problem, inputs) -> Prepared:
        # Nothing to derive or compile: remember the namespace and the settings.
        return Prepared(problem, state=np, info={
            "method": self.name, "step": self.step, "relative": self.relative,
            "dtype": np.dtype(self.dtype).name, "exact_step": self.exact_step,
            "order": self.order, "evaluations_per_gradient": self.evaluations_formula,
        })

    def function(self, prepared, inputs):
        # in the evaluation dtype, which is the dtype this method computes in
        return np.asarray(self._evaluate(prepared, self._working_args(prepared.problem, inputs)))

    # --- helpers ------------------------------------------------------------------------

    def _working_args(self, problem, inputs, complex_wrt=False) -> list:
        """Fresh C-contiguous copies in the evaluation dtype (perturbed in place, restored)."""
        args = []
        for i, a in enumerate(inputs):
            a = np.asarray(a)
            if i in problem.wrt and complex_wrt:
                a = np.array(a, dtype=_COMPLEX[self.dtype], order="C")
            elif i in problem.wrt or a.dtype.kind == "f":
                a = np.array(a, dtype=self.dtype, order="C")
            args.append(a)
        return args

    def _evaluate(self, prepared, args):
        prepared.evaluations += 1
        # A copy: an output that is a view of an input must not change when it is restored.
        return np.array(prepared.problem.fn(prepared.state, *args))

    def _steps(self, x):
        """Nominal steps for the coordinates ``x`` (a flat array in the working dtype)."""
        h0 = self.dtype(self.step)
        if self.relative:
            return (h0 * np.maximum(self.dtype(1), np.abs(x.real))).astype(self.dtype)
        return np.full(x.shape, h0, dtype=self.dtype)

    def _coordinates(self, problem, args):
        """``(arg_index, flat_view, nominal_steps)`` for each differentiated argument."""
        for a in problem.wrt:
            flat = args[a].reshape(-1)           # a view: args are fresh C-contiguous copies
            yield a, flat, self._steps(flat)

    def _too_small(self, arg, j, shape, x, h):
        idx = list(np.unravel_index(j, shape)) if shape else []
        return StepTooSmall(
            f"step h={float(h):.3g} is too small at argument {arg}{idx if idx else ''} = "
            f"{float(x):.17g}: x + h rounds to x in {np.dtype(self.dtype).name} (spacing "
            f"{float(np.spacing(self.dtype(x))):.3g}), so the difference quotient is 0/0. Use a "
            "larger step, or exact_step=False to divide by the nominal step (the textbook "
            "formula, which then returns 0).")

    def _central_gradient(self, prepared, args, contract, step_scale=1.0, rounding=None):
        """Central-difference gradient of ``c . f`` at ``args`` (2n evaluations).

        With ``rounding`` (a list), appends per differentiated argument an array of
        ``sum_j |c_j||f_j| / (half step taken)``: the scale of each quotient's rounding error.
        """
        grads = []
        for a, flat, hs in self._coordinates(prepared.problem, args):
            g = np.empty(flat.size)
            r = np.empty(flat.size) if rounding is not None else None
            for j in range(flat.size):
                xj = flat[j]
                h = self.dtype(hs[j] * step_scale)
                xp, xm = xj + h, xj - h
                denom = (xp - xm) if self.exact_step else 2 * h
                if denom == 0:
                    raise self._too_small(a, j, args[a].shape, xj, h)
                flat[j] = xp
                fp = self._evaluate(prepared, args)
                flat[j] = xm
                fm = self._evaluate(prepared, args)
                flat[j] = xj
                g[j] = contract(np.asarray(fp, np.float64) - np.asarray(fm, np.float64)) / float(denom)
                if r is not None:
                    r[j] = contract.scale(fp, fm) / (float(denom) / 2)
            grads.append(g.reshape(args[a].shape))
            if rounding is not None:
                rounding.append(r.reshape(args[a].shape))
        return grads


class ForwardDifference(FiniteDifference):
    """``(f(x + h e_i) - f(x)) / h``: first order, n + 1 evaluations."""

    name = "fd-forward"
    order = 1
    evaluations_formula = "n+1"

    def default_step(self, eps):
        return float(np.sqrt(eps))

    def timed_jacobian(self, prepared, inputs):
        return (lambda: self._jacobian(prepared, inputs, central=False)), tuple

    def vjp(self, prepared, inputs, cotangent=None):
        args = self._working_args(prepared.problem, inputs)
        contract = _Contraction(cotangent)
        f0 = self._evaluate(prepared, args)
        contract.scale(f0)                               # checks the output's shape once
        f0 = np.asarray(f0, np.float64)
        grads = []
        for a, flat, hs in self._coordinates(prepared.problem, args):
            g = np.empty(flat.size)
            for j in range(flat.size):
                xj = flat[j]
                xp = xj + hs[j]
                denom = (xp - xj) if self.exact_step else hs[j]
                if denom == 0:
                    raise self._too_small(a, j, args[a].shape, xj, hs[j])
                flat[j] = xp
                fp = self._evaluate(prepared, args)
                flat[j] = xj
                g[j] = contract(np.asarray(fp, np.float64) - f0) / float(denom)
            grads.append(g.reshape(args[a].shape))
        return tuple(grads)


class CentralDifference(FiniteDifference):
    """``(f(x + h e_i) - f(x - h e_i)) / 2h``: second order, 2n evaluations.

    ``hvp(prepared, inputs, v)`` differentiates the central-difference gradient along ``v``:
    ``(g(x + t v) - g(x - t v)) / 2t``, ``g`` the central-difference gradient (4n
    evaluations).  The inner gradients carry rounding noise of about ``eps^(2/3) |f|``, which
    the outer difference divides by ``t``; the outer truncation error is ``O(t^2)``.  The
    default ``t = eps^(2/9) * max(1, max|x|) / max|v|`` balances the two, for about
    ``eps^(4/9) ~ 1e-7`` relative accuracy in float64 (``hvp_step=`` overrides the
    ``eps^(2/9) ~ 3.3e-4`` base).  Scalar-output problems only.
    """

    name = "fd-central"
    order = 2
    evaluations_formula = "2n"

    def __init__(self, step=None, relative=True, dtype="float64", exact_step=True, hvp_step=None):
        super().__init__(step=step, relative=relative, dtype=dtype, exact_step=exact_step)
        self.hvp_step = self.eps ** (2 / 9) if hvp_step is None else float(hvp_step)
        if not np.isfinite(self.hvp_step) or self.hvp_step <= 0:
            raise ValueError(f"{self.name}: hvp_step must be a positive finite number, "
                             f"got {hvp_step!r}.")

    def default_step(self, eps):
        return float(np.cbrt(eps))

    def timed_jacobian(self, prepared, inputs):
        return (lambda: self._jacobian(prepared, inputs, central=True)), tuple

    def timed_hessian_diagonal(self, prepared, inputs):
        """Second central differences at ``h = eps^(1/4) max(1, |x_i|)`` (2n + 1 evaluations),
        divided by the steps actually taken (``(x + h) - x`` and ``x - (x - h)``)."""
        def call():
            args = self._working_args(prepared.problem, inputs)
            f0 = float(np.asarray(self._evaluate(prepared, args), np.float64).reshape(()))
            h0 = self.dtype(self.eps ** 0.25)
            diagonal = []
            for a, flat, _ in self._coordinates(prepared.problem, args):
                d = np.empty(flat.size)
                for j in range(flat.size):
                    xj = flat[j]
                    h = h0 * max(self.dtype(1), abs(xj)) if self.relative else h0
                    xp, xm = xj + h, xj - h
                    hp, hm = float(xp - xj), float(xj - xm)
                    if hp == 0 or hm == 0:
                        raise self._too_small(a, j, args[a].shape, xj, h)
                    flat[j] = xp
                    fp = float(np.asarray(self._evaluate(prepared, args), np.float64).reshape(()))
                    flat[j] = xm
                    fm = float(np.asarray(self._evaluate(prepared, args), np.float64).reshape(()))
                    flat[j] = xj
                    d[j] = 2 * (fp * hm + fm * hp - f0 * (hp + hm)) / (hp * hm * (hp + hm))
                diagonal.append(d.reshape(args[a].shape))
            return tuple(diagonal)

        return call, tuple

    def vjp(self, prepared, inputs, cotangent=None):
        args = self._working_args(prepared.problem, inputs)
        return tuple(self._central_gradient(prepared, args, _Contraction(cotangent)))

    def hvp(self, prepared, inputs, v):
        problem = prepared.problem
        if problem.vector_output:
            raise ValueError(f"hvp needs a scalar output; problem {problem.name!r} has a "
                             "vector output.")
        v = tuple(np.asarray(vi, dtype=np.float64)
                  for vi in (v if isinstance(v, (tuple, list)) else (v,)))
        if len(v) != len(problem.wrt):
            raise ValueError(f"hvp needs one direction per differentiated argument "
                             f"({len(problem.wrt)}), got {len(v)}.")
        for a, vi in zip(problem.wrt, v):
            if vi.shape != np.shape(inputs[a]):
                raise ValueError(f"the direction for argument {a} has shape {vi.shape}, "
                                 f"expected {np.shape(inputs[a])}.")
        vmax = max((float(np.max(np.abs(vi))) if vi.size else 0.0) for vi in v)
        if vmax == 0:
            return tuple(np.zeros(np.shape(inputs[a])) for a in problem.wrt)
        xmax = max((float(np.max(np.abs(inputs[a]))) if np.size(inputs[a]) else 0.0)
                   for a in problem.wrt)
        t = self.hvp_step * (max(1.0, xmax) if self.relative else 1.0) / vmax
        sides = []
        for sign in (1.0, -1.0):
            shifted = list(inputs)
            for a, vi in zip(problem.wrt, v):
                shifted[a] = np.asarray(inputs[a], np.float64) + sign * t * vi
            sides.append(self._central_gradient(
                prepared, self._working_args(problem, shifted), _Contraction(None)))
        return tuple((gp - gm) / (2 * t) for gp, gm in zip(*sides))


class ComplexStep(FiniteDifference):
    """``Im f(x + i h e_i) / h``: second order without a subtraction, n evaluations.

    Works only for functions that are complex-analytic as written: ``abs``, ``max``,
    comparisons and casts to real break it -- silently, since ``np.abs`` of a complex number
    is its modulus.  ``supports`` refuses problems tagged ``nonsmooth`` or
    ``not-complex-analytic``, and a function that returns a real value for a complex input
    is an error at run time.
    """

    name = "fd-complex-step"
    order = 2
    evaluations_formula = "n"

    def default_step(self, eps):
        return 1e-20

    def supports(self, problem):
        if not problem.complex_analytic:
            why = "nonsmooth" if not problem.smooth else "not-complex-analytic"
            return Support(False, f"complex step needs a complex-analytic function; "
                                  f"{problem.name!r} is tagged {why!r} (abs, max and comparisons "
                                  "give silently wrong derivatives at complex points).")
        # untagged (a user's own function): read the ops it applies from one evaluation
        broken = validity.facts(problem).non_analytic
        if broken:
            where = ", ".join(str(use) for use in broken)
            return Support(False, f"complex step needs a complex-analytic function; "
                                  f"{problem.name!r} uses {where}, which NumPy evaluates at a "
                                  "complex point without the imaginary part's derivative (abs is "
                                  "the modulus): the gradient would be silently wrong. Use "
                                  "fd-central, or an exact method.")
        return SUPPORTED

    def vjp(self, prepared, inputs, cotangent=None):
        problem = prepared.problem
        args = self._working_args(problem, inputs, complex_wrt=True)
        contract = _Contraction(cotangent)
        grads = []
        for a, flat, hs in self._coordinates(problem, args):
            g = np.empty(flat.size)
            for j in range(flat.size):
                xj = flat[j]
                flat[j] = xj + 1j * hs[j]
                f = self._evaluate(prepared, args)
                flat[j] = xj
                if not np.iscomplexobj(f):
                    if self._constant(prepared, problem, inputs):   # f' = 0, exactly
                        return tuple(np.zeros(np.shape(inputs[i])) for i in problem.wrt)
                    raise TypeError(
                        f"problem {problem.name!r} returned a real {f.dtype} value for a complex "
                        "input: it drops the imaginary part (abs, real, a comparison or a cast to "
                        "float), so the complex step cannot differentiate it. Tag the problem "
                        "'not-complex-analytic' (or 'nonsmooth') so that this method skips it.")
                g[j] = contract(f.imag) / float(hs[j])
            grads.append(g.reshape(args[a].shape))
        return tuple(grads)


    def prepare(self, problem, inputs):
        prepared = super().prepare(problem, inputs)
        if not validity.facts(problem).ran:   # the engine could not read its ops: probe it
            self._probe_analytic(prepared, problem, inputs)
        return prepared

    def _probe_analytic(self, prepared, problem, inputs):
        """Refuse a function that is not complex-analytic as written, when its ops are unknown
        (the engine cannot evaluate it): its derivative along one seeded random direction by
        the complex step must agree with central differences.  ``abs`` (the modulus at a
        complex point) makes them disagree by O(1); a genuine derivative agrees to ~1e-8."""
        rng = np.random.default_rng(0)
        xs = [np.asarray(a, np.float64) for a in inputs]
        v = {i: rng.standard_normal(xs[i].shape) for i in problem.wrt}
        counted = prepared.evaluations

        def at(shift):
            args = [x + shift * v[i] if i in v else x for i, x in enumerate(xs)]
            with np.errstate(all="ignore"):
                return np.asarray(problem.fn(np, *args))

        f0 = at(0.0)
        w = rng.standard_normal(f0.shape)
        step = 1e-6 * max(1.0, max(float(np.max(np.abs(xs[i]), initial=0.0)) for i in v))
        central = float(np.sum(w * (at(step) - at(-step)))) / (2 * step)
        value = at(1e-20j)
        prepared.evaluations = counted
        if not np.iscomplexobj(value):
            return                                  # the run's own guard says what to do
        complex_step = float(np.sum(w * value.imag)) / 1e-20
        scale = abs(central) + 1e-6 * float(np.sum(np.abs(w * f0))) + 1e-8
        if not np.isfinite(central) or abs(complex_step - central) <= 1e-4 * scale:
            return
        raise UnsupportedError(problem.name, self.name,
                               f"complex step needs a complex-analytic function; along "
                               f"a random direction {problem.name!r}'s derivative is {central:.6g} "
                               f"by central differences but {complex_step:.6g} by the complex step, "
                               "so NumPy evaluates it at complex points without the imaginary "
                               "part's derivative (abs, a cast): use fd-central or an exact method.")

    def _constant(self, prepared, problem, inputs) -> bool:
        """Whether f has the same value (bit for bit) at x and at a real point moved in every
        differentiated coordinate: a constant function returns a real value for a complex
        input without dropping any derivative."""
        moved = list(inputs)
        for i in problem.wrt:
            x = np.asarray(inputs[i], np.float64)
            moved[i] = x + 1e-3 * (1 + np.abs(x)) * np.random.default_rng(i).uniform(0.5, 1, x.shape)
        with np.errstate(all="ignore"):
            here = np.asarray(self._evaluate(prepared, self._working_args(problem, inputs)))
            there = np.asarray(self._evaluate(prepared, self._working_args(problem, moved)))
        return here.shape == there.shape and bool(np.all((here == there) | (np.isnan(here) & np.isnan(there))))


class Richardson(FiniteDifference):
    """Central differences at ``h, h/2, ..., h/2^(L-1)``, extrapolated in a Neville tableau.

    Central differences err by ``a2 h^2 + a4 h^4 + ...``; each column of the tableau
    ``T[k][m] = T[k][m-1] + (T[k][m-1] - T[k-1][m-1]) / (4^m - 1)`` cancels one more term,
    so ``levels=3`` (the default) goes from order 2 through 4 to 6, with 2n evaluations per
    level (6n).  ``step`` is the largest step, ``h``.

    The error estimate, ``prepared.info["error_estimate"]`` (one float64 array per
    differentiated argument, refreshed by every ``gradient``/``vjp`` call; also
    ``backend.error_estimate(prepared)``), is ``|T[L-1][L-1] - T[L-1][L-2]|`` -- the last
    correction, which bounds the error of the best entry while the expansion holds -- plus
    the rounding error the tableau carries: ``10 eps sum_k |w_k| (sum_j |c_j||f_j|) / h_k``,
    ``w_k`` the final entry's weight on level ``k``'s quotient and the factor 10 allowing
    for a few ulps of error in each evaluation of ``f``.
    """

    name = "fd-richardson"
    rounding_factor = 10.0

    def __init__(self, step=None, relative=True, dtype="float64", exact_step=True, levels=3):
        self.levels = int(levels)
        if self.levels < 2:
            raise ValueError("Richardson extrapolation needs levels >= 2 (one level is plain "
                             "central differences: use 'fd-central').")
        self.order = 2 * self.levels
        self.evaluations_formula = f"{2 * self.levels}n"
        super().__init__(step=step, relative=relative, dtype=dtype, exact_step=exact_step)

    def default_step(self, eps):
        # The estimate is the error of the order-(2L-2) entry, O(h^(2L-2)) + O(eps/h), smallest
        # near eps^(1/(2L-1)); the order-2L result is as accurate there (module docstring).
        return float(eps ** (1.0 / (2 * self.levels - 1)))

    def prepare(self, problem, inputs):
        prepared = super().prepare(problem, inputs)
        prepared.info["levels"] = self.levels
        return prepared

    @staticmethod
    def weights(levels: int) -> np.ndarray:
        """The final tableau entry's coefficients on the level quotients ``D_0 .. D_{L-1}``."""
        col = list(np.eye(levels))                       # T[k][0] = D_k
        for m in range(1, levels):
            col = [col[k] + (col[k] - col[k - 1]) / (4 ** m - 1) for k in range(1, len(col))]
        return col[-1]

    def vjp(self, prepared, inputs, cotangent=None):
        problem = prepared.problem
        args = self._working_args(problem, inputs)
        contract = _Contraction(cotangent)
        quotients, roundings = [], []
        for k in range(self.levels):
            rounding = []
            quotients.append(self._central_gradient(prepared, args, contract, 0.5 ** k, rounding))
            roundings.append(rounding)
        w = np.abs(self.weights(self.levels))
        grads, estimates = [], []
        for i in range(len(problem.wrt)):
            col, prev = [q[i] for q in quotients], None
            for m in range(1, self.levels):
                prev = col
                col = [col[k] + (col[k] - col[k - 1]) / (4 ** m - 1) for k in range(1, len(col))]
            best, second = col[-1], prev[-1]
            rounding = sum(w[k] * roundings[k][i] for k in range(self.levels))
            estimates.append(np.abs(best - second) + self.rounding_factor * self.eps * rounding)
            grads.append(best)
        prepared.info["error_estimate"] = tuple(estimates)
        return tuple(grads)

    def error_estimate(self, prepared) -> tuple:
        """The per-element error estimate of the last ``gradient``/``vjp`` call."""
        try:
            return prepared.info["error_estimate"]
        except KeyError:
            raise ValueError("no error estimate yet: call gradient or vjp first.") from None
