"""The seed-questions section: the threads' code as the seed study records it on the engine
and on PyTorch, side by side, with short answers first and both libraries' graphs."""
from __future__ import annotations

import html
import re

import pytest

from diffcompare.report.sections import seeds


@pytest.fixture(scope="module")
def body(seed_record):
    section = seeds.build(record=seed_record)
    return html.unescape(str(section.body))


def _row(body, label):
    """The cells of the side-by-side row whose first cell is ``label``."""
    m = re.search(r'<td class="what">' + re.escape(label) + r"</td>(.*?)</tr>", body, re.S)
    assert m, label
    return re.findall(r"<pre[^>]*>(.*?)</pre>", m.group(1), re.S)


def test_no_example_failed(body):
    assert "failed when the run recorded it" not in body


def test_answers_open_each_question(body):
    for seed in ("000", "001", "002", "003", "sym"):
        block = body.split(f'id="seed-{seed}"', 1)[1]
        assert block.index('class="answer"') < block.index("</h3>") + 200
    assert "w.grad</code> = [1.5] = mean(x)" in body
    assert "i.grad = 18" in body
    assert "in 5 of 5 checks" in body


def test_seed_000_minibatch(body):
    assert _row(body, "w.grad")[0] == "[1.5]"
    assert _row(body, "y.grad_fn saved")[0] == "self = x [1, 2]"        # named, with its value
    assert _row(body, "nodes in the graph, batch of 100,000")[0] == "3"


def test_seed_003_complete(body):
    assert _row(body, "i.grad (kept by i.retain_grad())")[0] == "18"
    assert _row(body, "m = k.detach(): m.requires_grad")[0] == "False"
    assert _row(body, "with no_grad(): n = k·2; n.requires_grad")[0] == "False"
    assert _row(body, "c._version after c += 1")[0] == "1"
    assert "modified by an inplace operation" in body
    assert _row(body, "(c + d).grad_fn saved")[0] == "(nothing)"
    assert "nothing saved" not in body and "saves nothing saved" not in body
    assert "((UnbindBackward0, 0), (UnbindBackward0, 1))" in body


def test_torch_side_by_side_and_flagged_difference(body):
    pytest.importorskip("torch")
    engine, torch_out = _row(body, "w.grad")
    assert engine == torch_out == "[1.5]"
    engine, torch_out = _row(body, "out.grad_fn.next_functions")
    assert "MatmulBackward0" in engine and "MmBackward0" in torch_out
    assert body.count("badge st-error\">differs") >= 1
    # both libraries' graphs are drawn, each with its key
    assert body.count("<strong>torch 2.13") >= 6 and body.count("<strong>diffcompare") >= 6


def test_symbolic_or_numerical(body):
    assert "f'(x) = " in body
    for method in ("engine (reverse mode)", "fd-forward", "fd-central", "fd-complex-step",
                   "exact, 50 digits"):
        assert method in body


def test_graph_drawings_have_a_legend(body):
    graphs = re.findall(r'<div class="graph">(<svg.*?</svg>)', body, re.S)
    assert len(graphs) >= 6
    assert all('class="legend"' in g for g in graphs)


# --------------------------------------------------------------------------- the threads' own code

def _code_row(body, source):
    """The output cells of the thread-code row whose code is ``source``."""
    m = re.search(r'<td class="what"><pre class="code">' + re.escape(source) + r"</pre>(.*?)</tr>",
                  body, re.S)
    assert m, source
    return re.findall(r'<pre class="value">(.*?)</pre>', m.group(1), re.S)


def test_the_threads_code_is_shown_verbatim_not_rewritten(body):
    assert "&gt;&gt;&gt;" not in body                  # the fixture unescapes once
    assert ">>> T = torch.arange (10.) + 1.\n>>> T.requires_grad = True" in body
    assert "np.arange(10.0)" not in body and "tensor(np.arange" not in body
    assert "from .viz" not in body and "lib." not in body   # nothing a student cannot paste
    assert "inp.g = out.g @ w.t()" in body and "from torch.autograd import Variable" in body


def test_thread_code_outputs_of_both_libraries_in_the_codes_dtype(body):
    pytest.importorskip("torch")
    assert _code_row(body, "scalar_result") == ["tensor(0.2929, grad_fn=<MeanBackward0>)"] * 2
    assert _code_row(body, "print(a.grad) # tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])") == [
        "tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])"] * 2       # float32, as the thread printed
    assert _code_row(body, "print(c.grad) # tensor(10.)") == ["tensor(10.)"] * 2
    assert "dtype=torch.float64" not in body


def test_thread_code_flags_each_differing_statement(body):
    pytest.importorskip("torch")
    row = re.search(r'<tr class="part-thread differs"><td class="what"><pre class="code">'
                    r"torch.__version__</pre>.*?</tr>", body, re.S)
    assert row and "a version string" in row.group(0) and "st-error" in row.group(0)
    engine, torch_out = _code_row(body, "print(x.grad.data)")[:2]
    assert engine == "[[2. 0. 0. 0.]]" and torch_out == "tensor([[2., 0., 0., 0.]])"
    # the closer looks are PyTorch code too: float32, pasteable
    assert "import torch\nw = torch.tensor([2.], requires_grad=True)" in body


def test_what_is_not_run_is_said(body):
    block = body.split('id="seed-003"', 1)[1]
    assert "Not run: The post's code is in images" in block
    assert "Not run: The thread's other code-fenced blocks are formulas" in body
