"""The seed threads' code, run on the engine and on PyTorch side by side.

Two kinds of example, both PyTorch code that runs unchanged on PyTorch and on the engine's
torch face (:mod:`diffcompare.engine.torch`), in the dtype the code asks for (float32
unless it says otherwise, as the threads printed):

- :data:`THREAD_CODE`: each code block of the threads, character for character (a
  ``>>>`` session is run as the interpreter runs it), with the setup a snippet assumes and
  a check that prints what it computed, both marked as ours.  :func:`compare_code` gives
  each statement's output on both libraries and flags every one that differs.
- :data:`EXAMPLES`: closer looks at what the threads ask (the graph, saved tensors,
  versions), each a function of ``torch`` and a :class:`Record` that writes down what a
  reader looks at: values and gradients, ``grad_fn`` and ``next_functions``, saved
  tensors, version counters, error messages, and the graphs to draw.
  :func:`side_by_side` puts the two libraries' records next to each other and flags
  every line where they differ; ``Example.code`` is the function without the recording.

The report's seed section, ``diffcompare demo`` and the tests all use these.

>>> from diffcompare.viz.libs import engine
>>> rec = run(get("003-complicated"), engine())
>>> rec.text("i.grad")               # the thread: i.retain_grad() gives i.grad = 18
'18'
>>> [(r.label, r.engine) for r in side_by_side(get("000-mean-of-product"))][4]
('w.grad', '[1.5]')
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Callable

import numpy as np

from .viz.libs import Lib, libs
from .viz.values import fmt

__all__ = ["Record", "Line", "Example", "Row", "EXAMPLES", "QUESTIONS", "get", "run", "side_by_side",
           "fmt", "ThreadCode", "THREAD_CODE", "CodeRow", "run_code", "run_blocks", "compare_code",
           "same_output", "get_code"]


# --------------------------------------------------------------------------- the threads' own code


@dataclasses.dataclass(frozen=True)
class ThreadCode:
    """A code block of a seed thread, character for character (``code``), with what it
    assumes but the thread does not show (``setup``) and what we print to see what it
    computed (``check``), both ours and shown as ours.  ``repl``: the block is a
    ``>>>`` session, run as the interpreter runs it (each expression's value echoed); its
    non-prompt lines are what the thread printed."""

    key: str
    seed: str
    title: str
    code: str
    setup: str = ""
    check: str = ""
    note: str = ""

    @property
    def repl(self) -> bool:
        return self.code.lstrip().startswith(">>>")

    def statements(self) -> list:
        """``(source, what the thread printed for it)`` for each statement of ``code``."""
        if not self.repl:
            return [(src, _printed_in_comment(src)) for src in _split(self.code)]
        out, cur, printed = [], None, []
        for line in self.code.splitlines():
            if line.startswith(">>>") or line.startswith("..."):
                body = line[4:] if len(line) > 3 else ""
                if line.startswith("...") and cur is not None:
                    cur += "\n" + body
                    continue
                if cur is not None:
                    out.append((cur, "\n".join(printed)))
                cur, printed = body, []
            elif cur is not None:
                printed.append(line)
        if cur is not None:
            out.append((cur, "\n".join(printed)))
        return [(src, pr) for src, pr in out if src.strip()]


def _split(code: str) -> list:
    """The top-level statements of ``code``, each with the comments and blank lines above
    it (comments after the last go with the last)."""
    import ast

    if not code.strip():
        return []
    lines = code.splitlines()
    body = ast.parse(code).body
    if not body:
        return [code]
    cuts = [0] + [a.end_lineno for a, b in zip(body, body[1:]) if b.lineno > a.end_lineno]
    cuts.append(len(lines))
    return ["\n".join(lines[a:b]).strip("\n") for a, b in zip(cuts, cuts[1:])]


def _printed_in_comment(src: str) -> str:
    """``print(a.grad) # tensor([3.])``: the thread wrote the output in the comment."""
    import re

    m = re.search(r"^print\(.*\)\s*#\s*(tensor\(.*\))\s*$", src.strip().splitlines()[-1])
    return m.group(1) if m else ""


@dataclasses.dataclass(frozen=True)
class Output:
    """What one statement printed: ``lines``, or the exception it raised (``error``);
    ``ran`` is False for a statement after an error in a script."""

    lines: tuple
    error: str = ""
    ran: bool = True

    @property
    def text(self) -> str:
        if not self.ran:
            return "(not run: an earlier line failed)"
        return "\n".join(self.lines + ((self.error,) if self.error else ()))


def run_code(block: ThreadCode, library: str) -> list:
    """Run ``block`` (setup, the thread's code, our check) on ``library`` — ``"engine"``
    (``import torch`` gives :mod:`diffcompare.engine.torch`) or ``"torch"`` (PyTorch) —
    and return ``(part, source, Output)`` per statement.  Whatever the code prints is
    captured; the ``>>>`` session echoes each expression's value as the interpreter does."""
    import contextlib
    import io
    import sys

    from .engine import torch as face

    ns: dict = {"__name__": "__thread__"}
    rows, failed = [], False
    face_ctx = face.as_torch() if library == "engine" else contextlib.nullcontext()
    with face_ctx, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if library == "engine":
            face.manual_seed(0)
        parts = [("setup", src, "") for src in _split(block.setup)]
        parts += [("thread", src, printed) for src, printed in block.statements()]
        parts += [("check", src, "") for src in _split(block.check)]
        for part, src, _ in parts:
            if failed and not (block.repl and part == "thread"):
                rows.append((part, src, Output((), ran=False)))
                continue
            buf = io.StringIO()
            mode = "single" if block.repl and part == "thread" else "exec"
            error = ""
            old_hook = sys.displayhook
            sys.displayhook = lambda v: None if v is None else print(repr(v))
            try:
                with contextlib.redirect_stdout(buf):
                    exec(compile(src + "\n", f"<seed {block.key}>", mode), ns)
            except Exception as exc:          # the error is what the code shows
                error = f"{type(exc).__name__}: {exc}"
                failed = True
            finally:
                sys.displayhook = old_hook
            lines = tuple(buf.getvalue().rstrip("\n").split("\n")) if buf.getvalue() else ()
            rows.append((part, src, Output(lines, error)))
    return rows


_NUMBER = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:e[-+]?\d+)?"


