#!/usr/bin/env bash
# Installs everything edgerun needs to build and test, idempotently: Debian packages with
# apt-get, Python packages with pip. Safe to run again; does nothing already done.
#   scripts/install-deps.sh            build + test dependencies
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libboost-dev libboost-program-options-dev libboost-filesystem-dev
  libspdlog-dev libtomlplusplus-dev doctest-dev libopenblas-dev
  nlohmann-json3-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python packages the tests use as independent references: `gguf` (GGUF reader and
# dequantizers nobody here wrote) and `llama-cpp-python` (llama.cpp itself, built from
# source on install: about 10 minutes on 2 cores the first time).
python=${PYTHON:-python3}
pip_want=(numpy "gguf==0.19.0" "llama-cpp-python==0.3.36" jinja2)
pip_missing=()
for spec in "${pip_want[@]}"; do
  name=${spec%%==*}
  want=${spec#*==}
  have=$($python -m pip show "$name" 2>/dev/null | sed -n 's/^Version: //p')
  if [ -z "$have" ] || { [ "$spec" != "$name" ] && [ "$have" != "$want" ]; }; then
    pip_missing+=("$spec")
  fi
done
if [ ${#pip_missing[@]} -gt 0 ]; then
  echo "install-deps: pip install ${pip_missing[*]}"
  $python -m pip install --quiet --disable-pip-version-check "${pip_missing[@]}"
fi
