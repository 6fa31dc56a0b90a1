"""The seed questions, as the run recorded them: the threads' own code and the closer looks, on
the engine and on PyTorch side by side.

The seed study (:mod:`diffcompare.studies.seeds`) runs each thread's code blocks character for
character on the engine's torch face and on PyTorch, statement by statement with both
outputs and a flag where they differ, then the closer looks (PyTorch code too) with their
rows of values and structure and the graphs of both libraries; it writes all of it to
``studies/seeds.json``.  This section only renders that record (a folder without it says
how to make it).  A short answer opens each question, its numbers read from the record.
:func:`seeds_data` computes, ``templates/seeds.html.j2`` renders.
"""
from __future__ import annotations

import json
import re

from markupsafe import Markup

from ..fmt import fmt_error
from ..fragments import code, table
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
                  "filename": f"{ex['key']}-{k}-{side['lib']}.svg"}
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
    """The short answer to each question (inline values: text and code), its numbers read from
    the examples' records."""
    lines = {}
    for ex in record["examples"]:
        for r in ex.get("rows") or ():
            lines.setdefault(ex["key"], []).append((r["label"], r["engine"]))

    def t(key, label):          # the engine's line ``label`` (or ``label (a note)``)
        return next((text for lab, text in lines.get(key, ())
                     if lab == label or lab.startswith(label + " (")), "?")

    checks = [t("001-linear-layer", f"{n}.grad equals the hand formula") for n in ("inp", "w1", "b1", "w2", "b2")]
    return {
        "000": [
            "Autograd does not average anything: it differentiates the one scalar you call ",
            code("backward()"), " on. With L = mean(x·w) over x = [1, 2], backward sends ∂L/∂yᵢ = ",
            t("000-mean-of-product", "y.grad"), " to each sample and sums the paths where they meet at w: ",
            code("w.grad"), " = ", t("000-mean-of-product", "w.grad"),
            " = mean(x). The gradient of the average is the average of the gradients. The graph is one "
            "“tensor arm”, not one per sample: ", t("000-mean-of-product", "nodes in the graph, batch of 2"),
            " nodes for a batch of 2 and ", t("000-mean-of-product", "nodes in the graph, batch of 100,000"),
            " for 100,000; only the saved x grows. Draw it (", code("viz.graph.to_svg(L)"), ") or count it (",
            code("graph.summarize(L)"), ")."],
        "001": [
            "From the chain rule, one op at a time. The bias is broadcast over the batch, so every sample "
            "adds one path from b to the loss and backward adds the paths: ", code("b.g = out.g.sum(0)"),
            " is what broadcasting's gradient does. The engine's gradients of the lesson's "
            "lin → relu → lin → MSE model equal the hand-written backward (", code("inp.g = out.g @ w.t()"),
            ", …) in ", str(checks.count("True")), " of 5 checks, and PyTorch's equal the engine's. With ",
            code("reduction='sum'"), " nothing divides by N, so b2.grad is ",
            t("001-linear-layer", "b2.grad with reduction='sum' ÷ with 'mean'"), "× larger."],
        "002": [
            "For a vector y there is no single gradient: ", code("y.backward(v)"), " computes the "
            "vector-Jacobian product vᵀJ, the gradient of Σᵢ vᵢyᵢ, where v plays the part of ∂z/∂y for a "
            "later scalar z. For y = 3a + 2b² + log(c) and v = [0.1, 1, 0.0001], a.grad = ",
            t("002-gradient-argument", "a.grad"), " = 3v. A one-hot v picks one row of the Jacobian; "
            "without v, backward refuses; gradients accumulate over calls until zeroed."],
        "003": [
            "Backward nodes (", code("grad_fn"), ") linked by ", code("next_functions"),
            " — (node, input_nr) pairs, one ", code("AccumulateGrad"), " per leaf — and the tensors each "
            "node saved for its formula (MulBackward0 saves both factors, AddBackward0 ",
            t("003-version-counter", "(c + d).grad_fn saved"), "). An in-place change bumps ",
            code("_version"), " (", t("003-version-counter", "c._version after c = a·b"), " → ",
            t("003-version-counter", "c._version after c += 1"), ") and breaks a backward that needs the "
            "saved value. ", code("i.retain_grad()"), " keeps an intermediate gradient: i.grad = ",
            t("003-complicated", "i.grad"), "; ", code("k.detach()"), " is a leaf sharing k's memory; "
            "under ", code("no_grad()"), " nothing is recorded."],
    }