def same_output(a: str, b: str, rtol: float = 1e-3, atol: float = 1.5e-4) -> bool:
    """Whether two printed outputs agree: the same text around the numbers, each number
    written the same way (fixed or scientific, as many decimals: float32 printed as
    float32) and equal to ``rtol``/``atol`` (a last printed digit may round differently).
    An exception agrees with one of the same type whose message it starts with (the
    engine's may add what to do).

    >>> same_output("tensor([0.5000, 0.2929])", "tensor([0.5000, 0.2930])")
    True
    >>> same_output("tensor([0.5000])", "tensor([0.5000], dtype=torch.float64)")
    False
    >>> same_output("tensor(3.)", "tensor(3.0000)")
    False
    """
    import math
    import re

    if a == b:
        return True
    la, lb = a.split("\n"), b.split("\n")
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        ex, ey = re.match(r"^(\w+(?:Error|Exception)): (.*)$", x), re.match(r"^(\w+(?:Error|Exception)): (.*)$", y)
        if ex or ey:
            if not (ex and ey and ex.group(1) == ey.group(1)
                    and (ex.group(2).startswith(ey.group(2)) or ey.group(2).startswith(ex.group(2)))):
                return False
            continue
        if re.sub(_NUMBER, "#", x) != re.sub(_NUMBER, "#", y):
            return False
        for u, v in zip(re.findall(_NUMBER, x), re.findall(_NUMBER, y)):
            if _written(u) != _written(v):       # fixed vs scientific, decimals: the dtype's print
                return False
            if not math.isclose(float(u), float(v), rel_tol=rtol, abs_tol=atol):
                return False
    return True


def _written(number: str) -> tuple:
    """How a printed number is written: scientific or not, and how many decimals."""
    mantissa = number.lower().split("e")[0]
    return ("e" in number.lower(), "." in mantissa, len(mantissa.split(".")[1]) if "." in mantissa else 0)


@dataclasses.dataclass(frozen=True)
class CodeRow:
    """One statement and its output on each library; ``same`` is None without torch."""

    part: str                      # "setup", "thread" or "check"
    source: str
    engine: str
    torch: str | None
    same: bool | None
    thread: str = ""               # what the thread printed for it, where it shows that
    note: str = ""                 # why they differ, where that is known


def compare_code(block: ThreadCode, runs: dict | None = None) -> list:
    """``block`` on the engine's torch face and on PyTorch (when installed), statement by
    statement, each output flagged where the two differ."""
    runs = runs or run_blocks(block)
    eng, tor = runs["engine"], runs.get("torch")
    printed = dict(block.statements())
    rows = []
    for k, (part, src, out) in enumerate(eng):
        other = tor[k][2].text if tor else None
        same = None if other is None else same_output(out.text, other)
        note = next((why for (key, start), why in KNOWN_CODE_DIFFERENCES.items()
                     if key == block.key and src.lstrip().startswith(start)), "") if same is False else ""
        rows.append(CodeRow(part, src, out.text, other, same,
                            printed.get(src, "") if part == "thread" else "", note))
    return rows


def run_blocks(block: ThreadCode) -> dict:
    """``{"engine": rows, "torch": rows}`` (torch only where it is installed)."""
    out = {"engine": run_code(block, "engine")}
    try:
        import torch  # noqa: F401
    except ImportError:
        return out
    out["torch"] = run_code(block, "torch")
    return out


