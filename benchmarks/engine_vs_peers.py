#!/usr/bin/env python
"""One gradient with our engine against hand-written NumPy, PyTorch eager and JAX (jit).

The model is seed 001's linear -> relu -> linear -> MSE, written as a user writes it::

    loss = ((relu(x @ w1 + b1) @ w2 + b2 - y) ** 2).mean();  loss.backward()

with x (batch, in), y (batch, 1), w1 (in, hidden), b1 (hidden,), w2 (hidden, 1),
b2 (1,), float64.  One call is forward + backward + the four parameter gradients.
Contenders, side by side in one process:

- ``manual``: the library's hand-written NumPy backprop (``backends.manual``, ``mlp_relu``);
- ``engine``: ``diffcompare.engine``, leaves created once, ``.grad`` reset each call;
- ``torch``: PyTorch eager, the same spelling, one thread;
- ``jax-jit``: ``jax.jit(jax.grad(loss))``, compiled before timing.

``--objectives`` adds the catalog's objectives (``diffcompare.problems``: ADBench's GMM
with its Wishart prior, ADBench's LSTM, bundle adjustment's reprojection VJP, k-means,
linear least squares) and the namespace's ``logsumexp``, engine against torch eager (and
``jax.jit(jax.grad)``) on the same ``fn(xp, ...)``; there is no hand-written NumPy gradient
of these.

Timing reuses the library: one thread and the runner's malloc settings
(``runner.environment``; the script re-executes itself once to apply them), the
process pinned to one CPU, ``measure.timing.time_call`` for each sample, and
samples taken round-robin (sample 1 of every contender, then sample 2, ...) so
that load on a shared machine hits all contenders alike.  Ratios are medians of
these side-by-side samples.  Saved-graph bytes come from ``graph.summarize``.

Usage::

    python benchmarks/engine_vs_peers.py                      # all four sizes
    python benchmarks/engine_vs_peers.py --sizes small        # (1,3,4) and (64,10,50)
    python benchmarks/engine_vs_peers.py --sizes large --samples 5
    python benchmarks/engine_vs_peers.py --sizes none --objectives
    python benchmarks/engine_vs_peers.py --sizes 1x3x4 --profile   # + cProfile of the engine
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

SIZES = {"1x3x4": (1, 3, 4), "64x10x50": (64, 10, 50),
         "1000x784x50": (1000, 784, 50), "50000x784x50": (50000, 784, 50)}
GROUPS = {"small": ["1x3x4", "64x10x50"], "large": ["1000x784x50", "50000x784x50"],
          "all": list(SIZES), "none": []}
# The issues' targets: engine / torch at the small sizes (issue 23; issue 9's was 0.5),
# engine / manual at the large ones.
TORCH_TARGET = {(1, 3, 4): 0.35, (64, 10, 50): 0.35}
MANUAL_TARGET = {(1000, 784, 50): 1.05, (50000, 784, 50): 1.05}
SAVED_TARGET = 1.10          # saved-graph bytes / the hand-written minimum
CONTENDERS = ("manual", "engine", "torch", "jax-jit")
TOLERANCE = 1e-10            # max relative difference of each gradient from manual's


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="all",
                   help="comma-separated: small, large, all, none, or BxIxH (e.g. 1000x784x50)")
    p.add_argument("--samples", type=int, default=9, help="samples per contender (default 9)")
    p.add_argument("--min-time", type=float, default=0.05,
                   help="seconds per sample (default 0.05; one call when a call is longer)")
    p.add_argument("--contenders", default=",".join(CONTENDERS),
                   help=f"subset of {','.join(CONTENDERS)} (manual always runs)")
    p.add_argument("--objectives", action="store_true",
                   help="also time the ADBench-style objectives, engine against torch")
    p.add_argument("--profile", action="store_true", help="cProfile the engine at each size")
    p.add_argument("--cpu-time", action="store_true",
                   help="time with the process's CPU time instead of wall time: on a shared, "
                        "loaded machine it leaves out the time other processes hold the CPU")
    args = p.parse_args(argv)
    if args.samples < 1:
        p.error("--samples must be >= 1")
    names = []
    for tok in filter(None, (t.strip().lower() for t in args.sizes.split(","))):
        if tok in GROUPS:
            names += GROUPS[tok]
            continue
        try:
            SIZES.setdefault(tok, tuple(int(v) for v in tok.split("x")))
            assert len(SIZES[tok]) == 3
        except (ValueError, AssertionError):
            p.error(f"--sizes: {tok!r} is neither a group ({', '.join(GROUPS)}) nor BxIxH")
        names.append(tok)
    args.size_list = [SIZES[n] for n in dict.fromkeys(names)]
    wanted = {c.strip() for c in args.contenders.split(",") if c.strip()}
    if wanted - set(CONTENDERS):
        p.error(f"--contenders: unknown {sorted(wanted - set(CONTENDERS))}; choose from {CONTENDERS}")
    args.contender_list = [c for c in CONTENDERS if c == "manual" or c in wanted]
    return args


def single_threaded() -> str:
    """Apply the runner's worker environment (one thread, malloc settings) by
    re-executing this script once, then pin to one CPU."""
    from diffcompare.runner.environment import pin_to_one_cpu, worker_env

    env = worker_env()
    if any(os.environ.get(k) != v for k, v in env.items() if k != "XLA_FLAGS"):
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    env.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    cpu = pin_to_one_cpu()
    return "one thread (runner.environment), " + (f"pinned to CPU {cpu}" if cpu is not None
                                                  else "not pinned")


# --------------------------------------------------------------------------- the model

def make_data(batch, n_in, hidden, seed=1):
    import numpy as np

    rng = np.random.default_rng([seed, batch, n_in, hidden])
    return dict(x=rng.standard_normal((batch, n_in)), y=rng.standard_normal((batch, 1)),
                w1=rng.standard_normal((n_in, hidden)) * math.sqrt(2.0 / n_in),
                b1=rng.standard_normal(hidden) * 0.1,
                w2=rng.standard_normal((hidden, 1)) / math.sqrt(hidden),
                b2=rng.standard_normal(1) * 0.1)


PARAMS = ("w1", "b1", "w2", "b2")


def build_manual(d):
    from diffcompare.backends.manual import MANUAL_GRADIENTS

    forward_backward = MANUAL_GRADIENTS["mlp_relu"].forward_backward
    args, need = tuple(d[k] for k in PARAMS + ("x", "y")), frozenset(range(4))

    def manual_step():
        grads = forward_backward(args, need)[1]
        return tuple(grads[i] for i in range(4))

    return manual_step, lambda grads: grads


def build_engine(d):
    from diffcompare.engine import Tensor, relu

    x, y = Tensor(d["x"]), Tensor(d["y"])
    w1, b1, w2, b2 = (Tensor(d[k], requires_grad=True) for k in PARAMS)

    def loss():
        return ((relu(x @ w1 + b1) @ w2 + b2 - y) ** 2).mean()

    def engine_step():
        w1.grad = b1.grad = w2.grad = b2.grad = None
        loss().backward()
        return w1.grad, b1.grad, w2.grad, b2.grad

    engine_step.graph = loss
    return engine_step, lambda grads: tuple(g.data for g in grads)


def build_torch(d):
    import torch

    x, y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"])
    params = w1, b1, w2, b2 = [torch.from_numpy(d[k].copy()).requires_grad_() for k in PARAMS]

    def torch_step():
        for p in params:
            p.grad = None
        ((torch.relu(x @ w1 + b1) @ w2 + b2 - y) ** 2).mean().backward()
        return w1.grad, b1.grad, w2.grad, b2.grad

    return torch_step, lambda grads: tuple(g.numpy() for g in grads)


def build_jax_jit(d):
    import jax
    import jax.numpy as jnp
    import numpy as np

    def loss(w1, b1, w2, b2, x, y):
        return jnp.mean((jax.nn.relu(x @ w1 + b1) @ w2 + b2 - y) ** 2)

    compiled = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))
    args = tuple(jax.device_put(d[k]) for k in PARAMS + ("x", "y"))
    jax.block_until_ready(compiled(*args))          # compile before timing

    def jax_jit_step():
        return jax.block_until_ready(compiled(*args))

    return jax_jit_step, lambda grads: tuple(np.asarray(g) for g in grads)


BUILDERS = {"manual": build_manual, "engine": build_engine, "torch": build_torch,
            "jax-jit": build_jax_jit}


def minimum_saved_bytes(batch, n_in, hidden, itemsize=8):
    """What a hand-written backward of this model must keep from its forward: x (for
    w1.g), a1 = relu(l1) (for w2.g; its sign is the relu mask), out - y (the MSE
    gradient), w2 (to reach a1).  b1, b2, y and the loss value are not needed."""
    return itemsize * (batch * n_in + batch * hidden + batch + hidden)


def saved_bytes(loss) -> int:
    try:
        from diffcompare.viz.graph import summarize   # where the graph tools are moving
    except ImportError:
        from diffcompare.engine.graph import summarize
    return summarize(loss).total_saved_bytes


# --------------------------------------------------------------------------- timing

CLOCK = time.perf_counter     # time.process_time with --cpu-time


def round_robin(steps: dict, samples: int, min_time: float) -> dict:
    """Median seconds per call and per-round ratios: each round takes one sample of
    every contender (``measure.timing.time_call``), starting one later each round."""
    from diffcompare.measure.timing import time_call

    names = list(steps)
    per_call = {n: [] for n in names}
    for s in range(samples):
        for name in names[s % len(names):] + names[:s % len(names)]:
            per_call[name] += time_call(steps[name], min_time, samples=1, warmup=0,
                                        clock=CLOCK).samples
    return per_call


def ratio(per_call, a, b) -> float:
    """Median of the per-round ratios a / b (each from one round, side by side)."""
    return statistics.median(x / y for x, y in zip(per_call[a], per_call[b]))


def fmt_time(sec):
    return f"{sec * 1e6:,.1f} us" if sec < 1e-3 else f"{sec * 1e3:,.2f} ms"


def bench_size(size, args):
    import numpy as np

    d = make_data(*size)
    steps, to_np = {}, {}
    for name in args.contender_list:
        try:
            steps[name], to_np[name] = BUILDERS[name](d)
        except ImportError as e:
            print(f"  {name}: skipped, not importable ({e})")
    ref = steps["manual"]()
    for name in [n for n in steps if n != "manual"]:
        got = to_np[name](steps[name]())
        diff = max(float(np.max(np.abs(g - r))) / (float(np.max(np.abs(r))) or 1.0)
                   for g, r in zip(got, ref))
        if not diff <= TOLERANCE:
            print(f"  {name}: gradients differ from manual's by {diff:.2e} -> not timed")
            del steps[name]
    for step in steps.values():   # warm up
        for _ in range(3):
            step()
    per_call = round_robin(steps, args.samples, args.min_time)
    row = {"size": size, **{n: statistics.median(v) for n, v in per_call.items()}}
    if "engine" in steps:
        row["engine/manual"] = ratio(per_call, "engine", "manual")
        if "torch" in steps:
            row["engine/torch"] = ratio(per_call, "engine", "torch")
        row["saved/min"] = saved_bytes(steps["engine"].graph()) / minimum_saved_bytes(*size)
    if args.profile and "engine" in steps:
        profile(steps["engine"], calls=max(1, round(0.5 / row["engine"])))
    return row


def profile(step, calls, top=15):
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.runcall(lambda: [step() for _ in range(calls)])
    stats = sorted(pstats.Stats(prof).stats.items(), key=lambda kv: -kv[1][2])[:top]
    print(f"  cProfile of the engine, {calls} calls; own time per call (inflated by the profiler):")
    for (fname, line, func), (_, nc, tt, ct, _) in stats:
        where = fname.split("diffcompare" + os.sep)[-1]
        print(f"    {tt / calls * 1e6:8.2f} us own {ct / calls * 1e6:8.2f} us cum "
              f"{nc / calls:5.1f}x  {where}:{line}({func})")


# --------------------------------------------------------------------------- objectives

def _logsumexp(xp, x):
    """The namespace's own (max-shifted) ``logsumexp`` of a vector: the op, where the
    catalog's ``logsumexp`` problem is the naive log Σ exp."""
    return xp.logsumexp(x, axis=0)


