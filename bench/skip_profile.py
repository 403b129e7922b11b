#!/usr/bin/env python3
"""What each kind of launch costs in a replayed decode step: the step without it.

Option profile=1 times every launch alone, between two CUDA events, so each carries its
own launch cost, and the steps are launched plainly, not replayed: its shares say what a
kernel takes, not what a step would save without it. Here `edgerun bench` decodes with
the backend's defaults (or --options), then with each --skip set of launches left out
(cuda_orin's option profile_skip, whose outputs are wrong: only the time counts), in a
replayed step as a user runs it. The difference of the two step times is what those
launches cost in the step, the most a fusion removing them could save; the difference of
the launches a step (`--log-level info`'s "N launches per step") says how many they were.
Each row also gives the model's bytes a token (`edgerun bench`'s) over its step time: with
all but the GEMVs left out, the rate at which the GEMVs stream the weights in the step.

  bench/skip_profile.py --edgerun build/bin/edgerun --test MODEL[@DEPTH] ... --out F.json

Writes F.json (every run, with its samples) and F.md (a table a test). Exit status 0
when every run went well, 1 when one failed (its row says why), 2 for wrong arguments.
"""

import argparse
import datetime
import json
import os
import re
import shlex
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_llamacpp_gpu import device_info, git_commit  # noqa: E402
from decode_bench import add_decode_arguments, parse_tests, run_decode  # noqa: E402

SCHEMA = "edgerun-skip-profile/1"
# The launches of a decode step (Device entries: launch_profile.hpp's names), then all
# but the GEMVs and the embedding together: what is left is the GEMVs' own step time.
DEFAULT_SKIPS = ("prepare", "rope_append", "attention", "gemv", "prepare+rope_append+attention")
# "... 63 launched plainly; 399 launches per step" or "...; 25 launches per decode step, 61
# per prefill step" (launch_profile.cpp, LaunchProfile::launches_per_step).
PLAN_LINE = re.compile(r"cuda_orin: (\d+) steps replayed from a CUDA Graph, (\d+) launched plainly; "
                       r"([0-9.]+) launches per (decode )?step")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_decode_arguments(p, "a backend with option profile_skip (default: cuda_orin)")
    p.add_argument("--skip", action="append", default=[], metavar="ENTRY[+ENTRY...]",
                   help="launches left out together (repeatable; default: " + ", ".join(DEFAULT_SKIPS) + ")")
    p.add_argument("--options", default="", help="backend options of every run, the skips added to them")
    p.add_argument("--out", required=True, help="results JSON; the table goes beside it as .md")
    args = p.parse_args(argv)
    args.skips = list(dict.fromkeys(args.skip or DEFAULT_SKIPS))
    for s in args.skips:
        if not s or any(not part for part in s.split("+")) or "," in s or "=" in s:
            p.error(f"--skip '{s}': give launch names joined by '+' (e.g. prepare+rope_append)")
    if "profile_skip=" in args.options:
        p.error("--options: profile_skip is this script's to set")
    parse_tests(p, args)
    return args


def decode_launches(stderr):
    """Launches a decode step from the plan lines: the plan of the most steps (a depth's
    prefill plans run a step or a few, the decode plan every generated token)."""
    plans = [(int(m[1]) + int(m[2]), float(m[3]), bool(m[4])) for m in PLAN_LINE.finditer(stderr)]
    if not plans:
        return None
    both = [p for p in plans if p[2]]  # a plan that ran both kinds names its decode figure
    return max(both or plans)[1]


def bench(args, model, depth, skip):
    options = ",".join(o for o in (args.options, f"profile_skip={skip}" if skip else "") if o)
    record = run_decode(args, model, depth, options, args.timeout, extra=("--log-level", "info"))
    record["skip"] = skip
    record["launches_per_step"] = decode_launches(record.get("stderr_tail", ""))
    if record["error"] is None and record["launches_per_step"] is None:
        record["error"] = "no 'launches per step' line (is the backend cuda_orin, logging at info?)"
    print(f"skip_profile: {record['model']}@{depth} {skip or '(nothing skipped)'}: "
          f"{record['error'] or '%.1f tok/s' % record['tok_s']['median']}", file=sys.stderr)
    return record