THREAD_CODE = (
    ThreadCode("000-reciprocal", "000", "the mean of 1/T over a batch T = 1..10", """\
>>> import torch
>>> torch.__version__
'1.9.0'
>>> T = torch.arange (10.) + 1.
>>> T.requires_grad = True
>>> T
tensor([ 1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10.], requires_grad=True)
>>> scalar_result = (1 / T).mean()
>>> scalar_result
tensor(0.2929, grad_fn=<MeanBackward0>)
>>> scalar_result.backward()
>>> T.grad
tensor([-0.1000, -0.0250, -0.0111, -0.0063, -0.0040, -0.0028, -0.0020, -0.0016,
        -0.0012, -0.0010])"""),
    ThreadCode("000-product", "000", "y = x·w, L = y.mean(), with retain_grad", """\
>>> import torch
>>> torch.__version__
'1.9.0'
>>>
>>> w = torch.tensor ([2.], requires_grad = True)  # "requires_grad = True" leaf tensor
>>> x = torch.tensor ([1., 2.])                    # "requires_grad = False" leaf tensor
>>> y = torch.mul (x, w)                           # non-leaf tensor (same as x * w)
>>> L = y.mean()                                   # root (non-leaf) final result
>>>
>>> y.retain_grad()                                # so we can examine y.grad
>>> L.retain_grad()                                # so we can examine L.grad
>>>
>>> w
tensor([2.], requires_grad=True)
>>> x
tensor([1., 2.])
>>> y
tensor([2., 4.], grad_fn=<MulBackward0>)
>>> L
tensor(3., grad_fn=<MeanBackward0>)
>>>
>>> L.backward (retain_graph = True)
>>>
>>> L.grad   # unit "seed" to start chain rule
tensor(1.)
>>> y.grad   # [dL / dy_0, dL / dy_1]
tensor([0.5000, 0.5000])
>>> x.grad   # None, because x is a leaf with requires_grad = False
>>> w.grad   # [dL / dw] = sum_i {dL / dy_i * dy_i / dw}
tensor([1.5000])"""),
    ThreadCode("001-lin-grad", "001", "a linear layer's backward by hand: inp.g, w.g, b.g", """\
# grad of matmul with respect to input
inp.g = out.g @ w.t()
w.g = (inp.unsqueeze(-1) * out.g.unsqueeze(1)).sum(0)
b.g = out.g.sum(0)""",
               setup="""\
import torch
# the lesson's layer out = inp @ w + b on a batch of 4, loss = out.mean(),
# with out.g = dloss/dout as the lesson's mse_grad would leave it
inp = torch.linspace(0.1, 1.2, 12).view(4, 3)
w = torch.linspace(-0.5, 0.7, 6).view(3, 2)
b = torch.tensor([0.1, -0.2])
out = inp @ w + b
out.g = torch.ones(4, 2) / 8""",
               check="""\
print(inp.g)
print(w.g)
print(b.g)
# the same gradients from autograd
inp.requires_grad_(); w.requires_grad_(); b.requires_grad_()
(inp @ w + b).mean().backward()
print(torch.allclose(inp.g, inp.grad), torch.allclose(w.g, w.grad), torch.allclose(b.g, b.grad))""",
               note="The thread shows only these lines; the setup (ours) makes the layer they "
                    "differentiate, and the check prints what they computed next to autograd's "
                    "gradients."),
    ThreadCode("002-original", "002", "the question's code: y.backward(gradients)", """\
gradients = torch.FloatTensor([0.1, 1.0, 0.0001])
y.backward(gradients)
print(x.grad)""",
               setup="""\
import torch
# the old PyTorch tutorial the question quotes (it started from torch.randn(3)):
x = torch.ones(3, requires_grad=True)
y = x * 2
while (y.detach() ** 2).sum().sqrt() < 1000:
    y = y * 2""",
               note="The question quotes three lines of a tutorial; the setup (ours) is that "
                    "tutorial's y = x·2ᵏ, from ones instead of random numbers."),
    ThreadCode("002-example-1", "002", "Example 1: a vector y, y.backward(gradients)", """\
a = torch.tensor([1.0, 2.0, 3.0], requires_grad = True)
b = torch.tensor([3.0, 4.0, 5.0], requires_grad = True)
c = torch.tensor([6.0, 7.0, 8.0], requires_grad = True)
y=3*a + 2*b*b + torch.log(c)
gradients = torch.FloatTensor([0.1, 1.0, 0.0001])
y.backward(gradients,retain_graph=True)
print(a.grad) # tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])
print(b.grad) # tensor([1.2000e+00, 1.6000e+01, 2.0000e-03])
print(c.grad) # tensor([1.6667e-02, 1.4286e-01, 1.2500e-05])""", setup="import torch"),
    ThreadCode("002-example-2", "002", "Example 2: scalars, y.backward()", """\
a = torch.tensor(0.1, requires_grad = True)
b = torch.tensor(1.0, requires_grad = True)
c = torch.tensor(0.1, requires_grad = True)
y=3*a + 2*b*b + torch.log(c)
y.backward()
print(a.grad) # tensor(3.)
print(b.grad) # tensor(4.)
print(c.grad) # tensor(10.)""", setup="import torch"),
    ThreadCode("002-example-3", "002", "Example 3: torch.empty with pin_memory=True", """\
a = torch.empty(1, requires_grad = True, pin_memory=True)
b = torch.empty(1, requires_grad = True, pin_memory=True)
c = torch.empty(1, requires_grad = True, pin_memory=True)
y=3*a + 2*b*b + torch.log(c)
gradients = torch.FloatTensor([0.1, 1.0, 0.0001])
y.backward(gradients)
print(a.grad) # tensor([3.3003])
print(b.grad) # tensor([0.])
print(c.grad) # tensor([inf])""", setup="import torch",
               note="Pinned memory needs an accelerator: without one PyTorch refuses, and so "
                    "does the engine (it has none). The thread's values came from uninitialised "
                    "memory."),
    ThreadCode("002-example-4", "002", "Example 4: gradients accumulate over two backward calls", """\
a = torch.tensor(1.0, requires_grad = True)
b = torch.tensor(1.0, requires_grad = True)
c = torch.tensor(1.0, requires_grad = True)
y=3*a + 2*b*b + torch.log(c)
y.backward(retain_graph=True)
y.backward()
print(a.grad) # tensor(6.)
print(b.grad) # tensor(8.)
print(c.grad) # tensor(2.)""", setup="import torch"),
    ThreadCode("002-variable", "002", "one-hot gradient arguments pick rows of the Jacobian", """\
from torch.autograd import Variable
import torch
x = Variable(torch.FloatTensor([[1, 2, 3, 4]]), requires_grad=True)
z = 2*x
loss = z.sum(dim=1)
# do backward for first element of z
z.backward(torch.FloatTensor([[1, 0, 0, 0]]), retain_graph=True)
print(x.grad.data)
x.grad.data.zero_() #remove gradient in x.grad, or it will be accumulated
# do backward for second element of z
z.backward(torch.FloatTensor([[0, 1, 0, 0]]), retain_graph=True)
print(x.grad.data)
x.grad.data.zero_()
# do backward for all elements of z, with weight equal to the derivative of
# loss w.r.t z_1, z_2, z_3 and z_4
z.backward(torch.FloatTensor([[1, 1, 1, 1]]), retain_graph=True)
print(x.grad.data)
x.grad.data.zero_()
# or we can directly backprop using loss
loss.backward() # equivalent to loss.backward(torch.FloatTensor([1.0]))
print(x.grad.data)""",
               note="On the engine a tensor's .data is its NumPy array, not a tensor: it prints "
                    "as NumPy does and has no zero_(). Write x.grad.zero_() there (and in "
                    "PyTorch, where .data is discouraged)."),
)

