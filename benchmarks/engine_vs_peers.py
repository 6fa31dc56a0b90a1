#!/usr/bin/env python
"""One gradient of the seed-001 model: our engine against hand-written NumPy, PyTorch and JAX.

The model is linear -> relu -> linear -> MSE::

    loss = mean((relu(x @ w1 + b1) @ w2 + b2 - y) ** 2)

with x (batch, in), y (batch, 1), w1 (in, hidden), b1 (hidden,), w2 (hidden, 1),
b2 (1,), all float64.  One "call" is forward + backward + reading the four
parameter gradients (not the gradient of x).  Contenders, side by side in one
process:

- ``manual``: hand-written NumPy backprop in the style of seed 001 - the floor;
- ``engine``: ``diffcompare.engine`` (``Tensor``, ``mse_loss``, ``loss.backward()``);
- ``torch``: PyTorch eager, one thread (if importable);
- ``jax-jit``: ``jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))``, compiled first;
- ``jax-eager``: the same ``jax.grad`` without ``jit`` (skipped where too slow).

Timing: one thread for everything (environment variables set before NumPy,
torch and JAX are imported, and the process pinned to one CPU, see
``_limit_threads``); ``time.perf_counter``; warm-up; an inner loop calibrated so
that a sample takes >= ``--min-time`` (one call per sample when a call is
longer); >= 7 samples per contender, taken round-robin (sample 1 of every
contender, then sample 2, ...; the starting contender rotates) so that machine
noise hits all of them alike.  Reported: median time per call, IQR, the ratio
to ``manual``, engine/torch, CPU time / wall time (about 1.0 = one thread) and
minor page faults per call (fresh memory from the OS; in a VM each fault costs
~0.5-1 us, so allocation patterns show up in the times at the large sizes).

Usage::

    python benchmarks/engine_vs_peers.py                  # all four sizes (about a minute or two)
    python benchmarks/engine_vs_peers.py --sizes small    # (1,3,4) and (64,10,50)
    python benchmarks/engine_vs_peers.py --sizes 1000x784x50 --samples 15
    python benchmarks/engine_vs_peers.py --quick          # 5 samples of >= 20 ms, no jax-eager
    python benchmarks/engine_vs_peers.py --sizes small --profile   # + cProfile / line timing

``--profile`` adds, per size, a cProfile of the engine (functions ranked by own
time, in microseconds per call) and a line-by-line timing of the engine's
code next to the hand-written step, to see where the engine's time goes.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

# --------------------------------------------------------------------------- sizes and targets

SIZES = {  # name -> (batch, in, hidden)
    "1x3x4": (1, 3, 4),
    "64x10x50": (64, 10, 50),
    "1000x784x50": (1000, 784, 50),
    "50000x784x50": (50000, 784, 50),
}
GROUPS = {
    "small": ["1x3x4", "64x10x50"],
    "large": ["1000x784x50", "50000x784x50"],
    "all": list(SIZES),
}
# Goal for the engine: median time per call <= target x manual's.
TARGETS = {(1, 3, 4): 5.0, (64, 10, 50): 3.0, (1000, 784, 50): 1.15, (50000, 784, 50): 1.15}
CONTENDERS = ("manual", "engine", "torch", "jax-jit", "jax-eager")
TOLERANCE = 1e-10          # max relative difference of each gradient vs manual
JAX_EAGER_BUDGET_S = 20.0  # skip jax-eager at a size where its samples would take longer


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="all",
                   help="comma-separated: small (= 1x3x4,64x10x50), large, all, or BxIxH "
                        "(e.g. 1000x784x50; any sizes). Default: all.")
    p.add_argument("--samples", type=int, default=None,
                   help="samples per contender (default 9; 5 with --quick).")
    p.add_argument("--min-time", type=float, default=None,
                   help="seconds per sample the inner loop is calibrated to (default 0.05; "
                        "0.02 with --quick).")
    p.add_argument("--quick", action="store_true",
                   help="fewer, shorter samples and no jax-eager: a fast look, not a result.")
    p.add_argument("--contenders", default=",".join(CONTENDERS),
                   help=f"comma-separated subset of {','.join(CONTENDERS)} (manual is always run).")
    p.add_argument("--seed", type=int, default=1, help="seed of the inputs (default 1).")
    p.add_argument("--cpu", type=int, default=None,
                   help="CPU to pin the process to (default: the highest one allowed).")
    p.add_argument("--no-pin", action="store_true",
                   help="do not pin the process to one CPU (then JAX may use several threads).")
    p.add_argument("--profile", action="store_true",
                   help="also profile the engine (cProfile and line timing) at each size.")
    p.add_argument("--profile-calls", type=int, default=None,
                   help="engine calls per profile (default: about 0.5 s worth).")
    args = p.parse_args(argv)
    if args.samples is None:
        args.samples = 5 if args.quick else 9
    if args.min_time is None:
        args.min_time = 0.02 if args.quick else 0.05
    if args.samples < 1:
        p.error("--samples must be >= 1")
    names = []
    for tok in args.sizes.split(","):
        tok = tok.strip().lower()
        if not tok:
            continue
        if tok in GROUPS:
            names += GROUPS[tok]
        else:
            try:
                b, i, h = (int(v) for v in tok.split("x"))
            except ValueError:
                p.error(f"--sizes: {tok!r} is neither a group ({', '.join(GROUPS)}) nor BxIxH")
            names.append(f"{b}x{i}x{h}")
            SIZES.setdefault(names[-1], (b, i, h))
    args.size_list = [SIZES[n] for n in dict.fromkeys(names)]
    wanted = [c.strip() for c in args.contenders.split(",") if c.strip()]
    unknown = sorted(set(wanted) - set(CONTENDERS))
    if unknown:
        p.error(f"--contenders: unknown {unknown}; choose from {CONTENDERS}")
    if args.quick:
        wanted = [c for c in wanted if c != "jax-eager"]
    args.contender_list = ["manual"] + [c for c in CONTENDERS[1:] if c in wanted]
    return args


# --------------------------------------------------------------------------- one thread

THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
              "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
# The flags usually given for a single-threaded XLA CPU (jax issues #743, #1539).
# Measured with jax/jaxlib 0.10.2 on this machine: they do NOT stop XLA from running
# a jitted dot on several threads (CPU time / wall time stayed ~2 on 2 cores);
# XLA sizes its thread pools by the CPUs the process may run on, so pinning the
# process to one CPU (below) is what makes JAX single-threaded.  The flags stay
# set as asked (the second is not an XLA flag and is ignored by this jaxlib).
XLA_SINGLE_THREAD_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def _limit_threads(args) -> str:
    """Ask every library for one thread; pin the process to one CPU.  Must run
    before NumPy, torch or JAX are imported (their thread pools read these once)."""
    already = [m for m in ("numpy", "torch", "jax") if m in sys.modules]
    for var in THREAD_ENV:
        os.environ[var] = "1"
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " " + XLA_SINGLE_THREAD_FLAGS).strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    notes = []
    if already:
        notes.append(f"WARNING: {already} imported before the thread limits were set")
    if args.no_pin:
        notes.append("not pinned (--no-pin)")
    elif not hasattr(os, "sched_setaffinity"):
        notes.append("not pinned (no os.sched_setaffinity on this platform)")
    else:
        allowed = sorted(os.sched_getaffinity(0))
        cpu = args.cpu if args.cpu is not None else allowed[-1]
        os.sched_setaffinity(0, {cpu})
        notes.append(f"pinned to CPU {cpu} (of {allowed})")
    return "; ".join(notes)


# Everything below runs after _limit_threads (see main); these imports are
# deliberately late.
np = None  # numpy, imported in main()


# --------------------------------------------------------------------------- the model

def make_data(batch, n_in, hidden, seed):
    """Seeded float64 inputs and parameters (kaiming-style scales as in seed 001)."""
    rng = np.random.default_rng([seed, batch, n_in, hidden])
    x = rng.standard_normal((batch, n_in))
    y = rng.standard_normal((batch, 1))
    w1 = rng.standard_normal((n_in, hidden)) * math.sqrt(2.0 / n_in)
    b1 = rng.standard_normal(hidden) * 0.1
    w2 = rng.standard_normal((hidden, 1)) / math.sqrt(hidden)
    b2 = rng.standard_normal(1) * 0.1
    return dict(x=x, y=y, w1=w1, b1=b1, w2=w2, b2=b2)


def build_manual(d):
    """Seed 001's hand-written backprop, doing only what the parameter gradients need.

    Forward and backward reuse fresh temporaries in place (``l1 += b1``, relu and
    ``out - y`` in place), so the only arrays allocated are the ones a backward
    cannot avoid: l1/a1 (batch, hidden), out (batch, 1), the relu mask and
    g_a1 (batch, hidden), and the four gradients.  No gradient of x, no loss
    value (the gradients don't need it; computing it would add one dot of
    length batch, ~1 us).
    """
    x, y, w1, b1, w2, b2 = (d[k] for k in ("x", "y", "w1", "b1", "w2", "b2"))
    two_over_n = 2.0 / y.size      # mse over batch x 1 outputs

    def manual_step():
        l1 = x @ w1                          # lin(x, w1, b1)
        l1 += b1
        a1 = np.maximum(l1, 0.0, out=l1)     # relu, in place: a1 is l1
        out = a1 @ w2                        # lin(a1, w2, b2)
        out += b2
        g_out = out                          # mse_grad: 2 (out - targ) / n, in place
        g_out -= y
        g_out *= two_over_n
        w2_g = a1.T @ g_out                  # w.g = inp.T @ out.g
        b2_g = g_out.sum(0)                  # b.g = out.g.sum(0)
        g_a1 = g_out @ w2.T                  # inp.g = out.g @ w.t()
        g_a1 *= a1 > 0                       # relu_grad: (l1 > 0) * out.g  (a1 > 0 iff l1 > 0)
        w1_g = x.T @ g_a1                    # w.g = inp.T @ out.g   (x.g is not needed)
        b1_g = g_a1.sum(0)
        return w1_g, b1_g, w2_g, b2_g

    return manual_step, lambda grads: grads


def build_engine(d):
    """``diffcompare.engine``: params are leaves created once (as in a training loop);
    each call sets their grads to None (``zero_grad(set_to_none=True)``), runs
    forward and ``loss.backward()`` and reads the four ``.grad``."""
    from diffcompare.engine import Tensor

    x, y = Tensor(d["x"]), Tensor(d["y"])
    w1, b1, w2, b2 = (Tensor(d[k], requires_grad=True) for k in ("w1", "b1", "w2", "b2"))

    def engine_step():
        w1.grad = b1.grad = w2.grad = b2.grad = None
        loss = (((x @ w1 + b1).relu() @ w2 + b2 - y) ** 2).mean()
        loss.backward()
        return w1.grad, b1.grad, w2.grad, b2.grad

    def engine_graph():
        """The loss of one forward, graph alive (for the saved-bytes count)."""
        return (((x @ w1 + b1).relu() @ w2 + b2 - y) ** 2).mean()

    engine_step.graph = engine_graph
    return engine_step, lambda grads: tuple(g.data for g in grads)


def build_torch(d):
    import torch
    import torch.nn.functional as F

    x, y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"])
    w1, b1, w2, b2 = (torch.from_numpy(d[k].copy()).requires_grad_()
                      for k in ("w1", "b1", "w2", "b2"))
    params = (w1, b1, w2, b2)

    def torch_step():
        for p in params:
            p.grad = None
        loss = ((torch.relu(x @ w1 + b1) @ w2 + b2 - y) ** 2).mean()
        loss.backward()
        return w1.grad, b1.grad, w2.grad, b2.grad

    return torch_step, lambda grads: tuple(g.numpy() for g in grads)


def _jax_parts(d):
    import jax
    import jax.numpy as jnp

    def loss(w1, b1, w2, b2, x, y):
        out = jax.nn.relu(x @ w1 + b1) @ w2 + b2     # jax.nn.relu: relu'(0) = 0
        return jnp.mean((out - y) ** 2)

    if "_jax_args" not in d:   # one device copy of x shared by jax-jit and jax-eager
        d["_jax_args"] = tuple(jax.device_put(d[k]) for k in ("w1", "b1", "w2", "b2", "x", "y"))
    return jax, jax.grad(loss, argnums=(0, 1, 2, 3)), d["_jax_args"]


def build_jax_jit(d):
    jax, grad_fn, args = _jax_parts(d)
    compiled = jax.jit(grad_fn)
    jax.block_until_ready(compiled(*args))          # compile before timing

    def jax_jit_step():
        return jax.block_until_ready(compiled(*args))

    return jax_jit_step, lambda grads: tuple(np.asarray(g) for g in grads)


def build_jax_eager(d):
    jax, grad_fn, args = _jax_parts(d)

    def jax_eager_step():
        return jax.block_until_ready(grad_fn(*args))

    return jax_eager_step, lambda grads: tuple(np.asarray(g) for g in grads)


BUILDERS = {"manual": build_manual, "engine": build_engine, "torch": build_torch,
            "jax-jit": build_jax_jit, "jax-eager": build_jax_eager}


# --------------------------------------------------------------------------- checks

def max_rel_diff(grads, ref):
    """Max over the four gradients of max|g - ref| / max|ref|."""
    worst = 0.0
    for g, r in zip(grads, ref):
        g = np.asarray(g, dtype=np.float64)
        if g.shape != r.shape:
            return math.inf
        scale = float(np.max(np.abs(r))) or 1.0
        worst = max(worst, float(np.max(np.abs(g - r))) / scale)
    return worst


# --------------------------------------------------------------------------- saved-graph bytes

def engine_saved_bytes(loss):
    """Bytes of the arrays the engine's graph keeps for backward.

    Walks ``loss.grad_fn`` through ``next_functions``; every node's ``.saved``
    (name -> SavedTensor) is counted, each underlying buffer once (a view
    counts its base array, which it keeps alive).  Returns (total, rows) with
    rows (node, name, shape, nbytes, counted).
    """
    rows, buffers, seen, stack = [], {}, set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for name, st in (getattr(node, "saved", None) or {}).items():
            arr = st.data
            base = arr
            while isinstance(base.base, np.ndarray):
                base = base.base
            key = (base.__array_interface__["data"][0], base.nbytes)
            new = key not in buffers
            buffers[key] = base.nbytes
            rows.append((node.name(), name, tuple(arr.shape), int(base.nbytes), new))
        stack.extend(nxt for nxt, _ in getattr(node, "next_functions", ()))
    return sum(buffers.values()), rows


def minimum_saved_bytes(batch, n_in, hidden, itemsize=8):
    """What a hand-written backward of this model must keep from its forward.

    - x (batch, in): for w1.g = x.T @ g_l1;
    - a1 = relu(l1) (batch, hidden): for w2.g = a1.T @ g_out, and its sign
      (a1 > 0 iff l1 > 0) is the relu mask, so no separate mask or l1 is needed;
    - out - y (batch, 1): mse's gradient is 2 (out - y) / n;
    - w2 (hidden, 1): to propagate g_out to a1 (g_a1 = g_out @ w2.T).
    b1, b2 and y are not needed; the loss value is not needed.
    """
    parts = {"x": batch * n_in, "a1": batch * hidden, "out-y": batch, "w2": hidden}
    return {k: v * itemsize for k, v in parts.items()}


# --------------------------------------------------------------------------- timing

def _timed(step, n):
    """(wall, cpu) seconds of n calls."""
    c0 = time.process_time()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    return time.perf_counter() - t0, time.process_time() - c0


def _minor_faults():
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    except (ImportError, AttributeError):
        return 0


def calibrate(step, min_time):
    """Calls per sample so that a sample takes >= min_time (1 if a call is longer)."""
    n = 1
    while True:
        wall, _ = _timed(step, n)
        if wall >= min_time / 5 or n >= 10 ** 6:
            break
        n *= 10 if wall < min_time / 50 else 2
    return max(1, math.ceil(n * min_time / max(wall, 1e-9)))


def warm_up(step, seconds=0.2, at_least=2):
    t0, n = time.perf_counter(), 0
    while n < at_least or time.perf_counter() - t0 < seconds:
        step()
        n += 1
    return (time.perf_counter() - t0) / n


def run_samples(steps, inner, samples):
    """Round-robin: sample s of each contender, starting one later each round.
    Returns per-call times, CPU/wall ratios and minor page faults per call."""
    import gc

    names = list(steps)
    per_call = {n: [] for n in names}
    acc = {n: [0.0, 0.0, 0, 0] for n in names}   # cpu, wall, faults, calls
    for s in range(samples):
        order = names[s % len(names):] + names[:s % len(names)]
        for name in order:
            gc.collect()
            f0 = _minor_faults()
            wall, proc = _timed(steps[name], inner[name])
            a = acc[name]
            a[2] += _minor_faults() - f0
            per_call[name].append(wall / inner[name])
            a[0] += proc
            a[1] += wall
            a[3] += inner[name]
    cpu = {n: (a[0] / a[1] if a[1] else float("nan")) for n, a in acc.items()}
    faults = {n: a[2] / a[3] for n, a in acc.items()}
    return per_call, cpu, faults


def quartiles(v):
    q25, q50, q75 = np.percentile(np.asarray(v), [25, 50, 75])
    return float(q25), float(q50), float(q75)


def fmt_time(sec, unit=None):
    unit = unit or ("us" if sec < 1e-3 else "ms" if sec < 1 else "s")
    scale = {"us": 1e6, "ms": 1e3, "s": 1.0}[unit]
    return f"{sec * scale:,.1f} {unit}" if sec * scale < 1e4 else f"{sec * scale:,.0f} {unit}"


def fmt_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024


# --------------------------------------------------------------------------- profiling

def profile_engine(step, manual_step, calls, top=22):
    """cProfile of the engine (own time per call), then a line timing of the
    engine's code and of the hand-written step, for where the time goes."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        step()
    prof.disable()
    st = pstats.Stats(prof)
    rows = []
    for (fname, line, func), (cc, nc, tt, ct, _) in st.stats.items():
        rows.append((tt, ct, nc, f"{_short(fname)}:{line}({func})"))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    print(f"  cProfile, {calls} engine calls: {fmt_time(total / calls)} per call under the "
          f"profiler (it inflates Python-heavy code); functions by own time:")
    print(f"    {'own/call':>10} {'cum/call':>10} {'calls/call':>10}  function")
    for tt, ct, nc, where in rows[:top]:
        print(f"    {tt / calls * 1e6:8.2f}us {ct / calls * 1e6:8.2f}us {nc / calls:10.1f}  {where}")

    for label, fn, prefixes in (
            ("engine", step, (_engine_dir(), __file__)),
            ("manual", manual_step, (__file__,))):
        lines, total = line_timing(fn, calls, prefixes)
        print(f"  line timing of {label}, {calls} calls, {fmt_time(total / calls)} per call traced "
              f"(the tracer adds ~1 us per line: trust it for lines that run NumPy on big "
              f"arrays, use cProfile for small sizes). own = the line itself, with the NumPy "
              f"calls it makes; incl = with the traced Python functions it calls:")
        print(f"    {'own us':>9} {'incl us':>9} {'hits':>5}  where: code   (per call)")
        for (fname, lineno), (own, incl, hits) in sorted(lines.items(), key=lambda kv: -kv[1][0])[:top]:
            print(f"    {own / calls * 1e6:9.2f} {incl / calls * 1e6:9.2f} {hits / calls:5.1f}  "
                  f"{_short(fname)}:{lineno}: {_source_line(fname, lineno)}")


