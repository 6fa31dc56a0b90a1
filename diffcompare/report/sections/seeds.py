"""The seed questions, answered by running the engine now, while the report is built.

Each subsection re-runs the forum thread's own example on :mod:`diffcompare.engine`
and prints what the engine computed and recorded: gradients next to the hand formulas,
the graph (drawn with :func:`diffcompare.engine.graph.to_svg`, counted with
:func:`~diffcompare.engine.graph.summarize`), saved tensors and their bytes, version
counters and the error messages they produce.  Every number here is computed live;
the engine is deterministic, so the same code gives the same page.
"""
from __future__ import annotations


import numpy as np

from ..fmt import fmt_bytes, fmt_error
from ..html import Markup, code, join, p, pre, scroll, table, tag
from . import Section

SEEDS = {
    "000": "How does autograd average across a minibatch?",
    "001": "Why is the bias gradient a sum over the batch?",
    "002": "What is the gradient argument of backward()?",
    "003": "What does the graph hold?",
    "sym": "Is autograd symbolic or numerical?",
}


# --------------------------------------------------------------------------- helpers

def arr(a, digits: int = 6, fixed: bool = False) -> str:
    """An array as text with ``digits`` significant digits (``fixed``: decimals, as torch prints)."""
    a = np.asarray(getattr(a, "data", a))
    fmt = (lambda v: f"{v:.{digits}f}") if fixed else (lambda v: f"{v:.{digits}g}")
    return np.array2string(a, separator=", ", formatter={"float_kind": fmt}, max_line_width=100)


def num(x, digits: int = 17) -> str:
    """A float with every digit that matters (``repr``), for side-by-side comparisons."""
    return repr(float(x))


def next_functions(node) -> str:
    """``node.next_functions`` written like PyTorch's repr, without the object addresses."""
    if node is None:
        return "None"
    parts = [f"({'None' if n is None else n.name()}, {nr})" for n, nr in node.next_functions]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def saved_text(node) -> str:
    items = getattr(node, "saved", None) or {}
    if not items:
        return "nothing saved"
    return "; ".join(f"{name}: shape {tuple(st.shape)} {np.dtype(st.dtype)}, {st.nbytes} B, "
                     f"version {st.version}" for name, st in items.items())


def graph_block(root, names, caption) -> Markup:
    """The drawing of ``root``'s graph, its counts, and the terminal summary."""
    from ...engine import graph

    s = graph.summarize(root)
    kinds = ", ".join(f"{k} ×{v}" for k, v in s.by_name.items())
    facts = (f"{s.node_count} nodes ({kinds}), {s.edges} edges, {s.leaves} leaf accumulator(s); "
             f"{len(s.saved)} saved tensor(s) holding {s.total_saved_bytes} bytes")
    svg = graph.to_svg(root, names=names)
    return tag("figure", Markup(f'<div class="graph">{svg}</div>'),
               tag("figcaption", caption, " — ", facts, "."),
               tag("details", tag("summary", "graph.summary_text()"), pre(graph.summary_text(root, names=names))),
               class_="graph-figure")


def _caught(fn) -> str:
    try:
        fn()
    except Exception as exc:            # the message is the point
        return f"{type(exc).__name__}: {exc}"
    return "(no error was raised)"


# --------------------------------------------------------------------------- seed 000