#: The threads' code-fenced text that is not run, and why: seed -> what it is.
NOT_RUN = {
    "001": "The thread's other code-fenced blocks are formulas, not Python: the forward pass "
           "written out (f = w[1,1]*x + ... + b), df/dx = w[1,1], dL/db = dL/df * df/db and "
           "L = [MSE(f(x_1), y_1) + ...] / bs.",
    "002": "Two inline calls, loss.backward(torch.FloatTensor([1.0, 1.0, 1.0])) and "
           "loss.backward(torch.FloatTensor([-0.1, 1.0, 0.0001])), are fragments with no loss "
           "defined; Example 1 runs the same call.",
    "003": "The post's code is in images, and its one text listing "
           "(self.optimizer.add_param_group(...)) is a fragment of a model's training code that "
           "the post does not show. The closer looks below rebuild its examples from the prose, "
           "as PyTorch code.",
}

#: Where the engine's torch face and PyTorch print differently on purpose:
#: (block key, start of the statement) -> why.
KNOWN_CODE_DIFFERENCES = {
    ("000-reciprocal", "torch.__version__"): "a version string: the engine's face names itself",
    ("000-product", "torch.__version__"): "a version string: the engine's face names itself",
    ("002-variable", "# do backward for first element of z"):
        "the engine's .data is a NumPy array (printed as NumPy prints, no zero_()); "
        "write x.grad.zero_() — see diffcompare.engine.torch",
    ("002-variable", "x.grad.data.zero_()"):
        "the engine's .data is a NumPy array (no zero_()); write x.grad.zero_()",
}


def get_code(key: str) -> ThreadCode:
    for block in THREAD_CODE:
        if block.key == key:
            return block
    raise KeyError(f"no seed thread code {key!r}; known: {', '.join(b.key for b in THREAD_CODE)}")


# --------------------------------------------------------------------------- recording


