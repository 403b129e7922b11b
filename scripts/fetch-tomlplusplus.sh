#!/usr/bin/env bash
# Puts toml++'s headers under .deps/tomlplusplus/ for distributions that package no
# toml++: Ubuntu 22.04, JetPack 6's, has none (Debian 12 and Ubuntu 24.04 have
# libtomlplusplus-dev, and scripts/install-deps.sh installs that where it can).
#
# The headers come from the distributions' own source package, toml++ 3.4.0 (the
# upstream source Ubuntu 24.04 and Debian 13 build libtomlplusplus-dev from), checked
# against its sha256; CMakeLists.txt uses them header-only. Nothing is installed into the
# system. Exits 3 when no mirror could be reached or the archive does not match.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=$root/.deps/tomlplusplus
[ -f "$target/include/toml++/toml.h" ] && exit 0

archive=tomlplusplus_3.4.0+ds.orig.tar.xz
sha256=0ae736e13a49cc8a0aa7799705cf18bd93f5f56624613e6aa554b65fe2d72768
# Ubuntu's pool first (what an Ubuntu 22.04 machine already reaches), then Debian's, whose
# Sources index lists the same file with the same checksum.
mirrors=(http://archive.ubuntu.com/ubuntu/pool/universe/t/tomlplusplus
         http://deb.debian.org/debian/pool/main/t/tomlplusplus)

echo "fetch-tomlplusplus: no toml++ package here; fetching its headers ($archive)" >&2
mkdir -p "$root/.deps"
# Unpacked beside the target and renamed into place: an interrupted run leaves nothing.
work=$(mktemp -d "$root/.deps/.tomlplusplus.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 "$root/scripts/fetch_pinned.py" "$sha256" "$work/$archive" "${mirrors[@]/%//$archive}"
python3 - "$work" "$archive" <<'PY'
import pathlib, sys, tarfile
work, archive = pathlib.Path(sys.argv[1]), sys.argv[2]
with tarfile.open(work / archive) as tar:
    wanted = []
    for member in tar.getmembers():
        rest = member.name.partition("/")[2]  # below the archive's top folder
        if (rest.startswith("include/toml++/") or rest == "LICENSE") and member.isfile():
            member.name = rest
            wanted.append(member)
    # The "data" filter where this Python has it (3.10.12 and later): no links or devices.
    safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    tar.extractall(work / "tomlplusplus", members=wanted, **safe)
if not (work / "tomlplusplus/include/toml++/toml.h").is_file():
    print(f"fetch-tomlplusplus: {archive} holds no include/toml++/toml.h", file=sys.stderr)
    sys.exit(3)
PY
rm -rf "$target"
mv "$work/tomlplusplus" "$target"
echo "fetch-tomlplusplus: $target/include" >&2
