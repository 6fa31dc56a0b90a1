"""``sympy-reverse``: the gradient by reverse accumulation over the function's SymPy
expression DAG (:mod:`.sympy_dag`), then lambdify: a straight-line program whose size
stays within a constant factor of the function's."""
from __future__ import annotations

import sympy

from .base import UnsupportedError
from .symbolic import SympyBackend
from .sympy_derivation import Derivation, count_ops
from .sympy_dag import PROGRAM_OPS_PER_EDGE, dag_edges, reverse_program

__all__ = ["SympyReverseBackend"]


class SympyReverseBackend(SympyBackend):
    """``sympy-reverse``: the gradient by reverse accumulation over the function's SymPy DAG.

    The same scalar expansion as ``sympy`` (``sympy_xp`` on one symbol per scalar), then
    ``reverse_program`` instead of one ``sympy.diff`` per input, lambdified as the program it
    is.  A vector output is differentiated for a symbolic cotangent (one program serves every
    cotangent); ``hvp`` is reverse over reverse (the gradient program, inlined as a DAG,
    dotted with ``v`` and accumulated again).

    >>> from diffcompare import backends, problems
    >>> p = problems.get("mlp_tanh")
    >>> x = p.inputs(4, seed=0)
    >>> b = backends.get("sympy-reverse")
    >>> prepared = b.prepare(p, x)
    >>> g = b.gradient(prepared, x)
    >>> e = backends.compute_gradient(backends.get("engine"), p, x)
    >>> all(abs(a - c).max() < 1e-12 for a, c in zip(g, e))
    True
    >>> prepared.info["ops_gradient_cse"] <= 5 * prepared.info["ops_function_cse"]
    True

    Limits: 5000 differentiated scalars and 20,000 symbols (before building the function),
    the function's DAG edges (``max_tree_ops``, default 2,000,000) and the program's
    predicted size (``max_diff_ops``: 4 operations per edge of the function's DAG, an upper
    bound, default 100,000: about a minute on a loaded machine), checked before the sweep.
    """

    name = "sympy-reverse"
    use_cse = True
    limits = {"max_inputs": 5000, "max_symbols": 20_000, "max_tree_ops": 2_000_000,
              "max_diff_ops": 100_000}
    # building the function, the program and printing it, per predicted program operation:
    # 0.3-0.9 ms (mlp_tanh widths 1-16 and the 346-parameter MLP, loaded 2-core machine)
    seconds_per_op = 7e-4

    def _check_swell(self, problem, what, tree_ops, exprs, tree=False):
        # the tree size does not matter here, only the DAG's
        size = dag_edges(exprs)
        if size > self.max_tree_ops:
            raise UnsupportedError(problem.name, self.name,
                                   f"the {what}'s DAG has {size} edges (limit {self.max_tree_ops})")

    def _check_predicted(self, problem, outputs, wrt_flat, info):
        predicted = PROGRAM_OPS_PER_EDGE * dag_edges(outputs)
        info["predicted_ops_gradient"] = predicted
        if predicted > self.max_diff_ops:
            raise UnsupportedError(problem.name, self.name,
                                   f"reverse accumulation predicted too large before differentiating: "
                                   f"~{predicted:.3g} program operations (limit {self.max_diff_ops:.3g}; "
                                   f"about {predicted * self.seconds_per_op:.0f} s at "
                                   f"{self.seconds_per_op * 1e6:.0f} µs each)")

    def _derive(self, problem, outputs, wrt_flat, info):
        cotangent = ()
        if problem.vector_output:
            cotangent = tuple(sympy.Symbol(f"_ct{i}", real=True) for i in range(len(outputs)))
        try:
            prog = reverse_program(outputs, wrt_flat, seeds=cotangent or None)
        except NotImplementedError as exc:
            raise UnsupportedError(problem.name, self.name, str(exc)) from exc
        ops_forward = count_ops([e for _, e in prog.forward])
        info["ops_function_cse"] = ops_forward + count_ops(prog.outputs)
        info["ops_gradient_cse"] = info["ops_gradient"] = ops_forward + count_ops(
            [e for _, e in prog.adjoint] + prog.gradient)
        info["dag_nodes_gradient"] = len(prog.assignments) + len(prog.gradient)
        info["cse_subexpressions_gradient"] = len(prog.assignments)
        return Derivation(prog.gradient, f_cse=(prog.forward, prog.outputs),
                           g_cse=(prog.assignments, prog.gradient), cotangent_symbols=cotangent,
                           program=prog)

    def _derive_hvp(self, state, wrt_flat, vs):
        prog = state.program
        env = prog.inline()
        gv = sympy.Add(*[g.xreplace(env) * v for g, v in zip(prog.gradient, vs)])
        second = reverse_program([gv], wrt_flat, name="h")
        return second.gradient, (second.assignments, second.gradient)
