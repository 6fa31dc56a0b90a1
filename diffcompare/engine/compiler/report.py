"""What a compiled program is: its size (``stats``) and its formulas (``math``)."""
from __future__ import annotations

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
