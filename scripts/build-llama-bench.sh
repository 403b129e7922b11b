#!/usr/bin/env bash
# Builds llama.cpp's llama-bench, and nothing else of llama.cpp, from the archive that
# scripts/llamacpp-cuda-source.sh packs, and prints the binary's path. Meant for the GPU
# machine (16 cores, nvcc, CMake, ninja, no package registry), where the comparison runs.
#
#   scripts/build-llama-bench.sh [--arch ARCH] [--cpu] [--configure-only] [ARCHIVE [BUILD_DIR]]
#
#   --arch ARCH        CMAKE_CUDA_ARCHITECTURES (default 90: the H200/H100's sm_90 code).
#                      87-virtual builds compute_87 PTX only, which the driver JIT-compiles
#                      for the GPU at hand: the code Orin would get, for the projections.
#   --cpu              GGML_CUDA=OFF: proves the source tree configures and builds where
#                      there is no GPU (the check done on the development machine)
#   --configure-only   stop after CMake's configure step
#   ARCHIVE            default .llama-src/llama.cpp-*-src.tar.xz
#   BUILD_DIR          default build-llama-bench-<arch>/ (git-ignored by /build*/). Kept:
#                      a second call resumes the build (ninja), so a build cut short by a
#                      device call's time limit continues in the next call.
#
# llama.cpp is built static (one binary to run), without its server, web UI, tests,
# examples and HTTPS, and without -march=native: GGML_NATIVE=OFF with AVX2/FMA/F16C, AMX
# off (it crashes at the first evaluation in the VMs this project runs on; see
# scripts/llamacpp-wheel.sh). With every layer on the GPU the CPU code does not matter.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

arch=90
cuda=ON
configure_only=0
while [ $# -gt 0 ]; do
  case $1 in
    --arch) arch=${2:?--arch needs a value}; shift 2 ;;
    --cpu) cuda=OFF; shift ;;
    --configure-only) configure_only=1; shift ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "build-llama-bench: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
archive=${1:-$(ls "$root"/.llama-src/llama.cpp-*-src.tar.xz 2>/dev/null | tail -n 1)}
if [ -z "$archive" ] || [ ! -f "$archive" ]; then
  echo "build-llama-bench: no source archive (run scripts/llamacpp-cuda-source.sh here and carry" \
       ".llama-src to the GPU machine)" >&2
  exit 1
fi
flavour=$([ $cuda = ON ] && echo "cuda$arch" || echo cpu)
build=${2:-$root/build-llama-bench-$flavour}
src=$build/src/llama.cpp

start=$SECONDS
if [ ! -f "$src/CMakeLists.txt" ]; then
  rm -rf "$build/src" && mkdir -p "$build/src"
  # xz may be missing where the archive is unpacked: Python's tarfile reads it too.
  if command -v xz > /dev/null; then
    tar -xJf "$archive" -C "$build/src"
  else
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$archive" "$build/src"
  fi
fi

generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
jobs=${JOBS:-$(nproc)}
cuda_flags=(-DGGML_CUDA=$cuda)
# One GPU: NCCL (multi-GPU) would only add a library the binary needs at run time.
[ $cuda = ON ] && cuda_flags+=(-DCMAKE_CUDA_ARCHITECTURES="$arch" -DGGML_CUDA_NCCL=OFF)
# The commit the sdist vendors (scripts/llamacpp-cuda-source.sh wrote it down): llama.cpp's
# own lookup would run git in whatever repository the build sits in.
commit=$(sed -n 's/^llama.cpp commit: //p' "$src/EDGERUN_SOURCE" 2>/dev/null)
[ -n "$commit" ] || commit=unknown
echo "build-llama-bench: llama.cpp ${commit:0:12} ($(head -n 1 "$src/EDGERUN_SOURCE" 2>/dev/null || echo 'source unknown'))" >&2
generator_flags=("${generator[@]}")
[ -f "$build/obj/CMakeCache.txt" ] && generator_flags=()  # an existing build keeps its generator
echo "build-llama-bench: configuring ($flavour) in $build/obj" >&2
cmake -S "$src" -B "$build/obj" "${generator_flags[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_BUILD_COMMIT="${commit:0:12}" -DLLAMA_BUILD_NUMBER=0 \
    -DBUILD_SHARED_LIBS=OFF "${cuda_flags[@]}" \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
    -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF > "$build/configure.log" 2>&1 || {
      tail -n 40 "$build/configure.log" >&2
      echo "build-llama-bench: configure failed (log above, whole log in $build/configure.log)" >&2
      exit 1
    }
echo "build-llama-bench: configured in $((SECONDS - start)) s" >&2
[ $configure_only -eq 1 ] && exit 0

bin=$build/obj/bin/llama-bench
echo "build-llama-bench: building llama-bench ($flavour) with $jobs jobs" >&2
if ! cmake --build "$build/obj" --target llama-bench -j "$jobs" > "$build/build.log" 2>&1; then
  tail -n 40 "$build/build.log" >&2
  echo "build-llama-bench: build failed (log above, whole log in $build/build.log)" >&2
  exit 1
fi
[ -x "$bin" ] || { echo "build-llama-bench: built, but $bin is missing" >&2; exit 1; }
echo "build-llama-bench: llama-bench ($flavour) ready after $((SECONDS - start)) s: $bin" >&2
echo "$bin"
