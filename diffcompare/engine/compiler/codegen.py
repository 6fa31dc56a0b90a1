"""From a trace to a readable straight-line NumPy function.

Steps no output needs are dropped (dead-step elimination); common
subexpressions were already merged when recorded and constants folded by
NumPy at trace time.  Each remaining step becomes one assignment, named after
the user's arguments (``g_W1`` is the gradient for ``W1``; ``g_t5`` the gradient
arriving at the intermediate ``t5``).  Cheap views (``W.T``) and single-use
comparisons (``h > 0``) are written inline where they are used.

The program that runs (``source``; ``without_reuse`` gives the readable one) also
saves calls where a step costs more in NumPy's per-call overhead than in arithmetic:
dead operands' buffers are written in place, number operands are 0-d arrays made
once, a broadcast that the elementwise step does anyway is left to it, the
gradient of slices that tile an array is one ``np.concatenate``, and a row added
into on every step of an unrolled loop is a view made once.
"""
from __future__ import annotations

import linecache
import itertools

import numpy as np

from .tracer import GuardFailed, Tracer, is_uniform
from ..kernels import NUMPY_EQUIVALENTS
from .tracing import KERNELS

_BINARY = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "pow": "**", "matmul": "@",
           "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "and": "&",
           "or": "|"}
_INLINE_ALWAYS = {("method", "T")}
_INLINE_ONCE = {"lt", "le", "gt", "ge", "eq", "ne", "neg", "invert"}
_VIEWS = {("method", "T"), ("method", "reshape"), ("method", "transpose"), ("method", "swapaxes"),
          "getitem", ("call", "broadcast_to"), ("call", "transpose"), ("call", "moveaxis"),
          ("call", "split"), ("call", "squeeze"), ("call", "expand_dims"), ("call", "reshape"),
          ("call", "flip"), ("call", "diagonal")}
#: calls whose constant operands keep their shape (an einsum's ones(n) is not the number 1.0)
_SHAPED_CALLS = {"einsum", "tensordot", "kron", "inner", "outer", "dot", "vdot", "cross", "trace",
                 "diagonal", "matrix_transpose"}
_AUGMENTED = {"add": "+=", "sub": "-=", "mul": "*=", "truediv": "/=", "pow": "**="}
_OPERATOR_UFUNCS = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
                    "pow": "power", "neg": "negative"}
_ELEMENTWISE_UFUNCS = {"exp", "log", "sqrt", "sin", "cos", "tanh", "maximum", "minimum", "absolute",
                       "negative", "sign", "add", "subtract", "multiply", "true_divide", "power"}
# NumPy's wider elementwise math (issue 19): float in, float out, so a dead operand's buffer serves
_ELEMENTWISE_UFUNCS |= {"exp2", "expm1", "log2", "log10", "log1p", "sinh", "cosh", "tan", "arcsin",
                        "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "ceil", "floor", "rint",
                        "trunc", "reciprocal", "cbrt", "deg2rad", "rad2deg", "arctan2", "logaddexp",
                        "logaddexp2", "remainder", "fmod", "fmax", "fmin", "hypot", "floor_divide"}


def ufunc_of(s):
    """The NumPy ufunc an elementwise step calls (None for any other step)."""
    if s.op in _OPERATOR_UFUNCS:
        return _OPERATOR_UFUNCS[s.op]
    if type(s.op) is tuple and s.op[0] == "ufunc" and s.op[2] == "__call__" and s.op[1] in _ELEMENTWISE_UFUNCS:
        return s.op[1]
    return None


def _fresh(step):
    """Whether the step's result is a new array nobody else holds (safe to overwrite)."""
    return (ufunc_of(step) is not None or step.op == "matmul" or step.op[0] in ("reduce", "kernel")
            or step.op in (("call", "where"), ("method", "astype"), ("method", "copy")))
_COUNTER = itertools.count()


def live_steps(outputs, include_guards, steps):
    """Steps needed for ``outputs`` (Tracers), plus guards if asked, in recorded order."""
    live = set()
    stack = [t.step for t in outputs if type(t) is Tracer and t.step is not None]
    if include_guards:
        stack += [s for s in steps if s.op == "guard"]
    while stack:
        s = stack.pop()
        if id(s) in live:
            continue
        live.add(id(s))
        stack.extend(t.step for t in s.tracers() if t.step is not None)
    return [s for s in steps if id(s) in live]


