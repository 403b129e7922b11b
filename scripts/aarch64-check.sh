#!/usr/bin/env bash
# Jetson's CPU side, checked from an x86-64 Debian machine: edgerun (all but the CUDA
# plugin, whose kernels scripts/cuda12-check.sh compiles for sm_87) cross-compiled for
# aarch64 by Debian's gcc cross compiler against the same Debian release's arm64
# libraries, then every test run under qemu-aarch64's user-mode emulation. It shows what
# an x86-64 build cannot: the code behind __aarch64__, plain char being unsigned, and
# arithmetic the aarch64 compiler fuses (a*b+c as one rounding) where x86-64 cannot.
#
#   scripts/aarch64-check.sh [WORKDIR] [-- CTEST ARGS]     (default WORKDIR: build/aarch64)
#
# Needs root (apt-get for the cross compiler and qemu-user, and binfmt_misc to register
# qemu-aarch64, so that tests which start edgerun from a script run it emulated too) and
# the Debian mirror. The arm64 libraries are fetched by apt-get with a private state
# under WORKDIR/apt (signatures and checksums checked as for any install) and unpacked
# into WORKDIR/sysroot: nothing for arm64 is installed into the system. Not part of CI:
# it builds everything again (about 10 minutes on 2 cores) and the tests run several
# times slower emulated; the timed ones (serve_*, the conformance model synthesis) can
# run out of time there, more so beside other work.
# Exits 77 when the tests cannot run (no binfmt_misc), after the build.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=build/aarch64
if [ $# -gt 0 ] && [ "$1" != "--" ]; then work=$1; shift; fi
[ "${1:-}" = "--" ] && shift
mkdir -p "$work"
work=$(cd "$work" && pwd)
sysroot=$work/sysroot

. /etc/os-release
if [ "${ID:-}" != debian ]; then
  echo "aarch64-check: Debian hosts only (this is ${PRETTY_NAME:-unknown}): the arm64 libraries come from the host release's own mirror" >&2
  exit 2
fi

# The cross compiler, the emulator, and the x86-64 side of the tests (the project's Python
# with its test references, llama.cpp among them, which the tests compare against).
scripts/install-deps.sh --test --aarch64
source scripts/venv.sh
python=$(project_python)

# The sysroot: the build's libraries for arm64 and everything they depend on (libc,
# libstdc++, libgfortran for OpenBLAS), made once per package list.
packages="$(scripts/install-deps.sh --libraries) libstdc++-12-dev"
if [ "$(cat "$sysroot/.packages" 2>/dev/null)" != "$packages" ]; then
  echo "aarch64-check: arm64 sysroot of $packages"
  rm -rf "$work/apt" "$sysroot"
  mkdir -p "$work/apt/lists/partial" "$work/apt/archives/partial" "$sysroot"
  touch "$work/apt/status"  # nothing installed: apt fetches the whole closure
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  cat > "$work/apt/sources.list" <<EOF
deb [arch=arm64 signed-by=$keyring] http://deb.debian.org/debian $VERSION_CODENAME main
deb [arch=arm64 signed-by=$keyring] http://deb.debian.org/debian $VERSION_CODENAME-updates main
deb [arch=arm64 signed-by=$keyring] http://deb.debian.org/debian-security $VERSION_CODENAME-security main
EOF
  apt=(apt-get -o Dir::State::Lists="$work/apt/lists" -o Dir::State::status="$work/apt/status"
       -o Dir::Cache::archives="$work/apt/archives" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
       -o Dir::Etc::SourceList="$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
       -o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o Debug::NoLocking=1)
  "${apt[@]}" update -qq
  # shellcheck disable=SC2086
  "${apt[@]}" install -y -qq --download-only --no-install-recommends $packages
  for deb in "$work"/apt/archives/*.deb; do dpkg-deb -x "$deb" "$sysroot"; done
  # Links the packages make absolute (/lib/...) are made relative, so they resolve inside
  # the sysroot; the links Debian's alternatives would make for OpenBLAS are made here.
  find "$sysroot" -type l | while read -r link; do
    target=$(readlink "$link")
    case $target in /*) ln -sfnr "$sysroot$target" "$link" ;; esac
  done
  lib=$sysroot/usr/lib/aarch64-linux-gnu
  for f in "$lib"/openblas-pthread/*.so* "$lib"/openblas-pthread/pkgconfig/*.pc; do
    dest=$lib/${f#"$lib"/openblas-pthread/}
    [ -e "$dest" ] || ln -sr "$f" "$dest"
  done
  echo "$packages" > "$sysroot/.packages"
fi

# The CUDA plugin's host code against CUDA 12.6's headers, by the aarch64 compiler.
CXX=aarch64-linux-gnu-g++ CXXFLAGS="--sysroot=$sysroot" scripts/cuda12-check.sh "$work/cuda12"

export EDGERUN_SYSROOT=$sysroot
cmake -S . -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEDGERUN_CUDA=OFF \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" -DPython3_EXECUTABLE="$python"
cmake --build "$work/build" -j "$(nproc)"

# Tests start edgerun from Python and CMake scripts too: the kernel runs those aarch64
# executables through qemu-aarch64 once it is registered with binfmt_misc (the F-less
# form: qemu finds the sysroot's loader through QEMU_LD_PREFIX).
binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e $binfmt/qemu-aarch64 ]; then
  [ -e $binfmt/register ] || mount -t binfmt_misc binfmt_misc $binfmt 2>/dev/null || true
  magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
  mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
  echo ":qemu-aarch64:M::$magic:$mask:$(command -v qemu-aarch64):" > $binfmt/register 2>/dev/null || true
fi
if [ ! -e $binfmt/qemu-aarch64 ]; then
  echo "aarch64-check: built; tests not run: cannot register qemu-aarch64 with binfmt_misc (needs root)"
  exit 77
fi
export QEMU_LD_PREFIX=$sysroot
status=0
ctest --test-dir "$work/build" --output-on-failure -j "$(nproc)" --output-junit ctest-results.xml "$@" || status=$?
"$python" scripts/list-skipped.py "$work/build/ctest-results.xml" || true
exit $status
