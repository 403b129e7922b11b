#!/bin/bash
# One device call (carry .device-carry, or run after a call that left the bundle): why a
# decode step's GEMVs stream at 430-830 GB/s on the H200 where the copy peak is 4218
# (bench/README.md, "The next GPU session"). Nsight Compute over a few decode steps of
# Qwen3-4B Q4_K_M with plain launches (graphs=0, so each kernel is profiled alone), one
# profile per kind of launch: DRAM throughput against peak, achieved occupancy, the warp
# stall reasons, the launch shape. Writes ncu's report (.ncu-rep, for the GUI) and its
# text details into the logs. Needs ncu on the machine (the CUDA toolkit's or Nsight
# Compute's own; the script looks in both and says so when there is none).
set -u; cd "$(dirname "$0")/../.."; DEADLINE=${DEADLINE:-400}; L=/tmp/logsN  # packed into $OUT/logsN.tar.gz after every step (common.sh)
mkdir -p $L
source bench/device/common.sh
[ -d .device-bundle ] || tar -xJf .device-carry/bundle.tar.xz
source .device-bundle/env.sh; E=.device-bundle/bin/edgerun; mkdir -p build-models
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "no ncu on this machine (PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute)" | tee -a $L/summary.txt; exit 1; }
echo "commit $(cat .device-bundle/COMMIT); $($NCU --version | tail -1)" | tee -a $L/summary.txt
M=build-models/qwen3-4b-Q4_K_M.gguf
[ -f $M ] || $E synth --preset qwen3-4b --type Q4_K_M -o $M > /dev/null
# The prompt's step is one launch of each kind too; --launch-skip passes it and the first
# decode step (module loading), then one launch of each kernel name is profiled.
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats"
TAILN=40 run ncu_decode 300 $NCU --clock-control none --target-processes all $SECTIONS --launch-skip 600 --launch-count 12 \
  --export $L/qwen3-4b-decode --force-overwrite \
  $E --backend cuda_orin --backend-options graphs=0 -m $M -p "Hello" -n 8 --temp 0
[ -f $L/qwen3-4b-decode.ncu-rep ] && $NCU --import $L/qwen3-4b-decode.ncu-rep --page details --print-units base > $L/details.txt 2>&1
grep -E '^  [a-z_]+kernel|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per Thread|Grid Size|Duration' $L/details.txt | head -120
echo "logs in $L"; echo "N done at $((SECONDS-t0)) s"
