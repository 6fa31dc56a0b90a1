"""Measure one backend on one (problem, size, seed, dtype): the rows the runner records.

``measure_cell`` yields a row per phase as soon as it is measured:

- ``prepare``: one call (derivation, code generation, tracing, compiling), and
  what the prepared state keeps (``prepared_bytes``; its parts in ``extra``);
- ``function``: the plain function, timed on the gradient's execution path (jitted for a
  jitted gradient: ``timed_path`` names it), so gradient/function ratios compare like with like;
- ``gradient``: one gradient (a VJP for vector outputs), timed, its peak memory
  with the source named, function evaluations per gradient, and its error
  against the high-precision reference;
- then one row per derivative operator the problem declares (``problem.operators``) or the
  run asks for (``options["operators"]``: ``diffcompare run --operators``), its phase named
  after it (``problems.MEASURED_OPERATORS``), computed through
  :mod:`diffcompare.operators.measured`: its prepare phase timed apart
  (``extra["prepare_s"]``, ``extra["how"]``), then evaluations timed and measured as the
  gradient is, the error against a reference computed apart from the method
  (``accuracy.operator_accuracy``, named in ``reference``); the sparse ones add their
  colours, colour lower bound, passes, pattern nonzeros, mode, detect and colour seconds
  and over-approximated ops to ``extra``.  An operator the method does not compute (or
  one for the other kind of output) gives its row status ``unsupported`` with the reason,
  one that raises an ``error`` row: the other rows stand either way, and the cell's status
  stays the gradient's.

Function and gradient rows record ``compute_dtype``, the dtype of the function's
value as the method computed it (a float32 cell of a method that upcasts says
float64).  Timing repeats the backend's ``timed_vjp``/``timed_function`` call, the
library's own work on inputs converted beforehand, so the adapter's conversions
to and from NumPy are not charged to the method.  Memory is measured in a call of
its own (``measure.memory``), never inside the timed samples; for NumPy-based
methods tracemalloc's peak is kept beside it as a cross-check
(``extra["peak_bytes_tracemalloc"]``).

Where the cell's inputs put an op of the function exactly on its kink (``abs`` at 0, a tie
of ``maximum``; read from one traced evaluation on the engine, :mod:`diffcompare.problems.validity`,
done once per group in ``prepare_group``, never inside a method's timing or evaluation count),
every row the cell yields carries the note in its ``message`` (after the reason of a refusal)
and the kinks in ``extra["kinks"]``: the methods' answers there are conventions.

A backend that cannot run gives one ``cell`` row with status ``unavailable``
or ``unsupported`` and the reason; so does a problem that uses a name outside the xp
contract which the backend's namespace lacks (``contract.verdict``: the same reason on
every such method, while the methods whose namespace has the name run it).  Exceptions propagate: the runner's worker
turns them into ``error`` rows.
"""
from __future__ import annotations

import time

import numpy as np

from .. import backends, problems
from ..backends import BackendError, UnsupportedError
from ..problems import contract, validity
from . import accuracy, memory
from .timing import time_call, time_once