@dataclasses.dataclass(frozen=True)
class Line:
    """One thing a reader looks at. ``kind``: value, structure or error."""

    label: str
    text: str
    kind: str = "value"


@dataclasses.dataclass
class Graph:
    """A graph as it was when recorded (a later backward frees saved tensors): its
    drawing and DOT text are taken then; ``root`` and ``names`` stay for inspection."""

    caption: str
    root: object
    names: dict                   # tensor -> label
    svg: str = ""
    dot: str = ""
    facts: str = ""              # nodes and saved tensors, counted when recorded
    steps: dict | None = None    # the forward and backward, node by node (viz.steps.record)


class Record:
    """What an example shows, written the same way whichever library ran it."""

    def __init__(self, lib: Lib):
        self.lib = lib
        self.lines: list[Line] = []
        self.graphs: list[Graph] = []

    def value(self, label: str, t, digits: int = 6):
        """A tensor's values (``None`` stays ``None``), or a plain number or flag."""
        if t is not None and hasattr(t, "requires_grad"):
            t = self.lib.array(t)
        self.lines.append(Line(label, fmt(t, digits)))

    def fact(self, label: str, value):
        """A structural fact (``is_leaf``, a name, a count)."""
        self.lines.append(Line(label, str(value), "structure"))

    def node(self, label: str, node):
        """A ``grad_fn``: its name, or None."""
        self.fact(label, "None" if node is None else self.lib.view.name(node))

    def next_functions(self, label: str, node):
        """``node.next_functions`` written as PyTorch prints it, without addresses."""
        view = self.lib.view
        parts = [f"({'None' if n is None else view.name(n)}, {nr})" for n, nr in view.next_functions(node)]
        self.fact(label, "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")")

    def saved(self, label: str, node, names: dict):
        """The tensors ``node`` saved for backward, each named by the variable it came
        from and shown with its value: ``self = x [1, 2]``; ``(nothing)`` if none."""
        from .viz.graph import label_of, name_pairs

        view = self.lib.view
        pairs = name_pairs(names)
        parts = []
        for name, arr, source, _ in view.saved(node):
            var = label_of(view, source, pairs) if source is not None else None
            parts.append(f"{name}{' = ' + var if var else ''} {fmt(arr)}")
        self.fact(label, "; ".join(parts) or "(nothing)")

    def error(self, label: str, fn: Callable):
        """Run ``fn``; record the exception it raises (the message is the point)."""
        try:
            fn()
        except Exception as exc:              # the error is what the example shows
            self.lines.append(Line(label, f"{type(exc).__name__}: {exc}", "error"))
            return
        self.lines.append(Line(label, "(no error)", "error"))

    def graph(self, caption: str, root, names: dict, gradient=None):
        """Draw ``root``'s graph now, before a backward frees what it saved, and record its
        backward node by node (``gradient``: where a non-scalar ``root``'s backward starts;
        every ``.grad`` is left as it was)."""
        from .viz.graph import counts_text, to_dot, to_svg
        from .viz.steps import record

        svg, dot = to_svg(root, names=names), to_dot(root, names=names)
        facts = counts_text(root, self.lib.view)
        self.graphs.append(Graph(caption, root, dict(names), svg, dot, facts,
                                 record(root, self.lib, names, gradient)))

    def nodes(self, label: str, root):
        """How many nodes ``root``'s graph has (AccumulateGrad included)."""
        from .engine.graph import nodes

        self.fact(label, len(nodes(root)))

    @staticmethod
    def quietly(fn: Callable):
        """``fn()`` with its warnings silenced."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()

    @staticmethod
    def warns(fn: Callable) -> bool:
        """Whether ``fn()`` warns (a UserWarning)."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn()
        return any(issubclass(w.category, UserWarning) for w in caught)

    def text(self, label: str) -> str:
        """The recorded text of ``label``, or of the label that is ``label`` and a note in
        parentheses (KeyError if the example did not record it)."""
        for line in self.lines:
            if line.label == label or line.label.startswith(label + " ("):
                return line.text
        raise KeyError(f"{label!r} was not recorded; recorded: {[x.label for x in self.lines]}")


# --------------------------------------------------------------------------- the examples


def mean_of_product(torch, rec: Record):
    """Seed 000: y = x * w over a batch of two, L = y.mean(); what the graph keeps, and
    that it is one tensor arm whatever the batch size."""
    w = torch.tensor([2.], requires_grad=True)     # requires_grad = True leaf
    x = torch.tensor([1., 2.])                     # requires_grad = False leaf
    y = torch.mul(x, w)
    L = y.mean()
    y.retain_grad()
    L.retain_grad()
    L.backward(retain_graph=True)
    names = {w: "w", x: "x", y: "y", L: "L"}
    rec.value("L", L)
    rec.value("L.grad", L.grad)
    rec.value("y.grad", y.grad)
    rec.value("x.grad", x.grad)
    rec.value("w.grad", w.grad)
    rec.node("L.grad_fn", L.grad_fn)
    rec.next_functions("L.grad_fn.next_functions", L.grad_fn)
    rec.next_functions("y.grad_fn.next_functions", y.grad_fn)
    rec.saved("y.grad_fn saved", y.grad_fn, names)
    big = (torch.linspace(1., 2., 100_000) * w).mean()     # a batch of 100,000
    rec.nodes("nodes in the graph, batch of 2", L)
    rec.nodes("nodes in the graph, batch of 100,000", big)
    rec.graph("L = mean(x·w)", L, names)


