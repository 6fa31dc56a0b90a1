"""keep_freed_memory: a large temporary made on every call stops page-faulting in again."""
import os
import subprocess
import sys

import pytest

from diffcompare import malloc_settings
from diffcompare.runner.environment import worker_env

# A 48 MiB array: above glibc's largest dynamic mmap threshold (32 MiB), so by default every
# one gets its own mmap and faults all its pages in; under MMAP_THRESHOLD (64 MiB), so with the
# settings it comes from the heap and the next one reuses the pages.
FAULTS_PER_CALL = """
import resource, sys
import numpy as np
import diffcompare.malloc_settings as m
if sys.argv[1] == "kept" and not m.keep_freed_memory():
    print("not taken")                    # not glibc, or a glibc that refuses the threshold
    sys.exit()
np.ones(6 << 20).sum()                    # the first one faults in either case
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    np.ones(6 << 20).sum()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5)
"""


def _faults_per_call(mode):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", FAULTS_PER_CALL, mode], env=env, check=True,
                         capture_output=True, text=True, timeout=120)
    if out.stdout.strip() == "not taken":
        pytest.skip("this C library did not take the settings (mallopt refused them)")
    return float(out.stdout.split()[-1])


def test_worker_environment_carries_the_same_thresholds():
    env = worker_env({}, "cpu")
    assert env["MALLOC_MMAP_THRESHOLD_"] == str(64 << 20) == str(malloc_settings.MMAP_THRESHOLD)
    assert env["MALLOC_TRIM_THRESHOLD_"] == str(128 << 20) == str(malloc_settings.TRIM_THRESHOLD)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_kept_memory_is_not_faulted_in_again():
    default = _faults_per_call("default")
    if default < 20:
        pytest.skip(f"this C library kept the memory by default ({default:.0f} faults a call)")
    # 12,288 4-KiB pages a call by default (24 if the kernel backs them with 2-MiB pages)
    assert default >= 20
    assert _faults_per_call("kept") <= 2
