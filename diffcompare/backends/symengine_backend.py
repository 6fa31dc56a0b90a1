"""``symengine``: the scalar expansion of ``sympy`` with the algebra done in SymEngine's C++ core.

The function is built as in the SymPy backends (``sympy_xp`` on one symbol per scalar), then
converted to SymEngine once per distinct subexpression (``to_symengine``: linear in the DAG,
where ``symengine.sympify`` walks the tree), differentiated per variable with SymEngine's
``diff`` (the same forward-mode ordering as ``sympy``), and compiled with ``symengine.Lambdify``
with common-subexpression elimination, through LLVM where the wheel has it (else SymEngine's
own evaluator).  Use it like any backend (``symengine`` is the optional extra ``symbolic``)::

    b = backends.get("symengine")
    g = b.gradient(b.prepare(problem, inputs), inputs)

Why there is no ``symengine-cse``: SymEngine keeps expressions as shared DAGs in memory and
never prints them, so the tree size that makes ``sympy`` (no CSE) slow to print and compile
does not arise; ``Lambdify(cse=False)`` only evaluates shared subexpressions more than once
per call.  The comparison ``sympy`` vs ``sympy-cse`` shows what CSE buys; a second SymEngine
variant would repeat it without answering a new question.

What it cannot do: SymEngine has no ``Heaviside`` and leaves the derivatives of ``Max``,
``Min``, ``Abs``, ``sign``, ``floor`` and ``ceiling`` unevaluated, so nonsmooth problems are
unsupported (the reason says so); so is a function SymEngine lacks (``sinc``).  ``hvp`` is per-variable ``diff`` of ``∇f · v``.  Limits as ``sympy-cse``'s, with
the predicted derivative size allowed 20x larger (SymEngine builds one derivative operation
in 2-30 µs, where SymPy takes 20-330).
"""
from __future__ import annotations

import time

import numpy as np

from .base import SUPPORTED, Support, UnsupportedError
from .symbolic import SympyBackend, uses_of
from .sympy_derivation import Derivation

__all__ = ["SymengineBackend", "to_symengine", "llvm_available"]

#: functions whose derivatives SymEngine leaves unevaluated
_KINKS = ("Max", "Min", "Abs", "sign", "Heaviside", "floor", "ceiling")

_RELATIONALS = {"StrictLessThan": "Lt", "LessThan": "Le", "StrictGreaterThan": "Gt",
                "GreaterThan": "Ge", "Equality": "Eq", "Unequality": "Ne"}


def to_symengine(exprs, memo=None) -> list:
    """SymPy expressions as SymEngine ones, converting each distinct subexpression once
    (``memo`` maps SymPy nodes to SymEngine ones; pass the same dict to share conversions):
    ``to_symengine([tanh(x)**2 + 0.1])`` is ``[0.1 + tanh(x)**2]``."""
    import sympy
    import symengine as se

    from .sympy_dag import function_dag

    memo = {} if memo is None else memo
    exprs = [sympy.sympify(e) for e in exprs]
    for node in function_dag(exprs):
        if node in memo:
            continue
        if node.is_Symbol:
            out = se.Symbol(node.name)
        elif node.is_Integer:
            out = se.Integer(int(node))
        elif node.is_Rational:
            out = se.Rational(int(node.p), int(node.q))
        elif node.is_Float:
            out = se.RealDouble(float(node))
        elif node is sympy.true or node is sympy.false:
            out = se.true if node is sympy.true else se.false
        elif not node.args:
            out = se.sympify(node)                     # pi, E, ...
        else:
            args = [memo[a] for a in node.args]
            kind = type(node).__name__
            if node.is_Add:
                out = se.Add(*args)
            elif node.is_Mul:
                out = se.Mul(*args)
            elif node.is_Pow:
                out = se.Pow(*args)
            elif isinstance(node, sympy.Piecewise):
                out = se.Piecewise(*args)
            elif kind == "ExprCondPair":
                out = tuple(args)
            elif kind in _RELATIONALS:
                out = getattr(se, _RELATIONALS[kind])(*args)
            elif hasattr(se, kind):
                out = getattr(se, kind)(*args)
            else:
                raise NotImplementedError(f"SymEngine has no {kind} (in {str(node)[:60]})")
        memo[node] = out
    return [memo[e] for e in exprs]


def llvm_available() -> bool:
    """Whether this SymEngine wheel compiles with LLVM."""
    import symengine as se

    try:
        x = se.Symbol("x")
        se.Lambdify([x], [x + 1], backend="llvm")
        return True
    except (ValueError, RuntimeError, TypeError):
        return False


