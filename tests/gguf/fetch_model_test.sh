#!/usr/bin/env bash
# scripts/fetch-model.sh: prints the verified path; a second run downloads nothing; a
# checksum mismatch fails (exit 4) and leaves no file. Exit 77 (skip) without network.
set -uo pipefail
repo=$1
work=$2
rm -rf "$work"
mkdir -p "$work"

path=$("$repo/scripts/fetch-model.sh" 2> "$work/first.err")
rc=$?
if [ $rc -eq 3 ]; then echo "SKIP: download failed: $(cat "$work/first.err")"; exit 77; fi
[ $rc -eq 0 ] || { echo "FAIL: first run exit $rc: $(cat "$work/first.err")"; exit 1; }
[ -f "$path" ] || { echo "FAIL: printed path '$path' is not a file"; exit 1; }
[ "$(sha256sum "$path" | cut -d' ' -f1)" = b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 ] ||
  { echo "FAIL: $path has the wrong checksum"; exit 1; }

# Cached and verified: no download and no Python (one that cannot run would make either fail).
again=$(EDGERUN_VENV="$work/no-venv" PYTHON=/bin/false "$repo/scripts/fetch-model.sh" 2> "$work/second.err") ||
  { echo "FAIL: second run downloaded or failed: $(cat "$work/second.err")"; exit 1; }
[ "$again" = "$path" ] || { echo "FAIL: second run printed '$again', first '$path'"; exit 1; }
[ ! -s "$work/second.err" ] || { echo "FAIL: second run said: $(cat "$work/second.err")"; exit 1; }

# A mismatch is refused and nothing is kept.
EDGERUN_CACHE="$work/cache" EDGERUN_FETCH_SHA256=0000 "$repo/scripts/fetch-model.sh" > "$work/bad.out" 2> "$work/bad.err"
rc=$?
[ $rc -eq 4 ] || { echo "FAIL: mismatch exit $rc: $(cat "$work/bad.err")"; exit 1; }
[ ! -s "$work/bad.out" ] || { echo "FAIL: mismatch printed a path"; exit 1; }
grep -q "checksum mismatch" "$work/bad.err" || { echo "FAIL: no checksum message: $(cat "$work/bad.err")"; exit 1; }
left=$(find "$work/cache" -type f | wc -l)
[ "$left" -eq 0 ] || { echo "FAIL: mismatch left files: $(find "$work/cache" -type f)"; exit 1; }
echo "OK: $path"
