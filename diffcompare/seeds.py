"""The seed threads' examples, written once, run on the engine and on PyTorch side by side.

Each :class:`Example` is one forum thread's code as a function of a
:class:`~diffcompare.viz.libs.Lib` (the engine, or torch where it is installed) and a :class:`Record` that writes down what a
reader of the thread looks at: values and gradients, ``grad_fn`` and ``next_functions``,
saved tensors, version counters, error messages, and the graphs to draw.  The same
function runs on both libraries, so :func:`side_by_side` can put the two outputs next
to each other and flag every line where they differ.  The report's seed section,
``diffcompare demo`` and ``tests/engine/test_seeds.py`` all use these examples.

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

__all__ = ["Record", "Line", "Example", "Row", "EXAMPLES", "QUESTIONS", "get", "run", "side_by_side",
           "fmt"]


# --------------------------------------------------------------------------- recording


def fmt(value, digits: int = 6) -> str:
    """A value as the seed threads print it, ``digits`` significant digits, library-free:
    ``None``, ``True``, ``3``, ``[0.5, 0.5]``, ``[[1, 2], [3, 4]]``.

    >>> fmt(np.array([0.5, 1 / 3])), fmt(2.0), fmt(None), fmt(np.array(3.0))
    ('[0.5, 0.333333]', '2', 'None', '3')
    """
    if value is None or isinstance(value, (bool, str)):
        return str(value)
    a = np.asarray(value, dtype=np.float64)
    if a.ndim == 0:
        return f"{a.item():.{digits}g}"
    return np.array2string(a, separator=", ", max_line_width=90, threshold=40,
                           formatter={"float_kind": lambda v: f"{v:.{digits}g}"})


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
        from .viz.graph import _label, _names

        view = self.lib.view
        pairs = _names(names)
        parts = []
        for name, arr, source, _ in view.saved(node):
            var = _label(view, source, pairs) if source is not None else None
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

    def graph(self, caption: str, root, names: dict):
        """Draw ``root``'s graph now, before a backward frees what it saved."""
        from .viz.graph import counts_text, to_dot, to_svg

        self.graphs.append(Graph(caption, root, dict(names), to_svg(root, names=names),
                                 to_dot(root, names=names), counts_text(root, self.lib.view)))

    def text(self, label: str) -> str:
        """The recorded text of ``label``, or of the label that is ``label`` and a note in
        parentheses (KeyError if the example did not record it)."""
        for line in self.lines:
            if line.label == label or line.label.startswith(label + " ("):
                return line.text
        raise KeyError(f"{label!r} was not recorded; recorded: {[x.label for x in self.lines]}")


# --------------------------------------------------------------------------- the examples


def mean_of_reciprocal(lib: Lib, rec: Record):
    """Seed 000, the thread's first example: the mean of 1/T over a batch T = 1..10."""
    T = lib.tensor(np.arange(10.0) + 1, requires_grad=True)
    scalar_result = (1 / T).mean()
    scalar_result.backward()
    rec.value("scalar_result", scalar_result)
    rec.value("T.grad", T.grad, 4)
    formula = -1.0 / (10 * (np.arange(10.0) + 1) ** 2)
    rec.value("T.grad equals −1/(10·T²) (to 1e-15)",
              bool(np.allclose(lib.array(T.grad), formula, rtol=1e-15, atol=0)))


def mean_of_product(lib: Lib, rec: Record):
    """Seed 000: y = x * w over a batch of two, L = y.mean(); what the graph keeps."""
    w = lib.tensor([2.0], requires_grad=True)       # requires_grad = True leaf
    x = lib.tensor([1.0, 2.0])                      # requires_grad = False leaf
    y = x * w
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
    from .viz.graph import walk

    for batch in (2, 100_000):                      # one tensor arm whatever the batch size
        wb = lib.tensor([2.0], requires_grad=True)
        xb = lib.tensor(np.linspace(1.0, 2.0, batch))
        rec.fact(f"nodes in the graph, batch of {batch:,}", len(walk((xb * wb).mean(), lib.view)))
    rec.graph("L = mean(x·w)", L, names)


