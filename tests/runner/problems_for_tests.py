"""A problem for the runner's tests, loaded through a suite's ``problem_modules``."""
import numpy as np

from diffcompare.problems import Problem, register

register(Problem(
    name="runner_test_square",
    fn=lambda xp, x: xp.sum(x * x),
    make_inputs=lambda size, seed: (np.random.default_rng(seed).standard_normal(size),),
    description="sum of squares (runner tests)",
    sizes=(1, 3),
), replace=True)

register(Problem(
    name="runner_test_cubes",
    fn=lambda xp, x: xp.sum(x * x * x),
    make_inputs=lambda size, seed: (np.random.default_rng(seed).standard_normal(size),),
    description="sum of cubes, with its Hessian diagonal as a product (runner tests)",
    sizes=(3,), operators=("hessian_diagonal",),
    exact_operators={"hessian_diagonal": lambda x, *rest: (6 * x,)},
), replace=True)

register(Problem(
    name="runner_test_kink",
    fn=lambda xp, x: xp.sum(xp.maximum(x, 0.0) ** 2 + xp.abs(x)),
    # size 4 puts one element exactly on both kinks (x = 0); size 3 none
    make_inputs=lambda size, seed: (np.array([0.0, 1.5, -2.0, 3.0][4 - size:]),),
    description="relu squared plus abs: its kinks reached at size 4 only (runner tests)",
    sizes=(3, 4),
), replace=True)

register(Problem(
    name="runner_test_banded",
    fn=lambda xp, x: x[1:] * x[:-1] + xp.sin(x[1:]),
    make_inputs=lambda size, seed: (np.random.default_rng(seed).standard_normal(size),),
    make_cotangent=lambda size, seed: np.random.default_rng(seed + 1).standard_normal(size - 1),
    description="x[i+1] x[i] + sin x[i+1]: a bidiagonal Jacobian (runner tests)",
    sizes=(6,), tags={"smooth", "vector-output"},
), replace=True)
