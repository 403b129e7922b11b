#!/usr/bin/env bash
# Builds here, before the device is asked for, everything the GPU session's calls carry
# (bench/README.md, "The next GPU session"), so that no device time goes on it, and
# checks each call's carry against the 64 MiB limit. Every path it writes is git-ignored,
# and none outlives the session that made it (each session starts from a fresh
# checkout): a session with a device runs this first.
#
#   bench/device/prepare.sh                about a minute after scripts/test.sh, a few
#                                          from nothing:
#     .device-carry/bundle.tar.xz          from BUILD (default build/, configured as
#                                          scripts/test.sh does if absent; CUDA architectures
#                                          87 and 90): edgerun, the backends, the GPU tests
#                                          and benchmarks; ptx87/ a cuda_orin with compute_87
#                                          PTX only (build-ptx87/); the Debian libraries they
#                                          need (shared/tools/device-bundle); COMMIT
#     .llama-src/llama.cpp-*-src.tar.xz    llama.cpp's source, to build llama-bench there
#                                          if the binary built here does not load (a call
#                                          of its own: beside the bundle it went over 64 MiB)
#     .smol-a/smolpart-aa, .smol-b/smolpart-ab   the real SmolLM2 Q4_1 (scripts/fetch-model.sh),
#                                          xz-compressed, in two pieces (no call carries both)
#   bench/device/prepare.sh --llama-bench  llama-bench alone, for sm_90, 16-29 min on 2
#                                          cores (398 s of device time if built there): run it
#                                          in the background while calls 1-3 run; stripped, as
#                                          .smol-c/llama-bench.tar.xz (call 6, tune_compare.sh)
#
# The bundle is built from the working tree as it is: commit first, so that COMMIT names
# what runs (it says "-dirty" otherwise).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${BUILD:-build}
jobs=${JOBS:-$(nproc)}
mode=bundle
case ${1:-} in
  "") ;;
  --llama-bench) mode=llama-bench ;;
  -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "prepare: unknown argument $1 (see --help)" >&2; exit 2 ;;
