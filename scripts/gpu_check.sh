#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and JAX's CUDA build: the GPU path's tests, then the `gpu`
# suite's comparisons cut to fit a short lease (scripts/gpu_check.toml), then its report.
# Everything lands in $OUT (default /tmp/gpu_check): env.log, pytest.log, run.log, report.html,
# res.tgz.  Optional: wheels in .whl/ (for a machine without a package index) are installed
# first into /tmp/site.  TEST_S / RUN_S cap the tests and the run (seconds).
#   bash scripts/gpu_check.sh
set -o pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu_check}; mkdir -p "$OUT"
PY=${PY:-python3}
export PYTHONPATH=$PWD
if ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
  export PYTHONPATH=$PWD:/tmp/site
fi
{ date; nproc; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  $PY -c "import sys, jax, numpy; print(sys.version); print('jax', jax.__version__, 'numpy', numpy.__version__); print(jax.devices())"
} 2>&1 | tee "$OUT/env.log"
# several test processes share the GPU: none may take JAX's default 75% of its memory
XLA_PYTHON_CLIENT_PREALLOCATE=false timeout "${TEST_S:-150}" $PY -m pytest -p no:cacheprovider -q -n 6 -rsP \
  tests/gpu tests/backends/test_jax_devices.py tests/runner/test_gpu_runner.py 2>&1 | tee "$OUT/pytest.log"
timeout "${RUN_S:-300}" $PY -m diffcompare.cli run --suite scripts/gpu_check.toml --results "$OUT/res" --quiet 2>&1 | tee "$OUT/run.log"
timeout 60 $PY -m diffcompare.cli report "$OUT/res" -o "$OUT/report.html" 2>&1 | tail -3
tar czf "$OUT/res.tgz" -C "$OUT" res && rm -rf "$OUT/res"
