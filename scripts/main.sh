#!/usr/bin/env bash
# Set up (first time) and run the main job.
cd "$(dirname "$0")/.."
. scripts/_venv.sh
python -m diffcompare demo "$@"
