#!/usr/bin/env python3
"""bench/skip_profile.py and cuda_orin's option profile_skip, on the CPU emulation.

  test_skip_profile.py ROOT WORK EDGERUN PLUGIN_DIR MODEL

The launches each skip set leaves out of a decode step must be exactly those that
profile=1's table counts for its kinds (prepare; every GEMV shape), the step without the
GEMVs must take under half the full one's time (on the emulation they are most of it), a
name the backend does not know must fail that row with the backend's one-line error and
the script's exit status, and wrong arguments must be refused before any run.
"""

import json
import os
import re
import subprocess
import sys

failures = []
# A row of profile=1's table: label, launches/step, total ms, ms/step, share (launch_profile.cpp).
ROW = re.compile(r"cuda_orin:   (.+?)\s{2,}(\d+(?:\.\d+)?)\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+%")


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    if not ok:
        failures.append(name)


def profiled_launches(edgerun, plugin_dir, model):
    """Launches a decode step per kind from profile=1's table: {label: launches/step}."""
    done = subprocess.run([edgerun, "--plugin-dir", plugin_dir, "--backend", "cuda_orin_emu", "--backend-options",
                           "profile=1", "--log-level", "info", "-m", model, "-p", "hi", "-n", "3", "-c", "64",
                           "--temp", "0"], capture_output=True, text=True, timeout=300)
    kinds, in_table = {}, False
    for line in done.stderr.splitlines():
        if "launch profile of" in line:
            in_table = "decode steps" in line  # the table of one-row steps (launch_profile.cpp)
        elif "launches per step:" in line:
            in_table = False
        elif in_table and (m := ROW.search(line)):
            kinds[m[1].strip()] = float(m[2])
    return kinds


def main(root, work, edgerun, plugin_dir, model):
    os.makedirs(work, exist_ok=True)
    script = os.path.join(root, "bench", "skip_profile.py")
    base = [sys.executable, script, "--edgerun", edgerun, "--plugin-dir", plugin_dir, "--backend", "cuda_orin_emu",
            "--test", model, "-n", "3", "-r", "1"]

    kinds = profiled_launches(edgerun, plugin_dir, model)
    check("profile=1 gives a decode table", bool(kinds), kinds)
    if not kinds:
        return 1
    want = {"prepare": kinds.get("prepare", 0),
            "gemv": sum(n for label, n in kinds.items() if label.startswith("gemv "))}
    check("the model's decode step has prepares and GEMVs", want["prepare"] > 0 and want["gemv"] > 0, want)

    out = os.path.join(work, "skip.json")
    done = subprocess.run(base + ["--skip", "prepare", "--skip", "gemv", "--out", out], capture_output=True, text=True,
                          timeout=600)
    check("the script exits 0", done.returncode == 0, done.stderr[-2000:])
    doc = json.load(open(out))
    rows = {r["skip"]: r for r in next(iter(doc["tables"].values()))}
    for skip in ("prepare", "gemv"):
        r = rows.get(skip, {})
        check(f"{skip}: the launches left out are profile=1's count of them",
              r.get("launches_left_out") == want[skip], (r.get("launches_left_out"), want[skip]))
    full, no_gemv = rows.get(""), rows.get("gemv")
    # On the emulation the GEMVs are most of a step's time (over 90% at 2 layers).
    check("the step without GEMVs takes under half the full step's time",
          full and no_gemv and no_gemv["step_ms"] < 0.5 * full["step_ms"] and no_gemv["saved_share"] > 0.5,
          (full, no_gemv))
    warned = subprocess.run([edgerun, "--plugin-dir", plugin_dir, "--backend", "cuda_orin_emu", "--backend-options",
                             "profile_skip=prepare+rope_append", "-m", model, "-p", "hi", "-n", "1"],
                            capture_output=True, text=True, timeout=300)
    check("a warning says the outputs are wrong",
          warned.returncode == 0 and "warning: [cuda_orin_emu] cuda_orin: option profile_skip=prepare+rope_append: "
          "those launches are not made, so every output is wrong" in warned.stderr, (warned.returncode, warned.stderr))
    rates = [(r["skip"], r["bytes_per_token"], r["tok_s"]["median"], rows[r["skip"]]["gb_s"]) for r in doc["runs"]]
    check("each row's model GB/s is the bench's bytes a token times its tok/s",
          all(b and abs(g - b * t / 1e9) <= 1e-9 * max(1.0, g) for _, b, t, g in rates), rates)
    md = open(os.path.splitext(out)[0] + ".md").read()
    check("the table has a row a skip", "| prepare | " in md and "| gemv | " in md, md)

    bad = subprocess.run(base + ["--skip", "prepare+gemvs", "--out", os.path.join(work, "bad.json")],
                         capture_output=True, text=True, timeout=300)
    row = next(r for r in json.load(open(os.path.join(work, "bad.json")))["runs"] if r["skip"])
    check("an unknown launch name fails its row and the exit status",
          bad.returncode == 1 and "option profile_skip: 'gemvs' is not a launch" in (row["error"] or ""),
          (bad.returncode, row["error"]))

    for argv, why in ((["--skip", "prepare,gemv"], "a comma in a skip"), (["--skip", "prepare+"], "an empty name"),
                      (["--options", "profile_skip=gemv"], "profile_skip in --options")):
        refused = subprocess.run(base + argv + ["--out", os.path.join(work, "refused.json")], capture_output=True,
                                 text=True, timeout=60)
        check(f"refused: {why}", refused.returncode == 2 and not os.path.exists(os.path.join(work, "refused.json")),
              (refused.returncode, refused.stderr[-300:]))
    print("FAILED: " + ", ".join(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
