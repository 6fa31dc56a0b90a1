"""The JAX runtime the JAX backends and the JAX operators share: importing JAX (``import_jax``,
``Unavailable`` with the install hint when it is missing), its thread-local 64-bit mode
(``x64_scope``), the device a computation runs on (``DEVICES``, ``pick_device``, ``gpu_devices``,
``GpuStartError`` for a GPU that cannot start, ``device_support``, ``output_device``,
``describe_device``, ``jax_device_memory_stats``), the float32 matmul precision
(``MATMUL_PRECISIONS``), ``placement`` (all three for tracing and calls) and
``block_until_ready``.

The module imports without JAX.
"""
from __future__ import annotations

import contextlib

from .base import Support, Unavailable

INSTALL_HINT = "jax is not installed: pip install 'diffcompare[jax]'"


# --- JAX setup ------------------------------------------------------------------------

def import_jax():
    """``jax`` (``Unavailable`` if it cannot be imported).  Its global 64-bit setting is
    left alone: the backends enter ``x64_scope`` around their work."""
    try:
        import jax
        import jax.numpy  # noqa: F401
    except ImportError as exc:
        raise Unavailable(f"{INSTALL_HINT} ({exc})") from exc
    return jax


def x64_scope(jax, enabled: bool = True):
    """A context in which JAX's 64-bit mode is ``enabled`` (or not), restored on exit and
    local to the thread, so code outside it keeps the process's own setting.

    >>> jax = import_jax()
    >>> before = jax.config.read("jax_enable_x64")
    >>> with x64_scope(jax, True):
    ...     print(jax.numpy.zeros(1, dtype="float64").dtype)
    float64
    >>> jax.config.read("jax_enable_x64") == before
    True
    """
    scope = getattr(jax, "enable_x64", None)          # jax >= 0.6
    if scope is None:
        from jax.experimental import enable_x64 as scope
    return scope(enabled)


#: The devices a JAX backend can be asked for (the default first).
DEVICES = ("cpu", "gpu")
#: JAX's float32 matrix-product precisions a backend may be asked for
#: (``jax.default_matmul_precision``); "highest" is full float32 on every device.
MATMUL_PRECISIONS = ("highest", "float32", "high", "tensorfloat32", "bfloat16", "default")
DEFAULT_MATMUL_PRECISION = "highest"
GPU_INSTALL_HINT = ("install JAX's CUDA build on a machine with an NVIDIA GPU: "
                    "pip install 'diffcompare[gpu]' (jax[cuda12])")


class GpuStartError(RuntimeError):
    """A GPU was asked for and JAX sees the hardware or its plugin, but could not start it
    (CUDA failed to initialize, out of memory at start-up, ...): the run must not go on
    quietly on the CPU."""


def _gpu_start_failure(jax, exc) -> str | None:
    """JAX's reason a GPU backend failed to start, or None when there simply is none.

    ``jax.devices("gpu")`` says "Unknown backend" both when no GPU plugin is installed and
    when the CUDA plugin failed quietly at start-up; JAX keeps the plugin's own error in
    ``xla_bridge._backend_errors``.  With ``JAX_PLATFORMS`` naming cuda the failure is loud
    instead ("Unable to initialize backend 'cuda': ...")."""
    text = str(exc)
    if "Unable to initialize backend" in text or "failed to initialize" in text:
        return text
    try:
        from jax._src import xla_bridge
        errors = dict(getattr(xla_bridge, "_backend_errors", {}) or {})
    except Exception:          # a JAX without the private table: only the message counts
        errors = {}
    for platform in ("cuda", "rocm", "gpu"):
        if platform in errors:
            return f"Unable to initialize backend '{platform}': {errors[platform]}"
    return None


def gpu_devices(jax) -> list:
    """JAX's GPUs; [] when it has none; ``GpuStartError`` when one failed to start."""
    try:
        return list(jax.devices("gpu"))
    except RuntimeError as exc:       # "Unknown backend: 'gpu' requested ..."
        cause = _gpu_start_failure(jax, exc)
        if cause is not None:
            raise GpuStartError(
                f"the GPU was asked for but JAX could not start it ({cause}); nothing ran on the "
                "CPU instead. Check `nvidia-smi`, that no other process holds the GPU's memory "
                "(XLA_PYTHON_CLIENT_PREALLOCATE=false), and the CUDA plugin's version "
                "(pip install 'diffcompare[gpu]').") from exc
        return []


