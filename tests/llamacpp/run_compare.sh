#!/usr/bin/env bash
# ctest entry: cpu_ref against llama.cpp on the default model (fetched by the project's
# script). Exits 77 (skip) only when the model cannot be downloaded.
#   run_compare.sh REPO_ROOT EDGERUN WORKDIR PYTHON
set -euo pipefail
root=$1 edgerun=$2 work=$3 python=$4
if ! model=$("$root/scripts/fetch-model.sh"); then
  echo "skipped: the default model could not be fetched"
  exit 77
fi
mkdir -p "$work"
# One thread each: ctest runs another test beside this one, and llama.cpp's threads spin
# at every barrier, so two threads sharing a busy core took 170-410 s instead of 77 s.
exec "$python" "$root/tests/llamacpp/compare_cpu_ref.py" --edgerun "$edgerun" --model "$model" \
  --threads 1 -n 64 --workdir "$work" --json "$work/report.json"