def seeds_data(data=None, demo_link: bool = True, record: dict | None = None) -> dict:
    """What the section shows, as plain values, from the seed study's record in ``data``'s
    folder (or ``record``, as ``diffcompare demo`` passes it); ``demo_link``: link to the
    seed-only page ``diffcompare demo`` writes (off on that page itself)."""
    if record is None:
        study = data.study(STUDY) if data is not None else None
        record = study.data if study is not None else None
        if record is None:
            return {"recorded": False, "note": study.note if study is not None else None}
    if record.get("format") != FORMAT:
        return {"recorded": True, "layout": repr(record.get("format")), "expected_layout": FORMAT}
    ans = answers(record)
    questions = []
    for seed in SEEDS:
        questions.append({"seed": seed, "label": f"seed {seed}", "question": record["questions"][seed],
                          "answer": ans[seed],
                          "blocks": [code_data(b) for b in record["blocks"] if b["seed"] == seed],
                          "not_run": record["not_run"].get(seed),
                          "examples": [example_data(e) for e in record["examples"] if e["seed"] == seed],
                          "compiled": compiled_data(record["compiled"]) if seed == "001" else None,
                          "symbolic": None})
    questions.append({"seed": "sym", "label": "seeds 002 and 003", "question": record["questions"]["sym"],
                      "blocks": [], "not_run": None, "examples": [], "compiled": None,
                      "symbolic": symbolic_data(record["symbolic"]),
                      "answer": "Neither: it applies each operation's exact derivative rule to numbers."})
    return {"recorded": True, "questions": questions,
            "torch_version": record["torch_version"], "demo_link": demo_link}


def build(data=None, demo_link: bool = True, record: dict | None = None) -> Section:
    """The section (see :func:`seeds_data`)."""
    return Section("seeds", "Seed questions", render("seeds.html.j2", **seeds_data(data, demo_link, record)))


# --------------------------------------------------------------------------- seed 001, compiled

def compiled_data(rec: dict) -> dict:
    """Seed 001's model through ``engine.compile``, as recorded: the thread's hand-written
    lines (``w.g = inp.t() @ out.g``, ``b.g = out.g.sum(0)``), derived rather than written:
    the straight-line program and its matrix formulas (or the error)."""
    if rec.get("error"):
        return {"error": rec["error"]}
    return {"error": None, "ssa_source": rec["ssa_source"], "math": rec["math"]}


# --------------------------------------------------------------------------- symbolic or numerical

def symbolic_data(rec: dict) -> dict:
    """One function through the engine, SymPy and finite differences, as recorded: each
    method's value, error and how it got it, and the engine's graph."""
    if rec.get("error"):
        return {"error": rec["error"]}
    by = {m["method"]: m for m in rec["methods"]}
    how = {"engine": (lambda m: "engine (reverse mode)",
                      lambda m: "1 forward + 1 backward pass through the recorded graph"),
           "sympy": (lambda m: ["sympy (", code("lambdify"), " of the derivative formula)"],
                     lambda m: f"{m.get('ops')} operations in the derived expression")}
    rows = []
    for method, m in by.items():
        label, said = how.get(method, (lambda m: m["method"],
                                       lambda m: f"{m.get('evaluations')} function evaluation(s) at shifted points"))
        rows.append([label(m), num(m["value"]), fmt_error(m["error"]), said(m)])
    rows.append(["exact, 50 digits (SymPy formula evaluated with mpmath)", rec["exact"], "0", "reference"])
    return {"error": None, "problem": rec["problem"], "x0": rec["x0"], "formula": rec["formula"],
            "table": table(["method", f"f′({rec['x0']})", "relative error", "how"], rows, cls="compact"),
            "engine_vs_sympy": fmt_error(abs(by["engine"]["value"] - by["sympy"]["value"])),
            "errors": {method: fmt_error(m["error"]) for method, m in by.items()},
            "graph": {"svg": Markup(rec["graph"]["svg"]), "facts": rec["graph"]["facts"]}}
