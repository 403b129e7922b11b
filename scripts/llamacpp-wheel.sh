#!/usr/bin/env bash
# Builds llama.cpp's Python package (llama-cpp-python, which compiles llama.cpp from its
# source distribution) as a wheel, once per flavour, and prints the folder that holds it.
#
#   scripts/llamacpp-wheel.sh portable        the test suite's reference
#   scripts/llamacpp-wheel.sh fast [--lib]    for speed comparisons; --lib prints the folder
#                                             of its shared libraries (LLAMA_CPP_LIB_PATH)
#
# Why two flavours. llama-cpp-python compiles llama.cpp with -march=native by default. On
# an Intel Xeon with AMX that turns on ggml's AMX path, which crashes at the first
# evaluation in the VMs this project runs on (llama.cpp issue 20824: tile-data permission
# is requested on the main thread only), and a wheel built on one CPU may not run on the
# next machine at all. So:
#   portable  GGML_NATIVE=OFF: AVX, AVX2, FMA, F16C, BMI2; no AVX-512, no AMX. Runs on
#             every x86-64 CPU of the last ten years. Used for correctness, never for speed.
#   fast      the best this CPU has (AVX-512 and its VNNI/BF16/VBMI extensions where
#             present), AMX excluded: what a user gets from llama.cpp here, minus the path
#             that crashes. Speed comparisons use it so that the portable build does not
#             flatter edgerun.
#
# pip's wheel cache is keyed by the source package, not by CMAKE_ARGS, so a -march=native
# wheel built earlier would be reused: the wheel is built with --no-cache-dir into a folder
# of our own, named by the version and a hash of the flags, and installed from there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/venv.sh"

version=0.3.36
flavour=${1:-}
want_lib=0
[ "${2:-}" = "--lib" ] && want_lib=1

no_amx="-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
case $flavour in
  portable)
    flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
    flags+=" -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF $no_amx"
    ;;
  fast)
    has() { grep -qw "$1" /proc/cpuinfo; }
    flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
    has avx512f && flags+=" -DGGML_AVX512=ON"
    has avx512vbmi && flags+=" -DGGML_AVX512_VBMI=ON"
    has avx512_vnni && flags+=" -DGGML_AVX512_VNNI=ON"
    has avx512_bf16 && flags+=" -DGGML_AVX512_BF16=ON"
    has avx_vnni && flags+=" -DGGML_AVX_VNNI=ON"
    flags+=" $no_amx"
    ;;
  *)
    echo "usage: scripts/llamacpp-wheel.sh portable|fast [--lib]" >&2
    exit 2
    ;;
esac

python=$(project_python)
pytag=$("$python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
key=$(printf '%s %s %s' "$version" "$pytag" "$flags" | sha256sum | cut -c1-12)
dir=${EDGERUN_CACHE:-$HOME/.cache/edgerun}/wheels/llama-cpp-python-$version-$flavour-$key

if ! ls "$dir"/llama_cpp_python-*.whl > /dev/null 2>&1; then
  mkdir -p "$(dirname "$dir")"
  work=$(mktemp -d "$dir.tmp.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  echo "llamacpp-wheel: compiling llama.cpp (llama-cpp-python $version, $flavour: $flags);" \
       "about 5 minutes on 2 cores, once" >&2
  start=$SECONDS
  if ! CMAKE_ARGS="$flags" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
       "$python" -m pip wheel --quiet --disable-pip-version-check --no-cache-dir --no-deps \
       -w "$work" "llama-cpp-python==$version" > "$work/build.log" 2>&1; then
    tail -n 30 "$work/build.log" >&2
    echo "llamacpp-wheel: building llama-cpp-python $version failed (log above)" >&2
    exit 1
  fi
  rm -f "$work/build.log"
  rm -rf "$dir"
  mv "$work" "$dir"
  trap - EXIT
  echo "llamacpp-wheel: built in $((SECONDS - start)) s: $dir" >&2
fi

if [ $want_lib -eq 1 ]; then
  lib=$dir/lib
  if [ ! -f "$lib/.unpacked" ]; then
    rm -rf "$lib" && mkdir -p "$lib"
    "$python" - "$dir" "$lib" <<'PY'
import pathlib, sys, zipfile
src, lib = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
with zipfile.ZipFile(next(src.glob("llama_cpp_python-*.whl"))) as z:
    for m in z.namelist():
        if m.startswith("llama_cpp/lib/") and not m.endswith("/"):
            (lib / m.rsplit("/", 1)[1]).write_bytes(z.read(m))
PY
    touch "$lib/.unpacked"
  fi
  echo "$lib"
else
  echo "$dir"
fi