def seed_000() -> Markup:
    from ...engine import Tensor, graph

    # the thread's first example: mean of 1/x over a batch x = 1..10
    T = Tensor(np.arange(10.0) + 1, requires_grad=True)
    result = (1 / T).mean()
    result.backward()
    formula = -1.0 / (10 * (np.arange(10.0) + 1) ** 2)
    per_sample = []
    for i in range(10):                      # gradient of each sample's own loss 1/x_i
        Ti = Tensor(np.arange(10.0) + 1, requires_grad=True)
        (1 / Ti)[i].backward()
        per_sample.append(Ti.grad.data.copy())
    averaged = np.mean(per_sample, axis=0)
    part1 = join(
        p("The thread's first example: T = [1, 2, …, 10] (requires_grad), ",
          code("(1 / T).mean().backward()"), ". The engine gives ", code("T.grad"), " ="),
        pre(arr(T.grad, 4, fixed=True)),
        p("which is −1/(10·x²) for each sample (largest difference from that formula: ",
          fmt_error(np.abs(T.grad.data - formula).max()), "). Ten gradients, one per sample — the mean "
          "did not average them away, because T itself is what was differentiated. The mean's 1/10 "
          "reaches each one: computing each sample's loss 1/xᵢ alone and averaging the ten gradients "
          "gives the same vector (largest difference: ", fmt_error(np.abs(T.grad.data - averaged).max()),
          ")."))

    # y = x * w, L = mean(y): the gradient of the average is the average of the gradients
    w = Tensor([2.0], requires_grad=True)
    x = Tensor([1.0, 2.0])
    y = x * w
    L = y.mean()
    y.retain_grad()
    L.retain_grad()
    L.backward(retain_graph=True)
    per = []
    for xi in (1.0, 2.0):
        wi = Tensor([2.0], requires_grad=True)
        (Tensor([xi]) * wi).sum().backward()
        per.append(float(wi.grad.data[0]))
    rows = [[f"sample {i}", xi, f"{g:g}"] for i, (xi, g) in enumerate(zip((1.0, 2.0), per))]
    rows.append(["average of the per-sample gradients", "", f"{np.mean(per):g}"])
    rows.append([join("engine, ", code("L = (x*w).mean(); L.backward(); w.grad")), "",
                 f"{w.grad.data[0]:g}"])
    part2 = join(
        p("The thread's model: w = [2] (requires_grad), x = [1, 2] (a batch of two), y = x·w, "
          "L = mean(y). The engine computes L = ", f"{L.item():g}", ", ", code("L.grad"), " = ",
          arr(L.grad), " (the unit seed of the chain rule), ", code("y.grad"), " = ", arr(y.grad),
          " (dL/dyᵢ = 1/2 each), ", code("x.grad"), " = ", str(x.grad), " (x does not require grad) and ",
          code("w.grad"), " = ", arr(w.grad), " = Σᵢ dL/dyᵢ · xᵢ."),
        scroll(table(["", "xᵢ", "dLᵢ/dw"], rows, cls="compact")),
        p("So “the average of the gradients is the gradient of the average”: nothing averages "
          "gradients; the mean in the loss puts ½ on each sample's path, and backward sums the paths "
          "where they meet at w."))

    # the graph and its size, whatever the batch
    drawing = graph_block(L, {w: "w", x: "x", L: "L"}, "The graph behind L = mean(x·w)")
    mul = y.grad_fn
    sizes = []
    for batch in (2, 1_000, 100_000):
        wb = Tensor([2.0], requires_grad=True)
        xb = Tensor(np.linspace(1.0, 2.0, batch))
        s = graph.summarize((xb * wb).mean())
        sizes.append([f"{batch:,}", s.node_count, s.edges, len(s.saved),
                      f"{s.total_saved_bytes:,} B ({fmt_bytes(s.total_saved_bytes)})"])
    part3 = join(
        p("“Can I see the graph, or at least its size?” Yes: ", code("graph.to_svg(L)"), " draws it and ",
          code("graph.summarize(L)"), " counts it. ", code("L.grad_fn"), " is ", code(L.grad_fn.name()),
          " with next_functions ", code(next_functions(L.grad_fn)), "; ", code("y.grad_fn"), " is ",
          code(mul.name()), " with next_functions ", code(next_functions(mul)),
          " — (None, 0) for x, which needs no gradient, and the AccumulateGrad of w. It saved ",
          code(saved_text(mul)), ": x itself, enough to compute dyᵢ/dw = xᵢ later; the products "
          "dyᵢ/dw are not computed or stored in the forward pass."),
        drawing,
        p("The graph is one “tensor arm”, not one arm per sample: the node count stays the same "
          "whatever the batch size, and only the saved tensor grows (8 bytes per float64 sample):"),
        scroll(table(["batch size", "nodes", "edges", "saved tensors", "saved bytes"], sizes,
                     num_cols={0, 1, 2, 3, 4}, cls="compact")))
    return join(part1, part2, part3)


# --------------------------------------------------------------------------- seed 001

