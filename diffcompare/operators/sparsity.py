"""Sparsity patterns of Jacobians and Hessians, detected structurally from one evaluation.

The function ``fn(xp, *inputs)`` (the xp contract) runs once on the engine with the
differentiated inputs held as the compiler's ``Tracer``s (``engine/compiler/tracer.py``), so
every NumPy call the engine's own op formulas make is recorded as one step.  The steps are
then replayed on *dependency matrices*: each value gets a boolean sparse matrix with one row
per element and one column per differentiated input element (index-set propagation).  Each
step's rule builds a selection matrix ``S`` (output element -> operand elements it reads) and
the output's dependencies are ``S @ vstack(operand dependencies)``:

- elementwise ops: the broadcast operands' elements at the same position (union);
- moves (indexing, reshape, transpose, concatenate, stack, split, take, pad, ...): the op run
  on an array of element *positions* says where each output element comes from (exact);
- reductions and scans: union along the reduced axes; matmul and einsum: the structural
  product over the contracted indices; the backward's scatter (``index_add``): follows the key;
- results that are not floating point (comparisons, ``floor``, ``sign``) carry no dependency;
- anything else: every output element depends on every element of every operand (dense,
  conservative), and the op is listed in ``Pattern.conservative``.

Selections that depend on values (``where``, ``maximum``, ``max``, ``clip`` with traced bounds)
take the union of the candidates, so the pattern holds at every point, not just this one;
they are listed as conservative when more than one candidate carries dependencies.  A Python
branch on a traced value (``if x.sum() > 0``) follows the branch taken at these inputs.

>>> import numpy as np
>>> def f(xp, x):
...     return xp.concatenate([x[1:] * x[:-1], xp.sum(x, axis=0, keepdims=True)])
>>> p = jacobian_pattern(f, (np.arange(1.0, 5.0),))
>>> p.matrix.toarray().astype(int)
array([[1, 1, 0, 0],
       [0, 1, 1, 0],
       [0, 0, 1, 1],
       [1, 1, 1, 1]])
>>> p.conservative
[]
>>> hessian_pattern(lambda xp, x: xp.sum(x[1:] * x[:-1]), (np.ones(3),)).matrix.toarray().astype(int)
array([[0, 1, 0],
       [1, 0, 1],
       [0, 1, 0]])
"""
from __future__ import annotations

import dataclasses
import operator
import string
import time

import numpy as np
import scipy.sparse as sp

__all__ = ["Pattern", "jacobian_pattern", "hessian_pattern"]


@dataclasses.dataclass(frozen=True)
class Pattern:
    """A structural sparsity pattern.

    ``matrix``: ``scipy.sparse.csr_array`` of bool, shape ``(n_out, n_in)`` (rows: the output
    flattened; columns: the differentiated inputs flattened and concatenated in ``wrt``
    order).  ``conservative``: names of the ops where it was over-approximated (each once,
    in the order met).  ``seconds``: the time detection took (trace and propagation).
    """

    matrix: sp.csr_array
    conservative: list
    seconds: float

    @property
    def shape(self):
        return self.matrix.shape

    @property
    def nnz(self) -> int:
        return int(self.matrix.nnz)


def jacobian_pattern(fn, inputs, wrt=(0,)) -> Pattern:
    """The Jacobian's structural pattern of ``fn(xp, *inputs)`` w.r.t. ``inputs[i]``, i in ``wrt``."""
    start = time.perf_counter()
    trace, out, _, offsets = _record(fn, inputs, wrt, backward=False)
    prop = _Propagation(trace, offsets[-1])
    deps = prop.run([out])
    matrix = _as_pattern(deps[0], np.size(_value(out)), offsets[-1])
    return Pattern(matrix, prop.conservative, time.perf_counter() - start)


def hessian_pattern(fn, inputs, wrt=(0,)) -> Pattern:
    """The Hessian's structural pattern of a scalar ``fn``: the Jacobian pattern of its gradient.

    The engine's own backward runs on the traced values too, and the gradient's dependencies
    on the inputs are propagated through forward and backward steps alike; the result is made
    symmetric (the union with its transpose), which can only add entries.
    """
    start = time.perf_counter()
    trace, out, grads, offsets = _record(fn, inputs, wrt, backward=True)
    n_in = offsets[-1]
    prop = _Propagation(trace, n_in)
    deps = prop.run(list(grads))
    blocks = [_as_pattern(d, offsets[k + 1] - offsets[k], n_in) for k, d in enumerate(deps)]
    h = sp.vstack(blocks, format="csr") if blocks else sp.csr_array((0, 0), dtype=bool)
    h = (h + h.T).tocsr().astype(bool)
    return Pattern(sp.csr_array(h), prop.conservative, time.perf_counter() - start)


