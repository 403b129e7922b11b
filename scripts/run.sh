#!/usr/bin/env bash
# The main job from a fresh machine: install what building and running need (no test
# references), build, fetch the default model (SmolLM2-135M-Instruct, checksum-verified)
# and have it answer a prompt on the best backend available. Arguments, when given, go
# to edgerun instead:
#   scripts/run.sh                                   the demo answer
#   scripts/run.sh -p "The capital of France is" -n 32 --temp 0
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "run: $*" >&2; }
start=$SECONDS
scripts/install-deps.sh >&2
build=${EDGERUN_BUILD_DIR:-build}
# A first configuration leaves the tests out (scripts/test.sh turns them on); an existing
# one is kept as it is.
tests=()
[ -f "$build/CMakeCache.txt" ] || tests=(-DEDGERUN_BUILD_TESTS=OFF)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${tests[@]}" >/dev/null
targets=(edgerun formats_gguf cpu_ref sampler)
# The CUDA plugin only where there is a GPU to run it (scripts/test.sh always builds it).
if [ -e /dev/nvidia0 ] || [ -e /dev/nvhost-ctrl-gpu ]; then
  [[ $(cmake --build "$build" --target help) == *"cuda_orin:"* ]] && targets+=(cuda_orin)
fi
say "building ${targets[*]} (about 2 minutes on 2 cores the first time)"
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >&2
say "fetching the default model (about 100 MB, once)"
scripts/fetch-model.sh >/dev/null
say "ready after $((SECONDS - start)) s"
if [ $# -eq 0 ]; then
  echo "Explain in two sentences what unified memory on a Jetson is." |
    "$build/bin/edgerun" chat --temp 0 -n 160
  exit
fi
exec "$build/bin/edgerun" "$@"
