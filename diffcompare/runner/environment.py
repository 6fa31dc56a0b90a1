"""The environment workers run in, and the record of the machine a run used.

Every worker gets one BLAS/OpenMP/XLA thread (and passes that on to its own
children through the environment), so a timing measures the method, not how
many cores the library grabbed.
"""
from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import platform
import socket
import subprocess
import sys

#: Environment settings that pin numerical libraries to one thread.
THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
}
#: glibc's default hands buffers of a few hundred KB back to the OS after each
#: call and page-faults them in again on the next, which doubled some NumPy
#: gradient timings; these keep freed memory in the process, alike for all methods.
MALLOC_ENV = {
    "MALLOC_MMAP_THRESHOLD_": "67108864",
    "MALLOC_TRIM_THRESHOLD_": "134217728",
}
#: XLA flags for a single-threaded CPU (Eigen) backend.
XLA_SINGLE_THREAD_FLAGS = ("--xla_cpu_multi_thread_eigen=false", "intra_op_parallelism_threads=1")


def worker_env(base=None) -> dict:
    """``base`` (default ``os.environ``) with the single-thread settings applied;
    existing ``XLA_FLAGS`` are kept and the single-thread flags appended."""
    env = dict(os.environ if base is None else base)
    env.update(THREAD_ENV)
    env.update(MALLOC_ENV)
    flags = env.get("XLA_FLAGS", "").split()
    for flag in XLA_SINGLE_THREAD_FLAGS:
        key = flag.split("=")[0]
        flags = [f for f in flags if f.split("=")[0] != key]
        flags.append(flag)
    env["XLA_FLAGS"] = " ".join(flags)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def pin_to_one_cpu() -> int | None:
    """Pin this process to one CPU (the highest allowed): XLA's flags alone do not
    keep JAX on one thread, the affinity mask does.  Returns the CPU, or None
    where the platform cannot pin."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpu = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return cpu


def _version(dist: str):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


_JAX_PROBE = ("import json, jax; "
              "print(json.dumps([{'platform': d.platform, 'kind': getattr(d, 'device_kind', '')} "
              "for d in jax.devices()]))")


@functools.lru_cache(maxsize=1)
def accelerators(timeout_s: float = 60.0) -> dict:
    """Devices as JAX sees them, asked in a subprocess (so the runner itself never
    imports JAX): ``{"jax_devices": [...], "gpu": "<kind>" or None}``."""
    if _version("jax") is None:
        return {"jax_devices": None, "gpu": None, "note": "jax not installed"}
    try:
        out = subprocess.run([sys.executable, "-c", _JAX_PROBE], capture_output=True, text=True,
                             timeout=timeout_s, env=worker_env())
        devices = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else None
    except (subprocess.TimeoutExpired, OSError, ValueError, IndexError):
        devices = None
    if devices is None:
        return {"jax_devices": None, "gpu": None, "note": "could not ask jax for its devices"}
    gpus = [d["kind"] or d["platform"] for d in devices if d["platform"] in ("gpu", "cuda", "rocm")]
    return {"jax_devices": devices, "gpu": gpus[0] if gpus else None}


def capture_environment() -> dict:
    """Versions, CPU, cores, GPU (via JAX), thread settings and host of this machine."""
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "versions": {name: _version(name) for name in
                     ("diffcompare", "numpy", "sympy", "mpmath", "pandas", "jax", "jaxlib", "torch")},
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        **accelerators(),
        "thread_env": {k: v for k, v in worker_env().items() if k in THREAD_ENV or k == "XLA_FLAGS"},
        "hostname": socket.gethostname(),
    }
