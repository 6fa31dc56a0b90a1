"""What the torch namespace costs per gradient: this tree's against another revision's.

The torch backend runs ``problem.fn(xp, *args)`` with ``xp`` =
``diffcompare.problems.torch_namespace``, so every ``xp.sum``/``xp.maximum``/... call is
Python on top of torch's own.  This times the backend's ``timed_vjp`` call (what the report
charges to torch) with the namespace of this tree (``current``) and with the module as it was
at ``--baseline`` (default: the last hand-written one, before it was built on
array-api-compat), same backend, same prepared tensors, rounds interleaved (one sample of
each per round, who goes first rotating), in one process.  Load on the machine moves every
number: compare the ratio within one run; ``min c/b`` (fastest samples) is steadier under
load, and ``calls`` (Python and C calls in one gradient, ``sys.setprofile``) not at all.
Both namespaces must give the same gradient (checked).

    python benchmarks/torch_namespace_overhead.py
    python benchmarks/torch_namespace_overhead.py --baseline HEAD~3 --rounds 31
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")     # one thread, as the runner's workers use

import numpy as np  # noqa: E402

from adapter_overhead import python_calls  # noqa: E402  (benchmarks/ is the script's folder)
from diffcompare import backends, problems  # noqa: E402
from diffcompare.measure.timing import time_call  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODULE = "diffcompare/problems/torch_namespace.py"
HAND_WRITTEN = "101477d"          # the last commit with the hand-written namespace
CASES = [("rosenbrock", 4), ("mlp_relu", 4), ("gmm", 5), ("logsumexp", 64), ("lstm", 2)]


def baseline_namespace(rev: str):
    """The namespace module as it was at ``rev`` (git), imported beside the current one."""
    source = subprocess.run(["git", "show", f"{rev}:{MODULE}"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout
    path = pathlib.Path(tempfile.mkdtemp()) / "torch_namespace_baseline.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("torch_namespace_baseline", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module        # its namespace() returns sys.modules[__name__]
    spec.loader.exec_module(module)
    return module.namespace()


def compare(problem, size, baseline, rounds, min_sample_s):
    inputs = problem.inputs(size, 0)
    cotangent = problem.cotangent(size, 0) if problem.vector_output else None
    backend = backends.get("torch")
    calls = {}
    for label, xp in (("current", None), ("baseline", baseline)):
        prepared = backend.prepare(problem, inputs)
        if xp is not None:
            prepared.state = dataclasses.replace(prepared.state, xp=xp)
        calls[label] = backend.timed_vjp(prepared, inputs, cotangent)
    grads = {k: finish(call()) for k, (call, finish) in calls.items()}
    for a, b in zip(grads["current"], grads["baseline"]):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
    samples = {k: [] for k in calls}
    for r in range(rounds):
        order = list(calls)[r % 2:] + list(calls)[:r % 2]
        for k in order:
            samples[k] += time_call(calls[k][0], min_sample_s=min_sample_s, samples=1,
                                    warmup=int(r == 0)).samples
    return ({k: statistics.median(v) for k, v in samples.items()},
            {k: min(v) for k, v in samples.items()},
            {k: python_calls(calls[k][0]) for k in calls})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=HAND_WRITTEN, help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--min-sample-s", type=float, default=0.02)
    args = parser.parse_args(argv)
    if not backends.get("torch").available():
        sys.exit(f"torch backend unavailable: {backends.get('torch').available().reason}")
    import torch
    torch.set_num_threads(1)
    baseline = baseline_namespace(args.baseline)
    print(f"torch timed_vjp per gradient, namespace of this tree (current) vs {args.baseline} "
          f"(baseline); medians of {args.rounds} interleaved rounds")
    print(f"{'problem':11} {'n':>4} {'current µs':>10} {'baseline µs':>11} {'cur/base':>8} "
          f"{'min c/b':>8} {'calls cur/base':>15}")
    for name, size in CASES:
        m, low, calls = compare(problems.get(name), size, baseline, args.rounds, args.min_sample_s)
        print(f"{name:11} {size:4} {m['current'] * 1e6:10.1f} {m['baseline'] * 1e6:11.1f} "
              f"{m['current'] / m['baseline']:8.3f} {low['current'] / low['baseline']:8.3f} "
              f"{calls['current']:>7} / {calls['baseline']:<7}", flush=True)


if __name__ == "__main__":
    main()
