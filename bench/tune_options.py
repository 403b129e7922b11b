#!/usr/bin/env python3
"""Which backend options make decode fastest on this GPU, and still pass conformance.

The options that a device session puts beside llama.cpp (compare_llamacpp_gpu.py
--backend-options) are chosen here, on the GPU, in the session's one call, rather than
from an earlier session's figures on another machine start:

1. the defaults, then every candidate option set alone, on every test (`MODEL[@DEPTH]`:
   `edgerun bench -p 0 -n N`, decode with DEPTH tokens cached), then the defaults again;
   the defaults' samples of both runs are pooled, and their drift is reported;
2. a set's score: the geometric mean over the tests of its median tok/s over the
   defaults' median;
3. from the best set, each other set that gained at least --min-gain alone is added to it
   if the union gains --min-gain more (sets giving one option two values are not joined;
   a union the backend refuses simply fails its run);
4. the conformance command (--conformance, given `--candidate-options SET`) runs on the
   best-scoring sets in turn, then on the defaults, until one passes: that is the choice.

Every step stays inside --deadline, with --reserve seconds of it kept for step 4. It
writes --out (JSON: every run with its samples, the scores, the conformance runs, the
choice) and a table beside it (.md), --chosen FILE (the options, empty for the defaults)
and prints the choice last. Exit status: 0 when the choice passed conformance (or none
was asked for), 1 when nothing did or the defaults could not be measured, 2 for wrong
arguments.
"""

import argparse
import datetime
import json
import math
import os
import shlex
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_llamacpp_gpu import device_info, git_commit, run_command  # noqa: E402
from decode_bench import add_decode_arguments, parse_tests, run_decode  # noqa: E402

SCHEMA = "edgerun-option-tuning/1"
DEFAULTS = ""


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_decode_arguments(p, "the backend whose options are tuned (default: cuda_orin)")
    p.add_argument("--candidate", action="append", default=[], metavar="KEY=VALUE[,...]",
                   help="an option set to try (repeatable; order: most promising first)")
    p.add_argument("--candidates-file", default=None,
                   help="option sets one a line ('#' starts a comment), before any --candidate")
    p.add_argument("--min-gain", type=float, default=0.02,
                   help="a set (or an addition to one) must be this much faster to count (default 0.02: 2%%)")
    p.add_argument("--conformance", default=None, metavar="COMMAND",
                   help="the correctness check, e.g. 'edgerun-conformance run --candidate cuda_orin --require-full'; "
                        "--candidate-options SET is appended")
    p.add_argument("--conformance-timeout", type=float, default=150,
                   help="seconds one conformance run may take (default 150)")
    p.add_argument("--deadline", type=float, default=300, help="seconds for everything (default 300)")
    p.add_argument("--reserve", type=float, default=150, help="seconds of the deadline kept for conformance (default 150)")
    p.add_argument("--out", required=True, help="results JSON; the table goes beside it as .md")
    p.add_argument("--chosen", default=None, help="also write the chosen options (one line, empty: the defaults) here")
    args = p.parse_args(argv)
    candidates = []
    if args.candidates_file:
        try:
            with open(args.candidates_file) as f:
                candidates = [line.split("#", 1)[0].strip() for line in f]
        except OSError as e:
            p.error(f"--candidates-file: {e.strerror}: {args.candidates_file}")
    candidates = [c for c in candidates + args.candidate if c]
    for c in candidates:
        if parse_options(c) is None:
            p.error(f"candidate '{c}': give key=value pairs separated by commas")
    args.candidates = list(dict.fromkeys(candidates))  # the first of each duplicate
    parse_tests(p, args)
    if args.deadline <= 0 or args.reserve < 0 or args.min_gain < 0:
        p.error("--deadline must be > 0, --reserve and --min-gain >= 0")
    return args


# --- option sets -------------------------------------------------------------------------

def parse_options(text):
    """'a=1,b=2' as {'a': '1', 'b': '2'} in order; None if a part is not key=value."""
    options = {}
    for part in (s.strip() for s in text.split(",") if s.strip()):
        key, eq, value = part.partition("=")
        if not eq or not key.strip() or not value.strip():
            return None
        options[key.strip()] = value.strip()
    return options


