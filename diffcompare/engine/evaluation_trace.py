"""The evaluation trace of a small function (``evaluation_trace``; ``diffcompare.engine.trace`` is
NumPy's matrix trace): primal, tangent and adjoint of every intermediate.

The classic teaching table of automatic differentiation (Griewank & Walther; Baydin et al.
2018, Table 2), generated from the engine.  For a function of a few tensors (scalars, for the
table to read as the textbook's), one row per input and per intermediate, in the order the
forward pass computed them, named as the textbook names them (inputs ``v-1, v0``, then
``v1, v2, ...``):

- **primal**: the value the forward pass computed (each op's output, recorded as the engine
  makes it);
- **tangent** (forward mode): v̇ᵢ = ∂vᵢ/∂x · ẋ for a chosen input direction ẋ, every
  intermediate's J·ẋ at once by the engine's forward-mode product
  (:func:`diffcompare.engine.functional.jvp`'s mechanism: the VJP is linear in its cotangent,
  and its own VJP with cotangent ẋ is J·ẋ);
- **adjoint** (reverse mode): v̄ᵢ = ∂y/∂vᵢ, the gradient that arrives at each intermediate in
  the backward pass of the output y (``retain_grad`` on every intermediate, then
  ``y.backward()``; the inputs' adjoints are their ``.grad``).

>>> t = evaluation_trace(baydin, {"x1": 2.0, "x2": 5.0})
>>> [r.expression for r in t.rows]
['x1', 'x2', 'ln(v-1)', 'v-1 × v0', 'v1 + v2', 'sin(v0)', 'v3 − v4']
>>> round(float(t.output.primal), 3), round(float(t.output.tangent), 3), [round(float(r.adjoint), 3) for r in t.inputs]
(11.652, 5.5, [5.5, 1.716])
"""
from __future__ import annotations

import contextlib
import dataclasses
import re

import numpy as np

__all__ = ["TraceRow", "Trace", "TraceError", "evaluation_trace", "baydin", "BAYDIN_INPUTS", "recording"]


class TraceError(ValueError):
    """The function or its inputs cannot be traced; the message says what to change."""


def baydin(x1, x2):
    """Baydin et al. (2018), Table 2: f(x1, x2) = ln(x1) + x1·x2 − sin(x2)."""
    return x1.log() + x1 * x2 - x2.sin()


#: The paper's point: f(2, 5) = ln 2 + 10 − sin 5 ≈ 11.652, ∂f/∂x1 = 5.5, ∂f/∂x2 ≈ 1.716.
BAYDIN_INPUTS = {"x1": 2.0, "x2": 5.0}


@dataclasses.dataclass(frozen=True)
class TraceRow:
    name: str              # "v-1", "v0", "v1", ...
    expression: str        # the input's name, or the op on earlier rows: "ln(v-1)", "v-1 × v0"
    op: str                # the engine's node ("LogBackward0"), or "input"
    primal: np.ndarray
    tangent: np.ndarray
    adjoint: np.ndarray

    @property
    def is_input(self) -> bool:
        return self.op == "input"


