"""A cell function for the GPU runner tests: one ``ok`` cell row whose ``extra`` says what the
worker was given (its JAX/XLA/CUDA environment, the backend's device option) and whether the
host's GPU slot 0 was held while it ran (``DIFFCOMPARE_TEST_SLOT_DIR`` names the slot folder)."""
from __future__ import annotations

import fcntl
import os

ENV_KEYS = ("JAX_PLATFORMS", "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
            "CUDA_VISIBLE_DEVICES")


def _gpu0_held() -> bool | None:
    folder = os.environ.get("DIFFCOMPARE_TEST_SLOT_DIR")
    if not folder:
        return None
    fd = os.open(os.path.join(folder, "gpu0.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)          # closing drops the lock if this call took it
    return False


def report_env(problem, size, seed, backend, dtype, options):
    extra = {k: os.environ.get(k) for k in ENV_KEYS}
    extra["device_option"] = (options.get("backend_options") or {}).get("device")
    extra["gpu0_held"] = _gpu0_held()
    extra["pid"] = os.getpid()
    yield {"phase": "cell", "status": "ok", "extra": extra}


def _record_setup(problem, size, seed, dtype, options, backend_names=()):
    """The group's shared work: appends (GPU slot 0 held?, JAX_PLATFORMS) to
    ``DIFFCOMPARE_TEST_SETUP_LOG``, one line per worker that ran it."""
    log = os.environ.get("DIFFCOMPARE_TEST_SETUP_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{_gpu0_held()} {os.environ.get('JAX_PLATFORMS')} {list(backend_names)}\n")


report_env.prepare_group = _record_setup