def _engine_dir():
    import diffcompare.engine

    return os.path.dirname(diffcompare.engine.__file__)


def _short(fname):
    for marker in ("diffcompare" + os.sep, "benchmarks" + os.sep):
        i = fname.rfind(marker)
        if i >= 0:
            return fname[i:]
    return os.path.basename(fname) if os.sep in fname else fname


def _source_line(fname, lineno):
    import linecache

    return linecache.getline(fname, lineno).strip()[:90]


def line_timing(fn, calls, prefixes):
    """Wall time per source line of the frames whose file starts with one of
    ``prefixes`` (a tiny line_profiler on sys.settrace).  Returns
    ({(file, line): (own, inclusive, hits)}, total): ``own`` leaves out the time
    spent in traced functions the line calls (it keeps C calls such as NumPy's)."""
    stats = {}
    state = {}  # frame -> [line, t_line_start, child_time_this_line, t_frame_start]
    clock = time.perf_counter

    def local(frame, event, arg):
        if event not in ("line", "return"):
            return local
        now = clock()
        st = state.get(frame)
        if st is not None:
            key = (frame.f_code.co_filename, st[0])
            own, incl, hits = stats.get(key, (0.0, 0.0, 0))
            stats[key] = (own + now - st[1] - st[2], incl + now - st[1], hits + 1)
            if event == "return":
                del state[frame]
                parent = frame.f_back
                while parent is not None and parent not in state:
                    parent = parent.f_back
                if parent is not None:
                    state[parent][2] += now - st[3]
                return local
        if event == "line":
            if st is None:
                state[frame] = [frame.f_lineno, clock(), 0.0, now]
            else:
                st[0], st[1], st[2] = frame.f_lineno, clock(), 0.0
        return local

    def global_(frame, event, arg):
        if frame.f_code.co_filename.startswith(prefixes) and frame.f_code.co_name not in (
                "line_timing", "local", "global_"):
            now = clock()
            state[frame] = [frame.f_lineno, now, 0.0, now]
            return local
        return None

    old = sys.gettrace()
    t0 = clock()
    sys.settrace(global_)
    try:
        for _ in range(calls):
            fn()
    finally:
        sys.settrace(old)
    return stats, clock() - t0