def seed_001() -> Markup:
    from ...engine import Tensor, mse_loss

    rng = np.random.default_rng(1)
    batch, n_in, n_out = 4, 3, 2
    inp = Tensor(rng.standard_normal((batch, n_in)).round(2), requires_grad=True)
    w = Tensor(rng.standard_normal((n_in, n_out)).round(2), requires_grad=True)
    b = Tensor(np.array([0.5, -0.5]), requires_grad=True)
    target = Tensor(rng.standard_normal((batch, n_out)).round(2))
    out = inp @ w + b
    out.retain_grad()
    loss = mse_loss(out, target)
    loss.backward(retain_graph=True)

    out_g = 2 * (out.data - target.data) / out.data.size          # mse_grad
    inp_g = out_g @ w.data.T                                      # inp.g = out.g @ w.t()
    w_g = (inp.data[:, :, None] * out_g[:, None, :]).sum(0)       # w.g = (inp.unsqueeze(-1) * out.g.unsqueeze(1)).sum(0)
    b_g = out_g.sum(0)                                            # b.g = out.g.sum(0)
    rows = [[code("inp.g = out.g @ w.t()"), arr(inp.grad, 5), arr(inp_g, 5),
             fmt_error(np.abs(inp.grad.data - inp_g).max())],
            [code("w.g = (inp.unsqueeze(-1) * out.g.unsqueeze(1)).sum(0)"), arr(w.grad, 5), arr(w_g, 5),
             fmt_error(np.abs(w.grad.data - w_g).max())],
            [code("b.g = out.g.sum(0)"), arr(b.grad, 5), arr(b_g, 5),
             fmt_error(np.abs(b.grad.data - b_g).max())]]
    per_sample = [[f"sample {i}", arr(out_g[i], 5)] for i in range(batch)]
    per_sample.append(["sum over the batch", arr(out_g.sum(0), 5)])
    per_sample.append([join("engine ", code("b.grad")), arr(b.grad, 5)])
    add_node = out.grad_fn
    drawing = graph_block(loss, {inp: "inp", w: "w", b: "b", target: "target", loss: "loss"},
                          "The graph of loss = mse(inp @ w + b, target)")
    summed = loss.item()
    loss_sum = mse_loss(inp @ w + b, target, reduction="sum")
    b2 = b.grad.data.copy()
    b.grad = None
    loss_sum.backward()
    compiled = _compiled_seed_001(inp.data, w.data, b.data, target.data)
    return join(
        p("A linear layer out = inp @ w + b on a batch of ", str(batch), " samples (", str(n_in),
          " inputs, ", str(n_out), " outputs) with an MSE loss (mean over all ", str(batch * n_out),
          " outputs): loss = ", f"{summed:.6f}", ". Its gradient arriving at the output is ",
          code("out.g = 2·(out − target)/N"), " (mse_grad in the thread); the engine's ",
          code("out.grad"), " (kept with retain_grad) is the same matrix (largest difference: ",
          fmt_error(np.abs(out.grad.data - out_g).max()), "). Then the thread's three formulas "
          "against the engine's backward:"),
        scroll(table(["hand-written (seed 001)", "engine (backward)", "formula (NumPy)", "largest |difference|"],
                     rows, cls="compact formula")),
        p("Why a sum for b: every sample adds the same b, so b has one path into the loss per sample. "
          "The chain rule adds the paths, so dL/db is the sum of the rows of out.g — each row is one "
          "sample's dL/dout, already scaled by the loss's 1/N:"),
        scroll(table(["", "dL/dout row = that sample's contribution to dL/db"], per_sample, cls="compact")),
        p("In the engine this sum is not written anywhere for the bias: ", code("out.grad_fn"), " is ",
          code(add_node.name()), " with next_functions ", code(next_functions(add_node)),
          "; b has shape ", str(tuple(b.shape)), " but was broadcast to ", str(tuple(out.shape)),
          ", and every broadcasting op sums its gradient back to its input's shape in one place. "
          "The same reasoning gives w.g: each sample's inp row times its out.g row, summed over the batch."),
        drawing,
        p("With ", code("reduction='sum'"), " instead of the mean, nothing divides by N, so b.grad is N = ",
          str(batch * n_out), " times larger: ", arr(b.grad, 5), " against ", arr(b2, 5), " (ratio ",
          arr(b.grad.data / b2, 4), "). “It's not the gradients that are aggregated, but the loss.”"),
        compiled)


