"""Speculative decoding in edgerun serve (--lookup N, -md DRAFT), through the official
`openai` client on the real SmolLM2: greedy answers, their logprobs and streams equal to a
server that does not draft, also under a JSON schema and with two requests at once; the
drafts counted in /metrics and in each response's `timings` (llama.cpp's field); a seed reproducing a sampled answer; bad drafter options
refused in one line.

    test_serve_speculative.py EDGERUN MODEL

MODEL may be @fetch:REPO_ROOT (the project's real model, tests/fetched_model.py)."""
import concurrent.futures
import json
import os
import subprocess
import sys

import openai

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from fetched_model import model_path  # noqa: E402
from serve_server import Server  # noqa: E402
from test_serve import check, client, metrics  # noqa: E402

# Answers that repeat the prompt: prompt lookup finds drafts in them.
ASKS = ["Repeat exactly: the quick brown fox jumps over the lazy dog. the quick brown fox jumps over the lazy dog.",
        "Copy this list: red, green, blue, yellow, red, green, blue, yellow."]
SCHEMA = {"type": "object", "properties": {"colors": {"type": "array", "items": {"type": "string"}, "maxItems": 4}},
          "required": ["colors"]}


def answers(s):
    """Each ask's greedy answer with its logprobs, whole and streamed, one at a time, then
    both at once; a JSON-schema answer."""
    c = client(s)
    out = {}
    for i, ask in enumerate(ASKS):
        kw = dict(model=s.model_id, messages=[{"role": "user", "content": ask}], temperature=0, max_tokens=48)
        r = c.chat.completions.create(logprobs=True, top_logprobs=2, **kw)
        out[f"whole {i}"] = r.choices[0].message.content
        out[f"logprobs {i}"] = [(t.token, round(t.logprob, 4), [(u.token, round(u.logprob, 4)) for u in t.top_logprobs])
                                for t in r.choices[0].logprobs.content]
        out[f"finish {i}"] = r.choices[0].finish_reason
        out[f"streamed {i}"] = "".join(chunk.choices[0].delta.content or ""
                                       for chunk in c.chat.completions.create(stream=True, **kw) if chunk.choices)
        schema_kw = dict(kw, messages=[{"role": "user", "content": ask + " Answer as JSON."}],
                         response_format={"type": "json_schema", "json_schema": {"name": "colors", "schema": SCHEMA}})
        out[f"schema {i}"] = c.chat.completions.create(**schema_kw).choices[0].message.content
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        both = pool.map(lambda ask: c.chat.completions.create(
            model=s.model_id, messages=[{"role": "user", "content": ask}], temperature=0, max_tokens=48), ASKS)
        for i, r in enumerate(both):
            out[f"together {i}"] = r.choices[0].message.content
    return out


def check_timings(s, drafting):
    """llama.cpp's `timings`, whole and on a stream's last chunk: the tokens of `usage`, the
    drafts of this request when the server drafts (their sum is /metrics' growth)."""
    c = client(s)
    kw = dict(model=s.model_id, messages=[{"role": "user", "content": ASKS[0]}], temperature=0, max_tokens=24)
    before = metrics(s).get("edgerun_draft_tokens_total", 0)
    r = c.chat.completions.create(**kw)
    t, u = r.model_extra["timings"], r.usage
    check(t["prompt_n"] == u.prompt_tokens - u.prompt_tokens_details.cached_tokens and
          t["predicted_n"] == u.completion_tokens and t["prompt_ms"] > 0 and t["predicted_ms"] > 0 and
          abs(t["predicted_per_second"] - 1e3 * t["predicted_n"] / t["predicted_ms"]) < 1e-6, f"timings {t} for {u}")
    if drafting:
        check(0 <= t["draft_n_accepted"] <= t["draft_n"] and
              t["draft_n"] == metrics(s)["edgerun_draft_tokens_total"] - before, f"the request's drafts: {t}")
    else:
        check("draft_n" not in t, f"no drafts without a drafter: {t}")
    last = [chunk for chunk in c.chat.completions.create(stream=True, **kw) if chunk.choices][-1]
    streamed = (last.model_extra or {}).get("timings", {})
    check(last.choices[0].finish_reason and streamed.get("predicted_n") == t["predicted_n"],
          f"the stream's last chunk has the timings: {last}")


