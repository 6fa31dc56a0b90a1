"""The seed questions, answered by running the threads' own code now, on the engine and on
PyTorch side by side.

The code lives in :mod:`diffcompare.seeds` (one module, also used by ``diffcompare demo``
and the tests): each thread's code blocks character for character (``THREAD_CODE``),
run on the engine's torch face and on PyTorch in the dtype the code asks for, statement
by statement with both outputs and a flag where they differ; then the closer looks
(``EXAMPLES``), PyTorch code too, whose records give rows of values and structure and the
graphs of both libraries drawn by :func:`diffcompare.viz.graph.to_svg`.  Like the rest of
the seeds, this section runs live when the report is built (the seeds are not part of a
results folder).  A short answer opens each question, computed from the same records.
"""
from __future__ import annotations

import json

import numpy as np

from ... import seeds as S
from ...viz.libs import libs
from ..fmt import fmt_error
from ..html import Markup, code, download, join, p, pre, scroll, table, tag
from ..templates import render
from . import Section

QUESTIONS = dict(S.QUESTIONS, sym="Is autograd symbolic or numerical?")


# --------------------------------------------------------------------------- helpers

def num(x) -> str:
    """A float with every digit that matters (``repr``), for side-by-side comparisons."""
    return repr(float(x))


def graph_facts(root, view) -> str:
    from ...viz.graph import counts_text

    return counts_text(root, view)


def graph_block(root, names, caption) -> Markup:
    """The engine's drawing of ``root``'s graph with its counts."""
    from ...viz.graph import EngineView, to_svg

    return tag("figure", Markup(f'<div class="graph">{to_svg(root, names=names)}</div>'),
               tag("figcaption", tag("strong", "engine"), ": ", caption, " — ",
                   graph_facts(root, EngineView()), "."), class_="graph-figure")


# --------------------------------------------------------------------------- the examples as data

def example_data(example, records) -> dict:
    """One example's rows (engine | torch | verdict) and graphs, ready for the template."""
    rows = S.side_by_side(example, records)
    graphs = []
    for k, g in enumerate(records["engine"].graphs):
        sides = []
        for lib_name, rec in records.items():
            if k < len(rec.graphs):
                gg = rec.graphs[k]
                sides.append({"library": rec.lib.version, "svg": Markup(gg.svg),
                              "facts": gg.facts, "steps": json.dumps(gg.steps, ensure_ascii=False),
                              "download": download(f"{example.key}-{k}-{lib_name}.svg", gg.svg,
                                                   "image/svg+xml", "SVG")})
        wide = any(_svg_width(side["svg"]) > 540 for side in sides)
        graphs.append({"caption": g.caption, "sides": sides, "wide": wide})
    code_text = example.code
    return {"key": example.key, "title": example.title, "code": code_text,
            "lines": code_text.count("\n") + 1, "rows": rows, "graphs": graphs, "error": None}


def code_data(block, runs) -> dict:
    """One thread code block: its statements with both libraries' output, ready for the
    template; ``paste`` is the whole of it (setup, the thread's code, check) to copy."""
    rows = S.compare_code(block, runs)
    paste = "\n".join(x for x in (block.setup, block.code, block.check) if x)
    return {"key": block.key, "title": block.title, "note": block.note, "rows": rows,
            "paste": paste, "repl": block.repl, "error": None,
            "differs": sum(r.same is False for r in rows),
            "statements": sum(r.part == "thread" for r in rows)}


def run_code_blocks() -> dict:
    """key -> (block, runs by library, or the error text)."""
    out = {}
    for block in S.THREAD_CODE:
        try:
            out[block.key] = (block, S.run_blocks(block))
        except Exception as exc:          # a broken block must not sink the whole report
            out[block.key] = (block, f"{type(exc).__name__}: {exc}")
    return out


def _svg_width(svg: str) -> float:
    import re

    m = re.search(r'width="([0-9.]+)"', svg)
    return float(m.group(1)) if m else 0.0


def run_examples() -> dict:
    """key -> (example, records by library, or the error text)."""
    out = {}
    for ex in S.EXAMPLES:
        try:
            out[ex.key] = (ex, {lib.name: S.run(ex, lib) for lib in libs()})
        except Exception as exc:          # a broken example must not sink the whole report
            out[ex.key] = (ex, f"{type(exc).__name__}: {exc}")
    return out


def _t(runs, key, label, lib="engine") -> str:
    ex, recs = runs[key]
    return recs[lib].text(label) if isinstance(recs, dict) else "?"


