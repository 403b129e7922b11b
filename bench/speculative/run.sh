#!/usr/bin/env bash
# Speculative decoding on the real SmolLM2 (cpu_ref): target F16, draft Q4_0, both made
# with `edgerun quantize` from the only source scripts/fetch-model.sh fetches (the Q4_1
# file), and prompt lookup. Each row is one `edgerun bench` run, which decodes the prompt
# plainly and speculatively, interleaved, 3 times (temperature 0; both give the same
# tokens), and reports the best repetition of each.
#   bench/speculative/run.sh EDGERUN WORKDIR [THREADS]
set -euo pipefail
edgerun=$1 work=$2 threads=${3:-2}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source_model=$("$root/scripts/fetch-model.sh")
mkdir -p "$work"
target=$work/smollm2-f16.gguf draft=$work/smollm2-q4_0.gguf
[ -f "$target" ] || "$edgerun" quantize "$source_model" "$target" --type F16 >&2
[ -f "$draft" ] || "$edgerun" quantize "$source_model" "$draft" --type Q4_0 >&2
row() {  # prompt, label, bench flags...
  local prompt=$1 label=$2
  shift 2
  "$edgerun" bench -m "$target" -t "$threads" -n 96 -r 3 --json --text-file "$here/$prompt.txt" "$@" |
    python3 -c 'import json, sys
r = json.load(sys.stdin)
print("| %-11s | %-22s | %5.1f%% | %5.2f | %6.2f | %6.2f | %5.2fx |" % (sys.argv[1], sys.argv[2], 100 * r["acceptance"],
      r["tokens_per_target_step"], r["plain_tok_s"], r["speculative_tok_s"], r["speedup"]))' "$prompt" "$label"
}
echo "| prompt      | drafter                | accept | tok/step | plain t/s | spec t/s | speedup |"
echo "|-------------|------------------------|--------|----------|-----------|----------|---------|"
for prompt in free_text code summary; do
  for n in 2 4 8; do
    row "$prompt" "Q4_0 draft, fixed $n" -md "$draft" --draft "$n" --draft-fixed
    row "$prompt" "Q4_0 draft, up to $n" -md "$draft" --draft "$n"
  done
done
for prompt in summary code_edit extraction; do
  row "$prompt" "lookup, fixed 8" --lookup 8 --draft-fixed
  row "$prompt" "lookup, up to 4" --lookup 4
  row "$prompt" "lookup, up to 8" --lookup 8
done
for prompt in free_text code; do
  row "$prompt" "lookup, up to 8" --lookup 8
done