# --------------------------------------------------------------------------- main

def bench_size(size, args, report):
    batch, n_in, hidden = size
    print(f"\n=== (batch, in, hidden) = {size}   x: {fmt_bytes(batch * n_in * 8)} ===")
    t0 = time.perf_counter()
    d = make_data(batch, n_in, hidden, args.seed)

    steps, to_np, notes = {}, {}, []
    for name in args.contender_list:
        try:
            steps[name], to_np[name] = BUILDERS[name](d)
        except ImportError as e:
            notes.append(f"{name}: skipped, not importable ({e})")
        except Exception as e:  # a contender that cannot even be built is reported, not fatal
            notes.append(f"{name}: skipped, building it failed: {type(e).__name__}: {e}")

    # --- agreement check
    ref = steps["manual"]()
    print(f"gradient check (max over w1, b1, w2, b2 of max|g - g_manual| / max|g_manual|, "
          f"tolerance {TOLERANCE:g}):")
    for name in list(steps):
        if name == "manual":
            continue
        try:
            diff = max_rel_diff(to_np[name](steps[name]()), ref)
        except Exception as e:
            print(f"  {name:10s} FAILED: {type(e).__name__}: {e}  -> not timed")
            del steps[name]
            continue
        ok = diff <= TOLERANCE
        print(f"  {name:10s} {diff:9.2e}  {'OK' if ok else 'MISMATCH -> not timed'}")
        if not ok:
            del steps[name]

    # --- warm up, calibrate
    per_call_est, inner = {}, {}
    for name, step in steps.items():
        per_call_est[name] = warm_up(step)
        inner[name] = calibrate(step, args.min_time)
    if "jax-eager" in steps:
        est = per_call_est["jax-eager"] * inner["jax-eager"] * args.samples
        if est > JAX_EAGER_BUDGET_S:
            notes.append(f"jax-eager: skipped at this size, {fmt_time(per_call_est['jax-eager'])} "
                         f"per call; its samples would take ~{est:.0f} s (> {JAX_EAGER_BUDGET_S:.0f} s)")
            del steps["jax-eager"]

    per_call, cpu_ratio, faults = run_samples(steps, inner, args.samples)

    # --- table
    m_med = quartiles(per_call["manual"])[1]
    unit = "us" if m_med < 1e-3 else "ms"
    print(f"{args.samples} samples per contender, round-robin; median and IQR per call:")
    print(f"  {'contender':10s} {'median':>12s} {'IQR':>11s} {'IQR/med':>7s} {'x manual':>9s}"
          f" {'calls/sample':>12s} {'cpu/wall':>8s} {'faults/call':>11s}")
    stats = {}
    for name in steps:
        q25, med, q75 = quartiles(per_call[name])
        stats[name] = med
        print(f"  {name:10s} {fmt_time(med, unit):>12s} {fmt_time(q75 - q25, unit):>11s} "
              f"{(q75 - q25) / med:6.1%} {med / m_med:8.2f}x {inner[name]:12d} "
              f"{cpu_ratio[name]:8.2f} {faults[name]:11.1f}")
    for note in notes:
        print(f"  note: {note}")
    worst = min(cpu_ratio.values())
    if worst < 0.95:
        print(f"  WARNING: cpu/wall down to {worst:.2f}: this single-threaded process was "
              f"descheduled ~{1 - worst:.0%} of the time (other load on its CPU); these "
              f"times are noisy, rerun on a quieter machine")

    result = {"size": size, "stats": stats}
    if "engine" in steps:
        paired = [e / m for e, m in zip(per_call["engine"], per_call["manual"])]
        p25, p50, p75 = quartiles(paired)
        result.update(ratio=stats["engine"] / m_med, paired=(p25, p50, p75))
        print(f"  engine / manual = {result['ratio']:.2f}x   (per-round ratios: median {p50:.2f}x, "
              f"IQR [{p25:.2f}, {p75:.2f}])")
        if "torch" in steps:
            pt = [e / t for e, t in zip(per_call["engine"], per_call["torch"])]
            t25, t50, t75 = quartiles(pt)
            print(f"  engine / torch  = {stats['engine'] / stats['torch']:.2f}x   (per-round "
                  f"ratios: median {t50:.2f}x, IQR [{t25:.2f}, {t75:.2f}])")

        # --- memory kept for backward
        loss = steps["engine"].graph()
        total, rows = engine_saved_bytes(loss)
        minimum = minimum_saved_bytes(batch, n_in, hidden)
        min_total = sum(minimum.values())
        print(f"  engine saved-graph bytes: {fmt_bytes(total)} ({total:,} B) = "
              + " + ".join(f"{node}.{nm}{list(shape)} {fmt_bytes(nb)}" + ("" if new else " (dup, not counted)")
                           for node, nm, shape, nb, new in rows))
        print(f"  hand-written minimum:     {fmt_bytes(min_total)} ({min_total:,} B) = "
              + " + ".join(f"{k} {fmt_bytes(v)}" for k, v in minimum.items())
              + f";  engine/minimum = {total / min_total:.3f}x")
        try:  # cross-check with the engine's own summary, where it has one
            from diffcompare.engine import graph as _graph

            own = _graph.summarize(loss).total_saved_bytes
            if own != total:
                print(f"  (diffcompare.engine.graph.summarize counts {own:,} B)")
        except Exception:
            pass
        del loss
        result["saved"] = (total, min_total)

    if args.profile and "engine" in steps:
        calls = args.profile_calls or max(1, min(20000, round(0.5 / max(stats["engine"], 1e-7))))
        print(f"--- profile of the engine at {size}")
        profile_engine(steps["engine"], steps["manual"], calls)

    print(f"  ({time.perf_counter() - t0:.1f} s for this size)")
    report.append(result)
    del steps, to_np, d