def measure_cell(problem_name, size, seed, backend_name, dtype="float64", options=None):
    """Yield row dicts (see ``diffcompare.results.schema``) for one backend on one cell."""
    options = dict(options or {})
    timing_opts = {k: options.pop(k) for k in ("min_sample_s", "samples") if k in options}
    cache_dir = options.pop("cache_dir", None)
    run_operators = tuple(options.pop("operators", ()))
    problem = problems.get(problem_name)
    backend_options = dict(options.pop("backend_options", None) or {})
    backend = backends.get(backend_name, **backend_options)
    base = dict(problem=problem_name, size=size, seed=seed, backend=backend_name,
                family=backend.family, dtype=dtype)

    reached = ()         # the kinks the cell's inputs reach, once known

    def row(phase, **fields):
        if reached:
            fields["message"] = validity.with_note(fields.get("message"), facts.kink_note)
            fields["extra"] = {**(fields.get("extra") or {}), "kinks": [str(k) for k in reached]}
        return {**base, "phase": phase, "finished_at": time.time(), **fields}

    avail = backend.available()
    if not avail:
        yield row("cell", status="unavailable", message=avail.reason)
        return
    inputs64, inputs = cell_inputs(problem, size, seed, dtype)
    facts = kink_facts(problem, size, seed, dtype, inputs)
    reached = facts.kinks
    # one contract, one verdict: a name outside the xp contract that this method's namespace
    # lacks is the same "unsupported" on every such method (before any reason of its own),
    # never an error on some
    verdict = contract.verdict(problem, inputs64)
    if not verdict.runs_on(contract.method_namespace(backend)):
        yield row("cell", status="unsupported",
                  message=verdict.reason(contract.method_namespace(backend)))
        return
    support = backend.supports(problem)
    if not support:
        yield row("cell", status="unsupported", message=support.reason)
        return
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
    retained = backend.retained_bytes(prepared)
    yield row("prepare", status="ok", time_median_s=seconds, time_min_s=seconds,
              time_samples=[seconds], loops=1, device=info.get("device"),
              expr_ops=info.get("ops_gradient"), expr_ops_cse=info.get("ops_gradient_cse"),
              prepared_bytes=int(sum(retained.values())),
              extra=_scalar_facts({**info, "prepared_parts": retained}))

    value = backends.checked_function(backend, prepared, inputs)
    computed_in = value.dtype.name
    call, _ = backend.timed_function(prepared, inputs)
    t = time_call(call, **timing_opts)
    yield row("function", status="ok", **_timing_fields(t), compute_dtype=computed_in,
              timed_path=backend.timed_path)

    before = prepared.evaluations
    device = _gpu_device(prepared)
    grads, _, gpu_peak = _first_call(
        lambda: backends.checked_vjp(backend, prepared, inputs, cotangent), device)
    evaluations = prepared.evaluations - before
    reference = accuracy.reference_gradient(problem, size, seed, cache_dir=cache_dir)
    errors = accuracy.errors(grads, reference.values)
    call, _ = backend.timed_vjp(prepared, inputs, cotangent)
    peak, source, cross_check = _peak(backend, call, device, gpu_peak,
                                      memory.planned_xla_bytes(prepared.info))
    t = time_call(call, **timing_opts)
    extra = {**(_after_gradient_info(prepared) or {}), **cross_check}
    yield row("gradient", status="ok", **_timing_fields(t), evaluations=evaluations,
              peak_bytes=peak, memory_source=source, compute_dtype=computed_in,
              saved_graph_bytes=_saved_graph_bytes(backend, prepared, inputs),
              error_rel=errors["rel"], error_rho=errors["rho"], reference=reference.label,
              device=ran_on(prepared), extra=_scalar_facts(extra))

    for name in cell_operators(problem, run_operators):
        yield row(name, **_operator_fields(backend, prepared, name, inputs, size, seed,
                                           timing_opts, cache_dir, backend_options))


def cell_operators(problem, run_operators=()) -> tuple:
    """The operators a cell measures: the problem's own, then the run's others, once each."""
    return tuple(dict.fromkeys((*problem.operators, *run_operators)))


def _operator_fields(backend, prepared, name, inputs, size, seed, timing_opts,
                     cache_dir, backend_options=None) -> dict:
    """The row fields of measured operator ``name`` on the method built as the cell's (with
    its ``backend_options``): its prepare timed once, its evaluation
    measured as the gradient is, or the status ``unsupported``/``error`` with the reason (an
    operator's failure is its own row's)."""
    from ..operators import measured

    problem = prepared.problem
    try:
        op = measured.prepare(name, problem, inputs, backend.name, seed, backend_options)
        device = _gpu_device(prepared)
        result, first_s, gpu_peak = _first_call(op.evaluate, device)
        errors, reference = accuracy.operator_accuracy(problem, name, result, size, seed,
                                                       cache_dir=cache_dir, tangent=op.tangent)
        peak, source, cross_check = _peak(backend, op.evaluate, device, gpu_peak)
        opts = dict(timing_opts)
        if first_s > SLOW_OPERATOR_S:     # a slow operator: fewer samples keep the cell short
            opts["samples"] = min(int(opts.get("samples", 7)), SLOW_OPERATOR_SAMPLES)
            opts["warmup"] = 0            # the first call above was the warm-up
        t = time_call(op.evaluate, **opts)
    except UnsupportedError as exc:       # no native way, the other output kind, a declared limit
        return dict(status="unsupported", message=exc.reason)
    except Exception as exc:              # noqa: BLE001 -- the operator's own row says what failed
        import traceback

        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        # a BackendError's detail ("<product> failed: <exception>"): the row names problem and backend
        message = exc.detail if isinstance(exc, BackendError) else f"{type(exc).__name__}: {exc}"
        return dict(status="error", message=message,
                    extra={"exception": type(exc).__name__, "traceback": tb[-4000:]})
    extra = {"how": op.how, "prepare_s": op.prepare_s, "first_call_s": first_s, **op.extra,
             **cross_check}
    if hasattr(result, "passes"):
        extra["passes"] = int(result.passes)
    return dict(status="ok", **_timing_fields(t), peak_bytes=peak,
                memory_source=source, error_rel=None if errors is None else errors["rel"],
                error_rho=None if errors is None else errors["rho"], reference=reference,
                device=ran_on(prepared), extra=_scalar_facts(extra))