def linear_layer(torch, rec: Record):
    """Seed 001: the lesson's model lin → relu → lin → MSE on a batch of 4, its gradients
    against the hand-written backward (``inp.g = out.g @ w.t()``, ``b.g = out.g.sum(0)``)."""
    inp = torch.linspace(-1., 1., 12).view(4, 3).requires_grad_()
    w1 = torch.tensor([[0.5, -0.3], [0.2, 0.8], [-0.6, 0.1]], requires_grad=True)
    b1 = torch.tensor([0.5, -0.5], requires_grad=True)
    w2 = torch.tensor([[1.2], [-0.7]], requires_grad=True)
    b2 = torch.tensor([0.1], requires_grad=True)
    target = torch.tensor([[0.3], [-1.1], [0.8], [0.5]])
    l1 = inp @ w1 + b1
    a1 = l1.relu()
    out = a1 @ w2 + b2
    out.retain_grad()
    loss = torch.nn.functional.mse_loss(out, target)
    loss.backward(retain_graph=True)
    with torch.no_grad():                          # the lesson's hand-written backward
        out_g = 2. * (out - target) / out.shape[0]            # mse_grad
        a1_g = out_g @ w2.t()                                 # inp.g = out.g @ w.t()
        l1_g = (l1 > 0).float() * a1_g                        # relu_grad
        hand = {"inp": l1_g @ w1.t(), "w1": inp.t() @ l1_g, "b1": l1_g.sum(0),
                "w2": a1.t() @ out_g, "b2": out_g.sum(0)}
    rec.value("loss", loss)
    rec.value("out.grad (= out.g of mse_grad)", out.grad, 5)
    for name, t in (("inp", inp), ("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)):
        rec.value(f"{name}.grad", t.grad, 5)
        rec.value(f"{name}.grad equals the hand formula (to float32 rounding)",
                  torch.allclose(t.grad, hand[name], rtol=1e-5, atol=1e-7))
    rec.node("out.grad_fn", out.grad_fn)
    rec.next_functions("out.grad_fn.next_functions", out.grad_fn)
    b2_mean = b2.grad.clone()
    b2.grad = None
    torch.nn.functional.mse_loss(a1 @ w2 + b2, target, reduction="sum").backward(retain_graph=True)
    rec.value("b2.grad with reduction='sum' ÷ with 'mean'", b2.grad / b2_mean, 4)
    rec.graph("loss = mse(relu(inp @ w1 + b1) @ w2 + b2, target)", loss,
              {inp: "inp", w1: "w1", b1: "b1", w2: "w2", b2: "b2", target: "target",
               l1: "l1", a1: "a1", out: "out", loss: "loss"})


def gradient_argument(torch, rec: Record):
    """Seed 002: y = 3a + 2b² + log(c) is a vector; y.backward(v) gives vᵀJ, and
    backward without v refuses."""
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0, 5.0], requires_grad=True)
    c = torch.tensor([6.0, 7.0, 8.0], requires_grad=True)
    y = 3 * a + 2 * b * b + torch.log(c)
    v = torch.FloatTensor([0.1, 1.0, 0.0001])
    y.backward(v, retain_graph=True)
    rec.value("a.grad", a.grad)
    rec.value("b.grad", b.grad)
    rec.value("c.grad", c.grad)
    rec.error("y.backward() with no gradient argument", lambda: y.backward())
    rec.graph("y = 3a + 2b² + log(c)", y, {a: "a", b: "b", c: "c", y: "y"}, gradient=v)


def simple_graph(torch, rec: Record):
    """Seed 003, the simple example: c = a·b, e = c·d; grad_fn, next_functions,
    AccumulateGrad, what MulBackward0 saves."""
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    c = a * b
    d = torch.tensor(4.0, requires_grad=True)
    e = c * d
    names = {a: "a", b: "b", c: "c", d: "d", e: "e"}
    rec.fact("a.is_leaf", a.is_leaf)
    rec.node("a.grad_fn", a.grad_fn)
    rec.fact("c.is_leaf", c.is_leaf)
    rec.fact("c.requires_grad", c.requires_grad)
    rec.node("e.grad_fn", e.grad_fn)
    rec.next_functions("e.grad_fn.next_functions", e.grad_fn)
    rec.saved("e.grad_fn saved", e.grad_fn, names)
    rec.next_functions("c.grad_fn.next_functions", c.grad_fn)
    rec.saved("c.grad_fn saved", c.grad_fn, names)
    rec.fact("c.grad_fn.next_functions[0][0].variable is a",
             c.grad_fn.next_functions[0][0].variable is a)
    rec.graph("e = (a·b)·d", e, names)
    e.backward()
    rec.value("a.grad (= d·b)", a.grad)
    rec.value("b.grad (= d·a)", b.grad)
    rec.value("d.grad (= c)", d.grad)


