"""SymPy derivation and measurement, shared by the symbolic backends, the symbolic sparse
operators and the expression-swell study: operation counts (``count_ops``, with
``sympy.count_ops`` semantics but sharing-aware; ``dag_size``), the derivative's size
predicted before differentiating (``predict_gradient_ops``, ``largest_product``), printing to
NumPy (``lambdify``, ``source_bytes``), common-subexpression elimination
(``common_subexpressions``), what a backend's derivation makes (``Derivation``) and
``expression_size`` for experiments on expression swell.

The module imports without SymPy.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

__all__ = ["Derivation", "common_subexpressions", "count_ops", "dag_size", "expression_size",
           "lambdify", "largest_product", "predict_gradient_ops", "source_bytes"]

# --- expression size ------------------------------------------------------------------

def count_ops(exprs) -> int:
    """``sympy.count_ops(exprs)`` (visual=False), computed with memoization.

    ``sympy.count_ops`` walks the expression as a tree, which takes exponential time when
    subexpressions are shared (a loop such as the logistic map); this walks each distinct
    subexpression once and gives the same number: the size of the printed tree.
    """
    import sympy

    if isinstance(exprs, sympy.Basic):
        exprs = [exprs]
    memo: dict = {}
    return sum(_count_one(sympy.sympify(e), memo) for e in exprs)


def _local_ops(a):
    """What ``sympy.count_ops`` adds for node ``a``, and the nodes it goes on to visit."""
    from sympy import S, Derivative, Integral, Sum
    from sympy.core.function import _coeff_isneg
    from sympy.core.operations import LatticeOp
    from sympy.simplify.radsimp import fraction

    ops = 0
    if a.is_Rational:
        if a is not S.One:
            return int(bool(a.p < 0)) + int(bool(a.q != 1)), ()
    elif a.is_Mul or a.is_MatMul:
        if _coeff_isneg(a):
            ops += 1
            a = a.as_two_terms()[1] if a.args[0] is S.NegativeOne else -a
        n, d = fraction(a)
        if n.is_Integer:
            return ops + 1 + int(bool(n < 0)), (d,)
        elif d is not S.One:
            return ops + 1, ((d, n) if not d.is_Integer else (n,))
    elif a.is_Add or a.is_MatAdd:
        args = a.args
        children, negs = [], 0
        for ai in args:
            if _coeff_isneg(ai):
                negs += 1
                children.append(-ai)
            else:
                children.append(ai)
        ops += len(args) - 1
        if negs == len(args):
            ops += 1
        return ops, tuple(children)
    if a.is_Pow and a.exp is S.NegativeOne:
        return ops + 1, (a.base,)
    if a == S.Exp1:
        return ops + 1, ()
    if a.is_Pow and a.base == S.Exp1:
        return ops + 1, (a.exp,)
    if a.is_Mul or isinstance(a, LatticeOp):
        ops += len(a.args) - 1
    elif a.args and (a.is_Pow or a.is_Function or isinstance(a, (Derivative, Integral, Sum))):
        ops += 1
    return ops, (() if a.is_Symbol else a.args)


def _count_one(root, memo) -> int:
    from sympy import Expr

    if not isinstance(root, Expr) or root.is_Relational:
        import sympy

        return int(sympy.count_ops(root))
    stack = [root]
    pending: dict = {}
    while stack:
        a = stack[-1]
        if a in memo:
            stack.pop()
            continue
        if a not in pending:
            pending[a] = _local_ops(a)
        ops, children = pending[a]
        missing = [c for c in children if c not in memo]
        if missing:
            stack.extend(missing)
            continue
        memo[a] = ops + sum(memo[c] for c in children)
        del pending[a]
        stack.pop()
    return memo[root]


def dag_size(exprs) -> int:
    """Distinct subexpressions (nodes of the shared DAG) in ``exprs``: about what CSE can reach."""
    import sympy

    if isinstance(exprs, sympy.Basic):
        exprs = [exprs]
    seen = set()
    stack = [sympy.sympify(e) for e in exprs]
    while stack:
        a = stack.pop()
        if a in seen:
            continue
        seen.add(a)
        stack.extend(a.args)
    return len(seen)


#: a product of more factors than this costs proportionally more per derivative operation
#: (see ``largest_product``): unbind_product's sympy-cse cell at n = 300 (~9e4 predicted
#: operations, under the limit unweighted) ran into the standard suite's 120 s timeout
PRODUCT_FACTORS_AT_BASE_COST = 40


def predict_gradient_ops(outputs, wrt) -> int:
    """The operation count (``count_ops`` units, roughly) of the per-variable derivatives
    ``[∂y/∂s for y in outputs for s in wrt]`` as ``sympy.diff`` writes them, predicted from
    the function's DAG in time linear in its distinct subexpressions, before differentiating.

    ``sympy.diff`` applies the sum, product and chain rules down the *tree*, once per
    variable: a product ``a·b`` gives ``a'·b + a·b'``, a copy of ``b`` for every variable
    in ``a``.  So with ``T(n)`` the tree size of a node and ``W(n)`` the number of
    differentiated symbols it contains, the derivative of ``n`` summed over all variables
    has about ``Σ_i D(a_i) + W(a_i)·(Σ_{j≠i} T(a_j) + k)`` operations for an n-ary product,
    ``Σ D(a_i)`` for a sum, and ``D(a) + W(a)·(T(a) + 3)`` for a function of ``a``
    (its derivative is about as large as itself).  This is the size that makes ``diff``
    slow and the printed code long; it is an estimate (SymPy folds some terms), used to
    refuse early.

    >>> import sympy
    >>> x, y = sympy.symbols("x y")
    >>> predict_gradient_ops([x * y], [x, y])   # y + x: 2 copies, 2 products
    4
    """
    import sympy

    from .sympy_dag import function_dag

    wrt = set(wrt)
    tree: dict = {}
    syms: dict = {}
    deriv: dict = {}
    for n in function_dag([sympy.sympify(o) for o in outputs]):
        args = n.args
        if not args:
            tree[n], deriv[n] = 0, 0
            syms[n] = frozenset((n,)) if n in wrt else frozenset()
            continue
        syms[n] = frozenset().union(*(syms[a] for a in args))
        if not syms[n]:
            tree[n], deriv[n] = max(len(args) - 1, 1) + sum(tree[a] for a in args), 0
            continue
        t_args = [tree[a] for a in args]
        tree[n] = max(len(args) - 1, 1) + sum(t_args)
        w = [len(syms[a]) for a in args]
        d = sum(deriv[a] for a in args)
        if n.is_Add:
            d += max(sum(w) - len(syms[n]), 0)
        elif n.is_Mul:
            total = sum(t_args)
            d += sum(wi * (total - ti + len(args)) for wi, ti in zip(w, t_args) if wi)
        elif len(args) == 1 or n.is_Pow:
            d += sum(wi * (ti + 3) for wi, ti in zip(w, t_args) if wi)
        else:
            d += sum(wi * (tree[n] + 2) for wi in w if wi)
        deriv[n] = d
    return int(sum(deriv[sympy.sympify(o)] for o in outputs))


def largest_product(outputs) -> int:
    """The most factors of any one product (``Mul``) in the function's DAG.  ``sympy.diff``
    rebuilds a product of k factors for each of them, so a long product costs more per
    derivative operation: ``unbind_product`` (one product of n factors) took 740 µs per
    predicted operation at n = 100 and over 1.3 ms at n = 300, against at most 300 µs on
    products of a few factors.

    >>> import sympy
    >>> a = sympy.symbols("a:5")
    >>> largest_product([a[0] * a[1] * a[2] + a[3] * a[4]])
    3
    """
    import sympy

    from .sympy_dag import function_dag

    return max((len(n.args) for n in function_dag([sympy.sympify(o) for o in outputs]) if n.is_Mul),
               default=0)


# --- printing -----------------------------------------------------------------------------

def _printer():
    import sympy
    from sympy.printing.numpy import NumPyPrinter

    class Float64Printer(NumPyPrinter):
        """NumPy code with floats printed by ``repr`` (round-trips float64; SymPy prints 15
        digits), and long sums and products as calls over a flat tuple: Python's compiler
        recurses once per operator of ``a + b + c + ...`` and fails near a thousand terms."""

        def _print_Float(self, expr):
            return repr(float(expr))

        def _print_Heaviside(self, expr):
            # directly, not via SymPy's Piecewise rewrite (slow: it simplifies the logic of
            # every Max inside).  Heaviside(x) is Heaviside(x, 1/2): the value at 0.
            x, h0 = expr.args if len(expr.args) == 2 else (expr.args[0], sympy.S.Half)
            return "%s(%s, %s)" % (self._module_format("numpy.heaviside"), self._print(x),
                                   self._print(h0))

        def _print_Add(self, expr, order=None):
            if len(expr.args) <= _LONG:
                return super()._print_Add(expr, order)
            terms = self._as_ordered_terms(expr, order=order)
            return "builtins.sum((%s,))" % ", ".join(self._print(t) for t in terms)

        def _print_Mul(self, expr):
            if len(expr.args) <= _LONG:
                return super()._print_Mul(expr)
            return "%s((%s,))" % (self._module_format("numpy.prod"),
                                  ", ".join(self._print(f) for f in expr.args))

    # order="none": print the terms of a sum in SymPy's storage order; sorting them (the
    # default) dominated lambdify's time on large derivatives and changes no value's precision
    return Float64Printer({"fully_qualified_modules": False, "inline": True, "order": "none",
                           "allow_unknown_functions": False, "user_functions": {}})


_LONG = 64     # sums/products with more terms are printed as builtins.sum / numpy.prod


def lambdify(symbols, exprs, cse_result=None):
    """``sympy.lambdify(symbols, exprs, modules="numpy")`` as the backends use it: floats
    printed exactly, long sums/products flat, ``Heaviside`` as ``numpy.heaviside``, and
    ``cse_result`` (``sympy.cse``'s ``(replacements, reduced)``) used as given."""
    import sympy

    kwargs = {}
    if cse_result is not None:
        kwargs["cse"] = lambda _exprs: cse_result
    # use_imps=False: lambdify would otherwise walk the (un-CSE'd) expression as a tree
    # looking for implemented_function()s, exponential on swollen expressions.
    return sympy.lambdify(symbols, exprs, modules="numpy", printer=_printer(), use_imps=False,
                          **kwargs)


def source_bytes(fn) -> int:
    """Bytes of a lambdified function's generated source (its bytecode if the source is gone)."""
    import inspect
    import marshal

    try:
        return len(inspect.getsource(fn).encode())
    except (OSError, TypeError):
        return len(marshal.dumps(fn.__code__))


def common_subexpressions(exprs):
    """``sympy.cse(exprs)`` as ``(replacements, reduced expressions as a list)``."""
    import sympy

    replacements, reduced = sympy.cse(list(exprs), list=False)
    return replacements, list(reduced)


@dataclasses.dataclass
class Derivation:
    """What a backend's ``_derive`` makes, for lambdify: the derivative expressions (a
    gradient, the sparse Jacobian's entries, or a VJP in ``cotangent_symbols``) and, where
    computed, the ``(assignments, expressions)`` of the function and of the derivatives."""

    grad_exprs: list
    jac_rows: np.ndarray | None = None
    jac_cols: np.ndarray | None = None
    f_cse: tuple | None = None
    g_cse: tuple | None = None
    cotangent_symbols: tuple = ()
    program: object = None


def expression_size(problem, size: int, seed: int = 0, constants: str = "symbols",
                    cse: bool = True) -> dict:
    """Expression sizes of ``problem`` at ``size`` without lambdify or any limit:
    symbols, ``count_ops`` of the function and of the derivatives (gradient, or Jacobian
    entries for a vector output) before CSE, their DAG sizes, and after CSE (``cse=True``),
    with the time each step took.  For experiments on expression swell."""
    import sympy

    from ..problems.symbolic import symbols_like, sympy_xp

    clock = time.perf_counter
    sympy.core.cache.clear_cache()
    inputs = problem.inputs(size, seed)
    t0 = clock()
    sym = symbols_like(inputs, problem.wrt, constants=constants)
    outputs = [sympy.sympify(e) for e in np.asarray(problem.fn(sympy_xp, *sym.args), dtype=object).reshape(-1)]
    build_s = clock() - t0
    t0 = clock()
    derivs = []
    for y in outputs:
        free = y.free_symbols
        derivs.extend(y.diff(s) for s in sym.wrt_flat if s in free)
    diff_s = clock() - t0
    row = {"problem": problem.name, "size": size, "n_wrt_symbols": len(sym.wrt_flat),
           "n_symbols": len(sym.all_flat), "ops_function": count_ops(outputs),
           "dag_nodes_function": dag_size(outputs), "ops_gradient": count_ops(derivs),
           "dag_nodes_gradient": dag_size(derivs), "build_s": build_s, "diff_s": diff_s}
    if cse:
        t0 = clock()
        f_repl, f_red = common_subexpressions(outputs)
        g_repl, g_red = common_subexpressions(derivs)
        row["cse_s"] = clock() - t0
        row["ops_function_cse"] = count_ops([e for _, e in f_repl] + f_red)
        row["ops_gradient_cse"] = count_ops([e for _, e in g_repl] + g_red)
        row["cse_subexpressions_gradient"] = len(g_repl)
    return row
