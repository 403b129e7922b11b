"""Speculative decoding in edgerun serve: the same greedy chat requests to a server that
does not draft and to servers with prompt lookup and with a draft model, one request at a
time; completion tokens per second of wall time (best of --repeat), the answers compared
(they must be equal), and the drafted and accepted tokens from /metrics. Free text and
the same task held to a JSON schema (where the draft must propose the grammar's tokens).

    bench/speculative/serve.py EDGERUN [-m MODEL] [--draft DRAFT] [-t THREADS] [--repeat 3]
"""
import argparse
import os
import subprocess
import sys
import time

import openai

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "tests", "serve"))
from serve_server import Server  # noqa: E402

SCHEMA = {"type": "object", "properties": {"sentences": {"type": "array", "items": {"type": "string"}, "maxItems": 4}},
          "required": ["sentences"]}


def metric(server, name):
    _, text = server.get("/metrics")
    return next((float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " ")), 0.0)


def measure(server, text, constrained, max_tokens, repeat):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=600)
    kw = dict(model=server.model_id, messages=[{"role": "user", "content": text}], temperature=0, max_tokens=max_tokens)
    if constrained:
        kw["response_format"] = {"type": "json_schema", "json_schema": {"name": "sentences", "schema": SCHEMA}}
    best, answer = 0.0, None
    for _ in range(repeat):
        start = time.monotonic()
        r = client.chat.completions.create(**kw)
        rate = r.usage.completion_tokens / (time.monotonic() - start)
        best, answer = max(best, rate), r.choices[0].message.content
    return best, answer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("edgerun")
    ap.add_argument("-m", "--model")
    ap.add_argument("--draft", help="a draft model (default: none; give e.g. a Q4_0 of the target)")
    ap.add_argument("-t", "--threads", default="2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("-n", "--max-tokens", type=int, default=96)
    args = ap.parse_args()
    model = args.model or subprocess.run([os.path.join(here, "..", "..", "scripts", "fetch-model.sh")],
                                         capture_output=True, text=True, check=True).stdout.strip()
    text = open(os.path.join(here, "extraction.txt")).read()
    servers = [("plain", []), ("lookup, up to 8", ["--lookup", "8"])]
    if args.draft:
        servers.append(("draft model, up to 4", ["-md", args.draft, "--draft", "4"]))
        servers.append(("draft model, fixed 4", ["-md", args.draft, "--draft", "4", "--draft-fixed"]))
    plain = {}
    print("| request | server | tok/s | vs plain | drafted | accepted |")
    print("|---|---|---|---|---|---|")
    for name, extra in servers:
        with Server(args.edgerun, model, "-t", args.threads, "-c", "2048", "--parallel", "1", *extra) as s:
            for constrained in (False, True):
                kind = "JSON schema" if constrained else "free text"
                drafted0, accepted0 = metric(s, "edgerun_draft_tokens_total"), metric(s, "edgerun_draft_tokens_accepted_total")
                rate, answer = measure(s, text, constrained, args.max_tokens, args.repeat)
                drafted = metric(s, "edgerun_draft_tokens_total") - drafted0
                accepted = metric(s, "edgerun_draft_tokens_accepted_total") - accepted0
                if name == "plain":
                    plain[kind] = (rate, answer)
                elif answer != plain[kind][1]:
                    sys.exit(f"{name}, {kind}: the answer differs from the plain server's")
                print(f"| {kind} | {name} | {rate:.1f} | {rate / plain[kind][0]:.2f}x | {int(drafted)} | {int(accepted)} |")


if __name__ == "__main__":
    main()
