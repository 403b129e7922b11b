#!/usr/bin/env bash
# Follows docs/writing-a-backend-plugin.md literally: every ```sh block of the guide, in
# order, in one shell, with the guide's variables pointing at this tree, its build and a
# scratch folder. Then checks that the outcome is the one the guide describes.
#   follow_guide.sh SOURCE_DIR BUILD_DIR WORK MODELS_DIR
set -euo pipefail
src=$1 build=$2 work=$3 models=$4
guide=$src/docs/writing-a-backend-plugin.md
rm -rf "$work" && mkdir -p "$work"
fail() { echo "follow_guide: $*" >&2; exit 1; }

# The runnable blocks: from a line "```sh" to the next "```".
awk '/^```sh$/ { on = 1; next } /^```/ { on = 0 } on' "$guide" > "$work/guide.sh"
[ "$(grep -c . "$work/guide.sh")" -ge 10 ] || fail "found only $(grep -c . "$work/guide.sh") command lines in $guide"
echo "follow_guide: running $(grep -c . "$work/guide.sh") command lines from $guide"

export EDGERUN_SRC=$src EDGERUN_BUILD=$build PREFIX=$work/prefix WORK=$work/plugin MODELS=$models
bash -euo pipefail -x "$work/guide.sh" > "$work/guide.log" 2>&1 || { cat "$work/guide.log"; fail "a command of the guide failed"; }
cat "$work/guide.log"

# What the guide says the reader sees.
grep -q "backend *mybackend" "$work/guide.log" || fail "edgerun plugins did not list mybackend"
grep -q "^PASS" "$WORK/report.txt" || fail "the conformance run did not pass"
grep -q "missing coverage" "$WORK/report.txt" || fail "the report does not list the missing coverage"
grep -q "passed: True | missing: [1-9]" "$work/guide.log" || fail "report.json does not say passed with missing coverage"
grep -q "mybackend kv=f32 *trace of cpu_ref" "$work/guide.log" || fail "the golden trace check did not run"
echo "follow_guide: the guide works as written"
