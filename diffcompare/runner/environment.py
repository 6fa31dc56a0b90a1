"""The environment workers run in, and the record of the machine a run used.

Every worker gets one BLAS/OpenMP/XLA thread (and passes that on to its own
children through the environment), so a timing measures the method, not how
many cores the library grabbed.

Devices.  A worker for a group of CPU cells gets ``JAX_PLATFORMS=cpu``: its JAX never
starts CUDA, so it neither takes GPU memory nor waits for the GPU.  A worker for a group of
GPU cells (one at a time per GPU: :func:`~.cpu_slots.gpu_slot`) gets ``GPU_WORKER_ENV``:
JAX's preallocation of 75% of the GPU off (``XLA_PYTHON_CLIENT_PREALLOCATE=false``:
it allocates what it uses, and its allocator statistics show that), and
``CUDA_VISIBLE_DEVICES`` naming the slot's GPU.  A value the user set for one of
``XLA_MEMORY_ENV`` (e.g. ``XLA_PYTHON_CLIENT_MEM_FRACTION=.5``) is kept; ``run.json``
records the settings the GPU workers ran with.
"""
from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import platform
import re
import socket
import subprocess
import sys

from ..malloc_settings import MALLOC_ENV

#: Environment settings that pin numerical libraries to one thread.
THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
}
#: XLA flags for a single-threaded CPU (Eigen) backend.
XLA_SINGLE_THREAD_FLAGS = ("--xla_cpu_multi_thread_eigen=false", "intra_op_parallelism_threads=1")


#: A CPU worker's JAX sees the CPU only (never starts CUDA, never touches the GPU).
CPU_WORKER_ENV = {"JAX_PLATFORMS": "cpu"}
#: A GPU worker's JAX allocates on demand instead of preallocating 75% of the GPU
#: (JAX's "GPU memory allocation" documentation); the user's own values win.
GPU_WORKER_ENV = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
#: JAX's GPU memory settings, recorded in run.json.
XLA_MEMORY_ENV = ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
                  "XLA_PYTHON_CLIENT_ALLOCATOR")


def worker_env(base=None, device: str = "cpu", gpu: int | None = None) -> dict:
    """``base`` (default ``os.environ``) with the single-thread settings applied;
    existing ``XLA_FLAGS`` are kept and the single-thread flags appended.

    ``device="cpu"``: ``JAX_PLATFORMS=cpu``.  ``device="gpu"``: ``GPU_WORKER_ENV`` under the
    user's own settings, and with ``gpu`` (a slot's index) ``CUDA_VISIBLE_DEVICES`` naming
    that GPU alone (the ``gpu``-th of the user's ``CUDA_VISIBLE_DEVICES`` when set).

    >>> worker_env({}, "cpu")["JAX_PLATFORMS"]
    'cpu'
    >>> env = worker_env({"CUDA_VISIBLE_DEVICES": "2,3"}, "gpu", gpu=1)
    >>> env["CUDA_VISIBLE_DEVICES"], env["XLA_PYTHON_CLIENT_PREALLOCATE"], "JAX_PLATFORMS" in env
    ('3', 'false', False)
    """
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device must be 'cpu' or 'gpu', not {device!r}.")
    env = dict(os.environ if base is None else base)
    if device == "cpu":
        env.update(CPU_WORKER_ENV)
    else:
        if env.get("JAX_PLATFORMS", "").strip() == "cpu":
            del env["JAX_PLATFORMS"]          # a CPU-only setting would hide the GPU asked for
        for key, value in GPU_WORKER_ENV.items():
            env.setdefault(key, value)
        if gpu is not None:
            visible = [v for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
            env["CUDA_VISIBLE_DEVICES"] = visible[gpu] if gpu < len(visible) else str(gpu)
    env.update(THREAD_ENV)
    # glibc's default hands buffers of a few MB back to the OS after each call and
    # page-faults them in on the next (some NumPy gradients took twice as long): freed
    # memory stays in the process, alike for all methods
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


_JAX_PROBE = """
import json, jax
from diffcompare.backends import jax_runtime
out = {"devices": [{"platform": d.platform, "kind": getattr(d, "device_kind", "")}
                   for d in jax.devices()]}
try:
    gpus = jax_runtime.gpu_devices(jax)
    if gpus:
        out["gpu_platform_version"] = getattr(gpus[0].client, "platform_version", None)
        out["devices"] = out["devices"] + [{"platform": d.platform, "kind": d.device_kind}
                                           for d in gpus if d not in jax.devices()]
except jax_runtime.GpuStartError as exc:
    out["gpu_error"] = str(exc)
print(json.dumps(out))
"""

#: The CUDA build's packages whose versions run.json records, by name pattern: JAX's plugin and
#: PJRT for any CUDA major version (cuda12 from PyPI's jax[cuda12], cuda13 on newer images),
#: and the CUDA runtime and cuDNN wheels they load.
GPU_PACKAGE_PATTERN = re.compile(r"^(jax-cuda\d+-(plugin|pjrt)|nvidia-cuda-runtime(-cu\d+)?"
                                 r"|nvidia-cudnn(-cu\d+)?)$")


def gpu_packages() -> dict:
    """``{distribution: version}`` of the installed CUDA packages (GPU_PACKAGE_PATTERN)."""
    found = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if GPU_PACKAGE_PATTERN.match(name):
            found[name] = dist.version
    return dict(sorted(found.items()))


def _nvidia_driver() -> str | None:
    """The NVIDIA driver version from ``nvidia-smi`` (None without it)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.stdout.strip().splitlines() if out.returncode == 0 else []
    return lines[0].strip() if lines else None


@functools.lru_cache(maxsize=1)
def accelerators(timeout_s: float = 60.0) -> dict:
    """Devices as JAX sees them, asked in a subprocess started as a GPU worker is (so the
    runner itself never imports JAX, and the probe does not preallocate the GPU):
    ``{"jax_devices": [...], "gpu": "<kind>" or None, "gpu_count": n, "cuda": {...}}``;
    ``gpu_error`` says why a GPU JAX has a plugin for failed to start."""
    if _version("jax") is None:
        return {"jax_devices": None, "gpu": None, "gpu_count": 0, "note": "jax not installed"}
    try:
        out = subprocess.run([sys.executable, "-c", _JAX_PROBE], capture_output=True, text=True,
                             timeout=timeout_s, env=worker_env(device="gpu"))
        probe = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else None
    except (subprocess.TimeoutExpired, OSError, ValueError, IndexError):
        probe = None
    if not isinstance(probe, dict):
        return {"jax_devices": None, "gpu": None, "gpu_count": 0,
                "note": "could not ask jax for its devices"}
    devices = probe["devices"]
    gpus = [d["kind"] or d["platform"] for d in devices if d["platform"] in ("gpu", "cuda", "rocm")]
    found = {"jax_devices": devices, "gpu": gpus[0] if gpus else None, "gpu_count": len(gpus)}
    if probe.get("gpu_error"):
        found["gpu_error"] = probe["gpu_error"]
    if gpus or probe.get("gpu_error"):
        found["cuda"] = {"platform_version": probe.get("gpu_platform_version"),
                         "driver": _nvidia_driver(),
                         **gpu_packages()}
    return found


def xla_memory_settings() -> dict:
    """The XLA memory settings a GPU worker runs with (unset ones: None)."""
    env = worker_env(device="gpu")
    return {key: env.get(key) for key in XLA_MEMORY_ENV}


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
        "gpu_worker_env": xla_memory_settings(),
        "hostname": socket.gethostname(),
    }