def version_counter(torch, rec: Record):
    """Seed 003, in-place operations: the version counter, and which backward they break."""
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    c = a * b
    d = torch.tensor(4.0, requires_grad=True)
    e = c * d
    rec.fact("c._version after c = a·b", c._version)
    c += 1
    rec.fact("c._version after c += 1", c._version)
    rec.error("e.backward() after c += 1 (MulBackward0 saved c)", lambda: e.backward())
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    c = a * b
    d = torch.tensor(4.0, requires_grad=True)
    e_add = c + d
    rec.saved("(c + d).grad_fn saved", e_add.grad_fn, {c: "c", d: "d"})
    c += 1
    rec.error("(c + d).backward() after c += 1", lambda: e_add.backward())
    rec.value("then a.grad, b.grad, d.grad", [a.grad.item(), b.grad.item(), d.grad.item()])
    x = torch.tensor(2.0, requires_grad=True)
    sq = x * x
    sq.backward()
    rec.error("a second backward without retain_graph", lambda: sq.backward())


def unbind(torch, rec: Record):
    """Seed 003: b, c, d = a.unbind(); e = b·c·d — one UnbindBackward0, three outputs."""
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b, c, d = a.unbind()
    e = b * c * d
    rec.fact("b.grad_fn is c.grad_fn is d.grad_fn", b.grad_fn is c.grad_fn is d.grad_fn)
    rec.node("b.grad_fn", b.grad_fn)
    rec.fact("(b.output_nr, c.output_nr, d.output_nr)", (b.output_nr, c.output_nr, d.output_nr))
    rec.next_functions("e.grad_fn.next_functions   ((b·c)·d)", e.grad_fn)
    rec.next_functions("(b·c).grad_fn.next_functions", e.grad_fn.next_functions[0][0])
    rec.graph("b, c, d = a.unbind(); e = b·c·d", e, {a: "a", b: "b", c: "c", d: "d", e: "e"})
    e.backward()
    rec.value("a.grad (each the product of the other two)", a.grad)


def complicated(torch, rec: Record):
    """Seed 003, the complicated example, with ``i.retain_grad()``, ``detach`` and
    ``no_grad``: k = (i + h)·i, i = f·(d·c)/h, all values 2."""
    a, b = torch.tensor(2.0), torch.tensor(2.0)
    c = a * b
    c.requires_grad = True
    d = torch.tensor(2.0)
    e = d * c
    f = torch.tensor(2.0)
    g = f * e
    h = torch.tensor(2.0, requires_grad=True)
    i = g / h
    j = i + h
    k = j * i
    names = dict(zip((a, b, c, d, e, f, g, h, i, j, k), "abcdefghijk"))
    rec.fact("c.is_leaf after c.requires_grad = True", c.is_leaf)
    rec.node("i.grad_fn", i.grad_fn)
    rec.next_functions("k.grad_fn.next_functions", k.grad_fn)
    rec.saved("k.grad_fn saved", k.grad_fn, names)
    rec.graph("k = (i + h)·i with i = f·d·c / h", k, names)
    i.retain_grad()
    k.backward(retain_graph=True)
    rec.value("k", k)
    rec.value("i.grad (kept by i.retain_grad())", i.grad)
    rec.value("j.grad (no retain_grad)", rec.quietly(lambda: j.grad))   # a non-leaf: warns
    rec.fact("reading j.grad warns", rec.warns(lambda: j.grad))
    rec.value("c.grad", c.grad)
    rec.value("h.grad", h.grad)
    m = k.detach()
    rec.fact("m = k.detach(): m.requires_grad", m.requires_grad)
    rec.node("m.grad_fn", m.grad_fn)
    rec.fact("m.is_leaf", m.is_leaf)
    rec.fact("m shares k's memory", rec.lib.shares_memory(m, k))
    with torch.no_grad():
        n = k * 2
    rec.fact("with no_grad(): n = k·2; n.requires_grad", n.requires_grad)
    rec.node("n.grad_fn", n.grad_fn)
    rec.fact("after the block, (k·2).requires_grad", (k * 2).requires_grad)


