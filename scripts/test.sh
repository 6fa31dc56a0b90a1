#!/usr/bin/env bash
# Set up (first time) and run the whole test suite.
cd "$(dirname "$0")/.."
. scripts/_venv.sh
python -m pytest -n 2 "$@"
