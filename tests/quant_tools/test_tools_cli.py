#!/usr/bin/env python3
"""The command-line contract of `edgerun quantize` and `edgerun synth`: bad input gives a
one-line error and a non-zero exit, and a failed or interrupted run leaves no file behind.

    test_tools_cli.py --edgerun BIN --plugin-dir DIR --smollm2 MODEL|@fetch:REPO_ROOT
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fetched_model import model_path  # noqa: E402


class Run:
    def __init__(self, edgerun, plugin_args):
        self.edgerun, self.plugin_args, self.failures = edgerun, plugin_args, 0

    def expect(self, label, args, code, message, outputs=()):
        p = subprocess.run([self.edgerun, *args[:1], *self.plugin_args, *args[1:]], capture_output=True, text=True)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        ok = (p.returncode == code if code is not None else p.returncode != 0) and message in p.stderr
        ok &= len(lines) == 1 and not any(os.path.exists(o) for o in outputs)
        self.failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {label}: exit {p.returncode}, {p.stderr.strip()!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--edgerun", required=True)
    ap.add_argument("--plugin-dir", action="append", default=[])
    ap.add_argument("--smollm2", required=True)
    args = ap.parse_args()
    args.smollm2 = model_path(args.smollm2)
    plugin_args = [a for d in args.plugin_dir for a in ("--plugin-dir", d)]
    run = Run(args.edgerun, plugin_args)
    work = tempfile.mkdtemp(prefix="edgerun-cli-")
    out = os.path.join(work, "out.gguf")

    run.expect("unknown file type", ["quantize", args.smollm2, out, "--type", "Q3_X"], 2, "--type Q3_X: unknown", [out])
    run.expect("both --type and --pure", ["quantize", args.smollm2, out, "--type", "Q4_0", "--pure", "Q4_0"], 2,
               "exactly one of", [out])
    run.expect("no output", ["quantize", args.smollm2, "--type", "Q4_0"], 2, "no output file", [])
    run.expect("missing input", ["quantize", os.path.join(work, "nope.gguf"), out, "--type", "Q4_0"], None, "nope.gguf", [out])
    run.expect("output folder missing", ["quantize", args.smollm2, os.path.join(work, "no", "x.gguf"), "--type", "Q8_0"],
               None, "x.gguf", [])
    run.expect("output is the input", ["quantize", args.smollm2, args.smollm2, "--type", "Q8_0"], 2, "is the input", [])
    truncated = os.path.join(work, "truncated.gguf")
    with open(args.smollm2, "rb") as src, open(truncated, "wb") as dst:
        dst.write(src.read(40 << 20))
    run.expect("truncated input", ["quantize", truncated, out, "--type", "Q4_K_M"], None, "truncated.gguf", [out])
    os.remove(truncated)
    run.expect("unknown preset", ["synth", "--preset", "gpt5", "-o", out], 2, "--preset gpt5: unknown", [out])
    run.expect("synth bad layers", ["synth", "--preset", "qwen3-0.6b", "--layers", "-3", "-o", out], 2, "--layers", [out])

    # Interrupted: Ctrl-C in the middle of a long synth leaves neither the file nor a temporary.
    p = subprocess.Popen([args.edgerun, "synth", *plugin_args, "--preset", "qwen3-4b", "--type", "Q4_K_M", "-o", out],
                         stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    ok = p.returncode != 0 and "interrupted" in err and os.listdir(work) == []
    run.failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} interrupted synth: exit {p.returncode}, folder holds {os.listdir(work)}, {err.strip()[-80:]!r}")

    shutil.rmtree(work, ignore_errors=True)
    print("FAIL" if run.failures else "PASS")
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
