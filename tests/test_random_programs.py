"""Property test: random expression programs over the op set, differentiated by the
engine, JAX and SymPy, give the same gradient (float64, relative 1e-10).

A program is a random expression tree over two input vectors, written once
against ``xp``; each backend runs that same function.  Unary ops are applied to
values kept in their safe domain (log and sqrt of 1 + v², exp of tanh v).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diffcompare import backends
from diffcompare.measure.accuracy import errors
from diffcompare.problems import Problem

UNARY = {
    "sin": lambda xp, v: xp.sin(v),
    "cos": lambda xp, v: xp.cos(v),
    "tanh": lambda xp, v: xp.tanh(v),
    "exp_tanh": lambda xp, v: xp.exp(xp.tanh(v)),
    "log1p_sq": lambda xp, v: xp.log(1 + v * v),
    "sqrt1p_sq": lambda xp, v: xp.sqrt(1 + v * v),
    "square": lambda xp, v: v * v,
    "neg": lambda xp, v: -v,
    "recip1p_sq": lambda xp, v: 1 / (1 + v * v),
}
BINARY = {
    "add": lambda xp, a, b: a + b,
    "sub": lambda xp, a, b: a - b,
    "mul": lambda xp, a, b: a * b,
    "div": lambda xp, a, b: a / (1 + b * b),
    "pow": lambda xp, a, b: (1 + a * a) ** xp.tanh(b),
}
REDUCE = {
    "sum": lambda xp, v: xp.sum(v),
    "mean": lambda xp, v: xp.mean(v),
    "dot": lambda xp, v: xp.sum(v * v),
}


def trees(depth):
    leaf = st.sampled_from(["x", "y"])
    if depth == 0:
        return leaf
    sub = trees(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(st.sampled_from(sorted(UNARY)), sub),
        st.tuples(st.sampled_from(sorted(BINARY)), sub, sub),
    )


def evaluate(tree, xp, x, y):
    if tree == "x":
        return x
    if tree == "y":
        return y
    if len(tree) == 2:
        return UNARY[tree[0]](xp, evaluate(tree[1], xp, x, y))
    return BINARY[tree[0]](xp, evaluate(tree[1], xp, x, y), evaluate(tree[2], xp, x, y))


def as_problem(tree, reduce_name, seed):
    def fn(xp, x, y):
        return REDUCE[reduce_name](xp, evaluate(tree, xp, x, y) + 0 * x)   # depend on x always

    def make_inputs(size, s):
        rng = np.random.default_rng(seed)
        return (rng.uniform(-1.5, 1.5, size), rng.uniform(-1.5, 1.5, size))

    return Problem(name="random_program", fn=fn, make_inputs=make_inputs, wrt=(0, 1),
                   description=f"{reduce_name}({tree})")


def _gradient(name, problem, inputs):
    backend = backends.get(name)
    if not backend.available():
        pytest.skip(f"{name} unavailable: {backend.available().reason}")
    return backends.compute_gradient(backend, problem, inputs)


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees(3), reduce_name=st.sampled_from(sorted(REDUCE)), seed=st.integers(0, 1000))
def test_engine_jax_and_sympy_agree_on_random_programs(tree, reduce_name, seed):
    problem = as_problem(tree, reduce_name, seed)
    inputs = problem.inputs(3, seed)
    engine = _gradient("engine", problem, inputs)
    for other in ("jax-eager", "sympy"):
        got = _gradient(other, problem, inputs)
        rel = errors(got, engine)["rho"]
        assert rel <= 1e-10, f"{other} vs engine on {problem.description}: rho {rel:.2e}"


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees(3), reduce_name=st.sampled_from(sorted(REDUCE)), seed=st.integers(0, 1000))
def test_compiled_engine_equals_eager_engine_on_random_programs(tree, reduce_name, seed):
    """The generated program runs the engine's own formulas: equal to 1e-12, at two sizes."""
    problem = as_problem(tree, reduce_name, seed)
    for size in (3, 5):
        inputs = problem.inputs(size, seed)
        engine = _gradient("engine", problem, inputs)
        got = _gradient("engine-compiled", problem, inputs)
        rel = errors(got, engine)["rho"]
        assert rel <= 1e-12, f"engine-compiled vs engine on {problem.description}: rho {rel:.2e}"
