#!/usr/bin/env bash
# ctest entry for the generation CLI tests: fetch the default model, run them.
set -euo pipefail
root=$1 edgerun=$2 work=$3
if ! model=$("$root/scripts/fetch-model.sh"); then
  echo "skipped: the default model could not be fetched"
  exit 77
fi
exec python3 "$root/tests/cli/test_generation_cli.py" "$edgerun" "$model" "$work"