def per_request(s, plain):
    """llama.cpp's speculative.n_max: 0 turns drafting off for the request, a smaller one
    bounds it; the answer stays the plain one. Out of range: 400."""
    c = client(s)
    kw = dict(model=s.model_id, messages=[{"role": "user", "content": ASKS[0]}], temperature=0, max_tokens=48)
    off = c.chat.completions.create(**kw, extra_body={"speculative.n_max": 0})
    check(off.choices[0].message.content == plain["whole 0"] and "draft_n" not in off.model_extra["timings"],
          f"speculative.n_max 0: no drafts: {off.model_extra['timings']}")
    full = c.chat.completions.create(**kw).model_extra["timings"]
    two = c.chat.completions.create(**kw, extra_body={"speculative.n_max": 2})
    t = two.model_extra["timings"]
    # Each step yields its accepted drafts and one token more: at most 2 drafted per step,
    # fewer in all than the server's 6 draft.
    steps = t["predicted_n"] - t["draft_n_accepted"]
    check(two.choices[0].message.content == plain["whole 0"] and 0 < t["draft_n"] <= 2 * steps and
          t["draft_n"] < full["draft_n"], f"n_max 2: {t}; the server's: {full}")
    try:
        c.chat.completions.create(**kw, extra_body={"speculative.n_max": 65})
        check(False, "speculative.n_max 65 is refused")
    except openai.BadRequestError as e:
        check("speculative.n_max" in str(e), f"the refusal names the field: {e}")


def sampled(s, seed):
    r = client(s).chat.completions.create(model=s.model_id, messages=[{"role": "user", "content": ASKS[1]}],
                                          temperature=0.8, seed=seed, max_tokens=32)
    return r.choices[0].message.content


def main(edgerun, model):
    common = ["-t", "1", "-c", "512", "--parallel", "2"]
    with Server(edgerun, model, *common) as s:
        plain = answers(s)
        check_timings(s, drafting=False)
    for name, extra in (("lookup", ["--lookup", "6", "--draft-fixed"]),
                        ("adaptive lookup", ["--lookup", "4", "--draft-verify-cost", "0.3"]),
                        ("draft model", ["-md", model, "--draft", "3", "--draft-fixed"])):
        with Server(edgerun, model, *common, *extra) as s:
            check(any("draft: " in line and "for each slot" in line for line in s.log), f"{name}: the start line: {s.log}")
            got = answers(s)
            for key in plain:
                check(got[key] == plain[key], f"{name}, {key}: {got[key]!r} != plain {plain[key]!r}")
            json.loads(got["schema 0"])
            check_timings(s, drafting=True)
            m = metrics(s)
            drafted, accepted = m["edgerun_draft_tokens_total"], m["edgerun_draft_tokens_accepted_total"]
            check(drafted > 0 and 0 < accepted <= drafted, f"{name}: drafts counted: {accepted} of {drafted}")
            if name == "draft model":  # the model as its own draft: its proposals are its choices
                check(accepted == drafted, f"{name}: every draft token kept: {accepted} of {drafted}")
            if name == "lookup":
                check(sampled(s, 7) == sampled(s, 7), f"{name}: a seed reproduces its sampled answer")
                per_request(s, plain)
        print(f"{name}: the answers of a server that does not draft; {int(accepted)} of {int(drafted)} drafted kept")

    other = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"serve-spec-vocab-{os.getpid()}.gguf")
    try:
        r = subprocess.run([edgerun, "synth", "--preset", "smollm2-135m", "--type", "Q8_0", "--layers", "1", "--vocab",
                            "4096", "-o", other], capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, r.stderr)
        for extra, says in ((["-md", other], "vocabulary has 4096 tokens"), (["-md", model, "--lookup", "3"], "give one"),
                            (["--lookup", "-2"], "--lookup must be >= 0")):
            r = subprocess.run([edgerun, "serve", "-m", model, "--port", "0", *extra], capture_output=True, text=True,
                               timeout=120)
            check(r.returncode != 0 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1,
                  f"serve {' '.join(extra)}: one line naming the problem: {r.stderr!r}")
    finally:
        if os.path.exists(other):
            os.remove(other)
    print("serve speculative: ok")


if __name__ == "__main__":
    main(sys.argv[1], model_path(sys.argv[2]))