def _compiled_seed_001(*arrays) -> Markup:
    """The same model through engine.compile: the thread's lines, derived rather than written."""
    from ...engine import compile, mse_loss

    def linear_mse(inp, w, b, target):
        return mse_loss(inp @ w + b, target)

    g = compile(linear_mse, wrt=(0, 1, 2)).trace(*arrays)
    return join(p("The same gradient derived as a program (", code("diffcompare.engine.compile"),
                  " traces the engine's own backward formulas once): a transpose-matmul for w, ",
                  code("sum(axis=0)"), " for b, as in the thread:"),
                pre(g.ssa_source), pre(g.math()))


# --------------------------------------------------------------------------- seed 002

def seed_002() -> Markup:
    from ...engine import Tensor
    from ...engine.functional import jacobian

    a = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = Tensor([3.0, 4.0, 5.0], requires_grad=True)
    c = Tensor([6.0, 7.0, 8.0], requires_grad=True)
    y = 3 * a + 2 * b * b + c.log()
    v = np.array([0.1, 1.0, 0.0001])
    y.backward(v.tolist(), retain_graph=True)
    rows = [[code("a.grad"), arr(a.grad, 6), "3·v", arr(3 * v, 6), fmt_error(np.abs(a.grad.data - 3 * v).max())],
            [code("b.grad"), arr(b.grad, 6), "4b·v", arr(4 * b.data * v, 6),
             fmt_error(np.abs(b.grad.data - 4 * b.data * v).max())],
            [code("c.grad"), arr(c.grad, 8), "v/c", arr(v / c.data, 8),
             fmt_error(np.abs(c.grad.data - v / c.data).max())]]
    error_text = _caught(lambda: y.backward())

    a2, b2, c2 = (Tensor(0.1, requires_grad=True), Tensor(1.0, requires_grad=True),
                  Tensor(0.1, requires_grad=True))
    (3 * a2 + 2 * b2 * b2 + c2.log()).backward()
    a4, b4, c4 = (Tensor(1.0, requires_grad=True) for _ in range(3))
    y4 = 3 * a4 + 2 * b4 * b4 + c4.log()
    y4.backward(retain_graph=True)
    first = (a4.grad.item(), b4.grad.item(), c4.grad.item())
    y4.backward()

    # one-hot cotangents pick rows of the Jacobian
    x = Tensor([[1.0, 2.0, 3.0, 4.0]], requires_grad=True)
    z = 2 * x
    onehot = []
    for v1 in ([[1.0, 0, 0, 0]], [[0, 1.0, 0, 0]], [[1.0, 1.0, 1.0, 1.0]]):
        x.grad = None
        z.backward(v1, retain_graph=True)
        text = "[[" + ", ".join(f"{v:g}" for v in np.ravel(v1)) + "]]"
        onehot.append([code(f"z.backward({text})"), arr(x.grad, 3)])
    x.grad = None
    z.sum().backward()
    onehot.append([code("z.sum().backward()  (gradient 1.0)"), arr(x.grad, 3)])
    J = jacobian(lambda t: 3 * t[0] + 2 * t[1] * t[1] + t[2].log(),
                 (np.array([[1.0, 2.0, 3.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]]),))[0]
    vJ = np.einsum("i,ijk->jk", v, np.asarray(J))
    return join(
        p("The thread's example 1: a = [1, 2, 3], b = [3, 4, 5], c = [6, 7, 8] (all requires_grad), "
          "y = 3a + 2b² + log(c), a vector of 3. ", code("y.backward([0.1, 1.0, 0.0001])"), " gives:"),
        scroll(table(["engine", "value", "vᵀJ by hand", "value", "largest |difference|"], rows,
                     cls="compact formula")),
        p("y is a vector, so there is no single “dy/da”: backward computes the vector-Jacobian product "
          "vᵀJ, the gradient of the scalar Σᵢ vᵢ·yᵢ. v plays the role of dz/dy for some later scalar z "
          "(usually a loss), so the result is dz/da by the chain rule. Built from the full Jacobian "
          "(", code("functional.jacobian"), ", one reverse pass per output), vᵀJ for a, b, c is ",
          arr(vJ, 8), " — the same numbers. Without the argument, ", code("y.backward()"), " refuses:"),
        pre(error_text, class_="message"),
        p("Example 2 (scalars a = 0.1, b = 1, c = 0.1, no gradient argument, which means 1.0): "
          "a.grad = ", f"{a2.grad.item():g}", ", b.grad = ", f"{b2.grad.item():g}", ", c.grad = ",
          f"{c2.grad.item():g}", " — 3, 4b and 1/c. Example 4 (a = b = c = 1, backward twice with "
          "retain_graph): after the first call ", ", ".join(f"{g:g}" for g in first), "; after the second "
          "a.grad = ", f"{a4.grad.item():g}", ", b.grad = ", f"{b4.grad.item():g}", ", c.grad = ",
          f"{c4.grad.item():g}", ": gradients accumulate into .grad until you zero them."),
        p("The one-hot examples: x = [[1, 2, 3, 4]], z = 2x. A one-hot gradient argument picks one "
          "output, giving that output's derivative with respect to every input (one row of the "
          "Jacobian); all ones is the same as backward of z.sum():"),
        scroll(table(["call", "x.grad"], onehot, cls="compact")))


