"""Load test of an OpenAI-compatible server on loopback: edgerun serve, and llama.cpp's
llama-server side by side with the same model and the same load.

    bench/serve_load.py --edgerun build/bin/edgerun [--llama-server PATH] [-m MODEL]

For 1, 2, 4 and 8 concurrent clients, a fixed number of streamed completions (temperature
0, prompts that greedy decoding continues for the whole budget): P50/P95 time to first
token and time per output token, aggregate output tokens/s, errors and incomplete
responses. Then the p99 gap between tokens of 3 streaming clients while a ~2,000-token
prompt arrives. Bounded: every request has a timeout and each level a fixed count."""
import argparse
import concurrent.futures
import os
import statistics
import sys
import threading
import time

import openai

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "serve"))
from serve_server import Server  # noqa: E402


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def prompt(i):
    k = 10 + 37 * i  # a different prompt per request: no request is served from another's cache
    return "Count: " + ", ".join(str(k + j) for j in range(8)) + ","


def stream_one(client, model, text, max_tokens, gaps=None):
    """(ttft, [token times], completion tokens, finish reason) of one streamed completion."""
    start = time.monotonic()
    times, finish, usage_tokens = [], None, None
    for chunk in client.completions.create(model=model, prompt=text, max_tokens=max_tokens, temperature=0,
                                           stream=True, stream_options={"include_usage": True}):
        now = time.monotonic()
        if chunk.usage:
            usage_tokens = chunk.usage.completion_tokens
        for c in chunk.choices:
            if c.text:
                times.append(now)
                if gaps is not None:
                    gaps.append(now)
            finish = c.finish_reason or finish
    n = usage_tokens if usage_tokens is not None else len(times)
    return (times[0] - start if times else None), times, n, finish


def run_level(client, model, clients, requests, max_tokens):
    results, errors = [], []
    lock = threading.Lock()
    counter = iter(range(requests))

    def worker():
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            try:
                r = stream_one(client, model, prompt(i), max_tokens)
                with lock:
                    results.append(r)
            except Exception as e:  # counted, reported
                with lock:
                    errors.append(repr(e))

    start = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    ttft = [r[0] for r in results if r[0] is not None]
    tpot = [(r[1][-1] - r[1][0]) / (len(r[1]) - 1) for r in results if len(r[1]) > 1]
    tokens = sum(r[2] for r in results)
    incomplete = sum(1 for r in results if r[3] not in ("length", "stop") or (r[3] == "length" and r[2] != max_tokens))
    return {"clients": clients, "requests": requests, "errors": len(errors), "incomplete": incomplete,
            "ttft_p50": percentile(ttft, 50), "ttft_p95": percentile(ttft, 95),
            "tpot_p50": percentile(tpot, 50), "tpot_p95": percentile(tpot, 95),
            "tok_s": tokens / wall, "wall": wall, "error_samples": errors[:3]}


def long_prompt_gaps(client, model, max_tokens):
    """p99 gap between tokens of 3 streaming clients while a ~2,000-token prompt arrives."""
    long_text = "The quick brown fox jumps over the lazy dog near the river bank. " * 160
    stamps = [[] for _ in range(3)]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        streams = [pool.submit(stream_one, client, model, prompt(100 + i), max_tokens, stamps[i]) for i in range(3)]
        time.sleep(1.0)  # the three are decoding
        sent = time.monotonic()
        long = pool.submit(lambda: client.completions.create(model=model, prompt=long_text, max_tokens=4, temperature=0))
        r = long.result()
        done = time.monotonic()
        for s in streams:
            s.result()
    gaps = []
    for st in stamps:
        gaps += [b - a for a, b in zip(st, st[1:]) if b >= sent and a <= done]
    return {"prompt_tokens": r.usage.prompt_tokens, "long_seconds": done - sent, "gap_p99": percentile(gaps, 99),
            "gap_max": max(gaps) if gaps else float("nan"), "gaps": len(gaps)}


