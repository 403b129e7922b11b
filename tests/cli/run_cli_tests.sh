#!/usr/bin/env bash
# ctest entry for the generation CLI tests: fetch the default model, run them.
set -euo pipefail
root=$1 edgerun=$2 work=$3 python=$4 script=${5:-test_generation_cli.py}
if ! model=$("$root/scripts/fetch-model.sh"); then
  echo "skipped: the default model could not be fetched"
  exit 77
fi
exec "$python" "$root/tests/cli/$script" "$edgerun" "$model" "$work"