#: An operator whose first evaluation takes longer than this many seconds is timed with at
#: most ``SLOW_OPERATOR_SAMPLES`` samples (each one call), so a dense Jacobian cannot take a
#: cell near its time limit.
SLOW_OPERATOR_S = 0.5
SLOW_OPERATOR_SAMPLES = 3


def prepare_group(problem_name, size, seed, dtype="float64", options=None, backend_names=()):
    """Work every backend of one (problem, size, seed, dtype) shares, done by the runner's
    worker before the first backend: importing each backend's library, the accuracy
    references (the gradient's, and the Hessian's and H v's where the cell measures those
    operators; cached on disk, so each cell then only loads them) and the kinks the inputs
    reach (``kink_facts``, kept in this process). No cell's time or time limit then depends
    on which backend ran first, e.g. after a resumed run."""
    for name in backend_names:
        backends.get(name).available()          # imports the library (jax, torch, sympy)
    cache_dir = (options or {}).get("cache_dir")
    problem = problems.get(problem_name)
    accuracy.reference_gradient(problem, size, seed, cache_dir=cache_dir)
    _hessian_references(problem, size, seed, (options or {}).get("operators", ()), cache_dir)
    kink_facts(problem, size, seed, dtype, cell_inputs(problem, size, seed, dtype)[1])


def _hessian_references(problem, size, seed, run_operators, cache_dir):
    """The Hessian references the cell's operators will be judged by
    (``accuracy.reference_hessian``), made and cached before the first method."""
    from ..operators.measured import tangent

    needed = {"hvp" if name == "hvp" else "hessian"
              for name in cell_operators(problem, run_operators)
              if (name.startswith("hessian") or name == "hvp")
              and name not in problem.exact_operators}
    if problem.vector_output:
        return                       # the cells refuse the scalar operators
    n = int(sum(np.size(a) for i, a in enumerate(problem.inputs(size, seed)) if i in problem.wrt))
    for kind in sorted(needed):
        accuracy.reference_hessian(problem, size, seed, tangent(n, seed) if kind == "hvp" else None,
                                   cache_dir=cache_dir)


def cell_inputs(problem, size, seed, dtype) -> tuple:
    """``(inputs in float64, inputs as the cell runs them)`` (:func:`cast_inputs`)."""
    inputs64 = problem.inputs(size, seed)
    return inputs64, cast_inputs(problem, inputs64, dtype)


def kink_facts(problem, size, seed, dtype, inputs):
    """:func:`validity.facts_at` the cell's inputs (its kinks), computed once per process."""
    return validity.facts_at(problem, inputs, key=(size, seed, dtype))


measure_cell.prepare_group = prepare_group


