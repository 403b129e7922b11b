"""edgerun serve's HTTP layer, mostly over raw sockets (what the openai client never
sends: HTTP/1.0, Expect: 100-continue, malformed requests, idle connections).

    test_serve_http.py EDGERUN MODEL CASE PLUGIN_DIR   CASE: protocol | connections | sampler | cors

MODEL may be @fetch:REPO_ROOT; PLUGIN_DIR holds refusing_sampler (tests/fixtures/c_greedy_sampler.c built with MAX_TOP_K, tests/serve/CMakeLists.txt)."""
import http.client
import json
import os
import socket
import subprocess
import sys
import time

import openai

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from fetched_model import model_path  # noqa: E402
from serve_server import Server  # noqa: E402
from test_serve import COUNTING, check, client, expect_error, metrics, stream_chat, wait_for  # noqa: E402

KEY = "s3cret-key"


def address(server):
    host, port = server.url.removeprefix("http://").split(":")
    return host, int(port)


def connect(server, timeout=30):
    return socket.create_connection(address(server), timeout=timeout)


def read_all(sock):
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def parse_response(data):
    """(status, headers with lower-case names, body) of one whole HTTP response."""
    head, sep, body = data.partition(b"\r\n\r\n")
    check(sep and head.startswith(b"HTTP/1."), f"an HTTP response: {data[:300]!r}")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body


def exchange(server, raw_request):
    """Sends raw bytes, reads until the server closes: (status, headers, body)."""
    with connect(server) as sock:
        sock.sendall(raw_request)
        return parse_response(read_all(sock))