esac
say() { echo "prepare: $*" >&2; }
start=$SECONDS
work=$(mktemp -d "$root/.device-stage.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The bundle: BUILD for sm_87 + sm_90 and the plugin alone for compute_87 PTX; only what
# the device scripts run, stripped, then the libraries they need.
make_bundle() {
  local bins=(edgerun edgerun-conformance cuda_kernels_gpu cuda_kernels_gpu_ptx87 cuda_graph_gpu
              cuda_orin_bench cuda_orin_capture_check)
  local plugins=(cpu_ref cuda_orin formats_gguf sampler)
  if [ ! -f "$build/CMakeCache.txt" ]; then  # scripts/test.sh's configuration; only the targets below are built
    scripts/install-deps.sh
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEDGERUN_BUILD_TESTS=ON > /dev/null
  fi
  # The GPU machine runs the compute_87-PTX-only kernel tests too (off by default without a GPU).
  cmake -DEDGERUN_CUDA_PTX87_TESTS=ON "$build" > /dev/null
  local archs=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt")  # none: the project's 87 and 90
  [ -z "$archs" ] || [ "$archs" = "87;90" ] || { say "$build/ is built for CUDA architectures $archs, not 87 and 90"; exit 1; }
  cmake --build "$build" -j "$jobs" --target "${bins[@]}" "${plugins[@]}" > /dev/null ||
    { say "the build in $build/ failed, or it has no CUDA plugin (nvcc at /usr/local/cuda?)"; exit 1; }
  cmake -S . -B build-ptx87 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=87-virtual \
    -DEDGERUN_BUILD_TESTS=OFF > /dev/null
  cmake --build build-ptx87 -j "$jobs" --target cuda_orin > /dev/null
  say "built in $((SECONDS - start)) s"

  mkdir -p "$work/bin" "$work/plugins" "$work/ptx87"
  local b p
  for b in "${bins[@]}"; do cp "$build/bin/$b" "$work/bin/"; done
  for p in "${plugins[@]}"; do cp "$build/plugins/libedgerun_$p.so" "$work/plugins/"; done
  cp build-ptx87/plugins/libedgerun_cuda_orin.so "$work/ptx87/"
  strip --strip-unneeded "$work"/bin/* "$work"/plugins/* "$work"/ptx87/*
  rm -rf .device-bundle
  "${DEVICE_BUNDLE:-$root/../shared/tools/device-bundle}" "$work" .device-bundle
  local commit=$(git rev-parse --short HEAD)
  git diff --quiet HEAD || commit=$commit-dirty
  echo "$commit" > .device-bundle/COMMIT
  mkdir -p .device-carry
  # -9: its 64 MiB window spans the three GPU test binaries, each ~22 MB of the same
  # kernels' code; -6's 8 MiB did not (2026-11-28: 61.5 MB carried with -6, 21.3 with -9).
  tar -cf - .device-bundle | xz -T "$jobs" -9 > .device-carry/bundle.tar.xz
  say "bundle at $commit: $(du -sh .device-bundle | cut -f1) unpacked, $(du -h .device-carry/bundle.tar.xz | cut -f1) carried"
  # What compare.sh needs (edgerun, the plugins, edgerun-conformance to check the build
  # first), small enough to travel with llama-bench when no earlier call left the bundle
  # on the machine: no GPU tests or benchmarks, no compute_87 build, and a cuda_orin with
  # the GPU machine's sm_90 code alone (9.0 MB against 21.6 with sm_87, sm_90 and their PTX).
  cmake -S . -B build-sm90 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90-real \
    -DEDGERUN_BUILD_TESTS=OFF > /dev/null
  cmake --build build-sm90 -j "$jobs" --target cuda_orin > /dev/null
  local slim=$work/slim/.device-bundle
  mkdir -p "$slim/bin"
  cp -r .device-bundle/COMMIT .device-bundle/env.sh .device-bundle/plugins .device-bundle/syslib "$slim/"
  cp .device-bundle/bin/edgerun .device-bundle/bin/edgerun-conformance "$slim/bin/"
  cp build-sm90/plugins/libedgerun_cuda_orin.so "$slim/plugins/" && strip --strip-unneeded "$slim/plugins/libedgerun_cuda_orin.so"
  rm -rf .slim-carry && mkdir -p .slim-carry
  tar -cf - -C "$work/slim" .device-bundle | xz -T "$jobs" -9 > .slim-carry/bundle-slim.tar.xz
}

# The real SmolLM2, in two pieces.
pack_model() {
  local m=$(scripts/fetch-model.sh)
  rm -rf .smol-a .smol-b && mkdir -p .smol-a .smol-b
  xz -T "$jobs" -6 < "$m" > "$work/model.xz"  # split -n needs a file's size
  split -n 2 "$work/model.xz" .smol-a/smolpart-
  mv .smol-a/smolpart-ab .smol-b/
  say "SmolLM2: $(du -h .smol-a/smolpart-aa | cut -f1) + $(du -h .smol-b/smolpart-ab | cut -f1), carried by calls 4 and 5"
}

# llama-bench, stripped (41 MB compressed: calls 6 and tune_compare.sh carry it with the slim bundle).
pack_llama_bench() {
  scripts/llamacpp-cuda-source.sh .llama-src > /dev/null
  local bin=$(JOBS=$jobs scripts/build-llama-bench.sh)
  cp "$bin" "$work/llama-bench" && strip "$work/llama-bench"
  rm -rf .smol-c && mkdir -p .smol-c
  tar -cf - -C "$work" llama-bench | xz -T "$jobs" -6 > .smol-c/llama-bench.tar.xz
  say "llama-bench: $(du -h .smol-c/llama-bench.tar.xz | cut -f1) carried by call 6 and tune_compare.sh"
}

if [ $mode = bundle ]; then
  make_bundle
  scripts/llamacpp-cuda-source.sh .llama-src > /dev/null
  pack_model
else
  pack_llama_bench
fi

# What each call carries (bench/README.md's order), with the working tree it travels with.
tree=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | du --files0-from=- -cb 2>/dev/null | tail -n 1 | cut -f1)
status=0
check() {
  local call=$1 n=$tree d missing=""
  shift
  for d in "$@"; do
    if [ -e "$d" ]; then n=$((n + $(du -sb "$d" | cut -f1))); else missing="$missing $d"; fi
  done
  awk -v c="$call" -v d="$*" -v n="$n" -v t="$tree" -v m="${missing:+ (not made yet:$missing)}" 'BEGIN {
    printf "prepare: call %s carries %-22s %5.1f MiB of 64 (the working tree %.1f)%s\n", c, d, n / 1048576, t / 1048576, m }' >&2
  [ "$n" -le $((64 << 20)) ] || { say "call $call is over the limit"; status=1; }
}
check "1 and 3" .device-carry
check "llama-bench built there" .llama-src
check 4 .smol-a
check 5 .smol-b
check "6, tune_compare.sh" .smol-c .slim-carry
say "done in $((SECONDS - start)) s"
exit $status