def objectives(seed=0):
    """name -> (fn(xp, *args), args, number of leading arguments differentiated): the
    catalog's objectives (``diffcompare.problems``, their own input generators) at the
    benchmark's sizes, and the namespace's ``logsumexp``."""
    from diffcompare import problems
    from diffcompare.problems.catalog.adbench import ba_sized_inputs

    def catalog(name, size):
        problem = problems.get(name)
        args = problem.inputs(size, seed)
        assert problem.wrt == tuple(range(len(problem.wrt)))     # the leading arguments
        return problem.fn, args, len(problem.wrt)

    residuals = problems.get("bundle_adjustment").fn

    def reprojection_vjp(xp, *args):
        """The residuals (a vector) summed against a fixed cotangent, the last argument: their
        VJP, as one scalar every contender differentiates with ``backward()``."""
        return xp.sum(residuals(xp, *args[:-1]) * args[-1])

    ba_args = ba_sized_inputs(250, 2500, 10000, seed)             # cameras, points, observations
    ba_cotangent = np.random.default_rng(seed + 1).standard_normal(3 * 10000)
    lls = problems.get("linear_least_squares").fn
    rng = np.random.default_rng(seed)
    return {
        "GMM K=10 d=10 n=1000": catalog("gmm", 10),
        "LSTM 2 layers, 16 chars": catalog("lstm", 16),
        "BA 250 cameras": (reprojection_vjp, ba_args + (ba_cotangent,), 3),
        "k-means k=100 n=1000 d=8": catalog("kmeans", 100),
        "least squares n=4096 m=128": (lls, (rng.standard_normal(128),
                                             rng.standard_normal((4096, 128)),
                                             rng.standard_normal(4096)), 1),
        "logsumexp n=1e5": (_logsumexp, (rng.standard_normal(100_000),), 1),
    }


