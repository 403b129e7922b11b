#!/usr/bin/env bash
# Builds llama.cpp's own HTTP server (llama-server, vendor/llama.cpp/tools/server) from
# the llama-cpp-python source distribution whose version scripts/llamacpp-wheel.sh pins,
# portably as the test reference is (GGML_NATIVE=OFF: AVX2/FMA/F16C, no AVX-512, no AMX),
# into the cache, and prints the binary's path. Built once; nothing is committed.
#   scripts/llamacpp-server.sh        -> ~/.cache/edgerun/llama-server-0.3.36-portable/llama-server
# For bench/serve_load.py --llama-server (the side-by-side with edgerun serve).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/venv.sh"

version=$(sed -n 's/^version=//p' "$root/scripts/llamacpp-wheel.sh" | head -1)
dir=${EDGERUN_CACHE:-$HOME/.cache/edgerun}/llama-server-$version-portable
if [ -x "$dir/llama-server" ]; then
  echo "$dir/llama-server"
  exit 0
fi
mkdir -p "$dir"
work=$(mktemp -d "$dir/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

python=$(project_python)
echo "llamacpp-server: downloading the llama-cpp-python $version source distribution" >&2
"$python" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary llama-cpp-python \
  -d "$work" "llama-cpp-python==$version" >&2
tar -xzf "$work/llama_cpp_python-$version.tar.gz" -C "$work" "llama_cpp_python-$version/vendor/llama.cpp"
src=$work/llama_cpp_python-$version/vendor/llama.cpp
[ -d "$src/tools/server" ] || { echo "llamacpp-server: the sdist has no vendor/llama.cpp/tools/server" >&2; exit 1; }

no_amx="-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
echo "llamacpp-server: building llama-server (portable) in $work" >&2
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
  -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF $no_amx \
  -DGGML_OPENMP=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON >&2
cmake --build "$work/build" --target llama-server -j "${EDGERUN_JOBS:-2}" >&2
cp "$work/build/bin/llama-server" "$dir/llama-server.tmp"
mv -f "$dir/llama-server.tmp" "$dir/llama-server"
echo "$dir/llama-server"
