#!/bin/bash
# Device call 5 (bench/README.md), within 30 s of call 4 (the machine must still be warm, /root/stash holding .smol-a): the real SmolLM2 (Q4_1, split over calls A and B): conformance, text against cpu_ref,
# run.sh's prompt with the default backend, 500 decode steps replayed against plain launches, memory
set -u; cd "$(dirname "$0")/../.."; DEADLINE=${DEADLINE:-200}; L=/tmp/logsB  # packed into $OUT/logsB.tar.gz after every step (common.sh): a call brings back 8 files at most
mkdir -p $L
source bench/device/common.sh
source .device-bundle/env.sh; B=$PWD/.device-bundle/bin
M=/root/.cache/edgerun/models/SmolLM2-135M-Instruct.Q4_1.gguf; mkdir -p $(dirname $M)
cat /root/stash/smolpart-aa .smol-b/smolpart-ab | xz -d > $M; ls -la $M; sha256sum $M | tee $L/model.sha256
TAILN=30 run conf_smol 150 $B/edgerun-conformance run --candidate cuda_orin --require-full -m $M --matrix none --levels models,long,batch -t 8
P="The capital of France is"
run text_cpu 60 $B/edgerun --backend cpu_ref -m $M -p "$P" -n 64 --temp 0 --tokens-out $L/text_cpu.json
run text_cuda 60 $B/edgerun --backend cuda_orin -m $M -p "$P" -n 64 --temp 0 --tokens-out $L/text_cuda.json
cmp $L/text_cpu.json $L/text_cuda.json && echo "SAME TOKENS cpu_ref vs cuda_orin (64)"
echo "Explain in two sentences what unified memory on a Jetson is." > $L/q.txt
TAILN=12 run runsh_chat 60 bash -c "$B/edgerun chat --temp 0 -n 160 --log-level info < $L/q.txt"
Q="Once upon a time, in a small village by the sea,"
( nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 20 > $L/smi_used.txt ) & SMI=$!
TAILN=4 run replay_graph 90 $B/edgerun --backend cuda_orin -m $M -p "$Q" -n 501 --ignore-eos -c 1024 --temp 0 --log-level info --tokens-out $L/replay_graph.json
kill $SMI
TAILN=4 run replay_plain 90 $B/edgerun --backend cuda_orin --backend-options graphs=0 -m $M -p "$Q" -n 501 --ignore-eos -c 1024 --temp 0 --log-level info --tokens-out $L/replay_plain.json
cmp $L/replay_graph.json $L/replay_plain.json && echo "SAME 501 TOKENS (500 decode steps) graph vs plain"
grep -h 'replayed\|memory taken' $L/replay_*.log
sort -n $L/smi_used.txt | sed -n '1p;$p' | tr '\n' ' '; echo " <- nvidia-smi memory.used MiB min/max during the graph run"
echo "logs in $L"; echo "B done at $((SECONDS-t0)) s"
