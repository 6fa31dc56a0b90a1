"""Keep freed memory in the process: glibc's malloc thresholds that the runner's workers use.

glibc serves a large allocation with its own ``mmap`` and returns it to the OS on ``free``
(above a threshold it raises up to 32 MiB as it goes), and trims the heap's free top
above another; a NumPy program that makes the same large temporaries on every call then
page-faults them in again each time. The compiled engine's GMM gradient (``gmm_10k``, K=50:
temporaries of 4 MB) measured 2,900 minor faults and 136-175 ms a call in a plain process,
0 faults and 114-119 ms with these settings (``benchmarks/README.md``, steady times). The
runner's workers get them through the environment (``MALLOC_ENV``, read by glibc at process
start), so every method is timed alike; :func:`keep_freed_memory` applies the same to a
running process, for timing in your own session::

    import diffcompare.malloc_settings as malloc_settings
    malloc_settings.keep_freed_memory()    # True where glibc took them

The cost: up to ``TRIM_THRESHOLD`` bytes of freed memory stay with the process, and blocks
under ``MMAP_THRESHOLD`` come from the heap.
"""
from __future__ import annotations

import ctypes
import ctypes.util

#: Allocations below this come from the heap (and are reused there), not from their own mmap.
MMAP_THRESHOLD = 64 << 20
#: The heap's free top is given back to the OS only above this.
TRIM_THRESHOLD = 128 << 20
#: The same, as the environment variables glibc reads at process start (the runner's workers).
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD),
              "MALLOC_TRIM_THRESHOLD_": str(TRIM_THRESHOLD)}

# mallopt's parameter numbers (glibc's malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory() -> bool:
    """Apply ``MMAP_THRESHOLD`` and ``TRIM_THRESHOLD`` to this process with glibc's
    ``mallopt``; True where both were taken, False where the C library is not glibc (macOS,
    musl, Windows: nothing changes there)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