def bench(name, server, args):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=300)
    model = client.models.list().data[0].id
    stream_one(client, model, prompt(999), 8)  # warm-up
    levels = [run_level(client, model, c, max(args.requests, c), args.max_tokens) for c in args.clients]
    gaps = long_prompt_gaps(client, model, args.max_tokens * 2)
    return name, levels, gaps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edgerun", required=True)
    ap.add_argument("--llama-server", help="llama-server binary (scripts/llamacpp-server.sh)")
    ap.add_argument("-m", "--model", default=os.path.expanduser("~/.cache/edgerun/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--clients", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4, 8])
    ap.add_argument("--requests", type=int, default=8, help="requests per level (at least the clients)")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--threads", default="2")
    ap.add_argument("--parallel", default="4")
    ap.add_argument("--chunk", default="64", help="edgerun serve --chunk: most rows of one step")
    ap.add_argument("--ctx", type=int, default=4096, help="context per slot")
    args = ap.parse_args()

    runs = []
    with Server(args.edgerun, args.model, "-t", args.threads, "--parallel", args.parallel, "-c", str(args.ctx),
                "--queue", "64", "--chunk", args.chunk) as s:
        runs.append(bench("edgerun serve", s, args))
    if args.llama_server:
        # llama-server divides -c among its slots: the same per-slot context is -c ctx * np.
        cmd = [args.llama_server, "-m", args.model, "--host", "127.0.0.1", "--port", "0", "-np", args.parallel,
               "-t", args.threads, "-c", str(args.ctx * int(args.parallel))]
        with LlamaServer(cmd) as s:
            runs.append(bench("llama-server", s, args))

    print(f"\n{args.max_tokens} output tokens per request, temperature 0, streamed; -t {args.threads}, "
          f"{args.parallel} slots of {args.ctx} tokens; edgerun --chunk {args.chunk}\n")
    print("| server | clients | requests | TTFT P50 / P95 (ms) | TPOT P50 / P95 (ms) | aggregate tok/s | errors | incomplete |")
    print("|---|---|---|---|---|---|---|---|")
    for name, levels, _ in runs:
        for r in levels:
            print(f"| {name} | {r['clients']} | {r['requests']} | {r['ttft_p50']*1e3:.0f} / {r['ttft_p95']*1e3:.0f} | "
                  f"{r['tpot_p50']*1e3:.1f} / {r['tpot_p95']*1e3:.1f} | {r['tok_s']:.1f} | {r['errors']} | {r['incomplete']} |")
    print("\n| server | long prompt (tokens) | its time (s) | p99 / max gap of 3 streams meanwhile (ms) |")
    print("|---|---|---|---|")
    for name, _, g in runs:
        print(f"| {name} | {g['prompt_tokens']} | {g['long_seconds']:.2f} | {g['gap_p99']*1e3:.0f} / {g['gap_max']*1e3:.0f} |")
    for name, levels, _ in runs:
        one = next((r for r in levels if r["clients"] == 1), None)
        four = next((r for r in levels if r["clients"] == 4), None)
        if one and four:
            print(f"\n{name}: 4 clients / 1 client aggregate tok/s = {four['tok_s'] / one['tok_s']:.2f}x")
        for r in levels:
            if r["error_samples"]:
                print(f"{name} errors at {r['clients']} clients: {r['error_samples']}")
    bad = sum(r["errors"] + r["incomplete"] for _, levels, _ in runs for r in levels)
    sys.exit(1 if bad else 0)


class LlamaServer(Server):
    """llama-server prints no port when given 0: pick a free one and retry if taken."""

    def __init__(self, cmd):
        import socket
        import subprocess
        import urllib.request
        for _ in range(5):
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            full = [x if x != "0" or cmd[i - 1] != "--port" else str(port) for i, x in enumerate(cmd)]
            self.proc = subprocess.Popen(full, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                        if r.status == 200:
                            return
                except Exception:
                    time.sleep(0.2)
            self.stop()
        raise RuntimeError("llama-server did not start")


if __name__ == "__main__":
    main()