def cast_inputs(problem, inputs64, dtype) -> tuple:
    """The inputs of a cell in ``dtype``: the differentiated ones, and in a float32 cell every
    floating one (the data too, as a float32 model holds them: float64 data would make NumPy
    and the engine compute in float64 and torch refuse the mixed matmul); integers as given.

    >>> import numpy as np
    >>> from diffcompare.problems.problem import Problem
    >>> p = Problem("p", lambda xp, w, x, k: xp.sum(w * x), None, "", wrt=(0,))
    >>> [a.dtype.name for a in cast_inputs(p, (np.ones(2), np.ones(2), np.arange(2)), "float32")]
    ['float32', 'float32', 'int64']
    """
    dtype = np.dtype(dtype)
    lower = dtype == np.float32
    return tuple(a.astype(dtype) if i in problem.wrt or (lower and a.dtype.kind == "f") else a
                 for i, a in enumerate(inputs64))


def _timing_fields(t):
    return dict(time_median_s=t.stats.median, time_iqr_s=t.stats.iqr, time_min_s=t.stats.min,
                time_samples=list(t.samples), loops=t.loops, cpu_share=t.cpu_share,
                load_per_cpu=t.load_per_cpu)


def ran_on(prepared):
    """Where the method computed: the device read back from its output arrays (JAX backends
    record it as ``info["output_device"]``), else the device it says it prepared for."""
    return prepared.info.get("output_device") or prepared.info.get("device")


def _gpu_device(prepared):
    """The GPU a prepared problem runs on (JAX's device), or None on the CPU, where the
    host's allocator hooks see everything."""
    state = prepared.state
    device = state.get("device") if isinstance(state, dict) else getattr(state, "device", None)
    return device if getattr(device, "platform", "cpu") != "cpu" else None


def _first_call(fn, device):
    """``(fn(), seconds, gpu_peak)``: a GPU's peak is a high-water mark that cannot be reset,
    so it is read on the first call (None on the CPU, where ``_peak`` measures around a call)."""
    if device is None:
        result, seconds = time_once(fn)
        return result, seconds, None
    first = []
    start = time.perf_counter()
    gpu_peak = memory.peak_gpu_bytes(lambda: first.append(fn()), device)
    return first[0], time.perf_counter() - start, gpu_peak


def _peak(backend, call, device, gpu_peak, planned=None):
    """Peak bytes of one call, where the number comes from, and a cross-check (``extra``).

    On a GPU: the allocator's peak read on the first call; where an earlier high-water mark
    hid it, the compiled program's ``planned`` bytes (its buffer assignment) if it has one,
    with the reason the allocator could not say (``extra["gpu_peak_hidden"]``)."""
    if device is None:
        return _peak_memory(backend, call)
    if gpu_peak is not None:
        return gpu_peak, memory.GPU_MEMORY_STATS, {}
    hidden = memory.gpu_peak_hidden_reason(device)
    if planned is not None:
        return planned, memory.XLA_BUFFERS, {"gpu_peak_hidden": hidden}
    return None, f"{memory.NOT_MEASURED}: {hidden}", {}


def _peak_memory(backend, call):
    """Peak bytes of one gradient on the CPU, where the number comes from, and
    tracemalloc's peak beside it for NumPy-based methods (a cross-check)."""
    peak, source = memory.peak_bytes(call, numpy_arrays=backend.numpy_arrays)
    cross_check = {}
    if backend.numpy_arrays and source != memory.TRACEMALLOC:
        cross_check["peak_bytes_tracemalloc"] = memory.peak_traced_bytes(call)
    return peak, source, cross_check


def _saved_graph_bytes(backend, prepared, inputs):
    graph_stats = getattr(backend, "graph_stats", None)
    return graph_stats(prepared, inputs)["saved_bytes"] if graph_stats else None


def _after_gradient_info(prepared):
    info = {k: v for k, v in prepared.info.items()
            if k in ("error_estimate_max", "step", "matmul_precision", "device_kind")}
    return info or None


def _scalar_facts(info):
    """The scalar facts of a backend's info (numbers, strings, booleans, NumPy scalars, and
    dicts of them), without its arrays and objects; None if none.  ``make_row`` makes them
    JSON (:mod:`diffcompare.results.jsonio`)."""
    if not info:
        return None
    out = {k: _scalar_facts(v) if isinstance(v, dict) else v for k, v in info.items()
           if v is None or isinstance(v, (bool, int, float, str, np.generic, dict))}
    return out or None


__all__ = ["measure_cell", "BackendError"]