# --------------------------------------------------------------------------- seed 003

def seed_003() -> Markup:
    from ...engine import Tensor

    a = Tensor(2.0, requires_grad=True)
    b = Tensor(3.0, requires_grad=True)
    c = a * b
    d = Tensor(4.0, requires_grad=True)
    e = c * d
    mul_c, mul_e = c.grad_fn, e.grad_fn
    acc = mul_c.next_functions[0][0]
    rows = [[code("e.grad_fn"), mul_e.name(), next_functions(mul_e), saved_text(mul_e)],
            [code("c.grad_fn"), mul_c.name(), next_functions(mul_c), saved_text(mul_c)],
            [code("c.grad_fn.next_functions[0][0]"), acc.name(), next_functions(acc),
             f"variable is a: {acc.variable is a}"]]
    simple_graph = graph_block(e, {a: "a", b: "b", d: "d", e: "e"}, "The simple example e = (a·b)·d")
    e.backward(retain_graph=True)
    grads = f"a.grad = {a.grad.item():g} (= d·b), b.grad = {b.grad.item():g} (= d·a), d.grad = {d.grad.item():g} (= c)"
    leaf_facts = (f"a.is_leaf = {a.is_leaf}, a.grad_fn = {a.grad_fn}; c.is_leaf = {c.is_leaf}, "
                  f"c.requires_grad = {c.requires_grad}")

    # version counters: in-place on a saved tensor
    a = Tensor(2.0, requires_grad=True)
    b = Tensor(3.0, requires_grad=True)
    c = a * b
    d = Tensor(4.0, requires_grad=True)
    e = c * d
    v_before = c._version
    saved_version = e.grad_fn.saved["self"].version
    c += 1
    v_after = c._version
    inplace_error = _caught(lambda: e.backward())
    # the same with an addition, which saves nothing
    a = Tensor(2.0, requires_grad=True)
    b = Tensor(3.0, requires_grad=True)
    c = a * b
    d = Tensor(4.0, requires_grad=True)
    e_add = c + d
    add_saved = saved_text(e_add.grad_fn)
    c += 1
    add_ok = _caught(lambda: e_add.backward())
    add_result = f"a.grad = {a.grad.item():g}, b.grad = {b.grad.item():g}, d.grad = {d.grad.item():g}"
    # a second backward after the graph was freed
    a = Tensor(2.0, requires_grad=True)
    e2 = a * a
    e2.backward()
    freed = saved_text(e2.grad_fn)
    second_error = _caught(lambda: e2.backward())

    # unbind: one node, three outputs
    a = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    b, c, d = a.unbind()
    e = b * c * d
    unbind = b.grad_fn
    mul2 = e.grad_fn
    mul1 = mul2.next_functions[0][0]
    unbind_rows = [[code("b.grad_fn is c.grad_fn is d.grad_fn"), str(b.grad_fn is c.grad_fn is d.grad_fn)],
                   [code("(b.output_nr, c.output_nr, d.output_nr)"), str((b.output_nr, c.output_nr, d.output_nr))],
                   [code("unbind.next_functions"), next_functions(unbind)],
                   [code("mul1.next_functions  (b * c)"), next_functions(mul1)],
                   [code("e.grad_fn.next_functions  ((b*c) * d)"), next_functions(mul2)]]
    unbind_graph = graph_block(e, {a: "a", e: "e"}, "b, c, d = a.unbind(); e = b·c·d — edge labels are the "
                                            "output indices of UnbindBackward0")
    e.backward(retain_graph=True)
    unbind_grads = f"a.grad = {arr(a.grad, 3)} (each is the product of the other two)"

    # the complicated example
    t = _complicated()
    comp_graph = graph_block(t["k"], {t["c"]: "c", t["h"]: "h", t["k"]: "k"},
                             "The thread's “complicated example”: k = (i + h)·i with i = f·d·c / h")
    t["k"].backward(retain_graph=True)
    comp_grads = f"k = {t['k'].item():g}; c.grad = {t['c'].grad.item():g}, h.grad = {t['h'].grad.item():g}"

    return join(
        tag("h4", "grad_fn, next_functions, AccumulateGrad, saved tensors"),
        p("The thread's simple example: a = 2, b = 3 and d = 4 require grad; c = a·b; e = c·d. ", leaf_facts, "."),
        scroll(table(["attribute", "node", "next_functions", "saved for backward"], rows, cls="compact")),
        p("Each op's node saves exactly what its backward formula needs: MulBackward0 keeps both factors "
          "(∂(xy)/∂x = y), with the version each had when saved. After ", code("e.backward()"), ": ", grads, "."),
        simple_graph,
        tag("h4", "Version counters: modifying a saved tensor in place"),
        p("c._version was ", str(v_before), " when MulBackward0 saved it (saved version ",
          str(saved_version), "); ", code("c += 1"), " made it ", str(v_after), ". Backward then refuses, "
          "because the saved value is no longer the one the forward pass used:"),
        pre(inplace_error, class_="message"),
        p("With e = c + d instead, AddBackward0 saves ", add_saved,
          " (the gradient of a sum does not depend on its inputs), so the same ", code("c += 1"),
          " is harmless: ", add_ok if add_ok != "(no error was raised)" else "backward runs", " — ", add_result, "."),
        p("After a backward without retain_graph the saved tensors are freed (",
          code("e.grad_fn.saved"), " → ", freed, "), and a second backward says so:"),
        pre(second_error, class_="message"),
        tag("h4", "unbind: one node, output indices"),
        scroll(table(["expression", "value"], unbind_rows, cls="compact")),
        p("All three outputs share one UnbindBackward0; the second number in each next_functions "
          "pair is which of its outputs the gradient belongs to. ", unbind_grads, "."),
        unbind_graph,
        tag("h4", "The complicated example"),
        p("c = a·b is made to require grad after the fact; d and f do not require grad; h does and feeds two "
          "ops (its AccumulateGrad receives two gradients), and i feeds two ops (its DivBackward0 "
          "receives two). ", comp_grads, "."),
        comp_graph)


