"""edgerun serve through the official `openai` client (and raw HTTP where the client
cannot send what is tested: malformed JSON, a missing key).

    test_serve.py EDGERUN MODEL CASE PLUGIN_DIR   CASE: api | errors | batching | lifecycle | reasoning | tools

PLUGIN_DIR holds the scripted sampler (tests/fixtures/c_greedy_sampler.c with SCRIPT_ENV),
which has the model say what a case needs.

MODEL may be @fetch:REPO_ROOT (the project's real model, tests/fetched_model.py)."""
import concurrent.futures
import datetime
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import openai
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from fetched_model import model_path  # noqa: E402
from serve_server import Server  # noqa: E402

COUNTING = "1, 2, 3, 4, 5, 6, 7, 8,"  # greedy SmolLM2 counts on: a long answer without an end token


def client(server, **kw):
    return openai.OpenAI(base_url=server.url + "/v1", api_key=kw.pop("api_key", "none"), max_retries=0, timeout=120, **kw)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def metrics(server):
    status, text = server.get("/metrics")
    check(status == 200, f"/metrics status {status}")
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = s.name + ("{" + ",".join(f"{k}={v}" for k, v in sorted(s.labels.items())) + "}" if s.labels else "")
            out[key] = s.value
    return out


def wait_for(cond, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds} s: {what}")


def stream_chat(c, model, **kw):
    role, text, finish, usage = None, "", None, None
    for chunk in c.chat.completions.create(model=model, stream=True, stream_options={"include_usage": True}, **kw):
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            role = role or choice.delta.role
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    return role, text, finish, usage


def stream_completion(c, model, **kw):
    text, finish = "", None
    for chunk in c.completions.create(model=model, stream=True, **kw):
        for choice in chunk.choices:
            text += choice.text
            finish = choice.finish_reason or finish
    return text, finish


def case_api(edgerun, model):
    with Server(edgerun, model, "-t", "1", "-c", "512", "--parallel", "2") as s:
        c = client(s)
        check([m.id for m in c.models.list().data] == [s.model_id], "/v1/models lists the model")
        # llama.cpp's /tokenize and /detokenize: the CLI's tokens (checked against llama.cpp by
        # the text tests), and back to the text.
        text = "Héllo <|im_end|> wörld 🦙"
        post = lambda path, body: raw(s, "POST", path, json.dumps(body), {"Content-Type": "application/json"})
        status, data = post("/tokenize", {"content": text})
        ids = json.loads(data)["tokens"]
        check(status == 200 and ids == [int(t) for t in script(edgerun, model, text).split()], f"/tokenize: {data!r}")
        status, data = post("/tokenize", {"content": text, "with_pieces": True, "parse_special": False})
        pieces = json.loads(data)["tokens"]
        check(b"".join(p["piece"].encode() if isinstance(p["piece"], str) else bytes(p["piece"]) for p in pieces)
              == text.encode() and len(pieces) > len(ids), f"/tokenize with pieces, <|im_end|> as text: {pieces}")
        status, data = post("/detokenize", {"tokens": ids})
        check(status == 200 and json.loads(data)["content"] == text, f"/detokenize: {data!r}")
        for path, body in (("/detokenize", {"tokens": [10**9]}), ("/tokenize", {"text": "x"}), ("/tokenize", [1])):
            status, data = post(path, body)
            check(status == 400 and json.loads(data)["error"]["message"], f"{path} {body}: {status} {data!r}")
        check(raw(s, "GET", "/tokenize")[0] == 405, "GET /tokenize")
        messages = [{"role": "system", "content": "You are a helpful assistant."},
                    {"role": "user", "content": "Name three colours."}]
        for kw in ({"temperature": 0}, {"temperature": 0.9, "top_p": 0.9, "seed": 1234, "extra_body": {"top_k": 40, "min_p": 0.02},
                                        "presence_penalty": 0.5, "frequency_penalty": 0.3}):
            whole = c.chat.completions.create(model=s.model_id, messages=messages, max_tokens=40, **kw)
            text = whole.choices[0].message.content
            check(whole.choices[0].message.role == "assistant" and text, f"a chat answer: {whole}")
            check(whole.choices[0].finish_reason in ("stop", "length"), whole.choices[0].finish_reason)
            u = whole.usage
            check(u.prompt_tokens > 10 and 0 < u.completion_tokens <= 40 and u.total_tokens == u.prompt_tokens + u.completion_tokens,
                  f"usage {u}")
            role, streamed, finish, usage = stream_chat(c, s.model_id, messages=messages, max_tokens=40, **kw)
            check(role == "assistant", f"the first chunk carries the role ({role})")
            check(streamed == text, f"streamed {streamed!r} != non-streamed {text!r} ({kw})")
            check(finish == whole.choices[0].finish_reason, f"finish {finish}")
            check(usage and usage.completion_tokens == u.completion_tokens and usage.prompt_tokens == u.prompt_tokens,
                  f"stream usage {usage} vs {u}")

        whole = c.completions.create(model=s.model_id, prompt=COUNTING, max_tokens=12, temperature=0)
        check(whole.choices[0].finish_reason == "length" and whole.usage.completion_tokens == 12, f"{whole}")
        check(" 9" in whole.choices[0].text, f"greedy SmolLM2 counts on: {whole.choices[0].text!r}")
        streamed, finish = stream_completion(c, s.model_id, prompt=COUNTING, max_tokens=12, temperature=0)
        check((streamed, finish) == (whole.choices[0].text, "length"), f"streamed completion {streamed!r} {finish}")

        # A stop string ends the text right before it.
        stopped = c.completions.create(model=s.model_id, prompt=COUNTING, max_tokens=30, temperature=0, stop=[" 12"])
        check(stopped.choices[0].finish_reason == "stop", stopped.choices[0].finish_reason)
        check(stopped.choices[0].text.endswith("11,") and " 12" not in stopped.choices[0].text, stopped.choices[0].text)

        # The same conversation grown by a turn reuses the slot's cache.
        first = c.chat.completions.create(model=s.model_id, messages=messages, max_tokens=20, temperature=0)
        grown = messages + [{"role": "assistant", "content": first.choices[0].message.content},
                            {"role": "user", "content": "And three more?"}]
        second = c.chat.completions.create(model=s.model_id, messages=grown, max_tokens=20, temperature=0)
        cached = second.usage.prompt_tokens_details.cached_tokens
        check(first.usage.prompt_tokens <= cached < second.usage.prompt_tokens,
              f"cached_tokens {cached}: the first prompt ({first.usage.prompt_tokens}) is reused")
        m = metrics(s)
        check(m["edgerun_prompt_tokens_cached_total"] >= cached, "cached tokens in /metrics")
        check(m["edgerun_generated_tokens_total"] > 0 and m['edgerun_requests_total{status=200}'] >= 9, f"{m}")
        check(m["edgerun_slots"] == 2 and m["edgerun_queue_depth"] == 0, f"{m}")
        check(m["edgerun_time_to_first_token_seconds_count"] >= 9, "time to first token histogram")
        check(s.stop() == 0, "SIGTERM exits 0")


