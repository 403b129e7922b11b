#!/usr/bin/env python3
"""Downloads a file whose sha256 the caller pins, trying each URL in turn (mirrors).

    scripts/fetch_pinned.py SHA256 OUT URL [URL ...]

OUT appears only once a download matches (written beside it, then renamed). Exits 3 with
one line naming what each URL did when none matched. Standard library only: it runs
before the project's Python environment exists.
"""
import hashlib
import os
import sys
import urllib.request


def main(sha256, out, *urls):
    failures = []
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                data = response.read()
        except OSError as e:
            failures.append(f"{url}: {e}")
            continue
        got = hashlib.sha256(data).hexdigest()
        if got != sha256:
            failures.append(f"{url}: sha256 {got}, expected {sha256}")
            continue
        partial = out + ".partial"
        with open(partial, "wb") as f:
            f.write(data)
        os.replace(partial, out)
        return 0
    print(f"{os.path.basename(out)}: " + "; ".join(failures), file=sys.stderr)
    return 3


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    sys.exit(main(*sys.argv[1:]))