def main(argv=None):
    args = parse_args(argv)
    pin_note = _limit_threads(args)

    global np
    import numpy

    np = numpy
    import diffcompare.engine as engine

    print("engine_vs_peers: one gradient (forward + backward, parameter grads) of "
          "linear -> relu -> linear -> MSE, float64")
    engine_note = ""
    try:
        engine.Tensor(np.ones((1, 1))) @ engine.Tensor(np.ones((1, 1)))
    except AttributeError as e:
        if "MatMul" in str(e) and hasattr(engine.ops, "Matmul"):
            # Tensor.__matmul__ calls ops.MatMul but ops exports Matmul: alias it so that
            # `x @ w1` works (the same class; nothing else changes).
            engine.ops.MatMul = engine.ops.Matmul
            engine_note = ("NOTE: Tensor.__matmul__ needs diffcompare.engine.ops.MatMul, which "
                           "is missing (ops has Matmul); aliased MatMul = Matmul for this run")
        else:
            raise
    versions = [f"python {sys.version.split()[0]}", f"numpy {np.__version__}"]
    if "torch" in args.contender_list:
        try:
            import torch

            torch.set_num_threads(1)
            try:
                torch.set_num_interop_threads(1)
            except RuntimeError:
                pass
            versions.append(f"torch {torch.__version__} (threads {torch.get_num_threads()})")
        except ImportError:
            versions.append("torch: not importable")
    if any(c.startswith("jax") for c in args.contender_list):
        try:
            import jax

            jax.config.update("jax_enable_x64", True)
            versions.append(f"jax {jax.__version__} ({jax.default_backend()})")
        except ImportError:
            versions.append("jax: not importable")
    print("  " + ", ".join(versions))
    print(f"  threads: {', '.join(THREAD_ENV)} = 1; XLA_FLAGS={os.environ.get('XLA_FLAGS')!r}; "
          f"{pin_note}")
    print(f"  samples: {args.samples} per contender, >= {args.min_time * 1e3:.0f} ms each "
          f"(1 call per sample where a call is longer); gc.collect() before each sample")
    if engine_note:
        print("  " + engine_note)

    report = []
    t0 = time.perf_counter()
    for size in args.size_list:
        bench_size(size, args, report)

    # --- targets
    print("\n=== targets: engine median / manual median ===")
    print(f"  {'(batch, in, hidden)':22s} {'target':>8s} {'engine/manual':>13s} "
          f"{'per-round IQR':>15s}  verdict")
    for r in report:
        target = TARGETS.get(r["size"])
        if "ratio" not in r:
            print(f"  {str(r['size']):22s} {'':>8s} {'n/a':>13s}")
            continue
        p25, _, p75 = r["paired"]
        if target is None:
            verdict = "(no target)"
        else:
            verdict = "PASS" if r["ratio"] <= target else "MISS"
            if p25 <= target <= p75:
                verdict += " (borderline: target inside the per-round IQR)"
        tgt = f"<= {target:.2f}x" if target else ""
        print(f"  {str(r['size']):22s} {tgt:>8s} {r['ratio']:12.2f}x "
              f"{f'[{p25:.2f}, {p75:.2f}]':>15s}  {verdict}")
    print(f"(total {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
