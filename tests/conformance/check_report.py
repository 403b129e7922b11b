#!/usr/bin/env python3
"""Runs edgerun-conformance and checks what its report says.

  check_report.py [--expect-exit N] [--failing-ops A,B] [--failing-label TEXT]
                  [--model-divergence | --models-pass] [--diverges-on TEXT] [--failing-models TEXT]
                  [--missing TEXT] [--passing-models N]
                  -- edgerun-conformance run ... (a --json FILE is added)

--failing-ops: the ops whose cases fail must be exactly these (the report points at the op).
--model-divergence: some model comparison fails and names a position: the first
  teacher-forced disagreement or the first greedy divergence, with both tokens.
--models-pass: no model comparison fails (the fault shows at the ops level only).
--diverges-on TEXT: a model whose file name contains TEXT fails teacher-forced (a named
  first disagreement, or non-finite logits) and its greedy run names its first divergent
  token (repeatable).
--failing-models TEXT: every failing model comparison is of a model whose name contains TEXT.
--long-failing-ops A,B: the long level's failing op cases are exactly of these ops, and each
  names its first failing step ("none": no op case may fail; CMake drops an empty argument).
--long-first-step TEXT: some failing long op case's first failing step contains TEXT.
--long-fails RUN: a long-level run named RUN (decode, chunks, rewind) fails and names its
  first failing position (repeatable).
--long-passes RUN: every long-level run named RUN passes (repeatable).
--failing-batch: some batch comparison (sequences stepped together against each alone)
  fails and says how; without it, none may fail.
--output-matches REGEX: the run's output (stdout and stderr) matches REGEX (repeatable).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def margin(value):
    return "nan" if value is None else f"{value:.3f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--expect-exit", type=int, default=0)
    ap.add_argument("--failing-ops", default="", help="comma separated; empty: no op may fail")
    ap.add_argument("--failing-label", default="")
    ap.add_argument("--model-divergence", action="store_true")
    ap.add_argument("--models-pass", action="store_true")
    ap.add_argument("--diverges-on", action="append", default=[])
    ap.add_argument("--failing-models", default="")
    ap.add_argument("--failing-batch", action="store_true")
    ap.add_argument("--missing", action="append", default=[])
    ap.add_argument("--long-failing-ops", default=None)
    ap.add_argument("--long-first-step", default="")
    ap.add_argument("--long-fails", action="append", default=[])
    ap.add_argument("--long-passes", action="append", default=[])
    ap.add_argument("--passing-models", type=int, default=0)
    ap.add_argument("--fetch-model", help="scripts/fetch-model.sh: add the real SmolLM2 when it can be fetched")
    ap.add_argument("--require-model", action="store_true", help="exit 77 (skip) when it cannot")
    ap.add_argument("--output-matches", action="append", default=[])
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = [c for c in args.command if c != "--"]
    if args.fetch_model:
        fetched = subprocess.run([args.fetch_model], stdout=subprocess.PIPE, text=True)
        if fetched.returncode == 0 and fetched.stdout.strip():
            command += ["-m", fetched.stdout.strip()]
        elif args.require_model:
            print("check_report: the real model cannot be fetched; skipping", file=sys.stderr)
            return 77
        else:
            print("check_report: the real model cannot be fetched; running without it", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        report_path = os.path.join(tmp, "report.json")
        proc = subprocess.run(command + ["--json", report_path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(proc.stdout)
        problems = []
        if proc.returncode != args.expect_exit:
            problems.append(f"exit status {proc.returncode}, expected {args.expect_exit}")
        if not os.path.exists(report_path):
            problems.append("no JSON report written")
            report = {}
        else:
            with open(report_path) as f:
                report = json.load(f)
        for pattern in args.output_matches:
            if not re.search(pattern, proc.stdout):
                problems.append(f"the output does not match '{pattern}'")

    ops = report.get("ops", {})
    failing = sorted({c["op"] for c in ops.get("cases", []) if c["status"] != "pass"})
    if report.get("ops") is not None:
        want = sorted(o for o in args.failing_ops.split(",") if o)
        if failing != want:
            problems.append(f"failing ops {failing}, expected {want}")
    if args.failing_label:
        labels = [c["case"] for c in ops.get("cases", []) if c["status"] != "pass"]
        if not labels or not all(args.failing_label in label for label in labels):
            problems.append(f"not every failing case names '{args.failing_label}': {labels}")
    for text in args.missing:
        if not any(text in m for m in ops.get("missing", [])):
            problems.append(f"missing coverage does not list '{text}'")

    comparisons = report.get("models", {}).get("comparisons", [])
    failed = [c for c in comparisons if c["status"] in ("FAIL", "error")]
    if args.model_divergence:
        named = []
        for c in failed:
            teacher = c.get("teacher_forced", {})
            greedy = c.get("greedy", {}).get("first_divergence")
            if greedy:
                named.append(f"{c['model']}: greedy token {greedy['position']}: candidate {greedy['candidate_token']} "
                             f"(margin {margin(greedy['candidate_margin'])}), reference {greedy['reference_token']} "
                             f"(margin {margin(greedy['reference_margin'])})")
            elif teacher.get("first_disagreement", -1) >= 0:
                named.append(f"{c['model']}: teacher-forced position {teacher['first_disagreement']}")
        if not named:
            problems.append("no model comparison names a divergent token")
        else:
            print("first divergences:\n  " + "\n  ".join(named))
    for text in args.diverges_on:
        named = []
        for c in failed:
            teacher = c.get("teacher_forced", {})
            greedy = c.get("greedy", {}).get("first_divergence")
            teacher_fails = teacher.get("first_disagreement", -1) >= 0 or not teacher.get("finite", True)
            if text in c["model"] and teacher_fails and greedy and not greedy.get("near_tie", False):
                named.append(f"{c['model']} ({c['candidate']}): teacher-forced first disagreement at position "
                             f"{teacher.get('first_disagreement')}; greedy first divergence at generated token "
                             f"{greedy['position']}: candidate {greedy['candidate_token']}, reference {greedy['reference_token']}")
        if named:
            print("divergences on '" + text + "':\n  " + "\n  ".join(named))
        else:
            problems.append(f"no comparison of a model named '{text}' fails teacher-forced and names a greedy divergence")
    if args.failing_models:
        others = sorted({c["model"] for c in failed if args.failing_models not in c["model"]})
        if others:
            problems.append(f"models other than '{args.failing_models}' fail: {others}")
    if args.models_pass and failed:
        problems.append(f"{len(failed)} model comparisons fail; expected the models level to pass")
    long = report.get("long", {})
    long_cases = [c for c in long.get("ops", {}).get("cases", []) if c["status"] != "pass"]
    if args.long_failing_ops is not None:
        got = sorted({c["op"] for c in long_cases})
        want = sorted(o for o in args.long_failing_ops.split(",") if o and o != "none")
        if got != want:
            problems.append(f"long level: failing ops {got}, expected {want}")
        for c in long_cases:
            if not c.get("first_failing_step"):
                problems.append(f"long level: {c['case']} fails without naming its first failing step")
            else:
                print(f"long level: {c['case']}: first failing step {c['first_failing_step']}")
    if args.long_first_step and not any(args.long_first_step in c.get("first_failing_step", "") for c in long_cases):
        problems.append(f"long level: no failing op case's first failing step names '{args.long_first_step}'")
    long_runs = long.get("comparisons", [])
    for run in args.long_fails:
        named = [c for c in long_runs if c.get("run") == run and c["status"] == "FAIL" and c.get("first_failing_position", -1) >= 0]
        if not named:
            problems.append(f"long level: no '{run}' run fails naming its first failing position")
        for c in named:
            print(f"long level: {c['model']} {c['candidate']} {run}: first failing position "
                  f"{c['first_failing_position']} ({c['first_failing_step']})")
    for run in args.long_passes:
        runs = [c for c in long_runs if c.get("run") == run]
        if not runs or any(c["status"] != "pass" for c in runs):
            problems.append(f"long level: the '{run}' runs do not all pass: {[c['status'] for c in runs]}")
    batch = report.get("batch", {}).get("comparisons", [])
    batch_failed = [c for c in batch if c["status"] in ("FAIL", "error")]
    if args.failing_batch:
        named = [f"{c['model']} ({c['candidate']}): {c['problems'][0]}" for c in batch_failed if c["problems"]]
        if not named:
            problems.append("no batch comparison fails")
        else:
            print("batch failures:\n  " + "\n  ".join(named))
    elif batch_failed:
        problems.append(f"{len(batch_failed)} batch comparisons fail: {[c['model'] for c in batch_failed]}")
    passing = sum(c["status"] == "pass" for c in comparisons)
    if passing < args.passing_models:
        problems.append(f"{passing} model comparisons pass, expected at least {args.passing_models}")

    for p in problems:
        print("check_report: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