class Program:
    """One generated function: its source, its compiled code, and facts about it."""

    def __init__(self, trace, outputs, out_names, func_name, grad_names=None, value_only=False,
                 reuse_buffers=True):
        self.trace = trace
        self.value_only = value_only
        self._spec = (outputs, out_names, func_name, grad_names)
        phases = ("forward",) if value_only else ("forward", "backward")
        self.steps = live_steps(outputs, True, [s for s in trace.steps if s.phase in phases])
        self.namespace = {"np": np, "_Retrace": GuardFailed, **KERNELS}
        self._names = {}
        self._uses = {}
        # a returned value is assigned its name, even a view written inline elsewhere (x.T)
        self._outputs = {id(t) for t in outputs if type(t) is Tracer}
        for s in self.steps:
            for t in s.tracers():
                self._uses[id(t)] = self._uses.get(id(t), 0) + 1
        self._consts = {}
        # the program that runs passes its number operands as 0-d arrays (see _scalar)
        self._zero_d = reuse_buffers
        self.scatter, self.skip, self.tiles = {}, set(), {}
        # a broadcast that an elementwise step would do anyway reads its source (see _spread)
        self.spread = self._spread() if reuse_buffers else {}
        self.reuse = self._plan_reuse(outputs) if reuse_buffers else {}
        self._assign_names(outputs, out_names, grad_names or {})
        self.source = self._write(func_name, outputs, out_names)
        filename = f"<diffcompare.compile {func_name} #{next(_COUNTER)}>"
        linecache.cache[filename] = (len(self.source), None, self.source.splitlines(True), filename)
        exec(compile(self.source, filename, "exec"), self.namespace)
        self.fn = self.namespace[func_name]

    # --- names --------------------------------------------------------------------
    def _assign_names(self, outputs, out_names, grad_names):
        taken = set()

        def take(t, name):
            base, k = name, 1
            while name in taken:
                k += 1
                name = f"{base}_{k}"
            taken.add(name)
            self._names[id(t)] = name

        for a in self.trace.args:
            take(a, a.name)
        for t, name in zip(outputs, out_names):
            if type(t) is Tracer and t.step is not None and id(t) not in self._names:
                take(t, name)
        counter = itertools.count(1)
        for s in self.steps:
            if s.op == "guard":
                continue
            for t in s.outs:
                if id(t) in self._names or self._inlined(t) or id(t) in self.spread:
                    continue
                hit = grad_names.get(id(t))
                x = self.reuse.get(id(s))
                if x is not None and (hit is None or s.phase != "backward"):
                    self._names[id(t)] = self._names[id(x)]     # written into x's buffer
                elif hit is not None and id(hit[1]) in self._names and s.phase == "backward":
                    take(t, "g_" + self._names[id(hit[1])])
                else:
                    take(t, f"t{next(counter)}")

    def without_reuse(self) -> "Program":
        """The same steps with one name per value and no buffer written twice (for reading)."""
        outputs, out_names, func_name, grad_names = self._spec
        return Program(self.trace, outputs, out_names, func_name, grad_names, self.value_only,
                       reuse_buffers=False)

    def _plan_reuse(self, outputs):
        """Elementwise steps that may write into an operand's buffer: the operand is a fresh
        array of the same shape and dtype, this step is its last use, nothing views it, and it
        is not an output.  ``{id(step): operand}``.

        Also ``a + index_add(g, key)`` (the backward of basic indexing, zeros with ``g`` at
        ``key``) becomes ``a[key] += g`` when ``a``'s buffer can be reused: no zeros array
        per slice (``self.scatter``: step -> the index_add step folded into it).  An
        accumulating scatter (advanced indexing) stays the kernel's call, whose row
        scatter is faster than ``np.add.at`` into ``a``.  Where such slices tile the whole
        array, the sum is one ``np.concatenate`` of them (``self.tiles``, see ``_tiles``)."""
        last, viewed = {}, set()
        for i, s in enumerate(self.steps):
            for t in s.tracers():
                last[id(t)] = i
            if s.op in _VIEWS:
                viewed.update(id(t) for t in s.tracers())
        protected = {id(o) for o in outputs if type(o) is Tracer}
        self.tiles = self._tiles(protected, viewed)
        position = {id(s): i for i, s in enumerate(self.steps)}
        for sid, (_, pieces, chain) in self.tiles.items():
            for g in pieces:
                if type(g) is Tracer:          # read by the concatenate, at the chain's end
                    last[id(g)] = max(last[id(g)], position[sid])
            self.skip.update(chain)
        scatter = {}
        for i, s in enumerate(self.steps):
            if id(s) in self.skip or id(s) in self.tiles:
                continue
            if s.op == "add" and len(s.args) == 2:
                for x, y in (s.args, s.args[::-1]):
                    if (type(x) is Tracer and type(y) is Tracer and x is not y and y.step is not None
                            and y.step.op == ("kernel", "index_add") and not y.step.args[3]
                            and self._uses.get(id(y)) == 1
                            and id(y) not in protected and type(y.step.args[0]) is Tracer):
                        scatter[id(s)] = (x, y.step)
                        g = y.step.args[0]
                        last[id(g)] = max(last[id(g)], i)      # g is now read here
                        break
        reuse = {}
        for i, s in enumerate(self.steps):
            if ufunc_of(s) is None or len(s.outs) != 1 or s.outs[0].ndim == 0 \
                    or id(s) in self.skip or id(s) in self.tiles:
                continue
            out = s.outs[0]
            preferred = [scatter[id(s)][0]] if id(s) in scatter else []
            for x in preferred + list(s.args):
                if (type(x) is Tracer and x.step is not None and _fresh(x.step) and x.ndim
                        and last[id(x)] == i and id(x) not in viewed and id(x) not in protected
                        and x.shape == out.shape and x.dtype == out.dtype and not self._inlined(x)):
                    reuse[id(s)] = x
                    break
        self.scatter = {k: v[1] for k, v in scatter.items() if reuse.get(k) is v[0]}
        self.skip.update(id(step) for step in self.scatter.values())
        return reuse

    def _tiles(self, protected, viewed):
        """Chains ``index_add(g1, k1) + index_add(g2, k2) + ...`` (the gradient of an array
        sliced into parts: zeros, then each part's gradient written at its slice) whose
        slices tile the array along one axis: ``{id(last add): (axis, [g in order],
        ids of the chain's other steps)}``, written as ``np.concatenate(gs, axis)`` --
        one call for the zeros and a write per slice."""
        def piece(t):
            s = t.step
            if (s is not None and s.op == ("kernel", "index_add") and not s.args[3]
                    and self._uses.get(id(t)) == 1 and id(t) not in protected):
                return s
            return None

        chains, ended = {}, {}
        for s in self.steps:
            if s.op == ("kernel", "index_add") and piece(s.outs[0]) is s:
                chains[id(s.outs[0])] = ([s], [id(s)])
            elif s.op == "add" and len(s.args) == 2 and all(type(a) is Tracer for a in s.args):
                for x, y in (s.args, s.args[::-1]):
                    if id(x) in chains and x is not y and piece(y) is not None \
                            and self._uses.get(id(x)) == 1 and id(x) not in protected \
                            and id(x) not in viewed:
                        parts, ids = chains.pop(id(x))
                        chains[id(s.outs[0])] = (parts + [y.step], ids + [id(y.step), id(s)])
                        ended[id(s.outs[0])] = s
                        break
        tiles = {}
        for out_id, (parts, ids) in chains.items():
            last = ended.get(out_id)
            if last is None:
                continue
            tiled = _tiling([p.args[1] for p in parts], last.outs[0].shape)
            if tiled is None:
                continue
            axis, order = tiled
            gs = [parts[k].args[0] for k in order]
            out = last.outs[0]
            room = np.broadcast_to(np.empty((), out.dtype), out.shape)     # no memory
            if any(type(g) is not Tracer or g.shape != room[p.args[1]].shape or g.dtype != out.dtype
                   for g, p in zip(gs, (parts[k] for k in order))):
                continue
            tiles[id(last)] = (axis, gs, [i for i in ids if i != id(last)])
        return tiles

    def _spread(self):
        """``{id(view): source}`` for ``broadcast_to(x, shape)`` (and a reshape before it that
        only puts size-1 axes in front) whose every use is an operand of an elementwise step
        that broadcasts ``x`` to the same shape by itself: the step reads ``x`` (NumPy's own
        broadcasting; the wrapper's call and the reshape cost more than the arithmetic on
        small arrays)."""
        users = {}
        for s in self.steps:
            for t in s.tracers():
                users.setdefault(id(t), []).append(s)
        spread = {}
        for s in self.steps:
            if s.op != ("call", "broadcast_to") or type(s.args[0]) is not Tracer:
                continue
            b, x = s.outs[0], s.args[0]
            if id(b) in self._outputs or not all(self._reads_broadcast(u, b, x) for u in users.get(id(b), ())):
                continue
            views = [b]
            while (x.step is not None and x.step.op in (("method", "reshape"), ("call", "reshape"))
                   and self._uses.get(id(x)) == 1 and id(x) not in self._outputs
                   and type(x.step.args[0]) is Tracer):
                src = x.step.args[0]
                lead = x.ndim - src.ndim
                if lead < 0 or x.shape[lead:] != src.shape or any(n != 1 for n in x.shape[:lead]):
                    break
                views.append(x)
                x = src
            if x.step is not None and self._inlined(x):
                continue
            for v in views:
                spread[id(v)] = x
        return spread

    @staticmethod
    def _reads_broadcast(step, b, x):
        """Whether elementwise ``step`` gives the same result reading ``x`` where it reads
        ``b = broadcast_to(x, b.shape)``."""
        if ufunc_of(step) is None or any(v is b for v in step.kwargs.values()):
            return False
        shapes = [x.shape if a is b else np.shape(a) for a in step.args]
        try:
            return np.broadcast_shapes(*shapes) == step.outs[0].shape == b.shape
        except ValueError:
            return False

    def _inlined(self, t):
        op = t.step.op
        if id(t) in self._outputs:
            return False
        return op in _INLINE_ALWAYS or (op in _INLINE_ONCE and self._uses.get(id(t), 0) == 1)

    # --- expressions --------------------------------------------------------------
    def _const(self, c, dtype_like=None, scalar=False):
        """A constant operand: a literal when NumPy's promotion stays the same, else a name.
        ``scalar``: the operand of an elementwise step whose result has ``dtype_like`` and
        the shape of a traced operand (see ``_scalar``)."""
        if scalar and self._zero_d:
            name = self._scalar(c, dtype_like)
            if name is not None:
                return name
        if isinstance(c, (bool, int, float)) and not isinstance(c, np.generic):
            text = _literal(c)
            return text if c >= 0 or isinstance(c, bool) or c != c else f"({text})"
        if isinstance(c, np.dtype):
            return f"np.{c.name}"
        a = np.asarray(c)
        if dtype_like is not None and a.size >= 1 and is_uniform(a):
            v = a.reshape(-1)[0]
            if a.dtype == dtype_like and a.dtype.kind == "f" and np.isfinite(v):
                text = repr(float(v))
                return text if v >= 0 else f"({text})"
        if a.ndim == 0 and a.dtype.kind in "fiub":
            return f"np.{a.dtype.name}({_literal(a.item())})"
        key = id(c)
        if key not in self._consts:
            name = f"c{len(self._consts)}"
            self._consts[key] = name
            self.namespace[name] = c
        return self._consts[key]

    def _scalar(self, c, dtype):
        """A finite number operand (a Python number, or a uniform constant of ``dtype``) as
        the name of a 0-d array of float or complex ``dtype``, or None.  NumPy converts a
        Python number operand on every call (~0.2 us, as much again as a ufunc on 14
        elements); a 0-d array of the result's dtype gives the same numbers and dtype."""
        if dtype is None or dtype.kind not in "fc":
            return None
        if isinstance(c, (int, float)) and not isinstance(c, (bool, np.generic)):
            v = c
        else:
            a = np.asarray(c)
            if a.dtype != dtype or a.size < 1 or not is_uniform(a):
                return None
            v = a.reshape(-1)[0].item()
        if type(v) not in (int, float) or not np.isfinite(v):
            return None                 # -np.inf stays readable (rare in a hot loop)
        key = ("0d", dtype.str, v)
        if key not in self._consts:
            text = _literal(v).replace("-", "m").replace(".", "_").replace("+", "")
            name = f"c_{text}" + ("" if dtype == np.float64 else f"_{dtype.name}")
            while name in self.namespace or any(a.name == name for a in self.trace.args):
                name += "_"             # an argument of that name would hide it
            self._consts[key] = name
            self.namespace[name] = np.array(v, dtype)
        return self._consts[key]

    def _arg(self, x, dtype_like=None, operand=False, scalar=False):
        if type(x) is Tracer:
            x = self.spread.get(id(x), x)
            name = self._names.get(id(x))
            if name is not None:
                return name
            text = self._expr(x.step)
            return f"({text})" if operand and x.step.op not in _INLINE_ALWAYS else text
        if type(x) is tuple:
            inner = ", ".join(self._arg(v) for v in x)
            return f"({inner},)" if len(x) == 1 else f"({inner})"
        if type(x) is list:
            return "[" + ", ".join(self._arg(v) for v in x) + "]"
        if x is None or x is Ellipsis or type(x) is str:   # (np.argsort's kind="stable")
            return repr(x)
        if type(x) is slice:
            return f"slice({x.start!r}, {x.stop!r}, {x.step!r})"
        if type(x) is np.ufunc:
            return f"np.{x.__name__}"
        return self._const(x, dtype_like, scalar)

    def _key(self, key):
        items = key if type(key) is tuple else (key,)
        if len(items) > 1 and items[-1] is Ellipsis and all(type(k) is slice for k in items[:-1]):
            items = items[:-1]                  # x[1:, ...] is x[1:]
        parts = []
        for k in items:
            if type(k) is slice:
                parts.append(":".join("" if v is None else repr(v) for v in (k.start, k.stop))
                             + ("" if k.step is None else f":{k.step!r}"))
            elif k is Ellipsis:
                parts.append("...")
            elif k is None:
                parts.append("None")
            else:
                parts.append(self._arg(k))
        return ", ".join(parts) if parts else "()"

    def _expr(self, s):
        op, args, kw = s.op, s.args, s.kwargs
        tracer_dtype = next((a.dtype for a in args if type(a) is Tracer), None)
        if op in _BINARY:
            out_shape = s.outs[0].shape
            # a constant that is one repeated number is written as that number, when the
            # traced operand already has the result's shape (broadcasting changes nothing)
            like = tracer_dtype if op != "matmul" and any(
                type(a) is Tracer and a.shape == out_shape for a in args) else None
            scalar = op != "pow" and like is not None and s.outs[0].dtype == like
            a, b = (self._arg(x, like, operand=True, scalar=scalar) for x in args)
            return f"{a} {_BINARY[op]} {b}"
        if op == "neg":
            return f"-{self._arg(args[0], operand=True)}"
        if op == "invert":
            return f"~{self._arg(args[0], operand=True)}"
        if op == "getitem":
            return f"{self._arg(args[0], operand=True)}[{self._key(args[1])}]"
        kind = op[0]
        if kind == "method":
            target = self._arg(args[0], operand=True)
            if op[1] == "T":
                return f"{target}.T"
            rest = ", ".join(self._arg(x) for x in args[1:])
            if op[1] == "reshape":
                rest = self._arg(args[1])
            return f"{target}.{op[1]}({rest})"
        if kind == "reduce":
            a, axis, keepdims = args
            opts = [] if axis is None else [f"axis={self._arg(axis)}"]
            if keepdims:
                opts.append("keepdims=True")
            return f"{self._arg(a, operand=True)}.{op[1]}({', '.join(opts)})"
        call = {"ufunc": lambda: f"np.{op[1]}" + ("" if op[2] == "__call__" else f".{op[2]}"),
                "call": lambda: op[1] if op[1] in NUMPY_EQUIVALENTS else f"np.{op[1]}",
                "kernel": lambda: op[1]}[kind]()
        if kind == "kernel" or (kind == "call" and (op[1] in _SHAPED_CALLS or op[1].startswith("linalg."))):
            tracer_dtype = None     # a constant's shape matters: never written as one number
        scalar = ufunc_of(s) not in (None, "power") and s.outs[0].dtype == tracer_dtype and any(
            type(a) is Tracer and a.shape == s.outs[0].shape for a in args)
        parts = [self._arg(x, tracer_dtype, scalar=scalar) for x in args]
        parts += [f"{k}={self._arg(v)}" for k, v in kw.items()]
        return f"{call}({', '.join(parts)})"

    # --- the function -------------------------------------------------------------
    def _write(self, func_name, outputs, out_names):
        params = ", ".join(a.name for a in self.trace.args)
        lines = [f"def {func_name}({params}):"]
        views = self._part_views()
        phase = None
        for s in self.steps:
            if s.phase != phase and s.phase == "backward":
                lines.append("    # backward: the recorded graph in reverse order")
            phase = s.phase
            if s.op == "guard":
                cond, expected = s.args
                test = self._arg(cond, operand=True)
                lines.append(f"    if {'not ' if expected else ''}{test}:"
                             f"  # guard: the branch taken at {s.line}")
                lines.append(f"        raise _Retrace({s.line!r})")
                continue
            if all(self._inlined(t) or id(t) not in self._names for t in s.outs) and s.outs:
                if any(self._inlined(t) for t in s.outs):
                    continue
            targets = ", ".join(self._names.get(id(t), "_") for t in s.outs)
            if id(s) in self.skip or (s.outs and all(id(t) in self.spread for t in s.outs)):
                continue
            if id(s) in self.tiles:                       # the parts' gradients side by side
                axis, gs, _ = self.tiles[id(s)]
                lines.append(f"    {targets} = np.concatenate({self._arg(list(gs))}, {axis})")
                continue
            if id(s) in self.scatter:                    # a[key] += g: the index_add folded in
                g, key, _, _ = self.scatter[id(s)].args
                buf = self._names[id(self.reuse[id(s)])]
                part = views.get((buf, self._key(key)))
                if part is not None:                     # a view made once, added into often
                    if part[1]:
                        lines.append(f"    {part[0]} = {buf}[{self._key(key)}]")
                        part[1] = False
                    lines.append(f"    {part[0]} += {self._arg(g)}")
                else:
                    lines.append(f"    {buf}[{self._key(key)}] += {self._arg(g)}")
                if targets != buf:
                    lines.append(f"    {targets} = {buf}")
                continue
            if id(s) in self.reuse:
                lines.append("    " + self._in_place(s, targets))
                continue
            if s.op == ("kernel", "index_add") and not s.args[3]:   # zeros, g written at the slice
                g, key, shape, _ = s.args
                dtype = s.outs[0].dtype
                zeros = f"np.zeros({self._arg(shape)}" + ("" if dtype == np.float64 else f", np.{dtype.name}") + ")"
                lines.append(f"    {targets} = {zeros}")
                lines.append(f"    {targets}[{self._key(key)}] = {self._arg(g)}")
                continue
            if len(s.outs) == 1 and type(s.outs) is list and s.op == ("call", "split"):
                targets += ","
            lines.append(f"    {targets} = {self._expr(s)}")
        results = []
        for t, name in zip(outputs, out_names):
            results.append(self._result(t))
        if self.value_only:
            lines.append(f"    return {results[0]}")
        else:
            grads = ", ".join(results[1:]) + ("," if len(results) == 2 else "")
            lines.append(f"    return {results[0]}, ({grads})")
        return "\n".join(lines) + "\n"

    def _part_views(self):
        """``{(buffer, key): [view name, not yet made]}`` for the ``a[key] += g`` of
        ``self.scatter`` whose key repeats on the same buffer (a weight's gradient summed over
        an unrolled loop, row by row): ``a_k = a[key]`` once, then ``a_k += g`` (an in-place
        add, without indexing twice per call).  Only basic keys that select an array."""
        count = {}
        for sid, step in self.scatter.items():
            key = step.args[1]
            items = key if type(key) is tuple else (key,)
            if not all(k is Ellipsis or k is None or type(k) in (int, slice) for k in items):
                continue
            x = self.reuse[sid]
            if type(np.broadcast_to(np.empty((), x.dtype), x.shape)[key]) is not np.ndarray:
                continue                                 # a number (x[1] of a vector): no view
            k = (self._names[id(x)], self._key(key))
            count[k] = count.get(k, 0) + 1
        taken = set(self._names.values()) | set(self.namespace)
        views, n = {}, itertools.count()
        for k, c in count.items():
            if c > 1:
                name = f"{k[0]}_{next(n)}"
                while name in taken:
                    name = f"{k[0]}_{next(n)}"
                taken.add(name)
                views[k] = [name, True]
        return views

    def _in_place(self, s, target):
        """The step written into its operand's buffer: ``t1 += b1``, ``np.maximum(t1, 0, out=t1)``."""
        x = self.reuse[id(s)]
        buf = self._names[id(x)]
        args = list(s.args)
        if target == buf and s.op in _AUGMENTED and len(args) == 2:
            if args[1] is x and s.op in ("add", "mul"):      # commutative: exactly the same numbers
                args.reverse()
            if args[0] is x:
                scalar = s.op != "pow"      # x has the result's shape and dtype
                return f"{buf} {_AUGMENTED[s.op]} {self._arg(args[1], x.dtype, operand=True, scalar=scalar)}"
        out_shape = s.outs[0].shape
        like = next((a.dtype for a in args if type(a) is Tracer and a.shape == out_shape), None)
        scalar = ufunc_of(s) != "power" and like == s.outs[0].dtype
        call = f"np.{ufunc_of(s)}({', '.join(self._arg(a, like, scalar=scalar) for a in args)}"
        call += "".join(f", {k}={self._arg(v)}" for k, v in s.kwargs.items()) + f", out={buf})"
        return call if target == buf else f"{target} = {call}"

    def _result(self, t):
        if t is None:
            return "None"
        if type(t) is not Tracer:
            return f"np.array({self._const(t)})"
        name = self._arg(t)
        if t.step is None or t.step.op in _VIEWS:       # never hand out an input or a view of one
            return f"np.array({name})"
        return name


