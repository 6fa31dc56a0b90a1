"""SymPy backends: exact symbolic derivatives, scalar-expanded, with and without CSE.

``prepare`` runs the problem's ``fn`` on SymPy symbols (one real symbol per scalar,
``diffcompare.problems.symbolic``), differentiates the resulting expression exactly
with ``sympy.diff`` w.r.t. every differentiated scalar, and turns the derivatives into
a NumPy function with ``sympy.lambdify``.  ``sympy-cse`` first runs common-subexpression
elimination (``sympy.cse``) over the derivative list, so shared work is computed once.

>>> from diffcompare import backends, problems
>>> p = problems.get("rosenbrock")
>>> x = p.inputs(2, seed=0)
>>> b = backends.get("sympy")
>>> prepared = b.prepare(p, x)
>>> g, = b.gradient(prepared, x)
>>> e, = backends.compute_gradient(backends.get("engine"), p, x)
>>> bool(abs(g - e).max() < 1e-12), prepared.info["n_wrt_symbols"]
(True, 2)

What it does:

- **Scalar outputs**: the gradient list ``[∂f/∂x_j]`` is lambdified once.
- **Vector outputs** (``vector-output``): the sparse Jacobian ``∂y_i/∂x_j`` is derived (only
  for the symbols each output contains) and lambdified; ``vjp`` contracts it with the
  cotangent numerically, so one derivation serves every cotangent.
- **Non-differentiated inputs** are symbols too by default (``constants="symbols"``): the
  derivation is done once for any data of the same shapes, and no float is baked into the
  generated code.  ``constants="numbers"`` bakes them in as constants (SymPy then folds them,
  e.g. ``mean(x * w)`` collapses to ``1.5*w``); the inputs given to ``vjp`` must then equal
  those given to ``prepare`` (checked).
- **hvp**: the Hessian-vector product ``∂(∇f · v)/∂x`` with ``v`` symbolic, derived on the
  first call (its time is recorded in ``prepared.info["hvp_prepare_s"]``); smooth scalar
  problems only.
- Floats in generated code are printed with ``repr`` (17 significant digits), not SymPy's
  default 15, so constants keep their float64 value.

At kinks (a finding, not hidden): symbols are real, so ``d|x|/dx = sign(x)`` (0 at 0, like the
engine); ``d Max(x, y)/dx = Heaviside(x - y)`` and lambdify evaluates ``Heaviside(0)`` as
``1/2``, so ``maximum(x, 0)`` has derivative 1/2 at 0 (as the engine's tie split), but an
n-way tie in a ``max`` reduction gives 1/2 to *every* tied element (the engine gives 1/n:
a 3-way tie sums to 3/2 here, 1 there); ``where`` becomes ``Piecewise`` and takes the
branch its condition selects.  Second derivatives of kinks are ``DiracDelta`` terms, so
``hvp`` refuses nonsmooth problems.

What it cannot do: more than ``max_inputs`` differentiated scalars (default 400) or
``max_symbols`` symbols in all (default 20000) are refused as unsupported (``supports_inputs``),
and so is a function or derivative whose expression tree exceeds ``max_tree_ops`` operations
(default 20000 for ``sympy``, 100000 for ``sympy-cse``; exponential swell in loops such as ``logistic_map`` and ``rnn_loop``),
since printing it for lambdify would take minutes; with CSE the limit applies to the
shared (DAG) size instead.  The derivative's size is *predicted* from the function's DAG
before any ``diff`` (``predict_gradient_ops``, within 1.5x on the catalog): over
``max_tree_ops`` (no CSE) or ``max_diff_ops`` (default 100000, up to ~30 s of ``diff``) the
backend refuses at once, with the estimate in the reason.  Integer inputs that are not
differentiated stay numbers (indices, counts), baked into the derivation and checked.  A function that uses a name ``sympy_xp`` lacks is refused the
same way (``UnsupportedError`` naming the name).

``prepared.evaluations`` counts calls of the generated functions (one per ``function``,
``gradient``/``vjp`` or ``hvp``); ``prepared.info`` records the symbol counts, the operation
counts (``sympy.count_ops`` semantics, computed sharing-aware so it stays fast on swollen
trees) of the function and the derivatives before CSE and, for ``sympy-cse``, after it, and
the time of each preparation step.
"""
from __future__ import annotations

import dataclasses
import re
import time

import numpy as np

from ..problems import validity
from .base import SUPPORTED, Backend, Prepared, Support, UnsupportedError, as_float64_arrays
from .sympy_derivation import (PRODUCT_FACTORS_AT_BASE_COST, Derivation, common_subexpressions,
                               count_ops, dag_size, lambdify, largest_product, predict_gradient_ops,
                               source_bytes)