def expect_error(call, status, param=None, code=None):
    try:
        call()
    except openai.APIStatusError as e:
        check(e.status_code == status, f"status {e.status_code}, expected {status}: {e}")
        err = e.response.json()["error"]
        check(isinstance(err.get("message"), str) and err["message"] and "type" in err, f"OpenAI-style error {err}")
        if param:
            check(err.get("param") == param or param in err["message"], f"names {param}: {err}")
        if code:
            check(err.get("code") == code, f"code {code}: {err}")
        return
    raise AssertionError(f"no error, expected {status}")


def raw(server, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=30)
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data


def case_errors(edgerun, model):
    with Server(edgerun, model, "-t", "1", "-c", "256", "--parallel", "1", "--max-body", "65536") as s:
        c = client(s)
        m = s.model_id
        msgs = [{"role": "user", "content": "hi"}]
        chat = c.chat.completions.create
        for body in (b"{not json", b"[1, 2]", b'{"model": "x", "messages": ', "{\"model\": \"\xff\"}".encode("latin-1")):
            status, data = raw(s, "POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            check(status == 400 and "error" in json.loads(data), f"malformed JSON {body!r}: {status} {data!r}")
        expect_error(lambda: chat(model=m, messages=msgs, temperature="hot"), 400, "temperature")
        expect_error(lambda: chat(model=m, messages=msgs, temperature=7), 400, "temperature")
        expect_error(lambda: chat(model=m, messages="hi"), 400, "messages")
        expect_error(lambda: chat(model=m, messages=[{"role": "user", "content": 5}]), 400, "messages[0].content")
        expect_error(lambda: chat(model=m, messages=[{"role": "wizard", "content": "x"}]), 400, "messages[0].role")
        expect_error(lambda: chat(model=m, messages=[]), 400, "messages")
        expect_error(lambda: chat(model=m, messages=msgs, stop=3), 400, "stop")
        expect_error(lambda: chat(model=m, messages=msgs, seed="x"), 400, "seed")
        expect_error(lambda: chat(model=m, messages=msgs, max_tokens="10"), 400, "max_tokens")
        expect_error(lambda: chat(model=m, messages=msgs, top_p=1.5), 400, "top_p")
        expect_error(lambda: chat(model=m, messages=msgs, extra_body={"stream": "yes"}), 400, "stream")
        expect_error(lambda: chat(model=m, messages=msgs, extra_body={"top_k": -1}), 400, "top_k")
        expect_error(lambda: chat(model=m, messages=msgs, extra_body={"stream_options": 3}), 400, "stream_options")
        expect_error(lambda: c.completions.create(model=m, prompt=[1, 2, 10**9]), 400, "prompt")
        expect_error(lambda: c.completions.create(model=m, prompt={"text": "x"}), 400, "prompt")
        expect_error(lambda: chat(model="no-such-model", messages=msgs), 404, "model", "model_not_found")
        expect_error(lambda: c.completions.create(model=m, prompt="word " * 400), 400, "prompt", "context_length_exceeded")
        for bad in (0, -5, 10**9):
            expect_error(lambda: chat(model=m, messages=msgs, max_tokens=bad), 400, "max_tokens")
            expect_error(lambda: c.completions.create(model=m, prompt="x", max_tokens=bad), 400, "max_tokens")
        for field, value in (("n", 2), ("tools", [{"type": "function", "function": {"name": "f", "parameters": {}}}])):
            expect_error(lambda: chat(model=m, messages=msgs, **{field: value}), 400, field, "unsupported_parameter")
        for bias in ({"42": 500}, {"x": 1}, {"-1": 1}, {"99999999": 1}, {"42": "up"}):
            expect_error(lambda: chat(model=m, messages=msgs, logit_bias=bias), 400, "logit_bias")
        expect_error(lambda: chat(model=m, messages=msgs, response_format={"type": "xml"}), 400, "response_format.type")
        expect_error(lambda: chat(model=m, messages=msgs, logprobs=True, top_logprobs=21), 400, "top_logprobs")
        expect_error(lambda: chat(model=m, messages=msgs, top_logprobs=2), 400, "top_logprobs")
        expect_error(lambda: chat(model=m, messages=msgs, logprobs=1), 400, "logprobs")
        expect_error(lambda: c.completions.create(model=m, prompt="x", logprobs=-1), 400, "logprobs")
        expect_error(lambda: c.completions.create(model=m, prompt=["a", "b"]), 400, "prompt")
        expect_error(lambda: c.completions.create(model=m, prompt="x " * 40000), 413)
        status, data = raw(s, "GET", "/v1/nothing")
        check(status == 404 and json.loads(data)["error"]["message"], f"unknown path {status}")
        status, data = raw(s, "GET", "/v1/chat/completions")
        check(status == 405, f"GET on a POST endpoint: {status}")
        # Unknown fields are ignored, and after all that the server still answers.
        ok = chat(model=m, messages=msgs, max_tokens=5, temperature=0, extra_body={"no_such_field": {"a": 1}})
        check(ok.choices[0].message.content is not None and ok.usage.completion_tokens >= 1, f"{ok}")
        check(s.get("/health") == (200, '{"status":"ok"}'), "health")
        bad = metrics(s)
        check(bad.get("edgerun_requests_total{status=400}", 0) >= 20, f"400s counted: {bad}")
        check(s.stop() == 0, "SIGTERM exits 0")

    key = "s3cret-key"
    with Server(edgerun, model, "-t", "1", "-c", "256", "--parallel", "1", "--api-key", key) as s:
        expect_error(lambda: client(s, api_key="wrong").models.list(), 401, code="invalid_api_key")
        expect_error(lambda: client(s, api_key=key + "x").models.list(), 401)
        status, data = raw(s, "GET", "/v1/models")
        check(status == 401 and json.loads(data)["error"]["code"] == "invalid_api_key", f"no key: {status} {data!r}")
        check([x.id for x in client(s, api_key=key).models.list().data] == [s.model_id], "the right key works")
        check(s.stop() == 0, "SIGTERM exits 0")


def case_batching(edgerun, model):
    """At temperature 0, N concurrent requests give exactly the texts they give alone."""
    prompts = [COUNTING, "The capital of France is", "Once upon a time, there was a", "def fibonacci(n):",
               "Water boils at a temperature of", "My favourite fruit is"]
    with Server(edgerun, model, "-t", "1", "-c", "512", "--parallel", "4", "--chunk", "8") as s:
        c = client(s)

        def run(i):
            r = c.completions.create(model=s.model_id, prompt=prompts[i], max_tokens=24 + 4 * i, temperature=0)
            return r.choices[0].text, r.usage.completion_tokens

        alone = [run(i) for i in range(len(prompts))]
        with concurrent.futures.ThreadPoolExecutor(len(prompts)) as pool:
            together = list(pool.map(run, range(len(prompts))))
        for i, (a, t) in enumerate(zip(alone, together)):
            check(a == t, f"prompt {i}: alone {a!r}, concurrent {t!r}")
        # Chats streamed at once: each equals its own non-streamed answer.
        questions = ["What is 2+2?", "Name a planet.", "Say hello in French.", "What colour is the sky?"]
        msgs = [[{"role": "user", "content": q}] for q in questions]
        whole = [c.chat.completions.create(model=s.model_id, messages=mm, max_tokens=30, temperature=0).choices[0].message.content
                 for mm in msgs]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            streamed = list(pool.map(lambda mm: stream_chat(c, s.model_id, messages=mm, max_tokens=30, temperature=0)[1], msgs))
        check(whole == streamed, f"streamed together {streamed} != alone {whole}")
        check(s.stop() == 0, "SIGTERM exits 0")


def long_stream(c, model, max_tokens=400):
    return c.completions.create(model=model, prompt=COUNTING, max_tokens=max_tokens, temperature=0, stream=True)


def case_lifecycle(edgerun, model):
    with Server(edgerun, model, "-t", "1", "-c", "1024", "--parallel", "1", "--queue", "1",
                "--shutdown-grace-ms", "1000", "--request-timeout", "2") as s:
        c = client(s)
        # A client that stops halfway through its request is dropped after --request-timeout.
        stalled = socket.create_connection(s.url.removeprefix("http://").split(":"), timeout=15)
        stalled.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"prompt\":")
        t = time.monotonic()
        check(stalled.recv(1024) == b"", "the stalled connection is closed")
        check(1.5 < time.monotonic() - t < 10, f"closed after {time.monotonic() - t:.1f} s, --request-timeout 2")
        stalled.close()
        # A streaming client that goes away frees its slot.
        stream = long_stream(c, s.model_id)
        for _, _chunk in zip(range(3), stream):
            pass
        stream.close()
        wait_for(lambda: metrics(s)["edgerun_requests_cancelled_total"] == 1, 10, "the streamed request is cancelled")
        wait_for(lambda: metrics(s)["edgerun_slots_busy"] == 0, 10, "its slot is free")

        # So does one waiting for a whole (non-streamed) answer.
        sock = socket.create_connection(s.url.removeprefix("http://").split(":"), timeout=10)
        body = json.dumps({"model": s.model_id, "prompt": COUNTING, "max_tokens": 500, "temperature": 0}).encode()
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        wait_for(lambda: metrics(s)["edgerun_slots_busy"] == 1, 10, "the non-streamed request runs")
        sock.close()
        wait_for(lambda: metrics(s)["edgerun_requests_cancelled_total"] == 2, 10, "the non-streamed request is cancelled")
        wait_for(lambda: metrics(s)["edgerun_slots_busy"] == 0, 10, "its slot is free")

        # One slot busy, one request queued: the next gets 429, while /health still answers.
        busy = long_stream(c, s.model_id, 300)
        next(iter(busy))
        queued = concurrent.futures.ThreadPoolExecutor(1).submit(
            lambda: c.completions.create(model=s.model_id, prompt="Hello", max_tokens=3, temperature=0))
        wait_for(lambda: metrics(s)["edgerun_queue_depth"] == 1, 10, "a request waits in the queue")
        expect_error(lambda: c.completions.create(model=s.model_id, prompt="Hi", max_tokens=3), 429, code="rate_limit_exceeded")
        t = time.monotonic()
        check(s.get("/health", timeout=2) == (200, '{"status":"ok"}'), "health while every slot streams")
        check(time.monotonic() - t < 1, "health answers at once")
        busy.close()
        check(queued.result(timeout=60).usage.completion_tokens >= 1, "the queued request is served")

        # SIGTERM while a request streams: the stream ends (finished or with an error
        # event) and the server exits 0 within the grace period and a margin. Meanwhile
        # a request on a connection already open gets a 503 and the connection's close.
        keep_alive = http.client.HTTPConnection(s.url.removeprefix("http://"), timeout=10)
        keep_alive.request("GET", "/health")
        check(keep_alive.getresponse().read() == b'{"status":"ok"}', "health before SIGTERM")
        stream = long_stream(c, s.model_id, 900)
        next(iter(stream))
        t = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.2)  # the server has seen it
        keep_alive.request("GET", "/health")
        try:
            r = keep_alive.getresponse()
        except http.client.RemoteDisconnected:
            raise AssertionError("the open connection was closed at SIGTERM instead of answering 503")
        check((r.status, r.read(), r.getheader("Connection")) == (503, b'{"status":"shutting down"}', "close"),
              f"health during shutdown: {r.status} {r.getheaders()}")
        keep_alive.close()
        code = s.stop(timeout=15)
        took = time.monotonic() - t
        check(code == 0, f"SIGTERM: exit status {code}")
        check(took < 8, f"SIGTERM: exited after {took:.1f} s")
        try:
            for _ in stream:
                pass
            raise AssertionError("the stream cut at shutdown should end with an error event")
        except openai.APIError as e:
            check("shutting down" in str(e), f"the error event says why: {e}")


