#!/bin/bash
# One device call: what each of cuda_orin's speed changes since the H200 baseline (a42a643)
# is worth, on the synthesized Llama-3.2-1B and Qwen3-4B Q4_K_M, before the full comparison
# (compare.sh). Every variant is an `edgerun bench` of the same build, differing only in
# --backend-options, so the ratios are side by side in one run:
#   default                 x staged in shared memory, the fusions of fusion.hpp (7 launches
#                           per layer), no prepare, GEMV weights prefetched to L2, no PDL
#   pdl=1                   programmatic dependent launch (each launch's prefetch and start
#                           overlap the previous kernel; kernels/grid_dependency.cuh)
#   prefetch=0              no L2 prefetch of the GEMV's weights (the prefetch's effect)
#   fuse=0                  every node launched on its own (the fusions' effect)
#   activations=q8          the dp4a path (prepare launches, 8-bit x)
#   graphs=0                plain launches (the CUDA Graph's effect)
#   profile=1               per-kernel time per token: the three slowest kernels
#   gemm_rows=0 / 32 / 8    pp512 through the multi-row GEMV or cuBLAS (the crossover)
#   gemm=f32                pp512 through cuBLAS SGEMM instead of F16 GemmEx
# The conformance runs that must stay green after every speed change (defaults, and pdl=1)
# come right after the decode variants, before the profile and the prefill sweeps, which
# are the first to be skipped when the DEADLINE runs out (run() in common.sh skips a check
# with less than 10 s left). stage_x=0 (x read in place) is dropped to make room for pdl=1
# and prefetch=0; it is measured in bench/results/ already.
# Carry .device-carry (the bundle, see bench/README.md); needs nothing else.
set -u; cd "$(dirname "$0")/../.."; DEADLINE=${DEADLINE:-560}; L=/tmp/logsAB; mkdir -p $L
source bench/device/common.sh
[ -d .device-bundle ] || tar -xJf .device-carry/bundle.tar.xz
source .device-bundle/env.sh
E=.device-bundle/bin/edgerun; mkdir -p build-models
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee $L/device.txt
echo "commit $(cat .device-bundle/COMMIT)" | tee -a $L/device.txt
for m in llama3.2-1b qwen3-4b; do
  [ -f build-models/$m-Q4_K_M.gguf ] || $E synth --preset $m --type Q4_K_M -o build-models/$m-Q4_K_M.gguf
done
M1=build-models/llama3.2-1b-Q4_K_M.gguf M4=build-models/qwen3-4b-Q4_K_M.gguf
TAILN=4
for opts in "" "pdl=1" "prefetch=0" "fuse=0" "activations=q8" "graphs=0"; do
  for m in $M1 $M4; do
    run "tg_$(basename $m .gguf)_${opts:-default}" 60 $E bench --backend cuda_orin ${opts:+--backend-options $opts} \
      -m $m -p 0 -n 128 -r 3
  done
done
TAILN=3 run conformance 200 .device-bundle/bin/edgerun-conformance run --candidate cuda_orin --require-full -t 8
TAILN=3 run conformance_pdl 200 .device-bundle/bin/edgerun-conformance run --candidate cuda_orin \
  --candidate-options pdl=1 --require-full -t 8
TAILN=20 run profile_llama 60 $E --backend cuda_orin --backend-options profile=1 --log-level info -m $M1 -p "Hello" -n 64 --temp 0
for g in 0 32 8; do run "pp512_gemm_rows_$g" 90 $E bench --backend cuda_orin --backend-options gemm_rows=$g -m $M1 -p 512 -n 0 -r 2; done
run pp512_gemm_f32 90 $E bench --backend cuda_orin --backend-options gemm=f32 -m $M1 -p 512 -n 0 -r 2
tar -czf $OUT/logsAB.tgz -C $L .; cp $L/summary.txt $OUT/ 2>/dev/null; echo "AB done at $((SECONDS-t0)) s"