def request(server, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection(*address(server), timeout=30)
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def error_of(status, headers, body, expected_status, code):
    check(status == expected_status, f"status {status}, expected {expected_status}: {body[:300]!r}")
    check(headers.get("content-type") == "application/json", f"JSON error: {headers}")
    err = json.loads(body)["error"]
    check(err["code"] == code and err["message"] and err["type"], f"code {code}: {err}")
    return err


def post_bytes(path, body, extra=b""):
    return (b"POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n%s\r\n" % (path.encode(), KEY.encode(), len(body), extra))


def case_protocol(edgerun, model):
    with Server(edgerun, model, "-t", "1", "-c", "256", "--parallel", "1", "--max-body", "65536", "--api-key", KEY) as s:
        c = client(s, api_key=KEY)
        counts = {}  # status: responses expected to have been counted

        def expect(status, got):
            check(got == status, f"status {got}, expected {status}")
            counts[status] = counts.get(status, 0) + 1

        # The Authorization scheme is case-insensitive.
        for value in ("bearer " + KEY, "BEARER " + KEY, "Bearer  " + KEY):
            status, _, body = request(s, "GET", "/v1/models", headers={"Authorization": value})
            check(status == 200 and json.loads(body)["data"][0]["id"] == s.model_id, f"'{value}': {status} {body!r}")
        for value in ("Basic " + KEY, "bearer" + KEY, "bearer wrong"):
            status, headers, body = request(s, "GET", "/v1/models", headers={"Authorization": value})
            error_of(status, headers, body, 401, "invalid_api_key")
            expect(401, status)

        # GET /v1/models/{id}, as the openai client's models.retrieve asks it.
        m = c.models.retrieve(s.model_id)
        check((m.id, m.object, m.owned_by) == (s.model_id, "model", "edgerun"), f"{m}")
        status, _, body = request(s, "GET", "/v1/models/" + s.model_id.replace(".", "%2E"), headers={"Authorization": "Bearer " + KEY})
        check(status == 200 and json.loads(body)["id"] == s.model_id, f"a percent-encoded id: {status} {body!r}")
        expect_error(lambda: c.models.retrieve("no-such-model"), 404, "model", "model_not_found")
        expect(404, 404)

        # 405 says what is allowed.
        auth = {"Authorization": "Bearer " + KEY}
        for method, path, allowed in (("GET", "/v1/chat/completions", "POST"), ("GET", "/v1/completions", "POST"),
                                      ("POST", "/health", "GET"), ("PUT", "/metrics", "GET"),
                                      ("DELETE", "/v1/models", "GET"), ("POST", "/v1/models/" + s.model_id, "GET")):
            status, headers, body = request(s, method, path, b"{}" if method != "GET" else None, auth)
            error_of(status, headers, body, 405, "method_not_allowed")
            check(headers.get("allow") == allowed, f"{method} {path}: Allow {headers.get('allow')!r}, expected {allowed}")
            expect(405, status)

        # Malformed HTTP gets a 400 (431: a header too large) with the JSON error, then a close.
        for raw_request in (b"GARBAGE\r\n\r\n",
                            b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}",
                            b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"):
            status, headers, body = exchange(s, raw_request)
            error_of(status, headers, body, 400, "bad_request")
            check(headers.get("connection") == "close", f"{raw_request[:40]!r}: the connection closes: {headers}")
            expect(400, status)
        status, headers, body = exchange(s, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n")
        error_of(status, headers, body, 431, "header_too_large")
        expect(431, status)

        # Expect: 100-continue over the body limit: the 413 at once, no 100.
        with connect(s) as sock:
            sock.sendall(post_bytes("/v1/completions", b"x" * 100000, b"Expect: 100-continue\r\n"))
            status, headers, body = parse_response(read_all(sock))
            error_of(status, headers, body, 413, "body_too_large")
            expect(413, status)

        # Generation from here on: all of it inside the tokens/s window.
        generated_before = metrics(s)["edgerun_generated_tokens_total"]
        check(generated_before == 0, f"nothing generated yet: {generated_before}")

        # A stream to an HTTP/1.0 client: no chunked encoding, the body ends with the connection.
        ask = {"model": s.model_id, "prompt": COUNTING, "max_tokens": 8, "temperature": 0}
        body = json.dumps({**ask, "stream": True}).encode()
        status, headers, stream_body = exchange(s, post_bytes("/v1/completions", body).replace(b"HTTP/1.1", b"HTTP/1.0", 1)
                                                + body)
        check(status == 200 and headers.get("content-type") == "text/event-stream", f"{status} {headers}")
        check("transfer-encoding" not in headers and "content-length" not in headers, f"HTTP/1.0 stream headers: {headers}")
        events = stream_body.decode().split("\n\n")
        check(events[-2:] == ["data: [DONE]", ""], f"the stream ends with [DONE]: {stream_body[-80:]!r}")
        check(all(e.startswith("data: {") for e in events[:-2]), f"only events in the body: {stream_body[:200]!r}")
        streamed = "".join(json.loads(e[6:])["choices"][0]["text"] for e in events[:-2])
        whole = c.completions.create(**ask)
        check(streamed == whole.choices[0].text and whole.usage.completion_tokens == 8,
              f"HTTP/1.0 stream {streamed!r} vs {whole.choices[0].text!r}")

        # Expect: 100-continue: the 100 comes before the body is sent (curl waits 1 s for it).
        body = json.dumps({**ask, "max_tokens": 4}).encode()
        with connect(s) as sock:
            sock.sendall(post_bytes("/v1/completions", body, b"Expect: 100-continue\r\nConnection: close\r\n"))
            sock.settimeout(0.9)
            try:
                interim = sock.recv(1024)
            except socket.timeout:
                raise AssertionError("no 100 Continue within 0.9 s")
            check(interim == b"HTTP/1.1 100 Continue\r\n\r\n", f"100 Continue: {interim!r}")
            sock.settimeout(30)
            sock.sendall(body)
            status, headers, answer = parse_response(read_all(sock))
            check(status == 200 and json.loads(answer)["usage"]["completion_tokens"] == 4, f"{status} {answer!r}")

        # tokens/s: the tokens of the last 10 s over 10 s, so 0 once the server idles.
        # (The scheduler counts a request's last token as it ends it, perhaps just after the
        # answer went out: the count is waited for. The window may have lost the first
        # tokens on a slow machine, so the rate is at most the count over 10 s.)
        wait_for(lambda: metrics(s)["edgerun_generated_tokens_total"] == 8 + 8 + 4, 5, "20 tokens generated, counted")
        rate = metrics(s)["edgerun_tokens_per_second"]
        check(0 < rate <= 20 / 10, f"tokens/s {rate}, expected over 0 and at most {20 / 10}")

        # top_p 0 (or a double that is 0 as a float) keeps the most likely token: greedy.
        msgs = [{"role": "user", "content": "Name three colours."}]
        greedy = c.chat.completions.create(model=s.model_id, messages=msgs, max_tokens=16, temperature=0).choices[0].message.content
        for top_p in (0, 1e-50):
            for seed in (1, 2):
                r = c.chat.completions.create(model=s.model_id, messages=msgs, max_tokens=16, temperature=1.5, top_p=top_p, seed=seed)
                check(r.choices[0].message.content == greedy, f"top_p {top_p}: {r.choices[0].message.content!r} != {greedy!r}")
            streamed = stream_chat(c, s.model_id, messages=msgs, max_tokens=16, temperature=1.5, top_p=top_p, seed=3)[1]
            check(streamed == greedy, f"streamed top_p {top_p}: {streamed!r} != {greedy!r}")
        last_generation = time.monotonic()

        # Every response is counted by its status.
        m = metrics(s)
        for status, n in counts.items():
            if status != 200:
                got = m.get(f"edgerun_requests_total{{status={status}}}", 0)
                check(got == n, f"edgerun_requests_total{{status={status}}} is {got}, expected {n}")
        check(m["edgerun_requests_total{status=200}"] >= 12, f"{m}")

        time.sleep(max(0.0, last_generation + 10.5 - time.monotonic()))
        check(metrics(s)["edgerun_tokens_per_second"] == 0, "tokens/s falls to 0 after 10 s idle")
        check(s.stop() == 0, "SIGTERM exits 0")


def held_connections(server, n):
    """n connections each halfway through a request: they hold their threads. A connection
    the server still counts from an earlier request (its thread ending) may get one of them
    refused: that one is tried again, so that exactly n are held. Returns them and how
    many 503s that took."""
    socks, refusals = [], 0
    for _ in range(n):
        for attempt in range(50):
            sock = connect(server)
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            sock.settimeout(0.3)
            try:
                refused = sock.recv(1024)  # a held connection gets no answer
            except socket.timeout:
                sock.settimeout(None)
                socks.append(sock)
                break
            sock.close()
            refusals += 1
            check(b" 503 " in refused, f"a connection to hold got {refused!r}")
            time.sleep(0.1)
        else:
            raise AssertionError(f"could not hold {n} connections")
    return socks, refusals


def refused_among(socks):
    """Closes these sockets; how many of them the server had answered with its 503."""
    n = 0
    for sock in socks:
        sock.settimeout(0.2)
        try:
            n += b" 503 " in sock.recv(1024)
        except (socket.timeout, OSError):
            pass
        sock.close()
    return n


def case_connections(edgerun, model):
    with Server(edgerun, model, "-t", "1", "-c", "256", "--parallel", "1", "--max-connections", "3",
                "--idle-timeout", "1") as s:
        def closed_after(sock, what):
            t = time.monotonic()
            sock.settimeout(5)
            try:
                check(sock.recv(1024) == b"", f"{what}: closed without a word")
            except socket.timeout:
                raise AssertionError(f"{what}: still open after 5 s, --idle-timeout 1")
            took = time.monotonic() - t
            check(0.8 < took < 3, f"{what}: closed after {took:.1f} s, --idle-timeout 1")

        # A connection that sends nothing is closed after --idle-timeout.
        with connect(s) as sock:
            closed_after(sock, "a connection with no request")
        # So is a keep-alive connection once its request is answered.
        with connect(s) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while not data.endswith(b'{"status":"ok"}'):
                data += sock.recv(1024)
            closed_after(sock, "a keep-alive connection after its answer")

        # --max-connections idle sockets fill the server only until the idle timeout.
        # Under load a 200 is right twice over: the request can come after the idle ones'
        # second is up, or the thread of the connection closed just before (its client saw
        # the close) can still count, so that an idle socket got the 503 and /health the
        # thread it left. Such a try is made again, up to three times.
        idle_refusals = 0
        for attempt in range(3):
            t = time.monotonic()
            idle = [connect(s) for _ in range(3)]
            time.sleep(0.3)
            status, headers, body = request(s, "GET", "/health")
            if status == 503 or attempt == 2:
                break
            idle_refusals += refused_among(idle)
            time.sleep(1.2)
        error_of(status, headers, body, 503, "too_many_connections")
        check(headers.get("retry-after") == "1", f"Retry-After: {headers}")
        time.sleep(max(0.0, t + 1.6 - time.monotonic()))
        check(request(s, "GET", "/health")[0] == 200, "/health answers once the idle connections are closed")
        idle_refusals += refused_among(idle)

        # Past --max-connections a client still sending its body reads the 503, not a reset.
        held, refusals = held_connections(s, 3)
        body = b"x" * 60000
        with connect(s) as sock:
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
            time.sleep(0.3)  # the 503 is written meanwhile
            try:
                sock.sendall(body)
                data = read_all(sock)
            except OSError as e:
                raise AssertionError(f"the refused client got {e!r} instead of the 503")
            status, headers, answer = parse_response(data)
            error_of(status, headers, answer, 503, "too_many_connections")
            check(headers.get("connection") == "close" and headers.get("retry-after") == "1", f"{headers}")
        for sock in held:
            sock.close()
        # Until their threads end, a request may still be refused: counted too.
        deadline = time.monotonic() + 5
        while (health := request(s, "GET", "/health")[0]) != 200:
            check(health == 503 and time.monotonic() < deadline, f"/health once the held connections are released: {health}")
            refusals += 1
            time.sleep(0.05)

        got = metrics(s).get("edgerun_requests_total{status=503}", 0)
        sent = 2 + refusals + idle_refusals
        check(got == sent, f"every too-many-connections 503 counted: {got}, sent {sent}")
        check(s.stop() == 0, "SIGTERM exits 0")


def case_sampler(edgerun, model, plugin_dir):
    check(os.path.exists(os.path.join(plugin_dir, "libedgerun_refusing_sampler.so")),
          f"{plugin_dir} lacks the test plugin: build the target serve_refusing_sampler")
    with Server(edgerun, model, "-t", "1", "-c", "256", "--parallel", "1", "--sampler-plugin", "refusing_sampler",
                plugin_dir=plugin_dir) as s:
        c = client(s)
        msgs = [{"role": "user", "content": "hi"}]
        # Parameters the plugin refuses: a 400 naming the field, streamed too (before any header).
        for stream in (False, True):
            def call():
                r = c.chat.completions.create(model=s.model_id, messages=msgs, max_tokens=4, stream=stream,
                                              extra_body={"top_k": 40})
                return list(r) if stream else r
            try:
                call()
                raise AssertionError("top_k 40 accepted")
            except openai.APIStatusError as e:
                err = e.response.json()["error"]
                check(e.status_code == 400 and err == {"message": "'top_k' must be at most 10 (got 40)", "type": "invalid_request_error",
                                                       "param": "top_k", "code": "invalid_value"},
                      f"stream={stream}: {e.status_code} {err}")
        ok = c.chat.completions.create(model=s.model_id, messages=msgs, max_tokens=4, temperature=0, extra_body={"top_k": 5})
        check(ok.usage.completion_tokens >= 1, f"{ok}")
        check(metrics(s).get("edgerun_requests_total{status=400}", 0) == 2, "the two refusals counted as 400")
        check(s.stop() == 0, "SIGTERM exits 0")


def case_cors(edgerun, model):
    """Browsers: pages on this machine may call the server (preflight answered, every answer
    saying so), other pages get 403 before anything runs unless --cors-origin names them."""
    chat = json.dumps({"model": os.path.basename(model).removesuffix(".gguf"), "max_tokens": 2, "temperature": 0,
                       "messages": [{"role": "user", "content": "Hi"}]})
    with Server(edgerun, model, "-t", "1", "-c", "256", "--parallel", "1", "--api-key", KEY,
                "--cors-origin", "https://app.example") as s:
        for origin in ("http://localhost:3000", "http://127.0.0.1", "https://[::1]:8443", "https://app.example",
                       "app://-", "file://"):
            status, headers, _ = request(s, "OPTIONS", "/v1/chat/completions", headers={
                "Origin": origin, "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type"})
            check(status == 204 and headers.get("access-control-allow-origin") == origin and
                  "POST" in headers.get("access-control-allow-methods", "") and
                  "authorization" in headers.get("access-control-allow-headers", ""), f"preflight from {origin}: {headers}")
            auth = {"Origin": origin, "Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
            status, headers, body = request(s, "POST", "/v1/chat/completions", chat, auth)
            check(status == 200 and headers.get("access-control-allow-origin") == origin and
                  headers.get("vary") == "Origin", f"an answer to {origin}: {status} {headers}")
        status, headers, body = request(s, "POST", "/v1/chat/completions", json.dumps(dict(json.loads(chat), stream=True)),
                                        {"Origin": "http://localhost:5173", "Authorization": f"Bearer {KEY}"})
        check(status == 200 and headers.get("access-control-allow-origin") == "http://localhost:5173" and
              b"[DONE]" in body, f"a stream to a page here: {headers}")
        status, headers, body = request(s, "GET", "/health", headers={"Origin": "http://localhost"})
        check(status == 200 and headers.get("access-control-allow-origin") == "http://localhost", f"/health: {headers}")
        generated = metrics(s).get("edgerun_generated_tokens_total", 0)
        for origin in ("https://evil.example", "http://localhost.evil.example", "http://127.0.0.1.evil.example:80",
                       "null", "https://app.example.evil"):
            for method, path, body in (("POST", "/v1/chat/completions", chat), ("OPTIONS", "/v1/completions", None),
                                       ("GET", "/health", None)):
                status, headers, data = request(s, method, path, body, {"Origin": origin, "Authorization": f"Bearer {KEY}"})
                error_of(status, headers, data, 403, "origin_not_allowed")
                check("access-control-allow-origin" not in headers, f"no CORS header for {origin}: {headers}")
        check(metrics(s).get("edgerun_generated_tokens_total", 0) == generated, "a refused page runs nothing")
        status, headers, _ = request(s, "POST", "/v1/chat/completions", chat,
                                     {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
        check(status == 200 and "access-control-allow-origin" not in headers, f"no Origin, no CORS headers: {headers}")
    with Server(edgerun, model, "-t", "1", "-c", "256", "--parallel", "1", "--cors-origin", "*") as s:
        status, headers, _ = request(s, "GET", "/health", headers={"Origin": "https://anywhere.example"})
        check(status == 200 and headers.get("access-control-allow-origin") == "https://anywhere.example",
              f"--cors-origin '*': {headers}")
    r = subprocess.run([edgerun, "serve", "-m", model, "--cors-origin", "https://app.example/"], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode != 0 and "is not an origin" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
          f"an origin with a path: {r.stderr!r}")


if __name__ == "__main__":
    edgerun, model_arg, case, plugin_dir = sys.argv[1:5]
    model = model_path(model_arg)
    if case == "protocol":
        case_protocol(edgerun, model)
    elif case == "connections":
        case_connections(edgerun, model)
    elif case == "cors":
        case_cors(edgerun, model)
    else:
        case_sampler(edgerun, model, plugin_dir)
    print(f"serve {case}: ok")