def stream_chat_reasoning(c, model, **kw):
    reasoning, content = "", ""
    for chunk in c.chat.completions.create(model=model, stream=True, **kw):
        for choice in chunk.choices:
            reasoning += getattr(choice.delta, "reasoning_content", None) or ""
            content += choice.delta.content or ""
    return reasoning, content


def case_reasoning(edgerun, model):
    """A thinking template's <think> block in reasoning_content, streamed or not, and the
    template's enable_thinking from chat_template_kwargs."""
    msgs = [{"role": "user", "content": "What is the capital of France?"}]
    ask = dict(messages=msgs, max_tokens=24, temperature=0)
    # DeepSeek-R1's generation prompt opens the block: SmolLM2, which never closes it, answers
    # in reasoning only.
    with Server(edgerun, model, "-t", "1", "-c", "256", "--chat-template", "deepseek-r1", "--reasoning-format", "none") as s:
        raw_answer = client(s).chat.completions.create(model=s.model_id, **ask).choices[0].message
        check(getattr(raw_answer, "reasoning_content", None) is None, f"--reasoning-format none: {raw_answer}")
    with Server(edgerun, model, "-t", "1", "-c", "256", "--chat-template", "deepseek-r1") as s:
        check("reasoning_content" in "".join(s.log), "the start line says where the reasoning goes")
        c = client(s)
        whole = c.chat.completions.create(model=s.model_id, **ask).choices[0].message
        check(whole.reasoning_content == raw_answer.content.lstrip() and whole.content == "",
              f"the answer is reasoning: {whole} (raw: {raw_answer.content!r})")
        check(stream_chat_reasoning(c, s.model_id, **ask) == (whole.reasoning_content, whole.content),
              "streamed reasoning and content add up to the whole response's")
        for kwargs, param in (("yes", "chat_template_kwargs"), ({"enable_thinking": "no"}, "enable_thinking")):
            expect_error(lambda: c.chat.completions.create(model=s.model_id, extra_body={"chat_template_kwargs": kwargs},
                                                           **ask), 400, param)
        # The completions endpoint has no template: its text is left whole.
        done = c.completions.create(model=s.model_id, prompt="<think>\nhmm</think>", max_tokens=4, temperature=0)
        check(getattr(done.choices[0], "reasoning_content", None) is None, f"{done}")
    # Qwen3's template reads enable_thinking: false writes an empty think block into the prompt.
    with Server(edgerun, model, "-t", "1", "-c", "256", "--chat-template", "qwen3") as s:
        c = client(s)
        tokens = {}
        for thinking in (None, True, False):
            extra = {} if thinking is None else {"chat_template_kwargs": {"enable_thinking": thinking}}
            r = c.chat.completions.create(model=s.model_id, extra_body=extra, **ask)
            tokens[thinking] = r.usage.prompt_tokens
            check(r.choices[0].message.content, f"enable_thinking={thinking}: a reply in content: {r}")
        check(tokens[None] == tokens[True] < tokens[False], f"prompt tokens by enable_thinking: {tokens}")
    bad = subprocess.run([edgerun, "serve", "-m", model, "--reasoning-format", "deepseek-legacy"],
                         capture_output=True, text=True, timeout=60)
    check(bad.returncode != 0 and "--reasoning-format" in bad.stderr and "listening" not in bad.stderr,
          f"a bad --reasoning-format: {bad.returncode} {bad.stderr!r}")