def answers(runs) -> dict:
    """The short answer to each question, its numbers read from the examples' records."""
    def t(key, label):
        try:
            return _t(runs, key, label)
        except KeyError:
            return "?"

    checks = [t("001-linear-layer", f"{n}.grad equals the hand formula") for n in ("inp", "w1", "b1", "w2", "b2")]
    return {
        "000": join(
            "Autograd does not average anything: it differentiates the one scalar you call ",
            code("backward()"), " on. With L = mean(x·w) over x = [1, 2], backward sends ∂L/∂yᵢ = ",
            t("000-mean-of-product", "y.grad"), " to each sample and sums the paths where they meet at w: ",
            code("w.grad"), " = ", t("000-mean-of-product", "w.grad"),
            " = mean(x). The gradient of the average is the average of the gradients. The graph is one "
            "“tensor arm”, not one per sample: ", t("000-mean-of-product", "nodes in the graph, batch of 2"),
            " nodes for a batch of 2 and ", t("000-mean-of-product", "nodes in the graph, batch of 100,000"),
            " for 100,000; only the saved x grows. Draw it (", code("viz.graph.to_svg(L)"), ") or count it (",
            code("graph.summarize(L)"), ")."),
        "001": join(
            "From the chain rule, one op at a time. The bias is broadcast over the batch, so every sample "
            "adds one path from b to the loss and backward adds the paths: ", code("b.g = out.g.sum(0)"),
            " is what broadcasting's gradient does. The engine's gradients of the lesson's "
            "lin → relu → lin → MSE model equal the hand-written backward (", code("inp.g = out.g @ w.t()"),
            ", …) in ", str(checks.count("True")), " of 5 checks, and PyTorch's equal the engine's. With ",
            code("reduction='sum'"), " nothing divides by N, so b2.grad is ",
            t("001-linear-layer", "b2.grad with reduction='sum' ÷ with 'mean'"), "× larger."),
        "002": join(
            "For a vector y there is no single gradient: ", code("y.backward(v)"), " computes the "
            "vector-Jacobian product vᵀJ, the gradient of Σᵢ vᵢyᵢ, where v plays the part of ∂z/∂y for a "
            "later scalar z. For y = 3a + 2b² + log(c) and v = [0.1, 1, 0.0001], a.grad = ",
            t("002-gradient-argument", "a.grad"), " = 3v. A one-hot v picks one row of the Jacobian; "
            "without v, backward refuses; gradients accumulate over calls until zeroed."),
        "003": join(
            "Backward nodes (", code("grad_fn"), ") linked by ", code("next_functions"),
            " — (node, input_nr) pairs, one ", code("AccumulateGrad"), " per leaf — and the tensors each "
            "node saved for its formula (MulBackward0 saves both factors, AddBackward0 ",
            t("003-version-counter", "(c + d).grad_fn saved"), "). An in-place change bumps ",
            code("_version"), " (", t("003-version-counter", "c._version after c = a·b"), " → ",
            t("003-version-counter", "c._version after c += 1"), ") and breaks a backward that needs the "
            "saved value. ", code("i.retain_grad()"), " keeps an intermediate gradient: i.grad = ",
            t("003-complicated", "i.grad"), "; ", code("k.detach()"), " is a leaf sharing k's memory; "
            "under ", code("no_grad()"), " nothing is recorded."),
    }


def build(data=None, demo_link: bool = True) -> Section:
    """The section; ``demo_link``: link to the seed-only page ``diffcompare demo`` writes
    (off on that page itself)."""
    from ...viz.libs import torch as torch_lib

    runs = run_examples()
    code_runs = run_code_blocks()
    ans = answers(runs)
    questions = []
    for seed in ("000", "001", "002", "003"):
        blocks = []
        for block, result in (code_runs[b.key] for b in S.THREAD_CODE if b.seed == seed):
            if isinstance(result, str):
                blocks.append({"key": block.key, "title": block.title, "error": result})
            else:
                blocks.append(code_data(block, result))
        examples = []
        for ex, recs in (runs[e.key] for e in S.EXAMPLES if e.seed == seed):
            if isinstance(recs, str):
                examples.append({"key": ex.key, "title": ex.title, "error": recs})
            else:
                examples.append(example_data(ex, recs))
        questions.append({"seed": seed, "label": f"seed {seed}", "question": QUESTIONS[seed], "answer": ans[seed],
                          "blocks": blocks, "not_run": S.NOT_RUN.get(seed), "examples": examples, "extra": _compiled_seed_001() if seed == "001" else None})
    try:
        sym = symbolic_or_numerical()
    except Exception as exc:            # a broken example must not sink the whole report
        sym = join(p("This example failed while the report was built:", class_="warn"),
                   pre(f"{type(exc).__name__}: {exc}", class_="message"))
    questions.append({"seed": "sym", "label": "seeds 002 and 003", "question": QUESTIONS["sym"],
                      "blocks": [], "not_run": None, "examples": [], "extra": sym,
                      "answer": "Neither: it applies each operation's exact derivative rule to numbers."})
    tl = torch_lib()
    body = render("seeds.html.j2", questions=questions, torch_version=tl.version if tl else None,
                  code_module=code("diffcompare.seeds"), demo_link=demo_link)
    return Section("seeds", "Seed questions", body)


# --------------------------------------------------------------------------- seed 001, compiled

def _compiled_seed_001() -> Markup:
    """Seed 001's model through ``engine.compile``: the thread's hand-written lines
    (``w.g = inp.t() @ out.g``, ``b.g = out.g.sum(0)``), derived rather than written."""
    from ...engine import compile, mse_loss, relu

    def model(inp, w1, b1, w2, b2, target):
        return mse_loss(relu(inp @ w1 + b1) @ w2 + b2, target)

    rng = np.random.default_rng(1)
    arrays = (rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), np.array([0.5, -0.5]),
              rng.standard_normal((2, 1)), np.array([0.1]), rng.standard_normal((4, 1)))
    try:
        g = compile(model, wrt=(1, 2, 3, 4)).trace(*arrays)
    except Exception as exc:            # a broken example must not sink the whole report
        return join(p("Compiling the model failed while the report was built:", class_="warn"),
                    pre(f"{type(exc).__name__}: {exc}", class_="message"))
    return join(p("The same gradient derived as a program: ", code("diffcompare.engine.compile"),
                  " traces the engine's own backward formulas once and prints straight-line NumPy — a "
                  "transpose-matmul for each weight and ", code("sum(axis=0)"), " for each bias, the "
                  "thread's lines:"),
                pre(g.ssa_source), p("and as matrix formulas:"), pre(g.math()))


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