#: SymPy's comparisons, named in the TypeError raised when one is used as a number
_RELATIONAL = re.compile(r"Relational|(Strict)?(GreaterThan|LessThan)|Unequality|Equality")

#: SymPy function -> the engine's nodes that build it on the SymPy namespace: which op, and
#: where in the function (:func:`uses_of`), a symbolic refusal names
ENGINE_NODES = {"Max": ("Maximum", "Max", "Fmax", "Relu"), "Min": ("Minimum", "Min", "Fmin"),
                "Abs": ("Abs", "VectorNorm"), "sign": ("Sign",), "floor": ("Floor",),
                "ceiling": ("Ceil",), "Heaviside": ()}


def uses_of(problem, sympy_names) -> str:
    """Where ``problem`` applies the ops behind SymPy functions ``sympy_names`` ("abs at
    model.py:3, maximum at model.py:4"), from one evaluation on the engine
    (:func:`diffcompare.problems.validity.facts`); the lines are unknown when it cannot run it."""
    facts = validity.facts(problem)
    nodes = {n for name in sympy_names for n in ENGINE_NODES.get(name, ())}
    uses = facts.uses_of(nodes)
    if uses:
        return ", ".join(map(str, uses))
    return (f"{', '.join(sympy_names)} (line unknown: the engine could not evaluate the function, "
            f"{facts.error})" if not facts.ran else ", ".join(sympy_names))

__all__ = ["SympyBackend", "SympyCseBackend", "uses_of"]


# --- the backends -------------------------------------------------------------------------

@dataclasses.dataclass
class _State:
    symbols: object                   # SymbolicInputs
    outputs: list                     # function expressions (flattened)
    out_shape: tuple
    grad_exprs: list                  # scalar: one per wrt scalar; vector: Jacobian entries
    jac_rows: np.ndarray | None       # vector output: output index of each entry
    jac_cols: np.ndarray | None       # vector output: wrt-scalar index of each entry
    f_fn: object
    g_fn: object
    wrt_shapes: list
    constants: dict | None            # inputs baked in as numbers, for checking
    hvp_fn: object = None
    cotangent_symbols: tuple = ()     # vector output derived for a symbolic cotangent
    program: object = None            # sympy-reverse: the reverse-accumulation Program