# --- recording ---------------------------------------------------------------------------

def _record(fn, inputs, wrt, backward):
    """Run ``fn`` on the engine with the ``wrt`` inputs traced; the other inputs are constants.

    Returns the trace, the output's data (a Tracer or a constant), the gradients' data per
    ``wrt`` input (when ``backward``) and the column offsets of the ``wrt`` inputs."""
    from ..engine import Tensor, array_api, autograd, grad_mode
    from ..engine.compiler.tracer import Trace
    from ..engine.compiler.tracing import recording_kernels, traced_tensor

    wrt = tuple(int(i) % len(inputs) for i in ((wrt,) if isinstance(wrt, int) else wrt))
    trace = Trace()
    trace.grad_names = {}
    offsets = [0]
    with recording_kernels(recorded=("index_add",)):
        tensors = []
        for i, a in enumerate(inputs):
            a = np.asarray(a)
            if i in wrt:
                t = traced_tensor(trace, a.astype(np.float64) if a.dtype.kind in "iub" else a,
                                  f"arg{i}")
                t.requires_grad = True
            else:
                t = Tensor(a)
            tensors.append(t)
        for i in wrt:
            offsets.append(offsets[-1] + np.asarray(inputs[i]).size)
        leaves = [tensors[i] for i in wrt]
        trace.args = [leaf.data for leaf in leaves]     # columns in wrt order
        with grad_mode.enable_grad():
            out = fn(array_api, *tensors)
        if not isinstance(out, Tensor):
            raise TypeError(f"the function returned a {type(out).__name__}, not a Tensor")
        grads = None
        if backward:
            if out.data.size != 1:
                raise ValueError(f"hessian_pattern needs a scalar function; this one returned "
                                 f"shape {tuple(out.shape)}")
            trace.phase = "backward"
            if out._requires_grad:
                grads = autograd.run_backward(out, leaves)
            else:
                grads = [None] * len(leaves)
            grads = [getattr(g, "data", g) for g in grads]
    return trace, out.data, grads, offsets


def _value(x):
    from ..engine.compiler.tracer import Tracer

    return x.value if type(x) is Tracer else np.asarray(x)


def _as_pattern(dep, n_rows, n_cols):
    if dep is None:
        return sp.csr_array((n_rows, n_cols), dtype=bool)
    return sp.csr_array(dep, dtype=bool)


# --- propagation -------------------------------------------------------------------------

#: elementwise ops whose derivative is zero wherever it exists: their results carry nothing
_PIECEWISE_CONSTANT = {"floor", "ceil", "trunc", "rint", "sign", "round", "around", "fix",
                       "isfinite", "isnan", "isinf", "signbit", "heaviside"}
#: value-dependent selections: the union of the candidates is taken
_SELECTIONS = {"where", "maximum", "minimum", "fmax", "fmin", "clip", "max", "min", "amax",
               "amin", "select"}
_BINARY = {"add", "sub", "mul", "truediv", "pow", "lt", "le", "gt", "ge", "eq", "ne", "and",
           "or", "neg", "invert"}
_REDUCTIONS = {"sum", "max", "min", "amax", "amin", "prod", "all", "any", "mean"}
_MOVES = {"getitem", "T", "reshape", "transpose", "swapaxes", "copy", "astype", "moveaxis",
          "broadcast_to", "squeeze", "expand_dims", "flip", "roll", "tile", "take",
          "take_along_axis", "diagonal", "tril", "triu", "pad", "concatenate", "stack",
          "split", "array_split", "unstack", "matrix_transpose", "repeat", "ravel"}
_ELEMENTWISE_CALLS = {"where", "clip", "exp", "log", "sinc", "nan_to_num", "sign", "isfinite",
                      "round", "around", "fix"}
#: a structural product bigger than this (entries of its full index space) goes dense
_MAX_PRODUCT = 20_000_000