def join_options(a, b):
    """The union of two option sets as a string, or None where they give one key two values."""
    x, y = parse_options(a), parse_options(b)
    if any(k in x and x[k] != v for k, v in y.items()):
        return None
    return ",".join(f"{k}={v}" for k, v in {**x, **y}.items())


# --- measuring -----------------------------------------------------------------------------

class Tuner:
    def __init__(self, args):
        self.args = args
        self.start = time.monotonic()
        self.runs = []  # every bench run, in order
        self.slowest_set = 0.0  # seconds the slowest set took over all tests

    def left(self):
        return self.args.deadline - (time.monotonic() - self.start)

    def bench(self, options, model, depth):
        record = run_decode(self.args, model, depth, options, min(self.args.timeout, max(self.left(), 1)))
        self.runs.append(record)
        return record

    def measure(self, options, step):
        """Runs every test with `options`; False when the deadline left no time to start."""
        if self.left() - self.args.reserve < self.slowest_set and self.runs:
            return False
        began = time.monotonic()
        for model, depth in self.args.tests:
            rec = self.bench(options, model, depth)
            rec["step"] = step
            if rec["error"]:
                break  # a set that fails one test has no score; the rest would cost time for nothing
        self.slowest_set = max(self.slowest_set, time.monotonic() - began)
        figure = "failed" if rec["error"] else f"{self.score(options):.3f}" if options != DEFAULTS else "measured"
        print(f"tune: {options or '(defaults)'}: {figure} at {time.monotonic() - self.start:.0f} s", file=sys.stderr)
        return True

    def samples(self, options, test):
        """Every sample of `options` on `test` from the runs that went well (the defaults run
        twice: one failing run of them leaves the other's), or None if none did."""
        runs = [r for r in self.runs if r["options"] == options and (r["model"], r["depth"]) == test and not r["error"]]
        return [s for r in runs for s in r["tok_s"]["samples"]] or None

    def medians(self, options):
        tests = [(os.path.basename(m), d) for m, d in self.args.tests]
        ms = [self.samples(options, t) for t in tests]
        return None if any(m is None for m in ms) else [statistics.median(m) for m in ms]

    def score(self, options):
        """Geometric mean over the tests of the median tok/s over the defaults'; None if unmeasured."""
        mine, base = self.medians(options), self.medians(DEFAULTS)
        if mine is None or base is None:
            return None
        return math.exp(statistics.fmean(math.log(m / b) for m, b in zip(mine, base)))


def baseline_drift(tuner):
    """The second run of the defaults over the first, per test (the machine's own drift)."""
    drift = {}
    for model, depth in tuner.args.tests:
        key = (os.path.basename(model), depth)
        runs = [r for r in tuner.runs if r["options"] == DEFAULTS and (r["model"], r["depth"]) == key and not r["error"]]
        if len(runs) >= 2:
            drift[f"{key[0]}@{key[1]}"] = runs[-1]["tok_s"]["median"] / runs[0]["tok_s"]["median"]
    return drift


def conformance(args, options, timeout):
    cmd = shlex.split(args.conformance) + (["--candidate-options", options] if options else [])
    record, stdout = run_command(cmd, timeout)
    record.update(options=options, passed=record["error"] is None)
    record["stdout_tail"] = "\n".join(stdout.strip().splitlines()[-6:])
    return record