def linear_layer(lib: Lib, rec: Record):
    """Seed 001: the lesson's model lin → relu → lin → MSE on a batch of 4, its gradients
    against the hand-written backward (``inp.g = out.g @ w.t()``, ``b.g = out.g.sum(0)``)."""
    rng = np.random.default_rng(1)
    inp = lib.tensor(rng.standard_normal((4, 3)).round(2), requires_grad=True)
    w1 = lib.tensor(rng.standard_normal((3, 2)).round(2), requires_grad=True)
    b1 = lib.tensor([0.5, -0.5], requires_grad=True)
    w2 = lib.tensor(rng.standard_normal((2, 1)).round(2), requires_grad=True)
    b2 = lib.tensor([0.1], requires_grad=True)
    target = lib.tensor(rng.standard_normal((4, 1)).round(2))
    l1 = inp @ w1 + b1
    a1 = l1.relu()
    out = a1 @ w2 + b2
    out.retain_grad()
    loss = lib.mse_loss(out, target)
    loss.backward(retain_graph=True)
    A = lib.array                                      # a tensor's values as NumPy
    out_g = 2 * (A(out) - A(target)) / A(out).size               # mse_grad
    a1_g = out_g @ A(w2).T                                         # inp.g = out.g @ w.t()
    l1_g = a1_g * (A(l1) > 0)                                      # relu_grad
    hand = {"inp": l1_g @ A(w1).T, "w1": A(inp).T @ l1_g, "b1": l1_g.sum(0),
            "w2": A(a1).T @ out_g, "b2": out_g.sum(0)}
    rec.value("loss", loss)
    rec.value("out.grad (= out.g of mse_grad)", out.grad, 5)
    for name, t in (("inp", inp), ("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)):
        rec.value(f"{name}.grad", t.grad, 5)
        rec.value(f"{name}.grad equals the hand formula (to 1e-12)",
                  bool(np.allclose(A(t.grad), hand[name], rtol=1e-12, atol=1e-15)))
    rec.node("out.grad_fn", out.grad_fn)
    rec.next_functions("out.grad_fn.next_functions", out.grad_fn)
    b2_mean = A(b2.grad).copy()
    b2.grad = None
    lib.mse_loss(a1 @ w2 + b2, target, reduction="sum").backward(retain_graph=True)
    rec.value("b2.grad with reduction='sum' ÷ with 'mean'", A(b2.grad) / b2_mean, 4)
    rec.graph("loss = mse(relu(inp @ w1 + b1) @ w2 + b2, target)", loss,
              {inp: "inp", w1: "w1", b1: "b1", w2: "w2", b2: "b2", target: "target",
               l1: "l1", a1: "a1", out: "out", loss: "loss"})


def gradient_argument(lib: Lib, rec: Record):
    """Seed 002: y = 3a + 2b² + log(c) is a vector; y.backward(v) gives vᵀJ."""
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0, 5.0], requires_grad=True)
    c = lib.tensor([6.0, 7.0, 8.0], requires_grad=True)
    y = 3 * a + 2 * b * b + c.log()
    y.backward(lib.tensor([0.1, 1.0, 0.0001]), retain_graph=True)
    rec.value("a.grad", a.grad)
    rec.value("b.grad", b.grad)
    rec.value("c.grad", c.grad)
    rec.error("y.backward() with no gradient argument", lambda: y.backward())
    a2, b2, c2 = (lib.tensor(v, requires_grad=True) for v in (0.1, 1.0, 0.1))
    (3 * a2 + 2 * b2 * b2 + c2.log()).backward()
    rec.value("example 2: a.grad, b.grad, c.grad", [a2.grad.item(), b2.grad.item(), c2.grad.item()])
    a4, b4, c4 = (lib.tensor(1.0, requires_grad=True) for _ in range(3))
    y4 = 3 * a4 + 2 * b4 * b4 + c4.log()
    y4.backward(retain_graph=True)
    y4.backward()
    rec.value("example 4, after two backward calls: a.grad, b.grad, c.grad",
              [a4.grad.item(), b4.grad.item(), c4.grad.item()])
    x = lib.tensor([[1.0, 2.0, 3.0, 4.0]], requires_grad=True)
    z = 2 * x
    for v in ([[1.0, 0, 0, 0]], [[0, 1.0, 0, 0]], [[1.0, 1.0, 1.0, 1.0]]):
        x.grad = None
        z.backward(lib.tensor(v), retain_graph=True)
        rec.value(f"z.backward({fmt(np.array(v))}) → x.grad", x.grad)
    x.grad = None
    z.sum().backward()
    rec.value("z.sum().backward() → x.grad", x.grad)
    rec.graph("y = 3a + 2b² + log(c)", y, {a: "a", b: "b", c: "c", y: "y"})


