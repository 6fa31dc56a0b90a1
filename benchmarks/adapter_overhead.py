"""What the adapter adds to a method's time: the report's timed call against a bare loop.

For each backend (jax-jit, jax-eager, torch, engine) and problem, three times per gradient,
this process's CPU time (``time.process_time``: the time another process holds the CPU is
left out), medians of interleaved rounds (one sample of each per round) in one process that
runs as the runner's workers do (``runner.environment``: one BLAS/OpenMP/XLA thread, the
malloc settings; the script re-executes itself once to apply them) pinned to one CPU:

- ``timed``: what ``diffcompare.measure.cell`` times, the backend's ``timed_vjp`` call
  (the library's work on inputs converted in advance, computed to completion);
- ``via vjp``: the whole adapter, ``backend.vjp`` (its conversions to and from NumPy
  included), which is what a method's time used to be;
- ``bare``: the loop a user of the library writes, on the same ``problem.fn`` with the
  library's own array namespace: ``jax.jit(jax.grad(f))(x).block_until_ready()``,
  ``jax.grad(f)(x).block_until_ready()``, ``torch.autograd.grad(f(x), x)`` on a fresh
  leaf, and the engine's own ``autograd.grad(f(x), x)`` on a fresh leaf.

``timed / bare`` (the median of the per-round ratios) is the overhead the report charges to
a method; the target is <= 1.05.
Load on the machine moves every number, so compare ratios within one run; ``min t/b``
(fastest samples) is steadier under load, and ``calls timed/bare`` (Python and C function
calls in one gradient, counted with ``sys.setprofile``) does not depend on load at all.

    python benchmarks/adapter_overhead.py                 # softplus n = 1024 and two catalog problems
    python benchmarks/adapter_overhead.py --rounds 31 --min-sample-s 0.05
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import engine_vs_peers as peers  # (single_threaded: the runner's worker environment)
from diffcompare import backends, problems
from diffcompare.measure.timing import time_call
from diffcompare.problems import Problem


def _softplus(xp, x):
    return xp.sum(xp.log(1 + xp.exp(x)))


SOFTPLUS = Problem(name="softplus", fn=_softplus, description="sum(log(1 + exp(x)))",
                   make_inputs=lambda n, s: (np.random.default_rng(s).standard_normal(n),))


# --- bare loops: the library alone, as its users write it --------------------------------

def _partial(problem, inputs, namespace, convert):
    """``f(x)`` of the differentiated argument (one), the others converted once."""
    (w,) = problem.wrt
    rest = [convert(a) for a in inputs]

    def f(x):
        args = list(rest)
        args[w] = x
        return problem.fn(namespace, *args)

    return f, convert(inputs[w])


def bare_jax(problem, inputs, jit):
    import jax

    jax.config.update("jax_enable_x64", True)       # a user sets it once for the process
    f, x = _partial(problem, inputs, jax.numpy, jax.numpy.asarray)
    g = jax.jit(jax.grad(f)) if jit else jax.grad(f)
    return (lambda: g(x).block_until_ready()), np.asarray


def bare_torch(problem, inputs):
    import torch

    from diffcompare.problems import torch_namespace

    f, x = _partial(problem, inputs, torch_namespace.namespace(), torch.from_numpy)

    def call():
        leaf = x.detach().requires_grad_(True)
        return torch.autograd.grad(f(leaf), leaf)[0]

    return call, lambda g: g.numpy()


def bare_engine(problem, inputs):
    from diffcompare.engine import Tensor, array_api, autograd

    f, x = _partial(problem, inputs, array_api, Tensor)

    def call():
        leaf = Tensor(x.data, requires_grad=True)
        return autograd.grad(f(leaf), leaf)[0]

    return call, lambda g: np.asarray(g.data)


BARE = {"jax-jit": lambda p, x: bare_jax(p, x, jit=True),
        "jax-eager": lambda p, x: bare_jax(p, x, jit=False),
        "torch": bare_torch, "engine": bare_engine}


def python_calls(fn) -> int:
    """Python and C functions called by one ``fn()``: a count that load cannot move, so it
    shows what the adapter adds even where the timings are noise."""
    count = 0

    def tally(frame, event, arg):
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(tally)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count - 1          # the setprofile(None) call itself


def compare(backend_name, problem, size, rounds, min_sample_s):
    """Medians (CPU seconds) of the timed call, the whole vjp and the bare loop, interleaved;
    the median of the per-round ratios timed / bare; the fastest samples; calls per gradient."""
    inputs = problem.inputs(size, 0)
    backend = backends.get(backend_name)
    prepared = backend.prepare(problem, inputs)
    timed, finish = backend.timed_vjp(prepared, inputs)
    bare, to_numpy = BARE[backend_name](problem, inputs)
    want = backend.vjp(prepared, inputs)[0]
    np.testing.assert_allclose(finish(timed())[0], want, rtol=1e-12)
    np.testing.assert_allclose(to_numpy(bare()), want, rtol=1e-10)   # the bare loop computes the same
    contenders = {"timed": timed, "via vjp": lambda: backend.vjp(prepared, inputs), "bare": bare}
    samples = {k: [] for k in contenders}
    # one sample per contender per round, rounds interleaved: load that comes and goes
    # falls on all three alike
    for r in range(rounds):
        order = list(contenders)[r % 3:] + list(contenders)[:r % 3]     # rotate who goes first
        for k in order:
            samples[k] += time_call(contenders[k], min_sample_s=min_sample_s, samples=1,
                                    warmup=int(r == 0), clock=time.process_time).samples
    per_round = statistics.median(t / b for t, b in zip(samples["timed"], samples["bare"]))
    return ({k: statistics.median(v) for k, v in samples.items()}, per_round,
            {k: min(v) for k, v in samples.items()},
            {k: python_calls(contenders[k]) for k in ("timed", "bare")})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--min-sample-s", type=float, default=0.02)
    parser.add_argument("--backends", default="jax-jit,jax-eager,torch,engine")
    args = parser.parse_args(argv)
    print(f"adapter_overhead: {peers.single_threaded()}, CPU time (process_time)")
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        pass
    cases = [(SOFTPLUS, 1024), (problems.get("logsumexp"), 1024), (problems.get("rosenbrock"), 64)]
    print(f"{'backend':10} {'problem':11} {'n':>5} {'timed µs':>9} {'via vjp µs':>10} {'bare µs':>8} "
          f"{'timed/bare':>10} {'vjp/bare':>9} {'min t/b':>8} {'calls timed/bare':>16}")
    print("(µs: medians; timed/bare: the median of the per-round ratios, each round's samples "
          "taken back to back; vjp/bare: of the medians)")
    worst = 0.0
    for name in args.backends.split(","):
        if not backends.get(name).available():
            print(f"{name:10} unavailable: {backends.get(name).available().reason}")
            continue
        for problem, size in cases:
            m, ratio, low, calls = compare(name, problem, size, args.rounds, args.min_sample_s)
            worst = max(worst, ratio)
            print(f"{name:10} {problem.name:11} {size:5} {m['timed'] * 1e6:9.1f} {m['via vjp'] * 1e6:10.1f} "
                  f"{m['bare'] * 1e6:8.1f} {ratio:10.3f} {m['via vjp'] / m['bare']:9.3f} "
                  f"{low['timed'] / low['bare']:8.3f} {calls['timed']:>7} / {calls['bare']:<7}", flush=True)
    print(f"worst timed/bare: {worst:.3f} (target <= 1.05); 'min t/b' is the ratio of the "
          "fastest samples, steadier when the machine is loaded")


if __name__ == "__main__":
    main()