class _Propagation:
    """Replays a trace's steps on dependency matrices (csr, bool, ``(value.size, n_in)``)."""

    def __init__(self, trace, n_in):
        self.trace, self.n_in = trace, n_in
        self.conservative = []
        self.deps = {}

    def note(self, name):
        if name not in self.conservative:
            self.conservative.append(name)

    def run(self, outputs):
        from ..engine.compiler.tracer import Tracer

        offset = 0
        for t in self.trace.args:
            n = t.value.size
            self.deps[id(t)] = sp.csr_array(
                (np.ones(n, bool), (np.arange(n), np.arange(offset, offset + n))),
                shape=(n, self.n_in))
            offset += n
        wanted = {id(o) for o in outputs if type(o) is Tracer}
        last_use = {}
        for k, step in enumerate(self.trace.steps):
            for t in step.tracers():
                last_use[id(t)] = k
        keep = {id(t) for t in self.trace.args} | wanted
        results = {}
        for k, step in enumerate(self.trace.steps):
            if step.op == "guard":
                continue
            for out, dep in zip(step.outs, self._step(step)):
                if dep is not None and dep.nnz:
                    self.deps[id(out)] = dep
                if id(out) in wanted:
                    results[id(out)] = self.deps.get(id(out))
            for t in step.tracers():      # free what no later step reads
                if last_use.get(id(t)) == k and id(t) not in keep:
                    self.deps.pop(id(t), None)
        for o in outputs:
            if type(o) is Tracer and id(o) not in results:
                results[id(o)] = self.deps.get(id(o))    # an argument returned as it is
        return [results.get(id(o)) if type(o) is Tracer else None for o in outputs]

    # --- one step ----------------------------------------------------------------------
    def _step(self, step):
        from ..engine.compiler.tracer import Tracer

        outs = [o.value for o in step.outs]
        sizes = [v.size for v in outs]
        op = step.op
        family, name = (op, op) if isinstance(op, str) else (op[0], op[1])
        if family == "ufunc" and op[2] != "__call__":
            family, name = "ufunc-method", f"{op[1]}.{op[2]}"
        data = [t for t in step.tracers() if id(t) in self.deps]
        if not data or all(v.dtype.kind not in "fc" for v in outs):
            return [None] * len(outs)
        if name in _PIECEWISE_CONSTANT:
            return [None] * len(outs)
        if len(outs) == 1 and outs[0].dtype.kind not in "fc":
            return [None]
        stacked, offsets = self._stack(data)
        pos = {id(t): off + 1 + np.arange(t.value.size).reshape(t.value.shape)
               for t, off in zip(data, offsets)}
        try:
            if name == "getitem" or (family in ("method", "call") and name in _MOVES):
                sel = self._move(step, pos)
            elif family == "ufunc" or name in _BINARY or name in _ELEMENTWISE_CALLS:
                sel = [self._elementwise(step, pos, outs[0].shape, name)]
            elif family == "reduce" or (family == "call" and name in _REDUCTIONS):
                sel = [self._reduce(step, pos, name)]
            elif name in ("cumsum", "cumprod") or name in ("add.accumulate", "multiply.accumulate"):
                sel = [self._scan(step, pos)]
            elif name in ("matmul", "einsum", "dot", "outer", "inner", "vdot", "tensordot", "trace"):
                sel = [self._contract(step, pos, name)]
            elif name == "index_add":
                sel = [self._scatter(step, pos)]
            else:
                sel = None
        except _Dense:
            sel = None
        if sel is None:
            self.note(name)
            cols = np.flatnonzero(np.asarray(stacked.sum(axis=0)).ravel())
            return [sp.csr_array((np.ones(n * cols.size, bool), np.tile(cols, n),
                                  np.arange(n + 1) * cols.size), shape=(n, self.n_in))
                    for n in sizes]
        return [None if s is None else _select(s, stacked, n) for s, n in zip(sel, sizes)]

    def _stack(self, data):
        mats = [self.deps[id(t)] for t in data]
        offsets = np.cumsum([0] + [m.shape[0] for m in mats])[:-1]
        return sp.csr_array(sp.vstack(mats, format="csr")), offsets

    # --- rules: each returns (rows, positions) pairs: output element -> operand position+1 --
    def _move(self, step, pos):
        """Run the op itself on the operands' positions (0: no element, e.g. padding)."""
        args = _substitute(step.args, pos, constants_as_zero=True)
        kwargs = {k: _substitute(v, pos, constants_as_zero=True) for k, v in step.kwargs.items()}
        op = step.op
        if op == "getitem":
            res = operator.getitem(*args)
        elif op[0] == "method":
            if op[1] == "T":
                res = args[0].T
            elif op[1] == "astype":
                res = args[0]
            else:
                res = getattr(args[0], op[1])(*args[1:], **kwargs)
        else:
            if op[1] == "pad" and "constant_values" in kwargs:
                kwargs["constant_values"] = 0
            res = getattr(np, op[1])(*args, **kwargs)
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        return [_pairs_from_positions(np.asarray(r)) for r in res]

    def _elementwise(self, step, pos, shape, name):
        from ..engine.compiler.tracer import Tracer

        operands = [pos[id(a)] for a in _flat(step.args, step.kwargs)
                    if type(a) is Tracer and id(a) in pos]
        if name in _SELECTIONS and len(operands) > 1:
            self.note(name)
        rows = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
        return _pairs([(rows, np.broadcast_to(p, shape)) for p in operands])

    def _reduce(self, step, pos, name):
        x = step.args[0]
        if step.op[0] == "reduce":
            axis, keepdims = step.args[1], step.args[2]
        else:
            axis = step.kwargs.get("axis", step.args[1] if len(step.args) > 1 else None)
            keepdims = step.kwargs.get("keepdims", False)
        p = pos.get(id(x))
        if p is None:
            raise _Dense
        axes = tuple(range(p.ndim)) if axis is None else tuple(
            a % p.ndim for a in ((axis,) if np.ndim(axis) == 0 else axis))
        kept = [d if i not in axes else 1 for i, d in enumerate(p.shape)]
        rows = np.arange(int(np.prod(kept, dtype=np.int64))).reshape(kept)
        if name in _SELECTIONS and any(p.shape[a] > 1 for a in axes):
            self.note(name)
        return _pairs([(np.broadcast_to(rows, p.shape), p)])

    def _scan(self, step, pos):
        """Cumulative sums and products: element j along the axis reads elements 0..j."""
        x = step.args[0]
        default = 0 if step.op[0] == "ufunc" else None
        axis = step.kwargs.get("axis", step.args[1] if len(step.args) > 1 else default)
        p = pos.get(id(x))
        if p is None:
            raise _Dense
        if axis is None:
            p, axis = p.reshape(-1), 0
        rows = np.moveaxis(np.arange(p.size).reshape(p.shape), axis, -1)
        p = np.moveaxis(p, axis, -1)
        return _pairs([(np.broadcast_to(rows[..., j:j + 1], p[..., :j + 1].shape), p[..., :j + 1])
                       for j in range(p.shape[-1])])

    def _contract(self, step, pos, name):
        """Structural product: the operands' positions over the full index space."""
        args = _substitute(step.args, pos, constants_as_zero=True)
        kwargs = step.kwargs
        if name == "einsum":
            spec = args[0]
            if set(kwargs) - {"optimize"} or not isinstance(spec, str) or "..." in spec:
                raise _Dense
            spec = spec.replace(" ", "")
            if "->" not in spec:            # implicit: the letters seen once, sorted
                letters = spec.replace(",", "")
                spec += "->" + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
            ins, out = spec.split("->")
            return _einsum_pairs(ins.split(","), out, args[1:])
        a, b = args[0], args[1]
        if name == "trace":
            offset = kwargs.get("offset", args[2] if len(args) > 2 else 0)
            d = np.diagonal(a, offset, *(args[3:5] if len(args) > 3 else (0, 1)))
            rows = np.arange(d[..., 0].size).reshape(d.shape[:-1])
            return _pairs([(np.broadcast_to(rows[..., None], d.shape), d)])
        if name in ("vdot",):
            return _einsum_pairs(["i", "i"], "", [a.reshape(-1), b.reshape(-1)])
        if name == "outer":
            return _einsum_pairs(["i", "j"], "ij", [a.reshape(-1), b.reshape(-1)])
        if name == "inner" and a.ndim and b.ndim:
            la, lb = _letters(a.ndim - 1, 0), _letters(b.ndim - 1, a.ndim - 1)
            return _einsum_pairs([la + "z", lb + "z"], la + lb, [a, b])
        if name == "tensordot":
            axes = kwargs.get("axes", args[2] if len(args) > 2 else 2)
            if np.ndim(axes) == 0:
                axes = (list(range(a.ndim - axes, a.ndim)), list(range(axes)))
            ax_a, ax_b = ([x] if np.ndim(x) == 0 else list(x) for x in axes)
            la, lb = list(_letters(a.ndim, 0)), list(_letters(b.ndim, a.ndim))
            for i, j in zip(ax_a, ax_b):
                lb[j] = la[i]
            out = [c for i, c in enumerate(la) if i not in [x % a.ndim for x in ax_a]]
            out += [c for j, c in enumerate(lb) if j not in [x % b.ndim for x in ax_b]]
            return _einsum_pairs(["".join(la), "".join(lb)], "".join(out), [a, b])
        if name == "dot" and (a.ndim == 0 or b.ndim == 0):
            shape = np.broadcast_shapes(a.shape, b.shape)
            rows = np.arange(int(np.prod(shape))).reshape(shape)
            return _pairs([(rows, np.broadcast_to(a, shape)), (rows, np.broadcast_to(b, shape))])
        if name in ("matmul", "dot", "inner") and (name == "matmul" or (a.ndim <= 2 and b.ndim <= 2)):
            if name == "inner":
                b = b.T
            a2 = a[None, :] if a.ndim == 1 else a
            b2 = b[:, None] if b.ndim == 1 else b
            batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
            a2 = np.broadcast_to(a2, batch + a2.shape[-2:])
            b2 = np.broadcast_to(b2, batch + b2.shape[-2:])
            lb = _letters(len(batch), 3)
            sel = _einsum_pairs([lb + "ik", lb + "kj"], lb + "ij", [a2, b2])
            return sel      # row order of batch+(n,m) equals the squeezed result's
        raise _Dense

    def _scatter(self, step, pos):
        g, key, shape, _ = step.args
        if id(g) not in pos or any(type(k).__name__ == "Tracer"
                                   for k in (key if isinstance(key, tuple) else (key,))):
            raise _Dense
        target = np.arange(int(np.prod(shape))).reshape(shape)[key]
        return _pairs([(target, np.broadcast_to(pos[id(g)], target.shape))])


