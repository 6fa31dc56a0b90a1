#!/usr/bin/env python
"""Sparse Jacobians of ADBench's bundle adjustment through ``diffcompare.operators``: coloured
forward mode (engine, ``jax-jit``, ``torch``), coloured reverse mode (engine), coloured central
differences (``fd-central``), the peer ``sparsejac`` on ``jax-jit`` (optional extra; its own
colouring, compression and decompression under one ``jax.jit``, given the detected pattern:
``operators.sparse.prepare_jacobian(..., peer="sparsejac")``, its ``evaluate`` timed),
against the dense Jacobian (``operators.jacobian``) where it fits.

Per size and method: ``operators.sparse.jacobian(fn, inputs, method, wrt, mode)`` once (its
pattern, colouring, passes and the seconds of detection and colouring: the *prepare* phase),
then the *evaluation* alone timed in CPU seconds (``time.process_time``, median of
``--samples``): the method's product prepared once (``operators.prepare("pushforward" |
"pullback", ...)``), one product per colour, decompressed (``operators.coloured`` -- the very
calls ``operators.sparse.jacobian`` makes).  Also: Jacobian ÷ objective (the objective on
NumPy, the same function), colours against the lower bound (the most nonzeros in a row),
peak memory of one evaluation (``diffcompare.measure.memory.peak_bytes``: memray's native
hooks when installed, which see NumPy, XLA and torch alike), and the largest error against
a reference (the dense engine Jacobian where it fits, else ``--rows`` rows by engine reverse
mode, ``operators.pullback``).  One BLAS thread.  Ends with the issue's targets, met or
missed, and a cProfile of one evaluation for each method that misses the time target.

    python benchmarks/sparse_jacobian.py                         # tiny, small, medium, ba1, ba2 (~3 min)
    python benchmarks/sparse_jacobian.py --sizes small,medium --samples 5 --no-profile
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

from cpu_median import cpu_median  # noqa: E402 -- benchmarks/, the script's folder
from diffcompare import backends, operators  # noqa: E402
from diffcompare.backends.base import Unavailable  # noqa: E402
from diffcompare.measure.memory import peak_bytes  # noqa: E402
from diffcompare.operators import sparse as sparse_ops  # noqa: E402
from diffcompare.operators.coloured import jacobian_fd, jacobian_forward, jacobian_reverse  # noqa: E402
from diffcompare.problems.catalog.adbench import (BA_ADBENCH_SIZES, ba_sized_inputs,  # noqa: E402
                                                  bundle_adjustment)

SIZES = {"tiny": (4, 50, 200), "small": (8, 160, 640), "medium": (20, 1000, 4000), **BA_ADBENCH_SIZES}
ADBENCH = tuple(BA_ADBENCH_SIZES)
WRT = (0, 1, 2)
#: (label, method, mode): the sparse rows
SPARSE = (("forward, engine-jvp", "engine-jvp", "forward"),
          ("forward, jax-jit", "jax-jit", "forward"),
          ("forward, torch", "torch", "forward"),
          ("central FD, fd-central", "fd-central", "auto"),
          ("reverse, engine", "engine", "reverse"),
          ("forward, sparsejac on jax-jit (peer)", "jax-jit", "sparsejac"))
DENSE = (("dense, engine (m reverse passes)", "engine"),
         ("dense, jax-jit (jax.jacrev)", "jax-jit"),
         ("dense, torch (torch.func.jacrev)", "torch"),
         ("dense, fd-central (2n evaluations)", "fd-central"))
#: which dense Jacobian a sparse row is compared with: the same library's
PAIR = {"engine-jvp": "engine", "engine": "engine", "jax-jit": "jax-jit", "torch": "torch",
        "fd-central": "fd-central"}
REVERSE_MAX_COLOURS = 400            # one VJP per row colour; bound read before colouring
DENSE_ENGINE_MAX_ROWS = 2_000        # the engine's dense Jacobian: one reverse pass per row
TIME_TARGET, DENSE_TARGET = 20.0, 100.0


def flat_objective(inputs):
    """``f(x)`` of the wrt inputs flattened and concatenated, on NumPy, and ``x``."""
    shapes = [inputs[i].shape for i in WRT]
    sizes = [int(np.prod(s)) for s in shapes]
    x0 = np.concatenate([inputs[i].reshape(-1) for i in WRT])

    def f(x):
        args, k = list(inputs), 0
        for i, s, n in zip(WRT, shapes, sizes):
            args[i] = x[k:k + n].reshape(s)
            k += n
        return np.asarray(bundle_adjustment(np, *args), dtype=np.float64).reshape(-1)
    return f, x0


def sparse_row(label, method, mode, inputs, samples, f_flat, x0):
    """One sparse method: (row dict) or (None, why)."""
    t0 = time.process_time()
    note = ""
    try:
        if mode == "sparsejac":
            prepared = sparse_ops.prepare_jacobian(bundle_adjustment, inputs, method, WRT,
                                                   mode="forward", peer="sparsejac")
            r = prepared.evaluate()
        else:
            r = sparse_ops.jacobian(bundle_adjustment, inputs, method=method, wrt=WRT, mode=mode)
    except (operators.OperatorUnsupported, Unavailable) as exc:
        return None, getattr(exc, "reason", str(exc))
    first_cpu = time.process_time() - t0
    t1 = time.perf_counter()
    if mode == "sparsejac":           # jit-compiled in prepare: the product is the whole call
        call = prepared.evaluate
        product_prepare = prepared.prepare_s - r.prepare_s
    elif method == "fd-central":
        step = backends.get(method).step             # the method's step, as the route takes
        call = lambda: jacobian_fd(f_flat, x0, r.pattern, r.colouring, "central",  # noqa: E731
                                   step=step)
    elif r.mode == "forward":
        op = operators.prepare("pushforward", bundle_adjustment, inputs, method, WRT)
        call = lambda: jacobian_forward(lambda v: op.evaluate(inputs, v), r.pattern,  # noqa: E731
                                        r.colouring)
    else:
        op = operators.prepare("pullback", bundle_adjustment, inputs, method, WRT)
        call = lambda: jacobian_reverse(lambda u: op.evaluate(inputs, u), r.pattern,  # noqa: E731
                                        r.colouring)
    if mode != "sparsejac":
        product_prepare = time.perf_counter() - t1
    secs, res = cpu_median(call, samples)
    if not np.array_equal(res.matrix.data, r.matrix.data):
        note += " (re-evaluation differs from operators.sparse.jacobian's matrix!)"
    peak, source = peak_bytes(call)
    return dict(label=label, method=method, secs=secs, matrix=r.matrix, passes=r.passes,
                colours=r.colouring.n_colours, bound=r.colouring.lower_bound,
                prepare=r.detect_s + r.colour_s, product_prepare=product_prepare,
                first_cpu=first_cpu, peak=peak, source=source, call=call, note=note), None


def dense_row(label, method, inputs, samples, n_out, n_in):
    if method == "engine" and n_out > DENSE_ENGINE_MAX_ROWS:
        return None, f"{n_out} rows > {DENSE_ENGINE_MAX_ROWS} reverse passes"
    try:
        op = operators.prepare("jacobian", bundle_adjustment, inputs, method, WRT)
    except operators.OperatorUnsupported as exc:
        return None, "refused by operators: " + exc.reason.split(": one")[0].split(" (0.")[0]
    call = lambda: op.evaluate(inputs)        # noqa: E731
    secs, out = cpu_median(call, samples)
    peak, source = peak_bytes(call)
    return dict(label=label, method=method, secs=secs, dense=out, passes="-", peak=peak,
                source=source, prepare=op.prepare_s, note=""), None


def run(name, samples, rows):
    n_cams, n_pts, n_obs = SIZES[name]
    inputs = ba_sized_inputs(n_cams, n_pts, n_obs, seed=0)
    f_flat, x0 = flat_objective(inputs)
    obj_s, y0 = cpu_median(lambda: bundle_adjustment(np, *inputs), max(samples, 5))
    n_out, n_in = y0.size, x0.size
    results, skipped = [], []
    for label, method, mode in SPARSE:
        if mode == "reverse":
            from diffcompare.operators.sparsity import jacobian_pattern
            col_counts = np.diff(jacobian_pattern(bundle_adjustment, inputs, WRT).matrix.tocsc().indptr)
            if col_counts.max() > REVERSE_MAX_COLOURS:
                skipped.append((label, f"row colours >= {col_counts.max()} (a camera's column "
                                       f"meets all its observations' rows) > {REVERSE_MAX_COLOURS}"))
                continue
        row, why = sparse_row(label, method, mode, inputs, samples, f_flat, x0)
        (results.append(row) if row else skipped.append((label, why)))
    for label, method in DENSE:
        row, why = dense_row(label, method, inputs, samples, n_out, n_in)
        (results.append(row) if row else skipped.append((label, why)))
    dense_engine = next((r for r in results if r["label"].startswith("dense, engine")), None)
    if dense_engine is not None:
        check, ref, ref_name = np.arange(n_out), np.asarray(dense_engine["dense"]), \
            "the dense engine Jacobian"
    else:
        check = np.sort(np.random.default_rng(1).choice(n_out, size=min(rows, n_out), replace=False))
        pull = operators.prepare("pullback", bundle_adjustment, inputs, "engine", WRT)
        ref = np.stack([pull.evaluate(inputs, np.eye(1, n_out, i)[0]) for i in check])
        ref_name = f"{len(check)} rows by engine reverse mode (operators.pullback)"
    nnz = next(r["matrix"].nnz for r in results if "matrix" in r)
    print(f"\n## {name}: {n_cams} cameras, {n_pts} points, {n_obs} observations; "
          f"J {n_out} x {n_in}, {nnz} nonzeros; objective (NumPy) {obj_s * 1e3:.2f} ms CPU")
    print(f"error against {ref_name}; prepare = detection + colouring (wall s), "
          f"+ the product's own prepare (jit) in brackets")
    print("| method | passes | colours (bound) | prepare s | eval CPU s | ÷ objective | peak MiB | max abs error |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        got = (r["matrix"][check].toarray() if "matrix" in r else np.asarray(r["dense"])[check])
        r["err"] = float(np.abs(got - ref).max())
        r["ratio"] = r["secs"] / obj_s
        colours = f"{r['colours']} ({r['bound']})" if "colours" in r else "-"
        prep = (f"{r['prepare']:.3f} (+{r['product_prepare']:.2f})" if "colours" in r
                else f"({r['prepare']:.2f})")
        peak = "n/a" if r["peak"] is None else f"{r['peak'] / 2**20:.1f}"
        print(f"| {r['label']} | {r['passes']} | {colours} | {prep} | {r['secs']:.4f} | "
              f"{r['ratio']:.0f}× | {peak} | {r['err']:.1e} |")
    for label, why in skipped:
        print(f"| {label} | skipped: {why} | | | | | | |")
    for r in results:
        if r.get("note"):
            print(f"note, {r['label']}: {r['note']}")
    sources = sorted({r["source"] for r in results})
    print(f"memory source: {', '.join(sources)}")
    dense = {r["method"]: r for r in results if "dense" in r}
    speedups = [(r["label"], dense[PAIR[r["method"]]]["label"],
                 dense[PAIR[r["method"]]]["secs"] / r["secs"])
                for r in results if "matrix" in r and PAIR[r["method"]] in dense]
    if speedups:
        print("dense ÷ sparse CPU time, same library: " + "; ".join(
            f"{a} vs {b.split(' (')[0]}: {s:.0f}×" for a, b, s in speedups))
    return dict(name=name, results=results, speedups=speedups)


def profile(row, top=10):
    prof = cProfile.Profile()
    prof.enable()
    row["call"]()
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    lines = [ln for ln in buf.getvalue().splitlines() if ln.strip()]
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls"))
    return "\n".join(lines[start - 1:start + top + 1])


def targets(runs, do_profile):
    print("\n## Targets (issue 20)")
    adb = [r for r in runs if r["name"] in ADBENCH]
    if adb:
        by_method = {}
        for run_ in adb:
            for r in run_["results"]:
                if "matrix" in r:
                    by_method.setdefault(r["label"], []).append((run_["name"], r))
        for label, rows in by_method.items():
            worst = max(r["ratio"] for _, r in rows)
            ok = "MET" if worst <= TIME_TARGET else "MISSED"
            print(f"- <= {TIME_TARGET:.0f}x objective at every ADBench size ({label}): {ok}: " +
                  ", ".join(f"{n} {r['ratio']:.1f}x" for n, r in rows))
        met = [label for label, rows in by_method.items()
               if max(r["ratio"] for _, r in rows) <= TIME_TARGET
               and ("forward" in label or "reverse" in label)]
        print(f"  => target (coloured forward or reverse mode): "
              f"{'MET by ' + ', '.join(met) if met else 'MISSED by every AD method'}")
    else:
        print("- <= 20x objective: no ADBench size run (--sizes ba1,ba2)")
    sp = [(run_["name"], s) for run_ in runs for s in run_["speedups"]]
    if sp:
        for name, (a, b, s) in sp:
            print(f"- >= {DENSE_TARGET:.0f}x faster than dense ({name}, {a} vs {b.split(' (')[0]}): "
                  f"{'MET' if s >= DENSE_TARGET else 'MISSED'} ({s:.0f}x)")
    else:
        print("- >= 100x faster than dense: no size where both ran")
    col = [(run_["name"], r) for run_ in runs for r in run_["results"] if "colours" in r]
    bad = [(n, r) for n, r in col if r["colours"] != r["bound"]]
    seen = sorted({f"{n} {'rows' if r['method'] == 'engine' else 'columns'} {r['colours']} "
                   f"({r['bound']})" for n, r in col})
    print(f"- colours = lower bound at every size: {'MET' if not bad else 'MISSED'} "
          f"({', '.join(seen)})")
    if not do_profile:
        return
    last = runs[-1]
    if last["name"] not in ADBENCH:
        return
    for r in last["results"]:
        if "matrix" in r and r["ratio"] > TIME_TARGET:
            print(f"\n### profile: one evaluation of '{r['label']}' at {last['name']} "
                  f"({r['ratio']:.0f}x the objective), cProfile, top entries by own time")
            print(profile(r))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="tiny,small,medium,ba1,ba2")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--rows", type=int, default=5, help="reverse-mode reference rows")
    parser.add_argument("--no-profile", action="store_true")
    args = parser.parse_args()
    runs = [run(name, args.samples, args.rows) for name in args.sizes.split(",")]
    targets(runs, not args.no_profile)


if __name__ == "__main__":
    main()
