#!/usr/bin/env python3
"""Every cuda_orin option has its row in plugins/cuda_orin/README.md, and every row there is an
option the backend takes.

  check_option_docs.py EDGERUN PLUGIN_DIR MODEL README

The backend's own list comes from its unknown-option line (an unknown key lists every key,
backend_options.cpp); the README's from its options table (rows starting "| `key=").
"""
import re
import subprocess
import sys


def main(edgerun, plugin_dir, model, readme):
    done = subprocess.run([edgerun, "--plugin-dir", plugin_dir, "--backend", "cuda_orin_emu", "--backend-options",
                           "no_such_option=1", "-m", model, "-p", "hi", "-n", "1"], capture_output=True, text=True,
                          timeout=120)
    m = re.search(r"unknown option 'no_such_option=1' \(known: ([a-z0-9_,]+)\)", done.stderr)
    if done.returncode == 0 or not m:
        print(done.stderr)
        print("FAIL: no unknown-option line listing the keys")
        return 1
    taken = set(m.group(1).split(","))
    documented = set(re.findall(r"^\| `([a-z0-9_]+)=", open(readme).read(), re.M))
    problems = [f"option {k}: no row in the README's options table" for k in sorted(taken - documented)]
    problems += [f"README row {k}=...: the backend takes no such option" for k in sorted(documented - taken)]
    print(f"{len(taken)} options taken, {len(documented)} rows documented")
    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
