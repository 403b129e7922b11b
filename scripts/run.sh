#!/usr/bin/env bash
# The main job from a fresh machine: install dependencies, build, and run edgerun.
# Until generation lands it lists the plugins; extra arguments go to edgerun.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${EDGERUN_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target edgerun formats_gguf cpu_ref sampler backend_example \
  $(cmake --build "$build" --target help | grep -q '^cuda_orin:' && echo cuda_orin)
if [ $# -eq 0 ]; then
  exec "$build/bin/edgerun" plugins
fi
exec "$build/bin/edgerun" "$@"
