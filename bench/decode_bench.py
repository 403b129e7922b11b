"""Decode runs of `edgerun bench` for the scripts that compare backend options on a GPU
(tune_options.py, skip_profile.py): their shared arguments, their MODEL[@DEPTH] tests, and
one run's command and figures."""

import json
import os

from compare_llamacpp_gpu import run_command, summary


def add_decode_arguments(p, backend_help):
    """The arguments every decode run takes: the binary, the backend, the tests, the KV type,
    tokens and repetitions, a run's timeout, the commit measured."""
    p.add_argument("--edgerun", default="build/bin/edgerun", help="the edgerun binary")
    p.add_argument("--backend", default="cuda_orin", help=backend_help)
    p.add_argument("--plugin-dir", default=None, help="also look for plugins here (edgerun --plugin-dir)")
    p.add_argument("--test", action="append", default=[], metavar="MODEL[@DEPTH]",
                   help="decode of MODEL with DEPTH tokens cached (default 0); repeatable")
    p.add_argument("--kv-type", default=None, help="edgerun --kv-type for every run (default: the backend's)")
    p.add_argument("--n-gen", "-n", type=int, default=64, help="decode tokens a repetition (default 64)")
    p.add_argument("--repetitions", "-r", type=int, default=3)
    p.add_argument("--timeout", type=float, default=90, help="seconds one bench run may take (default 90)")
    p.add_argument("--commit", default=None, help="the commit measured (default: git rev-parse HEAD)")


def parse_tests(p, args):
    """args.tests: (model, depth) of each --test; the parser's error for a malformed one,
    for none, or for fewer than one token or repetition."""
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


def run_decode(args, model, depth, options, timeout, extra=()):
    """`edgerun bench -p 0 -n N -d DEPTH -r R --json` of MODEL with backend OPTIONS (and
    `extra` arguments): run_command's record with model, depth and options, and tok_s (the
    decode samples' summary), device and bytes_per_token where it went well."""
    cmd = [args.edgerun, "bench", "--backend", args.backend, "-m", model, "-p", "0", "-n", str(args.n_gen),
           "-d", str(depth), "-r", str(args.repetitions), "--json", *extra]
    if args.plugin_dir:
        cmd += ["--plugin-dir", args.plugin_dir]
    if args.kv_type:
        cmd += ["--kv-type", args.kv_type]
    if options:
        cmd += ["--backend-options", options]
    record, stdout = run_command(cmd, timeout)
    record.update(options=options, model=os.path.basename(model), depth=depth)
    if record["error"] is None:
        try:
            raw = json.loads(stdout.strip().splitlines()[-1])
            record["tok_s"] = summary(raw.get("tg_tok_s_samples") or [raw["tg_tok_s"]])
            record["device"] = raw.get("device")
            record["bytes_per_token"] = raw.get("bytes_per_token")  # the model's: weights and the cache read
        except (IndexError, KeyError, TypeError, ValueError) as e:
            record["error"] = f"edgerun bench printed no decode figures ({type(e).__name__}: {e})"
            record["stdout_tail"] = stdout[-2000:]
    return record
