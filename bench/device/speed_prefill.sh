#!/bin/bash
# The device call after speed_ab.sh (within 30 s, so the bundle and the models made there
# are still on the machine; else it makes them again): correctness of this session's
# options on the GPU, then prefill.
#   conformance_before     --require-full with the defaults before 2026-11-25 (pdl=0,
#                          prefetch=1, mma_attention=0; acceptance.sh runs today's)
#   conformance_staged     --require-full with stage_x=1 (8-bit x quantized in each GEMV's
#                          stage instead of by prepare; launches of fewer than 32 outputs
#                          keep float x)
#   capture_pdl            cuda_orin_capture_check: steps of four sequences, a verification
#                          step, one-row steps, captured and replayed, with graphs=0 and with
#                          pdl=0,prefetch=1: every logit bit-identical among the three
#   weights_shared         the managed-memory weights of an integrated GPU (forced here):
#                          the same greedy text as device memory
#   gemm_rows=0 / 32 / 8   pp512 through the multi-row GEMV or cuBLAS (the crossover)
#   gemm=f32               pp512 through cuBLAS SGEMM instead of F16 GemmEx
#   profile_pp512_d0/4096  every launch of the prompt steps timed: where prefill's time goes
#   tiled_attention=0      pp512 at depth 0 and 4096 through the split attention (a block
#                          per row) instead of the tiled tensor-core kernel
#   mma_probe              the ops level's ATTENTION with the split kernel on tensor cores
#                          (mma_attention=1, every step): its first run on hardware
#   tg_d4096_mma_attention decode tg64 at depth 4096 with and without mma_attention=1, last
# Every run adds X: speed_ab.sh's BASE (options its probe found the defaults need on this
# GPU, usually none), and tiled_attention=0 if tiled_probe fails. tiled_probe is the ops
# level's ATTENTION with every step of two rows or more tiled: the first run of the tiled
# kernel's mma fragment layout on hardware.
set -u; cd "$(dirname "$0")/../.."; DEADLINE=${DEADLINE:-560}; L=/tmp/logsPP  # packed into $OUT/logsPP.tar.gz after every step (common.sh): a call brings back 8 files at most
mkdir -p $L /root/stash
cp .smol-a/* /root/stash/ 2>/dev/null  # carried here for smollm2.sh: the bundle and it exceed one call's 64 MiB
source bench/device/common.sh
[ -d .device-bundle ] || tar -xJf .device-carry/bundle.tar.xz
source .device-bundle/env.sh
E=.device-bundle/bin/edgerun; mkdir -p build-models
echo "commit $(cat .device-bundle/COMMIT)"
M1=build-models/llama3.2-1b-Q4_K_M.gguf
[ -f $M1 ] || $E synth --preset llama3.2-1b --type Q4_K_M -o $M1
M0=build-models/capture-smollm2-135m-Q8_0-l1-v4096.gguf
[ -f $M0 ] || $E synth --preset smollm2-135m --type Q8_0 --layers 1 --vocab 4096 -o $M0
X=$(cat /tmp/edgerun_base_options 2>/dev/null)
TAILN=3 run tiled_probe 60 .device-bundle/bin/edgerun-conformance run --candidate cuda_orin \
  --candidate-options tiled_attention=2 --levels ops --ops ATTENTION --kv f16,q8 --require-full \
  || { X=$X${X:+,}tiled_attention=0; echo "tiled attention failed on this GPU: tiled_attention=0 from here on" | tee -a $L/summary.txt; }
echo "options added to every run: ${X:-none}" | tee -a $L/summary.txt
TAILN=3 run mma_probe 60 .device-bundle/bin/edgerun-conformance run --candidate cuda_orin \
  --candidate-options mma_attention=1,tiled_attention=0 --levels ops --ops ATTENTION --kv f16,q8 --require-full \
  && echo "mma_attention=1: the ops level's ATTENTION passes on this GPU" | tee -a $L/summary.txt \
  || echo "mma_attention=1 failed on this GPU: it stays off" | tee -a $L/summary.txt
TAILN=6 run capture_pdl 90 .device-bundle/bin/cuda_orin_capture_check ${X:+--options $X} cuda_orin $M0 .device-bundle/plugins
for w in device shared; do
  timeout 60 $E --backend cuda_orin --backend-options weights=$w${X:+,$X} -m $M1 -p "The capital of France is" -n 32 --temp 0 \
    > $L/text_weights_$w.txt 2> $L/text_weights_$w.log
done
[ -s $L/text_weights_device.txt ] && cmp $L/text_weights_device.txt $L/text_weights_shared.txt && echo "weights=shared: the same text as weights=device" \
  | tee -a $L/summary.txt || echo "weights=shared: text differs or failed (see text_weights_*)" | tee -a $L/summary.txt
TAILN=3 run conformance_before 200 .device-bundle/bin/edgerun-conformance run --candidate cuda_orin \
  --candidate-options pdl=0,prefetch=1,mma_attention=0${X:+,$X} --require-full -t 8
TAILN=3 run conformance_staged 150 .device-bundle/bin/edgerun-conformance run --candidate cuda_orin \
  --candidate-options stage_x=1${X:+,$X} --require-full -t 8
for g in 32 0 8; do run "pp512_gemm_rows_$g" 90 $E bench --backend cuda_orin --backend-options gemm_rows=$g${X:+,$X} -m $M1 -p 512 -n 0 -r 2; done
run pp512_gemm_f32 90 $E bench --backend cuda_orin --backend-options gemm=f32${X:+,$X} -m $M1 -p 512 -n 0 -r 2
# Where a prompt step's time goes (profile=1: every launch timed, a table per plan at exit).
for d in 0 4096; do
  TAILN=3 run "profile_pp512_d$d" 120 $E bench --backend cuda_orin --backend-options profile=1${X:+,$X} --log-level info \
    -m $M1 -p 512 -n 0 -d $d -r 1
done
run pp512_tiled_attention_0 90 $E bench --backend cuda_orin --backend-options tiled_attention=0${X:+,$X} -m $M1 -p 512 -n 0 -r 2
for o in tiled_attention=16 tiled_attention=0; do
  [[ ",$X," == *,tiled_attention=0,* && $o != tiled_attention=0 ]] && continue
  run "pp512_d4096_$o" 120 $E bench --backend cuda_orin --backend-options $o${X:+,$X} -m $M1 -p 512 -n 0 -d 4096 -r 2
done
for o in mma_attention=0 mma_attention=1; do
  for kv in f16 q8; do
    run "tg_d4096_${o}_$kv" 90 $E bench --backend cuda_orin --backend-options $o${X:+,$X} -m $M1 --kv-type $kv -p 0 -n 64 -d 4096 -r 2
  done
done
echo "logs in $L"; echo "PP done at $((SECONDS-t0)) s"
