#!/bin/bash
# The device call for a session with 15 minutes of device time (the budget since
# 2026-11-27: one machine start and one call of at most 600 s; bench/README.md, "The next
# GPU session"). Carry .slim-carry and .smol-c (bench/device/prepare.sh, then
# prepare.sh --llama-bench); on an H100 or an H200, whichever the device tool starts.
#   1. the synthesized models (Llama-3.2-1B, Qwen3-4B, Qwen3-0.6B, Q4_K_M), in parallel;
#   2. bench/tune_options.py: decode tg64 of Llama-3.2-1B and Qwen3-4B at depth 0 and
#      Llama-3.2-1B at 4096 with the defaults and each option set of candidates.txt, the
#      gainers joined, then the conformance suite (every level, --require-full) on the
#      fastest sets in turn until one passes: the choice;
#   3. compare.sh with EDGERUN_OPTIONS=the choice: issue 18's side-by-side table against
#      llama.cpp's CUDA build (its conformance run skipped when the tuner's passed);
#   4. a launch profile (profile=1) of Qwen3-4B's and Llama-3.2-1B's decode with the choice,
#      what each kind of launch costs in Qwen3-4B's replayed step (bench/skip_profile.py),
#      and a launch profile of Qwen3-4B's prefill at depth 32768;
#   5. widen_kv=1 against 0: the suite's ATTENTION cases through the tiled kernel over the
#      cache widened to halves first, then Qwen3-4B's and Qwen3-0.6B's pp512 at depth 32768
#      with the Q8_0 cache both ways;
#   6. attention_pipeline=1 against 0: the suite's ATTENTION cases through the split kernel
#      with each warp's tiles pipelined, then Qwen3-4B's decode at depth 32768 over both
#      caches both ways.
# TUNE_SECONDS (default: what the DEADLINE leaves after COMPARE_SECONDS=170,
# PROFILE_SECONDS=80 and DEPTH_SECONDS=100, steps 5 and 6) bounds step 2, TUNE_RESERVE (100) of it kept for conformance. Exit
# status 0 when a choice passed conformance and every comparison run went well.
# A bench run gets 30 s and a conformance run 120 (each takes a few seconds and under a
# minute on an H200): an option whose kernel hangs costs no more. tests/bench's
# bench_tune_compare_call runs this script through stand-ins.
set -u; cd "$(dirname "$0")/../.."; DEADLINE=${DEADLINE:-540}; L=/tmp/logsT  # packed into $OUT/logsT.tar.gz after every step (common.sh)
mkdir -p $L
source bench/device/common.sh
open_bundle
synth_models llama3.2-1b qwen3-4b qwen3-0.6b
echo "models at $((SECONDS - t0)) s: $(ls build-models)" | tee -a $L/summary.txt
M1=build-models/llama3.2-1b-Q4_K_M.gguf M4=build-models/qwen3-4b-Q4_K_M.gguf
COMPARE_SECONDS=${COMPARE_SECONDS:-170} PROFILE_SECONDS=${PROFILE_SECONDS:-80} DEPTH_SECONDS=${DEPTH_SECONDS:-100}
TUNE_SECONDS=${TUNE_SECONDS:-$(( $(left) - COMPARE_SECONDS - PROFILE_SECONDS - DEPTH_SECONDS ))}
TAILN=30 run tune $((TUNE_SECONDS + 20)) python3 bench/tune_options.py --edgerun $E --test $M1 --test $M4 --test $M1@4096 \
  --candidates-file bench/device/candidates.txt --deadline $TUNE_SECONDS --reserve ${TUNE_RESERVE:-100} \
  --timeout 30 --conformance-timeout 120 \
  --conformance "$B/edgerun-conformance run --candidate cuda_orin --require-full -t 8" \
  --commit "$(cat .device-bundle/COMMIT)" --out $L/tune.json --chosen $L/chosen
TUNED=$?
cp $L/tune.json $L/tune.md $OUT/ 2>/dev/null
CHOSEN=$( [ -f $L/chosen ] && cat $L/chosen )
echo "chosen: ${CHOSEN:-(the defaults)}; conformance $([ $TUNED -eq 0 ] && echo passed || echo 'not passed: compare.sh reruns it')" |
  tee -a $L/summary.txt
pack
EDGERUN_OPTIONS=$CHOSEN CONFORMED=$([ $TUNED -eq 0 ] && echo 1) DEADLINE=$(( $(left) - PROFILE_SECONDS - DEPTH_SECONDS )) \
  bash bench/device/compare.sh