class SympyBackend(Backend):
    """Exact derivatives by ``sympy.diff``, lambdified to NumPy (no CSE)."""

    name = "sympy"
    timed_path = "generated NumPy code (lambdify)"
    use_cse = False

    #: defaults of the limits (subclasses differ); ``seconds_per_op`` is the measured cost of
    #: building one derivative operation, for the refusal's time estimate
    #: ``max_tree_ops`` 20,000 without CSE: printed as a tree, a larger gradient is slow to
    #: compile and slow per call (mlp_relu width 4, ~24,000 operations, ran its quick-suite
    #: cell to the 30 s limit); with CSE the limit (100,000) applies to the shared size
    limits = {"max_inputs": 400, "max_symbols": 20000, "max_tree_ops": 20_000, "max_diff_ops": 100_000}
    seconds_per_op = 3e-4      # sympy.diff: 20-330 µs per derivative operation built (mlp_tanh the
                               # costliest), measured on a loaded 2-core machine; the estimate is an upper one

    def __init__(self, max_inputs: int | None = None, max_symbols: int | None = None,
                 max_tree_ops: int | None = None, constants: str = "symbols",
                 max_diff_ops: int | None = None):
        if constants not in ("symbols", "numbers"):
            raise ValueError(f"constants must be 'symbols' or 'numbers', got {constants!r}.")
        given = {"max_inputs": max_inputs, "max_symbols": max_symbols, "max_tree_ops": max_tree_ops,
                 "max_diff_ops": max_diff_ops}
        for key, default in self.limits.items():
            setattr(self, key, int(default if given[key] is None else given[key]))
        self.constants = constants

    def available(self) -> Support:
        try:
            import sympy  # noqa: F401
        except ImportError as exc:   # pragma: no cover - sympy is a dependency
            return Support(False, f"sympy is not installed ({exc})")
        return SUPPORTED

    def supports(self, problem) -> Support:
        if "indexed" in problem.tags:
            return Support(False, "integer index arguments (tag 'indexed') cannot be symbols")
        if "large-expression" in problem.tags:
            return Support(False, "its scalar-expanded expression has millions of terms at every "
                                  "size (tag 'large-expression')")
        return SUPPORTED

    def supports_inputs(self, problem, inputs) -> Support:
        support = self.supports(problem)
        if not support:
            return support
        n_wrt = int(sum(np.size(inputs[i]) for i in problem.wrt))
        if n_wrt > self.max_inputs:
            return Support(False, f"too many inputs for symbolic differentiation in reasonable time "
                                  f"(n={n_wrt} differentiated scalars > {self.max_inputs})")
        n_all = n_wrt if self.constants == "numbers" else int(sum(np.size(a) for a in inputs))
        if n_all > self.max_symbols:
            return Support(False, f"too many symbols for a scalar-expanded expression "
                                  f"({n_all} > {self.max_symbols})")
        return SUPPORTED

    # -- prepare --------------------------------------------------------------------------
    def prepare(self, problem, inputs) -> Prepared:
        import sympy

        from ..problems.symbolic import symbols_like, sympy_xp

        support = self.supports_inputs(problem, inputs)
        if not support:
            raise UnsupportedError(problem.name, self.name, support.reason)
        info: dict = {}
        clock = time.perf_counter
        # SymPy memoizes diff and constructors process-wide: start cold, so a prepare's time
        # does not depend on what ran before it (the other sympy backend, an earlier size).
        sympy.core.cache.clear_cache()

        t0 = clock()
        sym = symbols_like(inputs, problem.wrt, constants=self.constants)
        try:
            out = problem.fn(sympy_xp, *sym.args)
        except NotImplementedError as exc:
            raise UnsupportedError(problem.name, self.name,
                                   f"the function uses what the SymPy namespace lacks: {exc}") from exc
        except TypeError as exc:
            if not _RELATIONAL.search(str(exc)):
                raise
            raise UnsupportedError(problem.name, self.name,
                                   f"a comparison's result is used as a number at "
                                   f"{validity.raised_at(exc)} (x * (x > 0), float(x > 0)): on "
                                   f"SymPy a comparison is a relation, not 0/1 ({exc}); write "
                                   "xp.where(x > 0, a, b) for a symbolic backend") from exc
        out_shape = np.shape(out) if isinstance(out, np.ndarray) else ()
        outputs = [sympy.sympify(e) for e in np.asarray(out, dtype=object).reshape(-1)]
        if not problem.vector_output and len(outputs) != 1:
            raise ValueError(f"the function returned shape {out_shape} where a scalar is needed.")
        info["build_s"] = clock() - t0
        wrt_flat = sym.wrt_flat
        info["n_wrt_symbols"] = len(wrt_flat)
        info["n_symbols"] = len(sym.all_flat)
        info["constants"] = self.constants
        info["ops_function"] = count_ops(outputs)
        info["dag_nodes_function"] = dag_size(outputs)
        self._check_swell(problem, "function", info["ops_function"], outputs, tree=True)
        self._check_predicted(problem, outputs, wrt_flat, info)

        t0 = clock()
        d = self._derive(problem, outputs, wrt_flat, info)
        info["diff_s"] = clock() - t0 - info.get("cse_s", 0.0)
        self._refuse_distributions(problem, outputs, d)
        info.setdefault("cse_s", 0.0)

        t0 = clock()
        f_fn, g_fn = self._compile(sym.all_flat, outputs, d)
        info["lambdify_s"] = clock() - t0
        info["kinks"] = ("Heaviside(0) = 1/2 (maximum/Max ties, relu via maximum), sign(0) = 0 (abs), "
                         "every element of an n-way max tie gets 1/2")

        state = _State(
            symbols=sym, outputs=outputs, out_shape=out_shape, grad_exprs=d.grad_exprs,
            jac_rows=d.jac_rows, jac_cols=d.jac_cols, f_fn=f_fn, g_fn=g_fn,
            wrt_shapes=[np.shape(inputs[i]) for i in problem.wrt],
            constants={i: np.array(inputs[i], copy=True) for i in range(len(inputs))
                       if i not in problem.wrt and i not in sym.constant_indices} or None,
            cotangent_symbols=d.cotangent_symbols, program=d.program)
        return Prepared(problem, state=state, info=info)

    def _compile(self, args, outputs, d):
        """NumPy functions of the function values and of the derivatives."""
        return (lambdify(args, outputs, d.f_cse),
                lambdify(list(args) + list(d.cotangent_symbols), d.grad_exprs, d.g_cse))

    def _derive(self, problem, outputs, wrt_flat, info) -> "Derivation":
        """The derivatives of ``outputs`` w.r.t. ``wrt_flat``, ready for lambdify:
        per-variable ``sympy.diff`` (the forward-mode ordering), then CSE if asked."""
        import sympy

        clock = time.perf_counter
        jac_rows = jac_cols = None
        if problem.vector_output:
            index = {s: j for j, s in enumerate(wrt_flat)}
            rows, cols, grad_exprs = [], [], []
            for i, y in enumerate(outputs):
                for s in sorted(y.free_symbols & index.keys(), key=index.__getitem__):
                    d = y.diff(s)
                    if d != 0:
                        rows.append(i), cols.append(index[s]), grad_exprs.append(d)
            jac_rows, jac_cols = np.array(rows, dtype=np.intp), np.array(cols, dtype=np.intp)
            info["jacobian_nonzeros"] = len(grad_exprs)
        else:
            f = outputs[0]
            free = f.free_symbols
            grad_exprs = [f.diff(s) if s in free else sympy.S.Zero for s in wrt_flat]
        info["ops_gradient"] = count_ops(grad_exprs)
        info["dag_nodes_gradient"] = dag_size(grad_exprs)
        self._check_swell(problem, "derivative", info["ops_gradient"], grad_exprs)

        t0 = clock()
        f_cse = g_cse = None
        if self.use_cse:
            f_cse, g_cse = common_subexpressions(outputs), common_subexpressions(grad_exprs)
            info["ops_function_cse"] = count_ops([e for _, e in f_cse[0]] + f_cse[1])
            info["ops_gradient_cse"] = count_ops([e for _, e in g_cse[0]] + g_cse[1])
            info["cse_subexpressions_gradient"] = len(g_cse[0])
        info["cse_s"] = clock() - t0
        return Derivation(grad_exprs, jac_rows, jac_cols, f_cse, g_cse)

    def _refuse_distributions(self, problem, outputs, d):
        """Refuse a derivative that holds ``DiracDelta`` (SymPy's d sign(u) = 2 DiracDelta(u)
        du): a distribution, with no number to print; naming the ops and their lines."""
        import sympy

        rhs = [e for _, e in (d.g_cse[0] if d.g_cse else ())]
        if not any(sympy.sympify(e).has(sympy.DiracDelta) for e in [*d.grad_exprs, *rhs]):
            return
        from .sympy_dag import function_dag

        names = sorted({type(n).__name__ for n in function_dag(outputs)} & {"sign", "Heaviside"})
        raise UnsupportedError(problem.name, self.name,
                               f"SymPy differentiates {', '.join(names) or 'a jump'} to a DiracDelta "
                               f"(a distribution, no value to compute): {uses_of(problem, names)}")

    def _check_predicted(self, problem, outputs, wrt_flat, info):
        """Refuse before differentiating when the derivative predicted from the function's
        DAG (``predict_gradient_ops``) is too large to derive, or, without CSE, to print."""
        predicted = predict_gradient_ops(outputs, wrt_flat)
        info["predicted_ops_gradient"] = predicted
        if not self.use_cse and predicted > self.max_tree_ops:
            raise UnsupportedError(problem.name, self.name,
                                   f"expression swell predicted before differentiating: the gradient "
                                   f"would have ~{predicted:.3g} operations in its expression tree "
                                   f"(limit {self.max_tree_ops}); too large to print and compile in "
                                   "reasonable time")
        factors = largest_product(outputs)
        weight = max(1.0, factors / PRODUCT_FACTORS_AT_BASE_COST)
        info["largest_product"] = factors
        if predicted * weight > self.max_diff_ops:
            long_product = (f", weighted {weight:.3g}x for a product of {factors} factors"
                            if weight > 1 else "")
            raise UnsupportedError(problem.name, self.name,
                                   f"per-variable differentiation predicted too costly before "
                                   f"differentiating: ~{predicted:.3g} derivative operations to build"
                                   f"{long_product} (limit {self.max_diff_ops:.3g}; up to about "
                                   f"{predicted * weight * self.seconds_per_op:.0f} s at up to "
                                   f"{self.seconds_per_op * weight * 1e6:.0f} µs each)")

    def _check_swell(self, problem, what, tree_ops, exprs, tree=False):
        """The function's tree size bounds the time ``sympy.diff`` takes (it walks the tree,
        shared or not); the derivative's bounds printing it (its tree without CSE, its
        distinct subexpressions with)."""
        if tree or not self.use_cse:
            size, kind = tree_ops, "operations in its expression tree"
        else:
            size, kind = dag_size(exprs), "distinct subexpressions"
        if size > self.max_tree_ops:
            raise UnsupportedError(problem.name, self.name,
                                   f"expression swell: the {what} has {size} {kind} "
                                   f"(limit {self.max_tree_ops}); too large to "
                                   f"{'differentiate' if tree else 'print and compile'} in reasonable time")

    def retained_bytes(self, prepared) -> dict:
        """The generated NumPy code kept for the function and the gradient (source bytes)."""
        state = prepared.state
        return {"generated_code": sum(source_bytes(f) for f in (state.f_fn, state.g_fn))}

    # -- evaluate ---------------------------------------------------------------------------
    def call_values(self, prepared, inputs):
        """The flat scalar arguments of the lambdified functions at ``inputs``."""
        state = prepared.state
        if state.constants is not None:
            for i, c in state.constants.items():
                if not np.array_equal(np.asarray(inputs[i]), c):
                    raise ValueError(f"input {i} differs from the one given to prepare; with "
                                     "constants='numbers' it is baked into the derivation: prepare again.")
        return state.symbols.values(inputs)

    def function(self, prepared, inputs):
        state = prepared.state
        prepared.evaluations += 1
        values = np.asarray(state.f_fn(*self.call_values(prepared, inputs)), dtype=np.float64)
        return values.reshape(state.out_shape)

    def vjp(self, prepared, inputs, cotangent=None):
        state = prepared.state
        if prepared.problem.vector_output and cotangent is None:
            raise ValueError("this problem has a vector output: pass its cotangent.")
        prepared.evaluations += 1
        if state.cotangent_symbols:
            v = list(np.asarray(cotangent, dtype=np.float64).reshape(-1))
            flat = np.asarray(state.g_fn(*self.call_values(prepared, inputs), *v), dtype=np.float64)
            return as_float64_arrays(_split(flat, state.wrt_shapes))
        values = np.asarray(state.g_fn(*self.call_values(prepared, inputs)), dtype=np.float64)
        if prepared.problem.vector_output:
            v = np.asarray(cotangent, dtype=np.float64).reshape(-1)
            flat = np.zeros(sum(int(np.prod(s)) for s in state.wrt_shapes))
            np.add.at(flat, state.jac_cols, v[state.jac_rows] * values)
        else:
            flat = values * (1.0 if cotangent is None else float(np.asarray(cotangent)))
        return as_float64_arrays(_split(flat, state.wrt_shapes))

    def hvp(self, prepared, inputs, v):
        import sympy

        problem, state = prepared.problem, prepared.state
        if problem.vector_output:
            raise UnsupportedError(problem.name, self.name, "hvp needs a scalar output")
        if not problem.smooth:
            raise UnsupportedError(problem.name, self.name,
                                   "hvp of a nonsmooth problem: second derivatives of kinks are "
                                   "DiracDelta terms, which do not evaluate numerically")
        if state.hvp_fn is None:
            t0 = time.perf_counter()
            wrt_flat = state.symbols.wrt_flat
            vs = [sympy.Symbol(f"v_{j}", real=True) for j in range(len(wrt_flat))]
            hv, cse_result = self._derive_hvp(state, wrt_flat, vs)
            state.hvp_fn = lambdify(state.symbols.all_flat + vs, hv, cse_result)
            prepared.info["hvp_prepare_s"] = time.perf_counter() - t0
            prepared.info["ops_hvp"] = count_ops(hv if cse_result is None
                                                 else [e for _, e in cse_result[0]] + list(cse_result[1]))
        v_flat = [np.float64(x) for vi in v for x in np.asarray(vi, dtype=np.float64).reshape(-1)]
        prepared.evaluations += 1
        values = np.asarray(state.hvp_fn(*self.call_values(prepared, inputs), *v_flat), dtype=np.float64)
        return as_float64_arrays(_split(values, state.wrt_shapes))

    def _derive_hvp(self, state, wrt_flat, vs):
        """``(∂(∇f · v)/∂x, cse_result)``: per-variable ``diff`` of the gradient's dot with ``v``."""
        import sympy

        gv = sympy.Add(*[g * vj for g, vj in zip(state.grad_exprs, vs)])
        free = gv.free_symbols
        hv = [gv.diff(s) if s in free else sympy.S.Zero for s in wrt_flat]
        return hv, (common_subexpressions(hv) if self.use_cse else None)


class SympyCseBackend(SympyBackend):
    """As ``sympy``, with common subexpressions eliminated (``sympy.cse``) before lambdify."""

    name = "sympy-cse"
    use_cse = True
    limits = {**SympyBackend.limits, "max_tree_ops": 100_000}


def _split(flat, shapes):
    out, start = [], 0
    for shape in shapes:
        n = int(np.prod(shape))
        out.append(np.asarray(flat[start:start + n]).reshape(shape))
        start += n
    return out
