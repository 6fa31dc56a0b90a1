"""Matrix product with NumPy's ``matmul`` semantics (vectors, batches, broadcasting)."""
from __future__ import annotations

import numpy as np

from ..function import Function
from . import dual


class Matmul(Function):
    """``a @ b``.  Gradients: ``g @ b^T`` and ``a^T @ g`` (seed 001's ``inp.g = out.g @ w.t()``),
    with vectors treated as 1-row / 1-column matrices and batch dims summed back."""

    def forward(self, a, b):
        if a.ndim == 0 or b.ndim == 0:
            raise ValueError(
                f"matmul needs operands with at least 1 dimension, got shapes {a.shape} and "
                f"{b.shape}; use * to multiply by a scalar."
            )
        inner_b = b.shape[-2] if b.ndim > 1 else b.shape[0]
        if a.shape[-1] != inner_b:
            raise ValueError(
                f"matmul shape mismatch: {a.shape} @ {b.shape}. The last dim of the left "
                f"operand ({a.shape[-1]}) must equal the {'second-to-last' if b.ndim > 1 else 'only'} "
                f"dim of the right operand ({inner_b}); transpose one of them (x.T or x.mT) "
                "or fix the layer sizes."
            )
        self.shapes = (a.shape, b.shape)
        self.save_for_backward(self=a if self.needs(1) else None,
                               other=b if self.needs(0) else None)
        return np.matmul(a.data, b.data)

    def backward(self, g):
        saved = self.saved_by_name()
        a_shape, b_shape = self.shapes
        need_a, need_b = self.needs_input_grad
        # Promote vectors to matrices the way matmul does, so one formula serves all.
        a2_shape = (1,) + a_shape if len(a_shape) == 1 else a_shape
        b2_shape = b_shape + (1,) if len(b_shape) == 1 else b_shape
        if len(a_shape) == 1 or len(b_shape) == 1:
            g = g.reshape(np.broadcast_shapes(a2_shape[:-2], b2_shape[:-2]) + (a2_shape[-2], b2_shape[-1]))
        ga = gb = None
        if need_a:
            b = saved["other"].reshape(b2_shape)
            ga = dual.sum_to(g @ b.swapaxes(-1, -2), a2_shape).reshape(a_shape)
        if need_b:
            a = saved["self"].reshape(a2_shape)
            gb = dual.sum_to(a.swapaxes(-1, -2) @ g, b2_shape).reshape(b_shape)
        return ga, gb