@dataclasses.dataclass(frozen=True)
class Trace:
    function: str
    rows: list             # of TraceRow: the inputs, then the intermediates in evaluation order
    direction: dict        # input name -> its tangent ẋ

    @property
    def inputs(self) -> list:
        return [r for r in self.rows if r.is_input]

    @property
    def output(self) -> TraceRow:
        return self.rows[-1]

    def records(self) -> list[dict]:
        """One dict per row (for ``pandas.DataFrame``), values as floats for scalars."""
        return [{"v": r.name, "expression": r.expression, "op": r.op, "primal": _value(r.primal),
                 "tangent": _value(r.tangent), "adjoint": _value(r.adjoint)} for r in self.rows]

    def text(self, digits: int = 4) -> str:
        """The three traces as one table for a terminal."""
        dirn = ", ".join(f"ẋ_{k} = {_num(v, digits)}" for k, v in self.direction.items())
        head = ["v", "= expression", "primal", "tangent v̇", "adjoint v̄"]
        body = [[r.name, ("= " + r.expression), _num(r.primal, digits), _num(r.tangent, digits),
                 _num(r.adjoint, digits)] for r in self.rows]
        widths = [max(len(x[c]) for x in [head] + body) for c in range(5)]
        line = "  ".join("{:<%d}" % w if c < 2 else "{:>%d}" % w for c, w in enumerate(widths))
        out = [f"evaluation trace of {self.function}: forward primal, tangent (forward mode, {dirn}), "
               f"adjoint (reverse mode, ȳ = 1)", line.format(*head)]
        out += [line.format(*x).rstrip() for x in body]
        y = self.output
        grads = ", ".join(f"∂y/∂{r.expression} = {_num(r.adjoint, digits)}" for r in self.inputs)
        out.append(f"y = {_num(y.primal, digits)}; ẏ = {_num(y.tangent, digits)} (the derivative along ẋ); {grads}")
        return "\n".join(out)


def _value(a):
    a = np.asarray(a)
    return float(a) if a.size == 1 else a.tolist()


def _num(a, digits: int) -> str:
    a = np.asarray(a, dtype=float)
    if a.size == 1:
        v = float(a.reshape(()))
        return f"{v:.{digits}f}".rstrip("0").rstrip(".") if v == v else "nan"
    return np.array2string(a, precision=digits, separator=", ")


# --------------------------------------------------------------------------- recording


@contextlib.contextmanager
def recording():
    """Within the block, every tensor an op makes with a graph node is appended to the
    yielded list, in the order the forward pass makes them."""
    from . import function

    made = []
    make = function.make_output

    def recorded(data, grad_fn=None, output_nr=0, vc=None):
        t = make(data, grad_fn, output_nr, vc)
        if grad_fn is not None:
            made.append(t)
        return t

    function.make_output = recorded
    try:
        yield made
    finally:
        function.make_output = make


_SYMBOLS = {"Add": "+", "Sub": "−", "Mul": "×", "Div": "/", "Matmul": "@", "Pow": "^"}
_NAMES = {"Log": "ln", "Neg": "−"}


def _expression(node, label: dict) -> str:
    op = re.sub(r"Backward\d*$", "", node.name())
    args = []
    for child, nr in node.next_functions:
        if child is None:
            args.append("c")                     # an operand that needs no gradient: a constant
        elif child.name() == "AccumulateGrad":
            args.append(label[("leaf", id(child.variable))])
        else:
            args.append(label.get((id(child), nr), "?"))
    if op in _SYMBOLS and len(args) == 2:
        return f"{args[0]} {_SYMBOLS[op]} {args[1]}"
    if op in _SYMBOLS and len(args) == 1:
        return f"{args[0]} {_SYMBOLS[op]} c"
    if op == "Neg":
        return f"−{args[0]}"
    return f"{_NAMES.get(op, op.lower())}({', '.join(args)})"


# --------------------------------------------------------------------------- the trace