def _complicated():
    from ...engine import Tensor

    a, b = Tensor(2.0), Tensor(2.0)
    c = a * b
    c.requires_grad = True
    d = Tensor(2.0)
    e = d * c
    f = Tensor(2.0)
    g = f * e
    h = Tensor(2.0)
    h.requires_grad = True
    i = g / h
    j = i + h
    k = j * i
    return dict(a=a, b=b, c=c, d=d, e=e, f=f, g=g, h=h, i=i, j=j, k=k)


# --------------------------------------------------------------------------- symbolic or numerical

def symbolic_or_numerical() -> Markup:
    import sympy

    from ... import backends, problems
    from ...engine import Tensor

    problem = problems.get("squire_trapp")
    x0 = 1.5
    inputs = (np.array([x0]),)
    # the engine: numbers through the graph
    xe = Tensor([x0], requires_grad=True)
    fe = problem.fn(xe.__array_namespace__(), xe)
    fe.backward(retain_graph=True)
    g_engine = float(xe.grad.data[0])
    # sympy: a formula, then numbers
    sb = backends.get("sympy")
    prepared = sb.prepare(problem, inputs)
    expr = prepared.state.grad_exprs[0]
    sym = prepared.state.symbols.wrt_flat[0]
    g_sympy = float(sb.gradient(prepared, inputs)[0][0])
    exact = sympy.N(expr.subs(sym, sympy.Rational(3, 2)), 50)     # the formula at 50 digits

    def rel(g):                 # relative error of a float64 against the 50-digit value
        return abs(float(sympy.N((sympy.Float(g, 30) - exact) / exact, 30)))

    errors = {"engine": rel(g_engine), "sympy": rel(g_sympy)}
    rows = [["engine (reverse mode)", num(g_engine), fmt_error(errors["engine"]),
             "1 forward + 1 backward pass through the recorded graph"],
            [join("sympy (", code("lambdify"), " of the derivative formula)"), num(g_sympy),
             fmt_error(errors["sympy"]), f"{prepared.info.get('ops_gradient')} "
             "operations in the derived expression"]]
    for name in ("fd-forward", "fd-central", "fd-complex-step"):    # numbers at nearby points
        be = backends.get(name)
        pr = be.prepare(problem, inputs)
        g = float(be.gradient(pr, inputs)[0][0])
        errors[name] = rel(g)
        rows.append([name, num(g), fmt_error(errors[name]),
                     f"{pr.evaluations} function evaluation(s) at shifted points"])
    rows.append(["exact, 50 digits (SymPy formula evaluated with mpmath)", str(exact)[:22], "0", "reference"])
    drawing = graph_block(fe, {xe: "x", fe: "f"}, "What the engine recorded for f at x = 1.5: operations and saved "
                                         "values, no formula")
    diff_es = abs(g_engine - g_sympy)
    return join(
        p("The thread says PyTorch's autograd uses “no symbolic math … and no numerical "
          "differentiation”. One function through all three, live: the Squire–Trapp function "
          "f(x) = eˣ/√(sin³x + cos³x) (catalog problem ", code("squire_trapp"), ") at x = 1.5."),
        p("Symbolic: SymPy derives a formula for f′(x) first (", code("backends.get('sympy').prepare"),
          "), then evaluates it:"),
        pre(f"f'(x) = {sympy.sstr(expr)}", class_="formula-text"),
        scroll(table(["method", "f′(1.5)", "relative error", "how"], rows, cls="compact")),
        p("The engine and the formula differ by ", fmt_error(diff_es),
          " (rounding in a different order of operations) and match the 50-digit value to a relative ",
          fmt_error(errors["engine"]), " and ", fmt_error(errors["sympy"]), "; forward differences are "
          "off by ", fmt_error(errors["fd-forward"]), " and central differences by ",
          fmt_error(errors["fd-central"]), ", the price of their step-size trade-off (see the fd_steps "
          "plot in Accuracy), while the complex step, which subtracts nothing, is off by ",
          fmt_error(errors["fd-complex-step"]), ". So autograd is neither: it never "
          "builds a formula (the graph below holds operations and the numbers they saved, and its size "
          "does not swell like a formula's: see Memory) and it never perturbs x; it applies each "
          "op's exact derivative rule to numbers — exact like symbolic differentiation, computed "
          "like a numerical method."),
        drawing)


# --------------------------------------------------------------------------- the section

def build(data=None) -> Section:
    blocks = []
    for key, fn, label in (("000", seed_000, "seed 000"), ("001", seed_001, "seed 001"),
                           ("002", seed_002, "seed 002"), ("003", seed_003, "seed 003"),
                           ("sym", symbolic_or_numerical, "seeds 002 and 003")):
        try:
            body = fn()
        except Exception as exc:       # a broken example must not sink the whole report
            body = join(p("This example failed while the report was built:", class_="warn"),
                        pre(f"{type(exc).__name__}: {exc}", class_="message"))
        blocks.append(tag("div", tag("h3", SEEDS[key], " ", tag("span", f"({label})", class_="muted"),
                                     id=f"seed-{key}"), body, class_="seed"))
    intro = p("The questions from the four forum threads the project grew from, each answered by running "
              "its own example on diffcompare's engine while this report was built (every number below "
              "was computed then; graphs drawn with ", code("graph.to_svg"), ", counted with ",
              code("graph.summarize"), ").")
    return Section("seeds", "Seed questions", join(intro, *blocks))
