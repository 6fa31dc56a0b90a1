"""What a compiled program is: its size (``stats``) and its formulas (``math``)."""
from __future__ import annotations

import numpy as np

from .tracer import Tracer


def stats(variant) -> dict:
    """Steps of the generated program and the bytes the backward reads from the forward.

    ``saved_bytes`` counts each forward value (or argument) that a backward step
    reads once: what must be kept between the passes, comparable with the eager
    graph's ``graph.summarize(...).total_saved_bytes``.
    """
    program = variant.grad
    steps = [s for s in program.steps if s.op != "guard"]
    forward = [s for s in steps if s.phase == "forward"]
    backward = [s for s in steps if s.phase == "backward"]
    kept = {}
    for s in backward:
        for t in s.tracers():
            if t.step is None or t.step.phase == "forward":
                kept[id(t)] = t.nbytes
    return {
        "forward_steps": len(forward),
        "backward_steps": len(backward),
        "guards": sum(1 for s in program.steps if s.op == "guard"),
        "saved_bytes": sum(kept.values()),
        "saved_values": len(kept),
        "recorded_steps": sum(1 for s in variant.trace.steps if s.op != "guard"),
        "source_lines": program.source.count("\n"),
        "trace_ms": variant.trace_s * 1e3,
        "codegen_ms": variant.codegen_s * 1e3,
    }


_MATH_BINARY = {"add": "+", "sub": "−", "truediv": "/", "lt": "<", "le": "≤", "gt": ">",
                "ge": "≥", "eq": "=", "ne": "≠", "and": "∧", "or": "∨"}
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_VIEW_LIKE = {("method", "reshape"), ("call", "broadcast_to"), ("call", "squeeze"),
              ("call", "expand_dims")}


class _Math:
    """One program's steps as formulas: juxtaposition for matrix products, ᵀ, 𝟙ᵀ G for a
    sum over the batch, ⊙ for elementwise products, f′(x) for an elementwise derivative."""

    def __init__(self, program):
        self.p = program

    def name(self, t):
        n = self.p._names[id(t)]
        if n == "value":
            return "L"
        if n.startswith("g_"):
            return "∂" + n[2:]
        return n

    def arg(self, x, atom=False):
        if type(x) is Tracer:
            if id(x) in self.p._names:
                return self.name(x)
            text = self.expr(x.step)
            return f"({text})" if atom and not _is_atom(text) else text
        a = np.asarray(x)
        if a.size >= 1 and (a.size == 1 or not any(a.strides) or (a == a.flat[0]).all()):
            v = a.reshape(-1)[0].item()
            v = int(v) if isinstance(v, float) and v.is_integer() else v
            return f"{v:g}" if isinstance(v, float) else str(v)
        return f"C{a.shape}"

    def expr(self, s):
        op, args = s.op, s.args
        if op == "mul":
            a, b = args
            scalar = [x for x in args if type(x) is not Tracer and np.size(x) >= 1 and _const_uniform(x)]
            if scalar:
                other = b if scalar[0] is a else a
                return f"{self.arg(scalar[0])}·{self.arg(other, atom=True)}"
            return f"{self.arg(a, True)} ⊙ {self.arg(b, True)}"
        if op == "matmul":
            return f"{self.arg(args[0], True)} {self.arg(args[1], True)}"
        if op == "pow":
            b = args[1]
            if type(b) is not Tracer and np.size(b) == 1 and float(np.asarray(b).reshape(-1)[0]).is_integer():
                return f"{self.arg(args[0], True)}" + str(int(np.asarray(b).reshape(-1)[0])).translate(_SUPERSCRIPT)
            return f"{self.arg(args[0], True)}^{self.arg(b, True)}"
        if op in _MATH_BINARY:
            if op == "sub":
                d = _derivative_of(s, self)
                if d:
                    return d
            if op == "gt":
                d = _derivative_of(s, self)
                if d:
                    return d
            text = f"{self.arg(args[0], True)} {_MATH_BINARY[op]} {self.arg(args[1], True)}"
            return f"𝟙[{text}]" if op in ("lt", "le", "gt", "ge", "eq", "ne") else text
        if op == "neg":
            return f"−{self.arg(args[0], True)}"
        if op == "getitem":
            return f"{self.arg(args[0], True)}[{self.p._key(args[1])}]"
        if op == ("method", "T"):
            return f"{self.arg(args[0], True)}ᵀ"
        if op in _VIEW_LIKE:
            return self.arg(args[0])
        if op[0] == "reduce":
            a, axis, _ = args
            what = {"sum": "Σ", "max": "max", "min": "min"}.get(op[1], op[1])
            if op[1] == "sum" and axis == 0 and a.ndim == 2:
                return f"𝟙ᵀ {self.arg(a, True)}"
            if op[1] == "sum" and axis in (1, -1) and a.ndim == 2:
                return f"{self.arg(a, True)} 𝟙"
            sub = "" if axis is None else f"_{axis}"
            return f"{what}{sub} {self.arg(a, True)}"
        if op[0] == "ufunc" and op[2] == "__call__":
            name = {"maximum": "max", "minimum": "min", "absolute": "|·|"}.get(op[1], op[1])
            if op[1] == "maximum" and type(args[1]) is not Tracer and not np.any(args[1]):
                name, args = "relu", args[:1]
            return f"{name}({', '.join(self.arg(x) for x in args)})"
        if op == ("kernel", "index_add"):
            g, key, shape, _ = args
            return f"0{tuple(shape)} with [{self.p._key(key)}] = {self.arg(g)}"
        name = op[1] if isinstance(op, tuple) else op
        return f"{name}({', '.join(self.arg(x) for x in args if type(x) is Tracer)})"


def _is_atom(text):
    return all(c.isalnum() or c in "_∂ᵀ′()[]:,-" for c in text) and text.count("(") == text.count(")")


def _const_uniform(x):
    a = np.asarray(x)
    return a.size == 1 or not any(a.strides) or bool((a == a.flat[0]).all())


def _derivative_of(s, writer):
    """``h > 0`` with h = max(z, 0) is relu′(z); ``1 − y ⊙ y`` with y = tanh(z) is tanh′(z)."""
    op, args = s.op, s.args
    if op == "gt" and type(args[0]) is Tracer and args[0].step is not None and not np.any(args[1]):
        src = args[0].step
        if src.op == ("ufunc", "maximum", "__call__") and not np.any(src.args[1]):
            return f"relu′({writer.arg(src.args[0])})"
    if op == "sub" and type(args[1]) is Tracer and args[1].step is not None and args[1].step.op == "mul":
        a, b = args[1].step.args
        if a is b and type(a) is Tracer and a.step is not None and a.step.op == ("ufunc", "tanh", "__call__") \
                and np.all(np.asarray(args[0]) == 1):
            return f"tanh′({writer.arg(a.step.args[0])})"
    return None


def math(variant) -> str:
    """The program as formulas, one line per step of the generated code (∂v = ∂L/∂v)."""
    program = variant.readable
    writer = _Math(program)
    lines = ["forward:"]
    phase = "forward"
    for s in program.steps:
        if s.op == "guard":
            continue
        if s.phase != phase:
            lines.append("backward (∂v means ∂L/∂v):")
            phase = s.phase
        outs = [t for t in s.outs if id(t) in program._names]
        if outs:
            lhs = ", ".join(writer.name(t) for t in outs)
            lines.append(f"  {lhs} = {writer.expr(s)}")
    return "\n".join(lines)