def simple_graph(lib: Lib, rec: Record):
    """Seed 003, the simple example: c = a·b, e = c·d; grad_fn, next_functions,
    AccumulateGrad, what MulBackward0 saves."""
    a = lib.tensor(2.0, requires_grad=True)
    b = lib.tensor(3.0, requires_grad=True)
    c = a * b
    d = lib.tensor(4.0, requires_grad=True)
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


def version_counter(lib: Lib, rec: Record):
    """Seed 003, in-place operations: the version counter, and which backward they break."""
    a = lib.tensor(2.0, requires_grad=True)
    b = lib.tensor(3.0, requires_grad=True)
    c = a * b
    d = lib.tensor(4.0, requires_grad=True)
    e = c * d
    rec.fact("c._version after c = a·b", c._version)
    c += 1
    rec.fact("c._version after c += 1", c._version)
    rec.error("e.backward() after c += 1 (MulBackward0 saved c)", lambda: e.backward())
    a = lib.tensor(2.0, requires_grad=True)
    b = lib.tensor(3.0, requires_grad=True)
    c = a * b
    d = lib.tensor(4.0, requires_grad=True)
    e_add = c + d
    rec.saved("(c + d).grad_fn saved", e_add.grad_fn, {c: "c", d: "d"})
    c += 1
    rec.error("(c + d).backward() after c += 1", lambda: e_add.backward())
    rec.value("then a.grad, b.grad, d.grad", [a.grad.item(), b.grad.item(), d.grad.item()])
    x = lib.tensor(2.0, requires_grad=True)
    sq = x * x
    sq.backward()
    rec.error("a second backward without retain_graph", lambda: sq.backward())


def unbind(lib: Lib, rec: Record):
    """Seed 003: b, c, d = a.unbind(); e = b·c·d — one UnbindBackward0, three outputs."""
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
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


def complicated(lib: Lib, rec: Record):
    """Seed 003, the complicated example, with ``i.retain_grad()``, ``detach`` and
    ``no_grad``: k = (i + h)·i, i = f·(d·c)/h, all values 2."""
    a, b = lib.tensor(2.0), lib.tensor(2.0)
    c = a * b
    c.requires_grad = True
    d = lib.tensor(2.0)
    e = d * c
    f = lib.tensor(2.0)
    g = f * e
    h = lib.tensor(2.0, requires_grad=True)
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
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        j_grad = j.grad                             # a non-leaf without retain_grad: warns
    rec.value("j.grad (no retain_grad)", j_grad)
    rec.fact("reading j.grad warns", any(issubclass(w.category, UserWarning) for w in caught))
    rec.value("c.grad", c.grad)
    rec.value("h.grad", h.grad)
    m = k.detach()
    rec.fact("m = k.detach(): m.requires_grad", m.requires_grad)
    rec.node("m.grad_fn", m.grad_fn)
    rec.fact("m.is_leaf", m.is_leaf)
    rec.fact("m shares k's memory", lib.shares_memory(m, k))
    with lib.no_grad():
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
        """The example's code as a reader would type it: its source without the
        recording calls, ``tensor`` being ``torch.tensor`` or ``diffcompare.engine.tensor``."""
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
                kept.append(line.replace("lib.", ""))
        indent = [len(x) - len(x.lstrip()) for x in kept] + [0]
        kept = [x for n, x in enumerate(kept)        # a block whose body was all recording
                if not (x.rstrip().endswith(":") and indent[n + 1] <= indent[n])]
        return "\n".join(kept).strip("\n")


#: The seed questions, in the threads' order.
QUESTIONS = {
    "000": "How does autograd average across a minibatch? Can I see the graph, or its size?",
    "001": "Where do a linear layer's gradients come from, and why is the bias gradient a sum?",
    "002": "What is the gradient argument of backward()?",
    "003": "What does the graph hold: grad_fn, next_functions, saved tensors, versions, "
           "retain_grad, detach, no_grad?",
}

EXAMPLES = (
    Example("000-mean-of-reciprocal", "000", "mean of 1/T over a batch", mean_of_reciprocal),
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
    example.fn(lib, rec)
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
    if b is None:
        return None
    if kind == "error":
        return a.split(":", 1)[0] == b.split(":", 1)[0]
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
