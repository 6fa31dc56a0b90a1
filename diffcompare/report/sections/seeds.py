"""The seed questions, as the run recorded them: the threads' own code and the closer looks, on
the engine and on PyTorch side by side.

The seed study (:mod:`diffcompare.studies.seeds`) runs each thread's code blocks character for
character on the engine's torch face and on PyTorch, statement by statement with both
outputs and a flag where they differ, then the closer looks (PyTorch code too) with their
rows of values and structure and the graphs of both libraries; it writes all of it to
``studies/seeds.json``.  This section only renders that record (a folder without it says
how to make it).  A short answer opens each question, its numbers read from the record.
"""
from __future__ import annotations

import json
import re

from ..fmt import fmt_error
from ..html import Markup, code, download, join, p, pre, scroll, table, tag
from ..templates import render
from . import Section

#: the study that records this section, and the layout of its record this section reads
STUDY, FORMAT = "seeds", 1
SEEDS = ("000", "001", "002", "003")


# --------------------------------------------------------------------------- helpers

def num(x) -> str:
    """A float with every digit that matters (``repr``), for side-by-side comparisons."""
    return repr(float(x))


def _svg_width(svg: str) -> float:
    m = re.search(r'width="([0-9.]+)"', svg)
    return float(m.group(1)) if m else 0.0


# --------------------------------------------------------------------------- the record as template data

def example_data(ex: dict) -> dict:
    """One recorded example's rows (engine | torch | verdict) and graphs, for the template."""
    if ex.get("error"):
        return {"key": ex["key"], "title": ex["title"], "error": ex["error"]}
    graphs = []
    for k, g in enumerate(ex["graphs"]):
        sides = [{"library": side["library"], "svg": Markup(side["svg"]), "facts": side["facts"],
                  "steps": json.dumps(side["steps"], ensure_ascii=False),
                  "download": download(f"{ex['key']}-{k}-{side['lib']}.svg", side["svg"],
                                       "image/svg+xml", "SVG")}
                 for side in g["sides"]]
        graphs.append({"caption": g["caption"], "sides": sides,
                       "wide": any(_svg_width(side["svg"]) > 540 for side in sides)})
    return {"key": ex["key"], "title": ex["title"], "code": ex["code"],
            "lines": ex["code"].count("\n") + 1, "rows": ex["rows"], "graphs": graphs, "error": None}


def code_data(block: dict) -> dict:
    """One recorded thread code block: its statements with both libraries' output, for the
    template; ``paste`` is the whole of it (setup, the thread's code, check) to copy."""
    if block.get("error"):
        return {"key": block["key"], "title": block["title"], "error": block["error"]}
    rows = block["rows"]
    return dict(block, error=None, differs=sum(r["same"] is False for r in rows),
                statements=sum(r["part"] == "thread" for r in rows))


def answers(record: dict) -> dict:
    """The short answer to each question, its numbers read from the examples' records."""
    lines = {}
    for ex in record["examples"]:
        for r in ex.get("rows") or ():
            lines.setdefault(ex["key"], []).append((r["label"], r["engine"]))

    def t(key, label):          # the engine's line ``label`` (or ``label (a note)``)
        return next((text for lab, text in lines.get(key, ())
                     if lab == label or lab.startswith(label + " (")), "?")

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



def build(data=None, demo_link: bool = True, record: dict | None = None) -> Section:
    """The section, from the seed study's record in ``data``'s folder (or ``record``, as
    ``diffcompare demo`` passes it); ``demo_link``: link to the seed-only page ``diffcompare
    demo`` writes (off on that page itself)."""
    if record is None:
        study = data.study(STUDY) if data is not None else None
        record = study.data if study is not None else None
        if record is None:
            return Section("seeds", "Seed questions", _not_recorded(study))
    if record.get("format") != FORMAT:
        return Section("seeds", "Seed questions", p(
            f"This folder's seed record (studies/seeds.json) has layout {record.get('format')!r}; this "
            f"version of diffcompare reads layout {FORMAT}. Run the study again: ",
            code("python -m diffcompare.studies seeds <results-dir>"), ".", class_="warn"))
    ans = answers(record)
    questions = []
    for seed in SEEDS:
        questions.append({"seed": seed, "label": f"seed {seed}", "question": record["questions"][seed],
                          "answer": ans[seed],
                          "blocks": [code_data(b) for b in record["blocks"] if b["seed"] == seed],
                          "not_run": record["not_run"].get(seed),
                          "examples": [example_data(e) for e in record["examples"] if e["seed"] == seed],
                          "extra": _compiled_seed_001(record["compiled"]) if seed == "001" else None})
    questions.append({"seed": "sym", "label": "seeds 002 and 003", "question": record["questions"]["sym"],
                      "blocks": [], "not_run": None, "examples": [],
                      "extra": symbolic_or_numerical(record["symbolic"]),
                      "answer": "Neither: it applies each operation's exact derivative rule to numbers."})
    body = render("seeds.html.j2", questions=questions, torch_version=record["torch_version"],
                  code_module=code("diffcompare.seeds"), demo_link=demo_link)
    return Section("seeds", "Seed questions", body)


