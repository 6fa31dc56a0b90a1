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


# --- kinks reached at the given inputs -------------------------------------------------

def kinks_of(fn, *arrays):
    """The kinks ``fn`` reaches at ``arrays`` (its first argument differentiated)."""
    p = Problem(f"kinks_{id(fn)}", fn, fixed(*arrays), "kinks", sizes=(1,))
    facts = validity.facts_at(p, p.inputs(1, 0), key=tuple(map(str, arrays)))
    assert facts.ran, facts.error
    return facts.kinks


def test_abs_at_exactly_zero_is_a_kink_and_at_1e300_is_not():
    def fn(xp, x):
        return xp.sum(xp.abs(x) * 3.0)

    line = fn.__code__.co_firstlineno + 1
    reached, = kinks_of(fn, [0.0, -2.0, 0.0])
    assert (reached.op, reached.count, reached.total) == ("abs", 2, 3)
    assert str(reached) == f"abs at x = 0 (2 of 3 elements) at test_validity.py:{line}"
    assert kinks_of(fn, [1e-300, -1e-300, 5e-324]) == ()


def test_maximum_with_an_exact_tie_is_a_kink_and_one_ulp_off_is_not():
    def fn(xp, x, c):
        return xp.sum(xp.maximum(x, c) ** 2)

    reached, = kinks_of(fn, [1.0, 2.0], [1.0, 3.0])
    assert (reached.op, reached.count) == ("maximum", 1)
    assert kinks_of(fn, [np.nextafter(1.0, 2.0), 2.0], [1.0, 3.0]) == ()
    assert kinks_of(fn, [np.nextafter(1.0, 0.0), 2.0], [1.0, 3.0]) == ()


@pytest.mark.parametrize("fn, at, off, op", [
    (lambda xp, x: xp.sum(xp.where(x > 0, x, 0.0)), [0.0, 1.0], [1e-300, 1.0], "comparison >"),
    (lambda xp, x: xp.sum(x * (x >= 0)), [0.0, 1.0], [-1e-300, 1.0], "comparison >="),
    (lambda xp, x: xp.sum(xp.floor(x) * x), [3.0, 0.5], [np.nextafter(3.0, 4.0), 0.5], "floor"),
    (lambda xp, x: xp.sum(xp.round(x) * x), [2.5, 0.2], [np.nextafter(2.5, 3.0), 0.2], "round"),
    (lambda xp, x: xp.max(x * 2.0), [1.0, 3.0, 3.0], [1.0, 3.0, np.nextafter(3.0, 0.0)], "max"),
    (lambda xp, x: xp.sum(xp.sort(x) * xp.arange(3.0)), [2.0, 1.0, 2.0],
     [2.0, 1.0, np.nextafter(2.0, 3.0)], "sort"),
    (lambda xp, x: xp.sum(xp.clip(x, -1.0, 1.0)), [1.0, 0.0], [np.nextafter(1.0, 2.0), 0.0],
     "minimum"),
    (lambda xp, x: xp.sum(xp.sign(x) * x * x), [0.0, 2.0], [1e-300, 2.0], "sign"),
    (lambda xp, x: xp.linalg.norm(x), [0.0, 0.0], [0.0, 1e-300], "norm"),
    (lambda xp, x: xp.sum(xp.linalg.eigvalsh(xp.reshape(x, (2, 2))) ** 3), [2.0, 0.0, 0.0, 2.0],
     [2.0, 0.0, 0.0, np.nextafter(2.0, 3.0)], "eigh"),
], ids=["where-gt", "mask-ge", "floor", "round", "max-tie", "sort-tie", "clip-bound", "sign",
        "norm-zero", "eigvalsh-repeated"])
def test_each_kink_rule_at_its_boundary(fn, at, off, op):
    assert [k.op for k in kinks_of(fn, at)] == [op]
    assert kinks_of(fn, off) == ()


def test_ops_on_constants_reach_no_kink():
    # abs of the constant argument sits at 0, but nothing differentiated passes through it
    assert kinks_of(lambda xp, x, c: xp.sum(x * xp.abs(c)), [1.0, 2.0], [0.0, 3.0]) == ()