def slice_cut(key, shape):
    """``(axis, start, stop)`` when ``key`` is a non-empty step-1 slice of one axis of
    ``shape`` (the other axes whole, an ``...`` allowed), else None.

    >>> slice_cut((Ellipsis, slice(2, 5)), (3, 8)), slice_cut(slice(0, 3), (3, 8))
    ((1, 2, 5), None)
    """
    items = key if type(key) is tuple else (key,)
    if sum(k is Ellipsis for k in items) > 1 or not all(type(k) is slice or k is Ellipsis for k in items):
        return None
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items = items[:at] + (slice(None),) * (len(shape) - len(items) + 1) + items[at + 1:]
    if len(items) > len(shape):
        return None
    items = items + (slice(None),) * (len(shape) - len(items))
    cut = [(d, k.indices(n)) for d, (k, n) in enumerate(zip(items, shape)) if k.indices(n) != (0, n, 1)]
    if len(cut) != 1 or cut[0][1][2] != 1 or cut[0][1][1] <= cut[0][1][0]:
        return None
    return cut[0][0], cut[0][1][0], cut[0][1][1]


def _tiling(keys, shape):
    """``(axis, order)`` when the basic-slice ``keys`` cut ``shape`` into parts along one
    axis that cover it exactly (``order``: the keys by position), else None."""
    cuts = [slice_cut(key, shape) for key in keys]
    if None in cuts or len({axis for axis, _, _ in cuts}) != 1:
        return None
    axis = cuts[0][0]
    order = sorted(range(len(keys)), key=lambda k: cuts[k][1:])
    edge = 0
    for k in order:
        _, start, stop = cuts[k]
        if start != edge:
            return None
        edge = stop
    return (axis, order) if edge == shape[axis] else None


def _literal(v) -> str:
    """Python source for a number; infinities and NaN as ``np.inf`` / ``np.nan``."""
    if isinstance(v, float) and not np.isfinite(v):
        return "np.nan" if v != v else ("np.inf" if v > 0 else "-np.inf")
    return repr(v)