def rows_of(runs):
    """Per test: the full step, then each skip against it (None figures where a run failed)."""
    tables = {}
    for r in runs:
        tables.setdefault(f"{r['model']}@{r['depth']}", []).append(r)
    out = {}
    for test, rs in tables.items():
        base = rs[0]
        base_ms = 1000.0 / base["tok_s"]["median"] if not base["error"] else None
        rows = []
        for r in rs:
            row = {"skip": r["skip"], "error": r["error"], "launches_per_step": r.get("launches_per_step")}
            if not r["error"]:
                row["tok_s"] = r["tok_s"]["median"]
                row["step_ms"] = 1000.0 / row["tok_s"]
                # The model's bytes a token over this step's time: without all but the GEMVs,
                # the rate at which the GEMVs stream the weights in a replayed step.
                row["gb_s"] = r["bytes_per_token"] * row["tok_s"] / 1e9 if r.get("bytes_per_token") else None
            if r is not base and not r["error"] and base_ms is not None:
                row["saved_ms"] = base_ms - row["step_ms"]
                row["saved_share"] = row["saved_ms"] / base_ms
                left_out = base["launches_per_step"] - r["launches_per_step"]
                row["launches_left_out"] = left_out
                row["us_per_launch"] = 1000.0 * row["saved_ms"] / left_out if left_out > 0 else None
            rows.append(row)
        out[test] = rows
    return out


def markdown(doc):
    dev = doc["device"].get("name", "unknown device")
    lines = [f"## Launches left out of a replayed decode step, {doc['backend']} on {dev} (commit {doc['commit'] or 'unknown'})",
             "", f"Decode tg{doc['n_gen']}, median tok/s of {doc['repetitions']} repetitions"
             f"{', KV ' + doc['kv_type'] if doc.get('kv_type') else ''}"
             f"{', options ' + doc['options'] if doc['options'] else ''}; the outputs of a step with launches left "
             f"out are wrong, only its time counts. {doc['date']}.", ""]
    for test, rows in doc["tables"].items():
        lines += [f"### {test}", "", "| left out | launches a step | tok/s | ms a step | saved ms | of the step | "
                  "µs a launch | model GB/s |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in rows:
            name = r["skip"] or "(nothing: the full step)"
            if r["error"]:
                lines.append(f"| {name} | | failed: {r['error']} | | | | | |")
                continue
            per, gb_s = r.get("us_per_launch"), r.get("gb_s")
            lines.append(f"| {name} | {r['launches_per_step']:g} | {r['tok_s']:.1f} | {r['step_ms']:.4f} | "
                         + (f"{r['saved_ms']:.4f} | {100 * r['saved_share']:.1f}% | " if "saved_ms" in r else " | | ")
                         + (f"{per:.2f} | " if per is not None else " | ") + (f"{gb_s:.1f} |" if gb_s else " |"))
        lines.append("")
    return "\n".join(lines)


def main(argv):
    args = parse_args(argv)
    runs = []
    for model, depth in args.tests:
        base = bench(args, model, depth, "")
        runs.append(base)
        if base["error"]:
            continue  # nothing to compare the skips with
        runs += [bench(args, model, depth, skip) for skip in args.skips]
    doc = {"schema": SCHEMA, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "commit": args.commit or git_commit(), "command": " ".join(shlex.quote(a) for a in sys.argv),
           "device": device_info(), "backend": args.backend, "options": args.options, "kv_type": args.kv_type,
           "n_gen": args.n_gen, "repetitions": args.repetitions, "skips": args.skips, "runs": runs,
           "tables": rows_of(runs)}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    for path, text in ((args.out, json.dumps(doc, indent=1) + "\n"), (os.path.splitext(args.out)[0] + ".md", markdown(doc))):
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    print(markdown(doc))
    return 1 if any(r["error"] for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
