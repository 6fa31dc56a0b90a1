"""Measure one backend on one (problem, size, seed, dtype): the rows the runner records.

``measure_cell`` yields a row per phase as soon as it is measured:

- ``prepare``: one call (derivation, code generation, tracing, compiling);
- ``function``: the plain function, timed, so gradient/function ratios are known;
- ``gradient``: one gradient (a VJP for vector outputs), timed, its peak memory
  with the source named, function evaluations per gradient, and its error
  against the high-precision reference.

A backend that cannot run gives one ``cell`` row with status ``unavailable``
or ``unsupported`` and the reason.  Exceptions propagate: the runner's worker
turns them into ``error`` rows.
"""
from __future__ import annotations

import time

import numpy as np

from .. import backends, problems
from ..backends import BackendError, UnsupportedError
from . import accuracy, memory
from .timing import time_call, time_once


def measure_cell(problem_name, size, seed, backend_name, dtype="float64", options=None):
    """Yield row dicts (see ``diffcompare.runner.schema``) for one backend on one cell."""
    options = dict(options or {})
    timing_opts = {k: options.pop(k) for k in ("min_sample_s", "samples") if k in options}
    cache_dir = options.pop("cache_dir", None)
    problem = problems.get(problem_name)
    backend = backends.get(backend_name, **options.pop("backend_options", {}))
    base = dict(problem=problem_name, size=size, seed=seed, backend=backend_name,
                family=backend.family, dtype=dtype)

    def row(phase, **fields):
        return {**base, "phase": phase, "finished_at": time.time(), **fields}

    avail = backend.available()
    if not avail:
        yield row("cell", status="unavailable", message=avail.reason)
        return
    support = backend.supports(problem)
    if not support:
        yield row("cell", status="unsupported", message=support.reason)
        return

    inputs64 = problem.inputs(size, seed)
    inputs = tuple(a.astype(dtype) if i in problem.wrt else a for i, a in enumerate(inputs64))
    cotangent = problem.cotangent(size, seed)
    n_inputs = int(sum(np.size(inputs[i]) for i in problem.wrt))
    base["n_inputs"] = n_inputs
    support = backend.supports_inputs(problem, inputs)
    if not support:
        yield row("cell", status="unsupported", message=support.reason)
        return

    try:
        prepared, seconds = time_once(lambda: backends.checked_prepare(backend, problem, inputs))
    except UnsupportedError as exc:   # a declared limit hit while preparing (expression swell)
        yield row("cell", status="unsupported", message=exc.reason)
        return
    info = dict(prepared.info)
    yield row("prepare", status="ok", time_median_s=seconds, time_min_s=seconds,
              time_samples=[seconds], loops=1, device=info.get("device"),
              expr_ops=info.get("ops_gradient"), expr_ops_cse=info.get("ops_gradient_cse"),
              extra=_jsonable(info))

    backends.checked_function(backend, prepared, inputs)
    t = time_call(lambda: backend.function(prepared, inputs), **timing_opts)
    yield row("function", status="ok", **_timing_fields(t))

    before = prepared.evaluations
    grads = backends.checked_vjp(backend, prepared, inputs, cotangent)
    evaluations = prepared.evaluations - before
    reference = accuracy.reference_gradient(problem, size, seed, cache_dir=cache_dir)
    errors = accuracy.errors(grads, reference.values)
    peak, source = _peak_memory(backend, prepared, inputs, cotangent)
    t = time_call(lambda: backend.vjp(prepared, inputs, cotangent), **timing_opts)
    yield row("gradient", status="ok", **_timing_fields(t), evaluations=evaluations,
              peak_bytes=peak, memory_source=source,
              saved_graph_bytes=_saved_graph_bytes(backend, prepared, inputs),
              error_rel=errors["rel"], error_rho=errors["rho"], reference=reference.label,
              device=info.get("device"), extra=_jsonable(_after_gradient_info(prepared)))


def prepare_group(problem_name, size, seed, dtype="float64", options=None, backend_names=()):
    """Work every backend of one (problem, size, seed, dtype) shares, done by the runner's
    worker before the first backend: importing each backend's library, and the accuracy
    reference (cached on disk, so each cell then only loads it). No cell's time or time
    limit then depends on which backend ran first, e.g. after a resumed run."""
    for name in backend_names:
        backends.get(name).available()          # imports the library (jax, torch, sympy)
    cache_dir = (options or {}).get("cache_dir")
    accuracy.reference_gradient(problems.get(problem_name), size, seed, cache_dir=cache_dir)


measure_cell.prepare_group = prepare_group


def _timing_fields(t):
    return dict(time_median_s=t.median, time_iqr_s=t.iqr, time_min_s=t.min,
                time_samples=list(t.samples), loops=t.loops)


def _peak_memory(backend, prepared, inputs, cotangent):
    """Peak bytes of one gradient and where the number comes from."""
    if backend.family == "jax":
        info = prepared.info
        stats = info.get("device_memory_stats")
        if stats and stats.get("peak_bytes_in_use") is not None:
            return int(stats["peak_bytes_in_use"]), memory.GPU_MEMORY_STATS
        analysis = info.get("memory_analysis")
        if analysis:
            total = sum(int(analysis.get(k) or 0) for k in
                        ("temp_size_in_bytes", "output_size_in_bytes", "argument_size_in_bytes"))
            return total, memory.JAX_MEMORY_ANALYSIS
        return None, memory.NOT_MEASURED
    if backend.family == "torch":
        return None, memory.NOT_MEASURED   # torch's CPU allocator is invisible to tracemalloc
    return memory.peak_traced_bytes(lambda: backend.vjp(prepared, inputs, cotangent)), memory.TRACEMALLOC


def _saved_graph_bytes(backend, prepared, inputs):
    graph_stats = getattr(backend, "graph_stats", None)
    return graph_stats(prepared, inputs)["saved_bytes"] if graph_stats else None


def _after_gradient_info(prepared):
    info = {k: v for k, v in prepared.info.items() if k in ("error_estimate_max", "step")}
    return info or None


def _jsonable(info):
    """Keep the JSON-friendly scalar facts of a backend's info (no arrays, no objects)."""
    if not info:
        return None
    out = {}
    for k, v in info.items():
        if isinstance(v, (bool, int, float, str)) or v is None:
            out[k] = v
        elif isinstance(v, np.generic):
            out[k] = v.item()
        elif isinstance(v, dict):
            out[k] = _jsonable(v)
    return out or None


__all__ = ["measure_cell", "BackendError"]