def case_logprobs(edgerun, model):
    """Each generated token's log-probability and its most likely alternatives: the values
    `edgerun eval` gives (log-softmax of the logits), streamed as not."""
    import numpy as np
    prompt = [int(t) for t in script(edgerun, model, "The capital of France is").split()]
    steps, n_top = 6, 5
    # Greedy continuation and every step's log-softmax, from eval's logits.
    ids, want = list(prompt), []
    tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"edgerun_logprobs_{os.getpid()}.npy")
    for _ in range(steps):
        subprocess.run([edgerun, "eval", "-m", model, "-t", "1", "--tokens", " ".join(map(str, ids)),
                        "--logits-out", tmp], check=True, capture_output=True, timeout=120)
        rows = np.load(tmp).astype(np.float64)
        if len(ids) == len(prompt):
            prompt_rows = rows  # the prompt's own positions, for echo
        row = rows[-1]
        logsoftmax = row - row.max() - np.log(np.exp(row - row.max()).sum())
        ids.append(int(np.argmax(row)))
        want.append(logsoftmax)
    os.remove(tmp)
    with Server(edgerun, model, "-t", "1", "-c", "256", "--parallel", "2") as s:
        c = client(s)
        r = c.completions.create(model=s.model_id, prompt=prompt, max_tokens=steps, temperature=0, logprobs=n_top)
        lp = r.choices[0].logprobs
        check("".join(lp.tokens) == r.choices[0].text and len(lp.tokens) == steps, f"tokens {lp.tokens} vs {r.choices[0].text!r}")
        for i in range(steps):
            top = sorted(lp.top_logprobs[i].values(), reverse=True)
            check(abs(lp.token_logprobs[i] - want[i][ids[len(prompt) + i]]) < 1e-4,
                  f"step {i}: logprob {lp.token_logprobs[i]} vs eval's {want[i][ids[len(prompt) + i]]}")
            check(np.allclose(top, np.sort(want[i])[::-1][:len(top)], atol=1e-4) and len(top) >= n_top - 1,
                  f"step {i}: top {top} vs eval's {np.sort(want[i])[::-1][:n_top]}")
        check(lp.text_offset == [sum(len(t.encode()) for t in lp.tokens[:i]) for i in range(steps)], f"{lp.text_offset}")

        # echo with max_tokens 0: the prompt scored token by token (lm-evaluation-harness's
        # loglikelihood requests); the first token has no logprob.
        r = c.completions.create(model=s.model_id, prompt=prompt, max_tokens=0, echo=True, logprobs=2, temperature=0)
        lp = r.choices[0].logprobs
        check(r.choices[0].text == "The capital of France is" == "".join(lp.tokens) and len(lp.tokens) == len(prompt),
              f"echo: {r.choices[0].text!r} {lp.tokens}")
        check(lp.token_logprobs[0] is None and lp.top_logprobs[0] is None, f"the first token: {lp}")
        for i in range(1, len(prompt)):
            row = prompt_rows[i - 1]
            logsoftmax = row - row.max() - np.log(np.exp(row - row.max()).sum())
            check(abs(lp.token_logprobs[i] - logsoftmax[prompt[i]]) < 1e-4 and
                  np.allclose(sorted(lp.top_logprobs[i].values(), reverse=True), np.sort(logsoftmax)[::-1][:2], atol=1e-4),
                  f"prompt token {i}: {lp.token_logprobs[i]} {lp.top_logprobs[i]} vs eval's {logsoftmax[prompt[i]]}")
        r = c.completions.create(model=s.model_id, prompt=prompt, max_tokens=2, echo=True, logprobs=0, temperature=0)
        streamed = "".join(ch.choices[0].text for ch in c.completions.create(
            model=s.model_id, prompt=prompt, max_tokens=2, echo=True, temperature=0, stream=True) if ch.choices)
        check(r.choices[0].text.startswith("The capital of France is") and len(r.choices[0].logprobs.tokens) == len(prompt) + 2
              and streamed == r.choices[0].text, f"echo and two tokens: {r.choices[0].text!r}, streamed {streamed!r}")
        expect_error(lambda: c.completions.create(model=s.model_id, prompt=prompt, max_tokens=0), 400, "max_tokens")

        ask = dict(model=s.model_id, messages=[{"role": "user", "content": "Name three colours."}], max_tokens=12,
                   temperature=0, logprobs=True, top_logprobs=3)
        whole = c.chat.completions.create(**ask).choices[0]
        entries = whole.logprobs.content
        check("".join(e.token for e in entries) == whole.message.content and len(entries) == 12, f"{entries}")
        for e in entries:
            check(e.logprob <= 0 and len(e.top_logprobs) == 3 and bytes(e.bytes) == e.token.encode(), f"{e}")
            check(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob >= e.top_logprobs[2].logprob and
                  abs(e.top_logprobs[0].logprob - e.logprob) < 1e-6, f"greedy takes the most likely: {e}")
        streamed = []
        for chunk in c.chat.completions.create(stream=True, **ask):
            for choice in chunk.choices:
                streamed += [(e.token, e.logprob) for e in (choice.logprobs.content if choice.logprobs else [])]
        # The same tokens; values to rounding (this request reuses the cached prompt, in other step shapes).
        check([t for t, _ in streamed] == [e.token for e in entries] and
              all(abs(v - e.logprob) < 1e-3 for (_, v), e in zip(streamed, entries)),
              f"streamed logprobs {streamed}\n whole {[(e.token, e.logprob) for e in entries]}")
        plain = c.chat.completions.create(**dict(ask, logprobs=False, top_logprobs=None)).choices[0]
        check(plain.logprobs is None, f"no logprobs unless asked: {plain.logprobs}")