def tune(args):
    t = Tuner(args)
    doc = {"schema": SCHEMA, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "commit": args.commit or git_commit(), "command": " ".join(shlex.quote(a) for a in sys.argv),
           "device": device_info(), "backend": args.backend, "kv_type": args.kv_type, "n_gen": args.n_gen,
           "repetitions": args.repetitions, "min_gain": args.min_gain,
           "tests": [f"{os.path.basename(m)}@{d}" for m, d in args.tests], "candidates": args.candidates}
    t.measure(DEFAULTS, "defaults")
    if t.medians(DEFAULTS) is None:
        failed = next(r for r in t.runs if r["error"])
        doc.update(runs=t.runs, sets=[], conformance=[], chosen=None,
                   error=f"the defaults failed on {failed['model']}@{failed['depth']}: {failed['error']}")
        return doc, 1

    for options in args.candidates:
        if not t.measure(options, "alone"):
            break
    t.measure(DEFAULTS, "defaults again")  # the drift; skipped, like any set, when no time is left

    gain = 1 + args.min_gain
    gainers = sorted((o for o in args.candidates if (t.score(o) or 0) >= gain), key=t.score, reverse=True)
    kept = gainers[:1]  # each set the greedy kept, the best last
    for other in gainers[1:]:
        union = join_options(kept[-1], other)
        if union is None or union == kept[-1] or t.score(union) is not None:
            continue
        if not t.measure(union, "joined"):
            break
        if (t.score(union) or 0) >= t.score(kept[-1]) * gain:
            kept.append(union)
    best = kept[-1] if kept else DEFAULTS

    measured = dict.fromkeys(r["options"] for r in t.runs)
    sets = [{"options": o, "step": next(r["step"] for r in t.runs if r["options"] == o), "score": t.score(o),
             "medians": t.medians(o)} for o in measured]
    # Conformance's order: the greedy's sets from the last kept back, then the other gainers.
    ranked = list(dict.fromkeys(kept[::-1] + gainers))
    checks, chosen, status = [], None, 1
    if not args.conformance:
        chosen, status = best, 0
    else:
        for options in ranked + [DEFAULTS]:
            if t.left() < 10:
                break
            checks.append(conformance(args, options, min(t.left(), args.conformance_timeout)))
            print(f"tune: conformance with {options or '(defaults)'}: {'passed' if checks[-1]['passed'] else checks[-1]['error']}",
                  file=sys.stderr)
            if checks[-1]["passed"]:
                chosen, status = options, 0
                break
    doc.update(runs=t.runs, sets=sets, drift_of_defaults=baseline_drift(t), greedy_best=best, conformance=checks,
               chosen=chosen, seconds=round(time.monotonic() - t.start, 1))
    return doc, status


# --- the table -------------------------------------------------------------------------------

def markdown(doc):
    dev = doc["device"].get("name", "unknown device")
    lines = [f"## {doc['backend']} options on {dev} (commit {doc['commit'] or 'unknown'})", "",
             f"Decode tg{doc['n_gen']}, median tok/s of {doc['repetitions']} repetitions"
             f"{', KV ' + doc['kv_type'] if doc.get('kv_type') else ''}; score: the geometric mean of the ratios to the "
             f"defaults (a set counts from {1 + doc['min_gain']:.2f}). {doc['date']}.", ""]
    if doc.get("error"):
        return "\n".join(lines + [f"**Not tuned:** {doc['error']}", ""])
    lines += ["| options | step | " + " | ".join(doc["tests"]) + " | score | conformance |",
              "|---|---|" + "---:|" * len(doc["tests"]) + "---:|---|"]
    verdicts = {c["options"]: "passed" if c["passed"] else "FAILED" for c in doc["conformance"]}
    for s in doc["sets"]:
        cells = [f"{m:.1f}" for m in s["medians"]] if s["medians"] else ["failed"] * len(doc["tests"])
        score = "—" if s["score"] is None else f"{s['score']:.3f}"
        lines.append(f"| {s['options'] or '(defaults)'} | {s['step']} | " + " | ".join(cells) +
                     f" | {score} | {verdicts.get(s['options'], '')} |")
    chosen = doc["chosen"]
    drift = ", ".join(f"{k} {v:.3f}" for k, v in doc.get("drift_of_defaults", {}).items()) or "not measured"
    lines += ["", f"Chosen: {'none passed conformance' if chosen is None else chosen or '(the defaults)'}. "
              f"The defaults' second run over their first: {drift}.", ""]
    return "\n".join(lines)


def write_atomically(path, text):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def main(argv):
    args = parse_args(argv)
    doc, status = tune(args)
    write_atomically(args.out, json.dumps(doc, indent=1) + "\n")
    write_atomically(os.path.splitext(args.out)[0] + ".md", markdown(doc))
    if args.chosen:
        write_atomically(args.chosen, (doc["chosen"] or "") + "\n")
    if doc.get("error"):
        print(f"tune: {doc['error']}", file=sys.stderr)
    chosen = doc["chosen"]
    print("chosen: " + ("(none passed conformance; the defaults)" if chosen is None else chosen or "(the defaults)"))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
