#!/bin/bash
# A short device call (a machine start and about three minutes; carry .slim-carry): option
# sets against the defaults in decode, conformance of the faster, and Nsight Compute over
# one decode layer's GEMVs. For a session whose first call (tune_compare.sh) left a few
# minutes of device time and whose change is a new default with its old form kept as an
# option. CANDIDATES: the sets, ';' between them (default: gemv_ring=3;gemv_ring=2;merge_q8=1);
# NCU_OPTIONS: backend options of the Nsight Compute run (default: none, the defaults).
#   1. Llama-3.2-1B and Qwen3-4B (Q4_K_M), synthesized;
#   2. bench/tune_options.py: decode tg64 at depth 0 with the defaults and each set, the
#      defaults again, conformance (every level, --require-full) of the fastest;
#   3. ncu_decode.sh's GEMV profile with the defaults or NCU_OPTIONS (it exits quietly
#      without ncu).
set -u; cd "$(dirname "$0")/../.."; DEADLINE=${DEADLINE:-180}; L=/tmp/logsA  # packed into $OUT/logsA.tar.gz (common.sh)
mkdir -p $L
source bench/device/common.sh
open_bundle
synth_models llama3.2-1b qwen3-4b
IFS=';' read -ra SETS <<< "${CANDIDATES:-gemv_ring=3;gemv_ring=2;merge_q8=1}"
ARGS=(); for s in "${SETS[@]}"; do ARGS+=(--candidate "$s"); done
T=$(( $(left) - ${NCU_SECONDS:-35} ))
TAILN=12 run tune $((T + 15)) python3 bench/tune_options.py --edgerun $E --test build-models/llama3.2-1b-Q4_K_M.gguf \
  --test build-models/qwen3-4b-Q4_K_M.gguf "${ARGS[@]}" --deadline $T --reserve ${TUNE_RESERVE:-45} --timeout 30 --conformance-timeout 60 \
  --conformance "$B/edgerun-conformance run --candidate cuda_orin --require-full -t 8" \
  --commit "$(cat .device-bundle/COMMIT)" --out $L/tune.json --chosen $L/chosen
cp $L/tune.json $L/tune.md $OUT/ 2>/dev/null
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] && [ $(left) -gt 20 ] && TAILN=4 run ncu_gemv $(( $(left) - 5 )) $NCU --clock-control none --target-processes all \
  --section SpeedOfLight --section WarpStateStats --section InstructionStats --section LaunchStats --section Occupancy \
  --kernel-name regex:gemv_kernel --launch-skip 5 --launch-count 4 --export $L/qwen3-4b-decode --force-overwrite \
  $E --backend cuda_orin --backend-options graphs=0${NCU_OPTIONS:+,$NCU_OPTIONS} -m build-models/qwen3-4b-Q4_K_M.gguf -p "Hello" -n 4 --temp 0 &&
  $NCU --import $L/qwen3-4b-decode.ncu-rep --page raw --print-units base > $L/qwen3-4b-decode-raw.txt 2>&1
rm -f $L/*.ncu-rep; echo "A done at $((SECONDS - t0)) s"
