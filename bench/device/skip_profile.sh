#!/bin/bash
# A short device call (a machine start and about three minutes; carry .slim-carry): what
# each kind of launch costs in a replayed decode step, where profile=1 times each launch
# alone with its launch cost (prepare: 6.1 us a launch, 26% of Qwen3-4B's kernel time on
# the H200 at a7e3b81, in a step that replays in 2.67 ms of its 3.41 summed).
#   1. Qwen3-4B, Llama-3.2-1B and Qwen3-0.6B (Q4_K_M), synthesized;
#   2. bench/skip_profile.py: decode tg64 at depth 0 (then 4096 for Qwen3-4B) with the
#      defaults (or OPTIONS) and with prepare, rope_append, the attention, the GEMVs, and
#      all but the GEMVs left out (option profile_skip): the step time each takes, the
#      most a fusion of it could save. Outputs are wrong in those runs; nothing is checked.
set -u; cd "$(dirname "$0")/../.."; DEADLINE=${DEADLINE:-200}; L=/tmp/logsS  # packed into $OUT/logsS.tar.gz (common.sh)
mkdir -p $L
source bench/device/common.sh
open_bundle
synth_models qwen3-4b llama3.2-1b qwen3-0.6b
for t in qwen3-4b llama3.2-1b qwen3-0.6b qwen3-4b@4096; do
  m=${t%@*}; d=0; [ "$t" != "$m" ] && d=${t#*@}
  TAILN=14 run skip_${m}_$d 90 python3 bench/skip_profile.py --edgerun $E --test build-models/$m-Q4_K_M.gguf@$d \
    ${OPTIONS:+--options "$OPTIONS"} -r 5 --timeout 40 --commit "$(cat .device-bundle/COMMIT)" --out $L/skip-$m-$d.json
  cat $L/skip-*.md > $OUT/skip-profile.md 2>/dev/null
done
echo "S done at $((SECONDS - t0)) s"