class _Dense(Exception):
    """A rule does not cover this case: the step is treated densely."""


def _flat(args, kwargs):
    from ..engine.compiler.tracer import flatten

    return list(flatten((tuple(args), tuple(kwargs.values()))))


def _substitute(x, pos, constants_as_zero=False):
    """Arguments with data Tracers replaced by their positions, other Tracers by values."""
    from ..engine.compiler.tracer import Tracer

    t = type(x)
    if t is Tracer:
        if id(x) in pos:
            return pos[id(x)]
        if constants_as_zero and x.dtype.kind in "fc":     # a value with no dependencies
            return np.zeros(x.shape, dtype=np.int64)
        return x.value
    if t in (list, tuple):
        return t(_substitute(v, pos, constants_as_zero) for v in x)
    if constants_as_zero and isinstance(x, np.ndarray) and x.dtype.kind in "fc":
        return np.zeros(x.shape, dtype=np.int64)
    return x


def _letters(n, start):
    return string.ascii_letters[start:start + n]


def _einsum_pairs(ins, out, operands):
    """(output element, operand position) pairs of ``einsum(ins -> out)`` over its index space."""
    if any(len(set(s)) != len(s) for s in ins):
        raise _Dense
    dims = {}
    for s, o in zip(ins, operands):
        for c, d in zip(s, np.shape(o)):
            dims[c] = d
    letters = sorted(dims)
    if int(np.prod([dims[c] for c in letters], dtype=np.int64)) * len(ins) > _MAX_PRODUCT:
        raise _Dense
    full = tuple(dims[c] for c in letters)

    def spread(arr, s):
        arr = np.transpose(np.asarray(arr), [s.index(c) for c in letters if c in s])
        return np.broadcast_to(arr.reshape([dims[c] if c in s else 1 for c in letters]), full)

    rows = np.arange(int(np.prod([dims[c] for c in out], dtype=np.int64))).reshape(
        [dims[c] for c in out])
    rows = spread(rows, out)
    return _pairs([(rows, spread(o, s)) for s, o in zip(ins, operands)])


def _pairs(pairs):
    rows = np.concatenate([np.ravel(r) for r, _ in pairs]) if pairs else np.zeros(0, int)
    cols = np.concatenate([np.ravel(p) for _, p in pairs]) if pairs else np.zeros(0, int)
    return rows, cols


def _pairs_from_positions(p):
    return np.arange(p.size).reshape(p.shape), p


def _select(sel, stacked, n_out):
    """Dependencies of an output from its (row, position+1) pairs and the operands' stack."""
    rows, cols = np.ravel(sel[0]), np.ravel(sel[1]).astype(np.int64)
    keep = cols > 0
    s = sp.csr_array((np.ones(int(keep.sum()), bool), (rows[keep], cols[keep] - 1)),
                     shape=(n_out, stacked.shape[0]))
    return sp.csr_array(s @ stacked)
