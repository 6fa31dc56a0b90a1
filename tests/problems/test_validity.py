"""validity: the ops a function applies, read from one evaluation on the engine, with lines."""
import numpy as np
import pytest

from diffcompare import problems
from diffcompare.problems import Problem, validity


def fixed(*arrays):
    return lambda size, seed: tuple(np.array(a, dtype=np.float64) for a in arrays)


@pytest.mark.parametrize("problem", problems.all_problems(), ids=lambda p: p.name)
def test_catalog_tags_agree_with_the_ops_each_problem_applies(problem):
    """The hand-set tags are a cross-check of what the function does: no problem the
    catalog calls complex-analytic applies an op whose complex extension is not."""
    facts = validity.facts(problem)
    assert facts.ran, facts.error
    if problem.complex_analytic:
        assert facts.non_analytic == ()
    if "abs" in problem.name:
        assert [use.op for use in facts.non_analytic] == ["abs"]
        assert facts.non_analytic[0].line.startswith("nonsmooth.py:")


def test_each_use_is_recorded_once_per_op_with_the_first_line():
    def fn(xp, x):
        a = xp.abs(x)                 # first use
        return xp.sum(a + xp.abs(x * 2))

    line = fn.__code__.co_firstlineno + 1
    p = Problem("two_abs", fn, fixed([1.0, -1.0]), "two abs", tags={"smooth"})
    facts = validity.facts(p)
    assert [str(u) for u in facts.non_analytic] == [f"abs at test_validity.py:{line}"]
    assert [u.node for u in facts.ops].count("Abs") == 2


def test_ops_on_constants_only_are_not_recorded():
    def fn(xp, x, c):
        return xp.sum(x * xp.abs(c))  # abs of a non-differentiated argument: no node

    p = Problem("abs_of_constant", fn, fixed([1.0, 2.0], [-1.0, 3.0]), "x |c|", tags={"smooth"})
    assert validity.facts(p).non_analytic == ()


def test_a_function_the_engine_cannot_run_is_unknown_not_clean():
    p = Problem("escapes", lambda xp, x: np.sum(np.abs(x)), fixed([1.0, -2.0]), "np.abs",
                tags={"smooth"})
    facts = validity.facts(p)
    assert not facts.ran and "TypeError" in facts.error and facts.ops == ()
