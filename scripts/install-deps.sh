#!/usr/bin/env bash
# Installs everything edgerun needs to build and test, idempotently: Debian packages with
# apt-get, Python packages with pip. Safe to run again; does nothing already done.
#   scripts/install-deps.sh            build + test dependencies
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libboost-dev libboost-program-options-dev libboost-filesystem-dev
  libspdlog-dev libtomlplusplus-dev doctest-dev libopenblas-dev
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
