"""How a tensor prints: PyTorch's own rules (``torch/_tensor_str.py``), over NumPy.

Four significant decimals, scientific notation when the finite non-zero magnitudes span
more than a factor 1000 or leave [1e-4, 1e8], whole numbers as ``1.``, rows wrapped at 80
columns and arrays of more than 1000 elements summarized with ``...``, so that a learner's
output on the engine reads like the forum thread it came from::

    tensor([ 1.,  2.,  3.], requires_grad=True)
    tensor(0.2929, grad_fn=<MeanBackward0>)
    tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])

>>> import numpy as np
>>> tensor_str(np.arange(10, dtype=np.float32) / 3, indent=len("tensor("))
'[0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\\n        3.0000]'

One difference from PyTorch, where the engine has one Tensor class for NumPy-style and
torch-style code: PyTorch adds ``dtype=torch.float64`` to a double tensor's repr (its
default is float32); the engine, whose NumPy-style default is float64, prints float32 and
float64 tensors without the suffix (see :func:`dtype_suffix`).
"""
from __future__ import annotations

import math

import numpy as np

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80

#: dtypes printed without a ``dtype=`` suffix: PyTorch's defaults (float32, int64, bool)
#: and the engine's own default, float64.
_DEFAULT_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int64, np.bool_))


def torch_dtype_name(dtype) -> str:
    """``torch.float32`` for NumPy's float32, as PyTorch spells its dtypes."""
    dtype = np.dtype(dtype)
    return "torch.bool" if dtype == np.bool_ else f"torch.{dtype.name}"


def dtype_suffix(dtype) -> str | None:
    """``dtype=torch.int32`` where the repr shows the dtype, else None."""
    dtype = np.dtype(dtype)
    return None if dtype in _DEFAULT_DTYPES else f"dtype={torch_dtype_name(dtype)}"


class _Formatter:
    """PyTorch's ``_Formatter``: one width and one mode for all of a tensor's elements."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind in "fc"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(self._plain(v)))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        mags = np.abs(finite).astype(np.float64)
        lo, hi = float(mags.min()), float(mags.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        for v in finite.tolist():
            if self.sci_mode:
                width = len(f"{v:.{PRECISION}e}")
            elif self.int_mode:
                width = len(f"{v:.0f}") + 1
            else:
                width = len(f"{v:.{PRECISION}f}")
            self.max_width = max(self.max_width, width)

    @staticmethod
    def _plain(v) -> str:
        return str(v) if not isinstance(v, bool) else ("True" if v else "False")

    def format(self, v) -> str:
        if self.floating:
            if self.sci_mode:
                s = f"{v:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                s = f"{v:.0f}"
                if not (math.isinf(v) or math.isnan(v)):
                    s += "."
            else:
                s = f"{v:.{PRECISION}f}"
        else:
            s = self._plain(v)
        return (self.max_width - len(s)) * " " + s


def _summarized(a: np.ndarray) -> np.ndarray:
    """The elements a summarized print shows (PyTorch's ``get_summarized_data``)."""
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * EDGEITEMS:
        a = np.concatenate([a[:EDGEITEMS], a[-EDGEITEMS:]])
    if a.ndim == 1:
        return a
    return np.stack([_summarized(x) for x in a])


def _vector(a, indent, summarize, fmt) -> str:
    per_line = max(1, math.floor((LINEWIDTH - indent) / (fmt.max_width + 2)))
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        items = ([fmt.format(v) for v in a[:EDGEITEMS].tolist()] + [" ..."]
                 + [fmt.format(v) for v in a[-EDGEITEMS:].tolist()])
    else:
        items = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a, indent, summarize, fmt) -> str:
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt)
    n = a.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        parts = ([_nested(a[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)] + ["..."]
                 + [_nested(a[i], indent + 1, summarize, fmt) for i in range(n - EDGEITEMS, n)])
    else:
        parts = [_nested(a[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def tensor_str(values, indent: int = 0) -> str:
    """The bracketed body of a tensor's repr, as PyTorch writes it."""
    a = np.asarray(values)
    if a.size == 0:
        return "[]"
    if a.dtype.kind == "c":          # complex: PyTorch's separate real/imag widths, simplified
        a = a.astype(np.complex128)
    summarize = a.size > THRESHOLD
    fmt = _Formatter(_summarized(a) if summarize else a)
    return _nested(a, indent, summarize, fmt)


def add_suffixes(text: str, suffixes: list, indent: int) -> str:
    """``tensor(...)`` closed with its suffixes, wrapped at 80 columns as PyTorch does."""
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(values, grad_fn_name: str | None, requires_grad: bool) -> str:
    """``tensor([1., 2.], requires_grad=True)``: the whole repr."""
    a = np.asarray(values)
    prefix = "tensor("
    suffixes = []
    if a.size == 0 and a.ndim != 1:
        suffixes.append(f"size={tuple(a.shape)}")
    dtype = dtype_suffix(a.dtype)
    if dtype:
        suffixes.append(dtype)
    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return add_suffixes(prefix + tensor_str(a, len(prefix)), suffixes, len(prefix))
