"""Peak memory of one call, with the source of the number named.

``tracemalloc`` sees NumPy's array allocations (NumPy reports them to it) and
Python objects, so it measures the engine, SymPy's lambdified code, finite
differences and the hand-written backward.  It does not see JAX's or
PyTorch's own allocators: for JAX the compiled executable's memory analysis
(CPU) or the device's statistics (GPU) are used instead.
"""
from __future__ import annotations

import gc
import tracemalloc

TRACEMALLOC = "tracemalloc"
JAX_MEMORY_ANALYSIS = "jax-memory-analysis"
GPU_MEMORY_STATS = "gpu-memory-stats"
NOT_MEASURED = "not-measured"


def peak_traced_bytes(fn) -> int:
    """Bytes allocated at the peak of ``fn()`` above what was allocated before it."""
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
