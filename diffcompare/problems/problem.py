"""``Problem``: one function to differentiate, defined once for every method.

``fn(xp, *args)`` is written against an array namespace ``xp`` with NumPy's
function names, so the same code runs on NumPy (finite differences),
``jax.numpy``, the engine's namespace, SymPy's (``diffcompare.problems.symbolic``) and
torch's; the names it may use are the ``xp`` contract (``diffcompare.problems.contract``).
``make_inputs(size, seed)`` returns the float64 arguments; ``wrt`` says which
of them are differentiated.  A vector-valued ``fn`` is differentiated through a
vector-Jacobian product with the cotangent from ``make_cotangent`` (seed 002's
``y.backward(gradient)``).  ``operators`` names the derivative operators the problem is
benchmarked on beyond the gradient (``MEASURED_OPERATORS``: bundle adjustment's full Jacobian,
k-means' Hessian diagonal), and ``exact_operators`` may give their exact values.

>>> import numpy as np
>>> p = Problem(
...     name="square_sum",
...     fn=lambda xp, x: xp.sum(x * x),
...     make_inputs=lambda size, seed: (np.random.default_rng(seed).standard_normal(size),),
...     description="sum of squares",
... )
>>> x, = p.inputs(3, seed=0)
>>> float(p.evaluate(np, x)) == float(np.sum(x * x))
True
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from . import contract

TAGS = frozenset({"smooth", "nonsmooth", "vector-output", "loop", "seed", "matrix",
                  "not-complex-analytic",
                  "indexed",      # gathers with integer index arguments (not differentiated)
                  "large-expression",  # millions of scalar terms at every size: no symbolic expansion
                  })

#: The derivative operators a benchmark cell may measure beyond the gradient (VJP), each a
#: phase (and row) of its own named after it (``diffcompare.measure.cell``), computed through
#: :mod:`diffcompare.operators` (``diffcompare.operators.measured``): name -> (the output it
#: needs, "vector" or "scalar"; what is measured).  A problem declares some in ``operators``;
#: a run adds more (``diffcompare run --operators``, a suite's ``operators``).
MEASURED_OPERATORS = {
    "jacobian": ("vector", "the dense Jacobian J (m × n) of a vector output"),
    "jacobian_sparse": ("vector", "J as a sparse matrix: pattern detected on the engine, "
                                  "coloured, one compressed product per colour"),
    "hessian": ("scalar", "the dense Hessian H (n × n) of a scalar function"),
    "hessian_sparse": ("scalar", "H as a sparse matrix: symmetric colouring, one HVP per colour"),
    "hvp": ("scalar", "H v for a seeded standard-normal tangent v"),
    "hessian_diagonal": ("scalar", "the diagonal of H (the backend's own, where it has one)"),
}


@dataclasses.dataclass(frozen=True)
class Problem:
    name: str
    fn: Callable                       # fn(xp, *args) -> scalar (or array if vector-output)
    make_inputs: Callable              # (size, seed) -> tuple of float64 arrays
    description: str
    wrt: tuple = (0,)                  # indices of the differentiated arguments
    sizes: tuple = (1, 4, 16)          # default size sweep (meaning is per problem)
    tags: frozenset = frozenset({"smooth"})
    make_cotangent: Callable | None = None   # (size, seed) -> array, for vector outputs
    size_meaning: str = "n"            # what `size` counts, for tables ("n", "batch", "k steps")
    operators: tuple = ()              # derivative operators measured beyond the gradient
    #: exact values of some of ``operators`` from the inputs, a reference for their accuracy:
    #: ``{operator: fn(*inputs) -> tuple of arrays, one per differentiated argument}`` (for
    #: hessian_diagonal; a matrix operator gives one array, its flat-layout matrix)
    exact_operators: dict = dataclasses.field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self):
        if not self.name or not self.name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"problem name {self.name!r} must be letters, digits, '_' or '-'.")
        unknown = set(self.tags) - TAGS
        if unknown:
            raise ValueError(f"problem {self.name!r}: unknown tags {sorted(unknown)}; use {sorted(TAGS)}.")
        object.__setattr__(self, "tags", frozenset(self.tags))
        # every call gets the xp contract's names (logsumexp, sigmoid, ...) on any namespace
        object.__setattr__(self, "fn", contract.bind(self.fn))
        object.__setattr__(self, "wrt", tuple(self.wrt))
        if self.vector_output and self.make_cotangent is None:
            raise ValueError(f"problem {self.name!r} is tagged vector-output: give make_cotangent.")
        self._check_wrt()
        self._check_operators()

    def _check_operators(self):
        ops = (self.operators,) if isinstance(self.operators, str) else tuple(self.operators)
        object.__setattr__(self, "operators", ops)
        unknown = [p for p in ops if p not in MEASURED_OPERATORS]
        if unknown:
            raise ValueError(f"problem {self.name!r}: unknown operator {unknown[0]!r}; "
                             f"use some of {sorted(MEASURED_OPERATORS)}.")
        for op in ops:
            why = operator_mismatch(op, self)
            if why:
                raise ValueError(f"problem {self.name!r}: {why}.")
        stray = [p for p in self.exact_operators if p not in ops]
        if stray:
            raise ValueError(f"problem {self.name!r}: exact_operators names {stray[0]!r}, which "
                             f"is not among its operators {list(ops)}; add it to operators.")

    def _check_wrt(self):
        """``wrt`` must name arguments ``fn(xp, *args)`` has (when its signature says how many)."""
        import inspect

        if not self.wrt or any(not isinstance(i, int) or isinstance(i, bool) or i < 0 for i in self.wrt):
            raise ValueError(f"problem {self.name!r}: wrt must be argument indices (0, 1, ...), "
                             f"got {self.wrt!r}.")
        try:
            params = list(inspect.signature(self.fn).parameters.values())
        except (TypeError, ValueError):
            return                                       # a builtin or C callable: cannot tell
        if any(p.kind is p.VAR_POSITIONAL for p in params):
            return
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        n_args = len(positional) - 1                     # the first one is xp
        bad = [i for i in self.wrt if i >= n_args]
        if bad:
            names = ", ".join(f"{i}: {p.name}" for i, p in enumerate(positional[1:]))
            raise ValueError(f"problem {self.name!r}: wrt index {bad[0]} is beyond the arguments of "
                             f"fn(xp, ...), which has {n_args} ({names or 'none'}); wrt counts them "
                             "from 0, after xp.")

    @property
    def vector_output(self) -> bool:
        return "vector-output" in self.tags

    @property
    def smooth(self) -> bool:
        return "nonsmooth" not in self.tags

    @property
    def complex_analytic(self) -> bool:
        """Whether the complex-step method applies (no abs, max, comparisons)."""
        return self.smooth and "not-complex-analytic" not in self.tags

    def inputs(self, size: int, seed: int = 0) -> tuple:
        """The problem's arguments at ``size``, as float64 arrays (checked)."""
        args = self.make_inputs(size, seed)
        if not isinstance(args, tuple):
            raise TypeError(f"problem {self.name!r}: make_inputs must return a tuple of arrays, "
                            f"got {type(args).__name__}.")
        out = []
        for i, a in enumerate(args):
            a = np.asarray(a)
            if a.dtype.kind not in "fiu":
                raise TypeError(f"problem {self.name!r}: input {i} has dtype {a.dtype}; "
                                "inputs must be real numbers.")
            out.append(a.astype(np.float64) if i in self.wrt else a)
        return tuple(out)

    def cotangent(self, size: int, seed: int = 0):
        """The output weights for a vector-output problem, else ``None`` (scalar output: 1)."""
        return None if self.make_cotangent is None else np.asarray(self.make_cotangent(size, seed),
                                                                    dtype=np.float64)

    def evaluate(self, xp, *args):
        return self.fn(xp, *args)

    def n_inputs(self, size: int, seed: int = 0) -> int:
        """Number of differentiated scalars at ``size``."""
        args = self.inputs(size, seed)
        return int(sum(np.size(args[i]) for i in self.wrt))


def operator_mismatch(operator: str, problem) -> str | None:
    """Why ``operator`` (``MEASURED_OPERATORS``) does not apply to ``problem``'s output, or None.

    >>> square = Problem("sq", lambda xp, x: xp.sum(x * x), lambda n, s: (np.ones(n),), "Σ x²")
    >>> operator_mismatch("jacobian", square)
    "'jacobian' needs a vector output (tag 'vector-output'); a scalar function's Jacobian is its gradient"
    """
    needs = MEASURED_OPERATORS[operator][0]
    if needs == "vector" and not problem.vector_output:
        return (f"{operator!r} needs a vector output (tag 'vector-output'); a scalar "
                "function's Jacobian is its gradient")
    if needs == "scalar" and problem.vector_output:
        return f"{operator!r} needs a scalar output; this one is tagged 'vector-output'"
    return None
