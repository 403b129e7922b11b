#!/bin/bash
# Device call 6 (bench/README.md; the end of tune_compare.sh), on a warm machine or a cold one (it carries .smol-c and .slim-carry): conformance of the build,
# then issue 18's side-by-side table of edgerun (cuda_orin) and llama.cpp's CUDA build, and the memory report of each model.
# DEPTHS (default 0,4096) are the contexts decode and prefill are measured at.
# EDGERUN_OPTIONS (key=value,...) runs edgerun with those backend options, conformance included, and the table names them:
# a default the session's figures justify can be measured before a rebuild makes it the default.
set -u; cd "$(dirname "$0")/../.."; DEADLINE=${DEADLINE:-520}; L=/tmp/logsC  # packed into $OUT/logsC.tar.gz after every step (common.sh): a call brings back 8 files at most
mkdir -p $L
source bench/device/common.sh
# The bundle an earlier call left on the machine, else the slim one carried with this call;
# its libraries (syslib) before anything of it runs: a machine image may lack Boost.
[ -d .device-bundle ] || tar -xJf .slim-carry/bundle-slim.tar.xz
source .device-bundle/env.sh
mkdir -p /tmp/lb; tar -xJf .smol-c/llama-bench.tar.xz -C /tmp/lb; ls -la /tmp/lb
# Built on the development machine against its CUDA 13.0 (RUNPATH /usr/local/cuda/lib): a
# library the loader cannot find here is named in the log (then rebuild it here with
# scripts/build-llama-bench.sh, about 400 s with JOBS=10).
ldd /tmp/lb/llama-bench | grep "not found" | tee $L/llama-bench-missing-libraries.txt
# This build against cpu_ref first (every level), so the figures below are of a correct one;
# CONFORMED=1 says the caller has just run the same check with the same options
# (tune_compare.sh, through bench/tune_options.py).
# Exit status: 1 when conformance or any comparison run failed.
O=${EDGERUN_OPTIONS:-}; RC=0
if [ -n "${CONFORMED:-}" ]; then echo "conformance: passed in this call with ${O:-the defaults} (tune_options.py)" | tee -a $L/summary.txt
else TAILN=3 run conformance 150 .device-bundle/bin/edgerun-conformance run --candidate cuda_orin ${O:+--candidate-options $O} \
  --require-full -t 8 || RC=1; fi
J=$L/gpu-compare.json
for m in llama3.2-1b:Q4_K_M qwen3-4b:Q4_K_M qwen3-0.6b:Q4_K_M; do
  [ $(left) -lt 60 ] && break
  (PYTHONUNBUFFERED=1 timeout $(( $(left) - 20 )) python3 bench/compare_llamacpp_gpu.py --edgerun .device-bundle/bin/edgerun \
    --llama-bench /tmp/lb/llama-bench --model-dir build-models --synth $m --depths ${DEPTHS:-0,4096} -r 3 --timeout 150 \
    --commit "$(cat .device-bundle/COMMIT)" ${O:+--backend-options $O} --out $J --append) 2>&1 | tee -a $L/compare.log
  [ ${PIPESTATUS[0]} -eq 0 ] || RC=1
  cp $J ${J%.json}.md $OUT/ 2>/dev/null
done
M4=build-models/qwen3-4b-Q4_K_M.gguf
if [ -f $M4 ] && [ $(left) -gt 40 ]; then
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits > $L/smi_before.txt
  ( nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 20 > $L/smi_4b.txt ) & SMI=$!
  TAILN=5 run mem_4b 40 .device-bundle/bin/edgerun --backend cuda_orin -m $M4 -p "Hello" -n 64 -c 4096 --temp 0 --log-level info
  kill $SMI; echo "nvidia-smi MiB before: $(cat $L/smi_before.txt), peak during: $(sort -n $L/smi_4b.txt | tail -1)"
fi
for m in llama3.2-1b qwen3-0.6b; do  # the memory report of the other two models
  [ -f build-models/$m-Q4_K_M.gguf ] && TAILN=1 run mem_$m 30 .device-bundle/bin/edgerun --backend cuda_orin \
    -m build-models/$m-Q4_K_M.gguf -p "Hello" -n 16 -c 4096 --temp 0 --log-level info
done
grep -h "memory taken" $L/mem_*.log | cut -c1-250
echo "logs in $L"; echo "C done at $((SECONDS-t0)) s, exit $RC"
exit $RC
