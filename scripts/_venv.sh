# Sourced by the scripts: make (once) and activate the project's virtual environment.
# DIFFCOMPARE_VENV picks its folder (default .venv); CI points it at a fresh one.
set -euo pipefail
VENV="${DIFFCOMPARE_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"
STAMP="$VENV/.diffcompare-installed"
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ]; then
  python -m pip install -q --upgrade pip
  # torch is pinned to the CPU build (see pyproject.toml); jax runs on CPU or GPU.
  python -m pip install -q -e ".[test,all]"
  touch "$STAMP"
fi