def check_device(which) -> str:
    """``which`` if it is one of ``DEVICES``, else a ``ValueError`` that lists them."""
    if which not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(map(repr, DEVICES))}, not {which!r} "
                         "(the GPU is used only when asked for: device='gpu').")
    return which


def pick_device(jax, which: str = "cpu"):
    """The device to run on: the first CPU for "cpu"; for "gpu" the first GPU, ``Unavailable``
    when JAX has none, ``GpuStartError`` when one failed to start.  Never another device."""
    check_device(which)
    if which == "gpu":
        gpus = gpu_devices(jax)
        if not gpus:
            raise Unavailable(f"the GPU was asked for but JAX sees none (its devices: "
                              f"{', '.join(sorted({d.platform for d in jax.devices()}))}); "
                              f"{GPU_INSTALL_HINT}.")
        return gpus[0]
    return jax.devices("cpu")[0]


def device_support(which: str) -> Support:
    """Whether a JAX backend asked for device ``which`` can run here: always for the CPU; for
    the GPU when JAX has one (the reason when not).  A GPU that fails to start raises
    ``GpuStartError``: that is an error of the run, not a missing feature of the machine."""
    if check_device(which) == "gpu":
        try:
            pick_device(import_jax(), "gpu")
        except Unavailable as exc:
            return Support(False, str(exc))
    return Support(True)


def output_device(out) -> str | None:
    """``describe_device`` of the device holding the first array of ``out`` (an array or a
    tuple/list of them), read back from the array itself; None for anything else."""
    for a in (out if isinstance(out, (tuple, list)) else (out,)):
        devices = getattr(a, "devices", None)
        if callable(devices):
            found = sorted(devices(), key=lambda d: d.id)
            if found:
                return describe_device(found[0])
    return None


def check_matmul_precision(precision) -> str:
    if precision not in MATMUL_PRECISIONS:
        raise ValueError(f"matmul_precision must be one of {', '.join(MATMUL_PRECISIONS)}, "
                         f"not {precision!r}.")
    return precision


def describe_device(device) -> str:
    """``"<platform>:<id> <device kind>"``, e.g. ``"cpu:0 cpu"`` or ``"gpu:0 NVIDIA H100 80GB HBM3"``
    (the platform is the part before ":")."""
    return f"{device.platform}:{device.id} {device.device_kind}"


def jax_device_memory_stats(device=None) -> dict | None:
    """``device.memory_stats()`` of a GPU (``bytes_in_use``, ``peak_bytes_in_use``, ...),
    or None on the CPU, where JAX keeps no such statistics (use the compiled
    executable's ``memory_analysis()`` there) and when JAX is missing.

    ``device`` defaults to the first GPU when JAX has one.
    ``peak_bytes_in_use`` is a high-water mark since the process started: compare
    it before and after, in a fresh process, to attribute it to one computation.
    """
    try:
        import jax
    except ImportError:
        return None
    if device is None:
        try:
            gpus = gpu_devices(jax)
        except GpuStartError:
            return None
        device = gpus[0] if gpus else jax.devices("cpu")[0]
    if device.platform == "cpu":
        return None
    try:
        stats = device.memory_stats()
    except Exception:          # some plugins do not implement it
        return None
    return dict(stats) if stats is not None else None



def block_until_ready(out):
    """``out`` (an array or a tuple of arrays) computed to completion.  Each array's own
    ``block_until_ready``: ``jax.block_until_ready`` walks the tuple as a pytree, which
    costs several µs per call, as much as a small jitted gradient."""
    for a in (out if isinstance(out, (tuple, list)) else (out,)):
        a.block_until_ready()
    return out



@contextlib.contextmanager
def placement(jax, x64: bool, device, matmul_precision: str):
    """JAX's 64-bit mode, default device and float32 matmul precision, for tracing and calls."""
    with x64_scope(jax, x64), jax.default_device(device), \
            jax.default_matmul_precision(matmul_precision):
        yield

