#!/usr/bin/env python
"""Sparse Jacobians of ADBench's bundle adjustment: coloured forward, reverse and central
finite differences (and JAX's jvp, coloured), against the dense Jacobian where it fits.

Per size: *prepare* (pattern detection, column and row colouring) apart from *evaluation*;
colour counts against the lower bound (the most nonzeros in a row of the pattern); CPU time
(``time.process_time``) medians over ``--samples`` calls; Jacobian time ÷ objective time;
the largest error of each sparse result against a reference -- the dense Jacobian where it
fits, else ``--rows`` rows by reverse mode (one engine VJP each).  One BLAS thread.

    python benchmarks/sparse_jacobian.py                         # small, medium, ba1, ba2
    python benchmarks/sparse_jacobian.py --sizes small,medium --samples 5
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

from diffcompare.engine import Tensor, array_api, functional as F, no_grad  # noqa: E402
from diffcompare.operators.coloured import jacobian_fd, jacobian_forward, jacobian_reverse  # noqa: E402
from diffcompare.operators.colouring import colour_columns, colour_rows  # noqa: E402
from diffcompare.operators.sparsity import jacobian_pattern  # noqa: E402
from diffcompare.problems.catalog.adbench import (BA_ADBENCH_SIZES, ba_sized_inputs,  # noqa: E402
                                                  bundle_adjustment)

SIZES = {"small": (8, 160, 640), "medium": (20, 1000, 4000), **BA_ADBENCH_SIZES}
WRT = (0, 1, 2)
DENSE_ENGINE_MAX_ROWS = 2_000       # functional.jacobian: one reverse pass per row
DENSE_JAX_MAX_ENTRIES = 30_000_000
REVERSE_MAX_COLOURS = 400           # one engine VJP per row colour


def flat_problem(inputs, xp_module=None):
    """``f(flat)`` of the wrt inputs flattened and concatenated, and the flat point."""
    shapes = [inputs[i].shape for i in WRT]
    sizes = [int(np.prod(s)) for s in shapes]
    x0 = np.concatenate([inputs[i].reshape(-1) for i in WRT])

    def f(flat, xp=array_api, wrap=Tensor):
        args = [wrap(a) for a in inputs]
        k = 0
        for i, s, n in zip(WRT, shapes, sizes):
            args[i] = flat[k:k + n].reshape(s)
            k += n
        return bundle_adjustment(xp, *args).reshape(-1)
    return f, x0


def cpu_median(call, samples):
    times = []
    for _ in range(samples):
        t = time.process_time()
        out = call()
        times.append(time.process_time() - t)
    return statistics.median(times), out


def jax_forward(inputs, pattern, cols):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    f, x0 = flat_problem(inputs)
    fj = lambda flat: f(flat, jnp, jnp.asarray)       # noqa: E731
    xj = jnp.asarray(x0)
    jvp = jax.jit(lambda v: jax.jvp(fj, (xj,), (v,))[1])
    jvp(jnp.zeros_like(xj)).block_until_ready()        # compile outside the timing
    return lambda: jacobian_forward(lambda v: np.asarray(jvp(jnp.asarray(v))), pattern, cols)


def run(name, samples, rows):
    n_cams, n_pts, n_obs = SIZES[name]
    inputs = ba_sized_inputs(n_cams, n_pts, n_obs, seed=0)
    f, x0 = flat_problem(inputs)
    t = time.process_time()
    pattern = jacobian_pattern(bundle_adjustment, inputs, WRT)
    detect = time.process_time() - t
    t = time.process_time()
    cols = colour_columns(pattern)
    col_s = time.process_time() - t
    t = time.process_time()
    rcols = colour_rows(pattern)
    row_s = time.process_time() - t

    def objective():
        with no_grad():
            return f(Tensor(x0)).data

    obj_s, _ = cpu_median(objective, samples)
    methods = {
        "forward (engine jvp)": lambda: jacobian_forward(lambda v: F.jvp(f, x0, v)[1], pattern, cols),
        "central FD (engine)": lambda: jacobian_fd(lambda x: objective_at(f, x), x0, pattern, cols),
    }
    if rcols.n_colours <= REVERSE_MAX_COLOURS:
        methods["reverse (engine vjp)"] = lambda: jacobian_reverse(
            lambda u: F.vjp(f, x0, u)[1], pattern, rcols)
    try:
        methods["forward (jax jvp, jit)"] = jax_forward(inputs, pattern, cols)
    except ImportError:
        pass
    n_out, n_in = pattern.shape
    reference, ref_name = None, f"{rows} reverse rows"
    if n_out <= DENSE_ENGINE_MAX_ROWS:
        methods["dense (engine jacobian)"] = lambda: F.jacobian(f, x0)
    if n_out * n_in <= DENSE_JAX_MAX_ENTRIES:
        try:
            import jax
            import jax.numpy as jnp

            jax.config.update("jax_enable_x64", True)
            jac = jax.jit(jax.jacrev(lambda flat: f(flat, jnp, jnp.asarray)))
            xj = jnp.asarray(x0)
            jac(xj).block_until_ready()
            methods["dense (jax jacrev, jit)"] = lambda: np.asarray(jac(xj))
        except ImportError:
            pass
    results = {}
    for label, call in methods.items():
        secs, out = cpu_median(call, samples)
        results[label] = (secs, out)
        if label.startswith("dense") and reference is None:
            reference, ref_name = out, label
    if reference is not None:
        check = np.arange(n_out)
        ref_rows = np.asarray(reference)
    else:
        check = np.sort(np.random.default_rng(1).choice(n_out, size=min(rows, n_out),
                                                        replace=False))
        ref_rows = np.stack([F.vjp(f, x0, np.eye(1, n_out, i)[0])[1] for i in check])
    print(f"\n## {name}: {n_cams} cameras, {n_pts} points, {n_obs} observations; "
          f"J {n_out} x {n_in}, {pattern.nnz} nonzeros")
    print(f"prepare: detection {detect:.3f} s (conservative: {pattern.conservative or 'none'}), "
          f"column colouring {col_s:.3f} s -> {cols.n_colours} colours (lower bound "
          f"{cols.lower_bound}), row colouring {row_s:.3f} s -> {rcols.n_colours} colours "
          f"(lower bound {rcols.lower_bound})")
    print(f"objective: {obj_s * 1e3:.2f} ms; error against {ref_name}")
    print(f"| method | passes | CPU s (median) | ÷ objective | max abs error |")
    print("|---|---|---|---|---|")
    for label, (secs, out) in results.items():
        if label.startswith("dense"):
            passes, dense = ("rows" if "engine" in label else "-"), np.asarray(out)
        else:
            passes, dense = out.passes, None
        got = dense[check] if dense is not None else out.matrix[check].toarray()
        err = np.abs(got - ref_rows).max()
        print(f"| {label} | {passes} | {secs:.4f} | {secs / obj_s:.0f} | {err:.1e} |")
    if rcols.n_colours > REVERSE_MAX_COLOURS:
        print(f"| reverse (engine vjp) | {rcols.n_colours} | skipped: {rcols.n_colours} row "
              f"colours (a camera's column is shared by all its observations' rows) | | |")


def objective_at(f, x):
    with no_grad():
        return f(Tensor(x)).data


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="small,medium,ba1,ba2")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--rows", type=int, default=5, help="reverse-mode reference rows")
    args = parser.parse_args()
    for name in args.sizes.split(","):
        run(name, args.samples, args.rows)


if __name__ == "__main__":
    main()
