#!/usr/bin/env python
"""Would numba pay for the compiled engine's programs?  A measurement, not a method (issue 23).

Issue 23's "elementwise fusion" way in: run the compiled engine's generated program
(``engine.compile``, the ``engine-compiled`` backend's program) under ``numba.njit``.  For
each ADBench-style objective of ``compiled_vs_peers.py`` this script takes that program's
source, rewrites it into the subset numba compiles (``numba_source``), compiles it in
chunks (``njit_chunked``: straight-line code of thousands of statements compiles in time
that grows faster than its length when it is one function), and prints, side by side in
one process (CPU time, one thread, pinned, round-robin samples, medians of per-round
ratios): jax-jit, the NumPy program, the numba program, numba's compile seconds (CPU), and
whether numba's gradients equal torch's (float64, rtol 1e-6, atol 1e-8).  A program numba
cannot compile is reported with numba's reason; nothing falls back to NumPy.

The rewrites are textual and cover what the generated programs use: ``out=`` passed by
position (numba takes no ``out=`` keyword), ``np.concatenate`` of a tuple, ``broadcast_to``
as ``np.broadcast_to``, ``np.array(x)`` as ``x.copy()``, and ``x.reshape(s)`` as a helper
that also reshapes the plain floats numba makes of 0-d arrays.  The engine's shape
kernels (``add_reduce``, ``broadcast_binary``, ...) are Python functions numba cannot call:
a program that uses one is reported unsupported.

Usage::

    python benchmarks/numba_feasibility.py                         # every objective
    python benchmarks/numba_feasibility.py --objectives lstm:4     # a short LSTM: ~30 s to compile
    python benchmarks/numba_feasibility.py --objectives lstm --chunk 100
    python benchmarks/numba_feasibility.py --loop-vs-arrays 200   # what a fusing codegen would save

``--loop-vs-arrays N`` compiles one chain of N elementwise statements on 14-element arrays
(``t_k = np.tanh(t_(k-1) * b + a)``, LSTM-like) twice: as N array statements (what the
generated programs are) and as the same N statements on scalars inside one loop over the
elements (what a codegen that fuses elementwise chains would emit), and prints numba's
compile time per statement and the run time of each.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compiled_vs_peers as peers  # noqa: E402  (the worker environment, pinned; round_robin)

import numpy as np  # noqa: E402

RTOL, ATOL = 1e-6, 1e-8


def reshape(x, shape):
    """``x.reshape(shape)``; numba's version (``_numba_reshape``) also takes a float."""
    return np.reshape(x, shape)


def _register_numba_helpers():
    from numba import types
    from numba.extending import overload

    @overload(reshape)
    def _numba_reshape(x, shape):
        if isinstance(x, (types.Float, types.Integer)):   # a 0-d array, which numba makes a float
            return lambda x, shape: np.full(shape, x)
        return lambda x, shape: x.reshape(shape)


_REWRITES = [(re.compile(r", out=(\w+)\)"), r", \1)"),
             (re.compile(r"np\.concatenate\(\[([^\]]*)\], "), r"np.concatenate((\1), "),
             (re.compile(r"(?<![\w.])broadcast_to\("), "np.broadcast_to("),
             (re.compile(r"np\.array\((\w+)\)"), r"\1.copy()"),
             (re.compile(r"(\w+)\.reshape\("), r"reshape(\1, ")]


def numba_source(source: str) -> str:
    """The generated program's source in the subset numba compiles (see the module docstring)."""
    for pattern, repl in _REWRITES:
        source = pattern.sub(repl, source)
    return source


def _names(node, ctx) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def njit_chunked(source: str, namespace: dict, chunk: int):
    """The one function in ``source`` as a numba driver calling ``numba.njit`` functions of
    ``chunk`` statements each: each chunk takes the names it reads (or updates in place)
    that were defined before it, and returns the names it defines that later chunks or
    the return statement read."""
    import numba

    fn = ast.parse(source).body[0]
    params = [a.arg for a in fn.args.args]
    body, ret = fn.body[:-1], fn.body[-1]
    parts = [body[i:i + chunk] for i in range(0, len(body), chunk)]
    reads = [set().union(*(_names(s, ast.Load) for s in c),
                         {s.target.id for s in c if isinstance(s, ast.AugAssign)
                          and isinstance(s.target, ast.Name)}) for c in parts]
    writes = [set().union(*(_names(s, ast.Store) for s in c)) for c in parts]
    needed_after, acc = [None] * len(parts), _names(ret, ast.Load)
    for k in range(len(parts) - 1, -1, -1):
        needed_after[k] = set(acc)
        acc |= reads[k]
    defined, driver = set(params), [f"def _driver({', '.join(params)}):"]
    for k, stmts in enumerate(parts):
        ins, outs = sorted(reads[k] & defined), sorted(writes[k] & needed_after[k])
        returned = ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n in outs], ast.Load()))
        func = ast.FunctionDef(name=f"_chunk{k}", args=ast.arguments(
            posonlyargs=[], args=[ast.arg(arg=n) for n in ins], kwonlyargs=[], kw_defaults=[],
            defaults=[]), body=stmts + [returned], decorator_list=[], type_params=[])
        exec(ast.unparse(ast.fix_missing_locations(func)), namespace)
        namespace[f"_chunk{k}"] = numba.njit(namespace[f"_chunk{k}"])
        targets = ", ".join(outs) + ("," if len(outs) == 1 else "")
        driver.append(f"    ({targets}) = _chunk{k}({', '.join(ins)})" if outs
                      else f"    _chunk{k}({', '.join(ins)})")
        defined |= writes[k]
    driver.append("    " + ast.unparse(ret))
    exec("\n".join(driver), namespace)
    return numba.njit(namespace["_driver"])


