#!/usr/bin/env python3
"""The generation commands through the real binary on the default model: what goes to
stdout, errors before work, Ctrl-C, chat KV reuse, eval and bench output.
    test_generation_cli.py EDGERUN MODEL WORKDIR
"""
import json
import os
import signal
import subprocess
import time

import numpy as np

from cli_harness import EDGERUN, MODEL, WORK, check, run, run_tests


def generation_to_stdout_only():
    tokens_out = os.path.join(WORK, "tokens.json")
    r = run("-m", MODEL, "-p", "The capital of France is", "-n", "12", "--temp", "0", "--threads", "2",
            "--tokens-out", tokens_out)
    check("generation exits 0", r.returncode == 0, r.stderr)
    ids = json.load(open(tokens_out))
    check("12 tokens generated", len(ids["generated"]) == 12, ids)
    check("stdout holds only the generated text", "prompt:" not in r.stdout and "tok/s" not in r.stdout, r.stdout)
    check("summary on stderr", "prompt: " in r.stderr and "generate: 12 tokens" in r.stderr and "peak RSS" in r.stderr,
          r.stderr)
    again = run("-m", MODEL, "-p", "The capital of France is", "-n", "12", "--temp", "0", "--threads", "1")
    check("greedy output is the same for another thread count", again.stdout == r.stdout, (again.stdout, r.stdout))
    r = run("-m", MODEL, "-p", "The capital of France is", "-n", "0", "--threads", "2", "--tokens-out", tokens_out)
    ids = json.load(open(tokens_out))
    check("-n 0 runs the prompt and generates nothing", r.returncode == 0 and ids["generated"] == [] and r.stdout == "",
          (r.stdout, ids))
    seeded = [run("-m", MODEL, "-p", "Once upon a time", "-n", "16", "--temp", "0.9", "--seed", "7", "--threads", "2")
              for _ in range(2)]
    check("the same seed gives the same text", seeded[0].stdout == seeded[1].stdout and seeded[0].stdout != "")


def errors_before_work():
    r = run("-m", MODEL, "-p", "hello " * 40, "-c", "32", "-n", "8")
    check("prompt longer than the context is refused", r.returncode != 0 and "exceed the context" in r.stderr,
          r.stderr)
    check("... with nothing on stdout", r.stdout == "", r.stdout)
    check("... in one line", len(r.stderr.strip().splitlines()) == 1, r.stderr)
    r = run("-m", os.path.join(WORK, "missing.gguf"), "-p", "x")
    check("missing model file named", r.returncode != 0 and "missing.gguf: no such file" in r.stderr, r.stderr)
    r = run("-m", MODEL, "-p", "x", "--kv-type", "q4")
    check("bad --kv-type named", r.returncode == 2 and "--kv-type: 'q4'" in r.stderr, r.stderr)
    r = run("-m", MODEL, "-p", "x", "--threads", "100000")
    check("a thread count past the limit is refused by name, not aborted",
          r.returncode == 2 and "--threads 100000" in r.stderr and "at most" in r.stderr
          and len(r.stderr.strip().splitlines()) == 1, r.stderr)
    r = run("-m", MODEL, "-p", "x", "--bogus-flag")
    check("unknown flag refused", r.returncode == 2 and "bogus-flag" in r.stderr, r.stderr)
    r = run("-m", MODEL, "-p", "x", "--backend", "nope")
    check("unknown backend named", r.returncode != 0 and "no backend plugin named 'nope'" in r.stderr, r.stderr)
    corrupt = os.path.join(WORK, "corrupt.gguf")
    with open(MODEL, "rb") as src, open(corrupt, "wb") as dst:
        dst.write(src.read(1 << 20))  # the header claims far more than this
    r = run("-m", corrupt, "-p", "x")
    check("truncated model refused in one line", r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1,
          r.stderr)


def common_options_before_the_command():
    config = os.path.join(WORK, "bad.toml")
    with open(config, "w") as f:
        f.write("threads = 2\nbogus = 1\n")
    r = run("--config", config, "plugins")
    check("--config before the command is read", r.returncode == 2 and "bad.toml:2: unknown key 'bogus'" in r.stderr,
          r.stderr)
    r = run("--log-level=error", "plugins")
    check("--log-level= before the command", r.returncode == 0 and "cpu_ref" in r.stdout, r.stderr)
    r = run("-m", MODEL, "-p", "plugins", "-n", "2", "--temp", "0", "--threads", "2")
    check("a prompt that is a command's name is still a prompt", r.returncode == 0 and "generate: 2 tokens" in r.stderr,
          r.stderr)


