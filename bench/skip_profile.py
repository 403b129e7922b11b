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
from compare_llamacpp_gpu import device_info, git_commit, run_command, summary  # noqa: E402

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
    p.add_argument("--edgerun", default="build/bin/edgerun", help="the edgerun binary")
    p.add_argument("--backend", default="cuda_orin", help="a backend with option profile_skip (default: cuda_orin)")
    p.add_argument("--plugin-dir", default=None, help="also look for plugins here (edgerun --plugin-dir)")
    p.add_argument("--test", action="append", default=[], metavar="MODEL[@DEPTH]",
                   help="decode of MODEL with DEPTH tokens cached (default 0); repeatable")
    p.add_argument("--skip", action="append", default=[], metavar="ENTRY[+ENTRY...]",
                   help="launches left out together (repeatable; default: " + ", ".join(DEFAULT_SKIPS) + ")")
    p.add_argument("--options", default="", help="backend options of every run, the skips added to them")
    p.add_argument("--kv-type", default=None, help="edgerun --kv-type for every run (default: the backend's)")
    p.add_argument("--n-gen", "-n", type=int, default=64, help="decode tokens a repetition (default 64)")
    p.add_argument("--repetitions", "-r", type=int, default=3)
    p.add_argument("--timeout", type=float, default=90, help="seconds one bench run may take (default 90)")
    p.add_argument("--commit", default=None, help="the commit measured (default: git rev-parse HEAD)")
    p.add_argument("--out", required=True, help="results JSON; the table goes beside it as .md")
    args = p.parse_args(argv)
    args.skips = list(dict.fromkeys(args.skip or DEFAULT_SKIPS))
    for s in args.skips:
        if not s or any(not part for part in s.split("+")) or "," in s or "=" in s:
            p.error(f"--skip '{s}': give launch names joined by '+' (e.g. prepare+rope_append)")
    if "profile_skip=" in args.options:
        p.error("--options: profile_skip is this script's to set")
    args.tests = []
    for spec in args.test:
        model, _, depth = spec.rpartition("@") if "@" in spec else (spec, "", "0")
        if not model or not depth.isdigit():
            p.error(f"--test {spec}: give MODEL or MODEL@DEPTH (DEPTH a token count)")
        args.tests.append((model, int(depth)))
    if not args.tests:
        p.error("no test: give --test MODEL[@DEPTH]")
    if args.n_gen < 1 or args.repetitions < 1:
        p.error("--n-gen and --repetitions must be >= 1")
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
    cmd = [args.edgerun, "bench", "--backend", args.backend, "-m", model, "-p", "0", "-n", str(args.n_gen),
           "-d", str(depth), "-r", str(args.repetitions), "--json", "--log-level", "info"]
    if args.plugin_dir:
        cmd += ["--plugin-dir", args.plugin_dir]
    if args.kv_type:
        cmd += ["--kv-type", args.kv_type]
    if options:
        cmd += ["--backend-options", options]
    record, stdout = run_command(cmd, args.timeout)
    record.update(model=os.path.basename(model), depth=depth, skip=skip, options=options)
    if record["error"] is None:
        try:
            raw = json.loads(stdout.strip().splitlines()[-1])
            record["tok_s"] = summary(raw.get("tg_tok_s_samples") or [raw["tg_tok_s"]])
        except (IndexError, KeyError, TypeError, ValueError) as e:
            record["error"] = f"edgerun bench printed no decode figures ({type(e).__name__}: {e})"
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
        lines += [f"### {test}", "", "| left out | launches a step | tok/s | ms a step | saved ms | of the step | µs a launch |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for r in rows:
            name = r["skip"] or "(nothing: the full step)"
            if r["error"]:
                lines.append(f"| {name} | | failed: {r['error']} | | | | |")
                continue
            per = r.get("us_per_launch")
            lines.append(f"| {name} | {r['launches_per_step']:g} | {r['tok_s']:.1f} | {r['step_ms']:.4f} | "
                         + (f"{r['saved_ms']:.4f} | {100 * r['saved_share']:.1f}% | " if "saved_ms" in r else " | | ")
                         + (f"{per:.2f} |" if per is not None else " |"))
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