@dataclasses.dataclass(frozen=True)
class Example:
    key: str
    seed: str                     # "000" .. "003"
    title: str
    fn: Callable

    @property
    def doc(self) -> str:
        return " ".join((self.fn.__doc__ or "").split())

    @property
    def code(self) -> str:
        """The example's code as a reader would type it: ``import torch`` and the function's
        body without the recording calls. It runs as it is on PyTorch, and on the engine
        after ``import diffcompare.engine.torch as torch``."""
        import inspect
        import textwrap

        src = textwrap.dedent(inspect.getsource(self.fn))
        body = src.split('"""', 2)[2] if '"""' in src else src
        kept, depth = [], 0
        for line in textwrap.dedent(body).strip("\n").splitlines():
            skipping = depth > 0 or line.lstrip().startswith(("rec.", "names = "))
            depth = max(0, depth + line.count("(") + line.count("{") - line.count(")") - line.count("}")) \
                if skipping else 0
            if not skipping:
                kept.append(line)
        indent = [len(x) - len(x.lstrip()) for x in kept] + [0]
        kept = [x for n, x in enumerate(kept)        # a block whose body was all recording
                if not (x.rstrip().endswith(":") and indent[n + 1] <= indent[n])]
        return "import torch\n" + "\n".join(kept).strip("\n")


#: The seed questions, in the threads' order.
QUESTIONS = {
    "000": "How does autograd average across a minibatch? Can I see the graph, or its size?",
    "001": "Where do a linear layer's gradients come from, and why is the bias gradient a sum?",
    "002": "What is the gradient argument of backward()?",
    "003": "What does the graph hold: grad_fn, next_functions, saved tensors, versions, "
           "retain_grad, detach, no_grad?",
}

EXAMPLES = (
    Example("000-mean-of-product", "000", "y = x·w, L = mean(y)", mean_of_product),
    Example("001-linear-layer", "001", "lin → relu → lin → MSE, against the hand-written backward",
            linear_layer),
    Example("002-gradient-argument", "002", "y.backward(v) for a vector y", gradient_argument),
    Example("003-simple", "003", "grad_fn, next_functions, saved tensors", simple_graph),
    Example("003-version-counter", "003", "in-place changes and the version counter",
            version_counter),
    Example("003-unbind", "003", "unbind: one node, three outputs", unbind),
    Example("003-complicated", "003", "the complicated example: retain_grad, detach, no_grad",
            complicated),
)


#: Where the engine and PyTorch differ on purpose (label -> why); shown with the flag.
KNOWN_DIFFERENCES = {
    ("001-linear-layer", "out.grad_fn.next_functions"):
        "the engine names every matrix product MatmulBackward0; PyTorch dispatches a 2-D @ 2-D "
        "product to mm and names its node MmBackward0 (same gradient)",
    ("002-gradient-argument", "y.backward() with no gradient argument"):
        "same error; the engine's message also says what to pass",
}


def get(key: str) -> Example:
    for ex in EXAMPLES:
        if ex.key == key:
            return ex
    raise KeyError(f"no seed example {key!r}; known: {', '.join(e.key for e in EXAMPLES)}")


def run(example: Example, lib: Lib) -> Record:
    """Run ``example`` on ``lib`` and return what it recorded."""
    rec = Record(lib)
    example.fn(lib.torch, rec)
    return rec


# --------------------------------------------------------------------------- side by side


@dataclasses.dataclass(frozen=True)
class Row:
    """One line of an example on each library. ``same`` is None without torch; for an
    error it compares whether each raised, and the exception type, not the wording."""

    label: str
    kind: str
    engine: str
    torch: str | None
    same: bool | None
    note: str = ""                 # why they differ, for a known difference


def _same(kind: str, a: str, b: str | None) -> bool | None:
    """Errors: whether each raised, and the exception type, not the wording.  Values: the
    same text, numbers equal to float32 rounding (the two libraries may sum in a
    different order).  Structure: the same text."""
    if b is None:
        return None
    if kind == "error":
        return a.split(":", 1)[0] == b.split(":", 1)[0]
    if kind == "value" and a != b:
        import math
        import re

        num = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?"
        na, nb = re.findall(num, a), re.findall(num, b)
        return (re.sub(num, "#", a) == re.sub(num, "#", b) and len(na) == len(nb)
                and all(math.isclose(float(x), float(y), rel_tol=1e-5, abs_tol=1e-7)
                        for x, y in zip(na, nb)))
    return a == b


def side_by_side(example: Example, records: dict | None = None) -> list[Row]:
    """``example`` on the engine and on torch (when installed), line by line."""
    records = records or {lib.name: run(example, lib) for lib in libs()}
    eng, tor = records["engine"], records.get("torch")
    theirs = {line.label: line.text for line in tor.lines} if tor else {}
    rows = []
    for line in eng.lines:
        other = theirs.get(line.label) if tor else None
        rows.append(Row(line.label, line.kind, line.text, other, _same(line.kind, line.text, other),
                        KNOWN_DIFFERENCES.get((example.key, line.label), "")))
    return rows
