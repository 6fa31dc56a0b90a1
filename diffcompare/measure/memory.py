"""Peak memory of one call on one scale for every method, with the source of the number named.

``peak_bytes(fn)`` is the peak of the bytes allocated during ``fn()`` above what was
allocated when it started.  Its source, named with the number:

- ``memray-native`` (the default when memray is installed): memray's allocator hooks see
  every ``malloc``/``calloc``/``realloc``/``posix_memalign``/``mmap`` of every library in
  the process, so NumPy's arrays, XLA's buffers (JAX on the CPU) and torch's CPU
  allocator are counted alike, together with Python's own objects
  (``trace_python_allocators``).  Starting the tracker patches the loaded libraries,
  about 0.1 to 0.5 s, so it is measured in a call of its own, never in a timed one.
- ``tracemalloc``: Python's tracer; NumPy reports its array buffers to it, JAX and torch
  do not.  The fallback for NumPy-based methods without memray, and the cross-check
  of ``memray-native`` on them (they agree within 10% from 1 MiB up: tested).
- ``gpu-memory-stats``: a GPU's own allocator statistics (device memory, which host
  hooks cannot see).
- ``xla-buffer-assignment``: on a GPU, where the allocator's high-water mark was set before
  the call (by compiling: XLA's autotuning tries kernels with scratch buffers) and cannot be
  reset, a jitted program's own statement of what it allocates when it runs: XLA's buffer
  assignment (``memory_analysis()``), temporaries plus outputs less outputs aliasing inputs
  (:func:`planned_xla_bytes`): the bytes the program asks the allocator for, as host
  sources count requested bytes.  The allocator's own mark is higher by its rounding (it
  hands out a free chunk whole when under twice the request): on an H200, 8.39 MB for
  8.00 planned, 67.3 MB for 36.2, 134.2 MB for 120.2 (``tests/gpu``).
- ``not-measured: <why>``: no source sees this method's allocations here.

>>> import numpy as np
>>> peak, source = peak_bytes(lambda: np.ones(1 << 18))      # 2 MiB of float64
>>> source in (MEMRAY, TRACEMALLOC), 2_000_000 < peak < 2_300_000
(True, True)
"""
from __future__ import annotations

import gc
import os
import sys
import tempfile
import tracemalloc

MEMRAY = "memray-native"
TRACEMALLOC = "tracemalloc"
GPU_MEMORY_STATS = "gpu-memory-stats"
XLA_BUFFERS = "xla-buffer-assignment"
NOT_MEASURED = "not-measured"
#: Every source a row's ``memory_source`` can name (``not-measured: <why>`` besides).
SOURCES = (MEMRAY, TRACEMALLOC, GPU_MEMORY_STATS, XLA_BUFFERS)
MEMRAY_HINT = "memray is not installed: pip install 'diffcompare[memory]'"


def native_available() -> bool:
    """Whether memray (the native source) can be imported."""
    try:
        import memray  # noqa: F401
    except ImportError:
        return False
    return True


def peak_bytes(fn, numpy_arrays: bool = True) -> tuple:
    """``(peak, source)`` of ``fn()``: memray's native tracking when installed, else
    tracemalloc for a method computing on NumPy arrays (``numpy_arrays``), else
    ``(None, "not-measured: <why>")``."""
    if native_available():
        return peak_native_bytes(fn), MEMRAY
    if numpy_arrays:
        return peak_traced_bytes(fn), TRACEMALLOC
    return None, f"{NOT_MEASURED}: {MEMRAY_HINT}"


def peak_native_bytes(fn) -> int:
    """Bytes allocated at the peak of ``fn()`` above what was allocated before it, as
    memray's allocator hooks see them (native libraries and Python objects alike)."""
    import memray

    # memray follows Python calls with a profile hook, and CPython builds a line table
    # for each code object the first time such a hook sees it: tens of KiB that would be
    # charged to the method at small sizes.  One call under a no-op hook builds them first.
    sys.setprofile(_no_op)
    try:
        fn()
    finally:
        sys.setprofile(None)
    gc.collect()
    with tempfile.TemporaryDirectory(prefix="diffcompare-memray-") as folder:
        path = os.path.join(folder, "peak.bin")
        # memray counts only what is allocated while it tracks, so its high-water
        # mark is already above the baseline
        with memray.Tracker(path, native_traces=False, trace_python_allocators=True,
                            file_format=memray.FileFormat.AGGREGATED_ALLOCATIONS):
            fn()
        return int(memray.FileReader(path).metadata.peak_memory)


def _no_op(*args):
    return None


def peak_traced_bytes(fn) -> int:
    """Bytes allocated at the peak of ``fn()`` above what was allocated before it, as
    tracemalloc sees them (Python objects and NumPy's buffers; not JAX's or torch's)."""
    gc.collect()
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return max(0, peak - base)


def peak_gpu_bytes(fn, device) -> int | None:
    """Device bytes at the peak of ``fn()`` above those in use before it, from the GPU
    allocator's statistics (JAX's ``device.memory_stats()``); None when the device keeps
    none, or when an earlier, higher peak hides this one (the statistic is a high-water
    mark since the process started and cannot be reset)."""
    stats = _device_stats(device)
    if stats is None:
        return None
    before_peak, in_use = stats.get("peak_bytes_in_use"), stats.get("bytes_in_use")
    fn()
    after = _device_stats(device) or {}
    peak = after.get("peak_bytes_in_use")
    if None in (before_peak, in_use, peak) or peak <= before_peak:
        return None
    return int(peak - in_use)


def planned_xla_bytes(info: dict, program: str = "gradient") -> int | None:
    """Device bytes a compiled XLA ``program`` allocates per call, by its buffer assignment
    as the JAX backends record it (``<program>_temp_bytes``, ``_output_bytes``,
    ``_alias_bytes`` in ``prepared.info``): temporaries plus outputs, less the outputs that
    reuse an input's buffer.  None when the method recorded no buffer assignment.

    >>> planned_xla_bytes({"gradient_temp_bytes": 100, "gradient_output_bytes": 40,
    ...                    "gradient_alias_bytes": 0})
    140
    >>> planned_xla_bytes({}) is None
    True
    """
    temp, out = info.get(f"{program}_temp_bytes"), info.get(f"{program}_output_bytes")
    if temp is None or out is None:
        return None
    return int(temp) + int(out) - int(info.get(f"{program}_alias_bytes") or 0)


def sources_in_words() -> str:
    """The sources a row can name, for the column's documentation."""
    return ", ".join(f"`{s}`" for s in SOURCES) + ", or `not-measured: <why>`"


def gpu_peak_hidden_reason(device) -> str:
    """Why ``peak_gpu_bytes`` gave None on ``device``, in words, with the numbers."""
    stats = _device_stats(device)
    if stats is None or "peak_bytes_in_use" not in stats:
        return "the GPU's allocator keeps no statistics (device.memory_stats() gave none)"
    return (f"the device's high-water mark ({int(stats['peak_bytes_in_use'])} bytes since the worker "
            "started) was set before this call, by compiling (XLA's autotuning) or an earlier "
            "call, and is above this call's peak; JAX cannot reset it (memory_stats() has no "
            "reset), so this call's own peak is unknown")


def _device_stats(device):
    try:
        stats = device.memory_stats()
    except Exception:          # some plugins do not implement it
        return None
    return dict(stats) if stats else None
