#!/bin/bash
# One device call (carry .slim-carry, or run after a call that left the bundle): why a
# decode step's GEMVs stream at 430-830 GB/s on the H200 where the copy peak is 4218
# (bench/README.md, "The next GPU session"). Nsight Compute over a few decode steps of
# Qwen3-4B Q4_K_M with plain launches (graphs=0, so each kernel is profiled alone), one
# profile per kind of launch: DRAM throughput against peak, achieved occupancy, the warp
# stall reasons, the launch shape; then the split attention at depth 4096 (Llama-3.2-1B,
# F16 cache). Writes ncu's reports (.ncu-rep, for the GUI) and its
# text details into the logs. Needs ncu on the machine (the CUDA toolkit's or Nsight
# Compute's own; the script looks in both and says so when there is none).
set -u; cd "$(dirname "$0")/../.."; DEADLINE=${DEADLINE:-400}; L=/tmp/logsN  # packed into $OUT/logsN.tar.gz after every step (common.sh)
mkdir -p $L
source bench/device/common.sh
[ -d .device-bundle ] || tar -xJf .slim-carry/bundle-slim.tar.xz
source .device-bundle/env.sh; E=.device-bundle/bin/edgerun; mkdir -p build-models
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "no ncu on this machine (PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute)" | tee -a $L/summary.txt; exit 1; }
echo "commit $(cat .device-bundle/COMMIT); $($NCU --version | tail -1)" | tee -a $L/summary.txt
M=build-models/qwen3-4b-Q4_K_M.gguf
[ -f $M ] || $E synth --preset qwen3-4b --type Q4_K_M -o $M > /dev/null
# The GEMVs of one decode layer by name: the prompt's step (several rows) runs the
# multi-row kernel, gemv_kernel only for its logits, so skipping 5 launches of gemv_kernel
# passes that and decode layer 0 (module loading); then layer 1's Q/K/V, O, gate/up, down.
# (Counted over all kernels, --launch-skip 600 landed in the prompt's step of 939 launches.)
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats"
TAILN=40 run ncu_decode 300 $NCU --clock-control none --target-processes all $SECTIONS \
  --kernel-name regex:gemv_kernel --launch-skip 5 --launch-count 4 \
  --export $L/qwen3-4b-decode --force-overwrite \
  $E --backend cuda_orin --backend-options graphs=0 -m $M -p "Hello" -n 4 --temp 0
# The same GEMVs with four tasks of weights in flight a lane (gemv_tasks_in_flight=4, two
# blocks an SM): whether DRAM throughput rises and which stalls remain.
TAILN=20 run ncu_decode_in_flight 200 $NCU --clock-control none --target-processes all $SECTIONS \
  --kernel-name regex:gemv_kernel --launch-skip 5 --launch-count 4 \
  --export $L/qwen3-4b-decode-in-flight4 --force-overwrite \
  $E --backend cuda_orin --backend-options graphs=0,gemv_tasks_in_flight=4 -m $M -p "Hello" -n 4 --temp 0
# Decode at depth 4096 with the F16 cache, where the 1B model fell to 0.67x llama.cpp: the
# split attention on tensor cores and its merge only (by name; the prompt's 4096 rows take
# the tiled kernel, whose launches the filter leaves out), two launches of each.
M1=build-models/llama3.2-1b-Q4_K_M.gguf
[ -f $M1 ] || $E synth --preset llama3.2-1b --type Q4_K_M -o $M1 > /dev/null
TAILN=20 run ncu_attention_d4096 200 $NCU --clock-control none --target-processes all $SECTIONS \
  --kernel-name regex:'attention_mma_kernel|attention_merge_kernel' --launch-skip 32 --launch-count 4 \
  --export $L/llama-1b-attention-d4096 --force-overwrite \
  $E bench --backend cuda_orin --backend-options graphs=0 -m $M1 --kv-type f16 -p 0 -n 4 -d 4096 -r 1
for r in qwen3-4b-decode qwen3-4b-decode-in-flight4 llama-1b-attention-d4096; do
  [ -f $L/$r.ncu-rep ] && $NCU --import $L/$r.ncu-rep --page details --print-units base > $L/$r-details.txt 2>&1 &&
    $NCU --import $L/$r.ncu-rep --page raw --print-units base > $L/$r-raw.txt 2>&1
done
grep -hE '^  [a-z_]+kernel|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per Thread|Grid Size|Duration' \
  $L/*-details.txt | head -160
echo "logs in $L"; echo "N done at $((SECONDS-t0)) s"
