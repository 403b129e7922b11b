#!/usr/bin/env bash
# Runs the GGUF reader fuzzer.
#   fuzz/run.sh [SECONDS]            configure + build build-fuzz (clang-14), fuzz SECONDS (default 600)
#   fuzz/run.sh --smoke FUZZER SEEDER WORKDIR   (ctest) a few thousand runs from the seeds
# Seeds: small generated files plus the llama.cpp vocabulary files (cut to -max_len).
# Crashes are written as WORKDIR/crash-*; turn each into a file in
# tests/gguf/fuzz_regressions/ (the gguf_tests regression case opens them all).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

seed() {  # seed SEEDER DIR
  rm -rf "$2"
  mkdir -p "$2"
  "$1" "$2"
  cp "$repo"/tests/data/vocab/*.gguf "$2"/
  cp "$repo"/tests/gguf/fuzz_regressions/* "$2"/ 2> /dev/null || true
}

if [ "${1:-}" = "--smoke" ]; then
  fuzzer=$2 seeder=$3 work=$4
  seed "$seeder" "$work/seeds"
  exec "$fuzzer" -runs=3000 -max_len=65536 -timeout=10 -seed=1 -artifact_prefix="$work/" "$work/seeds"
fi

seconds=${1:-600}
build=${EDGERUN_FUZZ_BUILD:-$repo/build-fuzz}
CC=${CC:-clang-14} CXX=${CXX:-clang++-14} cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DEDGERUN_FUZZ=ON -DEDGERUN_BUILD_TESTS=OFF -DEDGERUN_CUDA=OFF > /dev/null
nice -n 10 cmake --build "$build" --target gguf_reader_fuzzer gguf_fuzz_seeds
work=$build/fuzz_run
seed "$build/bin/gguf_fuzz_seeds" "$work/seeds"
mkdir -p "$work/corpus"
echo "fuzz/run.sh: fuzzing for $seconds s; corpus $work/corpus, findings $work/crash-*" >&2
nice -n 19 "$build/bin/gguf_reader_fuzzer" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "$work/seeds"
