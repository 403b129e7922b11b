#!/usr/bin/env bash
# The main job from a fresh machine: install dependencies, build, fetch the default model
# (SmolLM2-135M-Instruct, checksum-verified) and have it answer a prompt on the best
# backend available. Arguments, when given, go to edgerun instead:
#   scripts/run.sh                                   the demo answer
#   scripts/run.sh -p "The capital of France is" -n 32 --temp 0
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >&2
build=${EDGERUN_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=(edgerun formats_gguf cpu_ref sampler backend_example)
all_targets=$(cmake --build "$build" --target help)
[[ $all_targets == *"cuda_orin:"* ]] && targets+=(cuda_orin)
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >&2
scripts/fetch-model.sh >/dev/null
if [ $# -eq 0 ]; then
  echo "Explain in two sentences what unified memory on a Jetson is." |
    "$build/bin/edgerun" chat --temp 0 -n 160
  exit
fi
exec "$build/bin/edgerun" "$@"
