#!/bin/bash
# One device call: what each of cuda_orin's decode speed changes since the H200 baseline
# (a42a643) is worth, on the synthesized Llama-3.2-1B and Qwen3-4B Q4_K_M, before the full
# comparison (compare.sh). Every variant is an `edgerun bench` of the same build, differing
# only in --backend-options, so the ratios are side by side in one run:
#   default          8-bit x made once per GEMV input by prepare (since the H100 run of
#                    2026-11-27), the fusions of fusion.hpp (7 launches per layer and 4
#                    prepares), programmatic dependent launch, no L2 prefetch (the last
#                    two the defaults since the H200 run of 2026-11-25)
#   activations=f32  float x staged in shared memory, no prepare (the default before)
#   stage_x=1        8-bit x quantized by each GEMV block as it stages it, no prepare
#   pdl=0            each launch starts after the previous kernel has ended (with PDL
#                    its start overlaps that kernel's end; kernels/grid_dependency.cuh)
#   prefetch=1       GEMV warps first ask L2 for their weights
#   activations=f32,stage_x=0
#                    float x read in place (the staging's effect)
#   graphs=0         plain launches (the CUDA Graph's effect)
#   fuse=0           every node launched on its own (the fusions' effect)
#   gemv_tasks_in_flight=2, =4
#                    each lane loads two (four) tasks of weights before dotting the first
#                    (two blocks an SM instead of three): whether a lane's chain of DRAM
#                    round trips is what holds the GEMVs at 19% of the copy peak (unrun on
#                    a GPU when written, 2026-11-25; the same sums bit for bit on the
#                    emulation)
#   gemv_warps_per_row=4
#                    every GEMV row split across four warps (the plan splits only where
#                    rows are too few to fill the GPU): a lane's chain of loads a quarter
#                    as long, four times the blocks (unrun on a GPU when written)
#   attention_merge=last_block
#                    the split attention's partials merged by its last block of each row
#                    and head group (a fence and an atomic ticket), no merge kernel: one
#                    launch a layer fewer (unrun on a GPU when written, 2026-11-25)
#   rope_append=gemv,attention_merge=last_block
#                    and the Q/K/V GEMV's last block of each head doing rope_append's work
#                    (a ticket per head), no rope_append launch: five launches a layer
#                    (unrun on a GPU when written, 2026-11-25)
#   stage_x=1,gemv_rows_per_warp=1
#                    8-bit x staged with a row a warp (the plan's choice,
#                    choose_rows_per_warp, gives a block up to 8 rows a warp to share its
#                    staging)
#   activations=f32,gemv_rows_per_warp=4   the float path with 4 rows a warp (the plan
#                    keeps it at one: whether sharing the float copy of x pays is unmeasured)
# Then Llama-3.2-1B's decode at depth 4096, both caches, with the defaults and with
# attention_prefetch=1 (each warp of the split attention asks L2 for its next tile of K and V
# before it loads this one's; unrun on a GPU when written, 2026-11-26).
# Then per model a profile=1 decode run with the sm_90 build and one with the compute_87
# PTX build (--plugin-dir .device-bundle/ptx87: its cuda_orin is found first), the copy
# peak, and bench/project_orin.py's Orin projection from the PTX profiles. Variants are in
# order of interest: run() in common.sh skips what the DEADLINE leaves no time for. The
# prefill sweeps and the conformance runs are speed_prefill.sh's (the next call).
# Carry .device-carry (the bundle, see bench/README.md); needs nothing else.
set -u; cd "$(dirname "$0")/../.."; DEADLINE=${DEADLINE:-560}; L=/tmp/logsAB  # packed into $OUT/logsAB.tar.gz after every step (common.sh): a call brings back 8 files at most
mkdir -p $L
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
# Insurance: every default since a42a643 is unrun on hardware. A short bench that takes
# every path (64 prompt rows: the GEMM and the tiled attention; captured decode) must run
# with the defaults; if it does not, the first option below that makes it run (or all of
# them) becomes BASE, added to every later run here and to speed_prefill.sh's (the file
# base_options), so that the call still measures something.
BASE=
probe() { TAILN=2 run "probe_${1:-defaults}" 60 $E bench --backend cuda_orin ${1:+--backend-options $1} -m $M1 -p 64 -n 8 -r 1; }
if ! probe ""; then
  BASE=tiled_attention=0,prefetch=0,stage_x=0,fuse=0,gemm_rows=0
  for o in tiled_attention=0 prefetch=0 stage_x=0 fuse=0 gemm_rows=0; do probe $o && { BASE=$o; break; }; done
  echo "the defaults fail on this GPU: every run below adds $BASE" | tee -a $L/summary.txt