def ctrl_c_stops_cleanly():
    p = subprocess.Popen([EDGERUN, "-m", MODEL, "-p", "Tell me a long story.", "-n", "2000", "--ignore-eos",
                          "--threads", "2", "-c", "2048"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    check("Ctrl-C ends generation with the summary", "stopped: cancelled" in err and "generate:" in err, err)
    check("Ctrl-C exit status 130", p.returncode == 130, p.returncode)


def chat_reuses_cache():
    r = run("chat", "-m", MODEL, "--temp", "0", "-n", "24", "--threads", "2",
            input="What is the capital of France?\nAnd of Germany?\n")
    check("chat exits 0", r.returncode == 0, r.stderr)
    turns = [line for line in r.stderr.splitlines() if line.startswith("[turn")]
    check("two turns", len(turns) == 2, r.stderr)
    if len(turns) == 2:
        reused = int(turns[1].split("(")[1].split()[0])
        check("turn 2 reuses the cache", reused > 20, turns[1])
    check("replies on stdout", "Paris" in r.stdout, r.stdout)


def eval_writes_npy():
    out = os.path.join(WORK, "logits.npy")
    r = run("eval", "-m", MODEL, "--tokens", "504 3458 282 4649 314", "--logits-out", out, "--threads", "2")
    check("eval exits 0", r.returncode == 0, r.stderr)
    logits = np.load(out)
    check("eval shape [5, 49152] float32", logits.shape == (5, 49152) and logits.dtype == np.float32, logits.shape)
    bad = os.path.join(WORK, "bad.npy")
    r = run("eval", "-m", MODEL, "--tokens", "1 99999999", "--logits-out", bad)
    check("eval refuses an id outside the vocabulary", r.returncode != 0 and "outside the vocabulary" in r.stderr)
    check("... and leaves no file", not os.path.exists(bad))


def bench_json():
    r = run("bench", "-m", MODEL, "-p", "32", "-n", "8", "-r", "1", "--json", "--threads", "2")
    check("bench exits 0", r.returncode == 0, r.stderr)
    try:
        report = json.loads(r.stdout)
        check("bench reports rates", report["pp_tok_s"] > 0 and report["tg_tok_s"] > 0 and
              report["bytes_per_token"] > 90e6, report)
    except (ValueError, KeyError) as e:
        check("bench prints JSON", False, f"{e}: {r.stdout}")
        return
    # -d: the same tests with tokens already in the cache (llama-bench's -d); every
    # repetition's figure is listed, and decoding over the deeper cache reads more bytes.
    r = run("bench", "-m", MODEL, "-p", "8", "-n", "4", "-d", "64", "-r", "2", "--json", "--threads", "2")
    check("bench -d exits 0", r.returncode == 0, r.stderr)
    try:
        deep = json.loads(r.stdout)
        check("bench -d reports its depth", deep["n_depth"] == 64, deep)
        check("bench lists each repetition", len(deep["pp_tok_s_samples"]) == 2 and len(deep["tg_tok_s_samples"]) == 2
              and len(deep["ttft_ms_samples"]) == 2 and min(deep["tg_tok_s_samples"]) > 0, deep)
        check("a deeper cache is more bytes per token", deep["bytes_per_token"] > report["bytes_per_token"],
              (deep["bytes_per_token"], report["bytes_per_token"]))
    except (ValueError, KeyError) as e:
        check("bench -d prints JSON", False, f"{e}: {r.stdout}")
    r = run("bench", "-m", MODEL, "-p", "8", "-n", "4", "-d", "100000", "--ctx-size", "512")
    check("bench refuses a depth beyond the context", r.returncode != 0 and "exceed the context" in r.stderr, r.stderr)


def bench_sequences():
    r = run("bench", "-m", MODEL, "-n", "4", "-r", "1", "--json", "--threads", "2", "--sequences", "1,3")
    check("bench --sequences exits 0", r.returncode == 0, r.stderr)
    try:
        rows = json.loads(r.stdout)["batch"]
        check("bench --sequences reports each count", [row["sequences"] for row in rows] == [1, 3], rows)
        check("... cpu_ref steps the three sequences together", rows[1]["batched"] is True, rows)
        check("... with positive rates", all(row["tok_s"] > 0 for row in rows), rows)
    except (ValueError, KeyError, IndexError) as e:
        check("bench --sequences prints JSON", False, f"{e}: {r.stdout}")
    r = run("bench", "-m", MODEL, "-n", "4", "--sequences", "2,zero")
    check("bench refuses a bad --sequences", r.returncode == 2 and "--sequences: 'zero'" in r.stderr, r.stderr)


run_tests(generation_to_stdout_only, errors_before_work, common_options_before_the_command, ctrl_c_stops_cleanly,
          chat_reuses_cache, eval_writes_npy, bench_json, bench_sequences)
