"""One contract, one verdict: a function that uses a name outside the xp contract gets the
same answer on every method -- it runs where the method's namespace has the name, and every
other method reports ``unsupported`` with one explanation (said once, up front), never an
error row on some methods and ``ok`` on others."""
from __future__ import annotations

import textwrap
import warnings

import numpy as np
import pytest

import diffcompare
from diffcompare import backends, cli, problems
from diffcompare.measure.cell import measure_cell
from diffcompare.problems import Problem, contract
from diffcompare.runner import load_results


def uses_i0(xp, x):
    """``xp.i0`` (a Bessel function): NumPy, jax.numpy and autograd.numpy have it; the engine,
    torch's and SymPy's namespaces do not, and it is outside the contract."""
    return xp.sum(xp.i0(x) * x)


def uses_sort(xp, x):
    return xp.sum(xp.sort(x) * xp.arange(x.shape[0]))


def uses_a_typo(xp, x):
    return xp.sum(xp.exp(x)) + xp.sum(xp.frobnicate(x))


def contract_only(xp, x):
    return xp.sum(xp.logsumexp(x) * xp.sin(x) + xp.maximum(x, 0.0))


def _inputs(size, seed):
    return (np.random.default_rng(seed).uniform(0.1, 1.0, size),)


def _problem(fn):
    return Problem(name=fn.__name__, fn=fn, make_inputs=_inputs, description=fn.__name__)


#: every method, by the namespace it runs a problem on
METHODS = {name: backends.namespace_of(name) for name in backends.names()}


def test_every_backend_names_its_namespace():
    assert set(METHODS.values()) <= set(contract.RUNS_ON)
    assert METHODS["engine"] == METHODS["engine-compiled"] == METHODS["engine-jvp"] == "engine"
    assert METHODS["jax-jit"] == METHODS["jax-jacfwd"] == "jax" and METHODS["torch"] == "torch"
    assert {METHODS[m] for m in ("sympy", "sympy-cse", "sympy-reverse", "symengine")} == {"sympy"}
    assert METHODS["fd-central"] == "numpy" and METHODS["autograd"] == "autograd"


def test_a_name_outside_the_contract_is_found_and_placed():
    p = _problem(uses_i0)
    v = contract.verdict(p, p.inputs(3))
    assert v.outside == ("i0",)
    assert set(v.have("i0")) >= {"numpy", "jax"} and not {"engine", "torch", "sympy"} & set(v.have("i0"))
    assert v.runs_on("numpy") and v.runs_on("jax") and not v.runs_on("engine")
    assert v.reason("engine") == v.reason("torch") == v.reason("sympy")      # one explanation
    assert v.reason("engine").startswith("xp.i0 is outside diffcompare's xp contract")
    assert "xp.i0 is on NumPy, jax.numpy" in v.reason("engine")
    assert v.reason("numpy") == ""


def test_names_are_found_through_linalg_too():
    def f(xp, x):
        return xp.linalg.norm(x) + xp.sum(x)

    used = contract.names_used(f, (np.ones(3),))
    assert "linalg.norm" in used and "sum" in used


def test_a_contract_only_function_is_not_flagged():
    p = _problem(contract_only)
    v = contract.verdict(p, p.inputs(4))
    assert not v and v.outside == ()
    assert all(v.runs_on(k) for k in contract.RUNS_ON)


def test_a_name_no_namespace_has_says_so_naming_the_namespaces():
    p = _problem(uses_a_typo)
    v = contract.verdict(p, p.inputs(3))
    assert v.outside == ("frobnicate",) and v.have("frobnicate") == ()
    assert not any(v.runs_on(k) for k in contract.RUNS_ON)
    reason = v.reason("numpy")
    assert "xp.frobnicate exists on none of the namespaces" in reason
    for label in ("engine", "NumPy", "jax.numpy", "torch", "SymPy"):
        assert label in reason
    assert reason == v.reason("engine")


def test_a_contract_name_autograd_cannot_differentiate_is_its_verdict_too():
    """HIPS autograd has ``concat`` but no gradient for it: its cell is ``unsupported`` with
    that reason (said up front too), not an error row at the gradient."""
    pytest.importorskip("autograd")

    def f(xp, x):
        return xp.sum(xp.concat([x, x * x]))

    p = _problem(f)
    v = contract.verdict(p, p.inputs(3))
    assert not v and v.runs_on("engine") and v.runs_on("numpy")
    assert not v.runs_on("autograd")
    assert "HIPS autograd defines no gradient (VJP) for autograd.numpy.concat" in v.reason("autograd")
    note = v.message({"engine": "engine", "autograd": "autograd"})
    assert "Methods that run it: engine; methods that report it unsupported: autograd" in note
    assert v.message({"engine": "engine"}) == ""          # nothing to say without autograd


