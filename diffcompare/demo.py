"""The engine demo: the seed threads' examples, their graphs and gradients.

Prints, for each example, the graph the engine recorded (nodes, saved tensors
and their bytes) and the gradients it computed, and writes each graph as DOT
and SVG next to an index page.  ``diffcompare demo`` runs it.
"""
from __future__ import annotations

import html
import pathlib

import numpy as np

from .engine import Tensor, graph, mse_loss


def _minibatch_mean():
    """Seed 000: y = x * w, L = mean(y): the batch is summed, then scaled by 1/batch."""
    w = Tensor([2.0], requires_grad=True)
    x = Tensor([1.0, 2.0])
    y = x * w
    L = y.mean()
    L.backward(retain_graph=True)
    text = f"L = {L.item():g};  dL/dw = mean(x) = {w.grad.data}  (x.grad is {x.grad})"
    return L, {w: "w", x: "x"}, text


def _linear_layer():
    """Seed 001: linear -> relu -> linear -> MSE on a batch of 4; engine vs hand formulas."""
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((4, 3)))
    y = Tensor(rng.standard_normal((4, 1)))
    w1 = Tensor(rng.standard_normal((3, 5)), requires_grad=True)
    b1 = Tensor(np.zeros(5), requires_grad=True)
    w2 = Tensor(rng.standard_normal((5, 1)), requires_grad=True)
    b2 = Tensor(np.zeros(1), requires_grad=True)
    l1 = x @ w1 + b1
    a1 = l1.relu()
    out = a1 @ w2 + b2
    loss = mse_loss(out, y)
    loss.backward(retain_graph=True)

    # The hand-written backward of seed 001 (inp.g = out.g @ w.t(), b.g = out.g.sum(0)).
    out_g = 2 * (out.data - y.data) / out.data.size
    b2_g = out_g.sum(0)
    w2_g = a1.data.T @ out_g
    l1_g = (out_g @ w2.data.T) * (l1.data > 0)
    b1_g = l1_g.sum(0)
    w1_g = x.data.T @ l1_g
    worst = max(np.abs(a - b).max() for a, b in
                [(w1.grad.data, w1_g), (b1.grad.data, b1_g), (w2.grad.data, w2_g), (b2.grad.data, b2_g)])
    text = (f"loss = {loss.item():.6f}\n"
            f"b1.grad (engine)        = {np.array2string(b1.grad.data, precision=4)}\n"
            f"b1.g = l1.g.sum(0)      = {np.array2string(b1_g, precision=4)}\n"
            f"largest |engine - hand formula| over w1, b1, w2, b2: {worst:.1e}")
    return loss, {x: "x", y: "target", w1: "w1", b1: "b1", w2: "w2", b2: "b2"}, text


def _gradient_argument():
    """Seed 002: y = 3a + 2b² + log(c) is a vector; backward(v) weights each element."""
    a = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = Tensor([3.0, 4.0, 5.0], requires_grad=True)
    c = Tensor([6.0, 7.0, 8.0], requires_grad=True)
    y = 3 * a + 2 * b * b + c.log()
    y.backward([0.1, 1.0, 0.0001], retain_graph=True)
    text = (f"y.backward([0.1, 1.0, 0.0001]):  a.grad = {a.grad.data},  "
            f"b.grad = {b.grad.data},  c.grad = {np.array2string(c.grad.data, precision=6)}")
    return y, {a: "a", b: "b", c: "c"}, text


def _unbind():
    """Seed 003: b, c, d = a.unbind(); e = b * c * d: one UnbindBackward0, outputs 0, 1, 2."""
    a = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    b, c, d = a.unbind()
    e = b * c * d
    e.backward(retain_graph=True)
    text = (f"e = {e.item():g};  a.grad = {a.grad.data}  (each is the product of the other two); "
            f"output_nr of b, c, d: {b.output_nr}, {c.output_nr}, {d.output_nr}")
    return e, {a: "a"}, text


EXAMPLES = {
    "minibatch_mean": _minibatch_mean,
    "linear_layer": _linear_layer,
    "gradient_argument": _gradient_argument,
    "unbind": _unbind,
}


def run(out_dir: str | pathlib.Path = "reports/engine-demo", echo=print) -> pathlib.Path:
    """Run every example, print graph summaries and gradients, write DOT/SVG and an index page."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sections = []
    for name, example in EXAMPLES.items():
        root, names, text = example()
        echo(f"== {name}: {example.__doc__.strip()}")
        echo(graph.summary_text(root, names=names))
        echo(text)
        echo("")
        (out_dir / f"{name}.dot").write_text(graph.to_dot(root, names=names))
        svg = graph.to_svg(root, names=names)
        (out_dir / f"{name}.svg").write_text(svg)
        sections.append(f"<h2>{html.escape(name)}</h2><p>{html.escape(example.__doc__.strip())}</p>"
                        f"<pre>{html.escape(text)}</pre>{svg}")
    index = out_dir / "index.html"
    index.write_text("<!doctype html><meta charset='utf-8'><title>diffcompare engine demo</title>"
                     "<body style='font-family: sans-serif'><h1>diffcompare engine demo</h1>"
                     + "".join(sections) + "</body>")
    echo(f"Graph drawings written to {out_dir}/ (open {index})")
    return index
