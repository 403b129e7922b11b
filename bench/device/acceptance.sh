#!/bin/bash
# Device call 3 (bench/README.md, the table of calls): GPU kernel tests, the CUDA Graph test, conformance at every level (sm_90 and compute_87 PTX), compute-sanitizer;
# then, alone on the GPU, the kernel benchmark (cuda_orin_bench --quick: issue 18's per-kernel DRAM figures)
set -u; cd "$(dirname "$0")/../.."; DEADLINE=${DEADLINE:-440}; L=/tmp/logsA  # packed into $OUT/logsA.tar.gz after every step (common.sh): a call brings back 8 files at most
mkdir -p $L /root/stash
source bench/device/common.sh
tar -xJf .device-carry/bundle.tar.xz; cp .smol-a/* /root/stash/ 2>/dev/null
source .device-bundle/env.sh; B=$PWD/.device-bundle/bin; P87=$PWD/.device-bundle/ptx87/libedgerun_cuda_orin.so
cat .device-bundle/COMMIT; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
( timeout 150 $B/cuda_kernels_gpu > $L/kernels.log 2>&1; echo "exit $?" >> $L/kernels.log ) &
( timeout 150 $B/cuda_kernels_gpu_ptx87 > $L/kernels_ptx87.log 2>&1; echo "exit $?" >> $L/kernels_ptx87.log ) &
( timeout 150 $B/cuda_graph_gpu > $L/graph.log 2>&1; echo "exit $?" >> $L/graph.log ) &  # 100 decode steps replayed, logits bit for bit
TAILN=4 run conf_all 120 $B/edgerun-conformance run --candidate cuda_orin --require-full -t 6 --json $L/conf_all.json; CONF_RC=$?
S="$B/edgerun-conformance run --candidate cuda_orin --levels models --presets qwen3-0.6b --types Q4_K_M --tokens 8 --prompt 4 --greedy 4 -t 2"
for tool in memcheck racecheck initcheck synccheck; do
  ( timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 $S > $L/sanitizer_$tool.log 2>&1; echo "exit $?" >> $L/sanitizer_$tool.log ) &
done
TAILN=4 run conf_all_ptx87 120 $B/edgerun-conformance run --candidate $P87 --require-full -t 6 --json $L/conf_all_ptx87.json
# The GEMV with four tasks in flight (an option since 2026-11-25; cuda_kernels_gpu above
# compares its sums with the default's bit for bit): the ops and models levels.
TAILN=4 run conf_in_flight 90 $B/edgerun-conformance run --candidate cuda_orin --candidate-options gemv_tasks_in_flight=4 \
  --levels ops,models --require-full -t 6 --json $L/conf_in_flight.json
# Two options since 2026-11-25, unrun on a GPU when written, in one run (a failure names
# its op: ATTENTION or the matrix ops): the splits merged by the split kernel's last
# blocks (attention_merge=last_block: a fence and an atomic ticket per block;
# cuda_kernels_gpu compares its outputs with the merge kernel's bit for bit), every
# GEMV row split across four warps (gemv_warps_per_row=4), and the Q/K/V GEMV doing
# rope_append's work in its last block of each head (rope_append=gemv: the models level
# only, the ops level has no fused chain; cuda_kernels_gpu compares it bit for bit); and
# since 2026-11-26 each warp of the split attention prefetching its next tile
# (attention_prefetch=1; cuda_kernels_gpu compares its outputs bit for bit too); and
# since the second session of 2026-11-27 the tiled attention with two tiles of K/V in
# flight a block (tiled_attention_stages=2: prompt steps of the models level; bit for
# bit against one stage in cuda_kernels_gpu); and since 2026-11-28 the INT8 cache widened
# to halves before the tiled attention (widen_kv=1; bit for bit against the INT8 tiles in
# cuda_kernels_gpu); since the fifth session of 2026-11-28 each warp of the split attention
# pipelining its tiles (attention_pipeline=1, in place of attention_prefetch=1, which does
# not combine with it; both bit for bit against the walk in turn in cuda_kernels_gpu).
O=attention_merge=last_block,gemv_warps_per_row=4,rope_append=gemv,attention_pipeline=1,tiled_attention_stages=2,widen_kv=1
TAILN=4 run conf_merge_warps 90 $B/edgerun-conformance run --candidate cuda_orin --candidate-options $O \
  --levels ops,models --require-full -t 6 \
  --json $L/conf_merge_warps.json
# Float x (activations=f32: exact to float rounding, staged), the default before
# 2026-11-27 (the defaults read 8-bit x since, under the models level's bounds as set on
# 2026-11-26 from llama.cpp's own 8-bit noise, docs/conformance.md).
TAILN=4 run conf_f32 60 $B/edgerun-conformance run --candidate cuda_orin --candidate-options activations=f32 \
  --levels ops,models --require-full -t 6 --json $L/conf_f32.json
# A failure with the defaults: the same without the tiled attention (its first run on
# hardware) says whether that kernel is the cause, in this call.
[ $CONF_RC -ne 0 ] && TAILN=4 run conf_all_untiled 120 $B/edgerun-conformance run --candidate cuda_orin \
  --candidate-options tiled_attention=0 --require-full -t 6 --json $L/conf_all_untiled.json
wait
TAILN=3 run kernel_bench 150 $B/cuda_orin_bench --quick --out $L --commit "$(cat .device-bundle/COMMIT)"
# The goal's rows (the whole table is in the log and the JSON): the copy peak, the layer
# sequence (fused against separate launches, FFN-sized GEMVs), flash-decode at 32k.
grep -E '^(device|qkv|attn_output|gate\+up|ffn_down|attention) ' $L/kernel_bench.log | cut -c1-150
for f in kernels kernels_ptx87 graph sanitizer_memcheck sanitizer_racecheck sanitizer_initcheck sanitizer_synccheck; do echo "== $f"; grep -E 'FAIL|ERROR|passed|exit' $L/$f.log | tail -5; done
grep -h -E '^(PASS|FAIL):|coverage' $L/conf_*.log
echo "logs in $L"; echo "A done at $((SECONDS-t0)) s"
