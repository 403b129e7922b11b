#!/usr/bin/env bash
# JetPack 6 is Ubuntu 22.04: this runs the README's two commands (scripts/run.sh, then
# scripts/test.sh) on a clean clone of HEAD inside an Ubuntu 22.04 x86-64 chroot, so the
# build meets that release's packages as a Jetson does: gcc 11.4, CMake 3.22, spdlog 1.9
# with fmt 8, nlohmann-json 3.10, doctest 2.4.8, Python 3.10, and no toml++ package.
# Not in CI (a second full build and test run). Root on a Debian or Ubuntu host; installs
# debootstrap when it is missing.
#
#   scripts/jammy-check.sh [WORKDIR] [-- CMAKE_ARGS]   (default /tmp/edgerun-jammy;
#                                                       CMAKE_ARGS go to scripts/test.sh)
#
# The chroot is made once (about 130 MB, a few minutes) and kept in WORKDIR with what the
# commands install into it; the clone is made anew each time.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=/tmp/edgerun-jammy
if [ $# -gt 0 ] && [ "$1" != "--" ]; then work=$1; shift; fi
[ "${1:-}" = "--" ] && shift
rootfs=$work/rootfs
mirror=http://archive.ubuntu.com/ubuntu

if [ "$(id -u)" -ne 0 ]; then echo "jammy-check: needs root (debootstrap, chroot)" >&2; exit 2; fi
command -v debootstrap > /dev/null || "$repo/scripts/install-deps.sh" --jammy

if [ ! -f "$rootfs/.edgerun-ready" ]; then
  # Ubuntu's archive key, from the package Ubuntu ships it in, pinned by checksum.
  keyring_deb=ubuntu-keyring_2021.03.26_all.deb
  keyring_sha256=0d0e7ed6b112f5d03eabf3c7eb01ebdacf9c57714b279e90495cfc58c8c4520f
  mkdir -p "$work/keyring"
  python3 "$repo/scripts/fetch_pinned.py" "$keyring_sha256" "$work/$keyring_deb" \
    "$mirror/pool/main/u/ubuntu-keyring/$keyring_deb"
  dpkg-deb -x "$work/$keyring_deb" "$work/keyring"
  debootstrap --variant=minbase --keyring="$work/keyring/usr/share/keyrings/ubuntu-archive-keyring.gpg" \
    jammy "$rootfs" "$mirror"
  cat > "$rootfs/etc/apt/sources.list" <<EOF
deb $mirror jammy main universe
deb $mirror jammy-updates main universe
deb $mirror jammy-security main universe
EOF
  touch "$rootfs/.edgerun-ready"
fi

# Name resolution and the host's certificate authorities (a proxy's own among them, where
# the host has one) for apt and pip inside.
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/root/host-ca.crt"

mounted=()
unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[i]}" || true; done
}
trap unmount_all EXIT
for m in proc sys dev dev/pts; do
  if ! mountpoint -q "$rootfs/$m"; then
    mount --bind "/$m" "$rootfs/$m"
    mounted+=("$rootfs/$m")
  fi
done

# Only the clone is removed: the mounts above are inside the root file system.
rm -rf "$rootfs/root/edgerun"
git clone --quiet "$repo" "$rootfs/root/edgerun"
echo "jammy-check: $(git -C "$rootfs/root/edgerun" log --oneline -1) in $(. "$rootfs/etc/os-release"; echo "$PRETTY_NAME")"

in_jammy() {
  local env=(HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
             LANG=C.UTF-8 SSL_CERT_FILE=/root/host-ca.crt PIP_CERT=/root/host-ca.crt)
  local v
  for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
    [ -n "${!v:-}" ] && env+=("$v=${!v}")
  done
  chroot "$rootfs" /usr/bin/env -i "${env[@]}" bash -c 'cd /root/edgerun && "$@"' bash "$@"
}
in_jammy scripts/run.sh -p "The capital of France is" -n 16 --temp 0
in_jammy scripts/test.sh "$@"
