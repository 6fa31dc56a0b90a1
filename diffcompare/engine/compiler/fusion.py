"""Side-by-side slices computed as one: a generation-time rewrite of a trace's steps.

A function that cuts an array into adjacent parts and runs the same elementwise
step on each (an LSTM's gates: ``sigmoid(gates[0:b])``, ``sigmoid(gates[b:2b])``,
...) makes one NumPy call per part.  On small arrays a call costs its dispatch, not
its arithmetic, so here the parts' steps become one step on the parts' union and
each part a view of its result:

    t1 = x[0:14] * 0.5; t2 = x[14:28] * 0.5     ->     t = x[0:28] * 0.5; t1 = t[0:14]; t2 = t[14:28]

and so on down the chain (the views no later step reads are dropped by dead-step
elimination).  A step fuses when, on every part of a run of adjacent parts, it is
the same elementwise operation with the same number operands, and its other array
operands are parts at the same positions of another such run (``g[0:14] + g[28:42]``
and ``g[14:28] + g[42:56]`` become ``g[0:28] + g[28:56]``).  Elementwise operations
compute each element from the same elements of their operands, so the numbers are
exactly those of the parts' steps.
"""
from __future__ import annotations

import numpy as np

from .codegen import slice_cut, ufunc_of
from .tracer import Step, Tracer


class _Parts:
    """Adjacent parts of ``source`` along ``axis``: ``members[k]`` is
    ``source[starts[k]:starts[k] + lengths[k]]`` on that axis."""

    __slots__ = ("source", "axis", "starts", "lengths", "members")

    def __init__(self, source, axis, starts, lengths, members):
        self.source, self.axis, self.starts, self.lengths, self.members = source, axis, starts, lengths, members


def fuse_slices(trace) -> int:
    """Rewrite ``trace.steps`` in place (see the module); returns how many steps were fused."""
    steps = trace.steps
    consumers = {}
    for s in steps:
        for t in s.tracers():
            consumers.setdefault(id(t), []).append(s)
    position = {id(s): i for i, s in enumerate(steps)}
    before, done, member = {}, set(), {}
    work = _initial_parts(steps)
    for parts in work:
        for k, t in enumerate(parts.members):
            member[id(t)] = (parts, k)
    fused = 0
    while work:
        parts = work.pop()
        runs = {}
        for k, t in enumerate(parts.members):
            for s in consumers.get(id(t), ()):
                sig = _signature(s, t, parts, k, member)
                if sig is not None and id(s) not in done:
                    runs.setdefault(sig, {}).setdefault(k, s)
        for sig, by_k in runs.items():
            for lo, hi in _consecutive(sorted(by_k)):
                run = [by_k[k] for k in range(lo, hi + 1)]
                if any(id(s) in done for s in run):
                    continue
                anchor = min(run, key=lambda s: position[id(s)])
                new = before.setdefault(id(anchor), [])
                out = _fuse(trace, parts, sig, run, lo, hi, new, anchor.phase, member)
                done.update(id(s) for s in run)
                fused += len(run)
                nxt = _Parts(out, parts.axis, [], [], [s.outs[0] for s in run])
                at = 0
                for k, s in zip(range(lo, hi + 1), run):
                    n = parts.lengths[k]
                    nxt.starts.append(at)
                    nxt.lengths.append(n)
                    # the part's step becomes a view of the fused result
                    s.op, s.args, s.kwargs = "getitem", (out, _key(parts.axis, at, at + n)), {}
                    at += n
                for k, t in enumerate(nxt.members):
                    member[id(t)] = (nxt, k)
                work.append(nxt)
    if fused:
        rebuilt = []
        for s in steps:
            rebuilt.extend(before.get(id(s), ()))
            rebuilt.append(s)
        for i, s in enumerate(rebuilt):
            s.index = i
        trace.steps[:] = rebuilt
    return fused


