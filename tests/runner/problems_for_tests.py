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
