"""Settings for every test process (tests/ and the package's doctests).

JAX on a GPU preallocates 75% of the GPU's memory in the first process that starts it, so
several test processes on one GPU (pytest -n, the runner's workers) would fail to start
CUDA.  Tests start JAX with preallocation off, as the runner's GPU workers do
(``diffcompare.runner.environment.GPU_WORKER_ENV``); a value set in the environment wins.
"""
import os

from diffcompare.runner.environment import GPU_WORKER_ENV

for _key, _value in GPU_WORKER_ENV.items():
    os.environ.setdefault(_key, _value)
