#!/usr/bin/env python3
"""Orin decode speed projected from cuda_orin's launch profile on another GPU.

  bench/project_orin.py LOG --peak-gbs P [--label NAME] [--json OUT] [--orin NAME=GBS ...]

LOG is the output of a decode run with the launch profile on, best from the build that
carries only compute_87 PTX (the Orin code, JIT-compiled on the GPU at hand):

  edgerun --backend cuda_orin --backend-options profile=1 --log-level info -m M -p ... -n 64

P is the device-to-device copy peak measured on that GPU in the same session (GB/s, read
+ written bytes; bench/compare_llamacpp_gpu.py records it as copy_peak). From the LOG's
last decode table, each counted launch kind k (GEMVs and attention: the kinds with
bytes) has bytes_k per step and an achieved bandwidth; its efficiency e_k is that over P,
at most 1. The projection is the issue's formula,

  projected tok/s = BW_orin / sum_k (bytes_k / e_k)

for each Orin (their data-sheet DRAM bandwidths; --orin adds or replaces one). The
launches without bytes (norm, RoPE, embedding: a few per cent of the kernel time on the
emulation) are left out of the formula; their share of the measured kernel time is
printed, so the reader sees what the projection ignores. This is a projection, not an
Orin measurement: a kernel that is latency-bound on a large GPU (few bytes per launch)
is likely closer to the bandwidth on a 16-SM Orin, so small kernels make it pessimistic.
"""

import argparse
import json
import re
import sys

# Data-sheet DRAM bandwidths (GB/s), as ../shared/BRIEF.md lists them.
ORIN_BANDWIDTH = {"Jetson Orin Nano 8GB": 68.0, "Jetson Orin Nano Super": 102.0, "Jetson AGX Orin 64GB": 204.8}

TABLE = re.compile(r"cuda_orin: launch profile of (\d+) (decode|prefill) steps")
ROW = re.compile(r"cuda_orin:   (.+?)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)%\s+([0-9.]+|-)\s+([0-9.]+|-)$")
TOTAL = re.compile(r"cuda_orin: launches per step: ([0-9.]+)$")


def decode_table(text):
    """The last decode table of a log: {"rows": [(label, ms_per_step, MB_per_step or None)]}."""
    table, current = None, None
    for line in text.splitlines():
        if m := TABLE.search(line):
            current = {"kind": m.group(2), "rows": []}
            if m.group(2) == "decode":
                table = current
        elif current is not None and TOTAL.search(line):
            current = None
        elif current is not None and (m := ROW.search(line)) and m.group(1).strip() != "launch":
            mb = None if m.group(6) == "-" else float(m.group(6))
            current["rows"].append((m.group(1).strip(), float(m.group(4)), mb))
    return table


def project(table, peak_gbs, orins):
    kinds = []
    counted_ms = 0.0
    for label, ms, mb in table["rows"]:
        if mb is None or ms <= 0:
            continue
        achieved = mb / ms  # MB per ms = GB/s
        efficiency = min(achieved / peak_gbs, 1.0)
        kinds.append({"launch": label, "mb_per_step": mb, "ms_per_step": ms, "achieved_gb_s": achieved,
                      "efficiency": efficiency})
        counted_ms += ms
    if not kinds:
        raise ValueError("the decode table counts no bytes (a profile from before bytes were counted?)")
    effective_mb = sum(k["mb_per_step"] / k["efficiency"] for k in kinds)  # sum_k bytes_k / e_k
    total_mb = sum(k["mb_per_step"] for k in kinds)
    kernel_ms = sum(ms for _, ms, _ in table["rows"])
    return {
        "kinds": kinds,
        "mb_per_step": total_mb,
        "effective_mb_per_step": effective_mb,
        "uncounted_share_of_kernel_time": (kernel_ms - counted_ms) / kernel_ms if kernel_ms > 0 else 0.0,
        "projected_tok_s": {name: bw * 1e3 / effective_mb for name, bw in orins.items()},
        "roofline_tok_s": {name: bw * 1e3 / total_mb for name, bw in orins.items()},
    }


def markdown(label, peak_gbs, result):
    lines = [f"### {label}: Orin projection (not a measurement)", "",
             f"Copy peak of the measuring GPU: {peak_gbs:.0f} GB/s. Bytes per decode step counted: "
             f"{result['mb_per_step']:.1f} MB; launches without bytes: "
             f"{100 * result['uncounted_share_of_kernel_time']:.1f}% of the kernel time, left out.", "",
             "| launch | MB/step | ms/step | GB/s | efficiency |", "|---|---:|---:|---:|---:|"]
    for k in sorted(result["kinds"], key=lambda k: -k["ms_per_step"]):
        lines.append(f"| {k['launch']} | {k['mb_per_step']:.3f} | {k['ms_per_step']:.4f} | "
                     f"{k['achieved_gb_s']:.0f} | {100 * k['efficiency']:.1f}% |")
    lines += ["", "| Orin | bandwidth GB/s | projected tok/s | roofline tok/s |", "|---|---:|---:|---:|"]
    for name, tok_s in result["projected_tok_s"].items():
        bw = result["orin_bandwidth_gb_s"][name]
        lines.append(f"| {name} | {bw:.1f} | {tok_s:.1f} | {result['roofline_tok_s'][name]:.1f} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log", help="output of a profile=1 decode run (edgerun --log-level info)")
    ap.add_argument("--peak-gbs", type=float, required=True, help="copy peak of the GPU the log is from, GB/s")
    ap.add_argument("--label", default=None, help="what the log is (model, build); default: its path")
    ap.add_argument("--json", default=None, help="also write the figures here")
    ap.add_argument("--orin", action="append", default=[], metavar="NAME=GBS", help="another Orin bandwidth")
    args = ap.parse_args()
    if args.peak_gbs <= 0:
        ap.error("--peak-gbs must be positive")
    orins = dict(ORIN_BANDWIDTH)
    for item in args.orin:
        name, _, gbs = item.rpartition("=")
        try:
            orins[name] = float(gbs)
        except ValueError:
            ap.error(f"--orin {item}: expected NAME=GB/s")
        if not name or orins[name] <= 0:
            ap.error(f"--orin {item}: expected NAME=GB/s with a positive bandwidth")
    try:
        with open(args.log, errors="replace") as f:
            table = decode_table(f.read())
    except OSError as e:
        sys.exit(f"project_orin.py: {args.log}: {e.strerror}")
    if table is None:
        sys.exit(f"project_orin.py: {args.log}: no decode launch profile (run with --backend-options profile=1 "
                 "--log-level info and at least two generated tokens)")
    try:
        result = project(table, args.peak_gbs, orins)
    except ValueError as e:
        sys.exit(f"project_orin.py: {args.log}: {e}")
    result["orin_bandwidth_gb_s"] = orins
    result["peak_gb_s"] = args.peak_gbs
    result["label"] = args.label or args.log
    sys.stdout.write(markdown(result["label"], args.peak_gbs, result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
