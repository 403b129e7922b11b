#!/usr/bin/env python3
"""Speculative decoding through the real binary on the default model: greedy output equal
to plain decoding with a draft model (-md) and with prompt lookup, in generation and in
chat, and under a JSON schema with a logit bias; the summary line; a draft of another vocabulary refused in one line; a seed
reproducing its tokens; bench's speculative figures.
    test_speculative_cli.py EDGERUN MODEL WORKDIR
"""
import json
import os

from cli_harness import MODEL, WORK, check, run, run_tests

PROMPT = "List the days of the week: Monday, Tuesday, Wednesday, Thursday, Friday. Again: Monday, Tuesday,"


def generated(*extra, n=24, temp="0", seed="0"):
    out = os.path.join(WORK, "tokens.json")
    r = run("-m", MODEL, "-p", PROMPT, "-n", str(n), "--ignore-eos", "--temp", temp, "--seed", seed, "--threads", "2",
            "--tokens-out", out, *extra)
    if r.returncode != 0:
        return r, None
    return r, json.load(open(out))["generated"]


def greedy_equals_plain():
    _, plain = generated()
    check("plain decode runs", plain is not None and len(plain) == 24, plain)
    for extra in (["-md", MODEL, "--draft", "4", "--draft-fixed"], ["--model-draft", MODEL, "--draft", "8"],
                  ["--lookup", "6", "--draft-fixed"], ["--lookup", "3"]):
        r, tokens = generated(*extra)
        check(f"temperature 0 with {' '.join(a for a in extra if a != MODEL)}: the tokens of plain decoding",
              tokens == plain, (tokens, plain, r.stderr))
        if "--draft-fixed" in extra:
            check("... and the summary has a speculative line", "speculative: " in r.stderr and "acceptance" in r.stderr,
                  r.stderr)
        if extra[0] == "-md":
            check("... the model as its own draft: every draft token accepted", "acceptance 100.0%" in r.stderr, r.stderr)


def penalties_see_the_kept_tokens():
    # Penalties at temperature 0 take the sampler's distribution path (one-hot), with the
    # draft's tokens accepted for the time of a proposal and rolled back.
    penalty = ["--repeat-penalty", "1.5", "--repeat-last-n", "64"]
    _, unpenalised = generated()
    _, plain = generated(*penalty)
    check("the penalty changes this output", plain is not None and plain != unpenalised, (plain, unpenalised))
    for extra in (["-md", MODEL, "--draft", "4", "--draft-fixed"], ["--lookup", "6", "--draft-fixed"]):
        r, tokens = generated(*penalty, *extra)
        check(f"with penalties, {extra[0]}: the tokens of plain decoding", tokens == plain, (tokens, plain, r.stderr))


def under_a_schema():
    # The drafts meet the grammar and the biases: proposals it refuses are cut, verification
    # draws what the plain constrained loop draws.
    schema = json.dumps({"type": "object", "properties": {"days": {"type": "array", "items": {"type": "string"},
                                                                   "maxItems": 3}}, "required": ["days"]})
    constrained = ["--json-schema", schema, "--logit-bias", "28+2"]
    r, plain = generated(*constrained, n=40)
    check("plain decode under a JSON schema runs", plain is not None and len(plain) > 4, r.stderr)
    for extra in (["-md", MODEL, "--draft", "4", "--draft-fixed"], ["--lookup", "6", "--draft-fixed"]):
        r, tokens = generated(*constrained, *extra, n=40)
        check(f"under a schema and a bias, {extra[0]}: the tokens of plain decoding", tokens == plain,
              (tokens, plain, r.stderr))
        check("... and it drafted", "speculative: " in r.stderr, r.stderr)
        if extra[0] == "-md":
            # The model's own proposals, cut where the grammar refuses them, are its
            # constrained choices.
            check("... the model as its own draft: every draft token kept", "acceptance 100.0%" in r.stderr, r.stderr)


def seed_reproduces():
    fixed = ["--lookup", "4", "--draft-verify-cost", "0.3"]
    _, first = generated(*fixed, temp="0.9", seed="5")
    _, second = generated(*fixed, temp="0.9", seed="5")
    check("sampling: the same seed and draft settings give the same tokens", first is not None and first == second,
          (first, second))


def refusals():
    other = os.path.join(WORK, "small-vocab.gguf")
    if not os.path.exists(other):
        r = run("synth", "--preset", "smollm2-135m", "--type", "Q8_0", "--layers", "1", "--vocab", "4096", "-o", other)
        check("synth a draft with a smaller vocabulary", r.returncode == 0, r.stderr)
    r = run("-m", MODEL, "-p", "x", "-n", "4", "-md", other)
    check("a draft with another vocabulary is refused, naming the sizes",
          r.returncode != 0 and "vocabulary has 4096 tokens, the target's 49152" in r.stderr, r.stderr)
    check("... in one line with nothing on stdout", len(r.stderr.strip().splitlines()) == 1 and r.stdout == "",
          (r.stdout, r.stderr))
    r = run("-m", MODEL, "-p", "x", "-md", MODEL, "--lookup", "4")
    check("two drafters refused", r.returncode != 0 and "give one" in r.stderr, r.stderr)
    r = run("-m", MODEL, "-p", "x", "-md", MODEL, "--draft", "0")
    check("--draft 0 refused", r.returncode != 0 and "--draft must be 1 to 64" in r.stderr, r.stderr)


def chat_equals_plain():
    turns = "Name three colors.\nAnd three more?\n"
    common = ["chat", "-m", MODEL, "--temp", "0", "-n", "24", "--threads", "2"]
    plain = run(*common, input=turns)
    spec = run(*common, "--lookup", "5", input=turns)
    check("chat with --lookup: the replies of plain decoding", plain.returncode == 0 and spec.stdout == plain.stdout,
          (spec.stdout, plain.stdout, spec.stderr))
    check("... and each turn reports its acceptance", spec.stderr.count("speculative: ") == 2, spec.stderr)


def bench_figures():
    r = run("bench", "-m", MODEL, "-n", "16", "-r", "1", "--threads", "2", "--lookup", "4", "--json",
            "--text", "Repeat after me: one two three four five six seven eight nine ten.")
    check("bench with --lookup exits 0", r.returncode == 0, r.stderr)
    try:
        row = json.loads(r.stdout)
        for key in ("acceptance", "tokens_per_target_step", "accepted_per_draft_step", "plain_tok_s", "speculative_tok_s", "speedup"):
            check(f"bench reports {key}", key in row and row[key] >= 0, row)
        check("bench reports the verify cost of 2..9 tokens", len(row["verify_cost"]) == 8
              and all(c > 0 for c in row["verify_cost"]), row)
    except (ValueError, KeyError) as e:
        check("bench with a drafter prints JSON", False, f"{e}: {r.stdout}")
    r = run("bench", "-m", MODEL, "--lookup", "4")
    check("bench with a drafter needs a real prompt", r.returncode != 0 and "--text" in r.stderr, r.stderr)


run_tests(greedy_equals_plain, penalties_see_the_kept_tokens, under_a_schema, seed_reproduces, refusals, chat_equals_plain, bench_figures)
