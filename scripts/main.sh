#!/usr/bin/env bash
# Set up (first time) and run the main job: the quick suite (about 2-3 minutes on
# 2 cores; it resumes if interrupted), ending in a self-contained HTML report.
# Arguments go to `diffcompare run` (e.g. --suite standard, --fresh).
cd "$(dirname "$0")/.."
. scripts/_venv.sh
python -m diffcompare run --suite quick --results results/quick "$@"
python -m diffcompare report results/quick -o reports/quick.html
echo "Open reports/quick.html in a browser (it works offline)."
