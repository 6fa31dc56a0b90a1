"""The seed-questions section: the engine run live, its numbers and graphs on the page."""
from __future__ import annotations

import re

import pytest

from diffcompare.report.sections import seeds


@pytest.fixture(scope="module")
def body():
    section = seeds.build()
    return str(section.body)


def test_no_example_failed(body):
    assert "failed while the report was built" not in body


def test_seed_000_minibatch(body):
    # T.grad of mean(1/T) as torch prints it, and w.grad = mean(x) = 1.5
    assert "[-0.1000, -0.0250, -0.0111, -0.0063, -0.0040, -0.0028, -0.0020, -0.0016," in body
    assert "<code>w.grad</code> = [1.5]" in body
    assert "average of the per-sample gradients</td><td></td><td>1.5</td>" in body
    # the graph's size does not depend on the batch, its saved bytes do (8 per sample)
    assert re.search(r"100,000</td><td class=\"num\">3</td><td class=\"num\">2</td>"
                     r"<td class=\"num\">1</td><td class=\"num\">800,000 B", body)


def test_seed_001_bias_is_a_sum(body):
    assert "b.g = out.g.sum(0)" in body
    assert "sum over the batch" in body and "AddBackward0" in body
    assert "(ratio [8, 8])" in body


def test_seed_002_gradient_argument(body):
    assert "[0.3, 3, 0.0003]" in body                     # a.grad = 3 v
    assert "grad can be implicitly created only for scalar outputs" in body
    assert "a.grad = 6, b.grad = 8, c.grad = 2" in body   # accumulation over two backward calls
    assert "[[2, 0, 0, 0]]" in body and "[[0, 2, 0, 0]]" in body


def test_seed_003_graph_contents(body):
    assert "((MulBackward0, 0), (AccumulateGrad, 0))" in body
    assert "modified by an inplace operation" in body and "expected version 0" in body
    assert "Trying to backward through the graph a second time" in body
    assert "((UnbindBackward0, 0), (UnbindBackward0, 1))" in body
    assert "k = 80; c.grad = 36, h.grad = -64" in body


def test_symbolic_or_numerical(body):
    assert "f&#x27;(x) = " in body or "f'(x) = " in body
    for method in ("engine (reverse mode)", "fd-forward", "fd-central", "fd-complex-step",
                   "exact, 50 digits"):
        assert method in body


def test_graph_drawings_are_inline_svg(body):
    assert body.count('<div class="graph"><svg') >= 6
    assert "saved tensor(s) holding" in body