def _not_recorded(study) -> Markup:
    why = f" ({study.note})" if study is not None and study.note else ""
    return p("This results folder has no record of the seed questions" + why + ": the seed "
             "study writes it (", code("studies/seeds.json"), "). Add ", code('"seeds"'),
             " to the suite's studies, or run ", code("python -m diffcompare.studies seeds <results-dir>"),
             ", and build the report again.", class_="warn")


def _failed(what: str, error: str) -> Markup:
    return join(p(f"{what} failed when the run recorded it:", class_="warn"), pre(error, class_="message"))


# --------------------------------------------------------------------------- seed 001, compiled

def _compiled_seed_001(rec: dict) -> Markup:
    """Seed 001's model through ``engine.compile``, as recorded: the thread's hand-written
    lines (``w.g = inp.t() @ out.g``, ``b.g = out.g.sum(0)``), derived rather than written."""
    if rec.get("error"):
        return _failed("Compiling the model", rec["error"])
    return join(p("The same gradient derived as a program: ", code("diffcompare.engine.compile"),
                  " traces the engine's own backward formulas once and prints straight-line NumPy — a "
                  "transpose-matmul for each weight and ", code("sum(axis=0)"), " for each bias, the "
                  "thread's lines:"),
                pre(rec["ssa_source"]), p("and as matrix formulas:"), pre(rec["math"]))


# --------------------------------------------------------------------------- symbolic or numerical

def symbolic_or_numerical(rec: dict) -> Markup:
    """One function through the engine, SymPy and finite differences, as recorded."""
    if rec.get("error"):
        return _failed("This example", rec["error"])
    by = {m["method"]: m for m in rec["methods"]}
    errors = {name: m["error"] for name, m in by.items()}
    how = {"engine": (lambda m: "engine (reverse mode)",
                      lambda m: "1 forward + 1 backward pass through the recorded graph"),
           "sympy": (lambda m: join("sympy (", code("lambdify"), " of the derivative formula)"),
                     lambda m: f"{m.get('ops')} operations in the derived expression")}
    rows = []
    for name, m in by.items():
        label, said = how.get(name, (lambda m: m["method"],
                                     lambda m: f"{m.get('evaluations')} function evaluation(s) at shifted points"))
        rows.append([label(m), num(m["value"]), fmt_error(m["error"]), said(m)])
    rows.append(["exact, 50 digits (SymPy formula evaluated with mpmath)", rec["exact"], "0", "reference"])
    g = rec["graph"]
    drawing = tag("figure", Markup(f'<div class="graph">{g["svg"]}</div>'),
                  tag("figcaption", tag("strong", "engine"), ": ", "What the engine recorded for f at "
                      f"x = {rec['x0']}: operations and saved values, no formula", " — ", g["facts"], "."),
                  class_="graph-figure")
    diff_es = abs(by["engine"]["value"] - by["sympy"]["value"])
    return join(
        p("The thread says PyTorch's autograd uses “no symbolic math … and no numerical "
          "differentiation”. One function through all three: the Squire–Trapp function "
          "f(x) = eˣ/√(sin³x + cos³x) (catalog problem ", code(rec["problem"]), f") at x = {rec['x0']}."),
        p("Symbolic: SymPy derives a formula for f′(x) first (", code("backends.get('sympy').prepare"),
          "), then evaluates it:"),
        pre(f"f'(x) = {rec['formula']}", class_="formula-text"),
        scroll(table(["method", f"f′({rec['x0']})", "relative error", "how"], rows, cls="compact")),
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