def jinja_render(template_file, messages, tools=None, **variables):
    """A template rendered as transformers does (its tojson), the reference for /apply-template."""
    import jinja2.sandbox
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
    with open(os.path.join(os.path.dirname(__file__), "..", "text", "chat_templates", template_file), encoding="utf-8") as f:
        template = env.from_string(f.read())
    if tools is not None:
        variables["tools"] = tools
    return template.render(messages=messages, add_generation_prompt=True,
                           strftime_now=lambda fmt: datetime.datetime.now().strftime(fmt), **variables)


def bos_text(model):
    """The text of the model's BOS token, which templates write as bos_token (read with the gguf package)."""
    from gguf import GGUFReader
    fields = GGUFReader(model).fields
    bos = int(fields["tokenizer.ggml.bos_token_id"].parts[-1][0])
    tokens = fields["tokenizer.ggml.tokens"]
    return bytes(tokens.parts[tokens.data[bos]]).decode()


def script(edgerun, model, text):
    """The token ids of `text` (special tokens included), for the scripted sampler."""
    out = subprocess.run([edgerun, "tokenize", "-m", model, "--special", "--no-bos", text], capture_output=True,
                         text=True, check=True, timeout=60)
    return out.stdout.strip()


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather now — “quoted”, a\ttab, ünïcode, \\ and \u0001",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "maximum": 7.5},
                                                    "units": {"enum": ["C", "F"], "default": None}},
                   "required": ["city"], "additionalProperties": False}}}


