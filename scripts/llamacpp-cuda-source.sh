#!/usr/bin/env bash
# Packs llama.cpp's source, as llama-cpp-python's source distribution carries it, small
# enough to be carried to the GPU machine, and prints the archive's path.
#
#   scripts/llamacpp-cuda-source.sh [OUT_DIR]     default OUT_DIR: .llama-src (git-ignored)
#
# Why. The GPU comparison (bench/compare_llamacpp_gpu.py) measures llama.cpp's CUDA build
# with its own llama-bench, built on the GPU machine by scripts/build-llama-bench.sh. That
# machine has no package registry, and one device call carries at most 64 MiB; the sdist
# is ~77 MB, most of it a git pack, tokenizer vocabularies (models/), docs and a web UI
# that llama-bench never compiles. So the sdist is fetched here with the project
# environment's pip (the same pinned version the test suite uses: scripts/llamacpp-wheel.sh)
# and vendor/llama.cpp is repacked without those. Nothing of llama.cpp is committed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/venv.sh"

version=0.3.36
out=${1:-$root/.llama-src}
archive=$out/llama.cpp-$version-src.tar.xz

if [ -f "$archive" ]; then
  echo "$archive"
  exit 0
fi

python=$(project_python)
mkdir -p "$out"
work=$(mktemp -d "$out/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "llamacpp-cuda-source: downloading the llama-cpp-python $version source distribution" >&2
"$python" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary llama-cpp-python \
  -d "$work" "llama-cpp-python==$version" >&2
sdist=$(ls "$work"/llama_cpp_python-"$version".tar.gz)
echo "llamacpp-cuda-source: $(du -h "$sdist" | cut -f1) downloaded; repacking vendor/llama.cpp" >&2

# Only llama.cpp's tree, and in it only what its CMake configure and the llama-bench
# target read. Left out: the sdist's git pack (not under vendor/), vendor/llama.cpp/.git
# (a gitdir pointer to that pack), the tokenizer test vocabularies (models/; the source
# models live in src/models, kept), docs, media, the web UI (built only with the server),
# the Python converters and gguf-py, CI files, and the bench/test data.
tar -xzf "$sdist" -C "$work" \
  --exclude="llama_cpp_python-$version/.git" \
  --exclude="llama_cpp_python-$version/vendor/llama.cpp/.git" \
  --exclude="llama_cpp_python-$version/vendor/llama.cpp/.github" \
  --exclude="llama_cpp_python-$version/vendor/llama.cpp/.devops" \
  --exclude="llama_cpp_python-$version/vendor/llama.cpp/models" \
  --exclude="llama_cpp_python-$version/vendor/llama.cpp/docs" \
  --exclude="llama_cpp_python-$version/vendor/llama.cpp/media" \
  --exclude="llama_cpp_python-$version/vendor/llama.cpp/gguf-py" \
  --exclude="llama_cpp_python-$version/vendor/llama.cpp/benches" \
  --exclude="llama_cpp_python-$version/vendor/llama.cpp/tools/ui" \
  --exclude="llama_cpp_python-$version/vendor/llama.cpp/tools/server/public*" \
  "llama_cpp_python-$version/vendor/llama.cpp"
src=$work/llama_cpp_python-$version/vendor/llama.cpp
[ -f "$src/tools/llama-bench/llama-bench.cpp" ] || {
  echo "llamacpp-cuda-source: the sdist has no vendor/llama.cpp/tools/llama-bench" >&2
  exit 1
}
# Where the source came from. The sdist's git metadata (left out above) names the llama.cpp
# commit it vendors; build-llama-bench.sh compiles it into llama-bench's build_commit, which
# would otherwise be whatever repository the build happens to sit in.
tar -xzf "$sdist" -C "$work" "llama_cpp_python-$version/.git/modules/vendor/llama.cpp/HEAD"
commit=$(cat "$work/llama_cpp_python-$version/.git/modules/vendor/llama.cpp/HEAD")
{
  echo "llama-cpp-python==$version sdist, vendor/llama.cpp repacked by scripts/llamacpp-cuda-source.sh"
  echo "llama.cpp commit: $commit"
} > "$src/EDGERUN_SOURCE"
mv "$src" "$work/llama.cpp"
tar -C "$work" -cf - llama.cpp | xz -T0 -6 > "$work/archive.tar.xz"
mv "$work/archive.tar.xz" "$archive"
echo "llamacpp-cuda-source: $(du -h "$archive" | cut -f1) ($(stat -c %s "$archive") bytes): $archive" >&2
echo "$archive"
