#!/usr/bin/env bash
# Everything the cuda_orin kernels need a GPU for, in one command, for a machine with a
# GPU and nvcc but without this project's Debian dependencies (the lent GPU machines):
# builds with plain nvcc and runs
#   1. the kernel tests (gpu_kernel_tests) for the local GPU,
#   2. the same tests built as compute_87 PTX only (the Orin code path, JIT-compiled),
#   3. the CUDA Graph capture/replay test,
#   4. compute-sanitizer memcheck and racecheck over the quick test set (if installed),
#   5. the benchmark, writing its JSON into OUTDIR.
#
#   scripts/cuda-gpu-check.sh [OUTDIR]        (default: build/gpu-check)
#   EDGERUN_COMMIT=<sha> scripts/cuda-gpu-check.sh "$OUT"    # on the device machine
# Prints one PASS/FAIL line per step and "N passed, M failed"; logs go to OUTDIR.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/gpu-check}
mkdir -p "$out"
nvcc=${NVCC:-nvcc}
commit=${EDGERUN_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
kernels=plugins/cuda_orin/kernels
common=(-std=c++17 -O3 -lineinfo -Icore/include -I"$kernels" -Itests/cuda -Itests/cuda/gpu -Ibench)
lib=("$kernels"/gemv.cu "$kernels"/prepare.cu "$kernels"/rope_append.cu "$kernels"/attention.cu "$kernels"/attention_tiles.cu "$kernels"/attention_mma.cu
     "$kernels"/small_kernels.cu "$kernels"/host_runtime.cpp)

build() {  # name, arch flags (one word), sources...
  local name=$1 arch=$2
  shift 2
  # shellcheck disable=SC2086
  "$nvcc" "${common[@]}" $arch "${lib[@]}" "$@" -o "$out/$name" >"$out/$name.build.log" 2>&1
}
start=$(date +%s)
build gpu_tests "-arch=native" tests/cuda/gpu/gpu_kernel_tests.cu &
build gpu_tests_ptx87 "-gencode=arch=compute_87,code=compute_87" tests/cuda/gpu/gpu_kernel_tests.cu &
build graph_test "-arch=native" tests/cuda/gpu/gpu_graph_test.cu &
build bench "-arch=native" bench/cuda_orin_bench.cu bench/bench_attention.cu -DEDGERUN_GIT_COMMIT="\"$commit\"" &
wait
echo "built in $(( $(date +%s) - start )) s"

passed=0
failed=0
step() {  # name, command...
  local name=$1
  shift
  if "$@" >"$out/$name.log" 2>&1; then
    echo "PASS  $name"
    passed=$((passed + 1))
  else
    echo "FAIL  $name (exit $?; see $out/$name.log)"
    tail -n 20 "$out/$name.log"
    failed=$((failed + 1))
  fi
}
for b in gpu_tests gpu_tests_ptx87 graph_test bench; do
  if [ ! -x "$out/$b" ]; then
    echo "FAIL  build $b"; cat "$out/$b.build.log"; failed=$((failed + 1))
  fi
done
[ -x "$out/gpu_tests" ] && step kernel_tests "$out/gpu_tests"
[ -x "$out/gpu_tests_ptx87" ] && step kernel_tests_ptx87 "$out/gpu_tests_ptx87"
[ -x "$out/graph_test" ] && step graph_test "$out/graph_test"
if command -v compute-sanitizer >/dev/null && [ -x "$out/gpu_tests" ]; then
  for tool in memcheck racecheck; do
    step "sanitizer_$tool" compute-sanitizer --tool "$tool" --error-exitcode 3 "$out/gpu_tests" --quick
  done
else
  echo "compute-sanitizer not found: sanitizer steps not run"
fi
[ -x "$out/bench" ] && step bench "$out/bench" --out "$out" --commit "$commit"
grep -h "FAIL\|passed" "$out"/kernel_tests*.log "$out"/graph_test.log 2>/dev/null | head -n 40
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