def evaluation_trace(fn, inputs: dict, direction: dict | None = None) -> Trace:
    """The evaluation trace of ``fn(**inputs)`` on the engine (float64).

    ``inputs``: ``{name: value}`` (scalars, lists or arrays); ``direction``: ẋ per input
    name for the tangent trace (default: 1 for the first input, 0 for the others, as the
    textbook's table); names not given are 0.  The function must return a scalar tensor."""
    from . import autograd, tensor as make_tensor
    from .grad_mode import enable_grad

    if not isinstance(inputs, dict) or not inputs:
        raise TraceError("pass the inputs as a dict {name: value}, e.g. {'x1': 2.0, 'x2': 5.0}")
    names = list(inputs)
    if direction is None:
        direction = {n: (1.0 if i == 0 else 0.0) for i, n in enumerate(names)}
    unknown = sorted(set(direction) - set(names))
    if unknown:
        raise TraceError(f"the direction names {unknown}, which are not inputs; the inputs are {names}")
    try:
        arrays = {n: np.asarray(v, dtype=np.float64) for n, v in inputs.items()}
    except (TypeError, ValueError) as exc:
        raise TraceError(f"inputs must be numbers or arrays of numbers: {exc}") from None
    xs = {n: make_tensor(a, requires_grad=True) for n, a in arrays.items()}
    dirs = {n: np.broadcast_to(np.asarray(direction.get(n, 0.0), dtype=np.float64), a.shape).copy()
            for n, a in arrays.items()}
    fname = getattr(fn, "__name__", "f")
    try:
        with enable_grad(), recording() as made:
            y = fn(**xs)
    except Exception as exc:
        raise TraceError(f"{fname}({', '.join(names)}) raised {type(exc).__name__}: {exc}; write it with the "
                         "engine's tensor operators and methods (+ - * /, .log(), .sin(), .exp(), ...)") from exc
    if not hasattr(y, "grad_fn") or y.grad_fn is None:
        raise TraceError(f"{fname} returned {type(y).__name__}, not a tensor computed from its inputs: "
                         "return an expression of them, e.g. x1.log() + x1 * x2")
    if np.size(y.data) != 1:
        raise TraceError(f"{fname} returns shape {tuple(y.shape)}; the trace's adjoints need a scalar "
                         "output: reduce it, e.g. with .sum()")
    # the intermediates: tensors made by the ops that y depends on, in evaluation order
    from .graph import nodes

    on_path = {id(n) for n in nodes(y)}
    seen, inter = set(), []
    for t in made:
        key = (id(t.grad_fn), t.output_nr)
        if id(t.grad_fn) in on_path and key not in seen:
            seen.add(key)
            inter.append(t)
    inter = [t for t in inter if t is not y] + [y]
    n = len(names)
    label = {("leaf", id(xs[k])): f"v{i - n + 1}" for i, k in enumerate(names)}
    for j, t in enumerate(inter, start=1):
        label[(id(t.grad_fn), t.output_nr)] = f"v{j}"

    # adjoints: what backward delivers to each intermediate
    for t in inter:
        t.retain_grad()
    y.backward(retain_graph=True)
    adjoint = [np.zeros_like(t.data) if t.grad is None else np.asarray(t.grad.data) for t in inter]
    x_adjoint = [np.zeros_like(xs[k].data) if xs[k].grad is None else np.asarray(xs[k].grad.data) for k in names]

    # tangents: J·ẋ for every intermediate at once (forward mode by the VJP's own VJP)
    with enable_grad():
        us = [make_tensor(np.zeros_like(t.data), requires_grad=True) for t in inter]
        vjps = autograd.grad(inter, [xs[k] for k in names], us, retain_graph=True, create_graph=True,
                             allow_unused=True, materialize_grads=False)
        used = [(g, dirs[k]) for g, k in zip(vjps, names) if g is not None and g._requires_grad]
        if used:
            jv = autograd.grad([g for g, _ in used], us, [d for _, d in used], allow_unused=True)
        else:
            jv = [None] * len(us)
    tangent = [np.zeros_like(t.data) if g is None else np.asarray(g.data) for t, g in zip(inter, jv)]

    rows = [TraceRow(f"v{i - n + 1}", k, "input", arrays[k], dirs[k], x_adjoint[i]) for i, k in enumerate(names)]
    rows += [TraceRow(f"v{j}", _expression(t.grad_fn, label), t.grad_fn.name(), np.asarray(t.data),
                      tangent[j - 1], adjoint[j - 1]) for j, t in enumerate(inter, start=1)]
    return Trace(fname, rows, {k: float(np.asarray(direction.get(k, 0.0)).reshape(-1)[0]) for k in names})
