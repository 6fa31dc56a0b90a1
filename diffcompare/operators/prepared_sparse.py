"""What a sparse Jacobian or Hessian is once prepared (:class:`SparsePrepared`) and once
evaluated (:class:`SparseOperator`): one home for the coloured route
(:mod:`~diffcompare.operators.sparse`), the symbolic nonzero entries
(:mod:`~diffcompare.operators.symbolic_sparse`) and the peers
(:mod:`~diffcompare.operators.peers`)."""
from __future__ import annotations

import dataclasses

#: how a sparse Jacobian's products run: the direction with fewer colours, or the one named
MODES = ("auto", "forward", "reverse")


@dataclasses.dataclass(frozen=True)
class SparseOperator:
    """A sparse Jacobian or Hessian and how it was made: ``matrix`` (``scipy.sparse.csr_array``,
    float64), the ``pattern`` and ``colouring`` used, ``mode`` (forward, reverse,
    forward-over-reverse, or a difference scheme), ``passes`` (products or function calls),
    and the seconds of each step: ``detect_s``, ``colour_s`` (``prepare_s``: the structure's
    part of preparing, reusable for new inputs of the same structure; the method's own
    product is prepared apart, :attr:`SparsePrepared.prepare_s` counts both) and
    ``evaluate_s``."""

    operator: str
    method: str
    matrix: object
    pattern: object
    colouring: object
    mode: str
    passes: int
    detect_s: float
    colour_s: float
    evaluate_s: float

    @property
    def prepare_s(self) -> float:
        return self.detect_s + self.colour_s


@dataclasses.dataclass
class SparsePrepared:
    """The prepare phase of a sparse operator: the ``pattern`` (detected in ``detect_s``), its
    ``colouring`` (``colour_s``; None for a symbolic method's nonzero entries), the ``mode`` chosen and the method's product prepared
    (``prepare_s`` counts all three); ``evaluate()`` runs the compressed products and
    decompresses them: a :class:`SparseOperator`."""

    operator: str
    method: str
    pattern: object
    colouring: object
    mode: str
    detect_s: float
    colour_s: float
    prepare_s: float
    _compress: object = dataclasses.field(repr=False)

    def evaluate(self) -> SparseOperator:
        result = self._compress()
        return SparseOperator(self.operator, self.method, result.matrix, self.pattern,
                              result.colouring, self.mode, result.passes, self.detect_s,
                              self.colour_s, result.seconds)
