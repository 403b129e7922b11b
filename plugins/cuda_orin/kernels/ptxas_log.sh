#!/usr/bin/env bash
# The kernel library's compiler launcher: runs the nvcc command it is given (built with
# -Xptxas=-v) and keeps ptxas's resource report of each object in LOG_DIR/<object>.ptxas,
# where tests/cuda/check_kernel_resources.py reads it, so that the check does not compile
# the kernels a second time. Everything else nvcc prints (warnings, errors) goes through.
#   ptxas_log.sh LOG_DIR COMMAND...
set -uo pipefail
log_dir=$1; shift
object=""
previous=""
for arg in "$@"; do
  [ "$previous" = "-o" ] && object=$arg
  previous=$arg
done
mkdir -p "$log_dir"
log="$log_dir/$(basename "${object:-unnamed}").ptxas"
"$@" 2> "$log.tmp"
status=$?
grep -Ev "^ptxas info *:|^ +[0-9]+ bytes stack frame" "$log.tmp" >&2
if [ $status -eq 0 ]; then mv "$log.tmp" "$log"; else rm -f "$log.tmp" "$log"; fi
exit $status