class SymengineBackend(SympyBackend):
    """Per-variable ``diff`` in SymEngine (C++), ``Lambdify`` with CSE (LLVM where available)."""

    name = "symengine"
    timed_path = "SymEngine's Lambdify (LLVM-compiled where available)"
    requires = ("symengine", "symengine is not installed: pip install 'diffcompare[symbolic]'")
    use_cse = True
    limits = {"max_inputs": 2000, "max_symbols": 20_000, "max_tree_ops": 2_000_000,
              "max_diff_ops": 2_000_000}
    # SymEngine's diff, CSE and Lambdify per predicted derivative operation: 2-30 µs (mlp_tanh
    # width 16: 5 s for 3e5; the 346-parameter MLP: 370 s for 1.2e7; loaded 2-core machine)
    seconds_per_op = 3e-5

    def supports(self, problem) -> Support:
        support = super().supports(problem)      # the scalar expansion's own limits (tags)
        if not support:
            return support
        if not problem.smooth:
            return Support(False, "SymEngine leaves the derivatives of Max, Min, Abs and sign "
                                  "unevaluated (it has no Heaviside): nonsmooth problems are not differentiated")
        return SUPPORTED

    def _check_swell(self, problem, what, tree_ops, exprs, tree=False):
        # SymEngine holds and compiles DAGs: only the DAG's size matters
        from .sympy_derivation import dag_size

        size = dag_size(exprs)
        if size > self.max_tree_ops:
            raise UnsupportedError(problem.name, self.name,
                                   f"the {what} has {size} distinct subexpressions (limit {self.max_tree_ops})")

    def _refuse_distributions(self, problem, outputs, d):
        """Nothing to check: ``_derive`` refuses sign and Heaviside (with every kink) first."""

    def _derive(self, problem, outputs, wrt_flat, info):
        import symengine as se

        from .sympy_dag import function_dag

        kinks = sorted({type(n).__name__ for n in function_dag(outputs)} & set(_KINKS))
        if kinks:
            raise UnsupportedError(problem.name, self.name,
                                   f"SymEngine leaves the derivative of {', '.join(kinks)} unevaluated: "
                                   f"{uses_of(problem, kinks)}")
        memo: dict = {}
        try:
            outs = to_symengine(outputs, memo)
        except NotImplementedError as exc:     # a function SymEngine lacks (sinc, ...)
            raise UnsupportedError(problem.name, self.name, str(exc)) from None
        wrt = to_symengine(wrt_flat, memo)
        jac_rows = jac_cols = None
        if problem.vector_output:
            rows, cols, grad = [], [], []
            for i, (y, y_sympy) in enumerate(zip(outs, outputs)):
                free = y_sympy.free_symbols
                for j, (s, s_sympy) in enumerate(zip(wrt, wrt_flat)):
                    if s_sympy in free:
                        d = y.diff(s)
                        if d != 0:
                            rows.append(i), cols.append(j), grad.append(d)
            jac_rows, jac_cols = np.array(rows, dtype=np.intp), np.array(cols, dtype=np.intp)
            info["jacobian_nonzeros"] = len(grad)
        else:
            grad = [outs[0].diff(s) for s in wrt]
        info["ops_gradient"] = int(se.count_ops(*grad)) if grad else 0
        replacements, reduced = se.cse(grad)
        info["ops_gradient_cse"] = int(se.count_ops(*[e for _, e in replacements], *reduced)) \
            if grad else 0
        info["cse_subexpressions_gradient"] = len(replacements)
        info["llvm"] = llvm_available()
        return Derivation(grad, jac_rows, jac_cols, f_cse=outs, g_cse=memo)

    def _compile(self, args, outputs, d):
        memo = d.g_cse
        return (self._lambdify_exprs(to_symengine(args, memo), d.f_cse),
                self._lambdify_exprs(to_symengine(args, memo), d.grad_exprs))

    def _lambdify_exprs(self, args, exprs, cse_result=None):
        import symengine as se

        if not exprs:
            return lambda *values: np.zeros(0)
        fn = se.Lambdify(args, list(exprs), backend="llvm" if llvm_available() else "lambda",
                         cse=True, real=True)

        def evaluate(*values):
            return fn(np.asarray(values, dtype=np.float64))

        return evaluate

    def hvp(self, prepared, inputs, v):
        """Per-variable SymEngine ``diff`` of ``∇f · v``, compiled like the gradient; the
        checks (smooth, scalar output) and the evaluation are the generic ones."""
        import sympy
        import symengine as se

        state, problem = prepared.state, prepared.problem
        if state.hvp_fn is None and problem.smooth and not problem.vector_output:
            t0 = time.perf_counter()
            wrt_flat = state.symbols.wrt_flat
            vs = [sympy.Symbol(f"v_{j}", real=True) for j in range(len(wrt_flat))]
            memo: dict = {}
            wrt, v_se = to_symengine(wrt_flat, memo), to_symengine(vs, memo)
            gv = se.Add(*[g * vj for g, vj in zip(state.grad_exprs, v_se)])
            state.hvp_fn = self._lambdify_exprs(to_symengine(state.symbols.all_flat + vs, memo),
                                                [gv.diff(s) for s in wrt])
            prepared.info["hvp_prepare_s"] = time.perf_counter() - t0
        return super().hvp(prepared, inputs, v)