def _first_line(exc) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Failed in", "During:", "File "))]
    return (useful or lines or [type(exc).__name__])[0][:160]


def loop_vs_arrays(n: int) -> str:
    """Numba's compile and run time for n elementwise statements, as arrays and fused."""
    import numba

    arrays = (["def chain(a, b):", "    t0 = a * b"]
              + [f"    t{k} = np.tanh(t{k - 1} * b + a)" for k in range(1, n)] + [f"    return t{n - 1}"])
    fused = (["def chain(a, b):", "    out = np.empty_like(a)", "    for i in range(a.shape[0]):",
              "        ai, bi = a[i], b[i]", "        s0 = ai * bi"]
             + [f"        s{k} = np.tanh(s{k - 1} * bi + ai)" for k in range(1, n)]
             + [f"        out[i] = s{n - 1}", "    return out"])
    rng = np.random.default_rng(0)
    a, b = rng.random(14), rng.random(14)
    rows, results = [], []
    for label, lines in (("array statements", arrays), ("one fused loop", fused)):
        namespace = {"np": np}
        exec("\n".join(lines), namespace)
        start = time.process_time()
        fn = numba.njit(namespace["chain"])
        results.append(fn(a, b))
        compile_s = time.process_time() - start
        run = peers.medians(peers.round_robin({label: lambda: fn(a, b)}, 5, 0.02))[label]
        rows.append(f"  {label:17s} compile {compile_s:6.2f} s CPU ({compile_s / n * 1e3:5.1f} ms a"
                    f" statement), run {peers.fmt(run)}")
    assert np.allclose(results[0], results[1], rtol=1e-12, atol=0)
    return f"{n} elementwise statements on 14-element arrays:\n" + "\n".join(rows)


def objective(name, size, chunk, samples, min_time):
    from diffcompare import backends, problems
    from diffcompare.backends.base import as_float64_arrays

    p = problems.get(name)
    inputs, cot = p.inputs(size, 0), p.cotangent(size, 0)
    compiled = backends.get("engine-compiled")
    prepared = compiled.prepare(p, inputs)
    program = prepared.state[1]._variant().grad
    scale = None if p.vector_output or cot is None else float(np.asarray(cot).reshape(-1)[0])

    def free():
        args = compiled._free(prepared, inputs)
        return args + (np.asarray(cot, np.float64),) if p.vector_output else args

    namespace = dict(program.namespace, reshape=reshape)
    start = time.process_time()
    try:
        nf = njit_chunked(numba_source(program.source), namespace, chunk)
        nf(*free())
    except Exception as exc:        # numba's typing and lowering errors: the reason, reported
        return f"{name}:{size}: numba cannot compile the program: {_first_line(exc)}"
    compile_s = time.process_time() - start

    def numba_vjp():
        grads = nf(*free())[1]
        return as_float64_arrays(tuple(g * scale for g in grads) if scale is not None else grads)

    torch = backends.get("torch")
    reference = torch.vjp(torch.prepare(p, inputs), inputs, cot)
    agree = all(np.allclose(g, r, rtol=RTOL, atol=ATOL) for g, r in zip(numba_vjp(), reference))
    jax = backends.get("jax-jit")
    start = time.process_time()
    jprep = jax.prepare(p, inputs)
    jax.vjp(jprep, inputs, cot)
    jax_compile_s = time.process_time() - start
    calls = {"jax-jit": lambda: jax.vjp(jprep, inputs, cot),
             "numpy": lambda: compiled.vjp(prepared, inputs, cot), "numba": numba_vjp}
    times = peers.round_robin(calls, samples, min_time)
    med = peers.medians(times)
    return (f"{name}:{size}: jax-jit {peers.fmt(med['jax-jit'])}  numpy {peers.fmt(med['numpy'])}  "
            f"numba {peers.fmt(med['numba'])} | numpy/jax {peers.round_ratio(times, 'numpy', 'jax-jit'):.2f}"
            f"  numba/jax {peers.round_ratio(times, 'numba', 'jax-jit'):.2f}"
            f"  numba/numpy {peers.round_ratio(times, 'numba', 'numpy'):.2f} | compile s (CPU):"
            f" numba {compile_s:.1f}, jax {jax_compile_s:.1f} | {program.source.count(chr(10))} lines,"
            f" gradients {'equal' if agree else 'DIFFER from'} torch's (rtol {RTOL}, atol {ATOL})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--objectives", default=None,
                    help="comma-separated problem names or name:size (default: compiled_vs_peers' rows)")
    ap.add_argument("--chunk", type=int, default=100, help="statements per numba function")
    ap.add_argument("--samples", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=0.02)
    ap.add_argument("--loop-vs-arrays", type=int, default=0, metavar="N",
                    help="only compile N elementwise statements as arrays and as one fused loop")
    a = ap.parse_args(argv)
    try:
        import numba
    except ImportError:
        raise SystemExit("numba is not installed: pip install numba")
    _register_numba_helpers()
    peers.CLOCK = time.process_time
    if a.loop_vs_arrays:
        print(loop_vs_arrays(a.loop_vs_arrays))
        return
    sizes = dict((n, s) for n, s, _ in peers.OBJECTIVES)
    rows = [(n, s) for n, s, _ in peers.OBJECTIVES]
    if a.objectives:
        rows = [(o.split(":")[0], int(o.split(":")[1]) if ":" in o else sizes[o])
                for o in a.objectives.split(",")]
    print(f"numba {numba.__version__}, numpy {np.__version__}, one thread, pinned, CPU time;"
          f" {a.chunk} statements per numba function; medians, ratios = medians of per-round ratios")
    for name, size in rows:
        print(objective(name, size, a.chunk, a.samples, a.min_time), flush=True)


if __name__ == "__main__":
    main()