COMPARED=$?
# Where a decode step's time goes with the choice: every launch timed (profile=1), per
# kind of launch its share, bytes and GB/s (bench/project_orin.py reads these logs).
for m in $M4 $M1; do
  TAILN=14 run "profile_$(basename $m .gguf)" 40 $E --backend cuda_orin --backend-options profile=1${CHOSEN:+,$CHOSEN} \
    --log-level info -m $m -p "Hello" -n 64 --temp 0
done
# What each kind of launch costs in Qwen3-4B's replayed decode step with the choice: the
# step with prepare, rope_append, the attention, the GEMVs, and all but the GEMVs left out
# (profile_skip; outputs wrong), where the launches timed alone above carry their own
# launch cost (bench/skip_profile.py).
TAILN=14 run skip_profile 40 python3 bench/skip_profile.py --edgerun $E --test $M4 ${CHOSEN:+--options "$CHOSEN"} \
  --timeout 15 --commit "$(cat .device-bundle/COMMIT)" --out $L/skip-profile.json
cp $L/skip-profile.md $OUT/ 2>/dev/null
# Qwen3's prefill with 32768 tokens cached, where it trails llama.cpp most (0.60x on the
# H200, 2026-11-27): one table for the 65 steps of 512 rows that fill the cache and then
# measure, so the attention's share is that of an average depth of about 16k.
TAILN=14 run profile_prefill_32k 40 $E bench --backend cuda_orin --backend-options profile=1${CHOSEN:+,$CHOSEN} \
  --log-level info -m $M4 -c 33792 -d 32768 -p 512 -n 0 -r 1
# The choice without the options steps 5 and 6 set themselves (and attention_prefetch, which
# does not combine with attention_pipeline), so that each compares its option both ways.
BASE=$(echo ",$CHOSEN," | sed -E 's/,(widen_kv|attention_pipeline|attention_prefetch)=[^,]*//g; s/^,//; s/,$//')
# The tiled attention over the INT8 cache widened to halves by one launch a layer
# (widen_kv=1), never run on a GPU before: first its correctness through the suite's
# attention cases (the kernel tests compare it with the INT8 tiles bit for bit,
# tests/cuda/gpu), then its speed where the INT8 cache trails llama.cpp (Qwen3's pp512 at
# depth 32768 with Q8_0: 0.82-0.83x on the H200, a7e3b81; 2 repetitions).
run widen_conformance 30 $B/edgerun-conformance run --candidate cuda_orin \
  --candidate-options tiled_attention=2,widen_kv=1${BASE:+,$BASE} --levels ops --ops ATTENTION \
  --kv f16,q8 --require-full
WIDENED=$?
if [ $WIDENED -eq 0 ]; then
  for m in $M4 build-models/qwen3-0.6b-Q4_K_M.gguf; do
    for widen in 0 1; do
      TAILN=4 run "prefill32k_$(basename $m .gguf)_q8_widen$widen" 25 $E bench --backend cuda_orin \
        --backend-options widen_kv=$widen${BASE:+,$BASE} -m $m -c 33792 -d 32768 -p 512 -n 0 -r 2 --kv-type q8
    done
  done
fi
# The split attention with each warp's tiles pipelined (attention_pipeline=1), never run on
# a GPU before: the suite's attention cases through it, then Qwen3-4B's decode at depth
# 32768, where issue 18 wants the INT8 cache 1.6x faster than F16 (1.21x end to end on the
# H200, a7e3b81), over both caches without and with it (2 repetitions).
run pipeline_conformance 30 $B/edgerun-conformance run --candidate cuda_orin \
  --candidate-options tiled_attention=0,attention_pipeline=1${BASE:+,$BASE} --levels ops --ops ATTENTION \
  --kv f16,q8 --require-full
PIPELINED=$?
if [ $PIPELINED -eq 0 ]; then
  for kv in q8 f16; do
    for pipeline in 0 1; do
      TAILN=4 run "decode32k_qwen3-4b_${kv}_pipeline$pipeline" 25 $E bench --backend cuda_orin \
        --backend-options attention_pipeline=$pipeline${BASE:+,$BASE} -m $M4 -c 33024 -d 32768 -p 0 -n 64 -r 2 \
        --kv-type $kv
    done
  done
fi
echo "T done at $((SECONDS - t0)) s: tune exit $TUNED, compare exit $COMPARED, widened attention conformance exit $WIDENED," \
  "pipelined attention conformance exit $PIPELINED"
[ $TUNED -eq 0 ] && [ $COMPARED -eq 0 ]
