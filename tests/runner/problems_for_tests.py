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
    sizes=(3,), products=("hessian_diagonal",),
    exact_products={"hessian_diagonal": lambda x, *rest: (6 * x,)},
), replace=True)