def test_sort_is_refused_on_sympy_with_its_reason():
    p = _problem(uses_sort)
    v = contract.verdict(p, p.inputs(3))
    assert v.outside == ("sort",) or "sort" in contract.NAMES     # the engine may have it
    if v:
        assert not v.runs_on("sympy") and v.runs_on("numpy") and v.runs_on("jax")
        assert "sorting needs the values" in v.reason("sympy")


@pytest.fixture
def registered():
    made = []

    def register(fn):
        p = _problem(fn)
        problems.register(p, replace=True)
        made.append(p.name)
        return p

    yield register
    for name in made:
        problems.unregister(name)


@pytest.mark.parametrize("fn", [uses_i0, uses_a_typo])
def test_every_method_gives_the_same_verdict_in_its_cell(fn, registered):
    """In the cell itself (what every runner path calls): refused methods give one
    ``unsupported`` row with the same message, before any work; the others run."""
    p = registered(fn)
    verdict = contract.verdict(p, p.inputs(3))
    messages = set()
    for name, key in METHODS.items():
        if not backends.get(name).available():
            continue
        rows = list(measure_cell(p.name, 3, 0, name, options={"samples": 1, "min_sample_s": 0.0})) \
            if not verdict.runs_on(key) else None
        if rows is None:
            continue
        assert [(r["phase"], r["status"]) for r in rows] == [("cell", "unsupported")], name
        messages.add(rows[0]["message"])
    assert len(messages) == 1, messages
    assert f"xp.{verdict.outside[0]}" in messages.pop()


def test_compare_says_it_once_and_runs_the_methods_that_can(tmp_path):
    chosen = ["engine", "fd-central", "sympy", "torch"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = diffcompare.compare(uses_i0, inputs=(np.array([0.3, 0.7]),), backends=chosen,
                                    results_dir=tmp_path, samples=2, min_sample_s=0.0)
    notes = [w for w in caught if issubclass(w.category, contract.ContractWarning)]
    assert len(notes) == 1
    note = str(notes[0].message)
    assert "xp.i0" in note and "Methods that run it: fd-central" in note
    assert "methods that report it unsupported: engine, sympy, torch" in note
    rows = table.set_index("backend")
    assert rows.at["fd-central", "status"] == "ok"
    refused = rows.loc[["engine", "sympy", "torch"]]
    assert set(refused["status"]) == {"unsupported"}
    assert refused["message"].nunique() == 1
    assert "outside diffcompare's xp contract" in refused["message"].iloc[0]


def test_a_contract_only_function_runs_everywhere_without_a_note(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = diffcompare.compare(contract_only, inputs=(np.array([0.3, -0.7]),),
                                    backends=["engine", "fd-central"], results_dir=tmp_path,
                                    samples=2, min_sample_s=0.0)
    assert not [w for w in caught if issubclass(w.category, contract.ContractWarning)]
    assert set(table["status"]) == {"ok"}


def test_cli_prints_one_note_before_the_cells(tmp_path, capsys):
    module = tmp_path / "outside_problems.py"
    module.write_text(textwrap.dedent('''
        import numpy as np
        from diffcompare.problems import Problem, register

        register(Problem(name="cli_uses_i0", fn=lambda xp, x: xp.sum(xp.i0(x)),
                         make_inputs=lambda size, seed: (np.linspace(0.1, 1.0, size),),
                         description="i0"), replace=True)
    '''))
    results = tmp_path / "out"
    try:
        code = cli.main(["run", "--problems", "cli_uses_i0", "--backends", "engine,fd-central",
                         "--sizes", "2,3", "--problem-module", str(module), "--results",
                         str(results), "--quiet"])
    finally:
        if "cli_uses_i0" in {p.name for p in problems.all_problems()}:
            problems.unregister("cli_uses_i0")
    assert code == 0
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if line.startswith("diffcompare: note:")]
    assert len(notes) == 1 and "xp.i0" in notes[0] and "Methods that run it: fd-central" in notes[0]
    cells = load_results(results)
    cells = cells[cells.phase == "cell"].set_index(["backend", "size"])["status"]
    assert set(cells.loc["engine"]) == {"unsupported"} and set(cells.loc["fd-central"]) == {"ok"}
