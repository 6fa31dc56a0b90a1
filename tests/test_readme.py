"""The README's examples work as written."""
import pathlib
import re

import numpy as np

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _block(marker: str) -> str:
    text = README.read_text()
    match = re.search(rf"<!-- {marker} -->\s*```python\n(.*?)```", text, re.S)
    assert match, f"README has no python block after <!-- {marker} -->"
    return match.group(1)


def test_user_defined_problem_example_runs_through_every_method(capsys):
    from diffcompare import problems

    namespace = {}
    try:
        exec(compile(_block("user-problem-example"), "README.md", "exec"), namespace)
    finally:
        problems.unregister("softplus_sum")
    lines = capsys.readouterr().out.strip().splitlines()
    names = [line.split()[0] for line in lines]
    assert {"engine", "sympy", "fd-central", "fd-complex-step"} <= set(names)
    x = namespace["x"][0]
    sigmoid = 1 / (1 + np.exp(-x[:3]))
    for line in lines:
        values = np.array([float(v) for v in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", line)])
        np.testing.assert_allclose(values, sigmoid, rtol=1e-4, atol=1e-6)


def test_compare_example_gives_a_tidy_table(capsys):
    """The notebook example: every method's row, the exact ones accurate to rounding."""
    namespace = {}
    exec(compile(_block("compare-example"), "README.md", "exec"), namespace)
    table = namespace["table"]
    assert sorted(set(table.backend)) == ["engine", "fd-central", "sympy"]
    assert sorted(set(table["size"])) == [10, 100] and len(table) == 6
    assert set(table.status) == {"ok"}, table[["backend", "size", "status", "message"]]
    exact = table[table.backend != "fd-central"]
    assert (exact.error_rho < 1e-13).all() and (table.gradient_s > 0).all()
    assert (table[table.backend == "fd-central"].error_rho < 1e-6).all()
    assert "softplus_sum" in table._repr_html_()
    assert "softplus_sum" not in [p.name for p in __import__("diffcompare").problems.all_problems()]


def test_engine_example_shows_the_saved_tensor_it_promises():
    """The engine block and the graph block after it, run as written: after
    ``L.backward(retain_graph=True)`` the graph still holds x, and the counts say so."""
    ns = {}
    exec(compile(_block("engine-example"), "README.md", "exec"), ns)
    y, x, L, w = ns["y"], ns["x"], ns["L"], ns["w"]
    assert repr(w.grad) == "tensor([1.5000])"                         # as the comment says
    saved = y.grad_fn.saved
    assert list(saved) == ["self"] and saved["self"].tensor is x       # SavedTensor of x
    np.testing.assert_array_equal(saved["self"].data, [1.0, 2.0])
    assert L.grad_fn.next_functions[0][0] is y.grad_fn
    assert y.grad_fn.next_functions[0][0] is None
    assert type(y.grad_fn.next_functions[1][0]).__name__ == "AccumulateGrad"
    exec(compile(_block("graph-example"), "README.md", "exec"), ns)
    from diffcompare.engine import graph

    assert graph.summarize(L).total_saved_bytes == 16
    assert "1 saved tensor holding 16 bytes" in graph.summary_text(L)


def test_engine_example_text_explains_why_a_plain_backward_shows_nothing():
    """What the README says of a plain backward is what the engine does."""
    from diffcompare.engine import Tensor, graph

    w = Tensor([2.0], requires_grad=True)
    y = Tensor([1.0, 2.0]) * w
    L = y.mean()
    L.backward()
    assert y.grad_fn.saved == {} and graph.summarize(L).total_saved_bytes == 0
    text = README.read_text()
    assert "after it, `y.grad_fn.saved` is `{}`" in text and "retain_graph=True" in text
