"""The seed questions, recorded: the threads' code and the closer looks on the engine and on PyTorch.

The code lives in :mod:`diffcompare.seeds` (each thread's code blocks character for
character, ``THREAD_CODE``, and the closer looks, ``EXAMPLES``). This study runs every block
and example on the engine's torch face and on PyTorch (when installed), and records what
the report's seed section shows, so the report only reads it:

- ``<out_dir>/studies/seeds.json`` (:func:`record`): per block its statements with both
  outputs; per example its rows and the graphs of both libraries (SVG, counts, the steps
  of its forward and backward); seed 001's model compiled by ``engine.compile``; and one
  function through the engine, SymPy and finite differences against its 50-digit value
  ("is autograd symbolic or numerical?");
- ``seeds.csv``: one row per compared statement or line (``kind``: ``code`` or
  ``example``), with both outputs and whether they agree.

Its check: wherever the engine and PyTorch print differently, the difference is a known,
explained one (``diffcompare.seeds.KNOWN_DIFFERENCES`` / ``KNOWN_CODE_DIFFERENCES``).

>>> from diffcompare.studies import seeds
>>> data = seeds.record()                                      # doctest: +SKIP
>>> sorted(data)[:3]                                           # doctest: +SKIP
['blocks', 'compiled', 'examples']
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from ..results.jsonio import dumps
from .common import Finding, no_data

NAME = "seeds"
TITLE = "The seed questions on the engine and on PyTorch"
EXPECTED = (
    "The threads' own PyTorch code runs unchanged on the engine's torch face and prints what "
    "PyTorch prints, statement by statement; where the two print differently the difference "
    "is a known one, explained beside it (a version string, NumPy's .data, a node's name).")

#: Version of the layout of ``seeds.json``; the report refuses other versions with a message.
FORMAT = 1
#: The question the seed threads ask together (answered by the symbolic-or-numerical look).
SYM_QUESTION = "Is autograd symbolic or numerical?"
COLUMNS = ["kind", "seed", "key", "label", "engine", "torch", "same", "note", "block_note"]


def data_path(out_dir) -> Path:
    """``<out_dir>/studies/seeds.json``."""
    from ..results.studies import study_data_path

    return study_data_path(out_dir, NAME)


def run(out_dir=None, quick: bool = False):
    """Record the seed questions (``seeds.json`` in ``out_dir``'s studies folder when given)
    and return one row per compared statement or line."""
    import pandas as pd

    data = record()
    if out_dir is not None:
        path = data_path(out_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)
    rows = []
    for kind, items, label in (("code", data["blocks"], "source"), ("example", data["examples"], "label")):
        for item in items:
            for r in item.get("rows") or ():
                rows.append({"kind": kind, "seed": item["seed"], "key": item["key"], "label": r[label],
                             "engine": r["engine"], "torch": r["torch"], "same": r["same"],
                             "note": r["note"], "block_note": item.get("note") or ""})
    return pd.DataFrame(rows, columns=COLUMNS)


def check(frame) -> list:
    """Every statement or line the two libraries print differently has a known reason: its own
    note, or its block's (a block whose code relies on what the engine does differently, e.g.
    ``.data`` as a NumPy array, explains every difference that follows from it)."""
    name = "engine and PyTorch print the same"
    expected = "the same output everywhere, or a known difference explained beside it"
    compared = frame[[s is not None and s == s for s in frame["same"]]]
    if not len(compared):
        return [no_data(name, expected, "PyTorch is not installed, so nothing was compared")]
    differs = compared[[s is False or str(s).lower() == "false" for s in compared["same"]]]
    def said(text):
        return isinstance(text, str) and bool(text)

    unexplained = differs[[not (said(n) or said(b)) for n, b in zip(differs["note"], differs["block_note"])]]
    listed = "; ".join(f"{k}: {lab}" for k, lab in zip(unexplained["key"], unexplained["label"]))
    return [Finding(name, expected, f"{len(compared)} compared, {len(differs)} differ, "
                                    f"{len(unexplained)} without a known reason"
                                    + (f" ({listed[:300]})" if listed else ""), len(unexplained) == 0)]


# --------------------------------------------------------------------------- the record

def record() -> dict:
    """Everything the report's seed section shows, JSON-able (see the module docstring)."""
    from .. import seeds as S
    from ..viz.libs import torch as torch_lib

    tl = torch_lib()
    return {"format": FORMAT, "torch_version": tl.version if tl else None,
            "questions": dict(S.QUESTIONS, sym=SYM_QUESTION), "not_run": dict(S.NOT_RUN),
            "blocks": [_block(b) for b in S.THREAD_CODE],
            "examples": [_example(e) for e in S.EXAMPLES],
            "compiled": _guarded(compiled_seed_001), "symbolic": _guarded(symbolic_or_numerical)}


