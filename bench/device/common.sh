# Sourced by the device call scripts: run() runs one named check with a timeout inside
# the call's DEADLINE, logs it to $L/NAME.log, prints its exit status and tail, and returns
# that status (124 when skipped for want of time). After every step the logs are packed
# into one $OUT/<logs dir>.tar.gz: a device call brings back at most 8 files, none with
# '=' or ',' in its name, so loose logs named after their options would be lost.
t0=$SECONDS
pack() { [ -n "${OUT:-}" ] && tar -czf $OUT/.pack.tmp -C $(dirname $L) $(basename $L) && mv $OUT/.pack.tmp $OUT/$(basename $L).tar.gz; }
trap pack EXIT
left() { echo $((DEADLINE - (SECONDS - t0))); }
run() { local name=$1 tmo=$2; shift 2; local l=$(left); [ $l -lt 10 ] && { echo "$name: skipped (no time)" | tee -a $L/summary.txt; return 124; }
  [ $tmo -gt $l ] && tmo=$l
  timeout $tmo "$@" > $L/$name.log 2>&1; local rc=$?
  echo "$name: exit $rc at $((SECONDS-t0)) s" | tee -a $L/summary.txt; tail -n ${TAILN:-6} $L/$name.log | cut -c1-260; pack; return $rc; }
# The slim bundle unpacked (once) and its environment sourced: B (its bin/) and E (its
# edgerun); the device and the bundle's commit in $L/device.txt.
open_bundle() { [ -d .device-bundle ] || tar -xJf .slim-carry/bundle-slim.tar.xz
  source .device-bundle/env.sh; B=$PWD/.device-bundle/bin; E=$B/edgerun
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $L/device.txt
  echo "commit $(cat .device-bundle/COMMIT)" | tee -a $L/device.txt; }
# build-models/PRESET-Q4_K_M.gguf of each preset given, synthesized in parallel where absent
# (compare_llamacpp_gpu.py reuses these files; synth writes whole files only).
synth_models() { local m f; mkdir -p build-models
  for m in "$@"; do f=build-models/$m-Q4_K_M.gguf
    [ -f $f ] || $E synth --preset $m --type Q4_K_M -o $f > $L/synth_$m.log 2>&1 &
  done; wait; }
