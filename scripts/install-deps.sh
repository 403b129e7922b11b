#!/usr/bin/env bash
# Installs what edgerun needs, idempotently (safe to run again; does nothing already done):
#   scripts/install-deps.sh           to build and run: Debian packages, the project's
#                                     Python environment (.venv, for pip's model download)
#   scripts/install-deps.sh --test    also the test references, pinned, into .venv
#   scripts/install-deps.sh --aarch64  also the aarch64 cross compiler and qemu-user
#                                     (scripts/aarch64-check.sh); combines with --test
#   scripts/install-deps.sh --jammy   also debootstrap (scripts/jammy-check.sh)
#   scripts/install-deps.sh --libraries   only print the library packages (headers and
#                                     .so), the part a cross build takes for its target
#
# Nothing goes into the system's or the user's Python: see scripts/venv.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/venv.sh"

libraries=(
  libboost-dev libboost-program-options-dev libboost-filesystem-dev libboost-context-dev
  libspdlog-dev libtomlplusplus-dev doctest-dev libopenblas-dev
  nlohmann-json3-dev
)
packages=(build-essential cmake ninja-build pkg-config git python3 python3-venv "${libraries[@]}")

test_deps=0
for arg in "$@"; do
  case $arg in
    --test) test_deps=1 ;;
    --aarch64) packages+=(g++-aarch64-linux-gnu qemu-user) ;;
    --jammy) packages+=(debootstrap) ;;
    --libraries) echo "${libraries[@]}"; exit 0 ;;
    *) echo "usage: scripts/install-deps.sh [--test] [--aarch64] [--jammy] | --libraries" >&2; exit 2 ;;
  esac
done

# Ubuntu 22.04 (JetPack 6) packages no toml++: there its headers are fetched instead.
toml_package=libtomlplusplus-dev
toml_headers=$root/.deps/tomlplusplus/include/toml++/toml.h
missing=()
for p in "${packages[@]}"; do
  [ "$p" = $toml_package ] && [ -f "$toml_headers" ] && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
fetch_toml=0
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  if [[ " ${missing[*]} " == *" $toml_package "* ]] && ! apt-cache show $toml_package > /dev/null 2>&1; then
    fetch_toml=1
    others=()
    for p in "${missing[@]}"; do [ "$p" = $toml_package ] || others+=("$p"); done
    missing=("${others[@]}")
  fi
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ $fetch_toml -eq 0 ] || "$root/scripts/fetch-tomlplusplus.sh"

python=$(project_python)
[ $test_deps -eq 1 ] || exit 0

# The test references, pinned (scripts/requirements-test.txt): numpy, `gguf` (a GGUF
# reader and dequantizers nobody here wrote), jinja2 (chat templates), and llama.cpp
# itself through llama-cpp-python, built portably by scripts/llamacpp-wheel.sh.
requirements=$root/scripts/requirements-test.txt
wheels=$("$root/scripts/llamacpp-wheel.sh" portable)
stamp_want=$(cat "$requirements" <(echo "$wheels") | sha256sum | cut -d' ' -f1)
stamp=$EDGERUN_VENV/.edgerun-test-deps
if [ "$(cat "$stamp" 2>/dev/null)" != "$stamp_want" ]; then
  echo "install-deps: pip install -r scripts/requirements-test.txt into $EDGERUN_VENV"
  "$python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
  "$python" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --force-reinstall \
    --find-links "$wheels" llama-cpp-python
  echo "$stamp_want" > "$stamp"
fi
