#!/usr/bin/env bash
# Builds edgerun and runs every test. This is the README's test command and what CI runs.
#   scripts/test.sh [extra cmake args...]      e.g. -DEDGERUN_SANITIZE=ON
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${EDGERUN_BUILD_DIR:-build}
jobs=${EDGERUN_JOBS:-$(nproc)}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs"
