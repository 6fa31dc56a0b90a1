"""Where an operator's numbers go: the flattened, concatenated differentiated arguments.

Every operator works in one coordinate system.  The ``n`` inputs are the differentiated
arguments (``wrt``) flattened in C order and concatenated; the ``m`` outputs are the
function's value flattened.  A Jacobian is ``(m, n)``, a Hessian ``(n, n)``, a gradient,
pullback or Hessian-vector product ``(n,)``, a pushforward ``(m,)``.  ``Layout`` converts
between that space and the arguments' own shapes, and checks what a caller passes;
:func:`fit` makes a function or problem and its arguments into what an operator computes on
(the problem, its arguments, their ``Layout``).

>>> import numpy as np
>>> lay = Layout.of((np.zeros((2, 3)), np.zeros(4), np.zeros(())), wrt=(0, 2), out_shape=(5,))
>>> lay.n, lay.m
(7, 5)
>>> [a.shape for a in lay.split(np.arange(7.0))]
[(2, 3), ()]
>>> lay.tangent((np.ones((2, 3)), 2.0)).tolist()
[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0]
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np


@dataclasses.dataclass(frozen=True)
class Layout:
    """The shapes of the differentiated arguments and of the output, and ``n``/``m``."""

    wrt: tuple
    arg_shapes: tuple          # every argument's shape (all of them, for the input check)
    out_shape: tuple

    @classmethod
    def of(cls, inputs, wrt, out_shape) -> "Layout":
        return cls(tuple(wrt), tuple(np.shape(a) for a in inputs), tuple(out_shape))

    @property
    def shapes(self) -> tuple:
        return tuple(self.arg_shapes[i] for i in self.wrt)

    @property
    def sizes(self) -> tuple:
        return tuple(int(np.prod(s, dtype=np.int64)) for s in self.shapes)

    @property
    def n(self) -> int:
        return int(sum(self.sizes))

    @property
    def m(self) -> int:
        return int(np.prod(self.out_shape, dtype=np.int64))

    def split(self, flat) -> tuple:
        """A flat ``(n,)`` vector as one array per differentiated argument."""
        flat = np.asarray(flat)
        out, start = [], 0
        for shape, size in zip(self.shapes, self.sizes):
            out.append(flat[start:start + size].reshape(shape))
            start += size
        return tuple(out)

    def concat(self, arrays) -> np.ndarray:
        """One array per differentiated argument as the flat float64 ``(n,)`` vector."""
        parts = [np.asarray(a, dtype=np.float64).reshape(-1) for a in arrays]
        return np.concatenate(parts) if parts else np.zeros(0)

    def jacobian_blocks(self, blocks) -> np.ndarray:
        """Per-argument Jacobian blocks (``out_shape + arg.shape``) as one ``(m, n)`` matrix."""
        return np.concatenate([np.asarray(b, dtype=np.float64).reshape(self.m, size)
                               for b, size in zip(blocks, self.sizes)], axis=1)

    def check_inputs(self, inputs) -> tuple:
        inputs = tuple(inputs)
        shapes = tuple(np.shape(a) for a in inputs)
        if shapes != self.arg_shapes:
            raise ValueError(f"the inputs have shapes {list(shapes)}; this operator was prepared "
                             f"for {list(self.arg_shapes)}: prepare it again for new shapes.")
        return inputs

    def tangent(self, v) -> np.ndarray:
        """A tangent (input-space vector) as flat float64 ``(n,)``: given flat, as one array per
        differentiated argument, or (one argument) in that argument's shape."""
        if isinstance(v, (tuple, list)):
            if len(v) != len(self.wrt):
                raise ValueError(f"the tangent has {len(v)} parts; expected one per differentiated "
                                 f"argument ({len(self.wrt)}, shapes {list(self.shapes)}).")
            for k, (part, shape) in enumerate(zip(v, self.shapes)):
                if np.shape(part) != shape:
                    raise ValueError(f"tangent part {k} has shape {np.shape(part)}; differentiated "
                                     f"argument {self.wrt[k]} has shape {shape}.")
            return self.concat(v)
        v = np.asarray(v, dtype=np.float64)
        if v.shape == (self.n,) or (len(self.shapes) == 1 and v.shape == self.shapes[0]):
            return v.reshape(-1)
        raise ValueError(f"the tangent has shape {v.shape}; expected ({self.n},) (the "
                         f"differentiated arguments flattened and concatenated) or one array per "
                         f"argument with shapes {list(self.shapes)}.")

    def cotangent(self, u) -> np.ndarray:
        """A cotangent (output-space vector) as flat float64 ``(m,)``: given flat or in the
        output's shape."""
        u = np.asarray(u, dtype=np.float64)
        if u.shape in {(self.m,), self.out_shape}:
            return u.reshape(-1)
        raise ValueError(f"the cotangent has shape {u.shape}; the function's output has shape "
                         f"{self.out_shape} (pass that shape, or flat ({self.m},)).")


#: the operators of a scalar function (f: R^n -> R)
_SCALAR = ("gradient", "hessian", "hvp")


def as_args(inputs, wrt) -> tuple:
    """The argument tuple (a lone array is the only argument); differentiated integers as
    float64."""
    args = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    return tuple(np.asarray(a, dtype=np.float64)
                 if i in wrt and np.asarray(a).dtype.kind in "biu" else np.asarray(a)
                 for i, a in enumerate(args))


def fit(operator: str, fn_or_problem, inputs, wrt):
    """``(problem, args, layout)``: ``fn_or_problem`` (``fn(xp, *args)``, a Problem or a
    catalog problem's name) as ``operator`` needs it (``wrt``; tagged vector-output for the
    vector operators, untagged for the scalar ones), its arguments and their layout.  A
    scalar operator of a vector-valued function is a ``ValueError``."""
    from .. import problems
    from ..problems import Problem

    problem = fn_or_problem
    if isinstance(problem, str):
        problem = problems.get(problem)
    if not isinstance(problem, Problem):
        if not callable(problem):
            raise TypeError(f"expected fn(xp, *args), a Problem or a problem name, got "
                            f"{type(problem).__name__}.")
        args = as_args(inputs, tuple(wrt or (0,)))
        problem = Problem(safe_name(problem), problem, lambda size, seed: args,
                          "a function given to diffcompare.operators", wrt=tuple(wrt or (0,)))
    elif wrt is not None:
        problem = dataclasses.replace(problem, wrt=tuple(wrt))
    args = as_args(inputs, problem.wrt)
    out_shape = np.shape(problem.fn(np, *args))
    layout = Layout.of(args, problem.wrt, out_shape)
    tags = set(problem.tags) - {"vector-output"}
    if operator in _SCALAR:
        if layout.m != 1:
            raise ValueError(f"{operator} needs a scalar function; {problem.name!r} returns shape "
                             f"{out_shape}: use jacobian, pullback or pushforward.")
        problem = dataclasses.replace(problem, tags=frozenset(tags), make_cotangent=None,
                                      operators=(), exact_operators={})
    else:
        problem = dataclasses.replace(problem, tags=frozenset(tags | {"vector-output"}),
                                      make_cotangent=lambda size, seed: np.ones(out_shape),
                                      operators=(), exact_operators={})
    return problem, args, layout


def safe_name(fn) -> str:
    """A problem name for a plain function: its ``__name__`` in letters, digits and '_'."""
    name = re.sub(r"\W+", "_", getattr(fn, "__name__", "") or "").strip("_")
    return name or "fn"