def _initial_parts(steps):
    """Runs of two or more adjacent basic slices of one array along one axis."""
    groups = {}
    for s in steps:
        if s.op == "getitem" and type(s.args[0]) is Tracer:
            cut = slice_cut(s.args[1], s.args[0].shape)
            if cut is not None:
                axis, lo, hi = cut
                groups.setdefault((id(s.args[0]), axis), (s.args[0], {}))[1].setdefault((lo, hi), s.outs[0])
    found = []
    for (_, axis), (source, cuts) in groups.items():
        run = []
        for (lo, hi), t in sorted(cuts.items()) + [((None, None), None)]:
            if run and lo == run[-1][1]:
                run.append((lo, hi, t))
                continue
            if len(run) >= 2:
                found.append(_Parts(source, axis, [a for a, _, _ in run], [b - a for a, b, _ in run],
                                    [t_ for _, _, t_ in run]))
            run = [(lo, hi, t)] if t is not None else []
    return found


def _key(axis, lo, hi):
    return (slice(None),) * axis + (slice(lo, hi, None), Ellipsis)


def _signature(s, t, parts, k, member):
    """What step ``s`` does to part ``k`` (``t``), the same for every part it may fuse
    with; None when it is not an elementwise step of parts and numbers."""
    if ufunc_of(s) is None or s.kwargs or len(s.outs) != 1 or s.outs[0].shape != t.shape:
        return None
    desc = []
    for a in s.args:
        if a is t:
            desc.append(("part",))
        elif type(a) is Tracer:
            other = member.get(id(a))
            if other is None or other[0].axis != parts.axis or a.shape != t.shape:
                return None
            desc.append(("other", id(other[0]), other[1] - k))
        elif np.size(a) == 1 and np.ndim(a) <= t.ndim:
            desc.append(("number", _number_key(a)))
        else:
            return None
    return (s.op, tuple(desc), s.phase, s.outs[0].dtype.str)


def _number_key(a):
    if type(a) in (int, float, bool, complex):
        return (type(a).__name__, a)
    a = np.asarray(a)
    return (a.dtype.str, a.shape, a.tobytes())


def _consecutive(ks):
    """Maximal runs of consecutive integers in sorted ``ks``, two or longer: ``(lo, hi)``."""
    out, start = [], None
    for i, k in enumerate(ks):
        if start is None:
            start = k
        if i + 1 == len(ks) or ks[i + 1] != k + 1:
            if k > start:
                out.append((start, k))
            start = None
    return out


def _fuse(trace, parts, sig, run, lo, hi, new, phase, member):
    """The run's step on the union of its parts, appended to ``new`` (with the views of the
    sources it reads); returns its result.  An operand from other parts (``("other", ...,
    offset)`` in the signature: part k + offset of the same run of parts, with part k's
    length, for every k) reads the union of those parts."""
    first = run[0]
    args = []
    for a, d in zip(first.args, sig[1]):
        if d[0] == "part":
            args.append(_view(trace, parts, lo, hi, new, phase))
        elif d[0] == "other":
            other, k = member[id(a)]
            args.append(_view(trace, other, k, k + (hi - lo), new, phase))
        else:
            args.append(a)
    shape = list(first.outs[0].shape)
    shape[parts.axis] = sum(parts.lengths[lo:hi + 1])
    step = Step(first.op, tuple(args), {}, phase)
    out = Tracer(trace, np.broadcast_to(np.zeros((), first.outs[0].dtype), tuple(shape)), step)
    step.outs = [out]
    new.append(step)
    return out


def _view(trace, parts, lo, hi, new, phase):
    """``parts.source`` over parts ``lo..hi``: the source itself when they are all of it."""
    a = parts.starts[lo]
    b = parts.starts[hi] + parts.lengths[hi]
    src = parts.source
    if a == 0 and b == src.shape[parts.axis]:
        return src
    step = Step("getitem", (src, _key(parts.axis, a, b)), {}, phase)
    shape = list(src.shape)
    shape[parts.axis] = b - a
    out = Tracer(trace, np.broadcast_to(np.zeros((), src.dtype), tuple(shape)), step)
    step.outs = [out]
    new.append(step)
    return out