def test_the_note_says_what_and_where_and_at_kink_reads_it_back():
    def fn(xp, x):
        return xp.sum(xp.maximum(x, 0.0)) + xp.sum(xp.abs(x))

    p = Problem("note", fn, fixed([0.0, 2.0]), "relu + abs", sizes=(1,))
    note = validity.facts_at(p, p.inputs(1, 0), key="note").kink_note
    line = fn.__code__.co_firstlineno + 1
    assert note.startswith(f"{validity.KINK_NOTE}: maximum at a tie")
    assert f"abs at x = 0 (1 of 2 elements) at test_validity.py:{line}" in note
    assert "convention" in note and validity.at_kink(note)
    assert not validity.at_kink("gradient ok; jacobian unsupported (see its row)")
    assert validity.facts_at(p, (np.array([1.0, 2.0]),), key="none").kink_note is None


def test_huge_inputs_and_a_slow_function_are_unknown_not_evaluated(monkeypatch):
    p = Problem("slow", lambda xp, x: xp.sum(xp.abs(x)), fixed([0.0, 1.0]), "abs", sizes=(1,))
    monkeypatch.setattr(validity, "MAX_ELEMENTS", 1)
    facts = validity.facts_at(p, p.inputs(1, 0), key="huge")
    assert not facts.ran and "input elements" in facts.error and facts.kink_note is None
    monkeypatch.setattr(validity, "MAX_ELEMENTS", 10)
    monkeypatch.setattr(validity, "BUDGET_S", -1.0)       # already past its deadline
    facts = validity.facts_at(p, p.inputs(1, 0), key="slow")
    assert not facts.ran and "budget" in facts.error


def test_a_function_that_swallows_the_deadline_is_still_unknown(monkeypatch):
    def fn(xp, x):
        try:
            return xp.sum(xp.abs(x))
        except Exception:
            return xp.sum(x)

    monkeypatch.setattr(validity, "BUDGET_S", -1.0)
    p = Problem("swallows", fn, fixed([0.0, 1.0]), "abs", sizes=(1,))
    assert not validity.facts_at(p, p.inputs(1, 0), key="swallow").ran


# --- the catalog's tags, cross-checked against the kinks its inputs reach ---------------

@pytest.mark.parametrize("problem", problems.all_problems(), ids=lambda p: p.name)
def test_no_problem_tagged_smooth_reaches_a_kink_at_its_inputs(problem):
    """A problem the catalog calls smooth (not tagged ``nonsmooth``) never evaluates an op
    exactly on its kink at its two smallest sizes, seeds 0 and 1."""
    if not problem.smooth:
        pytest.skip("tagged nonsmooth")
    for size in sorted(problem.sizes)[:2]:
        for seed in (0, 1):
            facts = validity.facts_at(problem, problem.inputs(size, seed), key=(size, seed))
            assert facts.ran, facts.error
            assert facts.kinks == (), [str(k) for k in facts.kinks]


@pytest.mark.parametrize("name", ["relu_kink", "abs_kink", "max_kink"])
def test_the_kink_problems_reach_exactly_the_kinks_the_kinks_study_places(name):
    """The trace and the kinks study's geometry (``kink_geometry``) agree on how many
    elements (max_kink: rows) sit on a kink."""
    from diffcompare.studies.kinks import kink_geometry

    problem = problems.get(name)
    size = min(problem.sizes)
    inputs = problem.inputs(size, 0)
    reached, = validity.facts_at(problem, inputs, key=(size, 0)).kinks
    geometry = kink_geometry(name, inputs[0])
    if name == "max_kink":     # one kink per tied row
        x = np.asarray(inputs[0]).reshape(len(inputs[0]), -1)
        expected = sum(1 for row in x if np.sum(row == row.max()) > 1)
    else:
        expected = sum(g["kink"] for g in geometry)
    assert reached.count == expected > 0
    assert reached.line.startswith("nonsmooth.py:")