def build_objective_jax(fn, arrays, n_wrt):
    """``jax.jit(jax.grad(fn))`` on the contract's ``jax.numpy`` namespace, compiled before
    timing; None where JAX is missing."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    from diffcompare.problems.contract import namespace

    jxp = namespace(jnp)
    const = [jax.device_put(a) for a in arrays[n_wrt:]]
    wrt = [jax.device_put(a) for a in arrays[:n_wrt]]
    compiled = jax.jit(jax.grad(lambda *w: fn(jxp, *w, *const), argnums=tuple(range(n_wrt))))
    jax.block_until_ready(compiled(*wrt))

    def jax_jit_step():
        return [np.asarray(g) for g in jax.block_until_ready(compiled(*wrt))]

    return jax_jit_step


def engine_and_torch_steps(fn, arrays, n_wrt, engine_xp, torch_xp):
    """One gradient of ``fn(xp, *arrays)`` w.r.t. the first ``n_wrt`` arrays, as two
    callables: the engine eager on ``engine_xp`` and torch eager on ``torch_xp``; each returns
    the gradients as NumPy arrays."""
    import torch

    from diffcompare.engine import Tensor

    e_const = [Tensor(a) for a in arrays[n_wrt:]]
    e_wrt = [Tensor(a, requires_grad=True) for a in arrays[:n_wrt]]
    t_const = [torch.from_numpy(a) for a in arrays[n_wrt:]]
    t_wrt = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays[:n_wrt]]

    def engine_step():
        for p in e_wrt:
            p.grad = None
        fn(engine_xp, *e_wrt, *e_const).backward()
        return [p.grad.data for p in e_wrt]

    def torch_step():
        for p in t_wrt:
            p.grad = None
        fn(torch_xp, *t_wrt, *t_const).backward()
        return [p.grad.numpy() for p in t_wrt]

    return engine_step, torch_step


def bench_objectives(args):
    from diffcompare.problems import torch_namespace
    from diffcompare.engine import array_api

    txp = torch_namespace.namespace()
    rows = []
    for name, (fn, arrays, n_wrt) in objectives().items():
        engine_step, torch_step = engine_and_torch_steps(fn, arrays, n_wrt, array_api, txp)
        steps = {"engine": engine_step, "torch": torch_step}
        if "jax-jit" in args.contender_list:
            jax_step = build_objective_jax(fn, arrays, n_wrt)
            if jax_step is not None:
                steps["jax-jit"] = jax_step
        ref = torch_step()
        diff = {n: max(float(np.max(np.abs(a - b))) / (float(np.max(np.abs(b))) or 1.0)
                       for a, b in zip(step(), ref)) for n, step in steps.items() if n != "torch"}
        per_call = round_robin(steps, args.samples, args.min_time)
        rows.append((name, {n: statistics.median(v) for n, v in per_call.items()},
                     ratio(per_call, "engine", "torch"),
                     ratio(per_call, "engine", "jax-jit") if "jax-jit" in per_call else math.nan,
                     diff))
    print("\n=== ADBench-style objectives, written once against xp: engine vs torch eager "
          "(and jax.jit) ===")
    print(f"  {'objective':28s} {'engine':>11s} {'torch':>11s} {'jax-jit':>11s} {'eng/torch':>9s} "
          f"{'eng/jax':>8s}  {'max rel diff vs torch':>21s}  target eng/torch <= 1.0")
    for name, t, r, rj, diff in rows:
        jt = fmt_time(t["jax-jit"]) if "jax-jit" in t else "-"
        diffs = " ".join(f"{d:.0e}" for d in diff.values())
        print(f"  {name:28s} {fmt_time(t['engine']):>11s} {fmt_time(t['torch']):>11s} {jt:>11s} "
              f"{r:8.2f}x {f'{rj:.2f}x' if rj == rj else '-':>8s}  {diffs:>21s}  "
              f"{'PASS' if r <= 1.0 else 'MISS'}")


# --------------------------------------------------------------------------- main

def main(argv=None):
    args = parse_args(argv)
    note = single_threaded()
    global CLOCK
    if args.cpu_time:
        CLOCK = time.process_time
        note += ", CPU time (process_time)"
    global np
    import numpy as np

    versions = [f"python {sys.version.split()[0]}", f"numpy {np.__version__}"]
    try:
        import torch

        torch.set_num_threads(1)
        versions.append(f"torch {torch.__version__}")
    except ImportError:
        pass
    if "jax-jit" in args.contender_list:
        try:
            import jax

            jax.config.update("jax_enable_x64", True)
            versions.append(f"jax {jax.__version__}")
        except ImportError:
            pass
    print("engine_vs_peers: one gradient of linear -> relu -> linear -> MSE, float64, "
          "written ((relu(x @ w1 + b1) @ w2 + b2 - y) ** 2).mean()")
    print(f"  {', '.join(versions)}; {note}; {args.samples} samples per contender, "
          f">= {args.min_time * 1e3:.0f} ms each, round-robin; ratios: medians of per-round ratios")
    t0 = time.perf_counter()
    rows = []
    for size in args.size_list:
        rows.append(bench_size(size, args))
    if rows:
        names = [c for c in args.contender_list if any(c in r for r in rows)]
        print(f"\n  {'(batch, in, hidden)':20s}" + "".join(f" {n:>11s}" for n in names)
              + f" {'eng/manual':>10s} {'eng/torch':>9s} {'saved/min':>9s}  targets")
        for r in rows:
            size = r["size"]
            verdicts = []
            if size in TORCH_TARGET and "engine/torch" in r:
                verdicts.append(f"eng/torch <= {TORCH_TARGET[size]}: "
                                + ("PASS" if r["engine/torch"] <= TORCH_TARGET[size] else "MISS"))
            if size in MANUAL_TARGET and "engine/manual" in r:
                verdicts.append(f"eng/manual <= {MANUAL_TARGET[size]}: "
                                + ("PASS" if r["engine/manual"] <= MANUAL_TARGET[size] else "MISS"))
            if "saved/min" in r:
                verdicts.append(f"saved <= {SAVED_TARGET}: "
                                + ("PASS" if r["saved/min"] <= SAVED_TARGET else "MISS"))
            print(f"  {str(size):20s}" + "".join(f" {fmt_time(r[n]) if n in r else '-':>11s}"
                                                 for n in names)
                  + f" {r.get('engine/manual', math.nan):9.2f}x {r.get('engine/torch', math.nan):8.2f}x"
                  + f" {r.get('saved/min', math.nan):8.3f}x  " + "; ".join(verdicts))
    if args.objectives:
        bench_objectives(args)
    print(f"(total {time.perf_counter() - t0:.0f} s; on a loaded machine compare only the "
          "ratios, which come from side-by-side samples)")


np = None   # numpy, imported in main() after the thread settings

if __name__ == "__main__":
    main()
