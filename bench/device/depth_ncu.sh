#!/bin/bash
# A second call after tune_compare.sh (a fresh or warm machine; carry .slim-carry and
# .smol-c): what that call's figures leave open.
#   1. conformance (every level, --require-full) with widen_kv=1 (tune_compare.sh's step 5
#      runs only the suite's ATTENTION cases with it); until 2026-11-28 this step and the
#      next ran tiled_attention_stages=2, the default over the F16 cache since;
#   2. the side-by-side table at depth 32768 (compare_llamacpp_gpu.py, Qwen3-4B, then
#      Llama-3.2-1B), edgerun with widen_kv=1: issue 18's prefill goal over the Q8_0
#      cache (0.82-0.83x llama.cpp on the H200 at a7e3b81);
#   3. ncu_decode.sh's first step: Nsight Compute over decode layer 1's four GEMVs of
#      Qwen3-4B (graphs=0), for why the FFN GEMVs stream at about 40% of the copy peak.
set -u; cd "$(dirname "$0")/../.."; DEADLINE=${DEADLINE:-440}; L=/tmp/logsD  # packed into $OUT/logsD.tar.gz (common.sh)
mkdir -p $L
source bench/device/common.sh
open_bundle; O=widen_kv=1
mkdir -p /tmp/lb; tar -xJf .smol-c/llama-bench.tar.xz -C /tmp/lb
synth_models llama3.2-1b qwen3-4b
TAILN=4 run conformance_widen_kv 100 $B/edgerun-conformance run --candidate cuda_orin --candidate-options $O --require-full -t 8
J=$L/gpu-compare-32k.json
for m in qwen3-4b llama3.2-1b; do
  [ $(left) -lt 150 ] && break
  (PYTHONUNBUFFERED=1 timeout $(( $(left) - 110 )) python3 bench/compare_llamacpp_gpu.py --edgerun $E \
    --llama-bench /tmp/lb/llama-bench --model-dir build-models --synth $m:Q4_K_M --depths 32768 -r 3 --timeout 150 \
    --commit "$(cat .device-bundle/COMMIT)" --backend-options $O --out $J --append) > $L/compare_$m.log 2>&1
  echo "compare_$m: exit $? at $((SECONDS - t0)) s" | tee -a $L/summary.txt; tail -4 $L/compare_$m.log
  cp $J ${J%.json}.md $OUT/ 2>/dev/null; pack
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -z "$NCU" ]; then echo "no ncu on this machine" | tee -a $L/summary.txt; exit 0; fi
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
M=build-models/qwen3-4b-Q4_K_M.gguf
TAILN=20 run ncu_decode $(( $(left) - 15 )) $NCU --clock-control none --target-processes all $SECTIONS \
  --kernel-name regex:gemv_kernel --launch-skip 5 --launch-count 4 --export $L/qwen3-4b-decode --force-overwrite $E --backend cuda_orin --backend-options graphs=0 -m $M -p "Hello" -n 4 --temp 0
[ -f $L/qwen3-4b-decode.ncu-rep ] && $NCU --import $L/qwen3-4b-decode.ncu-rep --page details --print-units base > $L/qwen3-4b-decode-details.txt 2>&1
grep -hE '^  [a-z_]+kernel|DRAM Throughput|Achieved Occupancy|Registers Per Thread|Grid Size|Duration|Stall' $L/*-details.txt | head -120
echo "D done at $((SECONDS - t0)) s"