fi
echo "$BASE" > $L/base_options; cp $L/base_options /tmp/edgerun_base_options  # for speed_prefill.sh
TAILN=4
for opts in "" "gemv_tasks_in_flight=2" "gemv_tasks_in_flight=4" "gemv_warps_per_row=4" "attention_merge=last_block" \
    "rope_append=gemv,attention_merge=last_block" "activations=f32" "stage_x=1" \
    "stage_x=1,gemv_rows_per_warp=1" "pdl=0" "prefetch=1" "activations=f32,stage_x=0" "graphs=0" \
    "fuse=0" "activations=f32,gemv_rows_per_warp=4"; do
  [ -n "$opts" ] && [ "$opts" = "$BASE" ] && continue
  o=$BASE${BASE:+${opts:+,}}$opts
  for m in $M1 $M4; do
    run "tg_$(basename $m .gguf)_${opts:-default}" 60 $E bench --backend cuda_orin ${o:+--backend-options $o} \
      -m $m -p 0 -n 128 -r 3
  done
done
# Decode at depth 4096, where Llama-3.2-1B fell furthest behind llama.cpp (0.67-0.77x):
# the split attention on tensor cores with and without each warp's next tile prefetched.
for opts in "" "attention_prefetch=1"; do
  o=$BASE${BASE:+${opts:+,}}$opts
  for kv in f16 q8; do
    run "tg_d4096_${opts:-default}_$kv" 60 $E bench --backend cuda_orin ${o:+--backend-options $o} -m $M1 --kv-type $kv \
      -p 0 -n 64 -d 4096 -r 2
  done
done
python3 -c "import sys, json; sys.path.insert(0, 'bench'); from compare_llamacpp_gpu import measure_copy_peak; \
print(json.dumps(measure_copy_peak(3)))" > $L/copy_peak.json 2>&1; cat $L/copy_peak.json
PEAK=$(python3 -c "import json; print(json.load(open('$L/copy_peak.json'))['gb_s']['median'])" 2>/dev/null || echo 4270)
for m in $M1 $M4; do
  b=$(basename $m .gguf)
  TAILN=14 run "profile_$b" 60 $E --backend cuda_orin --backend-options profile=1${BASE:+,$BASE} --log-level info -m $m -p "Hello" -n 64 --temp 0
  TAILN=3 run "profile_${b}_ptx87" 90 $E --plugin-dir .device-bundle/ptx87 --backend cuda_orin --backend-options profile=1${BASE:+,$BASE} \
    --log-level info -m $m -p "Hello" -n 64 --temp 0
  $E plugins --plugin-dir .device-bundle/ptx87 | grep cuda_orin  # the PTX build's path, found first
  python3 bench/project_orin.py $L/profile_${b}_ptx87.log --peak-gbs $PEAK --label "$b, compute_87 PTX on $(head -2 $L/device.txt | tail -1 | cut -d, -f1)" \
    --json $L/orin_projection_$b.json | tee $L/orin_projection_$b.md
done
echo "logs in $L"; echo "AB done at $((SECONDS-t0)) s"
