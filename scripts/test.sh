#!/usr/bin/env bash
# Builds edgerun and runs every test. This is the README's test command and what CI runs.
#   scripts/test.sh [extra cmake args...]      e.g. -DEDGERUN_SANITIZE=ON
# Every test that runs Python runs the project's .venv (scripts/install-deps.sh --test).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
source scripts/venv.sh
python=$EDGERUN_VENV/bin/python
build=${EDGERUN_BUILD_DIR:-build}
jobs=${EDGERUN_JOBS:-$(nproc)}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEDGERUN_BUILD_TESTS=ON \
  -DPython3_EXECUTABLE="$python" "$@"
cmake --build "$build" -j "$jobs"
status=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" --output-junit ctest-results.xml || status=$?
# ctest names skipped tests but not why: print each one's reason.
"$python" scripts/list-skipped.py "$build/ctest-results.xml" || true
exit $status