def _guarded(fn) -> dict:
    try:
        return fn()
    except Exception as exc:            # one broken look must not sink the others
        return {"error": f"{type(exc).__name__}: {exc}"}


def _block(block) -> dict:
    from .. import seeds as S

    out = {"key": block.key, "seed": block.seed, "title": block.title, "note": block.note,
           "repl": block.repl, "paste": "\n".join(x for x in (block.setup, block.code, block.check) if x)}
    try:
        out["rows"] = [dataclasses.asdict(r) for r in S.compare_code(block, S.run_blocks(block))]
    except Exception as exc:            # a broken block must not sink the others
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def _example(example) -> dict:
    from .. import seeds as S
    from ..viz.libs import libs

    out = {"key": example.key, "seed": example.seed, "title": example.title, "code": example.code}
    try:
        records = {lib.name: S.run(example, lib) for lib in libs()}
    except Exception as exc:            # a broken example must not sink the others
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    out["rows"] = [dataclasses.asdict(r) for r in S.side_by_side(example, records)]
    out["graphs"] = [{"caption": g.caption,
                      "sides": [{"lib": name, "library": rec.lib.version, "svg": rec.graphs[k].svg,
                                 "facts": rec.graphs[k].facts, "steps": rec.graphs[k].steps}
                                for name, rec in records.items() if k < len(rec.graphs)]}
                     for k, g in enumerate(records["engine"].graphs)]
    return out


def compiled_seed_001() -> dict:
    """Seed 001's model through ``engine.compile``: the thread's hand-written lines
    (``w.g = inp.t() @ out.g``, ``b.g = out.g.sum(0)``), derived rather than written:
    ``{"ssa_source", "math"}``."""
    from ..engine import compile, mse_loss, relu

    def model(inp, w1, b1, w2, b2, target):
        return mse_loss(relu(inp @ w1 + b1) @ w2 + b2, target)

    rng = np.random.default_rng(1)
    arrays = (rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), np.array([0.5, -0.5]),
              rng.standard_normal((2, 1)), np.array([0.1]), rng.standard_normal((4, 1)))
    g = compile(model, wrt=(1, 2, 3, 4)).trace(*arrays)
    return {"ssa_source": g.ssa_source, "math": g.math()}


def symbolic_or_numerical(x0: float = 1.5) -> dict:
    """The Squire–Trapp function's derivative at ``x0`` by the engine, SymPy's formula and
    finite differences, each against the formula at 50 digits: ``{"formula", "exact",
    "methods": [{"method", "value", "error", "ops" | "evaluations"}], "graph"}``."""
    import sympy

    from .. import backends, problems
    from ..engine import Tensor
    from ..viz.graph import EngineView, counts_text, to_svg

    problem = problems.get("squire_trapp")
    inputs = (np.array([x0]),)
    xe = Tensor([x0], requires_grad=True)           # the engine: numbers through the graph
    fe = problem.fn(xe.__array_namespace__(), xe)
    fe.backward(retain_graph=True)
    g_engine = float(xe.grad.data[0])
    sb = backends.get("sympy")                      # sympy: a formula, then numbers
    prepared = sb.prepare(problem, inputs)
    expr = prepared.state.grad_exprs[0]
    sym = prepared.state.symbols.wrt_flat[0]
    g_sympy = float(sb.gradient(prepared, inputs)[0][0])
    exact = sympy.N(expr.subs(sym, sympy.Rational(x0)), 50)      # the formula at 50 digits

    def rel(g):                 # relative error of a float64 against the 50-digit value
        return abs(float(sympy.N((sympy.Float(g, 30) - exact) / exact, 30)))

    methods = [{"method": "engine", "value": g_engine, "error": rel(g_engine)},
               {"method": "sympy", "value": g_sympy, "error": rel(g_sympy),
                "ops": prepared.info.get("ops_gradient")}]
    for name in ("fd-forward", "fd-central", "fd-complex-step"):    # numbers at nearby points
        be = backends.get(name)
        pr = be.prepare(problem, inputs)
        g = float(be.gradient(pr, inputs)[0][0])
        methods.append({"method": name, "value": g, "error": rel(g), "evaluations": pr.evaluations})
    return {"problem": problem.name, "x0": x0, "formula": sympy.sstr(expr), "exact": str(exact)[:22],
            "methods": methods,
            "graph": {"svg": to_svg(fe, names={xe: "x", fe: "f"}), "facts": counts_text(fe, EngineView())}}