def case_tools(edgerun, model, plugin_dir):
    """Function calling under Qwen3's template: the prompt with tools and earlier calls as
    the template renders it, and a (scripted) answer's <tool_call> blocks as tool_calls."""
    history = [{"role": "system", "content": "Be brief."},
               {"role": "user", "content": "Weather in Köln?"},
               {"role": "assistant", "content": "", "reasoning_content": "Call the tool.",
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "get_weather", "arguments": '{"city": "K\\u00f6ln", "days": 2}'}}]},
               {"role": "tool", "tool_call_id": "call_1", "content": "17 C"}]
    # Templates see arguments as objects (vLLM and transformers parse the API's JSON text).
    as_template_sees = [dict(h, tool_calls=[{"function": {"name": c["function"]["name"],
                                                          "arguments": json.loads(c["function"]["arguments"])}}
                                            for c in h["tool_calls"]]) if "tool_calls" in h else h for h in history]
    answer = ("<think>\nThe user wants Paris.\n</think>\n\nLet me check.\n<tool_call>\n"
              '{"name": "get_weather", "arguments": {"city": "Paris", "days": 1}}\n</tool_call>\n'
              '<tool_call>\n{"name": "now", "arguments": "{\\"tz\\": \\"UTC\\"}"}\n</tool_call><|im_end|>')
    os.environ["EDGERUN_SCRIPT"] = script(edgerun, model, answer)
    # Calls written freely (--tool-grammar off): what the reply parser makes of any answer,
    # a call of a function not given and arguments as a string included (the lazy grammar,
    # test_serve_grammar.py, would hold them to the tools' schemas).
    with Server(edgerun, model, "-t", "1", "-c", "512", "--chat-template", "qwen3", "--sampler-plugin", "scripted_sampler",
                "--tool-grammar", "off", plugin_dir=plugin_dir) as s:
        for tools, tool_choice in (([WEATHER], None), ([WEATHER], "none"), (None, None)):
            body = {"messages": history}
            if tools:
                body["tools"] = tools
            if tool_choice:
                body["tool_choice"] = tool_choice
            status, data = raw(s, "POST", "/apply-template", json.dumps(body), {"Content-Type": "application/json"})
            want = jinja_render("qwen3.jinja", as_template_sees, tools if tool_choice != "none" else None)
            check(status == 200 and json.loads(data)["prompt"] == want,
                  f"/apply-template with tools={bool(tools)} tool_choice={tool_choice}: {status}\n{data.decode()}\nwant\n{want}")
        c = client(s)
        ask = dict(model=s.model_id, messages=[{"role": "user", "content": "Weather in Paris, and the time?"}],
                   tools=[WEATHER], max_tokens=200)
        r = c.chat.completions.create(**ask)
        msg = r.choices[0].message
        check(r.choices[0].finish_reason == "tool_calls", f"finish_reason {r.choices[0].finish_reason}")
        check(msg.reasoning_content == "The user wants Paris." and msg.content == "Let me check.", f"{msg}")
        calls = [(t.function.name, json.loads(t.function.arguments)) for t in msg.tool_calls]
        check(calls == [("get_weather", {"city": "Paris", "days": 1}), ("now", {"tz": "UTC"})], f"tool calls {calls}")
        check(all(t.type == "function" and t.id.startswith("call_") for t in msg.tool_calls) and
              msg.tool_calls[0].id != msg.tool_calls[1].id, f"call ids {msg.tool_calls}")
        reasoning, content, streamed_calls, finish = "", "", [], None
        for chunk in c.chat.completions.create(stream=True, **ask):
            for choice in chunk.choices:
                reasoning += getattr(choice.delta, "reasoning_content", None) or ""
                content += choice.delta.content or ""
                streamed_calls += [(t.index, t.function.name, json.loads(t.function.arguments))
                                   for t in choice.delta.tool_calls or []]
                finish = choice.finish_reason or finish
        check((reasoning, content, finish) == (msg.reasoning_content, msg.content, "tool_calls"),
              f"streamed: {reasoning!r} {content!r} {finish}")
        check(streamed_calls == [(i, n, a) for i, (n, a) in enumerate(calls)], f"streamed calls {streamed_calls}")
        for bad, param in (({"tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice"),
                           ({"tools": [{"type": "code"}]}, "tools[0]"),
                           ({"tools": {"a": 1}}, "tools"),
                           ({"messages": [{"role": "assistant", "content": "", "tool_calls": [
                               {"type": "function", "function": {"name": "f", "arguments": "{not json"}}]}]},
                            "arguments")):
            expect_error(lambda: c.chat.completions.create(**dict(ask, **bad)), 400, param)
    # Llama 3.2's template (given as a file): tools in the first user message, a reply that is
    # one JSON object a call.
    llama = os.path.join(os.path.dirname(__file__), "..", "text", "chat_templates", "llama-3.2-instruct.jinja")
    os.environ["EDGERUN_SCRIPT"] = script(edgerun, model, '{"name": "get_weather", "parameters": {"city": "Paris"}}<|im_end|>')
    with Server(edgerun, model, "-t", "1", "-c", "512", "--chat-template-file", llama, "--sampler-plugin",
                "scripted_sampler", plugin_dir=plugin_dir) as s:
        body = {"messages": history[1:], "tools": [WEATHER]}  # one call per message: Llama's limit
        status, data = raw(s, "POST", "/apply-template", json.dumps(body), {"Content-Type": "application/json"})
        want = jinja_render("llama-3.2-instruct.jinja", as_template_sees[1:], [WEATHER], bos_token=bos_text(model))
        check(status == 200 and json.loads(data)["prompt"] == want, f"/apply-template, Llama 3.2: {data.decode()}\nwant\n{want}")
        c = client(s)
        r = c.chat.completions.create(model=s.model_id, messages=[{"role": "user", "content": "Weather in Paris?"}],
                                      tools=[WEATHER], max_tokens=100)
        calls = [(t.function.name, json.loads(t.function.arguments)) for t in r.choices[0].message.tool_calls or []]
        check(calls == [("get_weather", {"city": "Paris"})] and r.choices[0].message.content is None and
              r.choices[0].finish_reason == "tool_calls", f"Llama's call: {r}")
    # What is not a call stays text: a broken block is content, and the answer ends with "stop".
    broken = "Sure.\n<tool_call>\n{\"name\": get_weather}\n</tool_call><|im_end|>"
    os.environ["EDGERUN_SCRIPT"] = script(edgerun, model, broken)
    with Server(edgerun, model, "-t", "1", "-c", "512", "--chat-template", "qwen3", "--sampler-plugin", "scripted_sampler",
                "--tool-grammar", "off", plugin_dir=plugin_dir) as s:
        r = client(s).chat.completions.create(model=s.model_id, messages=[{"role": "user", "content": "x"}],
                                              tools=[WEATHER], max_tokens=100)
        check(r.choices[0].message.content == broken.removesuffix("<|im_end|>") and not r.choices[0].message.tool_calls
              and r.choices[0].finish_reason == "stop", f"a broken call: {r}")


CASES = {"api": case_api, "errors": case_errors, "batching": case_batching, "lifecycle": case_lifecycle,
         "reasoning": case_reasoning, "tools": case_tools, "logprobs": case_logprobs}

if __name__ == "__main__":
    edgerun, model_arg, case = sys.argv[1:4]
    CASES[case](edgerun, model_path(model_arg), *([sys.argv[4]] if case == "tools" else []))
    print(f"serve {case}: ok")
