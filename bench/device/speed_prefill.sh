#!/bin/bash
# The device call after speed_ab.sh (within 30 s, so the bundle and the models made there
# are still on the machine; else it makes them again): prefill and conformance.
#   gemm_rows=0 / 32 / 8   pp512 through the multi-row GEMV or cuBLAS (the crossover)
#   gemm=f32               pp512 through cuBLAS SGEMM instead of F16 GemmEx
#   conformance            --require-full with the defaults, then with pdl=1: it must stay
#                          green after every speed change
set -u; cd "$(dirname "$0")/../.."; DEADLINE=${DEADLINE:-560}; L=/tmp/logsPP; mkdir -p $L
source bench/device/common.sh
[ -d .device-bundle ] || tar -xJf .device-carry/bundle.tar.xz
source .device-bundle/env.sh
E=.device-bundle/bin/edgerun; mkdir -p build-models
echo "commit $(cat .device-bundle/COMMIT)"
M1=build-models/llama3.2-1b-Q4_K_M.gguf
[ -f $M1 ] || $E synth --preset llama3.2-1b --type Q4_K_M -o $M1
TAILN=3 run conformance 200 .device-bundle/bin/edgerun-conformance run --candidate cuda_orin --require-full -t 8
TAILN=3 run conformance_pdl 200 .device-bundle/bin/edgerun-conformance run --candidate cuda_orin \
  --candidate-options pdl=1 --require-full -t 8
for g in 32 0 8; do run "pp512_gemm_rows_$g" 90 $E bench --backend cuda_orin --backend-options gemm_rows=$g -m $M1 -p 512 -n 0 -r 2; done
run pp512_gemm_f32 90 $E bench --backend cuda_orin --backend-options gemm=f32 -m $M1 -p 512 -n 0 -r 2
tar -czf $OUT/logsPP.tgz -C $L .; cp $L/summary.txt $OUT/ 2>/dev/null; echo "PP done at $((SECONDS-t0)) s"
