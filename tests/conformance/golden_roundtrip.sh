#!/usr/bin/env bash
# Golden traces round-trip: record a trace from cpu_ref, then check backends against the
# trace alone: cpu_ref itself and the simple backend pass, a planted fault fails at a
# named token, a trace recorded twice is the same file, and a different model file is
# refused by its checksum.
#   golden_roundtrip.sh SUITE MODEL OTHER_MODEL SIMPLE_PLUGIN FAULT_PLUGIN WORK
set -euo pipefail
suite=$1 model=$2 other=$3 simple=$4 fault=$5 work=$6
rm -rf "$work" && mkdir -p "$work"
fail() { echo "golden_roundtrip: $*" >&2; exit 1; }

"$suite" record -m "$model" -o "$work/trace.json"
"$suite" record -m "$model" -o "$work/again.json"
cmp "$work/trace.json" "$work/again.json" || fail "recording twice gave different traces"
"${EDGERUN_PYTHON:-python3}" - "$work/trace.json" <<'PY' || fail "the trace does not hold what it should"
import json, sys
t = json.load(open(sys.argv[1]))
s = t["settings"]
assert t["format"] == "edgerun-golden-trace" and len(t["model"]["fnv1a64"]) == 16
assert len(t["tokens"]) == s["teacher_tokens"] == len(t["positions"])
assert len(t["greedy"]["tokens"]) == s["greedy_tokens"] == len(t["greedy"]["margins"])
for p in t["positions"]:
    logits = [l for _, l in p["top"]]
    assert len(p["top"]) == s["top_k"] and logits == sorted(logits, reverse=True) and p["log_z"] >= logits[0]
print("trace:", len(t["positions"]), "positions,", s["top_k"], "logits each,", len(open(sys.argv[1]).read()), "bytes")
PY

"$suite" check --trace "$work/trace.json" -m "$model" --candidate cpu_ref --json "$work/cpu_ref.json" || fail "cpu_ref does not pass its own trace"
"$suite" check --trace "$work/trace.json" -m "$model" --candidate "$simple" || fail "the simple backend does not pass the trace"
"$suite" check --trace "$work/trace.json" -m "$model" --candidate cpu_ref --kv f16 || fail "cpu_ref with an F16 cache does not pass the F32 trace"
set +e
"$suite" check --trace "$work/trace.json" -m "$model" --candidate "$fault" --json "$work/fault.json" > "$work/fault.txt"
status=$?
"$suite" check --trace "$work/trace.json" -m "$other" --candidate cpu_ref 2> "$work/other.txt"
other_status=$?
set -e
cat "$work/fault.txt"
[ $status -eq 1 ] || fail "a planted fault passed the trace (exit $status)"
grep -q "diverges at generated token" "$work/fault.txt" || fail "the fault's report names no divergent token"
[ $other_status -eq 2 ] && grep -q "is not the model the trace was recorded on" "$work/other.txt" ||
  fail "a different model was not refused by its checksum: $(cat "$work/other.txt")"
echo "golden_roundtrip: ok"
